"""x-mcp-header annotations: every SEP-2243 rule, hostile input, and properties over arbitrary JSON."""

from __future__ import annotations

import signal
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpfsm._core.schema import MirroredParam, SchemaVerdict, inspect_input_schema, json_pointer

ONLY = "; only 'string', 'integer' or 'boolean' can be mirrored"
FOLLOWED = "; only nested 'properties' are followed)"


def prop(token: object = "Region", type_: object = "string", **extra: object) -> dict[str, object]:
    """A property schema carrying an annotation."""
    return {"type": type_, "x-mcp-header": token, **extra}


def tool(**properties: object) -> dict[str, object]:
    """A tool inputSchema with the given top-level properties."""
    return {"type": "object", "properties": properties}


def ok(*params: tuple[tuple[str, ...], str, str]) -> SchemaVerdict:
    return SchemaVerdict(mirrored=tuple(MirroredParam(path=p, token=t, type=ty) for p, t, ty in params))  # type: ignore[arg-type]


def bad(reason: str) -> SchemaVerdict:
    return SchemaVerdict(reason=reason)


def token_reason(shown: str, pointer: str = "/region") -> SchemaVerdict:
    return bad(f"x-mcp-header {shown} at {pointer} is not a valid header-name token")


def type_reason(shown: str, token: str = "'Region'", pointer: str = "/region") -> SchemaVerdict:
    return bad(f"x-mcp-header {token} at {pointer} is on a property with {shown}{ONLY}")


def clip(pointer: str) -> str:
    # Reasons clip pointers longer than 200 characters to their first 100 and last 97.
    return pointer if len(pointer) <= 200 else f"{pointer[:100]}...{pointer[-97:]}"


def unreachable(pointer: str, keyword: str, token: str = "'Region'") -> SchemaVerdict:
    return bad(f"x-mcp-header {token} at {clip(pointer)} is not statically reachable (under {keyword}{FOLLOWED}")


