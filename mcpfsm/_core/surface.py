"""Typed results of the resource, prompt and completion requests (pure: no I/O).

The same rules as :mod:`mcpfsm._core.results`: each type validates the JSON-RPC ``result`` object or
listing entry it wraps and raises :class:`~mcpfsm.ProtocolError` naming what is malformed; ``raw`` keeps
the object exactly as received. The shapes are those of MCP 2026-07-28 ("Resources", "Prompts",
"Completion"), which the 2025-11-25 revision shares for every field read here. A module of its own,
imported by the client with the first such request, so that a client that only calls tools never
builds these types (``import mcpfsm`` stays quick: bench/startup.py).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import ProtocolError
from .results import _object, _objects, _optional_str, _required_str, check_result_type

__all__ = [
    "Completion",
    "Prompt",
    "PromptArgument",
    "PromptResult",
    "Resource",
    "ResourceResult",
    "ResourceTemplate",
]


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
        server: in a ``ClientGroup``'s listing, the name of the server that listed it; ``None`` otherwise.
    """

    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    raw: Mapping[str, Any] = field(repr=False, compare=False)
    server: str | None = None

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
        server: in a ``ClientGroup``'s listing, the name of the server that listed it (``name`` is then the
            aggregated name, ``raw["name"]`` the server's own); ``None`` otherwise.
    """

    name: str
    title: str | None = None
    description: str | None = None
    arguments: tuple[PromptArgument, ...] = ()
    raw: Mapping[str, Any] = field(repr=False, compare=False)
    server: str | None = None

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
