"""Skills (SEP-2640) against a real server: the official SDK with the skills extension (`tooling.peer_skills`).

The server logs every request it receives, so each test also proves what went on the wire: listing reads no
file, loading reads `SKILL.md` only, a supporting file is read when it is asked for and once, and content that
fails a check is never returned.
"""

from __future__ import annotations

import hashlib
from typing import Any, Final

import pytest

import mcpfsm
from tooling.peer_skills import SKILLS
from tooling.processes import RunningSkillsPeer

PDF: Final = "skill://pdf-processing/SKILL.md"
FORMS: Final = "skill://pdf-processing/references/FORMS.md"
BINARY: Final = "skill://pdf-processing/scripts/extract.bin"


@pytest.fixture
def server(skills_peer: RunningSkillsPeer) -> RunningSkillsPeer:
    skills_peer.clear_log()
    return skills_peer


def wire(server: RunningSkillsPeer) -> list[tuple[str, str | None]]:
    return [(entry["method"], entry["uri"]) for entry in server.log()]


def client(server: RunningSkillsPeer, **options: Any) -> mcpfsm.Client:
    return mcpfsm.Client.http(server.url, protocol="2026-07-28", **options)


async def listed(connected: mcpfsm.Client, uri: str) -> mcpfsm.Skill:
    return next(skill for skill in await connected.skills() if skill.uri == uri)


async def test_listing_reads_no_skill_file(server: RunningSkillsPeer) -> None:
    async with client(server) as connected:
        skills = await connected.skills()
    assert [(skill.uri, skill.name, skill.dynamic) for skill in skills] == [
        (PDF, "pdf-processing", False),
        ("skill://tampered/wrong-size/SKILL.md", "wrong-size", False),
        ("skill://tampered/wrong-digest/SKILL.md", "wrong-digest", False),
        ("skill://tampered/bad-frontmatter/SKILL.md", "bad-frontmatter", False),
        ("skill://tampered/stale-reference/SKILL.md", "stale-reference", False),
        ("skill://reports/daily-report/SKILL.md", "daily-report", True),
    ]
    pdf = skills[0]
    assert pdf.frontmatter == {
        "name": "pdf-processing",
        "description": "Extract, fill, and assemble PDF documents",
        "license": "Apache-2.0",
        "metadata": {"version": "2.1"},
    }
    data = SKILLS[0].files[0].data
    assert pdf.files is not None and pdf.files[0] == mcpfsm.SkillFile(
        uri=PDF, digest="sha256:" + hashlib.sha256(data).hexdigest(), size=len(data)
    )
    assert [listed.uri for listed in pdf.files] == [PDF, FORMS, BINARY]
    assert pdf.file("references/FORMS.md") == pdf.file(FORMS) == pdf.files[1]
    assert (pdf.file("references/NONE.md"), skills[-1].file("SKILL.md")) == (None, None)  # unlisted; dynamic
    # SEP-2640 "Lazy Retrieval": not on connection, not on listing.
    assert wire(server) == [("server/discover", None), ("skills/list", None)]


async def test_a_good_skill_loads_and_reads_only_its_skill_md(server: RunningSkillsPeer) -> None:
    async with client(server) as connected:
        skill = await listed(connected, PDF)
        server.clear_log()
        loaded = await skill.load()
        assert loaded.text == SKILLS[0].files[0].content
        assert loaded.body == "\n# PDF processing\n\nFor forms, read references/FORMS.md first.\n"
        assert loaded.frontmatter == skill.frontmatter
        assert wire(server) == [("resources/read", PDF)]


async def test_supporting_files_are_read_on_demand_verified_and_once(server: RunningSkillsPeer) -> None:
    async with client(server) as connected:
        loaded = await (await listed(connected, PDF)).load()
        server.clear_log()
        assert (
            await loaded.read_text("references/FORMS.md")
            == "# Forms\n\nFill each field of the form, then flatten it.\n"
        )
        assert wire(server) == [("resources/read", FORMS)]
        assert await loaded.read(FORMS) == await loaded.read("./references/../references/FORMS.md")
        assert await loaded.read("scripts/extract.bin") == bytes(range(256))  # a blob, verified on its decoded bytes
        assert await loaded.read("SKILL.md") == SKILLS[0].files[0].data  # verified at load: not read again
        assert wire(server) == [("resources/read", FORMS), ("resources/read", BINARY)]


async def test_an_unlisted_file_is_refused_without_a_read(server: RunningSkillsPeer) -> None:
    async with client(server) as connected:
        loaded = await (await listed(connected, PDF)).load()
        server.clear_log()
        with pytest.raises(mcpfsm.SkillVerificationError) as refused:
            await loaded.read("references/SECRETS.md")
        assert (refused.value.check, refused.value.uri) == ("unlisted", "skill://pdf-processing/references/SECRETS.md")
        with pytest.raises(ValueError, match=r"^'\.\./other/SKILL\.md' is not a path inside the skill "):
            await loaded.read("../other/SKILL.md")
        assert wire(server) == []


