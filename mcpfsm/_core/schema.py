"""``x-mcp-header`` annotations in a tool's ``inputSchema`` (SEP-2243).

Pure: no I/O, no recursion (an explicit stack walks schemas of any depth), never raises on any
JSON value or Python container. :func:`inspect_input_schema` returns a :class:`SchemaVerdict`:
either the mirrored parameters (property path -> header token, declared type) or the first
reason the tool is invalid, worded for the log line that excludes the tool.
"""

from __future__ import annotations

import json
import reprlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Literal

from .codec import is_token

__all__ = [
    "ANNOTATION",
    "MIRRORABLE_TYPES",
    "MirroredParam",
    "SchemaVerdict",
    "inspect_input_schema",
    "json_pointer",
]

ANNOTATION: Final = "x-mcp-header"
"""The schema keyword that marks a property for mirroring."""

MirrorableType = Literal["string", "integer", "boolean"]
MIRRORABLE_TYPES: Final[frozenset[str]] = frozenset({"string", "integer", "boolean"})
"""Declared property types that can be mirrored (SEP-2243: only string, integer and boolean properties)."""

# Keywords whose values are instance data, not schemas: an `x-mcp-header` key inside them is
# data (SEP-2243), so the walk never enters them.
_INSTANCE_DATA: Final = frozenset({"default", "examples", "const", "enum"})
# Keywords whose values map names to schemas: their keys are names, never keywords, so a
# definition named `default` is still walked and one named `x-mcp-header` is not an annotation.
_SCHEMA_MAPS: Final = frozenset(
    {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"}
)


@dataclass(frozen=True, slots=True, kw_only=True)
class MirroredParam:
    """One argument a tool asks the client to mirror into a header (SEP-2243).

    Attributes:
        path: property names from the schema root, e.g. ``("options", "readOnly")``.
        token: the annotation's value, case kept, e.g. ``"Read-Only"``.
        type: the declared type: ``"string"``, ``"integer"`` or ``"boolean"``.
    """

    path: tuple[str, ...]
    token: str
    type: MirrorableType

    @property
    def header(self) -> str:
        """The header name, ``Mcp-Param-`` + token."""
        return "Mcp-Param-" + self.token

    @property
    def pointer(self) -> str:
        """The property path as a JSON pointer, e.g. ``/options/readOnly``."""
        return json_pointer(self.path)


@dataclass(frozen=True, slots=True, kw_only=True)
class SchemaVerdict:
    """What :func:`inspect_input_schema` found.

    Attributes:
        mirrored: the valid annotations in document order (empty when ``reason`` is set).
        reason: ``None`` when every annotation is valid, else the first problem found.
    """

    mirrored: tuple[MirroredParam, ...] = ()
    reason: str | None = None

    @property
    def valid(self) -> bool:
        """True when the tool may be used with mirroring."""
        return self.reason is None


def json_pointer(segments: Sequence[object]) -> str:
    """Render path segments as an RFC 6901 JSON pointer (``~`` -> ``~0``, ``/`` -> ``~1``)."""
    return "".join("/" + str(s).replace("~", "~0").replace("/", "~1") for s in segments)


# A location is a linked list (parent, segment), so a 10,000-deep schema costs O(depth), not
# O(depth²), to track; it is materialised only for the few annotations found.
_Loc = tuple["_Loc", object] | None


def _segments(loc: _Loc) -> list[object]:
    out: list[object] = []
    while loc is not None:
        loc, seg = loc
        out.append(seg)
    out.reverse()
    return out


def _clip(pointer: str) -> str:
    # A log line stays readable even for a schema nested thousands of levels deep.
    return pointer if len(pointer) <= 200 else f"{pointer[:100]}...{pointer[-97:]}"


def _describe(value: object) -> str:
    # Strings in Python quotes as in the exclusion log line; other values as JSON (12, null, true).
    try:
        text = repr(value) if isinstance(value, str) else json.dumps(value)
    except (TypeError, ValueError, RecursionError):
        # Not JSON, or nested too deep for json.dumps (and for repr): reprlib stops at depth 6.
        text = reprlib.repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _type_text(declared: object) -> str:
    if declared is None:
        return "no type"
    return f"type {_describe(declared)}"


def inspect_input_schema(schema: object) -> SchemaVerdict:
    """Find every ``x-mcp-header`` annotation in ``schema`` and check the SEP-2243 rules.

    The rules: a header-name token, a string/integer/boolean property, reachable through ``properties``
    alone, unique case-insensitively.

    Returns the mirrored parameters, or the first reason the schema's annotations are invalid
    (walk order is document order, depth first). Instance data under ``default``, ``examples``,
    ``const`` and ``enum`` is never read as an annotation; ``$ref`` is never followed.
    Never raises.
    """
    found: list[MirroredParam] = []
    seen: dict[str, MirroredParam] = {}
    # (node, schema location, property path location or None when not statically reachable,
    #  True when node is a property schema reached only through `properties`)
    stack: list[tuple[object, _Loc, _Loc, bool]] = [(schema, None, None, False)]
    # Parsed JSON is a tree; Python callers may hand in shared or cyclic containers: visit each once.
    visited: set[int] = set()
    while stack:
        node, loc, prop, reachable = stack.pop()
        if isinstance(node, Mapping | list):
            if id(node) in visited:
                continue
            visited.add(id(node))
        if isinstance(node, Mapping):
            if ANNOTATION in node:
                reason = _check_annotation(node, loc, prop, reachable, seen, found)
                if reason is not None:
                    return SchemaVerdict(reason=reason)
            children: list[tuple[object, _Loc, _Loc, bool]] = []
            for key, value in node.items():
                if key == ANNOTATION or key in _INSTANCE_DATA or not isinstance(value, Mapping | list):
                    continue
                key_loc: _Loc = (loc, key)
                if key in _SCHEMA_MAPS and isinstance(value, Mapping):
                    for name, sub in value.items():
                        if isinstance(sub, Mapping | list):
                            ok = key == "properties" and (reachable or loc is None) and isinstance(name, str)
                            children.append((sub, (key_loc, name), (prop, name) if ok else None, ok))
                else:
                    children.append((value, key_loc, None, False))
            stack.extend(reversed(children))
        elif isinstance(node, list):
            stack.extend(
                (item, (loc, index), None, False)
                for index, item in reversed(list(enumerate(node)))
                if isinstance(item, Mapping | list)
            )
    return SchemaVerdict(mirrored=tuple(found))


def _check_annotation(
    node: Mapping[object, object],
    loc: _Loc,
    prop: _Loc,
    reachable: bool,
    seen: dict[str, MirroredParam],
    found: list[MirroredParam],
) -> str | None:
    token = node[ANNOTATION]
    if loc is None:
        return f"x-mcp-header {_describe(token)} at the schema root is not on a property"
    if not reachable:
        segments = _segments(loc)
        keyword = _blocking_keyword(segments)
        return (
            f"x-mcp-header {_describe(token)} at {_clip(json_pointer(segments))} is not statically reachable"
            f" (under {_describe(keyword)}; only nested 'properties' are followed)"
        )
    path = tuple(str(s) for s in _segments(prop))
    pointer = json_pointer(path)
    if not isinstance(token, str):
        return f"x-mcp-header {_describe(token)} at {pointer} is not a string"
    if not is_token(token):
        return f"x-mcp-header {_describe(token)} at {pointer} is not a valid header-name token"
    declared = node.get("type")
    if not isinstance(declared, str) or declared not in MIRRORABLE_TYPES:
        return (
            f"x-mcp-header {_describe(token)} at {pointer} is on a property with {_type_text(declared)};"
            " only 'string', 'integer' or 'boolean' can be mirrored"
        )
    folded = token.lower()
    if folded in seen:
        other = seen[folded]
        return (
            f"x-mcp-header {_describe(token)} at {pointer} duplicates {_describe(other.token)}"
            f" at {other.pointer} (header names compare case-insensitively)"
        )
    param = MirroredParam(path=path, token=token, type=declared)  # type: ignore[arg-type]
    seen[folded] = param
    found.append(param)
    return None


def _blocking_keyword(segments: list[object]) -> object:
    # The first segment that is neither `properties` nor the property name right after it.
    expect_name = False
    for segment in segments:
        if expect_name:
            expect_name = False
        elif segment == "properties":
            expect_name = True
        else:
            return segment
    return segments[0]