CASES = [
    # Rule 1-3 satisfied: top level, nested, deep, every mirrorable type.
    pytest.param(tool(region=prop()), ok((("region",), "Region", "string")), id="valid-top-level-string"),
    pytest.param(tool(limit=prop("Limit", "integer")), ok((("limit",), "Limit", "integer")), id="valid-integer"),
    pytest.param(tool(dry=prop("Dry-Run", "boolean")), ok((("dry",), "Dry-Run", "boolean")), id="valid-boolean"),
    pytest.param(
        tool(options={"type": "object", "properties": {"readOnly": prop("Read-Only", "boolean")}}),
        ok((("options", "readOnly"), "Read-Only", "boolean")),
        id="valid-nested-options-readOnly",
    ),
    pytest.param(
        tool(a={"properties": {"b": {"properties": {"c": {"properties": {"d": prop("D")}}}}}}),
        ok((("a", "b", "c", "d"), "D", "string")),
        id="valid-deep",
    ),
    pytest.param(
        tool(database=prop("Database"), options={"properties": {"readOnly": prop("Read-Only", "boolean")}},
             limit=prop("Limit", "integer")),
        ok((("database",), "Database", "string"), (("options", "readOnly"), "Read-Only", "boolean"),
           (("limit",), "Limit", "integer")),
        id="valid-several-in-document-order",
    ),
    pytest.param(
        tool(**{"a.b": prop("Dotted")}), ok((("a.b",), "Dotted", "string")), id="valid-dotted-name-one-segment"
    ),
    pytest.param(tool(m=prop("Method")), ok((("m",), "Method", "string")), id="valid-token-Method"),
    pytest.param(
        tool(t=prop("!#$%&'*+-.^_`|~09AZaz")),
        ok((("t",), "!#$%&'*+-.^_`|~09AZaz", "string")),
        id="valid-every-token-character-class",
    ),
    pytest.param(tool(region={"type": "string"}), ok(), id="valid-no-annotation"),
    pytest.param({}, ok(), id="valid-empty-schema"),
    pytest.param({"type": "object"}, ok(), id="valid-no-properties"),
    # Rule 1: token.
    pytest.param(tool(region=prop("Bad Header")), token_reason("'Bad Header'"), id="token-space-spec-log-line"),
    pytest.param(tool(region=prop("Re:gion")), token_reason("'Re:gion'"), id="token-colon"),
    pytest.param(tool(region=prop("Régión")), token_reason("'Régión'"), id="token-non-ascii"),
    pytest.param(tool(region=prop("")), token_reason("''"), id="token-empty"),
    pytest.param(tool(region=prop("Re\tgion")), token_reason("'Re\\tgion'"), id="token-tab"),
    pytest.param(tool(region=prop("Region\r\n")), token_reason("'Region\\r\\n'"), id="token-crlf"),
    pytest.param(tool(region=prop("Re\x00gion")), token_reason("'Re\\x00gion'"), id="token-nul"),
    pytest.param(tool(region=prop("Re\x7fgion")), token_reason("'Re\\x7fgion'"), id="token-del"),
    pytest.param(tool(region=prop("Re(gion)")), token_reason("'Re(gion)'"), id="token-parentheses"),
    pytest.param(tool(region=prop('"Region"')), token_reason("'\"Region\"'"), id="token-double-quotes"),
    pytest.param(tool(region=prop("Re/gion")), token_reason("'Re/gion'"), id="token-slash"),
    pytest.param(
        tool(region=prop(12)), bad("x-mcp-header 12 at /region is not a string"), id="token-number-12"
    ),
    pytest.param(tool(region=prop(None)), bad("x-mcp-header null at /region is not a string"), id="token-null"),
    pytest.param(tool(region=prop(True)), bad("x-mcp-header true at /region is not a string"), id="token-true"),
    pytest.param(
        tool(region=prop({"name": "Region"})),
        bad('x-mcp-header {"name": "Region"} at /region is not a string'),
        id="token-object",
    ),
    pytest.param(
        tool(region=prop(["Region"])), bad('x-mcp-header ["Region"] at /region is not a string'), id="token-list"
    ),
    # Rule 2: declared type.
    pytest.param(tool(region=prop(type_="number")), type_reason("type 'number'"), id="type-number"),
    pytest.param(tool(region=prop(type_="object")), type_reason("type 'object'"), id="type-object"),
    pytest.param(tool(region=prop(type_="array")), type_reason("type 'array'"), id="type-array"),
    pytest.param(tool(region=prop(type_="null")), type_reason("type 'null'"), id="type-null-string"),
    pytest.param(tool(region=prop(type_=None)), type_reason("no type"), id="type-json-null"),
    pytest.param(tool(region={"x-mcp-header": "Region"}), type_reason("no type"), id="type-missing"),
    pytest.param(
        tool(region=prop(type_=["string", "null"])), type_reason('type ["string", "null"]'), id="type-list-nullable"
    ),
    pytest.param(tool(region=prop(type_=["string"])), type_reason('type ["string"]'), id="type-list-single"),
    pytest.param(tool(region=prop(type_="String")), type_reason("type 'String'"), id="type-wrong-case"),
    pytest.param(tool(region=prop(type_=1)), type_reason("type 1"), id="type-not-a-string"),
    # Rule 3: static reachability.
    pytest.param(
        {"type": "object", "x-mcp-header": "Region"},
        bad("x-mcp-header 'Region' at the schema root is not on a property"),
        id="unreachable-root",
    ),
    pytest.param(
        tool(tags={"type": "array", "items": prop()}), unreachable("/properties/tags/items", "'items'"),
        id="unreachable-items",
    ),
    pytest.param(
        tool(pair={"type": "array", "prefixItems": [{"type": "integer"}, prop()]}),
        unreachable("/properties/pair/prefixItems/1", "'prefixItems'"),
        id="unreachable-prefixItems",
    ),
    pytest.param(
        {"type": "object", "additionalProperties": prop()},
        unreachable("/additionalProperties", "'additionalProperties'"),
        id="unreachable-additionalProperties",
    ),
    pytest.param(
        {"patternProperties": {"^r": prop()}}, unreachable("/patternProperties/^r", "'patternProperties'"),
        id="unreachable-patternProperties",
    ),
    pytest.param(
        {"oneOf": [{"properties": {"region": prop()}}]}, unreachable("/oneOf/0/properties/region", "'oneOf'"),
        id="unreachable-oneOf",
    ),
    pytest.param(
        {"anyOf": [{}, {"properties": {"region": prop()}}]},
        unreachable("/anyOf/1/properties/region", "'anyOf'"),
        id="unreachable-anyOf",
    ),
    pytest.param(
        tool(region={"allOf": [prop()]}), unreachable("/properties/region/allOf/0", "'allOf'"),
        id="unreachable-allOf-inside-property",
    ),
    pytest.param({"not": prop()}, unreachable("/not", "'not'"), id="unreachable-not"),
    pytest.param(
        {"if": {"properties": {"region": prop()}}}, unreachable("/if/properties/region", "'if'"),
        id="unreachable-if",
    ),
    pytest.param(
        {"if": {}, "then": {"properties": {"region": prop()}}}, unreachable("/then/properties/region", "'then'"),
        id="unreachable-then",
    ),
    pytest.param(
        {"if": {}, "else": {"properties": {"region": prop()}}}, unreachable("/else/properties/region", "'else'"),
        id="unreachable-else",
    ),
    pytest.param({"$defs": {"r": prop()}}, unreachable("/$defs/r", "'$defs'"), id="unreachable-$defs"),
    pytest.param(
        {"definitions": {"r": prop()}}, unreachable("/definitions/r", "'definitions'"), id="unreachable-definitions"
    ),
    pytest.param(
        {"dependentSchemas": {"a": {"properties": {"region": prop()}}}},
        unreachable("/dependentSchemas/a/properties/region", "'dependentSchemas'"),
        id="unreachable-dependentSchemas",
    ),
    pytest.param(
        tool(region={"x-vendor": prop()}), unreachable("/properties/region/x-vendor", "'x-vendor'"),
        id="unreachable-unknown-keyword",
    ),
    pytest.param(
        {"type": "object", "properties": {"outer": {"items": {"properties": {"region": prop()}}}}},
        unreachable("/properties/outer/items/properties/region", "'items'"),
        id="unreachable-properties-below-items",
    ),
    # Definitions named like instance-data keywords are schemas, not instance data.
    pytest.param({"$defs": {"default": prop()}}, unreachable("/$defs/default", "'$defs'"), id="$defs-named-default"),
    pytest.param(
        {"patternProperties": {"enum": prop()}}, unreachable("/patternProperties/enum", "'patternProperties'"),
        id="patternProperties-named-enum",
    ),
    pytest.param({"$defs": {"x-mcp-header": {"type": "string"}}}, ok(), id="$defs-named-x-mcp-header"),
    # $ref is never followed.
    pytest.param(
        {"properties": {"region": {"$ref": "#/$defs/r"}}, "$defs": {"r": {"type": "string"}}},
        ok(),
        id="ref-not-followed",
    ),
    pytest.param(
        {"properties": {"region": {"$ref": "#/$defs/r"}}, "$defs": {"r": prop()}},
        unreachable("/$defs/r", "'$defs'"),
        id="ref-target-annotation-is-unreachable",
    ),
    pytest.param(
        tool(region={"$ref": "https://example.invalid/region.json"}), ok(), id="ref-remote-not-fetched"
    ),
    # Rule 4: uniqueness, case-insensitive, as strings.
    pytest.param(
        tool(a=prop("Region"), b=prop("region")),
        bad("x-mcp-header 'region' at /b duplicates 'Region' at /a (header names compare case-insensitively)"),
        id="duplicate-case-insensitive",
    ),
    pytest.param(
        tool(a=prop("Region"), o={"properties": {"b": prop("REGION", "integer")}}),
        bad("x-mcp-header 'REGION' at /o/b duplicates 'Region' at /a (header names compare case-insensitively)"),
        id="duplicate-across-depths",
    ),
    pytest.param(
        tool(a=prop("Region"), b=prop("Region")),
        bad("x-mcp-header 'Region' at /b duplicates 'Region' at /a (header names compare case-insensitively)"),
        id="duplicate-identical",
    ),
    pytest.param(
        tool(a=prop("1"), b=prop("01")), ok((("a",), "1", "string"), (("b",), "01", "string")),
        id="1-and-01-are-distinct",
    ),
    # Instance data is not schema; a property named x-mcp-header is ordinary.
    pytest.param(
        tool(region={
            "type": "object",
            "default": {"x-mcp-header": "Bad Header"},
            "examples": [{"x-mcp-header": 12}],
            "const": {"x-mcp-header": None},
            "enum": [{"x-mcp-header": "Region"}, {"properties": {"a": prop()}}],
        }),
        ok(),
        id="instance-data-default-examples-const-enum",
    ),
    pytest.param(
        tool(region=prop("Region", default="x", examples=[{"x-mcp-header": "Region"}])),
        ok((("region",), "Region", "string")),
        id="instance-data-beside-a-valid-annotation",
    ),
    pytest.param(tool(**{"x-mcp-header": {"type": "string"}}), ok(), id="property-named-x-mcp-header"),
    pytest.param(
        tool(**{"x-mcp-header": prop("X")}), ok((("x-mcp-header",), "X", "string")),
        id="property-named-x-mcp-header-annotated",
    ),
    pytest.param(
        tool(default=prop("D"), enum=prop("E"), properties=prop("P")),
        ok((("default",), "D", "string"), (("enum",), "E", "string"), (("properties",), "P", "string")),
        id="properties-named-like-keywords",
    ),
    # The first problem in document order is the one reported.
    pytest.param(
        tool(a=prop("Bad Header"), b=prop(12)), token_reason("'Bad Header'", "/a"), id="first-problem-wins"
    ),
    # JSON pointer escaping of ~ and / (RFC 6901).
    pytest.param(
        tool(**{"a/b": {"properties": {"c~d": prop("Bad Header")}}}),
        token_reason("'Bad Header'", "/a~1b/c~0d"),
        id="pointer-escapes-property-path",
    ),
    pytest.param(
        tool(**{"a/b~": {"items": prop()}}), unreachable("/properties/a~1b~0/items", "'items'"),
        id="pointer-escapes-schema-path",
    ),
]


