"""``mcpfsm skills`` and ``mcpfsm skill``, run for real against the skills server (SDK, SEP-2640 extension)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from mcpfsm._tooling.cli import Exit
from tests.support.clirun import Run, mcpfsm, one_error_line
from tests.support.peer.fixtures import REPO_ROOT, HttpPeer
from tooling.peer_skills import SKILLS
from tooling.processes import RunningSkillsPeer

PDF = "skill://pdf-processing/SKILL.md"


@pytest.fixture
def server(skills_peer: RunningSkillsPeer) -> RunningSkillsPeer:
    skills_peer.clear_log()
    return skills_peer


def reads(server: RunningSkillsPeer) -> list[str | None]:
    return [entry["uri"] for entry in server.log() if entry["method"] == "resources/read"]


def test_skills_lists_without_reading_a_file(server: RunningSkillsPeer) -> None:
    assert mcpfsm("skills", server.url) == Run(
        0,
        "URI                                        FILES    NAME             DESCRIPTION\n"
        "skill://pdf-processing/SKILL.md            3        pdf-processing   "
        "Extract, fill, and assemble PDF documents\n"
        "skill://tampered/wrong-size/SKILL.md       1        wrong-size       Listed one byte short\n"
        "skill://tampered/wrong-digest/SKILL.md     1        wrong-digest     Listed with another digest\n"
        "skill://tampered/bad-frontmatter/SKILL.md  1        bad-frontmatter  Summarise a document\n"
        "skill://tampered/stale-reference/SKILL.md  2        stale-reference  Its reference changed after listing\n"
        "skill://reports/daily-report/SKILL.md      dynamic  daily-report     Assemble today's report\n",
        "",
    )
    assert reads(server) == []


def test_skills_json_is_the_entries_as_listed(server: RunningSkillsPeer) -> None:
    run = mcpfsm("skills", server.url, "--json")
    assert (run.code, run.stderr) == (0, "")
    assert json.loads(run.stdout) == {"skills": [skill.entry() for skill in SKILLS]}


def test_skills_of_a_server_without_the_extension_is_one_error_line(peer: HttpPeer) -> None:
    run = mcpfsm("skills", peer.url)
    assert run.code == Exit.protocol
    assert one_error_line(run) == (
        "mcpfsm: error: protocol error: the server does not declare the io.modelcontextprotocol/skills extension"
        " (SEP-2640), so it serves no skills"
    )


def test_skill_prints_the_verified_skill_md(server: RunningSkillsPeer) -> None:
    assert mcpfsm("skill", server.url, PDF) == Run(0, str(SKILLS[0].files[0].content), "")
    assert reads(server) == [PDF]


def test_skill_file_prints_one_verified_supporting_file(server: RunningSkillsPeer) -> None:
    assert mcpfsm("skill", server.url, PDF, "--file", "references/FORMS.md") == Run(
        0, "# Forms\n\nFill each field of the form, then flatten it.\n", ""
    )
    assert reads(server) == [PDF, "skill://pdf-processing/references/FORMS.md"]
    # A binary file goes to stdout byte for byte.
    done = subprocess.run(
        [sys.executable, "-m", "mcpfsm", "skill", server.url, PDF, "--file", "scripts/extract.bin"],
        cwd=REPO_ROOT,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, bytes(range(256)), b"")


@pytest.mark.parametrize(
    ("uri", "options", "message"),
    [
        pytest.param(
            "skill://tampered/wrong-size/SKILL.md",
            (),
            "skill file skill://tampered/wrong-size/SKILL.md: size check failed: read 67 bytes, the entry lists 66;",
            id="size",
        ),
        pytest.param(
            "skill://tampered/wrong-digest/SKILL.md",
            (),
            "skill file skill://tampered/wrong-digest/SKILL.md: digest check failed: the content hashes to sha256:",
            id="digest",
        ),
        pytest.param(
            "skill://tampered/bad-frontmatter/SKILL.md",
            (),
            "skill file skill://tampered/bad-frontmatter/SKILL.md: frontmatter check failed: field(s) 'description'",
            id="frontmatter",
        ),
        pytest.param(
            "skill://tampered/stale-reference/SKILL.md",
            ("--file", "references/GUIDE.md"),
            "skill file skill://tampered/stale-reference/references/GUIDE.md: digest check failed:",
            id="supporting-file",
        ),
        pytest.param(
            PDF,
            ("--file", "references/SECRETS.md"),
            "skill file skill://pdf-processing/references/SECRETS.md: unlisted check failed:",
            id="unlisted",
        ),
        pytest.param(
            "skill://reports/daily-report/SKILL.md",
            (),
            "skill file skill://reports/daily-report/SKILL.md: dynamic check failed:",
            id="dynamic",
        ),
    ],
)
def test_skill_prints_nothing_that_fails_a_check(
    server: RunningSkillsPeer, uri: str, options: tuple[str, ...], message: str
) -> None:
    run = mcpfsm("skill", server.url, uri, *options)
    assert (run.code, run.stdout) == (Exit.protocol, "")
    assert one_error_line(run).startswith(f"mcpfsm: error: skill verification failed: {message}")


def test_skill_allow_dynamic_prints_the_unverified_skill(server: RunningSkillsPeer) -> None:
    run = mcpfsm("skill", server.url, "skill://reports/daily-report/SKILL.md", "--allow-dynamic")
    assert run == Run(0, str(SKILLS[-1].files[0].content), "")


def test_skill_of_an_unknown_uri_and_a_path_out_of_the_skill(server: RunningSkillsPeer) -> None:
    unknown = mcpfsm("skill", server.url, "skill://nowhere/SKILL.md")
    assert unknown.code == Exit.rpc_error
    assert (
        one_error_line(unknown)
        == "mcpfsm: error: the server answered JSON-RPC error -32602: no skill at skill://nowhere/SKILL.md"
    )
    outside = mcpfsm("skill", server.url, PDF, "--file", "../other/SKILL.md")
    assert outside.code == Exit.usage
    assert one_error_line(outside) == (
        "mcpfsm: error: --file: '../other/SKILL.md' is not a path inside the skill skill://pdf-processing/SKILL.md"
    )
    assert reads(server) == [PDF]
