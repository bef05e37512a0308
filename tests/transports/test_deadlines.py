"""The timeouts of plain connections' waits (``_transports/deadlines.py``): a deadline on the connection and one
watchdog task per trio run, instead of a cancel scope per request.

The waits are real: ``wait_readable`` on one end of a socket pair whose other end sends nothing, and, through the
pool, a real server on 127.0.0.1 (``tests/support/rawserver.py``). Times are on trio's mock clock, which jumps to the
next deadline once every task waits (``autojump_clock``), or after a real second of waiting (``mock_clock`` with a
threshold, where a real server must answer first): no assertion depends on how busy the machine is.
"""

from __future__ import annotations

import contextlib
import math
import socket
from collections.abc import Iterator

import pytest
import trio
import trio.testing

from mcpfsm._transports.deadlines import _PRUNE_SLACK, Deadline, _Watchdog
from mcpfsm._transports.pool import ConnectionPool, Timeouts, WireTimeout
from mcpfsm._transports.pool.connection import PlainStream
from tests.support.rawserver import HOST, JSON_HEADERS, Seen, Server, ok, raw, serving


@contextlib.contextmanager
def socket_pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    # (the end a test waits on, the silent other end), closed when the block ends
    ours, theirs = socket.socketpair()
    ours.setblocking(False)
    with ours, theirs:
        yield ours, theirs


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    with socket_pair() as both:
        yield both


async def test_a_wait_still_going_when_its_deadline_passes_ends_the_block(
    pair: tuple[socket.socket, socket.socket], autojump_clock: trio.testing.MockClock
) -> None:
    deadline = Deadline(pair[0])
    start = trio.current_time()
    reached = False
    with deadline.arm(start + 5.0):
        await trio.lowlevel.wait_readable(pair[0])
        reached = True
    assert (reached, deadline.expired, deadline.fired, deadline.deadline, trio.current_time()) == (
        False, True, False, math.inf, start + 5.0
    )


async def test_a_wait_that_gets_its_bytes_in_time_is_not_ended(
    pair: tuple[socket.socket, socket.socket], autojump_clock: trio.testing.MockClock
) -> None:
    deadline = Deadline(pair[0])
    pair[1].send(b"x")
    with deadline.arm(trio.current_time() + 5.0):
        await trio.lowlevel.wait_readable(pair[0])
        got = pair[0].recv(10)
    await trio.sleep(10.0)  # past the deadline: the block is over, nothing fires
    assert (got, deadline.expired, deadline.fired) == (b"x", False, False)


async def test_a_deadline_moved_later_bounds_the_wait_by_the_new_time(
    pair: tuple[socket.socket, socket.socket], autojump_clock: trio.testing.MockClock
) -> None:
    # The watchdog's entry comes due at the first time, finds the deadline moved, and waits again for the second.
    deadline = Deadline(pair[0])
    start = trio.current_time()
    with deadline.arm(start + 5.0):
        await trio.sleep(3.0)
        deadline.deadline = start + 8.0
        await trio.lowlevel.wait_readable(pair[0])
    assert (deadline.expired, trio.current_time()) == (True, start + 8.0)


async def test_an_earlier_deadline_wakes_the_watchdog_sleeping_until_a_later_one(
    autojump_clock: trio.testing.MockClock,
) -> None:
    with socket_pair() as long_pair, socket_pair() as short_pair:
        slow, quick = Deadline(long_pair[0]), Deadline(short_pair[0])
        start = trio.current_time()
        ended: dict[str, float] = {}

        async def wait(name: str, deadline: Deadline, ours: socket.socket, seconds: float) -> None:
            with deadline.arm(trio.current_time() + seconds):
                await trio.lowlevel.wait_readable(ours)
            ended[name] = trio.current_time()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(wait, "slow", slow, long_pair[0], 300.0)
            await trio.testing.wait_all_tasks_blocked()  # the watchdog now sleeps until start + 300
            nursery.start_soon(wait, "quick", quick, short_pair[0], 1.0)
        assert (ended, slow.expired, quick.expired) == ({"quick": start + 1.0, "slow": start + 300.0}, True, True)


