"""Header plans: whole plans per method and era, the Python value traps, plan equality (SEP-2243)."""

from __future__ import annotations

import math
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpfsm._core.constants import LEGACY_VERSIONS, MODERN_VERSION
from mcpfsm._core.errors import MirroringError
from mcpfsm._core.plan import HeaderPlan, mirror_value, plan_request
from mcpfsm._core.schema import MirroredParam, inspect_input_schema

MODERN = "2026-07-28"

SCHEMA = {
    "type": "object",
    "properties": {
        "database": {"type": "string", "x-mcp-header": "Database"},
        "options": {
            "type": "object",
            "properties": {
                "readOnly": {"type": "boolean", "x-mcp-header": "Read-Only"},
                "limits": {"type": "object", "properties": {"rows": {"type": "integer", "x-mcp-header": "Rows"}}},
            },
        },
        "region": {"type": "string", "x-mcp-header": "Region"},
        "query": {"type": "string"},
    },
}
MIRRORED = inspect_input_schema(SCHEMA).mirrored


def param(token: str, type_: str, *path: str) -> MirroredParam:
    return MirroredParam(path=path or (token.lower(),), token=token, type=type_)  # type: ignore[arg-type]


def call(arguments: object, name: str = "execute-sql") -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def test_modern_tools_call_with_nested_arguments() -> None:
    arguments = {
        "query": "SELECT 1",
        "region": "Hello, 世界",
        "options": {"limits": {"rows": 100.0}, "readOnly": True},
        "database": "analytics",
    }
    plan = plan_request("tools/call", call(arguments), protocol_version=MODERN, mirrored=MIRRORED)
    assert plan.headers == (
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "execute-sql"),
        ("Mcp-Param-Database", "analytics"),
        ("Mcp-Param-Read-Only", "true"),
        ("Mcp-Param-Rows", "100"),
        ("Mcp-Param-Region", "=?base64?SGVsbG8sIOS4lueVjA==?="),
    )
    assert plan.as_dict() == {
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": "execute-sql",
        "Mcp-Param-Database": "analytics",
        "Mcp-Param-Read-Only": "true",
        "Mcp-Param-Rows": "100",
        "Mcp-Param-Region": "=?base64?SGVsbG8sIOS4lueVjA==?=",
    }


def test_arguments_are_not_changed() -> None:
    arguments = {"database": " padded ", "options": {"readOnly": False, "limits": {"rows": 7.0}}}
    snapshot = {"database": " padded ", "options": {"readOnly": False, "limits": {"rows": 7.0}}}
    plan_request("tools/call", call(arguments), protocol_version=MODERN, mirrored=MIRRORED)
    assert arguments == snapshot


