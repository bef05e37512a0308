"""One corpus through ``mcpfsm.gate.verify`` and through the official Python SDK server's own validation (mcp 2.3.0).

The SDK side is the SDK's own code, in process: its 2026-07-28 Streamable HTTP handler
(``mcp.server._streamable_http_modern.handle_modern_request``) serving a low-level ``Server`` whose
``get_tool_input_schema`` returns the corpus's schema, driven through ASGI with the headers as an HTTP server hands them
on (names lowercased, optional whitespace trimmed, Latin-1 bytes). Its verdict is ``accept`` (the request passed the
header checks: 200, 202, 404 from dispatch, -32602 from dispatch's params check, or -32022 after the header rung),
``reject`` (400 with -32020, -32700 or -32600), or ``n/a`` when it refused the request for something that is no
header's business (a missing ``_meta`` envelope, -32602).

Every disagreement is a line of docs/gate.md, "Where we differ from the SDK", which quotes the specification sentence
that decides it: the fixed corpus names the line per case (and the SDK must really disagree there, so the list stays
true), and for the generated corpus each disagreement must be explained by one of those lines, found from the request
and the header our verdict blames.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcpfsm._core.codec import encode_header_value
from mcpfsm._core.errors import ProtocolError
from mcpfsm._core.gate import name_param
from mcpfsm._core.jsonrpc import decode_message
from mcpfsm._core.schema import inspect_input_schema
from mcpfsm.gate import Verdict, verify

from .gate_cases import (
    ARGUMENT_TYPE,
    ARGUMENTS_NOT_OBJECT,
    BODY_TEXT,
    CASES,
    DIFFERENCES,
    INTEGER_FORM,
    INVALID_CHARACTERS,
    META,
    NAME_WITHOUT_MEMBER,
    NOTIFICATION_HEADERS,
    OVERLAPPING_SENTINEL,
    SCHEMA,
    TASKS_NAME,
    UNSAFE_INTEGER,
    VERSION,
    Case,
    b64,
)

handler = pytest.importorskip("mcp.server._streamable_http_modern")
lowlevel = pytest.importorskip("mcp.server.lowlevel")
mcp_types = pytest.importorskip("mcp_types")

DOCS = Path(__file__).parents[2] / "docs" / "gate.md"
SAFE = 2**53 - 1


class Sdk:
    """The SDK's server, one per module: ``judge`` runs one request through its header validation."""

    def __init__(self) -> None:
        self.schema: Any = None

        async def on_call_tool(ctx: Any, params: Any) -> Any:
            return mcp_types.CallToolResult(content=[])

        async def on_list_tools(ctx: Any, params: Any) -> Any:
            return mcp_types.ListToolsResult(tools=[])

        self.app = lowlevel.Server(
            "differential",
            get_tool_input_schema=lambda name: self.schema,
            on_call_tool=on_call_tool,
            on_list_tools=on_list_tools,
        )

    def judge(self, headers: list[tuple[str, str]], body: bytes, schema: Any) -> str:
        self.schema = schema
        return anyio.run(self._judge, headers, body, backend="trio")

    async def _judge(self, headers: list[tuple[str, str]], body: bytes) -> str:
        raw = [(b"content-type", b"application/json"), (b"accept", b"application/json, text/event-stream")]
        raw += [(name.lower().encode("latin-1"), value.strip(" \t").encode("latin-1")) for name, value in headers]
        scope = {
            "type": "http",
            "method": "POST",
            "path": "/mcp",
            "raw_path": b"/mcp",
            "headers": raw,
            "query_string": b"",
            "http_version": "1.1",
            "scheme": "http",
            "server": ("127.0.0.1", 80),
            "client": ("127.0.0.1", 1),
            "root_path": "",
        }
        delivered = False

        async def receive() -> dict[str, Any]:
            nonlocal delivered
            if delivered:
                await anyio.sleep_forever()
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}

        status: list[int] = []
        chunks: list[bytes] = []

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                status.append(message["status"])
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))

        async with self.app.lifespan(self.app) as state:
            await handler.handle_modern_request(self.app, None, True, state, scope, receive, send)
        answer = json.loads(b"".join(chunks)) if chunks and b"".join(chunks).strip() else {}
        code = answer.get("error", {}).get("code") if isinstance(answer, dict) else None
        if status[0] < 400 or status[0] == 404:
            return "accept"
        if code == -32602:
            # The envelope's rung (before the headers') or dispatch's params check (after them).
            return "n/a" if "_meta" in answer["error"]["message"] else "accept"
        if code == -32022:
            return "n/a" if _is_notification(body) else "accept"  # a request's version rung comes after its headers'
        assert (status[0], code) in ((400, -32020), (400, -32700), (400, -32600)), (status, answer)
        return "reject"