async def test_a_deadline_that_passed_while_the_task_was_not_waiting_stops_its_next_wait(
    pair: tuple[socket.socket, socket.socket], autojump_clock: trio.testing.MockClock
) -> None:
    # The watchdog fires while the task sleeps elsewhere (as a task just woken by its bytes is not waiting):
    # the plain stream's next wait does not start, or nothing would ever end it.
    stream = PlainStream(pair[0])
    start = trio.current_time()
    received = None
    with trio.fail_after(100.0):  # were the wait to start, nothing but this would end it
        with stream.deadline.arm(start + 1.0):
            await trio.sleep(2.0)
            received = await stream.receive_answer()
    assert (received, stream.deadline.expired, trio.current_time()) == (None, True, start + 2.0)
    # The next block starts afresh.
    pair[1].send(b"answer")
    with stream.deadline.arm(trio.current_time() + 1.0):
        received = await stream.receive_answer()
    assert (received, stream.deadline.expired) == (b"answer", False)


async def test_a_deadline_that_fired_is_spent_even_when_its_block_never_noticed(
    pair: tuple[socket.socket, socket.socket], autojump_clock: trio.testing.MockClock
) -> None:
    # The watchdog woke the socket (notify_closing) while the task was not waiting, and the block ended without
    # another wait (as when the bytes and the deadline come in one scheduler round): no timeout is reported,
    # but the socket was notified, so its connection must be closed, not reused.
    deadline = Deadline(pair[0])
    start = trio.current_time()
    with deadline.arm(start + 1.0):
        await trio.sleep(2.0)
    assert (deadline.expired, deadline.fired, deadline.spent) == (False, False, True)
    with deadline.arm(trio.current_time() + 1.0):
        pass
    assert deadline.spent  # never cleared


async def test_the_watchdog_heap_stays_bounded_as_connections_come_and_go(
    pair: tuple[socket.socket, socket.socket], autojump_clock: trio.testing.MockClock
) -> None:
    # Every new connection queues an entry; closed ones are dropped when the heap is rebuilt, armed ones kept.
    held = Deadline(pair[0])
    start = trio.current_time()

    async def hold() -> None:
        with held.arm(start + 60.0):
            await trio.lowlevel.wait_readable(pair[0])

    async with trio.open_nursery() as nursery:
        nursery.start_soon(hold)
        await trio.testing.wait_all_tasks_blocked()
        watchdog = _Watchdog.current()
        sizes = set()
        for _ in range(5000):
            with Deadline(pair[0]).arm(trio.current_time() + 30.0):
                pass
            sizes.add(len(watchdog._heap))
        assert max(sizes) <= 2 + _PRUNE_SLACK + 1
    assert (held.expired, trio.current_time()) == (True, start + 60.0)


async def test_a_nan_deadline_is_refused_as_by_a_cancel_scope(pair: tuple[socket.socket, socket.socket]) -> None:
    deadline = Deadline(pair[0])
    with pytest.raises(ValueError, match=r"^deadline must not be NaN$"):
        deadline.arm(math.nan)
    with deadline.arm(math.inf), pytest.raises(ValueError, match=r"^deadline must not be NaN$"):
        deadline.deadline = math.nan


def test_a_connection_kept_for_another_trio_run_is_timed_by_it(pair: tuple[socket.socket, socket.socket]) -> None:
    # Each run has its own watchdog; the first one's heap ends with its run. (Both runs' clocks start at 0.)
    deadline = Deadline(pair[0])
    outcomes = []

    async def wait(answer: bytes) -> None:
        if answer:
            pair[1].send(answer)
        with trio.fail_after(100.0):  # were the deadline not queued in this run, nothing but this would end it
            with deadline.arm(trio.current_time() + 5.0):
                await trio.lowlevel.wait_readable(pair[0])
                pair[0].recv(10)
        outcomes.append((deadline.expired, trio.current_time()))

    trio.run(wait, b"first", clock=trio.testing.MockClock(autojump_threshold=0))
    trio.run(wait, b"", clock=trio.testing.MockClock(autojump_threshold=0))
    assert outcomes == [(False, 0.0), (True, 5.0)]


