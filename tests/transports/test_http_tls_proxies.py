"""TLS trust, client certificates and proxies of the default connection pool, against raw servers on 127.0.0.1.

``verify=``, ``cert=``, ``proxy=`` and ``trust_env=`` mean what they mean to ``httpx.AsyncClient``:
``SSL_CERT_FILE``/``SSL_CERT_DIR`` and ``HTTP_PROXY``/``HTTPS_PROXY``/``ALL_PROXY``/``NO_PROXY`` are
honoured with ``trust_env`` (the default); an ``https://`` origin behind a proxy is reached through a
``CONNECT`` tunnel. A caller's ``http_transport=`` brings its own TLS and proxy settings, so these
keywords are refused with it. The CLI's ``--cacert`` and ``--cert`` are tested here too.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import ssl
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Final

import httpx
import pytest
import trio

import mcpfsm
from tests.support.rawserver import HOST, Server, Tunnel, rpc, serving, tls_for, tunneling

MODERN: Final = "2026-07-28"
PROXY_VARIABLES: Final = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")
VERIFY_FAILED: Final = r"^POST to MCP server failed: .*\[SSL: CERTIFICATE_VERIFY_FAILED\] certificate verify failed.*$"


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No proxy or CA variables from the machine running the tests."""
    for name in (*PROXY_VARIABLES, "SSL_CERT_FILE", "SSL_CERT_DIR"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


@pytest.fixture
def ca_file(ca: Any, tmp_path: Path) -> str:
    path = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(path))
    return str(path)


@asynccontextmanager
async def tls_server(ca: Any, *, client_ca: Any = None) -> AsyncIterator[Server]:
    context = tls_for(ca)
    if client_ca is not None:
        client_ca.configure_trust(context)
        context.verify_mode = ssl.CERT_REQUIRED
    async with serving(Server(default=rpc()), tls=context) as server:
        yield server


async def ping(url: str, **options: Any) -> None:
    async with mcpfsm.Client.http(url, protocol=MODERN, **options) as client:
        await client.request("ping")


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


# --- verify ---------------------------------------------------------------------------------------------------------


async def test_the_default_trust_refuses_an_unknown_ca(ca: Any) -> None:
    async with tls_server(ca) as server:
        with pytest.raises(mcpfsm.TransportError, match=VERIFY_FAILED):
            await ping(f"https://{HOST}:{server.port}/mcp")
        assert server.seen == []


@pytest.mark.parametrize("kind", ["path", "pathlib", "context", "off"])
async def test_verify_takes_a_ca_bundle_path_a_context_or_false(kind: str, ca: Any, ca_file: str) -> None:
    context = ssl.create_default_context()
    ca.configure_trust(context)
    verify = {"path": ca_file, "pathlib": Path(ca_file), "context": context, "off": False}[kind]
    async with tls_server(ca) as server:
        await ping(f"https://{HOST}:{server.port}/mcp", verify=verify)
        await ping(f"https://{HOST}:{server.port}/mcp", verify=verify)
    assert [json.loads(seen.body)["method"] for seen in server.seen] == ["ping", "ping"]