def _is_notification(body: bytes) -> bool:
    try:
        value = json.loads(body)
    except ValueError:
        return False
    return isinstance(value, dict) and "id" not in value


@pytest.fixture(scope="module")
def sdk() -> Sdk:
    return Sdk()


def ours(case_headers: list[tuple[str, str]], body: bytes, schema: Any) -> str:
    return "accept" if verify(case_headers, body, schema).ok else "reject"


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_the_sdk_agrees_except_where_docs_gate_md_says_why(sdk: Sdk, case: Case) -> None:
    theirs = sdk.judge(case.headers, case.body, case.schema)
    mine = ours(case.headers, case.body, case.schema)
    if theirs == "n/a":
        assert case.id == "no-such-case"  # the fixed corpus always carries the envelope
    if case.differs is None:
        assert theirs == mine
    else:
        assert theirs != mine, f"{case.id}: the SDK agrees now; docs/gate.md's {case.differs!r} line is stale"


def test_every_documented_difference_is_exercised_and_on_the_page() -> None:
    assert {case.differs for case in CASES} - {None} == set(DIFFERENCES)
    page = DOCS.read_text(encoding="utf-8")
    section = page.split("## Where we differ from the SDK", 1)[1].split("\n## ", 1)[0]
    for anchor in DIFFERENCES:
        assert f'<a id="{anchor}"></a>' in section, anchor


# --- the generated corpus ----------------------------------------------------------------------------------------

STRINGS = ["eu", "us west 1", "", " padded ", "a\tb", "caf\u00e9", "天気", "=?base64?x?=", "=?base64?=", "SGVsbG8="]
INTEGERS: list[Any] = [0, 42, -7, 42.0, 42.5, SAFE, SAFE + 1, -SAFE - 1, "42", True, None]
BOOLEANS: list[Any] = [True, False, "true", 1, None]


def _encodings(value: Any) -> st.SearchStrategy[str | None]:
    # What a header for ``value`` might say: right (as mcpfsm or the SDK client would send it), over-encoded, in
    # another numeric form, wrong, mangled, or absent.
    right: list[str | None] = [None]
    options: list[str | None] = [None, "wrong", "=?base64?SGVsbG8?=", "caf\u00e9", "=?base64?="]
    if isinstance(value, bool):
        right = ["true" if value else "false"]
        options += [b64(right[0]), "True", "1"]
    elif isinstance(value, int | float):
        text = str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)
        right = [text]
        options += [f"{text}.0", f"0{text}", f"+{text}", b64(text), str(value)]
    elif isinstance(value, str):
        right = [encode_header_value(value)]
        options += [value, value.strip(" \t"), b64(value)]
    # Mostly right, so that most requests are true and the checks past the first one are reached.
    return st.sampled_from(right * len(options) + options)


@st.composite
def corpus(draw: st.DrawFn) -> tuple[list[tuple[str, str]], bytes]:
    method = draw(st.sampled_from(["tools/call"] * 6 + ["prompts/get", "resources/read", "tasks/get", "tools/list"]))
    notification = draw(st.booleans()) and draw(st.booleans()) and draw(st.booleans())
    name = draw(st.sampled_from([*STRINGS, None, 5]))
    arguments: Any = {}
    for key, pool in (("region", [*STRINGS, None, 42]), ("count", INTEGERS), ("dry", BOOLEANS)):
        if draw(st.booleans()):
            arguments[key] = draw(st.sampled_from(pool))
    if draw(st.integers(0, 9)) == 0:
        arguments = draw(st.sampled_from([["eu"], "eu", None]))
    params: dict[str, Any] = {"_meta": META}
    key = name_param(method)
    if key is not None and name is not None:
        params[key] = name
    if method == "tools/call" and arguments is not None:
        params["arguments"] = arguments
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
    if not notification:
        message["id"] = 1
    body = json.dumps(message, ensure_ascii=False).encode()

    headers: list[tuple[str, str]] = []

    def add(header: str, value: str | None) -> None:
        if value is None:
            return
        # On the wire a header is bytes: a client that puts UTF-8 text in one sends its bytes, read back as Latin-1.
        value = value.encode("utf-8").decode("latin-1")
        spelled = draw(st.sampled_from([header, header.lower(), header.upper()]))
        padding = draw(st.sampled_from(["", "", "", " ", "\t "]))
        headers.append((spelled, padding + value + padding.strip(" ")))
        if draw(st.integers(0, 30)) == 0:
            headers.append((header, value))  # sent twice

    add("MCP-Protocol-Version", draw(st.sampled_from([VERSION] * 20 + ["2025-11-25", None])))
    add("Mcp-Method", draw(st.sampled_from([method] * 20 + [method.upper(), None, "tools/list"])))
    if name is not None:
        add("Mcp-Name", draw(_encodings(name) if isinstance(name, str) else st.sampled_from([str(name), None])))
    elif draw(st.booleans()):
        add("Mcp-Name", "execute")
    if isinstance(arguments, dict):
        for argument, header in (("region", "Region"), ("count", "Count"), ("dry", "Dry-Run")):
            add("Mcp-Param-" + header, draw(_encodings(arguments.get(argument))))
    elif draw(st.booleans()):
        add("Mcp-Param-Region", "eu")
    draw(st.randoms()).shuffle(headers)
    return headers, body