def pool_for(server: Server, **options: object) -> ConnectionPool:
    return ConnectionPool(scheme="http", host=HOST, port=server.port, **options)  # type: ignore[arg-type]


async def test_a_reused_connection_whose_server_goes_silent_times_out_and_is_not_called_stale(
    mock_clock: trio.testing.MockClock,
) -> None:
    # A timeout is no keep-alive race: WireTimeout, never NotResent, and never a resend.
    mock_clock.autojump_threshold = 1.0
    async with serving(Server()) as server:
        server.queue(ok(b"first"), raw(b"", then="hang"))
        pool = pool_for(server, timeouts=Timeouts(read=0.05))
        reply = await pool.request("POST", "/mcp", JSON_HEADERS, b"1")
        assert (reply.status, await reply.read()) == (200, b"first")
        await reply.aclose()
        with pytest.raises(WireTimeout, match=r"^ReadTimeout after 0.05 s$"):
            await pool.request("POST", "/mcp", JSON_HEADERS, b"2")
        assert (server.bodies(), pool.connections) == ([(1, b"1"), (1, b"2")], 0)
        await pool.aclose()


async def test_a_connection_whose_deadline_fired_is_closed_when_released(mock_clock: trio.testing.MockClock) -> None:
    mock_clock.autojump_threshold = 1.0
    async with serving(Server()) as server:
        server.queue(ok(b"first"), ok(b"second"))
        pool = pool_for(server)
        reply = await pool.request("POST", "/mcp", JSON_HEADERS, b"1")
        (connection,) = pool._busy
        assert connection.deadline is not None
        connection.deadline.spent = True  # what the watchdog's _fire leaves behind in the race above
        assert (reply.status, await reply.read()) == (200, b"first")
        await reply.aclose()
        assert (pool.connections, pool.idle) == (0, 0)
        reply = await pool.request("POST", "/mcp", JSON_HEADERS, b"2")
        assert (reply.status, await reply.read()) == (200, b"second")
        await reply.aclose()
        assert [connection for connection, _ in server.bodies()] == [1, 2]  # a new connection for the second
        await pool.aclose()


async def test_each_wait_for_more_of_the_head_gets_the_whole_read_timeout(mock_clock: trio.testing.MockClock) -> None:
    # The head comes in three parts 0.04 s apart with a 0.05 s read timeout: each wait is within it, the whole is
    # not; then the body, as long after, waited for before the reply returns (prefetch).
    mock_clock.autojump_threshold = 1.0

    async def in_parts(stream: trio.abc.Stream, seen: Seen) -> bool:
        for part in (b"HTTP/1.1 200 OK\r\n", b"Content-Length: 2\r\n", b"\r\n", b"ok"):
            await stream.send_all(part)
            await trio.sleep(0.04)
        return True

    async with serving(Server()) as server:
        server.queue(in_parts, raw(b"HTTP/1.1 200 OK\r\nContent-Le", then="hang"))
        pool = pool_for(server, timeouts=Timeouts(read=0.05))
        start = trio.current_time()
        reply = await pool.request("POST", "/mcp", JSON_HEADERS, b"1", prefetch=True)
        assert (reply.status, await reply.read(), trio.current_time() - start > 0.05) == (200, b"ok", True)
        await reply.aclose()
        with pytest.raises(WireTimeout, match=r"^ReadTimeout after 0.05 s$"):
            await pool.request("POST", "/mcp", JSON_HEADERS, b"2")
        assert pool.connections == 0
        await pool.aclose()
