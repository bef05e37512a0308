"""The pure rules of SEP-2640 skills: entries, size and digest checks, frontmatter parsing and comparison, paths."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpfsm import ProtocolError, SkillFile, SkillVerificationError
from mcpfsm._core.skills import (
    compare_frontmatter,
    declares_skills,
    parse_entry,
    resolve,
    split_frontmatter,
    verify_content,
)

URI = "skill://acme/billing/refunds/SKILL.md"


def listed(data: bytes, uri: str = URI) -> SkillFile:
    return SkillFile(uri=uri, digest="sha256:" + hashlib.sha256(data).hexdigest(), size=len(data))


def entry(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "uri": URI,
        "frontmatter": {"name": "refunds", "description": "Process refunds"},
        "resources": [{"uri": URI, "digest": "sha256:" + "a" * 64, "size": 10}],
    }
    base.update(changes)
    return base


def test_an_entry_becomes_its_uri_frontmatter_and_files() -> None:
    parsed = parse_entry(entry(), "skills/list entry #0")
    assert parsed == (
        URI,
        {"name": "refunds", "description": "Process refunds"},
        (SkillFile(uri=URI, digest="sha256:" + "a" * 64, size=10),),
    )
    assert parse_entry(entry(resources="dynamic"), "e").files is None


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        pytest.param({"uri": 7}, 'e has no string "uri"', id="uri"),
        pytest.param({"frontmatter": None}, 'e has no "frontmatter" object', id="no-frontmatter"),
        pytest.param({"frontmatter": {"name": "refunds"}}, 'e "frontmatter" has no string "description"', id="desc"),
        pytest.param({"resources": None}, 'e "resources" is neither a list nor "dynamic"', id="no-resources"),
        pytest.param({"resources": "static"}, 'e "resources" is neither a list nor "dynamic"', id="other-string"),
        pytest.param({"resources": [{"digest": "x"}]}, 'e resource #0 has no string "uri"', id="file-uri"),
        pytest.param(
            {"resources": [{"uri": URI, "digest": "sha256:" + "A" * 64, "size": 1}]},
            'e resource #0 "digest" is not sha256: and 64 lowercase hex digits',
            id="uppercase-digest",
        ),
        pytest.param(
            {"resources": [{"uri": URI, "digest": "sha256:" + "a" * 64, "size": True}]},
            'e resource #0 "size" is not a non-negative integer',
            id="boolean-size",
        ),
        pytest.param(
            {"resources": [{"uri": URI, "digest": "sha256:" + "a" * 64, "size": -1}]},
            'e resource #0 "size" is not a non-negative integer',
            id="negative-size",
        ),
    ],
)
def test_a_malformed_entry_is_a_protocol_error_naming_the_field(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ProtocolError) as refused:
        parse_entry(entry(**changes), "e")
    assert str(refused.value) == message


def test_a_non_object_entry_is_refused() -> None:
    with pytest.raises(ProtocolError, match=r"^skills/list entry #3 is not an object$"):
        parse_entry(["uri"], "skills/list entry #3")


@given(st.binary(max_size=512))
def test_the_listed_bytes_pass_and_any_changed_byte_fails(data: bytes) -> None:
    verify_content(listed(data), data)
    with pytest.raises(SkillVerificationError) as longer:
        verify_content(listed(data), data + b"\n")
    assert longer.value.check == "size"
    if data:
        flipped = bytes([data[0] ^ 1]) + data[1:]
        with pytest.raises(SkillVerificationError) as changed:
            verify_content(listed(data), flipped)
        assert changed.value.check == "digest"


def test_the_size_is_checked_before_the_digest() -> None:
    # SEP-2640: a size mismatch fails whether or not the digest is computed; the message names the sizes.
    with pytest.raises(SkillVerificationError) as refused:
        verify_content(SkillFile(uri=URI, digest="sha256:" + "0" * 64, size=3), b"four")
    assert str(refused.value) == (
        f"skill file {URI}: size check failed: read 4 bytes, the entry lists 3;"
        " the entry may be stale: client.skill(uri) gets the current one"
    )


def test_frontmatter_is_parsed_as_json_values() -> None:
    text = (
        "\ufeff---\nname: refunds\ndescription: 'Process: refunds'\nreleased: 2026-09-13\nlegacy: yes\n"
        "strict: true\ncount: 3\nmetadata:\n  tags: [a, b]\n---\n# Body\n"
    )
    parsed, body = split_frontmatter(URI, text)
    assert parsed == {
        "name": "refunds",
        "description": "Process: refunds",
        "released": "2026-09-13",  # JSON has no date: the entry carries the string
        "legacy": "yes",  # YAML 1.2 core schema: only true/false are booleans
        "strict": True,
        "count": 3,
        "metadata": {"tags": ["a", "b"]},
    }
    assert body == "# Body\n"
    assert split_frontmatter(URI, "---\r\nname: x\r\n---") == ({"name": "x"}, "")


@pytest.mark.parametrize(
    ("text", "detail"),
    [
        pytest.param("# No frontmatter\n", "SKILL.md does not begin with a --- delimited YAML block", id="missing"),
        pytest.param("---\nname: x\n", "SKILL.md does not begin with a --- delimited YAML block", id="unclosed"),
        pytest.param("---\nname: [x\n---\n", "its YAML does not parse: expected ',' or ']', but got '<stream end>'"),
        pytest.param("---\n- a\n- b\n---\n", "its YAML is not a mapping", id="list"),
        pytest.param("---\n!!python/object:os.system x\n---\n", "its YAML does not parse:", id="unsafe-tag"),
    ],
)
def test_unusable_frontmatter_fails_the_frontmatter_check(text: str, detail: str) -> None:
    with pytest.raises(SkillVerificationError) as refused:
        split_frontmatter(URI, text)
    assert (refused.value.check, refused.value.fields) == ("frontmatter", ())
    assert str(refused.value).startswith(f"skill file {URI}: frontmatter check failed: {detail}")


def test_frontmatter_is_compared_field_by_field_as_json() -> None:
    listed_fm = {"name": "refunds", "description": "d", "count": 1, "ratio": 1, "absent": None, "nested": {"a": [1]}}
    compare_frontmatter(
        URI, listed_fm, {"name": "refunds", "description": "d", "count": 1, "ratio": 1.0, "nested": {"a": [1]}}
    )
    with pytest.raises(SkillVerificationError) as refused:
        compare_frontmatter(
            URI,
            listed_fm,
            {"name": "refunds", "description": "D", "count": True, "ratio": 1, "nested": {"a": [1, 2]}, "extra": 0},
        )
    assert refused.value.fields == ("description", "count", "nested", "extra")
    assert str(refused.value) == (
        f"skill file {URI}: frontmatter check failed: field(s) 'description', 'count', 'nested', 'extra' differ"
        " from the entry's"
    )


@pytest.mark.parametrize(
    ("path", "uri"),
    [
        ("references/GUIDE.md", "skill://acme/billing/refunds/references/GUIDE.md"),
        ("./a/../SKILL.md", URI),
        ("skill://elsewhere/x.md", "skill://elsewhere/x.md"),
    ],
)
def test_paths_resolve_against_the_skill_root(path: str, uri: str) -> None:
    assert resolve(URI, path) == uri


@pytest.mark.parametrize("path", ["", ".", "/etc/passwd", "..", "../other/SKILL.md", "a/../../x"])
def test_a_path_out_of_the_skill_is_refused(path: str) -> None:
    with pytest.raises(ValueError, match=rf"^{path!r} is not a path inside the skill {URI}$".replace(".", r"\.")):
        resolve(URI, path)


def test_the_declaration_is_read_from_the_capabilities_extensions() -> None:
    assert declares_skills({"extensions": {"io.modelcontextprotocol/skills": {}}})
    assert not declares_skills({"extensions": {"io.modelcontextprotocol/tasks": {}}})
    assert not declares_skills({"extensions": ["io.modelcontextprotocol/skills"]})
    assert not declares_skills({"resources": {}})
