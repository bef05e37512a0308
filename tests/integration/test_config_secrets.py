"""No secret in output: what a configuration's variables expand to never leaves the client (docs/groups.md).

A ``${env:…}`` value may be an API key in a URL's query, a token in ``args`` or a path in ``cwd``. The tests read
a configuration with such values, run a group whose members fail in every way they can (a refused connection,
a server that goes away mid-call, a child that exits after printing its arguments, a working directory or a
program that does not exist) and grep every channel for the secret: ``group.errors``, the exceptions raised
(message, ``repr``, causes and their file names, the formatted traceback), every loguru record with its
exception, every event, and the ``repr`` of ``Config`` and ``ServerConfig``. Config errors never quote a value of
the file either. Real parts: stdio children, the project's authorization server as the MCP server.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Iterator
from typing import Any, Final

import pytest
from loguru import logger

import mcpfsm
from tests.support.ports import reserved_port
from tooling.processes import run_authserver

SECRET: Final = "sk-live-7Qp2Zr9Xw4"
AGENT: Final = {"client_id": "agent", "client_secret": "agent-secret-value"}


@pytest.fixture
def output() -> Iterator[list[str]]:
    """Every loguru record (TRACE and up) as it would print, with its exception's traceback."""
    lines: list[str] = []
    logger.enable("mcpfsm")
    sink = logger.add(lambda message: lines.append(str(message)), level="TRACE", format="{message}\n{exception}")
    try:
        yield lines
    finally:
        logger.remove(sink)


def shown(error: BaseException) -> str:
    """Everything an exception can show: ``str``, ``repr`` and the whole formatted traceback with its causes."""
    return "\n".join([str(error), repr(error), *traceback.format_exception(error)])


def config(port: int, live_url: str) -> mcpfsm.Config:
    # Reads the first message, then says its arguments on stderr and exits: as a server refusing an option would.
    echo = "import sys; sys.stdin.readline(); sys.stderr.write(' '.join(sys.argv) + '\\n'); sys.exit(3)"
    return mcpfsm.load_config(
        {
            "mcpServers": {
                "refused": {"url": f"http://127.0.0.1:{port}/mcp?key=${{env:API_KEY}}"},
                "live": {
                    "url": f"{live_url}?key=${{env:API_KEY}}",
                    "auth": {"type": "client_credentials", "clientId": "agent", "clientSecret": AGENT["client_secret"]},
                },
                "args": {"command": sys.executable, "args": ["-c", echo, "--token=${env:API_KEY}"]},
                "cwd": {"command": sys.executable, "args": ["-c", "pass"], "cwd": "/nonexistent/${API_KEY}"},
                "program": {"command": "/no/such/dir/${env:API_KEY}/server"},
            }
        },
        environ={"API_KEY": SECRET},
    )