BASE = {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": "execute-sql"}

OMITTED = [
    pytest.param({}, id="no-arguments"),
    pytest.param({"database": None, "region": None, "options": None}, id="null-values-and-null-parent"),
    pytest.param({"options": {"readOnly": None, "limits": None}}, id="null-leaf-and-null-grandparent"),
    pytest.param({"options": {"limits": {}}}, id="missing-leaf"),
    pytest.param({"options": []}, id="parent-is-a-list"),
    pytest.param({"options": "readOnly"}, id="parent-is-a-string"),
    pytest.param({"options": {"limits": 5}}, id="grandparent-is-a-number"),
    pytest.param({"options": {"limits": [{"rows": 1}]}}, id="grandparent-is-a-list"),
    pytest.param({"options.readOnly": True, "Database": "x"}, id="dotted-key-and-wrong-case-are-other-names"),
]


@pytest.mark.parametrize("arguments", OMITTED)
def test_absent_values_omit_the_header(arguments: dict[str, Any]) -> None:
    plan = plan_request("tools/call", call(arguments), protocol_version=MODERN, mirrored=MIRRORED)
    assert plan.as_dict() == BASE


@pytest.mark.parametrize(
    "params",
    [
        pytest.param({"name": "execute-sql"}, id="no-arguments-member"),
        pytest.param(call(None), id="arguments-null"),
        pytest.param(call([1, 2]), id="arguments-a-list"),
        pytest.param(call("database"), id="arguments-a-string"),
    ],
)
def test_missing_or_odd_arguments_member_omits_params(params: dict[str, Any]) -> None:
    assert plan_request("tools/call", params, protocol_version=MODERN, mirrored=MIRRORED).as_dict() == BASE


def test_dotted_property_name_is_one_segment() -> None:
    mirrored = inspect_input_schema({"properties": {"a.b": {"type": "string", "x-mcp-header": "Ab"}}}).mirrored
    plan = plan_request("tools/call", call({"a.b": "x", "a": {"b": "y"}}), protocol_version=MODERN, mirrored=mirrored)
    assert plan.as_dict() == {**BASE, "Mcp-Param-Ab": "x"}


PLANS = [
    pytest.param(
        "prompts/get", {"name": "résumé", "arguments": {"database": "x"}}, MODERN,
        {"MCP-Protocol-Version": MODERN, "Mcp-Method": "prompts/get", "Mcp-Name": "=?base64?csOpc3Vtw6k=?="},
        id="prompts-get-encoded-name-no-params",
    ),
    pytest.param(
        "resources/read", {"uri": "file:///tmp/a b.txt"}, MODERN,
        {"MCP-Protocol-Version": MODERN, "Mcp-Method": "resources/read", "Mcp-Name": "file:///tmp/a b.txt"},
        id="resources-read-literal-uri",
    ),
    pytest.param(
        "resources/read", {"uri": "file:///données/é.txt", "name": "ignored"}, MODERN,
        {
            "MCP-Protocol-Version": MODERN,
            "Mcp-Method": "resources/read",
            "Mcp-Name": "=?base64?ZmlsZTovLy9kb25uw6llcy/DqS50eHQ=?=",
        },
        id="resources-read-encoded-uri-not-name",
    ),
    pytest.param(
        "tools/list", {"cursor": "abc"}, MODERN,
        {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/list"},
        id="tools-list-no-mcp-name",
    ),
    pytest.param(
        "server/discover", None, MODERN,
        {"MCP-Protocol-Version": MODERN, "Mcp-Method": "server/discover"},
        id="server-discover-no-params",
    ),
    pytest.param(
        "tools/call", None, MODERN,
        {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call"},
        id="tools-call-params-none",
    ),
    pytest.param(
        "resources/subscribe", {"uri": "file:///x"}, MODERN,
        {"MCP-Protocol-Version": MODERN, "Mcp-Method": "resources/subscribe"},
        id="other-method-with-uri-no-mcp-name",
    ),
    pytest.param(
        "tools/call", call({"database": "analytics"}), "2025-11-25",
        {"MCP-Protocol-Version": "2025-11-25"},
        id="legacy-2025-11-25-version-only",
    ),
    pytest.param(
        "tools/call", call({"database": "analytics"}), "2025-06-18",
        {"MCP-Protocol-Version": "2025-06-18"},
        id="legacy-2025-06-18-version-only",
    ),
    pytest.param(
        "tools/call", call({"database": 12}), "2025-03-26",
        {"MCP-Protocol-Version": "2025-03-26"},
        id="legacy-never-validates-arguments",
    ),
    pytest.param("initialize", {"protocolVersion": "2025-11-25"}, None, {}, id="no-version-no-headers"),
    pytest.param("tools/call", call({"database": 12}), None, {}, id="no-version-never-validates"),
]


@pytest.mark.parametrize(("method", "params", "version", "expected"), PLANS)
def test_plans(method: str, params: dict[str, Any] | None, version: str | None, expected: dict[str, str]) -> None:
    plan = plan_request(method, params, protocol_version=version, mirrored=MIRRORED)
    assert plan.as_dict() == expected
    assert list(plan.headers) == list(expected.items())


def test_versions_are_the_spec_ones() -> None:
    assert (MODERN_VERSION, LEGACY_VERSIONS) == (MODERN, ("2025-11-25", "2025-06-18", "2025-03-26"))


def test_method_token_goes_to_mcp_param_method() -> None:
    plan = plan_request(
        "tools/call", call({"m": "DELETE"}), protocol_version=MODERN, mirrored=(param("Method", "string", "m"),)
    )
    assert plan.as_dict() == {**BASE, "Mcp-Param-Method": "DELETE"}


# (declared type, Python value, header text)
MIRRORED_VALUES = [
    pytest.param("boolean", True, "true", id="bool-true"),
    pytest.param("boolean", False, "false", id="bool-false"),
    pytest.param("integer", 42, "42", id="int"),
    pytest.param("integer", -7, "-7", id="negative-int"),
    pytest.param("integer", 0, "0", id="zero"),
    pytest.param("integer", 42.0, "42", id="integral-float"),
    pytest.param("integer", -0.0, "0", id="negative-zero-float"),
    pytest.param("integer", 2**53 - 1, "9007199254740991", id="max-safe"),
    pytest.param("integer", -(2**53 - 1), "-9007199254740991", id="min-safe"),
    pytest.param("integer", float(2**53 - 1), "9007199254740991", id="max-safe-float"),
    pytest.param("string", "us-west1", "us-west1", id="literal-string"),
    pytest.param("string", "us west 1", "us west 1", id="interior-space"),
    pytest.param("string", "", "=?base64??=", id="empty-string"),
    pytest.param("string", "a\tb", "=?base64?YQli?=", id="tab"),
    pytest.param("string", "true", "true", id="string-true-stays-a-string"),
]


@pytest.mark.parametrize(("declared", "value", "header"), MIRRORED_VALUES)
def test_mirror_value(declared: str, value: object, header: str) -> None:
    assert mirror_value(param("Value", declared), {"value": value}) == header


ERRORS = [
    pytest.param("integer", True, "expected an integer, got bool True", id="True-for-integer"),
    pytest.param("integer", False, "expected an integer, got bool False", id="False-for-integer"),
    pytest.param("integer", 2**53, "integer 9007199254740992 is outside the safe range ±(2**53 - 1)", id="2**53"),
    pytest.param(
        "integer", -(2**53), "integer -9007199254740992 is outside the safe range ±(2**53 - 1)", id="-(2**53)"
    ),
    pytest.param(
        "integer", float(2**53), "integer 9007199254740992 is outside the safe range ±(2**53 - 1)",
        id="2**53-as-float",
    ),
    pytest.param("integer", 42.5, "expected an integer, got non-integral float 42.5", id="42.5"),
    pytest.param("integer", math.nan, "expected an integer, got float nan", id="nan"),
    pytest.param("integer", math.inf, "expected an integer, got float inf", id="inf"),
    pytest.param("integer", -math.inf, "expected an integer, got float -inf", id="minus-inf"),
    pytest.param("integer", "42", "expected an integer, got str '42'", id="string-42-for-integer"),
    pytest.param("integer", [1], "expected an integer, got list [1]", id="list-for-integer"),
    pytest.param("boolean", 1, "expected a boolean, got int 1", id="1-for-boolean"),
    pytest.param("boolean", "true", "expected a boolean, got str 'true'", id="string-true-for-boolean"),
    pytest.param("boolean", 0.0, "expected a boolean, got float 0.0", id="float-for-boolean"),
    pytest.param("string", 5, "expected a string, got int 5", id="int-for-string"),
    pytest.param("string", True, "expected a string, got bool True", id="bool-for-string"),
    pytest.param("string", {"a": 1}, "expected a string, got dict {'a': 1}", id="object-for-string"),
    pytest.param(
        "string", "a\ud800b",
        "the string holds a lone surrogate and has no UTF-8 form",
        id="lone-surrogate",
    ),
]


@pytest.mark.parametrize(("declared", "value", "why"), ERRORS)
def test_values_that_cannot_be_mirrored(declared: str, value: object, why: str) -> None:
    mirrored = (param("Read-Only", declared, "options", "read/Only"),)
    message = f"argument /options/read~1Only cannot be mirrored into Mcp-Param-Read-Only (declared {declared}): {why}"
    with pytest.raises(MirroringError, match=rf"^{re.escape(message)}$") as caught:
        plan_request(
            "tools/call", call({"options": {"read/Only": value}}), protocol_version=MODERN, mirrored=mirrored
        )
    error = caught.value
    expected = (("options", "read/Only"), "Mcp-Param-Read-Only", declared)
    assert (error.path, error.header, error.declared_type) == expected


def test_long_values_are_shortened_in_messages() -> None:
    with pytest.raises(
        MirroringError,
        match=r"^argument /n cannot be mirrored into Mcp-Param-N \(declared integer\): "
        r"expected an integer, got str '" + "x" * 36 + r"\.\.\.$",
    ):
        mirror_value(param("N", "integer", "n"), {"n": "x" * 100})


@pytest.mark.parametrize(
    ("method", "params", "key", "got"),
    [
        pytest.param("tools/call", {"arguments": {}}, "name", "NoneType None", id="tools-call-without-name"),
        pytest.param("prompts/get", {"name": 7}, "name", "int 7", id="prompts-get-int-name"),
        pytest.param("resources/read", {"uri": None}, "uri", "NoneType None", id="resources-read-null-uri"),
        pytest.param("resources/read", {"uri": ["a"]}, "uri", "list ['a']", id="resources-read-list-uri"),
    ],
)
def test_mcp_name_must_be_a_string(method: str, params: dict[str, Any], key: str, got: str) -> None:
    message = f"params.{key} of {method} must be a string to go into Mcp-Name, got {got}"
    with pytest.raises(MirroringError, match=rf"^{re.escape(message)}$") as caught:
        plan_request(method, params, protocol_version=MODERN)
    assert (caught.value.path, caught.value.header, caught.value.declared_type) == ((key,), "Mcp-Name", "string")


def test_mcp_name_lone_surrogate() -> None:
    message = (
        "argument /name cannot be mirrored into Mcp-Name (declared string):"
        " the string holds a lone surrogate and has no UTF-8 form"
    )
    with pytest.raises(MirroringError, match=rf"^{re.escape(message)}$") as caught:
        plan_request("tools/call", {"name": "\udc80"}, protocol_version=MODERN)
    assert isinstance(caught.value.__cause__, UnicodeEncodeError)


def test_first_bad_argument_is_reported() -> None:
    arguments = {"database": 1, "options": {"readOnly": "yes"}}
    with pytest.raises(MirroringError, match=r"^argument /database cannot be mirrored into Mcp-Param-Database "):
        plan_request("tools/call", call(arguments), protocol_version=MODERN, mirrored=MIRRORED)


# HeaderPlan as a value.


def test_plan_is_immutable() -> None:
    plan = HeaderPlan([("Mcp-Method", "tools/call")])
    with pytest.raises(AttributeError, match=r"^HeaderPlan is immutable$"):
        plan._headers = ()
    with pytest.raises(AttributeError, match=r"^HeaderPlan is immutable$"):
        plan.extra = 1
    with pytest.raises(AttributeError, match=r"^HeaderPlan is immutable$"):
        del plan._key
    assert plan.headers == (("Mcp-Method", "tools/call"),)


def test_plan_as_dict_is_a_copy() -> None:
    plan = HeaderPlan([("Mcp-Method", "tools/call")])
    plan.as_dict()["Mcp-Method"] = "x"
    assert plan.as_dict() == {"Mcp-Method": "tools/call"}


def test_plan_is_hashable_and_iterable() -> None:
    a = HeaderPlan([("Mcp-Method", "tools/call"), ("Mcp-Name", "x")])
    b = HeaderPlan([("mcp-name", "x"), ("MCP-METHOD", "tools/call")])
    assert ({a, b}, len(a), list(a), repr(a)) == (
        {a},
        2,
        [("Mcp-Method", "tools/call"), ("Mcp-Name", "x")],
        "HeaderPlan({'Mcp-Method': 'tools/call', 'Mcp-Name': 'x'})",
    )


@pytest.mark.parametrize(
    ("left", "right", "equal"),
    [
        pytest.param([("A", "1")], [("a", "1")], True, id="name-case-ignored"),
        pytest.param([("A", "x")], [("A", "X")], False, id="value-case-kept"),
        pytest.param([("A", "1"), ("B", "2")], [("B", "2"), ("A", "1")], True, id="order-ignored"),
        pytest.param([("A", "1")], [("A", "1"), ("B", "2")], False, id="extra-header"),
        pytest.param([("A", "1"), ("B", "2")], [("A", "2"), ("B", "1")], False, id="values-swapped"),
        pytest.param([], [], True, id="empty"),
    ],
)
def test_plan_equality(left: list[tuple[str, str]], right: list[tuple[str, str]], equal: bool) -> None:
    assert (HeaderPlan(left) == HeaderPlan(right), HeaderPlan(left) != HeaderPlan(right)) == (equal, not equal)


def test_plan_is_not_equal_to_other_types() -> None:
    plan = HeaderPlan([("A", "1")])
    assert (plan == {"A": "1"}, plan == [("A", "1")]) == (False, False)


@pytest.mark.parametrize(
    "pairs",
    [
        pytest.param([("Mcp-Name", "a"), ("Mcp-Name", "a")], id="same-name"),
        pytest.param([("Mcp-Name", "a"), ("mcp-name", "b")], id="case-insensitive"),
    ],
)
def test_plan_refuses_duplicate_names(pairs: list[tuple[str, str]]) -> None:
    names = [name for name, _ in pairs]
    with pytest.raises(ValueError, match=rf"^header plan names a header twice: {re.escape(repr(names))}$"):
        HeaderPlan(pairs)


TOKEN = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_", min_size=1, max_size=8)


def flip_case(text: str, flips: list[bool]) -> str:
    return "".join(c.swapcase() if flip else c for c, flip in zip(text, flips + [False] * len(text), strict=False))


@given(st.dictionaries(TOKEN.map(str.lower), st.text(), max_size=8), st.randoms(), st.lists(st.booleans()))
def test_plan_equality_ignores_order_and_name_case(headers: dict[str, str], rnd: Any, flips: list[bool]) -> None:
    pairs = list(headers.items())
    shuffled = [(flip_case(name, flips), value) for name, value in pairs]
    rnd.shuffle(shuffled)
    a, b = HeaderPlan(pairs), HeaderPlan(shuffled)
    assert (a == b, hash(a) == hash(b), len(a) == len(b)) == (True, True, True)


@given(
    st.dictionaries(TOKEN.map(str.lower), st.one_of(st.none(), st.text(), st.booleans()), min_size=1, max_size=6),
    st.randoms(),
)
def test_plan_request_ignores_schema_and_argument_order(values: dict[str, object], rnd: Any) -> None:
    mirrored = [param(name.upper(), "boolean" if isinstance(v, bool) else "string", name) for name, v in values.items()]
    shuffled_mirrored = list(mirrored)
    rnd.shuffle(shuffled_mirrored)
    items = list(values.items())
    rnd.shuffle(items)
    a = plan_request("tools/call", call(values), protocol_version=MODERN, mirrored=mirrored)
    b = plan_request("tools/call", call(dict(items)), protocol_version=MODERN, mirrored=shuffled_mirrored)
    assert (a == b, hash(a) == hash(b)) == (True, True)
    assert len(a) == 3 + sum(v is not None for v in values.values())


# --- plans made once -----------------------------------------------------------------------------


def test_the_same_inputs_give_the_same_plan_object_and_other_values_their_own() -> None:
    mirrored = (param("Count", "integer"), param("Region", "string"))

    def plan(arguments: dict[str, Any]) -> HeaderPlan:
        return plan_request(
            "tools/call", {"name": "t", "arguments": arguments}, protocol_version=MODERN_VERSION, mirrored=mirrored
        )

    first = plan({"count": 1, "region": "eu"})
    assert plan({"count": 1, "region": "eu"}) is first
    assert [p.headers for p in (plan({"count": 2, "region": "eu"}), plan({"count": 1}), plan({"count": 1.0}))] == [
        (("MCP-Protocol-Version", MODERN_VERSION), ("Mcp-Method", "tools/call"), ("Mcp-Name", "t"),
         ("Mcp-Param-Count", "2"), ("Mcp-Param-Region", "eu")),
        (("MCP-Protocol-Version", MODERN_VERSION), ("Mcp-Method", "tools/call"), ("Mcp-Name", "t"),
         ("Mcp-Param-Count", "1")),
        (("MCP-Protocol-Version", MODERN_VERSION), ("Mcp-Method", "tools/call"), ("Mcp-Name", "t"),
         ("Mcp-Param-Count", "1")),
    ]
    # True equals 1 and hashes like it: a known plan for 1 must not answer for True, which cannot be mirrored.
    with pytest.raises(MirroringError, match=r"^argument /count cannot be mirrored into Mcp-Param-Count"):
        plan({"count": True, "region": "eu"})


def test_an_equal_but_distinct_mirrored_tuple_is_planned_with_its_own_params() -> None:
    arguments = {"name": "t", "arguments": {"flag": "yes"}}
    as_string = plan_request(
        "tools/call", arguments, protocol_version=MODERN_VERSION, mirrored=(param("Flag", "string"),)
    )
    with pytest.raises(MirroringError, match=r"^argument /flag cannot be mirrored into Mcp-Param-Flag"):
        plan_request("tools/call", arguments, protocol_version=MODERN_VERSION, mirrored=(param("Flag", "boolean"),))
    assert as_string.as_dict()["Mcp-Param-Flag"] == "yes"
