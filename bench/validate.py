"""Which JSON Schema library validates tool output: jsonschema vs jsonschema-rs vs fastjsonschema.

Run from the repository root:  python bench/validate.py [--rounds R] [--validations N]

Needs the three candidates installed (``pip install jsonschema jsonschema-rs fastjsonschema``); mcpfsm
depends on one of them only. For each library it reports

- what it gets right that an MCP client needs (MCP 2026-07-28 "Tools", output schemas; JSON Schema 2020-12):
  the 2020-12 keywords (``prefixItems``, ``$defs``, ``unevaluatedProperties``, ``dependentRequired``), a declared
  ``$schema`` honoured (draft-07 ``items`` as a list), a network ``$ref`` refused without any request, an
  unsupported ``$schema`` refused;
- the CPU time to compile a realistic output schema once (a search result: nested objects, ``$defs`` + ``$ref``,
  arrays, enum, pattern, nullable ``anyOf``, ``additionalProperties: false``) and to validate one conforming
  and one violating instance against it (median of R rounds, µs per operation, ``time.process_time``).

A local HTTP server on 127.0.0.1 counts the requests a ``$ref`` to it causes: it must stay at zero.
"""

from __future__ import annotations

import argparse
import http.server
import importlib.metadata
import statistics
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import Any

SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "hit": {
            "type": "object",
            "properties": {
                "id": {"type": "string", "pattern": "^[a-z0-9-]{3,40}$"},
                "title": {"type": "string", "minLength": 1},
                "score": {"type": "number", "minimum": 0, "maximum": 1},
                "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
                "author": {"anyOf": [{"$ref": "#/$defs/person"}, {"type": "null"}]},
                "kind": {"enum": ["page", "file", "issue"]},
            },
            "required": ["id", "title", "score", "kind"],
            "additionalProperties": False,
        },
        "person": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "email": {"type": "string"}},
            "required": ["name"],
        },
    },
    "properties": {
        "query": {"type": "string"},
        "total": {"type": "integer", "minimum": 0},
        "hits": {"type": "array", "items": {"$ref": "#/$defs/hit"}, "maxItems": 100},
        "page": {"type": "object", "properties": {"next": {"type": ["string", "null"]}}, "required": ["next"]},
    },
    "required": ["query", "total", "hits"],
}
GOOD: dict[str, Any] = {
    "query": "trio nursery",
    "total": 3,
    "hits": [
        {
            "id": f"doc-{i}",
            "title": f"Result {i}",
            "score": 0.5,
            "tags": ["trio", "async"],
            "author": {"name": "Ada"} if i % 2 else None,
            "kind": "page",
        }
        for i in range(20)
    ],
    "page": {"next": None},
}
BAD: dict[str, Any] = {**GOOD, "hits": [*GOOD["hits"][:-1], {**GOOD["hits"][-1], "score": 7, "extra": 1}]}

PROBES: dict[str, tuple[dict[str, Any], Any, bool]] = {
    # name: (schema, instance, valid?)
    "prefixItems (2020-12)": ({"prefixItems": [{"type": "integer"}], "items": False}, [1, "x"], False),
    "unevaluatedProperties": (
        {"properties": {"a": {}}, "unevaluatedProperties": False},
        {"a": 1, "b": 2},
        False,
    ),
    "dependentRequired": ({"dependentRequired": {"a": ["b"]}}, {"a": 1}, False),
    "$schema draft-07 honoured": (
        {"$schema": "http://json-schema.org/draft-07/schema#", "items": [{"type": "integer"}]},
        ["x"],
        False,
    ),
}


def _counting_server() -> tuple[str, list[str], Callable[[], None]]:
    hits: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(self.path)
            body = b'{"type": "integer"}'
            self.send_response(200)
            self.send_header("Content-Type", "application/schema+json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}", hits, server.shutdown


def jsonschema_lib() -> tuple[Callable[[dict[str, Any]], Callable[[Any], bool]], str]:
    import jsonschema
    from referencing import Registry

    registry: Registry[Any] = Registry()  # no `retrieve`: an unknown $ref is Unresolvable, never fetched

    def compile_(schema: dict[str, Any]) -> Callable[[Any], bool]:
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        cls.check_schema(schema)
        validator = cls(schema, registry=registry)
        return validator.is_valid

    return compile_, f"jsonschema {importlib.metadata.version('jsonschema')}"


def jsonschema_rs_lib() -> tuple[Callable[[dict[str, Any]], Callable[[Any], bool]], str]:
    import jsonschema_rs

    def compile_(schema: dict[str, Any]) -> Callable[[Any], bool]:
        return jsonschema_rs.validator_for(schema, offline=True).is_valid

    return compile_, f"jsonschema-rs {importlib.metadata.version('jsonschema-rs')}"


def fastjsonschema_lib() -> tuple[Callable[[dict[str, Any]], Callable[[Any], bool]], str]:
    import fastjsonschema

    def compile_(schema: dict[str, Any]) -> Callable[[Any], bool]:
        validate = fastjsonschema.compile(schema)

        def is_valid(instance: Any) -> bool:
            try:
                validate(instance)
            except fastjsonschema.JsonSchemaValueException:
                return False
            return True

        return is_valid

    return compile_, f"fastjsonschema {fastjsonschema.VERSION}"


def _verdict(compile_: Callable[[dict[str, Any]], Callable[[Any], bool]], schema: dict[str, Any], instance: Any) -> str:
    try:
        return "valid" if compile_(schema)(instance) else "invalid"
    except Exception as exc:
        return f"error ({type(exc).__name__})"


def _per_op(fn: Callable[[], object], n: int, rounds: int) -> float:
    samples = []
    for _ in range(rounds):
        start = time.process_time()
        for _ in range(n):
            fn()
        samples.append((time.process_time() - start) / n * 1e6)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--validations", type=int, default=2000)
    args = parser.parse_args()
    origin, hits, stop = _counting_server()
    try:
        for factory in (jsonschema_lib, jsonschema_rs_lib, fastjsonschema_lib):
            compile_, name = factory()
            print(f"== {name}")
            for probe, (schema, instance, valid) in PROBES.items():
                got = _verdict(compile_, schema, instance)
                ok = got == ("valid" if valid else "invalid")
                print(f"  {probe:30} {got:22} {'ok' if ok else 'WRONG'}")
            before = len(hits)
            got = _verdict(compile_, {"$ref": f"{origin}/remote.json"}, 1)
            print(f"  {'network $ref':30} {got:22} requests to it: {len(hits) - before}")
            got = _verdict(compile_, {"$schema": "https://example.invalid/unknown", "type": "integer"}, 1)
            print(f"  {'unknown $schema':30} {got}")
            try:
                validator = compile_(SCHEMA)
            except Exception as exc:
                print(f"  realistic schema: cannot compile ({type(exc).__name__}: {exc})")
                continue
            assert validator(GOOD) and not validator(BAD)
            compile_us = _per_op(partial(compile_, SCHEMA), max(args.validations // 20, 10), args.rounds)
            good_us = _per_op(partial(validator, GOOD), args.validations, args.rounds)
            bad_us = _per_op(partial(validator, BAD), args.validations, args.rounds)
            print(f"  compile {compile_us:9.1f} µs   validate ok {good_us:8.2f} µs   violation {bad_us:8.2f} µs")
    finally:
        stop()


if __name__ == "__main__":
    main()
