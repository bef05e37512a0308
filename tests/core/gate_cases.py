"""The gate's corpus of edge cases: every rule of docs/gate.md, "What the gate checks", as one request each.

Shared by tests/core/test_gate_verify.py (each case's whole verdict) and tests/core/test_gate_differential.py
(each case through the official SDK server's own validation too). ``differs`` names the line of docs/gate.md,
"Where we differ from the SDK", that decides a case where mcp 2.3.0 judges otherwise; ``None`` means it agrees.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any, Final

VERSION: Final = "2026-07-28"
META: Final = {"io.modelcontextprotocol/protocolVersion": VERSION, "io.modelcontextprotocol/clientCapabilities": {}}

SCHEMA: Final = {
    "type": "object",
    "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "count": {"type": "integer", "x-mcp-header": "Count"},
        "dry": {"type": "boolean", "x-mcp-header": "Dry-Run"},
        "options": {"type": "object", "properties": {"readOnly": {"type": "boolean", "x-mcp-header": "Read-Only"}}},
        "query": {"type": "string"},
    },
}
INVALID_SCHEMA: Final = {
    "type": "object",
    "properties": {
        "a": {"type": "string", "x-mcp-header": "Region"},
        "b": {"type": "string", "x-mcp-header": "region"},
    },
}

# The documented differences (docs/gate.md, "Where we differ from the SDK"), by the anchor of their line.
TASKS_NAME: Final = "tasks-mcp-name"
NAME_WITHOUT_MEMBER: Final = "mcp-name-without-its-member"
INVALID_CHARACTERS: Final = "invalid-characters"
OVERLAPPING_SENTINEL: Final = "overlapping-sentinel"
INTEGER_FORM: Final = "integer-form"
UNSAFE_INTEGER: Final = "unsafe-integers"
ARGUMENT_TYPE: Final = "argument-types"
ARGUMENTS_NOT_OBJECT: Final = "arguments-not-an-object"
NOTIFICATION_HEADERS: Final = "notifications"
BODY_TEXT: Final = "body-text"
DUPLICATE_MEMBERS: Final = "duplicate-members"
NON_JSON_NUMBERS: Final = "non-json-numbers"
DIFFERENCES: Final = (
    TASKS_NAME,
    NAME_WITHOUT_MEMBER,
    INVALID_CHARACTERS,
    OVERLAPPING_SENTINEL,
    INTEGER_FORM,
    UNSAFE_INTEGER,
    ARGUMENT_TYPE,
    ARGUMENTS_NOT_OBJECT,
    NOTIFICATION_HEADERS,
    BODY_TEXT,
    DUPLICATE_MEMBERS,
    NON_JSON_NUMBERS,
)


def b64(text: str) -> str:
    return "=?base64?" + base64.b64encode(text.encode("utf-8")).decode("ascii") + "?="


def body(method: str = "tools/call", *, meta: bool = True, request_id: Any = 1, **params: Any) -> bytes:
    if meta:
        params["_meta"] = META
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
    if request_id is not None:
        message["id"] = request_id
    return json.dumps(message, ensure_ascii=False).encode("utf-8")


def call(arguments: Any = None, *, name: Any = "execute", **extra: Any) -> bytes:
    params: dict[str, Any] = {"name": name, **extra}
    if arguments is not None:
        params["arguments"] = arguments
    return body("tools/call", **params)


def std(method: str = "tools/call", name: str | None = "execute") -> list[tuple[str, str]]:
    headers = [("MCP-Protocol-Version", VERSION), ("Mcp-Method", method)]
    if name is not None:
        headers.append(("Mcp-Name", name))
    return headers


@dataclass(frozen=True)
class Case:
    id: str
    headers: list[tuple[str, str]]
    body: bytes
    header: str | None = None  # the header the verdict blames; None: ok (unless code says the body is at fault)
    reason: str | None = None
    code: int | None = None
    schema: Any = None
    differs: str | None = None

    @property
    def ok(self) -> bool:
        return self.reason is None


def mismatch(case_id: str, headers: list[tuple[str, str]], request: bytes, header: str, reason: str, **kw: Any) -> Case:
    return Case(case_id, headers, request, header=header, reason=reason, code=-32020, **kw)


def ok(case_id: str, headers: list[tuple[str, str]], request: bytes, **kw: Any) -> Case:
    return Case(case_id, headers, request, **kw)


_LIST = body("tools/list")
P = "Mcp-Param-"

CASES: Final[list[Case]] = [
    # --- Mcp-Method -------------------------------------------------------------------------------------------
    ok("method-matches", std("tools/list", None), _LIST),
    mismatch(
        "method-differs", std("prompts/list", None), _LIST, "Mcp-Method", "Mcp-Method does not match the body's method"
    ),
    mismatch("method-missing", [("MCP-Protocol-Version", VERSION)], _LIST, "Mcp-Method", "Mcp-Method is missing"),
    mismatch(
        "method-value-case", std("TOOLS/LIST", None), _LIST, "Mcp-Method", "Mcp-Method does not match the body's method"
    ),
    ok("method-name-lowercase", [("mcp-protocol-version", VERSION), ("mcp-method", "tools/list")], _LIST),
    ok("method-name-uppercase", [("MCP-PROTOCOL-VERSION", VERSION), ("MCP-METHOD", "tools/list")], _LIST),
    ok("method-whitespace", [("MCP-Protocol-Version", VERSION), ("Mcp-Method", " \ttools/list  ")], _LIST),
    mismatch(
        "method-twice",
        [*std("tools/list", None), ("mcp-method", "tools/list")],
        _LIST,
        "Mcp-Method",
        "Mcp-Method is sent more than once",
    ),
    mismatch(
        "method-encoded-is-not-decoded",
        std(b64("tools/list"), None),
        _LIST,
        "Mcp-Method",
        "Mcp-Method does not match the body's method",
    ),
    # --- MCP-Protocol-Version ---------------------------------------------------------------------------------
    mismatch(
        "version-differs",
        [("MCP-Protocol-Version", "2025-11-25"), ("Mcp-Method", "tools/list")],
        _LIST,
        "MCP-Protocol-Version",
        "MCP-Protocol-Version does not match the body's _meta protocol version",
    ),
    mismatch(
        "version-missing",
        [("Mcp-Method", "tools/list")],
        _LIST,
        "MCP-Protocol-Version",
        "MCP-Protocol-Version is missing but the body's _meta carries a protocol version",
    ),
    mismatch(
        "version-twice",
        [*std("tools/list", None), ("MCP-Protocol-Version", VERSION)],
        _LIST,
        "MCP-Protocol-Version",
        "MCP-Protocol-Version is sent more than once",
    ),
    mismatch(
        "version-null-in-body",
        std("tools/list", None),
        body("tools/list", meta=False, _meta={**META, "io.modelcontextprotocol/protocolVersion": None}),
        "MCP-Protocol-Version",
        "MCP-Protocol-Version does not match the body's _meta protocol version",
    ),
    # --- Mcp-Name -------------------------------------------------------------------------------------------
    ok("name-matches", std(), call({})),
    mismatch(
        "name-differs",
        std(name="wrong_tool_name"),
        call({}),
        "Mcp-Name",
        "Mcp-Name does not match the body's params.name",
    ),
    ok("name-whitespace", std(name="  execute  "), call({})),
    mismatch(
        "name-missing", std(name=None), call({}), "Mcp-Name", "Mcp-Name is missing but the body carries params.name"
    ),
    ok("name-encoded", std(name=b64("天気")), call({}, name="天気")),
    ok("name-encoded-plain", std(name=b64("execute")), call({})),
    ok("name-sentinel-look-alike", std(name=b64("=?base64?x?=")), call({}, name="=?base64?x?=")),
    mismatch(
        "name-bad-base64",
        std(name="=?base64?ZXhlY3V0ZQ?="),
        call({}),
        "Mcp-Name",
        "Mcp-Name is not valid Base64 (=?base64?…?= holds canonical padded Base64 of UTF-8)",
    ),
    mismatch(
        "name-literal-latin1",
        std(name="caf\u00e9"),
        call({}, name="caf\u00e9"),
        "Mcp-Name",
        "Mcp-Name holds characters that must be sent Base64-encoded (=?base64?…?=)",
        differs=INVALID_CHARACTERS,
    ),
    mismatch(
        "name-twice",
        [*std(), ("mcp-name", "execute")],
        call({}),
        "Mcp-Name",
        "Mcp-Name is sent more than once",
    ),
    ok("name-ignored-on-tools-list", [*std("tools/list", None), ("Mcp-Name", "anything")], _LIST),
    mismatch(
        "name-twice-on-tools-list",
        [*std("tools/list", None), ("Mcp-Name", "a"), ("Mcp-Name", "b")],
        _LIST,
        "Mcp-Name",
        "Mcp-Name is sent more than once",
    ),
    mismatch(
        "name-without-member",
        std(name="execute"),
        body("tools/call", arguments={}),
        "Mcp-Name",
        "Mcp-Name is present but the body carries no params.name",
        differs=NAME_WITHOUT_MEMBER,
    ),
    ok("name-absent-member-absent", std(name=None), body("tools/call", arguments={})),
    mismatch(
        "name-not-a-string",
        std(name="5"),
        call({}, name=5),
        "Mcp-Name",
        "Mcp-Name cannot match the body's params.name, which is not a string",
    ),
    ok("resource-uri", std("resources/read", "file:///a b.txt"), body("resources/read", uri="file:///a b.txt")),
    mismatch(
        "resource-uri-differs",
        std("resources/read", "file:///etc/passwd"),
        body("resources/read", uri="file:///a.txt"),
        "Mcp-Name",
        "Mcp-Name does not match the body's params.uri",
    ),
    ok("prompt-name", std("prompts/get", "greet"), body("prompts/get", name="greet")),
    ok("task-id", std("tasks/get", "task-1"), body("tasks/get", taskId="task-1")),
    mismatch(
        "task-id-differs",
        std("tasks/cancel", "task-2"),
        body("tasks/cancel", taskId="task-1"),
        "Mcp-Name",
        "Mcp-Name does not match the body's params.taskId",
        differs=TASKS_NAME,
    ),
    mismatch(
        "task-id-missing",
        std("tasks/update", None),
        body("tasks/update", taskId="task-1"),
        "Mcp-Name",
        "Mcp-Name is missing but the body carries params.taskId",
        differs=TASKS_NAME,
    ),
    # --- Mcp-Param-*: presence ----------------------------------------------------------------------------------
    ok("param-string", [*std(), (P + "Region", "us-west1")], call({"region": "us-west1"}), schema=SCHEMA),
    mismatch(
        "param-string-differs",
        [*std(), (P + "Region", "analytics")],
        call({"region": "prod"}),
        P + "Region",
        "Mcp-Param-Region does not match the argument /region (string)",
        schema=SCHEMA,
    ),
    mismatch(
        "param-string-case",
        [*std(), (P + "Region", "Prod")],
        call({"region": "prod"}),
        P + "Region",
        "Mcp-Param-Region does not match the argument /region (string)",
        schema=SCHEMA,
    ),
    mismatch(
        "param-missing",
        std(),
        call({"region": "prod"}),
        P + "Region",
        "Mcp-Param-Region is missing but the argument /region is present",
        schema=SCHEMA,
    ),
    mismatch(
        "param-without-argument",
        [*std(), (P + "Region", "prod")],
        call({}),
        P + "Region",
        "Mcp-Param-Region is present but the argument /region is absent or null",
        schema=SCHEMA,
    ),
    mismatch(
        "param-with-null-argument",
        [*std(), (P + "Region", "prod")],
        call({"region": None}),
        P + "Region",
        "Mcp-Param-Region is present but the argument /region is absent or null",
        schema=SCHEMA,
    ),
    ok("param-null-without-header", std(), call({"region": None}), schema=SCHEMA),
    mismatch(
        "param-twice",
        [*std(), (P + "Region", "prod"), ("mcp-param-region", "prod")],
        call({"region": "prod"}),
        P + "Region",
        "Mcp-Param-Region is sent more than once",
        schema=SCHEMA,
    ),
    ok("param-name-any-case", [*std(), ("mCP-pARAM-rEGION", "prod")], call({"region": "prod"}), schema=SCHEMA),
    ok("param-whitespace", [*std(), (P + "Region", "\t prod ")], call({"region": "prod"}), schema=SCHEMA),
    ok("param-undeclared-ignored", [*std(), (P + "Other", "x"), (P + "Other", "y")], call({}), schema=SCHEMA),
    ok(
        "param-on-a-call-naming-no-tool",
        [*std(name=None), (P + "Region", "lie")],
        body("tools/call", arguments={"region": "prod"}),
        schema=SCHEMA,
    ),
    ok("param-unknown-schema", [*std(), (P + "Region", "lie")], call({"region": "prod"}), schema=None),
    ok("param-invalid-schema", [*std(), (P + "Region", "lie")], call({"a": "prod"}), schema=INVALID_SCHEMA),
    ok(
        "param-nested",
        [*std(), (P + "Read-Only", "true")],
        call({"options": {"readOnly": True}}),
        schema=SCHEMA,
    ),
    ok("param-nested-parent-null", std(), call({"options": None}), schema=SCHEMA),
    mismatch(
        "param-nested-parent-not-object",
        [*std(), (P + "Read-Only", "true")],
        call({"options": "yes"}),
        P + "Read-Only",
        "Mcp-Param-Read-Only is present but the argument /options/readOnly is absent or null",
        schema=SCHEMA,
    ),
    mismatch(
        "param-arguments-not-object",
        [*std(), (P + "Region", "prod")],
        call(["prod"]),
        P + "Region",
        "Mcp-Param-Region is present but the argument /region is absent or null",
        schema=SCHEMA,
        differs=ARGUMENTS_NOT_OBJECT,
    ),
    # --- Mcp-Param-*: strings and encoding ----------------------------------------------------------------------
    ok("param-encoded", [*std(), (P + "Region", b64("Hello, 世界"))], call({"region": "Hello, 世界"}), schema=SCHEMA),
    ok(
        "param-encoded-plain", [*std(), (P + "Region", "=?base64?SGVsbG8=?=")], call({"region": "Hello"}), schema=SCHEMA
    ),
    ok("param-encoded-empty", [*std(), (P + "Region", "=?base64??=")], call({"region": ""}), schema=SCHEMA),
    ok("param-literal-empty", [*std(), (P + "Region", "")], call({"region": ""}), schema=SCHEMA),
    ok("param-encoded-spaces", [*std(), (P + "Region", b64(" padded "))], call({"region": " padded "}), schema=SCHEMA),
    mismatch(
        "param-spaces-trimmed-away",
        [*std(), (P + "Region", " padded ")],
        call({"region": " padded "}),
        P + "Region",
        "Mcp-Param-Region does not match the argument /region (string)",
        schema=SCHEMA,
    ),
    mismatch(
        "param-bad-padding",
        [*std(), (P + "Region", "=?base64?SGVsbG8?=")],
        call({"region": "Hello"}),
        P + "Region",
        "Mcp-Param-Region is not valid Base64 (=?base64?…?= holds canonical padded Base64 of UTF-8)",
        schema=SCHEMA,
    ),
    mismatch(
        "param-bad-characters",
        [*std(), (P + "Region", "=?base64?SGVs!!!bG8=?=")],
        call({"region": "Hello"}),
        P + "Region",
        "Mcp-Param-Region is not valid Base64 (=?base64?…?= holds canonical padded Base64 of UTF-8)",
        schema=SCHEMA,
    ),
    mismatch(
        "param-padding-bits",
        [*std(), (P + "Region", "=?base64?SGVsbG9=?=")],
        call({"region": "Hello"}),
        P + "Region",
        "Mcp-Param-Region is not valid Base64 (=?base64?…?= holds canonical padded Base64 of UTF-8)",
        schema=SCHEMA,
    ),
    mismatch(
        "param-not-utf8",
        [*std(), (P + "Region", "=?base64?/w==?=")],
        call({"region": "\u00ff"}),
        P + "Region",
        "Mcp-Param-Region is not valid Base64 (=?base64?…?= holds canonical padded Base64 of UTF-8)",
        schema=SCHEMA,
    ),
    ok("param-missing-prefix", [*std(), (P + "Region", "SGVsbG8=")], call({"region": "SGVsbG8="}), schema=SCHEMA),
    ok(
        "param-missing-suffix",
        [*std(), (P + "Region", "=?base64?SGVsbG8=")],
        call({"region": "=?base64?SGVsbG8="}),
        schema=SCHEMA,
    ),
    ok(
        "param-uppercase-markers-are-literal",
        [*std(), (P + "Region", "=?BASE64?SGVsbG8=?=")],
        call({"region": "=?BASE64?SGVsbG8=?="}),
        schema=SCHEMA,
    ),
    mismatch(
        "param-overlapping-markers",
        [*std(), (P + "Region", "=?base64?=")],
        call({"region": "=?base64?="}),
        P + "Region",
        "Mcp-Param-Region is not valid Base64 (=?base64?…?= holds canonical padded Base64 of UTF-8)",
        schema=SCHEMA,
        differs=OVERLAPPING_SENTINEL,
    ),
    mismatch(
        "param-literal-tab",
        [*std(), (P + "Region", "a\tb")],
        call({"region": "a\tb"}),
        P + "Region",
        "Mcp-Param-Region holds characters that must be sent Base64-encoded (=?base64?…?=)",
        schema=SCHEMA,
        differs=INVALID_CHARACTERS,
    ),
    mismatch(
        "param-literal-latin1",
        [*std(), (P + "Region", "caf\u00e9")],
        call({"region": "caf\u00e9"}),
        P + "Region",
        "Mcp-Param-Region holds characters that must be sent Base64-encoded (=?base64?…?=)",
        schema=SCHEMA,
        differs=INVALID_CHARACTERS,
    ),
    # --- Mcp-Param-*: integers ----------------------------------------------------------------------------------
    ok("integer", [*std(), (P + "Count", "42")], call({"count": 42}), schema=SCHEMA),
    ok("integer-header-float-form", [*std(), (P + "Count", "42.0")], call({"count": 42}), schema=SCHEMA),
    ok("integer-body-float-form", [*std(), (P + "Count", "42")], call({"count": 42.0}), schema=SCHEMA),
    ok("integer-many-zeros", [*std(), (P + "Count", "42.000")], call({"count": 42}), schema=SCHEMA),
    ok("integer-negative", [*std(), (P + "Count", "-7")], call({"count": -7}), schema=SCHEMA),
    ok("integer-negative-zero", [*std(), (P + "Count", "-0")], call({"count": 0}), schema=SCHEMA),
    ok("integer-encoded", [*std(), (P + "Count", b64("42"))], call({"count": 42}), schema=SCHEMA),
    ok("integer-largest-safe", [*std(), (P + "Count", str(2**53 - 1))], call({"count": 2**53 - 1}), schema=SCHEMA),
    ok(
        "integer-smallest-safe",
        [*std(), (P + "Count", str(-(2**53) + 1))],
        call({"count": -(2**53) + 1}),
        schema=SCHEMA,
    ),
    mismatch(
        "integer-differs",
        [*std(), (P + "Count", "43")],
        call({"count": 42}),
        P + "Count",
        "Mcp-Param-Count does not match the argument /count (integer)",
        schema=SCHEMA,
    ),
    mismatch(
        "integer-leading-zero",
        [*std(), (P + "Count", "042")],
        call({"count": 42}),
        P + "Count",
        "Mcp-Param-Count is not an integer (the argument /count is one)",
        schema=SCHEMA,
        differs=INTEGER_FORM,
    ),
    mismatch(
        "integer-plus-sign",
        [*std(), (P + "Count", "+42")],
        call({"count": 42}),
        P + "Count",
        "Mcp-Param-Count is not an integer (the argument /count is one)",
        schema=SCHEMA,
    ),
    mismatch(
        "integer-exponent",
        [*std(), (P + "Count", "4.2e1")],
        call({"count": 42}),
        P + "Count",
        "Mcp-Param-Count is not an integer (the argument /count is one)",
        schema=SCHEMA,
    ),
    mismatch(
        "integer-fraction",
        [*std(), (P + "Count", "42.5")],
        call({"count": 42}),
        P + "Count",
        "Mcp-Param-Count is not an integer (the argument /count is one)",
        schema=SCHEMA,
    ),
    mismatch(
        "integer-header-out-of-range",
        [*std(), (P + "Count", str(2**53))],
        call({"count": 2**53 - 1}),
        P + "Count",
        "Mcp-Param-Count is outside ±(2^53-1)",
        schema=SCHEMA,
    ),
    mismatch(
        "integer-body-out-of-range",
        [*std(), (P + "Count", str(2**53))],
        call({"count": 2**53}),
        P + "Count",
        "Mcp-Param-Count cannot match the argument /count, which is no mirrorable integer",
        schema=SCHEMA,
        differs=UNSAFE_INTEGER,
    ),
    ok("integer-body-out-of-range-no-header", std(), call({"count": 2**53}), schema=SCHEMA, differs=UNSAFE_INTEGER),
    mismatch(
        "integer-body-fraction",
        [*std(), (P + "Count", "42.5")],
        call({"count": 42.5}),
        P + "Count",
        "Mcp-Param-Count cannot match the argument /count, which is no mirrorable integer",
        schema=SCHEMA,
        differs=ARGUMENT_TYPE,
    ),
    mismatch(
        "integer-body-string",
        [*std(), (P + "Count", "42")],
        call({"count": "42"}),
        P + "Count",
        "Mcp-Param-Count cannot match the argument /count, which is no mirrorable integer",
        schema=SCHEMA,
        differs=ARGUMENT_TYPE,
    ),
    mismatch(
        "integer-body-boolean",
        [*std(), (P + "Count", "true")],
        call({"count": True}),
        P + "Count",
        "Mcp-Param-Count cannot match the argument /count, which is no mirrorable integer",
        schema=SCHEMA,
        differs=ARGUMENT_TYPE,
    ),
    # --- Mcp-Param-*: booleans ----------------------------------------------------------------------------------
    ok("boolean-true", [*std(), (P + "Dry-Run", "true")], call({"dry": True}), schema=SCHEMA),
    ok("boolean-false", [*std(), (P + "Dry-Run", "false")], call({"dry": False}), schema=SCHEMA),
    ok("boolean-encoded", [*std(), (P + "Dry-Run", b64("true"))], call({"dry": True}), schema=SCHEMA),
    mismatch(
        "boolean-differs",
        [*std(), (P + "Dry-Run", "false")],
        call({"dry": True}),
        P + "Dry-Run",
        "Mcp-Param-Dry-Run does not match the argument /dry (boolean)",
        schema=SCHEMA,
    ),
    mismatch(
        "boolean-capitalised",
        [*std(), (P + "Dry-Run", "True")],
        call({"dry": True}),
        P + "Dry-Run",
        "Mcp-Param-Dry-Run is neither true nor false (the argument /dry is a boolean)",
        schema=SCHEMA,
    ),
    mismatch(
        "boolean-as-number",
        [*std(), (P + "Dry-Run", "1")],
        call({"dry": True}),
        P + "Dry-Run",
        "Mcp-Param-Dry-Run is neither true nor false (the argument /dry is a boolean)",
        schema=SCHEMA,
    ),
    mismatch(
        "boolean-body-string",
        [*std(), (P + "Dry-Run", "true")],
        call({"dry": "true"}),
        P + "Dry-Run",
        "Mcp-Param-Dry-Run cannot match the argument /dry, which is no mirrorable boolean",
        schema=SCHEMA,
        differs=ARGUMENT_TYPE,
    ),
    mismatch(
        "string-body-number",
        [*std(), (P + "Region", "42")],
        call({"region": 42}),
        P + "Region",
        "Mcp-Param-Region cannot match the argument /region, which is no mirrorable string",
        schema=SCHEMA,
        differs=ARGUMENT_TYPE,
    ),
    # --- notifications and bodies -------------------------------------------------------------------------------
    ok("notification-without-headers", [("MCP-Protocol-Version", VERSION)], body("notifications/x", request_id=None)),
    mismatch(
        "notification-method-differs",
        std("notifications/y", None),
        body("notifications/x", request_id=None),
        "Mcp-Method",
        "Mcp-Method does not match the body's method",
        differs=NOTIFICATION_HEADERS,
    ),
    Case("body-not-json", std(), b"{not json", reason="the body is not UTF-8 JSON", code=-32700),
    Case("body-batch", std(), b"[" + _LIST + b"]", reason="the body is not a JSON-RPC request object", code=-32600),
    Case(
        "body-response",
        std(),
        b'{"jsonrpc":"2.0","id":1,"result":{}}',
        reason="the body has no string method",
        code=-32600,
    ),
    Case(
        "body-no-jsonrpc",
        std(),
        b'{"id":1,"method":"tools/list","params":{}}',
        reason='the body lacks "jsonrpc": "2.0"',
        code=-32600,
    ),
    Case(
        "body-lone-surrogate",
        std(),
        call({"query": "x"}).replace(b'"x"', b'"\\ud800"'),
        reason="a string in the body escapes a lone UTF-16 surrogate, which is no Unicode text",
        code=-32700,
        differs=BODY_TEXT,
    ),
    Case(
        "body-utf16",
        std("tools/list", None),
        _LIST.decode().encode("utf-16"),
        reason="the body is not UTF-8 JSON",
        code=-32700,
        differs=BODY_TEXT,
    ),
    # --- parser differentials: a body two readers may read two ways (docs/gate.md, "Parser differentials") ---------
    Case(
        "duplicate-name-last-wins-in-python",
        std(name="safe"),
        call({"query": "x"}, name="safe").replace(b'"name": "safe"', b'"name": "evil", "name": "safe"'),
        reason="the body holds the member /params/name twice: readers differ on which one counts (RFC 8259 §4),"
        " so it is refused",
        code=-32600,
        differs=DUPLICATE_MEMBERS,
    ),
    Case(
        "duplicate-argument",
        [*std(), (P + "Region", "eu")],
        call({"region": "eu", "query": "x"}).replace(b'"region": "eu"', b'"region": "us", "region": "eu"'),
        reason="the body holds the member /params/arguments/region twice: readers differ on which one counts"
        " (RFC 8259 §4), so it is refused",
        code=-32600,
        schema=SCHEMA,
        differs=DUPLICATE_MEMBERS,
    ),
    Case(
        "duplicate-nested-argument",
        [*std(), (P + "Read-Only", "true")],
        call({"options": {"readOnly": True}}).replace(b'"readOnly": true', b'"readOnly": false, "readOnly": true'),
        reason="the body holds the member /params/arguments/options/readOnly twice: readers differ on which one counts"
        " (RFC 8259 §4), so it is refused",
        code=-32600,
        schema=SCHEMA,
        differs=DUPLICATE_MEMBERS,
    ),
    Case(
        "duplicate-method",
        std("tools/list", None),
        _LIST.replace(b'"method": "tools/list"', b'"method": "tools/call", "method": "tools/list"'),
        reason="the body holds the member /method twice: readers differ on which one counts (RFC 8259 §4),"
        " so it is refused",
        code=-32600,
        differs=DUPLICATE_MEMBERS,
    ),
    Case(
        "duplicate-escaped-name",
        std("tools/list", None),
        _LIST.replace(b'"method": "tools/list"', b'"method": "tools/call", "m\\u0065thod": "tools/list"'),
        reason="the body holds the member /method twice: readers differ on which one counts (RFC 8259 §4),"
        " so it is refused",
        code=-32600,
        differs=DUPLICATE_MEMBERS,
    ),
    Case(
        "duplicate-protocol-version",
        std("tools/list", None),
        _LIST.replace(b'"2026-07-28"', b'"2025-11-25", "io.modelcontextprotocol/protocolVersion": "2026-07-28"'),
        reason="the body holds the member /params/_meta/io.modelcontextprotocol~1protocolVersion twice: readers"
        " differ on which one counts (RFC 8259 §4), so it is refused",
        code=-32600,
        differs=DUPLICATE_MEMBERS,
    ),
    Case(
        "duplicate-off-the-path",
        std(),
        call({"query": "x", "filters": [{"tenant": 2}]}).replace(b'{"tenant": 2}', b'{"tenant": 1, "tenant": 2}'),
        reason="the body holds the member /params/arguments/filters/0/tenant twice: readers differ on which one"
        " counts (RFC 8259 §4), so it is refused",
        code=-32600,
        differs=DUPLICATE_MEMBERS,
    ),
    Case(
        "body-byte-order-mark",
        std("tools/list", None),
        b"\xef\xbb\xbf" + _LIST,
        reason="the body starts with a byte order mark (RFC 8259 §8.1: JSON text has none)",
        code=-32700,
        differs=BODY_TEXT,
    ),
    Case(
        "body-nan",
        std(),
        call({"temperature": 1}).replace(b'"temperature": 1', b'"temperature": NaN'),
        reason="the body holds NaN or Infinity, which JSON does not have (RFC 8259 §6)",
        code=-32700,
        schema=SCHEMA,
        differs=NON_JSON_NUMBERS,
    ),
    Case(
        "body-infinity",
        std(),
        call({"temperature": 1}).replace(b'"temperature": 1', b'"temperature": -Infinity'),
        reason="the body holds NaN or Infinity, which JSON does not have (RFC 8259 §6)",
        code=-32700,
        schema=SCHEMA,
        differs=NON_JSON_NUMBERS,
    ),
    mismatch(
        "integer-body-rounds-to-an-integer",
        [*std(), (P + "Count", "9007199254740991")],
        call({"count": 1}).replace(b'"count": 1', b'"count": 9007199254740990.9999'),
        P + "Count",
        "Mcp-Param-Count cannot match the argument /count, which is no mirrorable integer",
        schema=SCHEMA,
        differs=NON_JSON_NUMBERS,
    ),
    ok(
        "integer-body-exponent",
        [*std(), (P + "Count", "42")],
        call({"count": 1}).replace(b'"count": 1', b'"count": 4.2e1'),
        schema=SCHEMA,
    ),
    mismatch(
        "integer-body-huge-exponent",
        [*std(), (P + "Count", "0")],
        call({"count": 1}).replace(b'"count": 1', b'"count": 1e999999999'),
        P + "Count",
        "Mcp-Param-Count cannot match the argument /count, which is no mirrorable integer",
        schema=SCHEMA,
    ),
    mismatch(
        "integer-header-thousands-of-digits",
        [*std(), (P + "Count", "9" * 5000)],
        call({"count": 1}),
        P + "Count",
        "Mcp-Param-Count is outside ±(2^53-1)",
        schema=SCHEMA,
    ),
]
