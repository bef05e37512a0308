"""A secret the server quotes back never leaves the client: not in an error, an event, an audit file or a span.

A raw socket server (tests/support/rawserver.py) plays a careless MCP server that echoes the bearer token it was
sent in a 401 body or in a JSON-RPC error message and ``data``, in several encodings at once (as is,
percent-encoded with upper- and lower-case hex digits, form-encoded, JSON-escaped), and a careless token
endpoint that echoes the client secret percent-encoded with lower-case escapes. Every text that leaves the
client goes through one redaction function (``mcpfsm._core.oauth.redaction.redact``): the exception's
``str`` and ``repr`` (and its ``message`` and ``data``), ``CallEvent.error``, an ``AuditLog`` file and the
OpenTelemetry span of the call.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final
from urllib.parse import quote, quote_plus

import pytest
import trio

import mcpfsm
from mcpfsm._client.assembly import HttpServer, Parts
from mcpfsm._client.options import ClientOptions
from tests.support.oteltest import configured
from tests.support.rawserver import HOST, JSON_HEADERS, Seen, Server, ok, serving

TOKEN: Final = "tok/Ab+c=9-zz"
SECRET: Final = "s3cr t/+v@l!x"


def lower_escapes(text: str) -> str:
    """``text`` with every percent escape in lower-case hex digits (``%2F`` -> ``%2f``)."""
    return re.sub(r"%[0-9A-F]{2}", lambda match: match.group().lower(), text)


def forms(value: str) -> list[str]:
    """``value`` in every encoding the server echoes it in (and that must never come out of the client)."""
    percent = quote(value, safe="")
    plus = quote_plus(value)
    return sorted(
        {
            value,
            percent,
            lower_escapes(percent),
            plus,
            lower_escapes(plus),
            json.dumps(value)[1:-1].replace("/", "\\/"),
            "".join(f"\\u{ord(char):04x}" for char in value),
        }
    )


def echo_text(value: str) -> str:
    return " | ".join(forms(value))


def leaks(text: str, value: str) -> list[str]:
    return [form for form in forms(value) if form in text]


def legacy_server(tools_call: Any, *, stream_refused: bytes | None = None) -> Server:
    """A 2025-11-25 server: initialize, initialized, no standalone stream; ``tools/call`` answered by ``tools_call``.

    ``stream_refused``: the standalone stream's GET is answered 401 with this body (else 405: none offered).
    """

    async def answer(stream: trio.abc.Stream, seen: Seen) -> bool:
        if seen.request_line.startswith("GET") and stream_refused is not None:
            headers = [("WWW-Authenticate", 'Bearer error="invalid_token"'), ("Content-Type", "text/plain")]
            return await ok(stream_refused, status=401, headers=headers)(stream, seen)
        if seen.request_line.startswith("GET"):
            return await ok(b"", status=405, headers=[("Allow", "POST")])(stream, seen)
        message = json.loads(seen.body)
        method = message.get("method")
        if method == "initialize":
            result = {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "x", "version": "1"},
            }
            body = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}).encode()
            return await ok(body)(stream, seen)
        if "id" not in message:
            return await ok(b"", status=202, headers=[])(stream, seen)
        return bool(await tools_call(stream, seen, message))

    return Server(default=answer)


def unauthorized_echo(value: str) -> Any:
    async def tools_call(stream: trio.abc.Stream, seen: Seen, message: dict[str, Any]) -> bool:
        body = f"invalid token: {echo_text(value)}".encode()
        headers = [("WWW-Authenticate", 'Bearer error="invalid_token"'), ("Content-Type", "text/plain")]
        return await ok(body, status=401, headers=headers)(stream, seen)

    return tools_call


def rpc_error_echo(value: str, status: int) -> Any:
    async def tools_call(stream: trio.abc.Stream, seen: Seen, message: dict[str, Any]) -> bool:
        error = {
            "code": -32001,
            "message": f"token refused: {echo_text(value)}",
            "data": {"token": value, "raw": [value]},
        }
        body = json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": error}).encode()
        return await ok(body, status=status, headers=JSON_HEADERS)(stream, seen)

    return tools_call


@pytest.fixture
def otel() -> Iterator[Any]:
    with configured(meters=False) as collected:
        yield collected


CREDENTIALS: Final = {
    "static token": {"auth": TOKEN},
    "authorization header": {"headers": {"Authorization": f"Bearer {TOKEN}"}},
}
ANSWERS: Final = {
    "401 body": unauthorized_echo(TOKEN),
    "json-rpc error": rpc_error_echo(TOKEN, 200),
    "json-rpc error on a 403": rpc_error_echo(TOKEN, 403),
}


@pytest.mark.parametrize("answer", list(ANSWERS))
@pytest.mark.parametrize("credential", list(CREDENTIALS))
async def test_a_token_the_server_quotes_back_reaches_no_error_event_audit_file_or_span(
    tmp_path: Path, otel: Any, credential: str, answer: str
) -> None:
    audit_path = tmp_path / "audit.jsonl"
    events: list[mcpfsm.CallEvent] = []

    def on_event(event: mcpfsm.CallEvent) -> None:
        events.append(event)
        audit(event)

    with mcpfsm.AuditLog(audit_path) as audit:
        async with serving(legacy_server(ANSWERS[answer])) as server:
            url = f"http://{HOST}:{server.port}/mcp"
            options = CREDENTIALS[credential]
            async with mcpfsm.Client.http(url, protocol="2025-11-25", on_event=on_event, **options) as client:
                with pytest.raises(mcpfsm.McpError) as caught:
                    await client.call_tool("echo", {})
    sent = [seen.headers.get("authorization") for seen in server.seen if seen.request_line.startswith("POST")]
    assert set(sent) == {f"Bearer {TOKEN}"}  # the token went where it belongs, and came back quoted

    error = caught.value
    assert "[redacted]" in str(error)
    assert leaks(str(error), TOKEN) == [] and leaks(repr(error), TOKEN) == []
    if isinstance(error, mcpfsm.RpcError):
        assert leaks(error.message, TOKEN) == [] and leaks(json.dumps(error.data), TOKEN) == []
    failed = [event for event in events if event.machine == "tool-call" and event.error is not None]
    assert failed and all(leaks(json.dumps(event.error), TOKEN) == [] for event in failed)
    assert "[redacted]" in failed[-1].error["message"]  # type: ignore[index]
    written = audit_path.read_text(encoding="utf-8")
    assert "[redacted]" in written and leaks(written, TOKEN) == []
    spans = otel.spans()
    assert spans
    shown = json.dumps(
        [
            {
                "status": span.status.description,
                "attributes": dict(span.attributes or {}),
                "events": [(e.name, dict(e.attributes or {})) for e in span.events],
            }
            for span in spans
        ],
        default=str,
    )
    assert leaks(shown, TOKEN) == []
    if isinstance(error, mcpfsm.RpcError):
        descriptions = [span.status.description for span in spans if span.status.description]
        assert descriptions and all("[redacted]" in text for text in descriptions)


async def test_a_client_secret_the_token_endpoint_echoes_in_lower_case_percent_encoding_is_redacted() -> None:
    server = Server()
    port_of: dict[str, int] = {}

    async def answer(stream: trio.abc.Stream, seen: Seen) -> bool:
        base = f"http://{HOST}:{port_of['port']}"
        path = seen.request_line.split()[1]
        if path == "/mcp":
            challenge = f'Bearer resource_metadata="{base}/prm"'
            return await ok(b"", status=401, headers=[("WWW-Authenticate", challenge)])(stream, seen)
        if path == "/prm":
            document = {"resource": f"{base}/mcp", "authorization_servers": [base]}
            return await ok(json.dumps(document).encode())(stream, seen)
        if path == "/.well-known/oauth-authorization-server":
            document = {
                "issuer": base,
                "token_endpoint": f"{base}/token",
                "grant_types_supported": ["client_credentials"],
            }
            return await ok(json.dumps(document).encode())(stream, seen)
        # The token endpoint: a careless server quotes the secret and the Basic credentials it was sent.
        basic = seen.headers.get("authorization", "")
        said = f"bad secret {lower_escapes(quote(SECRET, safe=''))} in {basic} ({lower_escapes(quote(basic, safe=''))})"
        body = json.dumps({"error": "invalid_client", "error_description": said}).encode()
        return await ok(body, status=401)(stream, seen)

    server.default = answer
    events: list[mcpfsm.CallEvent] = []
    async with serving(server):
        port_of["port"] = server.port
        base = f"http://{HOST}:{server.port}"
        auth = mcpfsm.ClientCredentials("agent", client_secret=SECRET, issuer=base)
        with pytest.raises(mcpfsm.AuthorizationError) as caught:
            async with mcpfsm.Client.http(f"{base}/mcp", auth=auth, on_event=events.append) as client:
                await client.tools()
    token_requests = [seen for seen in server.seen if seen.request_line.startswith("POST /token")]
    assert len(token_requests) == 1
    basic = base64.b64encode(f"agent:{quote_plus(SECRET)}".encode()).decode()
    assert token_requests[0].headers["authorization"] == f"Basic {basic}"

    text = f"{caught.value} {caught.value!r} {caught.value.error_description}"
    assert caught.value.error_description is not None and "[redacted]" in caught.value.error_description
    assert leaks(text, SECRET) == [] and basic not in text and lower_escapes(quote(basic, safe="")) not in text
    shown = json.dumps([event.error for event in events if event.error is not None])
    assert "[redacted]" in shown and leaks(shown, SECRET) == [] and basic not in shown


@pytest.mark.parametrize("credential", list(CREDENTIALS))
def test_the_audit_bus_of_a_client_with_credentials_redacts_every_events_error(credential: str) -> None:
    # The last net: an event whose error text the client did not scrub on the way (none does today) still
    # reaches no sink with the token in it.
    events: list[mcpfsm.CallEvent] = []
    connection = HttpServer(url="http://127.0.0.1:9/mcp", **CREDENTIALS[credential])
    made = Parts(connection, ClientOptions(on_event=events.append))
    error = {"type": "RpcError", "code": -1, "message": f"quoted: {echo_text(TOKEN)}"}
    made.audit.publish(
        mcpfsm.CallEvent(
            call_id="c",
            seq=0,
            tool="t",
            state="failed",
            previous=None,
            trigger=None,
            attempt=1,
            at="",
            elapsed=0.0,
            error=error,
        )
    )
    (event,) = events
    assert event.error is not None and event.error["message"].startswith("quoted: [redacted]")
    assert leaks(json.dumps(event.error), TOKEN) == []
    assert leaks(error["message"], TOKEN) != []  # the event got a new mapping; the one it was built with is as given


async def noop_call(stream: trio.abc.Stream, seen: Seen, message: dict[str, Any]) -> bool:
    body = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {"content": []}}).encode()
    return await ok(body)(stream, seen)


@pytest.mark.parametrize("credential", list(CREDENTIALS))
async def test_a_token_quoted_in_the_refusal_of_the_standalone_stream_reaches_no_log_line(
    logs: list[dict[str, Any]], credential: str
) -> None:
    echoed = f"invalid token: {echo_text(TOKEN)}".encode()
    async with serving(legacy_server(noop_call, stream_refused=echoed)) as server:
        url = f"http://{HOST}:{server.port}/mcp"
        async with mcpfsm.Client.http(url, protocol="2025-11-25", **CREDENTIALS[credential]) as client:
            await client.call_tool("echo", {})
    assert any(seen.request_line.startswith("GET") for seen in server.seen)
    refused = [record["message"] for record in logs if "event stream" in record["message"]]
    assert refused and all("[redacted]" in message for message in refused)
    assert leaks(json.dumps([record["message"] for record in logs]), TOKEN) == []
