"""Skills served over MCP (SEP-2640): the listed :class:`Skill`, and the verified :class:`LoadedSkill`.

``client.skills()`` and ``client.skill(uri)`` make :class:`Skill` values from the entries of ``skills/list`` and
``skills/get``; listing reads no file. :meth:`Skill.load` reads ``SKILL.md`` with ``resources/read`` and verifies
it (size, digest, frontmatter: :mod:`mcpfsm._core.skills`); :meth:`LoadedSkill.read` reads one listed supporting
file when it is asked for, verified the same way. Nothing is fetched ahead of need (SEP-2640 "Lazy Retrieval"),
and content that fails a check is never returned.

:class:`Skills` is the client's delegate for ``client.skills()`` and ``client.skill(uri)`` (made by the client's
assembly with the first of them); a skill's only port to the client is a reader: ``async (uri) -> ResourceResult``
(``client.read_resource`` past the response cache).
"""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .._core.errors import McpError, ProtocolError
from .._core.results import check_result_type
from .._core.skills import (
    EXTENSION,
    SkillFile,
    SkillVerificationError,
    compare_frontmatter,
    declares_skills,
    normalise,
    parse_entry,
    resolve,
    root_of,
    split_frontmatter,
    verify_content,
)
from .._core.surface import ResourceResult
from . import negotiation
from .catalog import Catalog
from .session import Session

__all__ = ["LoadedSkill", "Reader", "Skill", "Skills", "require_declared", "skill_from_result", "skills_from_entries"]

Reader = Callable[[str], Awaitable[ResourceResult]]
"""How a skill reads one of its files: ``resources/read`` of a URI."""


def require_declared(capabilities: Mapping[str, Any]) -> None:
    """Refuse to use skills with a server that does not declare the extension (SEP-2640 "Capability Negotiation").

    Raises:
        McpError: the server's capabilities have no ``extensions["io.modelcontextprotocol/skills"]``.
    """
    if not declares_skills(capabilities):
        raise McpError(f"the server does not declare the {EXTENSION} extension (SEP-2640), so it serves no skills")


@dataclass(frozen=True, slots=True, kw_only=True)
class Skill:
    """One skill a server serves: its entry from ``skills/list`` or ``skills/get`` (SEP-2640 ``Skill``).

    Attributes:
        uri: the URI of the skill's ``SKILL.md``.
        name: ``frontmatter["name"]``.
        description: ``frontmatter["description"]``.
        frontmatter: the skill's YAML frontmatter as the server rendered it (every field the author wrote).
        files: the skill's files (``SKILL.md`` included) with their digests and sizes; ``None`` when the server
            lists them as ``"dynamic"`` (generated content, nothing to verify against).
        raw: the entry exactly as received.
    """

    uri: str
    name: str
    description: str
    frontmatter: Mapping[str, Any] = field(repr=False)
    files: tuple[SkillFile, ...] | None = field(repr=False)
    raw: Mapping[str, Any] = field(repr=False, compare=False)
    _read: Reader = field(repr=False, compare=False)

    @classmethod
    def from_entry(cls, entry: object, what: str, read: Reader) -> Skill:
        """Validate an entry (``what`` names it in errors); ``read`` is how the skill will read its files.

        Raises:
            ProtocolError: the entry is malformed (:func:`mcpfsm._core.skills.parse_entry`).
        """
        parsed = parse_entry(entry, what)
        assert isinstance(entry, dict)
        return cls(
            uri=parsed.uri,
            name=parsed.frontmatter["name"],
            description=parsed.frontmatter["description"],
            frontmatter=parsed.frontmatter,
            files=parsed.files,
            raw=entry,
            _read=read,
        )

    @property
    def dynamic(self) -> bool:
        """True when the server publishes no digests for this skill (``"resources": "dynamic"``)."""
        return self.files is None

    def file(self, path_or_uri: str) -> SkillFile | None:
        """The listed file at a URI or at a path relative to the skill's root, or ``None`` (also when dynamic).

        Raises:
            ValueError: the path leads out of the skill's root.
        """
        uri = resolve(self.uri, path_or_uri)
        return next((listed for listed in self.files or () if listed.uri == uri), None)

    async def load(self, *, allow_dynamic: bool = False) -> LoadedSkill:
        """Read ``SKILL.md`` and verify it against this entry: size, digest, then frontmatter field by field.

        Supporting files are not read: :meth:`LoadedSkill.read` reads each when it is needed. A dynamic skill
        has no digests, so it is refused unless ``allow_dynamic`` (its frontmatter is still compared).

        Raises:
            SkillVerificationError: a check failed (``.check`` names it); no content is returned.
            ProtocolError: the ``resources/read`` result holds no content for the URI, or ``SKILL.md`` is not
                UTF-8 text.
            McpError: the read failed.
        """
        if self.files is None and not allow_dynamic:
            raise SkillVerificationError(
                "dynamic", self.uri, 'the entry lists its resources as "dynamic" (no digests): load(allow_dynamic=True)'
            )
        data = await self._fetch(self.uri)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ProtocolError(f"{self.uri} is not UTF-8 text: {exc.reason}") from exc
        parsed, body = split_frontmatter(self.uri, text)
        compare_frontmatter(self.uri, self.frontmatter, parsed)
        return LoadedSkill(self, text=text, body=body, data=data)

    async def _fetch(self, uri: str) -> bytes:
        # SEP-2640 "The Acting Window": while acting on a skill, only the files its entry lists are read.
        if self.files is None:
            # On the normal forms: `skill://s/../x` passes no prefix test (SEP-2640 "The Acting Window").
            uri = normalise(uri)
            if uri != self.uri and not uri.startswith(normalise(root_of(self.uri)) + "/"):
                raise SkillVerificationError("unlisted", uri, f"it is not inside the skill {self.uri}")
            return _content(uri, await self._read(uri))
        listed = next((candidate for candidate in self.files if candidate.uri == uri), None)
        if listed is None:
            raise SkillVerificationError("unlisted", uri, f"the entry of {self.uri} does not list it")
        data = _content(uri, await self._read(uri))
        verify_content(listed, data)
        return data


