"""Typed results of MCP requests (pure: no I/O).

Each result type validates the JSON-RPC ``result`` object (or listing entry) it wraps and raises
:class:`~mcpfsm.ProtocolError` naming what is malformed, so a bad server answer never surfaces as an
unrelated ``KeyError`` or ``TypeError``. ``raw`` always keeps the object exactly as received. The
shapes are those of MCP 2026-07-28 ("Tools", "Resources", "Prompts", "Completion"), which the
2025-11-25 revision shares for every field read here.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .constants import SERVER_INFO_KEY
from .errors import ProtocolError

__all__ = [
    "Completion",
    "Prompt",
    "PromptArgument",
    "PromptResult",
    "Resource",
    "ResourceResult",
    "ResourceTemplate",
    "ServerInfo",
    "ToolResult",
    "check_result_type",
]


def check_result_type(method: str, result: Mapping[str, Any]) -> None:
    """Refuse a result that is not complete (MCP 2026-07-28 "Result Types": absent means ``complete``).

    Raises:
        ProtocolError: ``resultType`` is present and is not ``"complete"``.
    """
    result_type = result.get("resultType", "complete")
    if result_type != "complete":
        raise ProtocolError(f"{method} result type {result_type!r} is not supported (only 'complete')")


def _optional_str(what: str, entry: Mapping[str, Any], key: str) -> str | None:
    value = entry.get(key)
    if value is not None and not isinstance(value, str):
        raise ProtocolError(f'{what} "{key}" is not a string')
    return value


def _required_str(what: str, entry: Mapping[str, Any], key: str) -> str:
    value = entry.get(key)
    if not isinstance(value, str):
        raise ProtocolError(f'{what} has no string "{key}"')
    return value


def _object(what: str, value: object) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise ProtocolError(f"{what} is not an object")
    return value


def _objects(what: str, value: object) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        raise ProtocolError(f"{what} is not a list of objects")
    # A loop, not all() over a generator: no generator object for the content of every tool result.
    for item in value:
        if not isinstance(item, dict):
            raise ProtocolError(f"{what} is not a list of objects")
    return value


@dataclass(frozen=True, slots=True, kw_only=True, init=False)
class ToolResult:
    """The result of a ``tools/call``.

    Attributes:
        content: the content blocks, as dicts.
        structured_content: ``structuredContent``: any JSON value (MCP 2026-07-28 allows arrays, strings,
            numbers, booleans and ``null``, not only objects); ``None`` when absent or JSON ``null``.
        has_structured_content: True when the result carried ``structuredContent`` (even ``null``):
            tells an absent value from JSON ``null``.
        is_error: the tool's own error flag (not raised: the call itself succeeded).
        raw: the whole JSON-RPC result object.
    """

    content: list[dict[str, Any]]
    structured_content: Any
    has_structured_content: bool = False
    is_error: bool
    raw: dict[str, Any] = field(repr=False)

    def __init__(
        self,
        *,
        content: list[dict[str, Any]],
        structured_content: Any,
        has_structured_content: bool = False,
        is_error: bool,
        raw: dict[str, Any],
    ) -> None:
        """Make the result: what the dataclass would generate, at half its cost (one result per call)."""
        # The slots' own setters, past the frozen __setattr__ (as the generated __init__ goes past it).
        _SET_CONTENT(self, content)
        _SET_STRUCTURED_CONTENT(self, structured_content)
        _SET_HAS_STRUCTURED_CONTENT(self, has_structured_content)
        _SET_IS_ERROR(self, is_error)
        _SET_RAW(self, raw)

    @classmethod
    def from_result(cls, result: dict[str, Any]) -> ToolResult:
        """Validate a tools/call result object.

        Raises:
            ProtocolError: ``content`` is not a list of objects, ``isError`` is not a boolean, or
                ``resultType`` is not ``"complete"``.
        """
        check_result_type("tools/call", result)
        return cls.from_complete(result)

    @classmethod
    def from_complete(cls, result: dict[str, Any]) -> ToolResult:
        """Validate a tools/call result object whose ``resultType`` is known to be ``complete``.

        What :meth:`from_result` does after checking ``resultType``, for a caller that has checked it (the
        tool-call driver: the session checked it once for every result, and the driver read it).

        Raises:
            ProtocolError: ``content`` is not a list of objects, or ``isError`` is not a boolean.
        """
        content = _objects('tools/call result "content"', result.get("content", []))
        is_error = result.get("isError", False)
        if not isinstance(is_error, bool):
            raise ProtocolError('tools/call result "isError" is not a boolean')
        # The slots set on a new instance, as __init__ does: calling the class with keywords would pack them
        # into a dict first (one result per tool call).
        made: ToolResult = _new(cls)
        _SET_CONTENT(made, content)
        _SET_STRUCTURED_CONTENT(made, result.get("structuredContent"))
        _SET_HAS_STRUCTURED_CONTENT(made, "structuredContent" in result)
        _SET_IS_ERROR(made, is_error)
        _SET_RAW(made, result)
        return made

    @property
    def text(self) -> str:
        """The text of every ``text`` content block, joined with newlines."""
        return "\n".join(str(b.get("text", "")) for b in self.content if b.get("type") == "text")



_new = object.__new__
_SET_CONTENT: Callable[[ToolResult, Any], None] = ToolResult.__dict__["content"].__set__
_SET_STRUCTURED_CONTENT: Callable[[ToolResult, Any], None] = ToolResult.__dict__["structured_content"].__set__
_SET_HAS_STRUCTURED_CONTENT: Callable[[ToolResult, Any], None] = ToolResult.__dict__["has_structured_content"].__set__
_SET_IS_ERROR: Callable[[ToolResult, Any], None] = ToolResult.__dict__["is_error"].__set__
_SET_RAW: Callable[[ToolResult, Any], None] = ToolResult.__dict__["raw"].__set__

@dataclass(frozen=True, slots=True, kw_only=True)
class Resource:
    """One entry of ``resources/list``.

    Attributes:
        uri: the resource's URI.
        name: its name.
        title: a human title, if given.
        description: a description, if given.
        mime_type: ``mimeType``, if given.
        size: the size in bytes, if given.
        raw: the entry exactly as listed.
    """

    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    raw: Mapping[str, Any] = field(repr=False, compare=False)

    @classmethod
    def from_entry(cls, entry: object, index: int = 0) -> Resource:
        """Validate one listed resource.

        Raises:
            ProtocolError: the entry is not an object, lacks a string ``uri`` or ``name``, or an
                optional field has the wrong type.
        """
        what = f"resources/list entry #{index}"
        item = _object(what, entry)
        size = item.get("size")
        if size is not None and (not isinstance(size, int) or isinstance(size, bool) or size < 0):
            raise ProtocolError(f'{what} "size" is not a non-negative integer')
        return cls(
            uri=_required_str(what, item, "uri"),
            name=_required_str(what, item, "name"),
            title=_optional_str(what, item, "title"),
            description=_optional_str(what, item, "description"),
            mime_type=_optional_str(what, item, "mimeType"),
            size=size,
            raw=item,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ResourceTemplate:
    """One entry of ``resources/templates/list``.

    Attributes:
        uri_template: the RFC 6570 URI template.
        name: its name.
        title: a human title, if given.
        description: a description, if given.
        mime_type: ``mimeType`` of the resources it names, if given.
        raw: the entry exactly as listed.
    """

    uri_template: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    raw: Mapping[str, Any] = field(repr=False, compare=False)

    @classmethod
    def from_entry(cls, entry: object, index: int = 0) -> ResourceTemplate:
        """Validate one listed resource template.

        Raises:
            ProtocolError: the entry is not an object, lacks a string ``uriTemplate`` or ``name``, or an
                optional field has the wrong type.
        """
        what = f"resources/templates/list entry #{index}"
        item = _object(what, entry)
        return cls(
            uri_template=_required_str(what, item, "uriTemplate"),
            name=_required_str(what, item, "name"),
            title=_optional_str(what, item, "title"),
            description=_optional_str(what, item, "description"),
            mime_type=_optional_str(what, item, "mimeType"),
            raw=item,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ResourceResult:
    """The result of a ``resources/read``.

    Attributes:
        contents: the content dicts as sent: each has a string ``uri`` and either a string ``text``
            or a base64 ``blob`` (checked), and maybe ``mimeType``.
        raw: the whole JSON-RPC result object.
    """

    contents: list[dict[str, Any]]
    raw: dict[str, Any] = field(repr=False)

    @classmethod
    def from_result(cls, result: dict[str, Any]) -> ResourceResult:
        """Validate a resources/read result object.

        Raises:
            ProtocolError: ``contents`` is not a list of objects, an entry has no string ``uri``, has
                neither a string ``text`` nor a valid base64 ``blob``, or ``resultType`` is not complete.
        """
        check_result_type("resources/read", result)
        contents = _objects('resources/read result "contents"', result.get("contents"))
        for index, item in enumerate(contents):
            what = f"resources/read content #{index}"
            _required_str(what, item, "uri")
            _optional_str(what, item, "mimeType")
            if isinstance(item.get("text"), str):
                continue
            _decode_blob(what, item.get("blob"))
        return cls(contents=contents, raw=result)

    @property
    def text(self) -> str:
        """The ``text`` of every text content, joined with newlines."""
        return "\n".join(item["text"] for item in self.contents if isinstance(item.get("text"), str))

    @property
    def blobs(self) -> list[bytes]:
        """The decoded bytes of every ``blob`` content, in order."""
        return [
            _decode_blob("", item["blob"]) for item in self.contents if not isinstance(item.get("text"), str)
        ]


def _decode_blob(what: str, blob: object) -> bytes:
    if not isinstance(blob, str):
        raise ProtocolError(f'{what} has neither a string "text" nor a string "blob"')
    try:
        return base64.b64decode(blob, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ProtocolError(f'{what} "blob" is not valid base64: {exc}') from exc


@dataclass(frozen=True, slots=True, kw_only=True)
class PromptArgument:
    """One argument a prompt takes.

    Attributes:
        name: the argument's name.
        title: a human title, if given.
        description: a description, if given.
        required: whether the prompt needs it (absent means False).
    """

    name: str
    title: str | None = None
    description: str | None = None
    required: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Prompt:
    """One entry of ``prompts/list``.

    Attributes:
        name: the prompt's name (what ``get_prompt`` takes).
        title: a human title, if given.
        description: a description, if given.
        arguments: the arguments it takes, in order.
        raw: the entry exactly as listed.
    """

    name: str
    title: str | None = None
    description: str | None = None
    arguments: tuple[PromptArgument, ...] = ()
    raw: Mapping[str, Any] = field(repr=False, compare=False)

    @classmethod
    def from_entry(cls, entry: object, index: int = 0) -> Prompt:
        """Validate one listed prompt.

        Raises:
            ProtocolError: the entry is not an object, lacks a string ``name``, or its ``arguments``
                are malformed.
        """
        what = f"prompts/list entry #{index}"
        item = _object(what, entry)
        arguments: list[PromptArgument] = []
        for position, argument in enumerate(_objects(f'{what} "arguments"', item.get("arguments", []))):
            where = f"{what} argument #{position}"
            required = argument.get("required", False)
            if not isinstance(required, bool):
                raise ProtocolError(f'{where} "required" is not a boolean')
            arguments.append(
                PromptArgument(
                    name=_required_str(where, argument, "name"),
                    title=_optional_str(where, argument, "title"),
                    description=_optional_str(where, argument, "description"),
                    required=required,
                )
            )
        return cls(
            name=_required_str(what, item, "name"),
            title=_optional_str(what, item, "title"),
            description=_optional_str(what, item, "description"),
            arguments=tuple(arguments),
            raw=item,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class PromptResult:
    """The result of a ``prompts/get``.

    Attributes:
        messages: the message dicts as sent; each has ``role`` ``"user"`` or ``"assistant"`` and a
            ``content`` object (checked).
        description: the prompt's description, if given.
        raw: the whole JSON-RPC result object.
    """

    messages: list[dict[str, Any]]
    description: str | None = None
    raw: dict[str, Any] = field(repr=False)

    @classmethod
    def from_result(cls, result: dict[str, Any]) -> PromptResult:
        """Validate a prompts/get result object.

        Raises:
            ProtocolError: ``messages`` is not a list of objects, a message has another role or no
                content object, or ``resultType`` is not complete.
        """
        check_result_type("prompts/get", result)
        messages = _objects('prompts/get result "messages"', result.get("messages"))
        for index, message in enumerate(messages):
            if message.get("role") not in ("user", "assistant"):
                raise ProtocolError(f'prompts/get message #{index} "role" is neither "user" nor "assistant"')
            _object(f'prompts/get message #{index} "content"', message.get("content"))
        return cls(
            messages=messages,
            description=_optional_str("prompts/get result", result, "description"),
            raw=result,
        )

    @property
    def text(self) -> str:
        """The text of every message whose content is a ``text`` block, joined with newlines."""
        return "\n".join(
            str(m["content"].get("text", "")) for m in self.messages if m["content"].get("type") == "text"
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Completion:
    """The result of a ``completion/complete``.

    Attributes:
        values: the suggested values (at most 100, MCP "Completion").
        total: how many values exist in all, if the server said.
        has_more: True when there are more values than returned.
        raw: the whole JSON-RPC result object.
    """

    values: tuple[str, ...]
    total: int | None = None
    has_more: bool = False
    raw: dict[str, Any] = field(repr=False)

    @classmethod
    def from_result(cls, result: dict[str, Any]) -> Completion:
        """Validate a completion/complete result object.

        Raises:
            ProtocolError: ``completion`` is not an object, ``values`` is not a list of at most 100
                strings, ``total`` is not an integer or ``hasMore`` not a boolean.
        """
        check_result_type("completion/complete", result)
        completion = _object('completion/complete result "completion"', result.get("completion"))
        values = completion.get("values")
        if not isinstance(values, Sequence) or isinstance(values, str) or not all(isinstance(v, str) for v in values):
            raise ProtocolError('completion/complete "values" is not a list of strings')
        if len(values) > 100:
            raise ProtocolError(f'completion/complete "values" has {len(values)} entries; at most 100 are allowed')
        total = completion.get("total")
        if total is not None and (not isinstance(total, int) or isinstance(total, bool)):
            raise ProtocolError('completion/complete "total" is not an integer')
        has_more = completion.get("hasMore", False)
        if not isinstance(has_more, bool):
            raise ProtocolError('completion/complete "hasMore" is not a boolean')
        return cls(values=tuple(values), total=total, has_more=has_more, raw=result)


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerInfo:
    """What the server said about itself when the connection's era was settled.

    In the 2026-07-28 era it comes from the ``server/discover`` result (MCP 2026-07-28 "Discovery":
    ``capabilities``, ``instructions``, and the server's ``Implementation`` in
    ``_meta["io.modelcontextprotocol/serverInfo"]``); in the 2025-11-25 era from the ``initialize``
    result (MCP 2025-11-25 "Lifecycle": ``capabilities``, ``instructions``, ``serverInfo``). Both
    revisions call the identity display-only and ``instructions`` optional, so a field that is absent
    or not of its type reads as ``None`` (``{}`` for ``capabilities``) instead of failing the
    connection; ``raw`` keeps what was sent.

    Attributes:
        name: ``serverInfo.name``.
        version: ``serverInfo.version``.
        title: ``serverInfo.title``, a display name, when given.
        protocol_version: the protocol version of the connection it describes.
        capabilities: the server's capabilities (``tools``, ``resources``, ``prompts``, ``logging``, ...).
        instructions: natural-language guidance on using the server, meant for a model's system prompt;
            ``None`` when the server gave none.
        raw: the whole ``server/discover`` or ``initialize`` result object.
    """

    name: str | None
    version: str | None
    title: str | None = None
    protocol_version: str
    capabilities: dict[str, Any]
    instructions: str | None = None
    raw: dict[str, Any] = field(repr=False)

    @classmethod
    def from_discover(cls, result: dict[str, Any], protocol_version: str) -> ServerInfo:
        """Read a ``server/discover`` result of a connection speaking ``protocol_version``."""
        meta = result.get("_meta")
        identity = meta.get(SERVER_INFO_KEY) if isinstance(meta, dict) else None
        if not isinstance(identity, dict):
            identity = result.get("serverInfo")  # where the initialize era kept it
        return cls._read(result, identity, protocol_version)

    @classmethod
    def from_initialize(cls, result: dict[str, Any]) -> ServerInfo:
        """Read an ``initialize`` result (its ``protocolVersion`` was checked by the session)."""
        version = result.get("protocolVersion")
        return cls._read(result, result.get("serverInfo"), version if isinstance(version, str) else "")

    @classmethod
    def _read(cls, result: dict[str, Any], identity: object, protocol_version: str) -> ServerInfo:
        identity = identity if isinstance(identity, dict) else {}
        capabilities = result.get("capabilities")
        return cls(
            name=_lenient_str(identity.get("name")),
            version=_lenient_str(identity.get("version")),
            title=_lenient_str(identity.get("title")),
            protocol_version=protocol_version,
            capabilities=capabilities if isinstance(capabilities, dict) else {},
            instructions=_lenient_str(result.get("instructions")),
            raw=result,
        )


def _lenient_str(value: object) -> str | None:
    return value if isinstance(value, str) else None
