"""Skills (SEP-2640) against a raw server that answers what no honest server would: every answer scripted."""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any, Final

import pytest

import mcpfsm
from tests.support.rawserver import Server, rpc, serving

URI: Final = "skill://hostile/SKILL.md"
TEXT: Final = "---\nname: hostile\ndescription: Scripted answers\n---\nBody.\n"
DISCOVERED: Final = {
    "supportedVersions": ["2026-07-28"],
    "capabilities": {"resources": {}, "extensions": {"io.modelcontextprotocol/skills": {}}},
}


def entry(data: bytes = TEXT.encode(), **changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "uri": URI,
        "frontmatter": {"name": "hostile", "description": "Scripted answers"},
        "resources": [{"uri": URI, "digest": "sha256:" + hashlib.sha256(data).hexdigest(), "size": len(data)}],
    }
    base.update(changes)
    return base


async def load(server: Server, listed: dict[str, Any], contents: list[dict[str, Any]]) -> mcpfsm.LoadedSkill:
    server.queue(rpc(DISCOVERED), rpc({"skills": [listed]}), rpc({"contents": contents}))
    async with serving(server), mcpfsm.Client.http(f"http://127.0.0.1:{server.port}/mcp", protocol="2026-07-28") as c:
        (skill,) = await c.skills()
        try:
            return await skill.load()
        except mcpfsm.McpError as exc:  # raised past the server's nursery, not inside an exception group
            refused = exc
    raise refused


def methods(server: Server) -> list[str]:
    return [json.loads(seen.body)["method"] for seen in server.seen]


async def test_a_skill_md_sent_as_a_blob_is_verified_on_its_bytes() -> None:
    server = Server()
    blob = base64.b64encode(TEXT.encode()).decode()
    loaded = await load(server, entry(), [{"uri": URI, "blob": blob, "mimeType": "text/markdown"}])
    assert (loaded.text, loaded.body) == (TEXT, "Body.\n")
    assert methods(server) == ["server/discover", "skills/list", "resources/read"]


@pytest.mark.parametrize(
    ("contents", "count"),
    [
        pytest.param([{"uri": URI, "text": TEXT}, {"uri": URI, "text": "---\nname: other\n---\n"}], 2, id="two"),
        pytest.param([{"uri": "skill://a/x", "text": TEXT}, {"uri": "skill://b/y", "text": TEXT}], 0, id="none"),
        pytest.param([], 0, id="empty"),
    ],
)
async def test_a_read_without_exactly_one_content_for_the_uri_is_a_protocol_error(
    contents: list[dict[str, Any]], count: int
) -> None:
    message = rf"^resources/read of skill://hostile/SKILL\.md returned {count} contents for it, not one$"
    with pytest.raises(mcpfsm.ProtocolError, match=message):
        await load(Server(), entry(), contents)


async def test_a_skill_md_the_entry_does_not_list_is_refused_unread() -> None:
    server = Server()
    other = "skill://hostile/README.md"
    with pytest.raises(mcpfsm.SkillVerificationError) as refused:
        await load(server, entry(resources=[{"uri": other, "digest": "sha256:" + "0" * 64, "size": 1}]), [])
    assert (refused.value.check, refused.value.uri) == ("unlisted", URI)
    assert methods(server) == ["server/discover", "skills/list"]


async def test_a_skill_md_that_is_not_utf8_is_a_protocol_error() -> None:
    data = b"---\nname: \xff\n---\n"
    with pytest.raises(
        mcpfsm.ProtocolError, match=r"^skill://hostile/SKILL\.md is not UTF-8 text: invalid start byte$"
    ):
        await load(Server(), entry(data), [{"uri": URI, "blob": base64.b64encode(data).decode()}])


async def test_a_malformed_listing_entry_is_a_protocol_error_naming_it() -> None:
    server = Server()
    server.queue(rpc(DISCOVERED), rpc({"skills": [entry(), entry(resources=[{"uri": URI}])]}))
    async with serving(server), mcpfsm.Client.http(f"http://127.0.0.1:{server.port}/mcp", protocol="2026-07-28") as c:
        with pytest.raises(
            mcpfsm.ProtocolError,
            match=r'^skills/list entry #1 resource #0 "digest" is not sha256: and 64 lowercase hex digits$',
        ):
            await c.skills()


