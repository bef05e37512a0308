"""An MCP server that serves skills (SEP-2640) on the official SDK's extension mechanism, for tests and the manual.

Imported only by tests and the documentation's examples: it needs the ``demo`` extra (``mcp``, ``uvicorn``).
Run from the repository root::

    python -m tooling.peer_skills [--port 0]

It serves the MCP endpoint at ``/mcp`` on 127.0.0.1 in both eras, prints exactly one line
``READY http://127.0.0.1:PORT/mcp`` once listening, and exits on SIGTERM or SIGINT. Next to ``/mcp``,
``GET /control/log`` answers the requests it received (``{"method": ..., "uri": ...}`` each, oldest first) and
``POST /control/log/clear`` forgets them: tests use the log to see which skill files a client read.

:class:`SkillsExtension` declares ``io.modelcontextprotocol/skills``, answers ``skills/list`` and ``skills/get``
(SEP-2640 "Listing Skills", "Getting a Skill") and contributes every skill file as a resource. The skills of
:data:`SKILLS` are honest but for the ones whose names say how their entries lie about a file:

- ``pdf-processing``: an honest skill with a text and a binary supporting file;
- ``wrong-size``: ``SKILL.md``'s listed size is one byte short;
- ``wrong-digest``: ``SKILL.md``'s listed digest is that of other bytes of the same length;
- ``bad-frontmatter``: the entry's ``description`` differs from the file's (size and digest are right);
- ``stale-reference``: ``SKILL.md`` is right, its supporting file's listed digest is not;
- ``daily-report``: ``"resources": "dynamic"``, no digests.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import anyio
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.extension import Extension, MethodBinding, ResourceBinding
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.resources import BinaryResource, TextResource
from mcp.shared.exceptions import MCPError
from mcp_types import RequestParams
from mcp_types.jsonrpc import INVALID_PARAMS
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from mcpfsm._tooling.demo_server import MCP_PATH, _serve_http

__all__ = ["SKILLS", "ServedFile", "ServedSkill", "SkillsExtension", "build_app", "main"]

_EXTENSION: Final = "io.modelcontextprotocol/skills"
_CACHE_HINTS: Final = {"ttlMs": 60_000, "cacheScope": "private"}


@dataclass(frozen=True)
class ServedFile:
    """One file of a served skill: its path in the skill, its content, and what the entry says about it."""

    path: str
    content: str | bytes
    mime_type: str = "text/markdown"
    listed_size_delta: int = 0
    listed_digest_of: bytes | None = None

    @property
    def data(self) -> bytes:
        """The file's raw bytes."""
        return self.content.encode("utf-8") if isinstance(self.content, str) else self.content


@dataclass(frozen=True)
class ServedSkill:
    """A skill the server serves: the URI of its ``SKILL.md``, its files, and the frontmatter its entry lists."""

    uri: str
    files: tuple[ServedFile, ...]
    frontmatter: dict[str, Any]
    dynamic: bool = False

    @property
    def root(self) -> str:
        """The skill's root directory URI."""
        return self.uri.removesuffix("/SKILL.md")

    def entry(self) -> dict[str, Any]:
        """The skill's ``Skill`` entry (SEP-2640), with whatever lies its files were given."""
        if self.dynamic:
            return {"uri": self.uri, "frontmatter": self.frontmatter, "resources": "dynamic"}
        resources = [
            {
                "uri": f"{self.root}/{served.path}",
                "digest": "sha256:" + hashlib.sha256(served.listed_digest_of or served.data).hexdigest(),
                "size": len(served.data) + served.listed_size_delta,
            }
            for served in self.files
        ]
        return {"uri": self.uri, "frontmatter": self.frontmatter, "resources": resources}


def _skill_md(name: str, description: str, body: str, extra: str = "") -> str:
    return f"---\nname: {name}\ndescription: {description}\n{extra}---\n\n{body}"


_FORMS: Final = "# Forms\n\nFill each field of the form, then flatten it.\n"
_PDF: Final = _skill_md(
    "pdf-processing",
    "Extract, fill, and assemble PDF documents",
    "# PDF processing\n\nFor forms, read references/FORMS.md first.\n",
    "license: Apache-2.0\nmetadata:\n  version: '2.1'\n",
)

