"""``mcpfsm.load_config``: the ``mcpServers`` formats, interpolation, auth blocks, options and exact errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

import pytest

import mcpfsm
from mcpfsm import Config, ConfigError, ServerConfig, load_config

ENV: Final = {"TOKEN": "tok-123", "HOME_DIR": "/home/ada", "TENANT": "acme"}
SECRET: Final = "tok-123"


def one(entry: dict[str, Any], *, key: str = "mcpServers") -> ServerConfig:
    return load_config({key: {"x": entry}}, environ=ENV)["x"]


def error_of(document: Any, environ: dict[str, str] = ENV) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        load_config(document, environ=environ)
    return caught.value


def test_claude_desktops_documented_example_reads_unchanged() -> None:
    # The example of the MCP "Connect to local MCP servers" guide, verbatim.
    document = json.loads(
        """
        {
          "mcpServers": {
            "filesystem": {
              "command": "npx",
              "args": [
                "-y",
                "@modelcontextprotocol/server-filesystem",
                "/Users/username/Desktop",
                "/Users/username/Downloads"
              ]
            }
          }
        }
        """
    )
    config = load_config(document)
    assert config == Config(
        servers={
            "filesystem": ServerConfig(
                name="filesystem",
                transport="stdio",
                command=(
                    "npx",
                    "-y",
                    "@modelcontextprotocol/server-filesystem",
                    "/Users/username/Desktop",
                    "/Users/username/Downloads",
                ),
            )
        }
    )


def test_vs_code_servers_cursor_urls_and_the_draft_mcp_json_read_the_same() -> None:
    vscode = {
        "inputs": [{"type": "promptString", "id": "key"}],
        "servers": {
            "github": {"type": "http", "url": "https://api.example.test/mcp", "headers": {"X-Tenant": "${TENANT}"}},
            "local": {"type": "stdio", "command": "uvx", "args": ["mcp-server-time"], "env": {"TZ": "UTC"}},
        },
    }
    config = load_config(vscode, environ=ENV)
    assert config.names == ["github", "local"]
    assert config["github"] == ServerConfig(
        name="github", transport="http", url="https://api.example.test/mcp", headers={"X-Tenant": "acme"}
    )
    assert config["local"] == ServerConfig(
        name="local", transport="stdio", command=("uvx", "mcp-server-time"), env={"TZ": "UTC"}
    )
    cursor = one({"url": "https://api.example.test/mcp"})
    draft = one({"type": "streamable-http", "url": "https://api.example.test/mcp"})
    settings = load_config({"mcp": {"servers": {"x": {"url": "https://api.example.test/mcp"}}}})["x"]
    assert cursor == draft == settings == ServerConfig(name="x", transport="http", url="https://api.example.test/mcp")


def test_options_and_unknown_keys() -> None:
    server = one(
        {
            "url": "https://api.example.test/mcp",
            "protocol": "2025-11-25",
            "timeout": 12,
            "tasks": True,
            "include_tools": ["search", "get_*"],
            "exclude_tools": ["get_secret"],
            "prefix": "gh",
            "enabled": False,
            "alwaysAllow": ["search"],
            "note": "${NOT_SET}",
        }
    )
    assert (server.protocol, server.timeout, server.tasks, server.prefix, server.enabled) == (
        "2025-11-25",
        12.0,
        True,
        "gh",
        False,
    )
    assert (server.include_tools, server.exclude_tools) == (("search", "get_*"), ("get_secret",))
    # Unknown keys are kept as written (never interpolated, so an unset variable there is no error).
    assert server.extra == {"alwaysAllow": ["search"], "note": "${NOT_SET}"}
    assert one({"command": "srv", "disabled": True}).enabled is False
    assert one({"command": "srv", "prefix": ""}).prefix == ""


def test_auth_blocks_map_onto_the_clients_auth_options() -> None:
    bearer = one({"url": "https://a.test/mcp", "auth": {"type": "bearer", "token": "${env:TOKEN}"}})
    assert bearer.auth == SECRET
    oauth = one(
        {
            "url": "https://a.test/mcp",
            "auth": {
                "type": "oauth",
                "client_id": "app",
                "clientSecret": "${TOKEN}",
                "client_issuer": "https://login.test",
                "scopes": ["read", "write"],
                "dpop": True,
            },
        }
    )
    assert oauth.auth == mcpfsm.OAuth(
        client_id="app", client_secret=SECRET, client_issuer="https://login.test", scope=("read", "write"), dpop=True
    )
    machine = one(
        {
            "url": "https://a.test/mcp",
            "auth": {"type": "client_credentials", "client_id": "bot", "client_secret": "${TOKEN}", "scope": "read"},
        }
    )
    assert machine.auth == mcpfsm.ClientCredentials("bot", client_secret=SECRET, scope="read")
    # No secret in a repr.
    assert SECRET not in repr(bearer) + repr(oauth) + repr(machine)


def test_an_unset_variable_names_the_server_the_field_and_the_variable() -> None:
    document = {"mcpServers": {"github": {"url": "https://a.test/mcp", "headers": {"X-Token": "${env:GH_TOKEN}"}}}}
    error = error_of(document)
    assert str(error) == "server 'github': mcpServers.github.headers.X-Token: environment variable GH_TOKEN is not set"
    assert error.path == "mcpServers.github.headers.X-Token"
    assert isinstance(error, mcpfsm.McpError)
    args = error_of({"mcpServers": {"s": {"command": "srv", "args": ["--dir", "${WORK}"]}}})
    assert str(args) == "server 's': mcpServers.s.args[1]: environment variable WORK is not set"
    # Set but empty is a value.
    empty = load_config({"mcpServers": {"s": {"command": "srv", "args": ["-${WORK}-"]}}}, environ={"WORK": ""})
    assert empty["s"].command == ("srv", "--")


@pytest.mark.parametrize(
    ("entry", "path", "message"),
    [
        (
            {"type": "sse", "url": "https://a.test/sse"},
            "mcpServers.s.type",
            "sse is the HTTP+SSE transport of MCP 2024-11-05, which mcpfsm does not speak: use the server's"
            " Streamable HTTP endpoint with type http",
        ),
        (
            {"type": "websocket", "url": "wss://a.test"},
            "mcpServers.s.type",
            "must be stdio, http or streamable-http, got a string",
        ),
        ({}, "mcpServers.s", "needs command (a stdio server) or url (an HTTP server)"),
        (
            {"command": "a", "url": "https://a.test"},
            "mcpServers.s",
            "has both command (stdio) and url (HTTP): give one",
        ),
        ({"command": 3}, "mcpServers.s.command", "must be a string, got a number"),
        ({"command": "a", "args": "b c"}, "mcpServers.s.args", "must be an array of strings, got a string"),
        ({"command": "a", "env": {"K": 1}}, "mcpServers.s.env.K", "must be a string, got a number"),
        (
            {"command": "a", "headers": {}},
            "mcpServers.s.headers",
            "applies to HTTP servers only, not to a stdio command",
        ),
        ({"url": "ftp://a.test"}, "mcpServers.s.url", "must be an absolute http:// or https:// URL"),
        (
            {"url": "https://a.test", "cwd": "/"},
            "mcpServers.s.cwd",
            "applies to stdio servers only, not to an HTTP url",
        ),
        ({"url": "https://a.test", "protocol": "2024-11-05"}, "mcpServers.s.protocol", None),
        ({"url": "https://a.test", "timeout": 0}, "mcpServers.s.timeout", "must be a positive number of seconds"),
        ({"url": "https://a.test", "prefix": "git hub"}, "mcpServers.s.prefix", None),
        ({"url": "https://a.test", "enabled": "yes"}, "mcpServers.s.enabled", "must be true or false, got a string"),
        ({"url": "https://a.test", "include_tools": [""]}, "mcpServers.s.include_tools[0]", None),
        ({"url": "https://a.test", "auth": {"type": "basic"}}, "mcpServers.s.auth.type", None),
        (
            {
                "url": "https://a.test",
                "headers": {"Authorization": "Bearer x"},
                "auth": {"type": "bearer", "token": "y"},
            },
            "mcpServers.s.auth",
            "give either auth or an Authorization header, not both",
        ),
        ({"url": "https://a.test", "auth": {"type": "oauth", "client_id": "a"}}, "mcpServers.s.auth", None),
        ({"command": "a", "args": ["${input:key}"]}, "mcpServers.s.args[0]", None),
    ],
    ids=[
        "sse",
        "websocket",
        "neither",
        "both",
        "command-type",
        "args-string",
        "env-number",
        "headers-on-stdio",
        "ftp",
        "cwd-on-http",
        "old-protocol",
        "timeout-zero",
        "prefix-space",
        "enabled-string",
        "empty-filter",
        "auth-basic",
        "auth-and-authorization",
        "oauth-without-issuer",
        "vscode-input",
    ],
)
def test_a_malformed_entry_names_its_json_path(entry: dict[str, Any], path: str, message: str | None) -> None:
    error = error_of({"mcpServers": {"s": entry}})
    assert error.path == path
    assert str(error).startswith(f"server 's': {path}: ")
    if message is not None:
        assert str(error) == f"server 's': {path}: {message}"


def test_a_file_names_itself_and_a_syntax_error_its_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text('{\n  "mcpServers": {\n    "a": {"command": "x",}\n  }\n}\n', encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value) == f"{path}:3:26: not valid JSON: Expecting property name enclosed in double quotes"
    path.write_text('{"mcpServers": {"a": {"url": "https://a.test", "headers": {"K": "${NOPE}"}}}}', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"^.*mcp\.json: server 'a': mcpServers\.a\.headers\.K: environment"):
        load_config(path, environ={})
    with pytest.raises(
        ConfigError, match=r"^cannot read the configuration .*missing\.json: No such file or directory$"
    ):
        load_config(tmp_path / "missing.json")
    path.write_text('{"tools": {}}', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"no servers: expected an mcpServers object"):
        load_config(str(path))
    path.write_text("[]", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"the configuration must be a JSON object$"):
        load_config(path)


def test_no_error_quotes_a_value() -> None:
    bad = [
        {"url": "https://a.test", "headers": {"Authorization": ["Bearer", SECRET]}},
        {"url": "https://a.test", "auth": {"type": "bearer", "token": ["x", SECRET]}},
        {"url": "https://a.test", "auth": {"type": SECRET}},
        {"command": "a", "env": {"K": {"v": SECRET}}},
    ]
    for entry in bad:
        error = error_of({"mcpServers": {"s": entry}})
        assert SECRET not in str(error), str(error)
