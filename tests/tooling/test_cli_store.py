"""``mcpfsm login --store`` and ``mcpfsm store check``, run for real: the test authorization server, a real
``redis-server`` (tests/support/redisserver.py), and a library client that uses the login the command stored."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import trio

import mcpfsm
from mcpfsm._core.credentials import credential_holder, registration_key, tokens_key
from mcpfsm._tooling.cli import Exit
from tests.support.ports import reserved_port
from tests.support.redisserver import RedisServer
from tests.tooling.test_cli_auth import command, login_with_browser
from tooling.processes import RunningAuthServer


async def never(url: str) -> str:
    raise AssertionError("the worker was asked to log in")


def test_one_login_in_redis_serves_a_worker_and_store_check_shows_it_without_secrets(
    authserver: RunningAuthServer, redis_server: RedisServer, redis_prefix: str, tmp_path: Path
) -> None:
    authserver.configure({"challenge_scope": "mcp:basic"})
    with reserved_port() as port:
        redirect = f"http://127.0.0.1:{port}/callback"
        code, out, lines, _ = login_with_browser(
            tmp_path,
            authserver.mcp_url,
            "--redirect-uri",
            redirect,
            "--store",
            redis_server.url,
            "--prefix",
            redis_prefix,
        )
    assert code == Exit.ok, lines
    assert out == (
        f"logged in to {authserver.mcp_url} (issuer {authserver.base_url}, scopes: mcp:basic); tokens stored in"
        f" {redis_server.url} (prefix {redis_prefix})\n"
    )
    assert not (tmp_path / "mcpfsm" / "tokens.json").exists()

    async def worker() -> tuple[str, dict[str, object] | None]:
        async with mcpfsm.RedisStore(redis_server.url, prefix=redis_prefix) as store:
            auth = mcpfsm.OAuth(redirect_uri=redirect, authorize=never)
            async with mcpfsm.Client.http(authserver.mcp_url, auth=auth, store=store) as client:
                text = (await client.call_tool("test-tool", {})).text
            return text, await store.get(tokens_key(authserver.base_url, authserver.mcp_url, credential_holder(auth)))

    authserver.clear_log()
    text, tokens = trio.run(worker)
    assert text == "test-tool called"
    # The worker sent the stored token straight away: no authorization server request at all.
    assert {entry["path"] for entry in authserver.log()} == {"/mcp"}
    assert tokens is not None
    secret = str(tokens["access_token"])

    checked = command(
        tmp_path, "store", "check", redis_server.url, "--prefix", redis_prefix, "--server", authserver.mcp_url
    )
    assert (checked.returncode, checked.stderr) == (0, "")
    rows = [line.split("  ") for line in checked.stdout.splitlines()]
    kinds = [row[0].strip() for row in rows]
    assert kinds == ["KIND", "binding", "registration", "tokens"]
    assert "access token expires in" in checked.stdout and "no refresh token, scopes: mcp:basic" in checked.stdout
    assert secret not in checked.stdout
    registration = trio.run(_registration, redis_server.url, redis_prefix, authserver.base_url)
    assert str(registration["client_id"]) not in checked.stdout

    logged_out = command(tmp_path, "logout", authserver.mcp_url, "--store", redis_server.url, "--prefix", redis_prefix)
    assert (logged_out.returncode, logged_out.stdout) == (
        0,
        f"logged out of {authserver.mcp_url}: its tokens were removed from {redis_server.url} "
        f"(prefix {redis_prefix})\n",
    )
    left = command(tmp_path, "store", "check", redis_server.url, "--prefix", redis_prefix, "--json")
    assert [entry["kind"] for entry in json.loads(left.stdout)] == ["registration"]


async def _registration(url: str, prefix: str, issuer: str) -> dict[str, object]:
    async with mcpfsm.RedisStore(url, prefix=prefix) as store:
        value = await store.get(registration_key(issuer, credential_holder(mcpfsm.OAuth())))
    assert value is not None
    return value


def _fill(store: mcpfsm.FileStore | mcpfsm.FileTokenStore, now: float) -> None:
    async def fill() -> None:
        await store.set(
            "binding https://mcp.example/mcp?key=s3cret", {"issuer": "https://as.example", "resource": None}
        )
        await store.set(
            "tokens https://as.example",
            {
                "access_token": "at-s3cret",
                "token_type": "Bearer",
                "refresh_token": "rt-s3cret",
                "expires_at": now + 5.5 * 3600,
                "scopes": ["a", "b"],
                "issuer": "https://as.example",
                "resource": None,
            },
        )
        await store.set(
            "registration https://as.example",
            {
                "issuer": "https://as.example",
                "client_id": "client-s3cret",
                "client_secret": "cs-s3cret",
                "token_endpoint_auth_method": "client_secret_basic",
            },
        )
        await store.set("listing https://mcp.example/mcp tools/list", {"result": {"tools": []}, "etag": "x"})

    trio.run(fill)


@pytest.mark.parametrize("kind", ["directory", "file-url", "token-file"])
def test_store_check_lists_a_file_store_without_secrets(kind: str, tmp_path: Path) -> None:
    now = time.time()
    if kind == "token-file":
        _fill(mcpfsm.FileTokenStore(tmp_path / "tokens.json"), now)
        where = str(tmp_path / "tokens.json")
    else:
        _fill(mcpfsm.FileStore(tmp_path / "store"), now)
        where = str(tmp_path / "store") if kind == "directory" else f"file://{tmp_path / 'store'}"
    checked = command(tmp_path, "store", "check", where, "--json")
    assert (checked.returncode, checked.stderr) == (0, "")
    listed = json.loads(checked.stdout)
    assert listed == [
        {
            "kind": "binding",
            "key": "https://mcp.example/mcp?…",
            "expires": "never",
            "what": "issuer https://as.example, resource -",
        },
        {
            "kind": "listing",
            "key": "https://mcp.example/mcp tools/list",
            "expires": "never",
            "what": "fields: etag, result",
        },
        {
            "kind": "registration",
            "key": "https://as.example",
            "expires": "never",
            "what": "client registered (confidential, client_secret_basic)",
        },
        {
            "kind": "tokens",
            "key": "https://as.example",
            "expires": "never",
            "what": "access token expires in 5 h, refresh token held, scopes: a b",
        },
    ]
    assert "s3cret" not in checked.stdout


def test_store_check_of_an_empty_store_and_of_one_server(tmp_path: Path) -> None:
    empty = command(tmp_path, "store", "check", str(tmp_path / "none"))
    assert (empty.returncode, empty.stdout) == (0, f"{tmp_path / 'none'}: nothing stored\n")
    _fill(mcpfsm.FileStore(tmp_path / "store"), time.time())
    other = command(tmp_path, "store", "check", str(tmp_path / "store"), "--server", "https://other.example/mcp")
    assert other.stdout == f"{tmp_path / 'store'}: nothing stored for https://other.example/mcp\n"


@pytest.mark.parametrize(
    ("store", "code", "message"),
    [
        pytest.param(
            "http://u:pw@h/x",
            Exit.usage,
            "a store is redis://, rediss://, redis+sentinel://, redis+cluster://, file:///DIR or a path,"
            " got 'http://u:***@h/x'",
            id="scheme",
        ),
        pytest.param(
            "redis+sentinel://:pw@h:1",
            Exit.usage,
            "the Sentinel URL 'redis+sentinel://:***@h:1' names no service: redis+sentinel://HOST:PORT/SERVICE",
            id="sentinel-without-service",
        ),
    ],
)
def test_a_bad_store_is_one_error_line_without_its_password(
    store: str, code: Exit, message: str, tmp_path: Path
) -> None:
    done = command(tmp_path, "store", "check", store)
    assert (done.returncode, done.stdout, done.stderr) == (code, "", f"mcpfsm: error: {message}\n")


def test_a_redis_store_nobody_answers_is_unreachable(tmp_path: Path) -> None:
    with reserved_port() as port:
        done = command(tmp_path, "store", "check", f"redis://:pw@127.0.0.1:{port}/0")
    assert (done.returncode, done.stdout, done.stderr) == (
        Exit.unreachable,
        "",
        f"mcpfsm: error: cannot use the store redis://:***@127.0.0.1:{port}/0 (prefix mcpfsm:): ConnectionError\n",
    )


def test_login_to_a_store_nobody_answers_fails_before_the_login(authserver: RunningAuthServer, tmp_path: Path) -> None:
    authserver.configure({})
    authserver.clear_log()
    with reserved_port() as port:
        done = command(tmp_path, "login", authserver.mcp_url, "--no-browser", "--store", f"redis://127.0.0.1:{port}/0")
    assert (done.returncode, done.stdout, done.stderr) == (
        Exit.unreachable,
        "",
        f"mcpfsm: error: cannot use the store redis://127.0.0.1:{port}/0 (prefix mcpfsm:): ConnectionError\n",
    )
    assert authserver.log() == []