@pytest.mark.parametrize(("schema", "verdict"), CASES)
def test_rules(schema: object, verdict: SchemaVerdict) -> None:
    assert inspect_input_schema(schema) == verdict


def test_verdict_helpers() -> None:
    verdict = inspect_input_schema(tool(o={"properties": {"a/b": prop("Read-Only", "boolean")}}))
    (param,) = verdict.mirrored
    assert (verdict.valid, param.header, param.pointer) == (True, "Mcp-Param-Read-Only", "/o/a~1b")
    assert inspect_input_schema(tool(r=prop(12))).valid is False


def test_json_pointer() -> None:
    assert json_pointer(["a/b", "c~d", 0, "", "~1"]) == "/a~1b/c~0d/0//~01"


# Hostile input: every case returns a verdict, never an exception, and never hangs (see hang_guard).
DEPTH = 10_000


def nested(leaf: object, wrap: Any) -> object:
    node = leaf
    for _ in range(DEPTH):
        node = wrap(node)
    return node


def deep_list() -> object:
    return nested([], lambda inner: [inner])


HOSTILE = [
    pytest.param(
        lambda: nested(prop("Deep"), lambda inner: {"properties": {"a": inner}}),
        ok((("a",) * DEPTH, "Deep", "string")),
        id="10000-levels-of-properties",
    ),
    pytest.param(
        lambda: nested(prop(), lambda inner: {"anyOf": [{"items": inner}]}),
        unreachable("/anyOf/0/items" * DEPTH, "'anyOf'"),
        id="10000-levels-of-anyOf-items",
    ),
    pytest.param(
        lambda: {"properties": {"a": nested(prop(), lambda inner: {"properties": {"a": {"items": inner}}})}},
        unreachable("/properties/a" + "/properties/a/items" * DEPTH, "'items'"),
        id="10000-levels-of-properties-and-items",
    ),
    pytest.param(lambda: nested({}, lambda inner: [inner]), ok(), id="10000-levels-of-lists"),
    pytest.param(
        lambda: tool(region=prop(deep_list())),
        bad("x-mcp-header [[[[[[[...]]]]]]] at /region is not a string"),
        id="10000-deep-token-value",
    ),
    pytest.param(
        lambda: tool(region=prop(type_=deep_list())),
        type_reason("type [[[[[[[...]]]]]]]"),
        id="10000-deep-type-value",
    ),
    pytest.param(lambda: {"properties": []}, ok(), id="properties-is-a-list"),
    pytest.param(
        lambda: {"properties": [prop()]}, unreachable("/properties/0", "'properties'"),
        id="properties-is-a-list-holding-an-annotation",
    ),
    pytest.param(lambda: {"properties": "region"}, ok(), id="properties-is-a-string"),
    pytest.param(lambda: {"properties": {"region": None, "b": 5, "c": True}}, ok(), id="property-schemas-not-objects"),
    pytest.param(lambda: {"properties": {"region": True}}, ok(), id="boolean-property-schema"),
    pytest.param(lambda: {"properties": {1: {"type": "string"}}}, ok(), id="int-property-name-no-annotation"),
    pytest.param(
        lambda: {"properties": {1: prop()}}, unreachable("/properties/1", "'properties'"),
        id="int-property-name-with-annotation",
    ),
    pytest.param(lambda: {1: prop()}, unreachable("/1", "1"), id="int-keyword-with-annotation"),
    pytest.param(lambda: {("t",): {"x": 1}, None: [1]}, ok(), id="tuple-and-none-keys"),
    pytest.param(lambda: [tool(region=prop())], unreachable("/0/properties/region", "0"), id="root-is-a-list"),
    pytest.param(lambda: None, ok(), id="root-is-null"),
    pytest.param(lambda: "schema", ok(), id="root-is-a-string"),
    pytest.param(lambda: 12, ok(), id="root-is-a-number"),
    pytest.param(
        lambda: {"properties": {f"p{k}": {"type": "string"} for k in range(200_000)}}, ok(),
        id="200000-properties-unannotated",
    ),
    pytest.param(
        lambda: {"properties": {f"p{k}": prop(f"P{k}") for k in range(200_000)}},
        ok(*(((f"p{k}",), f"P{k}", "string") for k in range(200_000))),
        id="200000-properties-annotated",
    ),
    pytest.param(
        lambda: {"properties": {**{f"p{k}": prop(f"P{k}") for k in range(200_000)}, "dup": prop("p199999")}},
        bad(
            "x-mcp-header 'p199999' at /dup duplicates 'P199999' at /p199999"
            " (header names compare case-insensitively)"
        ),
        id="200000-properties-then-duplicate",
    ),
]


