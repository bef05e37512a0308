"""Skills (SEP-2640) against a raw server that answers what no honest server would: every answer scripted."""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any, Final

import pytest

import mcpfsm
from tests.rawserver import Server, rpc, serving

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
