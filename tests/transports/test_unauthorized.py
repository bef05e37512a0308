"""A bare HTTP 401 says what the server wants and how to give it, from Python and from the CLI.

A raw socket server answers every request with ``401`` and a Bearer challenge (RFC 9110 §15.5.2; MCP
2026-07-28 "Authorization"). With ``auth=`` credentials that run flows the 401 starts one instead
(tests/integration/test_authorization.py); these are the cases where nothing answers it.
"""

from __future__ import annotations

import re
import sys
from typing import Any, Final

import pytest
import trio

import mcpfsm
from tests.support.rawserver import HOST, Server, ok, serving
from tooling.processes import run_authserver

CHALLENGE: Final = [("WWW-Authenticate", 'Bearer realm="mcp"'), ("Content-Type", "text/plain")]
ASK: Final = (
    "the server requires authorization: pass auth= to Client.http (mcpfsm.OAuth(), ClientCredentials(...),"
    " or a bearer token)"
)
REFUSED: Final = "the server requires authorization and refused the credentials sent"


def unauthorized() -> Server:
    return Server(default=ok(b"no token", status=401, headers=CHALLENGE))


def url_of(server: Server) -> str:
    return f"http://{HOST}:{server.port}/mcp"


@pytest.mark.parametrize(
    ("options", "userinfo", "hint", "authorization"),
    [
        pytest.param({}, "", ASK, None, id="no-credentials"),
        pytest.param({"auth": "t0ken"}, "", REFUSED, "Bearer t0ken", id="static-token"),
        pytest.param({"headers": {"Authorization": "Bearer h"}}, "", REFUSED, "Bearer h", id="authorization-header"),
        pytest.param({}, "user:pw@", REFUSED, "Basic dXNlcjpwdw==", id="url-credentials"),
    ],
)
@pytest.mark.parametrize("protocol", ["auto", "2026-07-28", "2025-11-25"])
async def test_a_bare_401_says_the_server_requires_authorization(
    options: dict[str, Any], userinfo: str, hint: str, authorization: str | None, protocol: str
) -> None:
    async with serving(unauthorized()) as server:
        client = mcpfsm.Client.http(f"http://{userinfo}{HOST}:{server.port}/mcp", protocol=protocol, **options)
        with pytest.raises(mcpfsm.TransportError, match=rf"^HTTP 401 X: {re.escape(hint)} \(no token\)$") as caught:
            await client.tools()
        await client.aclose()

    assert (caught.value.status, caught.value.www_authenticate) == (401, ('Bearer realm="mcp"',))
    assert [seen.headers.get("authorization") for seen in server.seen] == [authorization]


@pytest.mark.parametrize(
    "options",
    [pytest.param(["--auth", "none"], id="auth-none"), pytest.param(["--token", "t0ken"], id="token")],
)
async def test_the_cli_says_to_log_in_or_pass_a_token(options: list[str]) -> None:
    async with serving(unauthorized()) as server:
        url = url_of(server)
        done = await trio.run_process(
            [sys.executable, "-m", "mcpfsm", "tools", url, *options], capture_stdout=True, capture_stderr=True,
            check=False,
        )

    assert (done.returncode, done.stdout, done.stderr.decode()) == (
        11,
        b"",
        f"mcpfsm: error: {url}: the server requires authorization (HTTP 401) and the request carried none it"
        f" accepts: run `mcpfsm login {url}` and use --auth oauth (the default), or pass --token TOKEN\n",
    )


async def test_a_401_whose_body_is_a_json_rpc_error_keeps_its_challenge() -> None:
    # The project's own authorization server answers with -32001 "Unauthorized" in the body, as many servers do:
    # still a 401 that nothing answered, with its WWW-Authenticate, never an RpcError without it.
    with run_authserver({}) as server:
        for protocol in ("auto", "2026-07-28", "2025-11-25"):
            client = mcpfsm.Client.http(server.mcp_url, protocol=protocol)
            with pytest.raises(mcpfsm.TransportError, match=rf"^HTTP 401 Unauthorized: {re.escape(ASK)} ") as caught:
                await client.tools()
            await client.aclose()
            assert caught.value.status == 401
            [challenge] = caught.value.www_authenticate
            assert challenge.startswith("Bearer ") and "resource_metadata=" in challenge
        for options in (["--auth", "none"], ["--token", "t0ken"]):
            done = await trio.run_process(
                [sys.executable, "-m", "mcpfsm", "tools", server.mcp_url, *options],
                capture_stdout=True, capture_stderr=True, check=False,
            )
            assert (done.returncode, done.stdout, done.stderr.decode()) == (
                11,
                b"",
                f"mcpfsm: error: {server.mcp_url}: the server requires authorization (HTTP 401) and the request carried"
                f" none it accepts: run `mcpfsm login {server.mcp_url}` and use --auth oauth (the default), or pass"
                " --token TOKEN\n",
            )