@contextmanager
def hang_guard(seconds: int) -> Iterator[None]:
    """Turn a hang into a failure after ``seconds``; a run that ends is never judged by its time."""
    if not hasattr(signal, "SIGALRM"):  # no alarm on Windows: run unguarded
        yield
        return

    def hung(signum: int, frame: object) -> None:
        raise TimeoutError(f"still running after {seconds} s: a hang, or a walk that is no longer linear")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize(("build", "verdict"), HOSTILE)
def test_hostile_input(build: Any, verdict: SchemaVerdict) -> None:
    schema = build()
    # Not a timed assertion: the linear walk takes under a second here, while a quadratic one over
    # 200,000 properties runs for minutes, so only a hang (or such a regression) trips this generous guard.
    with hang_guard(60):
        assert inspect_input_schema(schema) == verdict


# Arbitrary JSON, biased so the interesting keys and shapes show up often.
KEYS = st.sampled_from(
    ["x-mcp-header", "properties", "type", "items", "anyOf", "default", "$defs", "a", "Region", "region"]
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.text(max_size=5),
    st.sampled_from(["string", "integer", "boolean", "number", "Region", "region", "Bad Header", "01", "1"]),
)
JSON = st.recursive(
    SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.one_of(KEYS, st.text(max_size=3)), children, max_size=5),
    ),
    max_leaves=40,
)