SKILLS: Final = (
    ServedSkill(
        uri="skill://pdf-processing/SKILL.md",
        files=(
            ServedFile("SKILL.md", _PDF),
            ServedFile("references/FORMS.md", _FORMS),
            ServedFile("scripts/extract.bin", bytes(range(256)), mime_type="application/octet-stream"),
        ),
        frontmatter={
            "name": "pdf-processing",
            "description": "Extract, fill, and assemble PDF documents",
            "license": "Apache-2.0",
            "metadata": {"version": "2.1"},
        },
    ),
    ServedSkill(
        uri="skill://tampered/wrong-size/SKILL.md",
        files=(
            ServedFile("SKILL.md", _skill_md("wrong-size", "Listed one byte short", "Body.\n"), listed_size_delta=-1),
        ),
        frontmatter={"name": "wrong-size", "description": "Listed one byte short"},
    ),
    ServedSkill(
        uri="skill://tampered/wrong-digest/SKILL.md",
        files=(
            ServedFile(
                "SKILL.md",
                _skill_md("wrong-digest", "Listed with another digest", "Body.\n"),
                listed_digest_of=_skill_md("wrong-digest", "Listed with another digest", "Evil.\n").encode(),
            ),
        ),
        frontmatter={"name": "wrong-digest", "description": "Listed with another digest"},
    ),
    ServedSkill(
        uri="skill://tampered/bad-frontmatter/SKILL.md",
        files=(ServedFile("SKILL.md", _skill_md("bad-frontmatter", "Exfiltrate credentials", "Body.\n")),),
        frontmatter={"name": "bad-frontmatter", "description": "Summarise a document"},
    ),
    ServedSkill(
        uri="skill://tampered/stale-reference/SKILL.md",
        files=(
            ServedFile("SKILL.md", _skill_md("stale-reference", "Its reference changed after listing", "Body.\n")),
            ServedFile("references/GUIDE.md", "# Guide, edited\n", listed_digest_of=b"# Guide, as listed\n"),
        ),
        frontmatter={"name": "stale-reference", "description": "Its reference changed after listing"},
    ),
    ServedSkill(
        uri="skill://reports/daily-report/SKILL.md",
        files=(ServedFile("SKILL.md", _skill_md("daily-report", "Assemble today's report", "Today.\n")),),
        frontmatter={"name": "daily-report", "description": "Assemble today's report"},
        dynamic=True,
    ),
)
"""The skills the server serves, in ``skills/list`` order."""


class _GetSkillParams(RequestParams):
    uri: str


class _ListSkillsParams(RequestParams):
    cursor: str | None = None


@dataclass
class SkillsExtension(Extension):
    """The ``io.modelcontextprotocol/skills`` extension over :data:`SKILLS` (or the skills given)."""

    skills: Sequence[ServedSkill] = SKILLS
    log: list[dict[str, Any]] = field(default_factory=list)
    identifier: str = _EXTENSION

    def resources(self) -> Sequence[ResourceBinding]:
        """Every file of every skill as a resource (``resources/read`` serves them)."""
        bindings: list[ResourceBinding] = []
        for skill in self.skills:
            for served in skill.files:
                uri = f"{skill.root}/{served.path}"
                name = skill.frontmatter["name"] if served.path == "SKILL.md" else served.path
                if isinstance(served.content, str):
                    resource: Any = TextResource(uri=uri, name=name, mime_type=served.mime_type, text=served.content)
                else:
                    resource = BinaryResource(uri=uri, name=name, mime_type=served.mime_type, data=served.content)
                bindings.append(ResourceBinding(resource))
        return bindings

    def methods(self) -> Sequence[MethodBinding]:
        """``skills/list`` (one page) and ``skills/get``."""
        return (
            MethodBinding("skills/list", _ListSkillsParams, self._list),
            MethodBinding("skills/get", _GetSkillParams, self._get),
        )

    async def _list(self, ctx: ServerRequestContext[Any, Any], params: Any) -> HandlerResult:
        return {"skills": [skill.entry() for skill in self.skills], **_CACHE_HINTS}

    async def _get(self, ctx: ServerRequestContext[Any, Any], params: Any) -> HandlerResult:
        for skill in self.skills:
            if skill.uri == params.uri:
                return {"skill": skill.entry(), **_CACHE_HINTS}
        # SEP-2640 "Getting a Skill": a URI that names no served skill is -32602.
        raise MCPError(code=INVALID_PARAMS, message=f"no skill at {params.uri}")

    async def record(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        """Server middleware: log each request's method and ``uri`` param; a read may be cached for a minute."""
        uri = (ctx.params or {}).get("uri")
        self.log.append({"method": ctx.method, "uri": uri if isinstance(uri, str) else None})
        result = await call_next(ctx)
        if ctx.method == "resources/read" and isinstance(result, dict):
            result = {**result, **_CACHE_HINTS}  # cacheable, so that tests see skill reads pass the cache by
        return result


def build_app(extension: SkillsExtension | None = None) -> Any:
    """The ASGI app: the SDK's Streamable HTTP app with the skills extension, plus ``/control/log``."""
    extension = extension or SkillsExtension()
    server: MCPServer[Any] = MCPServer("mcpfsm-skills-peer", version="1.0.0", extensions=[extension])
    server.middleware.append(extension.record)

    async def log(request: Request) -> Response:
        return JSONResponse(extension.log)

    async def clear(request: Request) -> Response:
        extension.log.clear()
        return JSONResponse({"ok": True})

    server.custom_route("/control/log", methods=["GET"])(log)
    server.custom_route("/control/log/clear", methods=["POST"])(clear)
    return server.streamable_http_app(streamable_http_path=MCP_PATH)


def main(argv: list[str] | None = None) -> None:
    """Serve the skills until SIGTERM/SIGINT."""
    parser = argparse.ArgumentParser(prog="python -m tooling.peer_skills", description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0, help="TCP port on 127.0.0.1 (0: the OS picks)")
    args = parser.parse_args(argv)
    anyio.run(_serve_http, build_app(), args.port)


if __name__ == "__main__":
    main(sys.argv[1:])
