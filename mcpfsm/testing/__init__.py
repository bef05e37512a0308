"""mcpfsm.testing: record an MCP session once, replay it anywhere, break it on purpose (docs/testing.md).

Record with ``mcpfsm.Client.http(url, record="session.jsonl")`` (or ``Client.stdio(..., record=...)``, or
``mcpfsm call --record``); replay in process with ``mcpfsm.Client(replay("session.jsonl"))``, or to any client
with ``async with serve("session.jsonl") as url`` and ``mcpfsm replay session.jsonl``; inject faults with
``faults=[mismatch_once("execute-sql")]``. The pytest plugin (``mcp_cassette``, ``--mcp-record``) comes with
the package.
"""

from .._core.cassette import Cassette, Exchange
from .._core.errors import CassetteError
from .._core.faults import Fault, delay, drop_after_request, http_error, mismatch_once, session_expired
from ._cassettes import load, replay
from ._serve import serve

__all__ = [
    "Cassette",
    "CassetteError",
    "Exchange",
    "Fault",
    "delay",
    "drop_after_request",
    "http_error",
    "load",
    "mismatch_once",
    "replay",
    "serve",
    "session_expired",
]