TOKENS = st.one_of(
    st.sampled_from(["Region", "region", "A", "a", "B", "1", "01", "Read-Only"]),
    st.sampled_from(["Bad Header", "", 12, None, True]),
    st.text(max_size=3),
)
TYPES = st.one_of(st.sampled_from(["string", "integer", "boolean"]), st.sampled_from(["number", ["string"]]))
NAMES = st.one_of(KEYS, st.text(max_size=3))
annotated = st.fixed_dictionaries(
    {"type": TYPES, "x-mcp-header": TOKENS},
    optional={"default": JSON, "enum": st.lists(JSON, max_size=2)},
)


def object_schema(*, root: bool) -> st.SearchStrategy[dict[str, object]]:
    optional: dict[str, st.SearchStrategy[object]] = {
        "type": TYPES,
        "items": SCHEMAS,
        "anyOf": st.lists(SCHEMAS, max_size=2),
        "$defs": st.dictionaries(NAMES, SCHEMAS, max_size=2),
        "default": JSON,
    }
    if not root:
        optional["x-mcp-header"] = TOKENS
    return st.fixed_dictionaries(
        {"properties": st.dictionaries(NAMES, st.one_of(annotated, SCHEMAS), max_size=4)}, optional=optional
    )


SCHEMAS: st.SearchStrategy[object] = st.deferred(
    lambda: st.one_of(JSON, annotated, object_schema(root=False))
)
ROOTS = st.integers(0, 3).flatmap(lambda k: SCHEMAS if k == 0 else object_schema(root=True))


