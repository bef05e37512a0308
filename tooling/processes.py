"""The checkout's test servers as subprocesses: the authorization server and the skills server (not shipped).

Both start through :func:`mcpfsm._tooling.server_process._started` (the READY line, SIGTERM at the end), in the
repository root by default so that ``python -m tooling.…`` finds this folder::

    with run_authserver({"challenge_scope": "mcp:basic"}) as server:
        ...  # talk to server.mcp_url
        assert server.stats()["refresh_reuses"] == 0
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, cast

import httpx

from mcpfsm._tooling.server_process import PeerStartError, _started

__all__ = ["ROOT", "PeerStartError", "RunningAuthServer", "RunningSkillsPeer", "run_authserver", "run_skills_peer"]

ROOT: Final = Path(__file__).resolve().parent.parent
"""The repository root: the working directory of the servers started here (``tooling`` is importable there)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RunningSkillsPeer:
    """A running skills server (``python -m tooling.peer_skills``): its MCP endpoint and request log."""

    url: str
    process: subprocess.Popen[bytes]

    def log(self) -> list[dict[str, Any]]:
        """``{"method": ..., "uri": ...}`` for every MCP request it received since start or the last clear."""
        response = httpx.get(self.url.rsplit("/", 1)[0] + "/control/log")
        response.raise_for_status()
        return cast(list[dict[str, Any]], response.json())

    def clear_log(self) -> None:
        """Forget the requests logged so far."""
        httpx.post(self.url.rsplit("/", 1)[0] + "/control/log/clear").raise_for_status()


@dataclass(frozen=True, slots=True, kw_only=True)
class RunningAuthServer:
    """A running test authorization server (``python -m tooling.authserver``) and its control surface.

    One origin serves the protected MCP endpoint (`mcp_url`), its metadata, the authorization servers and
    `/_log`, `/_log/clear`, `/_config`, `/_revoke`, `/_stats` and `/_token_outage` (see that module's docstring).
    """

    base_url: str
    process: subprocess.Popen[bytes]

    @property
    def mcp_url(self) -> str:
        """The protected MCP endpoint."""
        return f"{self.base_url}/mcp"

    def configure(self, scenario: Mapping[str, Any]) -> None:
        """Start afresh with ``scenario`` (a JSON object of the server's `Scenario` fields); empties the log.

        Raises `httpx.HTTPStatusError` when the server refuses the scenario (an unknown field, say).
        """
        httpx.post(f"{self.base_url}/_config", json=dict(scenario)).raise_for_status()

    def log(self) -> list[dict[str, Any]]:
        """Every request the server received since start (or the last clear or configure), oldest first."""
        response = httpx.get(f"{self.base_url}/_log")
        response.raise_for_status()
        return cast(list[dict[str, Any]], response.json())

    def clear_log(self) -> None:
        """Forget the requests logged so far."""
        httpx.post(f"{self.base_url}/_log/clear").raise_for_status()

    def revoke(self, *, refresh_tokens: bool = False) -> None:
        """Make every access token invalid (and every refresh token with `refresh_tokens`; clients stay).

        The next MCP request draws a 401.
        """
        httpx.post(f"{self.base_url}/_revoke", json={"refresh_tokens": refresh_tokens}).raise_for_status()

    def stats(self) -> dict[str, Any]:
        """``{"token_requests": {grant_type: n}, "refresh_reuses": n, "revoked_grants": n}`` since configure."""
        response = httpx.get(f"{self.base_url}/_stats")
        response.raise_for_status()
        return cast(dict[str, Any], response.json())

    def token_outage(self, count: int, *, status: int = 503) -> None:
        """Answer the next ``count`` token requests with HTTP ``status`` (an authorization server that is down)."""
        httpx.post(f"{self.base_url}/_token_outage", json={"count": count, "status": status}).raise_for_status()


@contextmanager
def run_authserver(
    scenario: Mapping[str, Any] | None = None,
    *,
    port: int = 0,
    timeout: float = 20.0,
    cwd: str | os.PathLike[str] = ROOT,
) -> Iterator[RunningAuthServer]:
    """Run the test authorization server (HTTP, 127.0.0.1) for the duration of the block, like ``run_peer``.

    Raises:
        PeerStartError: no READY line within `timeout` seconds, or the server exited or printed something
            else first (the error carries the tail of its stderr).
    """
    argv = [sys.executable, "-m", "tooling.authserver", "--config", json.dumps(dict(scenario or {}))]
    argv += ["--port", str(port)]
    with _started(argv, cwd, timeout) as (process, base):
        yield RunningAuthServer(base_url=base, process=process)


@contextmanager
def run_skills_peer(
    *, timeout: float = 20.0, cwd: str | os.PathLike[str] = ROOT
) -> Iterator[RunningSkillsPeer]:
    """Run ``python -m tooling.peer_skills`` (HTTP, 127.0.0.1, a free port) for the block, like ``run_peer``.

    Raises:
        PeerStartError: no READY line within `timeout` seconds, or the server exited or printed something
            else first (the error carries the tail of its stderr).
    """
    argv = [sys.executable, "-m", "tooling.peer_skills", "--port", "0"]
    with _started(argv, cwd, timeout) as (process, url):
        yield RunningSkillsPeer(url=url, process=process)


