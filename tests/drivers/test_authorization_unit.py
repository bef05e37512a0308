"""Authorization at the edges: the transport's challenge fields and credentials hook, the authorization side's
HTTP client, the driver against answers a real server rarely gives (``httpx.MockTransport``), the stores."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import httpx
import pytest
import trio

import mcpfsm
from mcpfsm._client.assembly import HttpServer
from mcpfsm._core import oauth
from mcpfsm._core.credentials import tokens_key
from mcpfsm._drivers.audit import AuditBus
from mcpfsm._drivers.authorization import AuthorizationFlow
from mcpfsm._drivers.authorization_binding import Binding, Entry
from mcpfsm._transports.http import HttpTransport
from mcpfsm._transports.oauth_http import MAX_BODY, OAuthHttp

MCP: Final = "https://mcp.example/mcp"
AS: Final = "https://as.example"
PRM_URL: Final = "https://mcp.example/.well-known/oauth-protected-resource/mcp"
ROOT_PRM: Final = "https://mcp.example/.well-known/oauth-protected-resource"
AS_URL: Final = "https://as.example/.well-known/oauth-authorization-server"
PRM: Final = {"resource": MCP, "authorization_servers": [AS]}
METADATA: Final = {
    "issuer": AS,
    "authorization_endpoint": f"{AS}/authorize",
    "token_endpoint": f"{AS}/token",
    "registration_endpoint": f"{AS}/register",
    "code_challenge_methods_supported": ["S256"],
}


# --- the HTTP transport ---------------------------------------------------------------------------------


class Recorder:
    """Credentials that record what they were asked for."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, str]] = []

    def headers(self, method: str, url: str) -> Sequence[tuple[str, str]]:
        self.asked.append((method, url))
        return (("Authorization", "Bearer t0ken"),)


async def test_a_401_without_a_jsonrpc_body_carries_its_challenges() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        headers = [("WWW-Authenticate", 'Bearer resource_metadata="x"'), ("WWW-Authenticate", "DPoP algs=ES256")]
        return httpx.Response(401, headers=[*headers, ("DPoP-Nonce", "n-1")], text="no")

    transport = HttpTransport(MCP, transport=httpx.MockTransport(handler))
    with pytest.raises(
        mcpfsm.TransportError,
        match=r"^HTTP 401 Unauthorized: the server requires authorization: pass auth= to Client\.http"
        r" \(mcpfsm\.OAuth\(\), ClientCredentials\(\.\.\.\), or a bearer token\) \(no\)$",
    ) as caught:
        await transport.send('{"jsonrpc":"2.0","id":1,"method":"tools/list"}')
    error = caught.value
    assert (error.status, error.www_authenticate, error.dpop_nonce) == (
        401,
        ('Bearer resource_metadata="x"', "DPoP algs=ES256"),
        "n-1",
    )


async def test_a_401_with_a_jsonrpc_body_is_raised_with_its_challenges() -> None:
    # A JSON-RPC error in a 401 answers no message: the transport raises the 401 as it raises a bare one (the
    # authorization layer turns either into a flow; without one, the caller gets the challenges).
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": -32001, "message": "Unauthorized"}}

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(401, headers={"WWW-Authenticate": "Bearer"}, json=body)

    transport = HttpTransport(MCP, transport=httpx.MockTransport(handler))
    refused = r"^HTTP 401 Unauthorized: the server requires authorization"
    with pytest.raises(mcpfsm.TransportError, match=refused) as caught:
        await transport.send('{"jsonrpc":"2.0","id":1,"method":"tools/list"}')
    assert (caught.value.status, caught.value.www_authenticate, caught.value.dpop_nonce) == (401, ("Bearer",), None)


