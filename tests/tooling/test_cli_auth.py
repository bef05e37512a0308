"""``mcpfsm login`` / ``logout`` and ``--auth``, run for real against the test authorization server.

The test is the user's browser: it reads the login URL the command prints on stderr (its readiness signal),
fetches it following redirects, which lands on the command's loopback listener, and the command finishes.
Every run gets its own configuration directory (``XDG_CONFIG_HOME``), so no real tokens are touched.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

import mcpfsm
from mcpfsm._core.credentials import credential_holder
from mcpfsm._tooling.cli import Exit
from tests.support.clirun import background, finished, line_within
from tests.support.peer.fixtures import REPO_ROOT
from tests.support.ports import reserved_port
from tooling.processes import RunningAuthServer


def environment(config: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONIOENCODING": "utf-8", "XDG_CONFIG_HOME": str(config)}


def command(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcpfsm", *args],
        cwd=REPO_ROOT,
        env=environment(config),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def login_with_browser(config: Path, *args: str) -> tuple[int, str, list[str], dict[str, Any]]:
    """Run ``mcpfsm login`` and play the browser; return its exit code, stdout, stderr lines and the page."""
    lines: list[str] = []
    page: dict[str, Any] = {}
    argv = [sys.executable, "-m", "mcpfsm", "login", *args, "--no-browser"]
    with background(argv, env=environment(config), stdout=subprocess.PIPE, stderr=subprocess.PIPE) as process:
        # The URL line follows the "log in" line; each read is bounded.
        while line := line_within(process.stderr):
            lines.append(line.rstrip("\n"))
            if line.startswith("  http"):
                answer = httpx.get(line.strip(), follow_redirects=True, timeout=30)
                page = {"status": answer.status_code, "text": answer.text}
                break
        code, out, err = finished(process)
        lines.extend(err.splitlines())
    return code, out, lines, page


def test_login_stores_tokens_that_every_command_reuses_and_logout_forgets(
    authserver: RunningAuthServer, tmp_path: Path
) -> None:
    authserver.configure({"challenge_scope": "mcp:basic"})
    with reserved_port() as port:
        redirect = f"http://127.0.0.1:{port}/callback"
        code, out, lines, page = login_with_browser(tmp_path, authserver.mcp_url, "--redirect-uri", redirect)
    assert code == Exit.ok, lines
    tokens = tmp_path / "mcpfsm" / "tokens.json"
    assert (
        out
        == f"logged in to {authserver.mcp_url} (issuer {authserver.base_url}, scopes: mcp:basic); tokens stored in "
        f"{tokens}\n"
    )
    assert lines[0] == f"mcpfsm: log in to authorize access (waiting up to 300 s for {redirect}):"
    assert lines[1].startswith(f"  {authserver.base_url}/authorize?response_type=code&client_id=client-")
    assert lines[2:] == ["mcpfsm: waiting for the browser (up to 300 s; Ctrl-C to give up)"]
    assert page == {
        "status": 200,
        "text": "<!doctype html><title>mcpfsm</title><p>mcpfsm received the authorization. You can close this"
        " window.</p>\n",
    }
    assert stat.S_IMODE(tokens.stat().st_mode) == 0o600
    stored = json.loads(tokens.read_text())
    holder = credential_holder(mcpfsm.OAuth())
    assert sorted(stored) == [
        f"binding {authserver.mcp_url} {holder}",
        f"registration {authserver.base_url} {holder}",
        f"tokens {authserver.base_url} {authserver.mcp_url} {holder}",
    ]
    paths = [entry["path"] for entry in authserver.log()]
    assert paths.count("/authorize") == 1

    authserver.clear_log()
    listed = command(tmp_path, "tools", authserver.mcp_url, "--json")
    assert (listed.returncode, json.loads(listed.stdout)["tools"][0]["name"], listed.stderr) == (0, "test-tool", "")
    assert [entry["path"] for entry in authserver.log()] == ["/mcp", "/mcp"]
    token = stored[f"tokens {authserver.base_url} {authserver.mcp_url} {holder}"]["access_token"]
    assert {entry["headers"]["authorization"] for entry in authserver.log()} == {f"Bearer {token}"}

    again = command(tmp_path, "login", authserver.mcp_url)
    assert (again.returncode, again.stdout) == (
        0,
        f"{authserver.mcp_url}: no login needed (the server accepted the stored token, or asks for none)\n",
    )

    out_run = command(tmp_path, "logout", authserver.mcp_url)
    assert (out_run.returncode, out_run.stdout) == (
        0,
        f"logged out of {authserver.mcp_url}: its tokens were removed from {tokens}\n",
    )
    assert sorted(json.loads(tokens.read_text())) == [f"registration {authserver.base_url} {holder}"]
    logged_out = command(tmp_path, "logout", authserver.mcp_url).stdout
    assert logged_out == f"{authserver.mcp_url}: no tokens stored in {tokens}\n"

    refused = command(tmp_path, "tools", authserver.mcp_url, "--auth", "none")
    # The server's 401 carries a JSON-RPC error (-32001): still the 401 docs/authorization.md describes.
    assert (refused.returncode, refused.stderr) == (
        Exit.unauthorized,
        f"mcpfsm: error: {authserver.mcp_url}: the server requires authorization (HTTP 401) and the request"
        f" carried none it accepts: run `mcpfsm login {authserver.mcp_url}` and use --auth oauth (the default),"
        " or pass --token TOKEN\n",
    )


def test_a_login_nobody_completes_times_out_with_one_line(authserver: RunningAuthServer, tmp_path: Path) -> None:
    authserver.configure({})
    with reserved_port() as port:
        redirect = f"http://127.0.0.1:{port}/callback"
        run = command(
            tmp_path, "login", authserver.mcp_url, "--no-browser", "--redirect-uri", redirect, "--login-timeout", "1"
        )
    assert run.returncode == Exit.unauthorized
    assert run.stderr.splitlines()[2:] == [
        "mcpfsm: waiting for the browser (up to 1 s; Ctrl-C to give up)",
        f"mcpfsm: error: authorization failed: authorizing: nobody completed the login within 1 s (the browser never"
        f" came back to {redirect})",
    ]
    assert (
        not (tmp_path / "mcpfsm" / "tokens.json").exists()
        or "tokens" not in (tmp_path / "mcpfsm" / "tokens.json").read_text()
    )


def test_client_credentials_from_the_command_line(authserver: RunningAuthServer, tmp_path: Path) -> None:
    authserver.configure({"client_credentials": {"client_id": "agent", "client_secret": "agent-secret"}})
    env_run = subprocess.run(
        [
            sys.executable,
            "-m",
            "mcpfsm",
            "tools",
            authserver.mcp_url,
            "--auth",
            "client-credentials",
            "--client-id",
            "agent",
            "--json",
        ],
        cwd=REPO_ROOT,
        env={**environment(tmp_path), "MCPFSM_CLIENT_SECRET": "agent-secret"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (env_run.returncode, env_run.stderr) == (0, "")
    token = [entry for entry in authserver.log() if entry["path"] == "/token"]
    assert [entry["form"]["grant_type"] for entry in token] == ["client_credentials"]
    usage = command(tmp_path, "tools", authserver.mcp_url, "--auth", "client-credentials")
    assert (usage.returncode, usage.stderr) == (
        Exit.usage,
        "mcpfsm: error: --auth client-credentials needs --client-id\n",
    )


def _issued_token(authserver: RunningAuthServer) -> str:
    """An access token of the test server's, fetched as a headless agent would (the user's own token)."""
    authserver.configure({"client_credentials": {"client_id": "agent", "client_secret": "agent-secret"}})
    answer = httpx.post(
        f"{authserver.base_url}/token",
        data={"grant_type": "client_credentials", "resource": authserver.mcp_url},
        auth=("agent", "agent-secret"),
        timeout=30,
    )
    answer.raise_for_status()
    authserver.clear_log()
    return str(answer.json()["access_token"])


@pytest.mark.parametrize("how", ["token", "token-file", "authorization-header"])
def test_a_static_bearer_token_is_sent_as_is_and_runs_no_flow(
    authserver: RunningAuthServer, tmp_path: Path, how: str
) -> None:
    token = _issued_token(authserver)
    (tmp_path / "token.txt").write_text(token + "\n")  # as `echo TOKEN > token.txt` leaves it
    given = {
        "token": ["--token", token],
        "token-file": ["--token", f"@{tmp_path / 'token.txt'}"],
        "authorization-header": ["--header", f"Authorization: Bearer {token}"],
    }[how]
    done = command(tmp_path, "tools", authserver.mcp_url, "--json", *given)
    assert (done.returncode, json.loads(done.stdout)["tools"][0]["name"], done.stderr) == (0, "test-tool", "")
    sent = [(entry["path"], entry["headers"].get("authorization")) for entry in authserver.log()]
    assert sent == [("/mcp", f"Bearer {token}")] * len(sent) and len(sent) >= 2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(
            ["--token", "t0ken", "--auth", "oauth"],
            "--token brings its own credentials: it cannot be combined with --auth oauth",
            id="token-and-oauth",
        ),
        pytest.param(
            ["--header", "Authorization: Bearer SECRET", "--auth", "client-credentials"],
            "--header Authorization brings its own credentials: it cannot be combined with --auth client-credentials",
            id="header-and-client-credentials",
        ),
        pytest.param(
            ["--token", "SECRET", "--header", "authorization: Bearer SECRET"],
            "give one of --token and --header Authorization, not both: each sends an Authorization header",
            id="token-and-header",
        ),
        pytest.param(
            ["--token", "SECRET TOKEN"],
            "--token must be visible ASCII without spaces (RFC 6750 §2.1); the token is not shown",
            id="token-with-space",
        ),
        pytest.param(
            ["--token", "@/nonexistent/token"],
            "cannot read --token file '/nonexistent/token': No such file or directory",
            id="token-file-missing",
        ),
    ],
)
def test_credentials_that_contradict_each_other_are_usage_errors(
    authserver: RunningAuthServer, tmp_path: Path, args: list[str], message: str
) -> None:
    authserver.configure({})
    done = command(tmp_path, "tools", authserver.mcp_url, *args)
    assert (done.returncode, done.stdout, done.stderr) == (Exit.usage, "", f"mcpfsm: error: {message}\n")
    assert authserver.log() == []


def test_an_empty_userinfo_in_the_url_is_no_credentials_of_its_own(
    authserver: RunningAuthServer, tmp_path: Path
) -> None:
    # `http://@host/mcp` sends no Authorization (mcpfsm._transports.http.carries_credentials), so --token is
    # the only credential given, not a second one.
    token = _issued_token(authserver)
    url = authserver.mcp_url.replace("http://", "http://@", 1)
    done = command(tmp_path, "tools", url, "--json", "--token", token)
    assert (done.returncode, json.loads(done.stdout)["tools"][0]["name"], done.stderr) == (0, "test-tool", "")
    sent = [(entry["path"], entry["headers"].get("authorization")) for entry in authserver.log()]
    assert sent == [("/mcp", f"Bearer {token}")] * len(sent) and len(sent) >= 2


def test_a_user_in_the_url_is_credentials_of_its_own(authserver: RunningAuthServer, tmp_path: Path) -> None:
    authserver.configure({})
    done = command(tmp_path, "tools", authserver.mcp_url.replace("http://", "http://user@", 1), "--token", "t0ken")
    message = "give one of --token and the URL's user:password, not both: each sends an Authorization header"
    assert (done.returncode, done.stdout, done.stderr) == (Exit.usage, "", f"mcpfsm: error: {message}\n")
    assert authserver.log() == []


def test_a_token_for_a_stdio_server_is_a_usage_error(tmp_path: Path) -> None:
    done = command(tmp_path, "tools", "--stdio", "server", "--token", "t0ken")
    message = "mcpfsm: error: --token applies to HTTP servers only, not to --stdio\n"
    assert (done.returncode, done.stderr) == (Exit.usage, message)