@pytest.mark.parametrize(
    ("uri", "check", "message"),
    [
        pytest.param(
            "skill://tampered/wrong-size/SKILL.md",
            "size",
            r"^skill file skill://tampered/wrong-size/SKILL\.md: size check failed: read 67 bytes, the entry lists 66;"
            r" the entry may be stale: client\.skill\(uri\) gets the current one$",
            id="wrong-size",
        ),
        pytest.param(
            "skill://tampered/wrong-digest/SKILL.md",
            "digest",
            r"^skill file skill://tampered/wrong-digest/SKILL\.md: digest check failed: the content hashes to"
            r" sha256:[0-9a-f]{64}, the entry lists sha256:[0-9a-f]{64}; the entry may be stale",
            id="wrong-digest",
        ),
        pytest.param(
            "skill://tampered/bad-frontmatter/SKILL.md",
            "frontmatter",
            r"^skill file skill://tampered/bad-frontmatter/SKILL\.md: frontmatter check failed:"
            r" field\(s\) 'description' differ from the entry's$",
            id="bad-frontmatter",
        ),
    ],
)
async def test_a_skill_md_that_fails_a_check_is_refused(
    server: RunningSkillsPeer, uri: str, check: str, message: str
) -> None:
    async with client(server) as connected:
        skill = await listed(connected, uri)
        server.clear_log()
        with pytest.raises(mcpfsm.SkillVerificationError, match=message) as refused:
            await skill.load()
        assert (refused.value.check, refused.value.uri) == (check, uri)
        assert refused.value.fields == (("description",) if check == "frontmatter" else ())
        assert isinstance(refused.value, mcpfsm.McpError)
        assert wire(server) == [("resources/read", uri)]


async def test_a_supporting_file_that_changed_is_refused_and_not_kept(server: RunningSkillsPeer) -> None:
    async with client(server) as connected:
        loaded = await (await listed(connected, "skill://tampered/stale-reference/SKILL.md")).load()
        for _ in range(2):
            with pytest.raises(mcpfsm.SkillVerificationError) as refused:
                await loaded.read("references/GUIDE.md")
            assert (refused.value.check, refused.value.uri) == (
                "digest",
                "skill://tampered/stale-reference/references/GUIDE.md",
            )
        guide = "skill://tampered/stale-reference/references/GUIDE.md"
        assert [entry for entry in wire(server) if entry[1] == guide] == [("resources/read", guide)] * 2


async def test_a_dynamic_skill_loads_only_when_allowed(server: RunningSkillsPeer) -> None:
    async with client(server) as connected:
        skill = await listed(connected, "skill://reports/daily-report/SKILL.md")
        server.clear_log()
        with pytest.raises(mcpfsm.SkillVerificationError, match=r'resources as "dynamic" \(no digests\)') as refused:
            await skill.load()
        assert refused.value.check == "dynamic"
        assert wire(server) == []
        loaded = await skill.load(allow_dynamic=True)
        assert loaded.body == "\nToday.\n"
        assert wire(server) == [("resources/read", "skill://reports/daily-report/SKILL.md")]


async def test_skills_get_returns_the_entry_and_refuses_an_unknown_uri(server: RunningSkillsPeer) -> None:
    async with client(server) as connected:
        skill = await connected.skill(PDF)
        assert skill == await connected.skill(PDF)  # the second from the response cache (ttlMs 60000)
        with pytest.raises(mcpfsm.RpcError) as unknown:
            await connected.skill("skill://nowhere/SKILL.md")
        loaded = await skill.load()
    assert unknown.value.code == -32602
    assert (skill.name, loaded.text) == ("pdf-processing", SKILLS[0].files[0].content)
    assert wire(server) == [
        ("server/discover", None),
        ("skills/get", PDF),
        ("skills/get", "skill://nowhere/SKILL.md"),
        ("resources/read", PDF),
    ]


async def test_the_listing_is_cached_for_its_ttl_and_fresh_asks_again(server: RunningSkillsPeer) -> None:
    async with client(server) as connected:
        first = await connected.skills()
        assert await connected.skills() == first
        assert await connected.skills(fresh=True) == first
    assert wire(server) == [("server/discover", None), ("skills/list", None), ("skills/list", None)]


async def test_skill_files_are_read_past_the_response_cache(server: RunningSkillsPeer) -> None:
    # The server lets a read be cached for a minute; a plain read_resource uses that, a skill load does not.
    async with client(server) as connected:
        plain = await connected.read_resource(PDF)
        assert (await connected.read_resource(PDF)).contents == plain.contents
        skill = await listed(connected, PDF)
        for _ in range(2):
            await skill.load()
    assert [uri for method, uri in wire(server) if method == "resources/read"] == [PDF, PDF, PDF]


async def test_a_server_that_does_not_declare_the_extension_is_not_asked(server: RunningSkillsPeer) -> None:
    # The SDK declares extensions in the 2026-07-28 era only (server/discover), not in a 2025-11-25 initialize.
    async with mcpfsm.Client.http(server.url, protocol="2025-11-25") as connected:
        message = r"^the server does not declare the io\.modelcontextprotocol/skills extension \(SEP-2640\)"
        with pytest.raises(mcpfsm.McpError, match=message):
            await connected.skills()
        with pytest.raises(mcpfsm.McpError, match=message):
            await connected.skill(PDF)
    assert [method for method, _ in wire(server)] == ["initialize", "notifications/initialized"]
