"""``--config FILE``: which configuration a command reads, and which of its servers it talks to (docs/groups.md).

Without ``--config``, ``./mcp.json`` is read, then ``mcp.json`` in the user's configuration directory
(``platformdirs.user_config_path("mcpfsm")``: ``~/.config/mcpfsm`` on Linux), when a command is given no URL or a
server name where the URL goes; a command given a URL or ``--stdio`` reads no configuration.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..._core.config import Config, ServerConfig, load_config
from ..._core.errors import ConfigError

__all__ = ["add_config_option", "default_config_paths", "find_config", "is_url", "named_server", "read_config"]


def add_config_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--config FILE``."""
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="an mcpServers configuration (Claude Desktop, Cursor, VS Code, mcp.json); URL may then be one of its"
        " server names (default: ./mcp.json, then mcp.json in the user's config dir)",
    )


def default_config_paths() -> list[Path]:
    """Where a configuration is looked for without ``--config``, in order."""
    import platformdirs

    return [Path("mcp.json"), platformdirs.user_config_path("mcpfsm") / "mcp.json"]


def find_config(args: argparse.Namespace) -> Path | None:
    """``--config``, else the first default path that exists, else ``None``."""
    given = getattr(args, "config", None)
    if given is not None:
        return Path(given)
    for path in default_config_paths():
        if path.is_file():
            return path
    return None


def read_config(path: Path) -> Config:
    """Load ``path``.

    Raises:
        ConfigError: as :func:`mcpfsm.load_config`.
    """
    return load_config(path)


def is_url(text: str) -> bool:
    """True for what looks like a URL (it has a scheme), not a server name."""
    return "://" in text


def named_server(config: Config, name: str | None, path: Path) -> ServerConfig:
    """The server ``name`` of ``config``, or its only enabled server when ``name`` is ``None``.

    Raises:
        ConfigError: no server has that name, it is disabled, or no name was given and the configuration
            has no enabled server or several.
    """
    if name is not None:
        if name not in config:
            raise ConfigError(f"{path} has no server named {name!r} (its servers: {', '.join(config.names) or 'none'})")
        server = config[name]
        if not server.enabled:
            raise ConfigError(f"server {name!r} is disabled in {path}")
        return server
    enabled = [server for server in config.servers.values() if server.enabled]
    if len(enabled) != 1:
        names = ", ".join(server.name for server in enabled) or "none enabled"
        raise ConfigError(f"{path} has {len(enabled)} enabled servers ({names}): name one where the URL goes")
    return enabled[0]
