"""Validation of a tool's structured result against its ``outputSchema`` (pure: no I/O).

MCP 2026-07-28 "Tools" ("Output Schema", "Structured Content"): when a tool is listed with an
``outputSchema``, the server MUST return ``structuredContent`` that conforms, and a client SHOULD validate
it. The rules applied here:

- the schema's dialect is JSON Schema 2020-12 unless its ``$schema`` names another one the library
  supports (draft 4, 6, 7, 2019-09); an unknown ``$schema`` makes the schema unusable;
- **no ``$ref`` is ever fetched** (MCP "JSON Schema Usage"): references resolve only inside the schema,
  and one that does not (a network or file URI) makes the schema unusable rather than permissive;
- a result with ``isError: true`` is not validated (it is the tool's error report, not its output);
- a tool with an ``outputSchema`` that returns no ``structuredContent`` fails validation;
- a tool without an ``outputSchema``, or not known from a listing, is not validated.

The library is ``jsonschema-rs`` (``bench/validate.py`` measures it against ``jsonschema`` and
``fastjsonschema``): it implements every listed dialect, never fetches with ``offline=True``, uses a
regex engine without catastrophic backtracking, and validates a realistic result about 250 times
faster than ``jsonschema``. Compiled validators are kept per tool, keyed by the schema object they
were compiled from.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, Literal

from .catalog import ToolDefinition
from .results import ToolResult

if TYPE_CHECKING:
    import jsonschema_rs

__all__ = ["OutputCheck", "ValidateOutput"]

ValidateOutput = Literal["raise", "warn", "off"]
"""What the client does with a result that does not conform: raise, log a warning, or not check."""

_MAX_PROBLEMS: Final = 10


_HIDDEN: Final = "the value"
"""What a problem says in place of the value it is about."""


class OutputCheck:
    """Compiled output validators of one client, one per tool name (recompiled when the schema changes)."""

    __slots__ = ("_compiled",)

    def __init__(self) -> None:
        """No validators yet; each is compiled on first use."""
        self._compiled: dict[str, tuple[object, jsonschema_rs.Validator | str]] = {}

    def problems(self, definition: ToolDefinition | None, result: ToolResult) -> list[str]:
        """What is wrong with ``result`` for ``definition``: ``[]`` when it conforms or is not checked."""
        if definition is None or result.is_error or "outputSchema" not in definition.raw:
            return []
        schema = definition.raw["outputSchema"]
        validator = self._validator(definition.name, schema)
        if isinstance(validator, str):
            return [validator]
        if not result.has_structured_content:
            return ["the tool has an outputSchema but returned no structuredContent"]
        if validator.is_valid(result.structured_content):
            return []
        found: list[str] = []
        for error in validator.iter_errors(result.structured_content):
            found.append(f"{_pointer(error.instance_path)}: {error.message}")
            if len(found) >= _MAX_PROBLEMS:
                break
        return found

    def _validator(self, name: str, schema: object) -> jsonschema_rs.Validator | str:
        known = self._compiled.get(name)
        if known is not None and known[0] is schema:
            return known[1]
        compiled: jsonschema_rs.Validator | str
        if not isinstance(schema, dict | bool):
            compiled = "the outputSchema is neither an object nor a boolean"
        else:
            # Imported on the first schema compiled, not with mcpfsm: most clients never validate one.
            import jsonschema_rs

            try:
                # Values masked: a tool's output may hold what no log line or error should quote.
                compiled = jsonschema_rs.validator_for(schema, offline=True, mask=_HIDDEN)
            except (jsonschema_rs.ValidationError, ValueError) as exc:
                compiled = f"the outputSchema cannot be used: {exc}".splitlines()[0]
        self._compiled[name] = (schema, compiled)
        return compiled


def _pointer(path: Any) -> str:
    return "/" + "/".join(str(part).replace("~", "~0").replace("/", "~1") for part in path) if path else "/"