class LoadedSkill:
    """A skill whose ``SKILL.md`` passed verification; its supporting files are read on demand.

    Attributes:
        skill: the entry it was loaded from (the held entry every later read is verified against).
        text: ``SKILL.md`` as read and verified.
        body: ``text`` after the frontmatter block.
    """

    __slots__ = ("_verified", "body", "skill", "text")

    def __init__(self, skill: Skill, *, text: str, body: str, data: bytes) -> None:
        """Hold a verified ``SKILL.md`` (``data``, ``text`` decoded); made by :meth:`Skill.load`."""
        self.skill = skill
        self.text = text
        self.body = body
        self._verified: dict[str, bytes] = {skill.uri: data}

    def __repr__(self) -> str:
        return f"LoadedSkill(uri={self.skill.uri!r}, name={self.skill.name!r})"

    @property
    def frontmatter(self) -> Mapping[str, Any]:
        """The frontmatter (identical to the entry's: that was verified)."""
        return self.skill.frontmatter

    async def read(self, path_or_uri: str) -> bytes:
        """One file of the skill, by URI or by path relative to its root (``references/FORMS.md``), verified.

        Read with ``resources/read`` the first time it is asked for, then kept (SEP-2640: hosts cache what they
        retrieve). Only files the entry lists are read.

        Raises:
            ValueError: the path leads out of the skill's root.
            SkillVerificationError: the file is not listed (``"unlisted"``), or its size or digest differ.
            ProtocolError: the result holds no content for the URI.
            McpError: the read failed.
        """
        uri = resolve(self.skill.uri, path_or_uri)
        data = self._verified.get(uri)
        if data is None:
            data = self._verified[uri] = await self.skill._fetch(uri)
        return data

    async def read_text(self, path_or_uri: str) -> str:
        """:meth:`read`, decoded as UTF-8.

        Raises:
            ProtocolError: the file is not UTF-8 text; otherwise as :meth:`read`.
        """
        uri = resolve(self.skill.uri, path_or_uri)
        try:
            return (await self.read(uri)).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ProtocolError(f"{uri} is not UTF-8 text: {exc.reason}") from exc


def _content(uri: str, result: ResourceResult) -> bytes:
    # The raw bytes the entry's digest covers: a text content's UTF-8 encoding, or a blob's decoded bytes.
    matching = [item for item in result.contents if item.get("uri") == uri]
    if not matching and len(result.contents) == 1:
        matching = result.contents
    if len(matching) != 1:
        raise ProtocolError(f"resources/read of {uri} returned {len(matching)} contents for it, not one")
    item = matching[0]
    text = item.get("text")
    if isinstance(text, str):
        return text.encode("utf-8")
    return base64.b64decode(item["blob"])  # ResourceResult checked that it is base64


def skills_from_entries(entries: list[object], read: Reader) -> list[Skill]:
    """The skills of a ``skills/list`` listing (every page's entries).

    Raises:
        ProtocolError: an entry is malformed.
    """
    return [Skill.from_entry(entry, f"skills/list entry #{index}", read) for index, entry in enumerate(entries)]


def skill_from_result(result: dict[str, Any], read: Reader) -> Skill:
    """The skill of a ``skills/get`` result.

    Raises:
        ProtocolError: the result is not complete or its ``skill`` is malformed.
    """
    check_result_type("skills/get", result)
    return Skill.from_entry(result.get("skill"), 'skills/get result "skill"', read)


class Skills:
    """``skills/list`` and ``skills/get`` of one client (SEP-2640); the client's methods say what each does.

    Args:
        session: the client's session.
        catalog: its catalog (the listing's pages).
        connect: connects the client first.
        read: reads a skill's file past the response cache.
    """

    __slots__ = ("_catalog", "_connect", "_read", "_session")

    def __init__(
        self, session: Session, catalog: Catalog, connect: Callable[[], Awaitable[None]], read: Reader
    ) -> None:
        """Serve the client these parts belong to."""
        self._session = session
        self._catalog = catalog
        self._connect = connect
        self._read = read

    async def listed(self, *, fresh: bool) -> list[Skill]:
        """Every page of ``skills/list``; no skill file is read."""
        await self._declared()
        return skills_from_entries(await self._catalog.list_all("skills/list", "skills", fresh=fresh), self._read)

    async def get(self, uri: str, *, fresh: bool) -> Skill:
        """``skills/get`` of ``uri``; ``TypeError`` for a ``uri`` that is not a string."""
        if not isinstance(uri, str):
            raise TypeError(f"uri must be a str, got {type(uri).__name__}")
        await self._declared()
        return skill_from_result(await self._session.request("skills/get", {"uri": uri}, fresh=fresh), self._read)

    async def _declared(self) -> None:
        await self._connect()
        require_declared((await negotiation.discover(self._session)).capabilities)
