"""Server configurations: the ``mcpServers`` object every MCP host reads, as typed values (docs/groups.md).

One reader for the formats in use:

- Claude Desktop and Cursor (``claude_desktop_config.json``, ``.cursor/mcp.json``): ``{"mcpServers": {name: entry}}``;
- VS Code (``.vscode/mcp.json``): ``{"servers": {name: entry}}`` (also ``{"mcp": {"servers": ...}}`` in settings);
- the draft standard ``mcp.json``: ``mcpServers`` with an explicit ``type``.

An entry is a stdio server (``command``, ``args``, ``env``, ``cwd``) or an HTTP one (``url``, ``headers``), with
``type`` ``stdio``, ``http`` or ``streamable-http`` to say which (``sse``, the HTTP+SSE transport of
MCP 2024-11-05, is refused: mcpfsm speaks Streamable HTTP). ``${env:NAME}`` and ``${NAME}`` in a string value
are replaced by the variable, eagerly: an unset one is a :class:`~mcpfsm.ConfigError` naming the server, the
field and the variable, never an empty string. An optional ``auth`` object maps onto the client's ``auth=``:
``{"type": "bearer", "token": ...}``, ``{"type": "oauth", ...}`` (:class:`~mcpfsm.OAuth`) or
``{"type": "client_credentials", ...}`` (:class:`~mcpfsm.ClientCredentials`). mcpfsm's own per-server options are
``protocol``, ``timeout``, ``tasks``, ``include_tools``, ``exclude_tools``, ``prefix``, ``enabled`` and ``lazy``. Keys
mcpfsm does not know are kept (:attr:`ServerConfig.extra`) and ignored.

Pure: reads the file it is given and the environment mapping, nothing else. No error message quotes a value
of the configuration (headers and auth blocks hold secrets): it names the JSON path. The values variables were
replaced by are secrets too (an API key in a URL's query, a token in ``args``): :attr:`ServerConfig.secrets`
keeps them, no ``repr`` shows them, and a client group takes them out of every error and log line of the member.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal
from urllib.parse import urlsplit

from .constants import SPOKEN_VERSIONS
from .errors import ConfigError
from .oauth.redaction import redact

if TYPE_CHECKING:
    from .credentials import ClientCredentials, OAuth

__all__ = ["TOOL_NAME", "Config", "ServerConfig", "load_config"]

TOOL_NAME: Final = re.compile(r"[A-Za-z0-9_.\-]{1,128}")
"""A tool name as MCP 2025-11-25 "Tools" recommends (SEP-986): 1 to 128 of ``A-Z a-z 0-9 _ - .``."""

_VARIABLE: Final = re.compile(r"\$\{([^}]*)\}")
_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_KNOWN: Final = frozenset(
    {
        "type",
        "command",
        "args",
        "env",
        "cwd",
        "url",
        "serverUrl",
        "headers",
        "auth",
        "protocol",
        "timeout",
        "tasks",
        "include_tools",
        "exclude_tools",
        "prefix",
        "enabled",
        "disabled",
        "lazy",
    }
)
_HTTP_TYPES: Final = frozenset({"http", "streamable-http", "streamableHttp", "streamable_http"})


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerConfig:
    """One server of a :class:`Config`, its variables already replaced.

    Attributes:
        name: its key in the configuration.
        transport: ``"stdio"`` or ``"http"`` (Streamable HTTP).
        command: stdio: the program and its arguments (``command`` followed by ``args``).
        env: stdio: variables set for the child, over the parent's environment.
        cwd: stdio: the child's working directory.
        url: HTTP: the MCP endpoint.
        headers: HTTP: sent on every request (names starting with ``mcp-`` are dropped by the client).
        auth: HTTP: what the client's ``auth=`` gets (an :class:`~mcpfsm.OAuth`, a
            :class:`~mcpfsm.ClientCredentials` or a bearer token), or ``None``.
        protocol: ``"auto"`` or the version to pin.
        timeout: HTTP: seconds bounding each connect, write and read; ``None`` for the client's default.
        tasks: the ``tasks`` option as written (``None`` when absent), kept for the tasks extension (SEP-2663).
        include_tools: names or ``fnmatch`` patterns of the tools to keep (``None``: all), as the server lists them.
        exclude_tools: names or patterns of the tools to leave out, applied after ``include_tools``.
        prefix: what aggregated names start with instead of the server's name (``""``: no prefix); ``None``
            for the name.
        enabled: ``False`` keeps the server out of a group (its status is ``"disabled"``).
        lazy: ``True`` makes the server a lazy member of a group (connected on its first use), ``False`` an eager
            one (connected when the group opens); ``None`` (absent) leaves it to the group's ``lazy=``.
        extra: the entry's keys mcpfsm does not know, as written (variables not replaced).
        secrets: the values ``${env:NAME}`` and ``${NAME}`` were replaced by, anywhere in the entry: no ``repr``
            shows them, and a client group takes them out of its members' errors and log lines.
    """

    name: str
    transport: Literal["stdio", "http"]
    command: tuple[str, ...] = ()
    env: Mapping[str, str] | None = field(default=None, repr=False)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    auth: OAuth | ClientCredentials | str | None = field(default=None, repr=False)
    protocol: str = "auto"
    timeout: float | None = None
    tasks: Any = None
    include_tools: tuple[str, ...] | None = None
    exclude_tools: tuple[str, ...] = ()
    prefix: str | None = None
    enabled: bool = True
    lazy: bool | None = None
    extra: Mapping[str, Any] = field(default_factory=dict, repr=False)
    secrets: frozenset[str] = field(default=frozenset(), repr=False, compare=False)

    def __repr__(self) -> str:
        """The fields a ``repr`` shows, with every value a variable was replaced by taken out."""
        shown = ", ".join(f"{each.name}={getattr(self, each.name)!r}" for each in fields(self) if each.repr)
        return redact(f"ServerConfig({shown})", self.secrets)


@dataclass(frozen=True, slots=True, kw_only=True)
class Config:
    """A parsed server configuration: what :func:`load_config` returns and ``ClientGroup`` takes.

    Attributes:
        servers: each server by name, in the order of the file.
        source: the file it was read from, or ``None`` for a dict.
    """

    servers: Mapping[str, ServerConfig]
    source: str | None = None

    def __getitem__(self, name: str) -> ServerConfig:
        """The server named ``name``.

        Raises:
            KeyError: no server has that name.
        """
        return self.servers[name]

    def __contains__(self, name: object) -> bool:
        """``name in config``."""
        return name in self.servers

    @property
    def names(self) -> list[str]:
        """The server names, in order."""
        return list(self.servers)


def load_config(
    source: str | os.PathLike[str] | Mapping[str, Any] | Config, *, environ: Mapping[str, str] | None = None
) -> Config:
    """Read an ``mcpServers`` (or VS Code ``servers``) configuration from a file or a dict.

    Args:
        source: a path to a JSON file, the parsed document as a dict, or a :class:`Config` (returned as is).
        environ: the variables ``${env:NAME}`` and ``${NAME}`` read (default: ``os.environ``).

    Raises:
        ConfigError: the file cannot be read, is not JSON (file, line and column named), or something in it
            is malformed or refers to an unset variable (the JSON path named, with the variable).
    """
    if isinstance(source, Config):
        return source
    environ = os.environ if environ is None else environ
    origin: str | None = None
    if isinstance(source, Mapping):
        document: Any = source
    elif isinstance(source, str | os.PathLike):
        origin = os.fspath(source)
        document = _read(origin)
    else:
        raise TypeError(f"load_config takes a path, a dict or a Config, got {type(source).__name__}")
    if not isinstance(document, Mapping):
        raise ConfigError(f"{_where(origin)}the configuration must be a JSON object", path="$")
    key, entries = _servers(document, origin)
    servers = {name: _server(name, entry, f"{key}.{name}", environ, origin) for name, entry in entries.items()}
    return Config(servers=servers, source=origin)


def _read(path: str) -> Any:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConfigError(f"cannot read the configuration {path}: {reason}", path="$") from exc
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}:{exc.lineno}:{exc.colno}: not valid JSON: {exc.msg}", path="$") from exc
    except RecursionError:
        # json's parser recurses once per array or object: a hostile file nests until the stack runs out.
        raise ConfigError(f"{path}: not a configuration: nested too deeply to read", path="$") from None


def _where(origin: str | None) -> str:
    return "" if origin is None else f"{origin}: "


def _servers(document: Mapping[str, Any], origin: str | None) -> tuple[str, Mapping[str, Any]]:
    for key, value in (
        ("mcpServers", document.get("mcpServers")),
        ("servers", document.get("servers")),
        ("mcp.servers", document["mcp"].get("servers") if isinstance(document.get("mcp"), Mapping) else None),
    ):
        if value is None:
            continue
        if not isinstance(value, Mapping):
            raise ConfigError(f"{_where(origin)}{key} must be a JSON object of servers by name", path=key)
        return key, value
    raise ConfigError(
        f"{_where(origin)}no servers: expected an mcpServers object (Claude Desktop, Cursor, mcp.json)"
        " or a servers object (VS Code)",
        path="$",
    )


class _Entry:
    # One entry being read: its JSON path, the variables, the values they were replaced by (secrets), and the
    # errors' common prefix.
    __slots__ = ("environ", "expanded", "origin", "path", "server")

    def __init__(self, server: str, path: str, environ: Mapping[str, str], origin: str | None) -> None:
        self.server = server
        self.path = path
        self.environ = environ
        self.origin = origin
        self.expanded: set[str] = set()

    def error(self, field_path: str, problem: str) -> ConfigError:
        return ConfigError(f"{_where(self.origin)}server {self.server!r}: {field_path}: {problem}", path=field_path)

    def string(self, value: object, field_path: str) -> str:
        if not isinstance(value, str):
            raise self.error(field_path, f"must be a string, got {_kind(value)}")
        return self.interpolate(value, field_path)

    def interpolate(self, value: str, field_path: str) -> str:
        def replace(match: re.Match[str]) -> str:
            reference = match.group(1)
            name = reference[4:] if reference.startswith("env:") else reference
            # The text between the braces is the file's, and may be a secret typed in: never quoted.
            if reference.startswith("input:"):
                raise self.error(
                    field_path, "${input:...}: input variables (VS Code prompts) are not supported; use ${env:NAME}"
                )
            if not _NAME.fullmatch(name):
                raise self.error(
                    field_path, "holds a ${...} that is not a variable reference (${env:NAME} or ${NAME})"
                )
            found = self.environ.get(name)
            if found is None:
                raise self.error(field_path, f"environment variable {name} is not set")
            self.expanded.add(found)
            return found

        return _VARIABLE.sub(replace, value) if "${" in value else value

    def strings(self, value: object, field_path: str) -> tuple[str, ...]:
        if isinstance(value, str) or not isinstance(value, Sequence):
            raise self.error(field_path, f"must be an array of strings, got {_kind(value)}")
        return tuple(self.string(item, f"{field_path}[{index}]") for index, item in enumerate(value))

    def names(self, value: object, field_path: str) -> tuple[str, ...]:
        # Tool filters: plain strings, no variables.
        if isinstance(value, str) or not isinstance(value, Sequence):
            raise self.error(field_path, f"must be an array of tool names or patterns, got {_kind(value)}")
        for index, item in enumerate(value):
            if not isinstance(item, str) or not item:
                raise self.error(f"{field_path}[{index}]", f"must be a non-empty string, got {_kind(item)}")
        return tuple(value)

    def table(self, value: object, field_path: str) -> dict[str, str]:
        if not isinstance(value, Mapping):
            raise self.error(field_path, f"must be a JSON object of strings, got {_kind(value)}")
        return {str(key): self.string(item, f"{field_path}.{key}") for key, item in value.items()}

    def boolean(self, value: object, field_path: str) -> bool:
        if not isinstance(value, bool):
            raise self.error(field_path, f"must be true or false, got {_kind(value)}")
        return value


def _server(name: object, entry: object, path: str, environ: Mapping[str, str], origin: str | None) -> ServerConfig:
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{_where(origin)}{path}: a server name must be a non-empty string", path=path)
    reader = _Entry(name, path, environ, origin)
    if not isinstance(entry, Mapping):
        raise reader.error(path, f"a server entry must be a JSON object, got {_kind(entry)}")
    transport = _transport(reader, entry)
    options: dict[str, Any] = {
        "name": name,
        "transport": transport,
        "extra": {key: value for key, value in entry.items() if key not in _KNOWN},
    }
    if transport == "stdio":
        for key in ("url", "serverUrl", "headers", "auth"):
            if key in entry:
                raise reader.error(f"{path}.{key}", "applies to HTTP servers only, not to a stdio command")
        command = reader.string(entry.get("command"), f"{path}.command")
        if not command:
            raise reader.error(f"{path}.command", "must not be empty")
        args = reader.strings(entry.get("args", []), f"{path}.args")
        options["command"] = (command, *args)
        if entry.get("env") is not None:
            options["env"] = reader.table(entry["env"], f"{path}.env")
        if entry.get("cwd") is not None:
            options["cwd"] = reader.string(entry["cwd"], f"{path}.cwd")
    else:
        for key in ("command", "args", "env", "cwd"):
            if key in entry:
                raise reader.error(f"{path}.{key}", "applies to stdio servers only, not to an HTTP url")
        url_key = "url" if "url" in entry else "serverUrl"
        url = reader.string(entry.get(url_key), f"{path}.{url_key}")
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise reader.error(f"{path}.{url_key}", "must be an absolute http:// or https:// URL")
        options["url"] = url
        headers = reader.table(entry.get("headers", {}), f"{path}.headers")
        options["headers"] = headers
        if entry.get("auth") is not None:
            if any(header.lower() == "authorization" for header in headers):
                raise reader.error(f"{path}.auth", "give either auth or an Authorization header, not both")
            options["auth"] = _auth(reader, entry["auth"], f"{path}.auth")
    _options(reader, entry, path, options)
    return ServerConfig(**options, secrets=frozenset(value for value in reader.expanded if value))


def _transport(reader: _Entry, entry: Mapping[str, Any]) -> Literal["stdio", "http"]:
    path = reader.path
    kind = entry.get("type")
    if kind is None:
        has_command, has_url = "command" in entry, "url" in entry or "serverUrl" in entry
        if has_command and has_url:
            raise reader.error(path, "has both command (stdio) and url (HTTP): give one")
        if has_command:
            return "stdio"
        if has_url:
            return "http"
        raise reader.error(path, "needs command (a stdio server) or url (an HTTP server)")
    if kind == "stdio":
        return "stdio"
    if kind in _HTTP_TYPES:
        return "http"
    if kind == "sse":
        raise reader.error(
            f"{path}.type",
            "sse is the HTTP+SSE transport of MCP 2024-11-05, which mcpfsm does not speak: use the server's"
            " Streamable HTTP endpoint with type http",
        )
    raise reader.error(f"{path}.type", f"must be stdio, http or streamable-http, got {_kind(kind)}")


def _options(reader: _Entry, entry: Mapping[str, Any], path: str, options: dict[str, Any]) -> None:
    if "protocol" in entry:
        protocol = entry["protocol"]
        if protocol != "auto" and protocol not in SPOKEN_VERSIONS:
            raise reader.error(f"{path}.protocol", f"must be auto or one of {', '.join(SPOKEN_VERSIONS)}")
        options["protocol"] = protocol
    if "timeout" in entry:
        timeout = entry["timeout"]
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
            raise reader.error(f"{path}.timeout", "must be a positive number of seconds")
        options["timeout"] = float(timeout)
    if "tasks" in entry:
        options["tasks"] = entry["tasks"]
    if "include_tools" in entry:
        options["include_tools"] = reader.names(entry["include_tools"], f"{path}.include_tools")
    if "exclude_tools" in entry:
        options["exclude_tools"] = reader.names(entry["exclude_tools"], f"{path}.exclude_tools")
    if "prefix" in entry:
        prefix = entry["prefix"]
        if not isinstance(prefix, str) or (prefix and not TOOL_NAME.fullmatch(prefix)):
            raise reader.error(f"{path}.prefix", "must be a string of A-Z a-z 0-9 _ - . (SEP-986), or empty")
        options["prefix"] = prefix
    enabled = True
    if "enabled" in entry:
        enabled = reader.boolean(entry["enabled"], f"{path}.enabled")
    if "disabled" in entry:  # Cline and Roo write this one
        enabled = enabled and not reader.boolean(entry["disabled"], f"{path}.disabled")
    options["enabled"] = enabled
    if "lazy" in entry:
        options["lazy"] = reader.boolean(entry["lazy"], f"{path}.lazy")


_OAUTH_FIELDS: Final = {
    "client_id": "client_id", "clientId": "client_id",
    "client_secret": "client_secret", "clientSecret": "client_secret",
    "client_issuer": "client_issuer", "clientIssuer": "client_issuer", "issuer": "client_issuer",
    "redirect_uri": "redirect_uri", "redirectUri": "redirect_uri",
    "client_metadata_url": "client_metadata_url", "clientMetadataUrl": "client_metadata_url",
    "client_name": "client_name", "clientName": "client_name",
    "scope": "scope", "scopes": "scope",
    "token_endpoint_auth_method": "token_endpoint_auth_method",
}  # fmt: skip
_CREDENTIALS_FIELDS: Final = {
    "client_id": "client_id", "clientId": "client_id",
    "client_secret": "client_secret", "clientSecret": "client_secret",
    "private_key_pem": "private_key_pem", "privateKeyPem": "private_key_pem",
    "signing_algorithm": "signing_algorithm", "signingAlgorithm": "signing_algorithm",
    "issuer": "issuer", "scope": "scope", "scopes": "scope",
}  # fmt: skip


def _auth(reader: _Entry, block: object, path: str) -> OAuth | ClientCredentials | str:
    if not isinstance(block, Mapping):
        raise reader.error(path, f"must be a JSON object with a type, got {_kind(block)}")
    kind = block.get("type")
    if kind == "bearer":
        token = reader.string(block.get("token"), f"{path}.token")
        if not token:
            raise reader.error(f"{path}.token", "must not be empty")
        return token
    if kind in ("oauth", "client_credentials"):
        from .credentials import ClientCredentials, OAuth  # the OAuth side, with the first auth block

        names = _OAUTH_FIELDS if kind == "oauth" else _CREDENTIALS_FIELDS
        arguments: dict[str, Any] = {}
        for key, value in block.items():
            if key == "type":
                continue
            if key == "dpop" and kind == "oauth":
                arguments["dpop"] = reader.boolean(value, f"{path}.dpop")
                continue
            target = names.get(key)
            if target is None:
                continue  # unknown keys are kept in the file and ignored, as elsewhere
            if target == "scope" and not isinstance(value, str):
                arguments[target] = reader.strings(value, f"{path}.{key}")
            else:
                arguments[target] = reader.string(value, f"{path}.{key}")
        try:
            if kind == "oauth":
                return OAuth(**arguments)
            return ClientCredentials(**arguments)
        except (TypeError, ValueError) as exc:
            # The credential's own message may quote what it was given (a redirect URI, a scope): every value
            # of the block is taken out of it, and it is not chained (a traceback would print it whole).
            given = [value for value in arguments.values() if isinstance(value, str)]
            given += [item for value in arguments.values() if isinstance(value, tuple) for item in value]
            raise reader.error(path, f"not usable as {kind} credentials: {redact(str(exc), given)}") from None
    raise reader.error(f"{path}.type", f"must be bearer, oauth or client_credentials, got {_kind(kind)}")


def _kind(value: object) -> str:
    # What a value is, never what it says (it may be a secret).
    if value is None:
        return "null"
    kinds = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", int: "a number"}
    kinds[float] = "a number"
    return kinds.get(type(value), f"a {type(value).__name__}")
