"""The test peer as a subprocess, for sync and trio tests alike: `mcpfsm._tooling.server_process`, tests' names.

::

    from tests.support.peer.fixtures import start_http_peer

    with start_http_peer(mode="modern") as peer:
        peer.control({"action": "evolve"})
        ...  # talk to peer.url
        assert [e["jsonrpc_method"] for e in peer.log()] == [...]
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from mcpfsm._tooling.server_process import PeerStartError, RunningPeer, run_peer

__all__ = ["INPUT_TOOLS", "REPO_ROOT", "TOOLS", "HttpPeer", "PeerStartError", "start_http_peer"]

REPO_ROOT: Final = Path(__file__).resolve().parents[3]
"""The repository root (where `python -m tests.support.peer.server` runs from, as the stdio tests do)."""

start_http_peer: Final = run_peer
"""Run the HTTP test peer for the duration of a ``with`` block; see `mcpfsm._tooling.server_process.run_peer`."""

HttpPeer = RunningPeer
"""A running HTTP test peer; see `mcpfsm._tooling.server_process.RunningPeer`."""

INPUT_TOOLS: Final = [
    "ask-name",
    "ask-model",
    "list-roots",
    "interview",
    "ask-url",
    "state-only",
    "echo-state",
    "elicit-defaults",
]
"""The peer's tools that ask the client for input (`mcpfsm._tooling.demo_input`), in `tools/list` order."""

TOOLS: Final = ["execute-sql", "echo", "slow", "fail", *INPUT_TOOLS]
"""Every tool the peer lists after a reset, in `tools/list` order (`tests/support/peer/README.md`)."""