async def test_ssl_cert_file_is_honoured_with_trust_env_only(
    ca: Any, ca_file: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", ca_file)
    async with tls_server(ca) as server:
        await ping(f"https://{HOST}:{server.port}/mcp")
        with pytest.raises(mcpfsm.TransportError, match=VERIFY_FAILED):
            await ping(f"https://{HOST}:{server.port}/mcp", trust_env=False)
    assert len(server.seen) == 1


async def test_ssl_cert_dir_is_honoured_with_trust_env(
    ca: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = tmp_path / "certs"
    directory.mkdir()
    ca.cert_pem.write_to_path(str(directory / "trustme.pem"))
    openssl = shutil.which("openssl")
    assert openssl is not None, "the SSL_CERT_DIR test needs the openssl command (it names the hashed links)"
    subprocess.run([openssl, "rehash", str(directory)], check=True, capture_output=True)
    monkeypatch.setenv("SSL_CERT_DIR", str(directory))
    async with tls_server(ca) as server:
        await ping(f"https://{HOST}:{server.port}/mcp")
    assert len(server.seen) == 1


async def test_a_missing_ca_bundle_is_refused_when_the_client_is_made(tmp_path: Path) -> None:
    missing = tmp_path / "nope.pem"
    with pytest.raises(
        mcpfsm.TransportError, match=rf"^cannot load the CA certificates in '{missing}': No such file or directory$"
    ):
        mcpfsm.Client.http("https://127.0.0.1/mcp", verify=str(missing))


# --- cert (mutual TLS) ------------------------------------------------------------------------------------------------


@pytest.fixture
def client_pem(ca: Any, tmp_path: Path) -> tuple[str, str, str]:
    """A client certificate issued by ``ca``: (key and chain in one file, chain only, key only)."""
    issued = ca.issue_cert("client@mcpfsm.test")
    both, chain, key = tmp_path / "client.pem", tmp_path / "client.crt", tmp_path / "client.key"
    issued.private_key_and_cert_chain_pem.write_to_path(str(both))
    chain.write_bytes(b"".join(blob.bytes() for blob in issued.cert_chain_pems))
    issued.private_key_pem.write_to_path(str(key))
    return str(both), str(chain), str(key)


@pytest.mark.parametrize("form", ["one-file", "pair"])
async def test_a_client_certificate_is_presented(
    form: str, ca: Any, ca_file: str, client_pem: tuple[str, str, str]
) -> None:
    both, chain, key = client_pem
    cert = both if form == "one-file" else (chain, key)
    async with tls_server(ca, client_ca=ca) as server:
        with pytest.raises(mcpfsm.TransportError, match=r"^POST to MCP server failed: "):
            await ping(f"https://{HOST}:{server.port}/mcp", verify=ca_file)
        await ping(f"https://{HOST}:{server.port}/mcp", verify=ca_file, cert=cert)
    assert [json.loads(seen.body)["method"] for seen in server.seen] == ["ping"]


async def test_tls_options_with_a_callers_transport_are_refused() -> None:
    message = r"^verify, cert and proxy configure mcpfsm's own connection layer; configure them on the http_transport$"
    for options in ({"verify": False}, {"cert": "client.pem"}, {"proxy": "http://proxy.test:3128"}):
        with pytest.raises(ValueError, match=message):
            mcpfsm.Client.http(
                "https://127.0.0.1/mcp", http_transport=httpx.MockTransport(lambda r: httpx.Response(500)), **options
            )


# --- proxies --------------------------------------------------------------------------------------------------------


async def test_http_proxy_from_the_environment_carries_http_requests_in_absolute_form(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with serving(Server(default=rpc())) as proxy:
        monkeypatch.setenv("HTTP_PROXY", f"http://pu:p%40ss@{HOST}:{proxy.port}")
        # mcp.test does not resolve: only the proxy can have carried these requests.
        async with mcpfsm.Client.http("http://alice:pw@mcp.test:8000/mcp?x=1", protocol=MODERN) as client:
            await client.request("ping")
            await client.request("ping")

    assert [seen.request_line for seen in proxy.seen] == ["POST http://mcp.test:8000/mcp?x=1 HTTP/1.1"] * 2
    assert [
        {name: seen.headers.get(name) for name in ("host", "proxy-authorization", "authorization")}
        for seen in proxy.seen
    ] == [
        {"host": "mcp.test:8000", "proxy-authorization": basic("pu", "p@ss"), "authorization": basic("alice", "pw")}
    ] * 2
    assert [seen.connection for seen in proxy.seen] == [1, 1]


@pytest.mark.parametrize(
    ("environment", "options", "through_proxy"),
    [
        pytest.param({"HTTP_PROXY": "{proxy}"}, {}, True, id="http-proxy"),
        pytest.param({"ALL_PROXY": "{proxy}"}, {}, True, id="all-proxy"),
        pytest.param({"HTTPS_PROXY": "{proxy}"}, {}, False, id="https-proxy-only-for-https"),
        pytest.param({"HTTP_PROXY": "{proxy}", "NO_PROXY": "localhost,127.0.0.1"}, {}, False, id="no-proxy"),
        pytest.param({"http_proxy": "{proxy}", "no_proxy": "*"}, {}, False, id="no-proxy-star"),
        pytest.param({"HTTP_PROXY": "{proxy}"}, {"trust_env": False}, False, id="trust-env-off"),
        pytest.param({"NO_PROXY": "127.0.0.1"}, {"proxy": "{proxy}"}, True, id="explicit-beats-no-proxy"),
        pytest.param({}, {"proxy": "{proxy}", "trust_env": False}, True, id="explicit-without-env"),
    ],
)
async def test_which_requests_go_through_the_proxy(
    environment: dict[str, str], options: dict[str, Any], through_proxy: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with serving(Server(default=rpc())) as proxy, serving(Server(default=rpc())) as origin:
        for name, value in environment.items():
            monkeypatch.setenv(name, value.format(proxy=f"http://{HOST}:{proxy.port}"))
        chosen = {
            k: v.format(proxy=f"http://{HOST}:{proxy.port}") if isinstance(v, str) else v for k, v in options.items()
        }
        await ping(f"http://{HOST}:{origin.port}/mcp", **chosen)

    target = f"http://{HOST}:{origin.port}/mcp" if through_proxy else "/mcp"
    seen_by = proxy if through_proxy else origin
    assert ([s.request_line for s in proxy.seen], [s.request_line for s in origin.seen]) == (
        [f"POST {target} HTTP/1.1"] if through_proxy else [],
        [] if through_proxy else [f"POST {target} HTTP/1.1"],
    )
    assert seen_by.seen[0].headers["host"] == f"{HOST}:{origin.port}"


async def test_https_through_a_proxy_uses_one_connect_tunnel_for_kept_alive_requests(
    ca: Any, ca_file: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with tls_server(ca) as origin, tunneling(Tunnel()) as proxy:
        monkeypatch.setenv("HTTPS_PROXY", f"http://pu:pw@{HOST}:{proxy.port}")
        async with mcpfsm.Client.http(f"https://{HOST}:{origin.port}/mcp", protocol=MODERN, verify=ca_file) as client:
            await client.request("ping")
            await client.request("ping")

    authority = f"{HOST}:{origin.port}".encode()
    assert proxy.heads == [
        b"CONNECT %s HTTP/1.1\r\nHost: %s\r\nProxy-Authorization: %s\r\n\r\n"
        % (authority, authority, basic("pu", "pw").encode())
    ]
    # Inside the tunnel: an origin-form request, and the proxy's credentials stay with the proxy.
    assert [(seen.connection, seen.request_line) for seen in origin.seen] == [(1, "POST /mcp HTTP/1.1")] * 2
    assert [seen.headers.get("proxy-authorization") for seen in origin.seen] == [None, None]


async def test_an_https_proxy_is_spoken_to_over_tls_and_tunnels_tls_inside(ca: Any, ca_file: str) -> None:
    async with tls_server(ca) as origin, tunneling(Tunnel(), tls=tls_for(ca)) as proxy:
        await ping(f"https://{HOST}:{origin.port}/mcp", verify=ca_file, proxy=f"https://{HOST}:{proxy.port}")

    authority = f"{HOST}:{origin.port}".encode()
    assert proxy.heads == [b"CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (authority, authority)]
    assert [seen.request_line for seen in origin.seen] == ["POST /mcp HTTP/1.1"]


async def test_a_proxy_that_refuses_the_tunnel_is_a_transport_error(ca: Any, ca_file: str) -> None:
    async with tls_server(ca) as origin, tunneling(Tunnel(refuse=407)) as proxy:
        with pytest.raises(
            mcpfsm.TransportError,
            match=rf"^POST to MCP server failed: the proxy refused to open a tunnel to {HOST}:{origin.port}:"
            r" HTTP 407 Refused$",
        ):
            await ping(f"https://{HOST}:{origin.port}/mcp", verify=ca_file, proxy=f"http://{HOST}:{proxy.port}")
    assert origin.seen == []


@pytest.mark.parametrize(
    ("proxy", "message"),
    [
        pytest.param(
            "socks5://127.0.0.1:1080",
            r"^invalid proxy URL 'socks5://127\.0\.0\.1:1080': expected an absolute http:// or https:// URL$",
            id="socks",
        ),
        pytest.param(
            "http://u:secret@127.0.0.1:99999",
            r"^invalid proxy URL 'http://127\.0\.0\.1:99999': port 99999 is not between 1 and 65535$",
            id="port-without-credentials-shown",
        ),
    ],
)
def test_a_proxy_mcpfsm_cannot_use_is_refused_when_the_client_is_made(proxy: str, message: str) -> None:
    with pytest.raises(mcpfsm.TransportError, match=message):
        mcpfsm.Client.http("http://127.0.0.1:8000/mcp", proxy=proxy)


# --- the CLI: --cacert, --cert, and a URL it cannot use -------------------------------------------------------------


async def mcpfsm_command(*args: str) -> tuple[int, str, str]:
    done = await trio.run_process(
        [sys.executable, "-m", "mcpfsm", *args], capture_stdout=True, capture_stderr=True, check=False
    )
    return done.returncode, done.stdout.decode(), done.stderr.decode()


async def test_the_cli_trusts_cacert_and_presents_cert(ca: Any, ca_file: str, client_pem: tuple[str, str, str]) -> None:
    async with serving(Server(default=rpc({"tools": []})), tls=tls_for(ca)) as server:
        url = f"https://{HOST}:{server.port}/mcp"
        refused = await mcpfsm_command("tools", url, "--protocol", MODERN, "--json")
        trusted = await mcpfsm_command("tools", url, "--protocol", MODERN, "--json", "--cacert", ca_file)
    assert refused[0] == 4 and "CERTIFICATE_VERIFY_FAILED" in refused[2]
    assert (trusted[0], json.loads(trusted[1]), trusted[2]) == (
        0,
        {"protocol": MODERN, "tools": [], "mirrored": {}, "excluded": []},
        "",
    )

    async with serving(Server(default=rpc({"tools": []})), tls=_mutual(ca)) as server:
        url = f"https://{HOST}:{server.port}/mcp"
        mutual = await mcpfsm_command(
            "tools", url, "--protocol", MODERN, "--json", "--cacert", ca_file, "--cert", client_pem[0]
        )
    assert (mutual[0], mutual[2]) == (0, "")


async def test_login_takes_cacert_cert_and_header(
    ca: Any, ca_file: str, client_pem: tuple[str, str, str], tmp_path: Path
) -> None:
    # A server that asks for no authorization: login connects (over mutual TLS, with the header) and says so.
    discover = rpc({"supportedVersions": [MODERN], "capabilities": {}})
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path), "PYTHONIOENCODING": "utf-8"}
    async with serving(Server(default=discover), tls=_mutual(ca)) as server:
        url = f"https://{HOST}:{server.port}/mcp"
        options = ["--cacert", ca_file, "--cert", client_pem[0], "--header", "X-Tenant: acme", "--no-browser"]
        done = await trio.run_process(
            [sys.executable, "-m", "mcpfsm", "login", url, *options],
            capture_stdout=True,
            capture_stderr=True,
            check=False,
            env=env,
        )
    assert (done.returncode, done.stdout.decode(), done.stderr.decode()) == (
        0,
        f"{url}: no login needed (the server accepted the stored token, or asks for none)\n",
        "",
    )
    assert [(seen.request_line, seen.headers["x-tenant"]) for seen in server.seen] == [("POST /mcp HTTP/1.1", "acme")]


def _mutual(ca: Any) -> ssl.SSLContext:
    context = tls_for(ca)
    ca.configure_trust(context)
    context.verify_mode = ssl.CERT_REQUIRED
    return context


@pytest.mark.parametrize(
    ("args", "code", "stderr"),
    [
        pytest.param(
            ["tools", "http://127.0.0.1:99999/mcp"],
            3,
            "mcpfsm: error: invalid MCP server URL 'http://127.0.0.1:99999/mcp':"
            " port 99999 is not between 1 and 65535\n",
            id="port-out-of-range",
        ),
        pytest.param(
            ["tools", "https://127.0.0.1:1/mcp", "--cacert", "/nonexistent/ca.pem"],
            2,
            "mcpfsm: error: cannot load the CA certificates in '/nonexistent/ca.pem': No such file or directory"
            " (--cacert and --cert take PEM files)\n",
            id="missing-cacert",
        ),
        pytest.param(
            ["tools", "--stdio", "server", "--cert", "client.pem"],
            2,
            "mcpfsm: error: --cert applies to HTTP servers only, not to --stdio\n",
            id="cert-with-stdio",
        ),
    ],
)
async def test_cli_usage_and_url_errors(args: list[str], code: int, stderr: str) -> None:
    assert await mcpfsm_command(*args) == (code, "", stderr)


async def test_the_cli_never_shows_credentials_from_the_url() -> None:
    async with serving(Server()) as server:
        port = server.port
    code, stdout, stderr = await mcpfsm_command("tools", f"http://alice:s3cret@127.0.0.1:{port}/mcp")
    assert (code, stdout) == (4, "")
    # The URL shown is the one without its credentials, named once by the connection error.
    assert stderr.startswith("mcpfsm: error: POST to MCP server failed: cannot connect to ")
    assert stderr.count(f"http://127.0.0.1:{port}/mcp") == 1
    assert "s3cret" not in stderr and "alice" not in stderr