async def test_expanded_values_reach_no_error_exception_log_line_event_or_repr(output: list[str]) -> None:
    events: list[str] = []
    raised: list[BaseException] = []
    with reserved_port() as port, run_authserver({"client_credentials": AGENT}) as server:
        loaded = config(port, server.mcp_url)
        reprs = [repr(loaded), str(loaded), *(repr(each) for each in loaded.servers.values())]
        async with mcpfsm.ClientGroup(loaded, on_event=lambda event: events.append(event.to_json())) as group:
            assert group.status == {
                "refused": "failed",
                "live": "connected",
                "args": "failed",
                "cwd": "failed",
                "program": "failed",
            }
            failures = dict(group.errors)
            assert (await group.call_tool("live_test-tool")).text == "test-tool called"
            server.process.terminate()
            server.process.wait(timeout=30)
            # The member's own client first: the group's call then finds the server gone and fails the member.
            for call in (lambda: group["live"].call_tool("test-tool", {}), lambda: group.call_tool("live_test-tool")):
                try:
                    await call()
                except mcpfsm.McpError as exc:
                    raised.append(exc)
            for name in ("refused", "args"):
                await group.reconnect(name)
                raised.append(group.errors[name])
    assert [type(error).__name__ for error in raised] == ["TransportError"] * 4
    assert set(failures) == {"refused", "args", "cwd", "program"}
    # The failures still say what happened, with the secret taken out.
    assert "cannot connect to http://127.0.0.1:" in str(failures["refused"])
    assert "/mcp?key=[redacted]" in str(failures["refused"])
    assert str(failures["cwd"]).endswith("No such file or directory: '/nonexistent/[redacted]'")
    assert "exited with status 3" in str(failures["args"]) and "--token=[redacted]" in str(failures["args"])
    channels = {
        "errors": [shown(error) for error in failures.values()],
        "raised": [shown(error) for error in raised],
        "log": output,
        "events": events,
        "repr": reprs,
    }
    assert output and events  # every channel was written to
    assert any(line.startswith("MCP server stderr: ") and "--token=[redacted]" in line for line in output)
    assert {name: [text for text in texts if SECRET in text] for name, texts in channels.items()} == {
        name: [] for name in channels
    }


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        pytest.param(
            {"url": "https://x.example/mcp?key=${sk-live-7Qp2Zr9Xw4}"},
            "server 'x': mcpServers.x.url: holds a ${...} that is not a variable reference (${env:NAME} or ${NAME})",
            id="not-a-variable",
        ),
        pytest.param(
            {"command": "server", "args": ["--key=${input:sk-live-7Qp2Zr9Xw4}"]},
            "server 'x': mcpServers.x.args[0]: ${input:...}: input variables (VS Code prompts) are not supported;"
            " use ${env:NAME}",
            id="input-variable",
        ),
        pytest.param(
            {"url": "https://x.example/mcp", "auth": {"type": "oauth", "redirectUri": "sk-live-7Qp2Zr9Xw4"}},
            "server 'x': mcpServers.x.auth: not usable as oauth credentials: redirect_uri must be an absolute http(s)"
            " URL, got '[redacted]'",
            id="oauth-redirect-uri",
        ),
        pytest.param(
            {"url": "https://x.example/mcp", "auth": {"type": "oauth", "redirectUri": "${env:API_KEY}"}},
            "server 'x': mcpServers.x.auth: not usable as oauth credentials: redirect_uri must be an absolute http(s)"
            " URL, got '[redacted]'",
            id="oauth-redirect-uri-from-a-variable",
        ),
        pytest.param(
            {"url": "https://x.example/mcp", "auth": {"type": "oauth", "scope": ["ok", "sk-live 7Qp2Zr9Xw4"]}},
            "server 'x': mcpServers.x.auth: not usable as oauth credentials: scope must be a space-separated string"
            " or a sequence of scope tokens, got ('[redacted]', '[redacted]')",
            id="oauth-scope",
        ),
        pytest.param(
            {"url": "https://x.example/mcp", "auth": {"type": "client_credentials", "clientId": "a",
                                                    "privateKeyPem": "k", "signingAlgorithm": SECRET}},
            "server 'x': mcpServers.x.auth: not usable as client_credentials credentials: signing_algorithm must be"
            " one of ['ES256', 'ES384', 'ES512', 'RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'EdDSA'],"
            " got '[redacted]'",
            id="client-credentials",
        ),
    ],
)
def test_config_errors_never_quote_a_value_of_the_file(entry: dict[str, Any], message: str) -> None:
    with pytest.raises(mcpfsm.ConfigError) as caught:
        mcpfsm.load_config({"mcpServers": {"x": entry}}, environ={"API_KEY": SECRET})
    assert str(caught.value) == message
    assert "7Qp2Zr9Xw4" not in shown(caught.value)


def test_a_configuration_nested_100000_deep_is_a_config_error(tmp_path: Any) -> None:
    path = tmp_path / "mcp.json"
    path.write_text('{"mcpServers": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(mcpfsm.ConfigError) as caught:
        mcpfsm.load_config(path)
    assert str(caught.value) == f"{path}: not a configuration: nested too deeply to read"
    assert caught.value.path == "$"
