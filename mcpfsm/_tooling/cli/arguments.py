"""A tool's arguments on the command line: ``key=value`` pairs typed by the ``inputSchema``, and the check.

``mcpfsm call URL TOOL count=3 flag=true name=Ada obj:='{"a": 1}'``: a ``key=value`` pair takes the type the
tool's ``inputSchema`` gives ``key`` (``integer``, ``number``, ``boolean``, ``null``, else a string), and
``key:=JSON`` is always JSON. The pairs go into the object ``--args`` gave (they win over its members). Before
anything is sent the arguments are checked against the ``inputSchema`` (JSON Schema 2020-12 unless the schema
names another dialect, as in MCP "Tools"; no ``$ref`` is fetched): each problem is named by its JSON pointer and
rule, never by the value given, since an argument may be a secret.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

from .common import CliError, Exit

__all__ = ["apply_pairs", "describe_type", "is_pair", "schema_problems"]

_MAX_PROBLEMS: Final = 10
_HIDDEN: Final = "the value"


def is_pair(text: str) -> bool:
    """Whether a positional word is a ``key=value`` or ``key:=JSON`` argument."""
    key, equals, _ = text.partition("=")
    return bool(equals) and bool(key.removesuffix(":"))


def apply_pairs(arguments: dict[str, Any], pairs: Sequence[str], schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """``arguments`` with each pair set, typed by ``schema``'s properties (``None``: no schema known).

    Raises:
        CliError: a pair that is not ``key=value``, JSON after ``:=`` that does not parse, or a value that is not
            of the type the schema declares (exit 2; the key and the type are named, not the value).
    """
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    properties = properties if isinstance(properties, Mapping) else {}
    result = dict(arguments)
    for pair in pairs:
        if not is_pair(pair):
            raise CliError(Exit.usage, f"argument {pair!r} is not KEY=VALUE or KEY:=JSON")
        key, _, value = pair.partition("=")
        if key.endswith(":"):
            key = key[:-1]
            try:
                result[key] = json.loads(value)
            except json.JSONDecodeError as exc:
                raise CliError(Exit.usage, f"argument {key}:= is not valid JSON: {exc}") from exc
            continue
        declared = properties.get(key)
        result[key] = _typed(key, value, declared.get("type") if isinstance(declared, Mapping) else None)
    return result


def _typed(key: str, value: str, declared: object) -> Any:
    if isinstance(declared, str):
        kinds = [declared]
    else:
        kinds = [k for k in declared if isinstance(k, str)] if isinstance(declared, list) else []
    if not kinds or "string" in kinds:
        return value
    if "integer" in kinds:
        try:
            return int(value)
        except ValueError:
            pass
    if "number" in kinds:
        try:
            number = float(value)
        except ValueError:
            pass
        else:
            return int(number) if number.is_integer() and "." not in value and "e" not in value.lower() else number
    if "boolean" in kinds and value in ("true", "false"):
        return value == "true"
    if "null" in kinds and value == "null":
        return None
    if "object" in kinds or "array" in kinds:
        raise CliError(
            Exit.usage, f"argument {key} is declared {' or '.join(kinds)}: give it as JSON with {key}:='...'"
        )
    raise CliError(Exit.usage, f"argument {key} is declared {' or '.join(kinds)}; the value given is not one")


def schema_problems(schema: object, arguments: Mapping[str, Any]) -> list[str]:
    """What is wrong with ``arguments`` for ``schema``: one line per problem (pointer and rule), ``[]`` when fine.

    A schema that cannot be compiled (an unknown dialect, a ``$ref`` outside it) is not held against the
    arguments: the server decides then.
    """
    if not isinstance(schema, dict | bool):
        return []
    import jsonschema_rs

    try:
        validator = jsonschema_rs.validator_for(schema, offline=True, mask=_HIDDEN)
    except (jsonschema_rs.ValidationError, ValueError):
        return []
    found: list[str] = []
    for error in validator.iter_errors(dict(arguments)):
        pointer = "/" + "/".join(str(p).replace("~", "~0").replace("/", "~1") for p in error.instance_path)
        found.append(f"{pointer}: {error.message}")
        if len(found) >= _MAX_PROBLEMS:
            break
    return found


def describe_type(schema: object) -> str:
    """A property's type for a table: ``string``, ``integer|null``, ``enum``, ``any``."""
    if not isinstance(schema, Mapping):
        return "any"
    kind = schema.get("type")
    if isinstance(kind, str):
        return kind
    if isinstance(kind, list) and all(isinstance(k, str) for k in kind):
        return "|".join(kind)
    if "enum" in schema:
        return "enum"
    if "const" in schema:
        return "const"
    for combinator in ("anyOf", "oneOf"):
        options = schema.get(combinator)
        if isinstance(options, list):
            return "|".join(describe_type(option) for option in options)
    return "any"