def follow(schema: object, path: tuple[str, ...]) -> object:
    node = schema
    for segment in path:
        assert isinstance(node, Mapping)
        properties = node["properties"]
        assert isinstance(properties, Mapping)
        node = properties[segment]
    return node


@settings(max_examples=300)
@given(ROOTS)
def test_any_json_gives_a_verdict(schema: object) -> None:
    verdict = inspect_input_schema(schema)
    assert isinstance(verdict, SchemaVerdict)
    if verdict.valid:
        folded = [param.token.lower() for param in verdict.mirrored]
        assert len(set(folded)) == len(folded)
        for param in verdict.mirrored:
            node = follow(schema, param.path)
            assert isinstance(node, Mapping)
            assert (node["x-mcp-header"], node["type"]) == (param.token, param.type)
    else:
        assert verdict.mirrored == ()
        assert isinstance(verdict.reason, str)
        assert verdict.reason.startswith("x-mcp-header ")


# Schemas whose annotations are all reachable, well-typed tokens drawn from a small pool (so case-insensitive
# collisions are common), at any depth, with instance data beside them: ROOTS almost never yields more than one
# valid annotation, so uniqueness and completeness are checked here against an independent walk.
POOL = st.sampled_from(["Region", "region", "REGION", "A", "a", "1", "01", "Read-Only"])
LEAF = st.fixed_dictionaries(
    {"type": st.sampled_from(["string", "integer", "boolean"]), "x-mcp-header": POOL},
    optional={"default": JSON, "enum": st.lists(JSON, max_size=2)},
)
NESTED = st.recursive(
    st.one_of(LEAF, st.fixed_dictionaries({"type": st.sampled_from(["string", "number", "object"])})),
    lambda inner: st.fixed_dictionaries({"properties": st.dictionaries(NAMES, inner, max_size=3)}),
    max_leaves=12,
)
REACHABLE = st.fixed_dictionaries({"type": st.just("object"), "properties": st.dictionaries(NAMES, NESTED, max_size=4)})


def annotated_properties(schema: Mapping[str, Any], path: tuple[str, ...] = ()) -> list[MirroredParam]:
    """Every annotated property under nested ``properties``, depth first in document order."""
    found: list[MirroredParam] = []
    for name, sub in schema.get("properties", {}).items():
        if "x-mcp-header" in sub:
            found.append(MirroredParam(path=(*path, name), token=sub["x-mcp-header"], type=sub["type"]))
        found.extend(annotated_properties(sub, (*path, name)))
    return found


def expected_verdict(params: list[MirroredParam]) -> SchemaVerdict:
    first: dict[str, MirroredParam] = {}
    for param in params:
        if (other := first.setdefault(param.token.lower(), param)) is not param:
            return bad(
                f"x-mcp-header {param.token!r} at {param.pointer} duplicates {other.token!r} at {other.pointer}"
                " (header names compare case-insensitively)"
            )
    return SchemaVerdict(mirrored=tuple(params))


@settings(max_examples=300)
@given(REACHABLE)
def test_every_reachable_annotation_is_mirrored_unless_two_collide(schema: dict[str, Any]) -> None:
    assert inspect_input_schema(schema) == expected_verdict(annotated_properties(schema))


def test_cyclic_python_containers_are_walked_once() -> None:
    # Not reachable from parsed JSON, but a Python caller can build it: the walk must terminate.
    schema: dict[str, object] = {"type": "object", "properties": {}}
    schema["properties"] = {"self": schema, "region": {"type": "string", "x-mcp-header": "Region"}}
    assert inspect_input_schema(schema) == SchemaVerdict(
        mirrored=(MirroredParam(path=("region",), token="Region", type="string"),)
    )
