"""A property of lazy groups: an idle member never starts a process or opens a connection, whatever the group does.

Hypothesis scripts a sequence of group operations — listings (answered by known listings where the store holds
fresh ones), searches, calls, ``group.client()``, ``group[name]``, reloads that drop a member and bring it back —
against real members: two stdio children (``tests/support/stdio_member.py``, which appends its process id to a file as
it starts) and the official SDK's test peer over HTTP behind a counting TCP relay at the edge (it counts the
connections a member opens, and passes the bytes on). After every operation, each member that is ``idle`` has
started no process and opened no connection since it was made, and a stdio member has started exactly one process
per connect it published.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mcpfsm
from tests.support.peer.fixtures import REPO_ROOT, HttpPeer, start_http_peer

MEMBER: Final = str(REPO_ROOT / "tests" / "support" / "stdio_member.py")
NAMES: Final = ("s0", "s1", "h0")
QUERIES: Final = ("process id", "echo text", "sleep mark", "sql database")


@pytest.fixture(scope="module")
def sdk_peer() -> Iterator[HttpPeer]:
    with start_http_peer(mode="modern", timeout=60) as peer:
        # SEP-2549: the server lets its listing be reused for an hour, so a known listing of it stays fresh.
        peer.control({"action": "cache_hints", "hints": {"tools/list": {"ttlMs": 3_600_000, "cacheScope": "private"}}})
        yield peer


class Relay:
    """A TCP relay on 127.0.0.1 in front of ``target``: counts the connections accepted, passes the bytes on."""

    def __init__(self, target: int) -> None:
        self.target = target
        self.accepted = 0

    async def serve(self, *, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        task_status.started(listeners[0].socket.getsockname()[1])
        await trio.serve_listeners(self.handle, listeners)

    async def handle(self, stream: trio.SocketStream) -> None:
        self.accepted += 1
        upstream = await trio.open_tcp_stream("127.0.0.1", self.target)
        async with stream, upstream, trio.open_nursery() as nursery:

            async def pump(source: trio.SocketStream, sink: trio.SocketStream) -> None:
                try:
                    async for chunk in source:
                        await sink.send_all(chunk)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    pass
                nursery.cancel_scope.cancel()

            nursery.start_soon(pump, stream, upstream)
            nursery.start_soon(pump, upstream, stream)


operations = st.lists(
    st.one_of(
        st.tuples(st.just("tools")),
        st.tuples(st.just("search"), st.sampled_from(QUERIES)),
        st.tuples(st.just("call"), st.sampled_from(NAMES)),
        st.tuples(st.just("client"), st.sampled_from(NAMES)),
        st.tuples(st.just("item"), st.sampled_from(NAMES)),
        st.tuples(st.just("reload_same")),
        st.tuples(st.just("drop"), st.sampled_from(NAMES)),
        st.tuples(st.just("restore")),
    ),
    max_size=7,
)


def starts(directory: Path, name: str) -> int:
    path = directory / f"{name}.started"
    return len(path.read_text(encoding="utf-8").splitlines()) if path.exists() else 0


async def scenario(directory: Path, peer_port: int, script: list[tuple[Any, ...]]) -> None:
    relay = Relay(peer_port)
    async with trio.open_nursery() as nursery:
        port = await nursery.start(relay.serve)

        def opened(name: str) -> int:
            return relay.accepted if name == "h0" else starts(directory, name)

        def entry(name: str) -> dict[str, Any]:
            if name == "h0":
                return {"url": f"http://127.0.0.1:{port}/mcp"}
            started = str(directory / f"{name}.started")
            return {"command": sys.executable, "args": [MEMBER, "--name", name, "--started", started]}

        full = {"mcpServers": {name: entry(name) for name in NAMES}}
        store = mcpfsm.FileStore(directory / "store")
        # Known listings for s0 and h0 (s1 has none: a listing must connect it).
        seed = {"mcpServers": {name: full["mcpServers"][name] for name in ("s0", "h0")}}
        async with mcpfsm.ClientGroup(seed, store=store) as group:
            await group.tools()
        events: list[mcpfsm.CallEvent] = []
        with trio.fail_after(120):
            async with mcpfsm.ClientGroup(full, lazy=True, store=store, on_event=events.append) as group:
                made = {name: (opened(name), 0) for name in NAMES}  # what each member object found when made
                current = dict(full["mcpServers"])
                for operation in script:
                    await apply(group, operation, current, full, made, events, opened)
                    check(group, made, events, opened)
        nursery.cancel_scope.cancel()


async def apply(
    group: mcpfsm.ClientGroup,
    operation: tuple[Any, ...],
    current: dict[str, Any],
    full: dict[str, Any],
    made: dict[str, tuple[int, int]],
    events: list[mcpfsm.CallEvent],
    opened: Any,
) -> None:
    kind = operation[0]
    try:
        if kind == "tools":
            await group.tools()
        elif kind == "search":
            await group.search(operation[1], limit=3)
        elif kind == "call" and operation[1] in current:
            await group.call_tool(f"{operation[1]}_echo", {"text": "hi"})
        elif kind == "client" and operation[1] in current:
            await group.client(operation[1])
        elif kind == "item" and operation[1] in current:
            group[operation[1]]
        elif kind == "reload_same":
            await group.reload({"mcpServers": current})
        elif kind == "drop" and operation[1] in current:
            del current[operation[1]]
            await group.reload({"mcpServers": current})
        elif kind == "restore":
            back = [name for name in full["mcpServers"] if name not in current]
            current.clear()
            current.update(full["mcpServers"])
            await group.reload({"mcpServers": current})
            for name in back:  # a member made anew: it starts from what exists now
                made[name] = (opened(name), connects(events, name))
    except mcpfsm.McpError:
        pass  # group[name] of an idle member, say: what matters is what the group opened meanwhile


def connects(events: list[mcpfsm.CallEvent], name: str) -> int:
    return sum(1 for event in events if isinstance(event, mcpfsm.MemberEvent) and event.server == name and
               event.state == "connecting")  # fmt: skip


def check(
    group: mcpfsm.ClientGroup, made: dict[str, tuple[int, int]], events: list[mcpfsm.CallEvent], opened: Any
) -> None:
    for name, status in group.status.items():
        since, connected_before = made[name]
        new = opened(name) - since
        attempts = connects(events, name) - connected_before
        if status == "idle":
            assert (new, attempts) == (0, 0), f"idle member {name} opened {new} processes or connections"
        elif name != "h0":
            assert new == attempts, f"{name}: {new} processes for {attempts} connects"
        else:
            assert new >= attempts > 0


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(script=operations)
def test_an_idle_member_never_starts_a_process_or_opens_a_connection(sdk_peer: HttpPeer, script: list[Any]) -> None:
    directory = Path(tempfile.mkdtemp(prefix="mcpfsm-idle-"))
    try:
        peer_port = int(sdk_peer.url.split(":")[2].split("/")[0])
        trio.run(scenario, directory, peer_port, script)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