_SDK_INTEGER = re.compile(r"^-?[0-9]+(\.[0-9]+)?$")


def _visible(value: str) -> bool:
    return value.isascii() and value.isprintable()


def _value_difference(value: str) -> str | None:
    value = value.strip(" \t")
    if value.startswith("=?base64?") and value.endswith("?="):
        return OVERLAPPING_SENTINEL if len(value) < len("=?base64??=") else None
    return None if _visible(value) else INVALID_CHARACTERS


def explain(headers: list[tuple[str, str]], body: bytes, verdict: Verdict) -> str | None:
    """The line of docs/gate.md that explains why the SDK judges this request otherwise, or ``None``."""
    try:
        message = json.loads(body)
    except ValueError:
        return None
    try:
        decode_message(body)
    except ProtocolError:
        return BODY_TEXT
    if not isinstance(message, dict):
        return None
    params = message.get("params") or {}
    method = message.get("method")
    arguments = params.get("arguments")
    sent: dict[str, list[str]] = {}
    for name, value in headers:
        sent.setdefault(name.lower(), []).append(value)
    declared = {p.header: p for p in inspect_input_schema(SCHEMA).mirrored}
    if verdict.ok:
        # The SDK refused what we forwarded: a value that cannot be mirrored, which we let go without a header.
        for header, param in declared.items():
            value = arguments.get(param.path[0]) if isinstance(arguments, dict) else None
            if value is None or sent.get(header.lower()):
                continue
            if param.type == "integer" and type(value) in (int, float) and value == int(value) and abs(value) > SAFE:
                return UNSAFE_INTEGER
            return ARGUMENT_TYPE
        return None
    blamed = verdict.header
    if blamed is None:
        return None
    values = sent.get(blamed.lower(), [])
    if "id" not in message:
        return NOTIFICATION_HEADERS  # the SDK acknowledges a notification without reading its headers
    if values and (found := _value_difference(values[0])) is not None:
        return found
    if blamed == "Mcp-Name":
        if isinstance(method, str) and method.startswith("tasks/"):
            return TASKS_NAME
        key = name_param(method) if isinstance(method, str) else None
        return NAME_WITHOUT_MEMBER if key is not None and params.get(key) is None else None
    param = declared.get(blamed)
    if param is None:
        return None
    if not isinstance(arguments, dict):
        return ARGUMENTS_NOT_OBJECT
    value = arguments.get(param.path[0])
    if param.type == "integer" and type(value) in (int, float) and value == int(value) and abs(value) > SAFE:
        return UNSAFE_INTEGER
    fits = {"string": str, "boolean": bool}.get(param.type)
    integral = not isinstance(value, bool) and isinstance(value, int | float) and value == int(value)
    if (fits is not None and not isinstance(value, fits)) or (param.type == "integer" and not integral):
        return ARGUMENT_TYPE
    decoded = values[0].strip(" \t") if values else ""
    if param.type == "integer" and _SDK_INTEGER.fullmatch(decoded):
        return INTEGER_FORM
    return None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(corpus())
def test_generated_requests_agree_or_a_documented_line_explains_why(sdk: Sdk, request: tuple[Any, bytes]) -> None:
    headers, body = request
    theirs = sdk.judge(headers, body, SCHEMA)
    if theirs == "n/a":
        return
    verdict = verify(headers, body, SCHEMA)
    mine = "accept" if verdict.ok else "reject"
    if theirs != mine:
        explanation = explain(headers, body, verdict)
        assert explanation in DIFFERENCES, (mine, theirs, verdict, headers, body)