async def test_a_skills_get_answer_without_a_skill_is_a_protocol_error() -> None:
    server = Server()
    server.queue(rpc(DISCOVERED), rpc({"resultType": "complete"}))
    async with serving(server), mcpfsm.Client.http(f"http://127.0.0.1:{server.port}/mcp", protocol="2026-07-28") as c:
        with pytest.raises(mcpfsm.ProtocolError, match=r'^skills/get result "skill" is not an object$'):
            await c.skill(URI)
        with pytest.raises(TypeError, match=r"^uri must be a str, got int$"):
            await c.skill(7)  # type: ignore[arg-type]
    assert methods(server) == ["server/discover", "skills/get"]


def nested_flow(depth: int) -> str:
    return "name: hostile\ndescription: Scripted answers\nx: " + "[" * depth + "]" * depth + "\n"


def nested_mapping(depth: int) -> str:
    return "name: hostile\ndescription: Scripted answers\n" + "".join("  " * level + "a:\n" for level in range(depth))


def nested_inline(depth: int) -> str:
    return "name: hostile\ndescription: Scripted answers\nx: " + "{a: " * depth + "1" + "}" * depth + "\n"


@pytest.mark.parametrize(
    "frontmatter",
    [
        pytest.param(nested_flow(100_000), id="flow-sequences-100000"),
        pytest.param(nested_inline(5_000), id="flow-mappings-5000"),
        pytest.param(nested_mapping(2_000), id="block-mappings-2000"),
        pytest.param(nested_flow(64), id="the-mapping-and-64-lists"),
    ],
)
async def test_a_deeply_nested_frontmatter_is_refused_not_a_recursion_error(frontmatter: str) -> None:
    text = f"---\n{frontmatter}---\nBody.\n"
    with pytest.raises(mcpfsm.SkillVerificationError) as refused:
        await load(Server(), entry(text.encode()), [{"uri": URI, "text": text}])
    assert (refused.value.check, refused.value.uri) == ("frontmatter", URI)
    assert str(refused.value).endswith("its YAML nests more than 64 collections deep")


async def test_a_frontmatter_nested_64_deep_still_loads() -> None:
    # The frontmatter's own mapping and 63 lists in it.
    text = f"---\n{nested_flow(63)}---\nBody.\n"
    listed = entry(
        text.encode(),
        frontmatter={"name": "hostile", "description": "Scripted answers", "x": json.loads("[" * 63 + "]" * 63)},
    )
    loaded = await load(Server(), listed, [{"uri": URI, "text": text}])
    assert loaded.body == "Body.\n"


async def read_dynamic(path_or_uri: str) -> tuple[Server, bytes | mcpfsm.McpError]:
    """Load the dynamic skill ``skill://hostile``, then read ``path_or_uri``; the answer's or the refusal."""
    server = Server()
    listed = entry(resources="dynamic")
    server.queue(
        rpc(DISCOVERED),
        rpc({"skills": [listed]}),
        rpc({"contents": [{"uri": URI, "text": TEXT}]}),
        rpc({"contents": [{"uri": "any", "text": "what the server read"}]}),
    )
    async with serving(server), mcpfsm.Client.http(f"http://127.0.0.1:{server.port}/mcp", protocol="2026-07-28") as c:
        (skill,) = await c.skills()
        loaded = await skill.load(allow_dynamic=True)
        try:
            return server, await loaded.read(path_or_uri)
        except mcpfsm.McpError as exc:
            return server, exc


@pytest.mark.parametrize(
    "uri",
    [
        "skill://hostile/../other/SKILL.md",
        "skill://hostile/%2e%2e/other/SKILL.md",
        "skill://hostile/.%2E/other/SKILL.md",
        "skill://hostile/a/../../other/SKILL.md",
        "skill://hostile/./../other/SKILL.md",
    ],
)
async def test_a_dynamic_skill_never_reads_outside_its_root_through_dot_segments(uri: str) -> None:
    server, answer = await read_dynamic(uri)
    assert isinstance(answer, mcpfsm.SkillVerificationError)
    assert (answer.check, answer.uri) == ("unlisted", "skill://other/SKILL.md")
    assert methods(server) == ["server/discover", "skills/list", "resources/read"]  # SKILL.md only


async def test_a_dynamic_skills_file_is_read_by_its_normal_form() -> None:
    server, answer = await read_dynamic("skill://hostile/a/./b/../c.md")
    assert answer == b"what the server read"
    assert json.loads(server.seen[-1].body)["params"]["uri"] == "skill://hostile/a/c.md"