async def test_credentials_are_asked_for_every_request_to_the_endpoint_and_sent() -> None:
    seen: list[tuple[str, str | None]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append((request.method, request.headers.get("authorization")))
        if request.method == "DELETE":
            return httpx.Response(405)
        return httpx.Response(202)

    credentials = Recorder()
    transport = HttpTransport(MCP, transport=httpx.MockTransport(handler), credentials=credentials)
    await transport.send('{"jsonrpc":"2.0","method":"notifications/initialized"}')
    await transport.end_session({"Mcp-Session-Id": "s"})
    assert credentials.asked == [("POST", MCP), ("DELETE", MCP)]
    assert seen == [("POST", "Bearer t0ken"), ("DELETE", "Bearer t0ken")]


# --- the authorization side's HTTP client -----------------------------------------------------------------


async def test_oauth_http_returns_redirects_unfollowed_and_bounds_bodies() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/moved":
            return httpx.Response(302, headers={"Location": "https://elsewhere.example/"})
        if request.url.path == "/big":
            return httpx.Response(200, content=b"x" * (MAX_BODY + 1))
        if request.url.path == "/down":
            raise httpx.ConnectError("connection refused")
        return httpx.Response(200, headers={"DPoP-Nonce": "n"}, content=b"{}")

    http = OAuthHttp(transport=httpx.MockTransport(handler))
    assert await http.fetch("GET", "https://as.example/moved", ()) == oauth.Answer(302, b"", None)
    assert await http.fetch("POST", "https://as.example/ok", (), b"a=b") == oauth.Answer(200, b"{}", "n")
    with pytest.raises(
        mcpfsm.TransportError, match=rf"^GET https://as.example/big: the answer is larger than {MAX_BODY} bytes$"
    ):
        await http.fetch("GET", "https://as.example/big", ())
    with pytest.raises(mcpfsm.TransportError, match=r"^GET https://as.example/down failed: connection refused$"):
        await http.fetch("GET", "https://as.example/down", ())
    await http.aclose()


# --- the driver against scripted answers ------------------------------------------------------------------


class Port:
    """The driver's port over a scripted answer per URL; records what was fetched."""

    def __init__(self, answers: dict[str, tuple[int, Any]]) -> None:
        self.answers = answers
        self.fetched: list[tuple[str, str]] = []
        self.audit = AuditBus()

    async def fetch(
        self, method: str, url: str, headers: Sequence[tuple[str, str]], body: bytes | None = None
    ) -> oauth.Answer:
        self.fetched.append((method, url))
        status, document = self.answers.get(url, (404, {}))
        return oauth.Answer(status, json.dumps(document).encode())

    async def authorize(self, url: str) -> str:
        raise AssertionError("no authorization expected")

    def now(self) -> float:
        return 1_800_000_000.0


def binding(credential: Any = None, *, pinned: bool = False) -> Binding:
    return Binding(credential or mcpfsm.OAuth(), mcp_url=MCP, pinned_modern=pinned, store=mcpfsm.MemoryTokenStore())


@pytest.mark.parametrize(
    ("answers", "fetched", "message"),
    [
        pytest.param(
            {PRM_URL: (503, {})},
            [PRM_URL],
            r"^discovering_resource: the protected resource metadata endpoint answered HTTP 503$",
            id="prm-5xx-raises",
        ),
        pytest.param(
            {PRM_URL: (429, {})},
            [PRM_URL],
            r"^discovering_resource: the protected resource metadata endpoint answered HTTP 429$",
            id="prm-429-raises",
        ),
        pytest.param(
            {
                PRM_URL: (301, {}),
                ROOT_PRM: (200, PRM),
                AS_URL: (200, {**METADATA, "code_challenge_methods_supported": []}),
            },
            [PRM_URL, ROOT_PRM, AS_URL],
            r"^discovering_issuer: the authorization server does not advertise PKCE S256$",
            id="prm-3xx-next-then-pkce-gate",
        ),
        pytest.param(
            {PRM_URL: (200, PRM), AS_URL: (200, {**METADATA, "token_endpoint": "http://as.example/token"})},
            [PRM_URL, AS_URL],
            r"^discovering_issuer: token_endpoint 'http://as.example/token' is not an https URL \(or http on a"
            r" loopback host\)$",
            id="plain-http-token-endpoint",
        ),
        pytest.param(
            {PRM_URL: (200, PRM), AS_URL: (500, {})},
            [PRM_URL, AS_URL],
            r"^discovering_issuer: the authorization server metadata endpoint answered HTTP 500$",
            id="metadata-5xx",
        ),
        pytest.param(
            {PRM_URL: (200, PRM)},
            [PRM_URL, AS_URL, "https://as.example/.well-known/openid-configuration"],
            r"^discovering_issuer: no authorization server metadata for issuer 'https://as.example'$",
            id="no-metadata",
        ),
        pytest.param(
            {PRM_URL: (200, PRM), AS_URL: (200, {**METADATA, "registration_endpoint": None})},
            [PRM_URL, AS_URL],
            r"^registering: 'https://as.example' offers no client registration and no credentials are configured"
            r" for it$",
            id="no-registration",
        ),
        pytest.param(
            {
                PRM_URL: (200, PRM),
                AS_URL: (200, METADATA),
                f"{AS}/register": (400, {"error": "invalid_client_metadata"}),
            },
            [PRM_URL, AS_URL, f"{AS}/register"],
            r"^registering: the registration endpoint answered HTTP 400 \(error='invalid_client_metadata'\)$",
            id="registration-refused",
        ),
    ],
)
async def test_the_driver_refuses(answers: dict[str, tuple[int, Any]], fetched: list[str], message: str) -> None:
    port = Port(answers)
    flow = AuthorizationFlow(port, binding(), Entry.unauthorized, www_authenticate=("Bearer",))
    with pytest.raises(mcpfsm.AuthorizationError, match=message):
        await flow.run()
    assert [url for _, url in port.fetched] == fetched


async def test_dpop_bound_tokens_required_and_a_bearer_token_answered_is_refused() -> None:
    answers = {
        PRM_URL: (200, {**PRM, "dpop_bound_access_tokens_required": True}),
        AS_URL: (200, METADATA),
        f"{AS}/token": (200, {"access_token": "t", "token_type": "Bearer"}),
    }
    port = Port(answers)
    credential = mcpfsm.ClientCredentials("c", client_secret="s", issuer=AS)
    flow = AuthorizationFlow(port, binding(credential), Entry.unauthorized, www_authenticate=("Bearer",))
    with pytest.raises(
        mcpfsm.AuthorizationError,
        match=r"^exchanging: the resource requires DPoP-bound tokens \(dpop_bound_access_tokens_required\) and the"
        r" token is not bound; use OAuth\(dpop=True\)$",
    ):
        await flow.run()


async def test_credentials_bound_to_another_issuer_never_leave() -> None:
    port = Port({PRM_URL: (200, PRM), AS_URL: (200, METADATA)})
    credential = mcpfsm.ClientCredentials("c", client_secret="s", issuer="https://other.example")
    flow = AuthorizationFlow(port, binding(credential), Entry.unauthorized, www_authenticate=("Bearer",))
    with pytest.raises(
        mcpfsm.AuthorizationError,
        match=r"^registering: the client credentials belong to 'https://other.example', not to 'https://as.example'$",
    ):
        await flow.run()
    assert port.fetched == [("GET", PRM_URL), ("GET", AS_URL)]


async def test_a_failing_authorize_callable_fails_the_flow_naming_its_type_only() -> None:
    # Its message may carry the redirect URL with the code in it: never in the error or an event.
    class Refusing(Port):
        async def authorize(self, url: str) -> str:
            raise RuntimeError("browser failed at http://localhost/callback?code=SECRET-CODE&state=x")

    port = Refusing({PRM_URL: (200, PRM), AS_URL: (200, {**METADATA, "client_id_metadata_document_supported": True})})
    credential = mcpfsm.OAuth(client_metadata_url="https://app.example/client.json")
    events: list[mcpfsm.CallEvent] = []
    port.audit = AuditBus(events.append)
    flow = AuthorizationFlow(port, binding(credential), Entry.unauthorized, www_authenticate=("Bearer",))
    with pytest.raises(mcpfsm.AuthorizationError, match=r"^authorizing: authorize raised RuntimeError$"):
        await flow.run()
    assert (events[-1].state, events[-1].error) == (
        "failed",
        {"type": "AuthorizationError", "code": None, "message": "authorizing: authorize raised RuntimeError"},
    )
    assert [event for event in events if "SECRET" in event.to_json()] == []


# --- stores ---------------------------------------------------------------------------------------------------


async def test_the_memory_store_keeps_copies() -> None:
    store = mcpfsm.MemoryTokenStore()
    value = {"a": 1}
    await store.set("k", value)
    value["a"] = 2
    got = await store.get("k")
    assert got == {"a": 1}
    assert got is not None
    got["a"] = 3
    assert await store.get("k") == {"a": 1}
    await store.delete("k")
    await store.delete("k")
    assert (await store.get("k"), repr(store)) == (None, "MemoryStore(0 entries)")


async def test_a_corrupt_file_store_reads_as_empty_and_is_replaced(
    tmp_path: Path, records: list[tuple[str, str]]
) -> None:
    path = tmp_path / "tokens.json"
    path.write_text("[not an object")
    store = mcpfsm.FileTokenStore(path)
    assert await store.get("k") is None
    await store.set("k", {"v": 1})
    assert json.loads(path.read_text()) == {"k": {"v": 1}}
    assert records == [("WARNING", f"the token store {path} is not a JSON object; it is treated as empty")] * 2


async def test_an_unwritable_file_store_warns_and_the_client_goes_on(
    tmp_path: Path, records: list[tuple[str, str]]
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    store = mcpfsm.FileTokenStore(blocker / "tokens.json")
    await store.set(tokens_key(AS, MCP, "oauth:x"), {"v": 1})
    path = re.escape(str(blocker / "tokens.json"))
    assert [level for level, _ in records] == ["WARNING", "WARNING"]
    assert re.fullmatch(rf"cannot read the token store {path}: Not a directory", records[0][1])
    assert re.fullmatch(rf"cannot write the token store {path}: .+", records[1][1])
    assert await store.get(tokens_key(AS, MCP, "oauth:x")) is None


async def test_concurrent_writes_to_one_file_store_keep_every_key(tmp_path: Path) -> None:
    store = mcpfsm.FileTokenStore(tmp_path / "tokens.json")
    async with trio.open_nursery() as nursery:
        for index in range(10):
            nursery.start_soon(store.set, f"k{index}", {"v": index})
    assert json.loads((tmp_path / "tokens.json").read_text()) == {f"k{i}": {"v": i} for i in range(10)}


@pytest.mark.parametrize(
    ("location", "expected"),
    [
        pytest.param("https://mcp.example/moved", "Bearer t0ken", id="same-origin"),
        pytest.param("https://elsewhere.example/mcp", None, id="other-origin"),
    ],
)
async def test_the_token_follows_a_redirect_only_within_the_endpoints_origin(
    location: str, expected: str | None
) -> None:
    seen: list[tuple[str, str | None]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append((str(request.url), request.headers.get("authorization")))
        if request.url.path == "/mcp" and request.url.host == "mcp.example":
            return httpx.Response(307, headers={"Location": location})
        return httpx.Response(202)

    credentials = Recorder()
    transport = HttpTransport(MCP, transport=httpx.MockTransport(handler), credentials=credentials)
    await transport.send('{"jsonrpc":"2.0","method":"notifications/initialized"}')
    assert seen == [(MCP, "Bearer t0ken"), (location, expected)]
    assert credentials.asked == [("POST", MCP)] + ([("POST", location)] if expected else [])


# --- no silent resend through the authorization layer ------------------------------------------------------


class LegacyProtectedServer:
    """A legacy MCP server behind client-credentials tokens, and its authorization server, in one handler.

    ``tools/call`` answers with an event stream cut after an event id; the resuming ``GET`` is refused with a
    401 challenge (the token "expired" meanwhile). Records every request as (HTTP method, JSON-RPC method).
    """

    def __init__(self) -> None:
        self.seen: list[tuple[str, str | None]] = []
        self.issued = 0

    def __call__(self, request: httpx.Request) -> httpx.Response:
        mcp = request.url.path == "/mcp"
        body = json.loads(request.content) if mcp and request.content else {}
        self.seen.append((request.method, body.get("method") if mcp else request.url.path))
        if request.url.host == "as.example":
            if request.url.path == "/token":
                self.issued += 1
                return httpx.Response(200, json={"access_token": f"tok-{self.issued}", "token_type": "Bearer"})
            return httpx.Response(200, json=METADATA)
        if request.url.path != "/mcp":
            return httpx.Response(200, json=PRM)
        challenge = {"WWW-Authenticate": f'Bearer resource_metadata="{PRM_URL}"'}
        if request.method == "GET" and "last-event-id" in request.headers:
            return httpx.Response(401, headers=challenge)
        if request.headers.get("authorization") is None:
            return httpx.Response(401, headers=challenge)
        if request.method == "DELETE":
            return httpx.Response(200)
        if request.method == "GET":
            return httpx.Response(405)
        if "id" not in body:
            return httpx.Response(202)
        if body["method"] == "initialize":
            result = {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}}
            return httpx.Response(200, json={"jsonrpc": "2.0", "id": body["id"], "result": result})
        cut = b"id: 1\ndata: \n\n"  # a priming event, then the stream ends before the response
        return httpx.Response(200, headers={"Content-Type": "text/event-stream"}, content=cut)


async def test_a_401_on_a_resuming_get_is_no_challenge_to_the_message_so_a_call_is_never_sent_twice() -> None:
    server = LegacyProtectedServer()
    mock = httpx.MockTransport(server)
    credential = mcpfsm.ClientCredentials("agent", client_secret="s", issuer=AS)

    async def no_wait(seconds: float) -> None:
        pass

    connection = HttpServer(url=MCP, http_transport=mock, auth=credential, sleep=no_wait, oauth_transport=mock)
    client = mcpfsm.Client(connection, protocol="2025-11-25")
    async with client:
        with pytest.raises(
            mcpfsm.TransportError, match=r"^could not resume the event stream: HTTP 401 Unauthorized$"
        ) as caught:
            await client.call_tool("echo", {})
    # The 401 answered the GET, not the POST: it starts no flow, and the call goes out once.
    assert (caught.value.status, caught.value.www_authenticate) == (None, ())
    assert server.issued == 1
    assert [step for step in server.seen if step[1] == "tools/call"] == [("POST", "tools/call")]
