"""A stdio server that exits while a process it started keeps its stdout open (MCP "Transports", stdio).

No end of stdout ever comes then: the transport watches the child's own exit, and the call waiting fails a
moment later with the exit status and the last lines of the child's stderr. The child here is a real
process: it answers ``server/discover``, and on ``tools/call`` starts a helper that inherits its stdin,
stdout and stderr (the helper ends when the client closes stdin), writes why it stops, and exits 3.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import sys
from typing import Final

import pytest
import trio

import mcpfsm
from tests.support.peer.fixtures import REPO_ROOT

CHILD: Final = r"""
import json, subprocess, sys
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    if message["method"] == "server/discover":
        result = {"supportedVersions": ["2026-07-28"], "capabilities": {}}
        print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
        continue
    helper = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.buffer.read()"])
    sys.stderr.write(f"started helper {helper.pid}\nfatal: the database is gone\n")
    sys.stderr.flush()
    sys.exit(3)
"""
EXITED: Final = (
    r"^the MCP server process exited with status 3 before answering \(a process it started still holds its stdout"
    r" open\); the last lines of its stderr:\nstarted helper (\d+)\nfatal: the database is gone$"
)


def kill_quietly(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


async def test_a_child_that_exits_while_its_helper_holds_stdout_fails_the_call_promptly() -> None:
    helpers: list[int] = []
    client = mcpfsm.Client.stdio([sys.executable, "-c", CHILD], cwd=str(REPO_ROOT))
    try:
        async with client:
            # A guard only: the call fails about a second after the exit, far within it.
            with trio.fail_after(30), pytest.raises(mcpfsm.TransportError, match=EXITED) as failed:
                await client.call_tool("anything", {})
            found = re.match(EXITED, str(failed.value))
            assert found is not None
            helpers.append(int(found.group(1)))
            # The next request fails at once with the same error: nobody is left to answer it.
            with trio.fail_after(5), pytest.raises(mcpfsm.TransportError, match=EXITED):
                await client.call_tool("anything", {})
    finally:
        for pid in helpers:
            kill_quietly(pid)
