"""Timeouts of the waits on plain TCP connections, without a trio cancel scope per request.

A trio ``CancelScope`` is the general way to bound a wait, and the pool still uses one for TLS connections
and the rarer waits. On a plain connection (``http://``, the usual local or in-cluster MCP server) the
exchange of one request is a write and one or two waits for the socket to become readable, and entering
and leaving a cancel scope for it cost more than everything else the pool does for the request (counted
under callgrind as ``bench/instructions.py`` counts, before and after commit 055767f, which added this module).

So a plain connection's exchange arms a :class:`Deadline` instead: the wait's deadline is written on the
connection, and one trio *system* task per run (the :class:`_Watchdog`) sleeps until the earliest armed
deadline. When a deadline passes while it is still armed, the watchdog wakes the task waiting on that
socket with :func:`trio.lowlevel.notify_closing` (its ``wait_readable``/``wait_writable`` raises
``trio.ClosedResourceError``), and :meth:`Deadline.__exit__` turns that into the end of the block, as a
cancel scope's deadline would: the code after the ``with`` says which timeout it was. The connection is
then never used again (a timed-out exchange always discards its connection), as trio asks of a socket
passed to ``notify_closing``.

The per-request cost is a few attribute stores: moving a deadline later (each wait gets the whole read
timeout) does not touch the watchdog's heap, which holds at most one entry per connection, re-queued when
it comes due and the deadline has moved on. Only a deadline earlier than every one queued (the first
request of a run, a pool with a shorter timeout) wakes the watchdog. What a cancel scope's deadline
guarantees, this guarantees: a wait that has not ended when its deadline passes fails; a wait that got its
bytes first does not (when the two happen in the same scheduler round, the bytes win, as they would
against a cancel scope the scheduler had not yet cancelled). Cancellation from outside is untouched:
nothing here is a cancel scope.
"""

from __future__ import annotations

import math
from heapq import heapify, heappop, heappush
from types import TracebackType
from typing import Protocol

import trio

__all__ = ["Deadline"]

# Stale heap entries (connections closed or no longer waiting) tolerated beyond twice the armed ones
# before the heap is rebuilt: amortised constant work per request, bounded memory whatever the churn.
_PRUNE_SLACK = 64


class _Socket(Protocol):
    def fileno(self) -> int: ...


class Deadline:
    """The timeout of one connection's waits; a context manager around them, like a cancel scope's deadline.

    ``deadline`` (a time on trio's clock, ``math.inf`` for none) may be moved at any time inside the block.
    A wait on ``socket`` still going on when it passes raises ``trio.ClosedResourceError`` inside the block,
    which ``__exit__`` swallows: :attr:`expired` is then true, as ``cancelled_caught`` of a cancel scope.
    One object per connection, entered by one exchange at a time.
    """

    __slots__ = ("_deadline", "_queued", "_socket", "expired", "fired", "spent")

    def __init__(self, socket: _Socket) -> None:
        """Prepare the timeouts of the waits on ``socket``; nothing is armed."""
        self._socket = socket
        self._deadline = math.inf
        # The deadline of this connection's entry in the watchdog's heap (math.inf: none queued).
        self._queued = math.inf
        self.fired = False
        """The watchdog found the deadline passed and woke the socket's waiters (until the block ends)."""
        self.expired = False
        """The block ended because the deadline passed."""
        self.spent = False
        """The watchdog has woken this socket's waiters (``notify_closing``), even if the block then ended
        without noticing (its bytes came in the same scheduler round): trio's rule is that such a socket is
        closed, so its connection is never reused. Never cleared."""

    def arm(self, deadline: float) -> Deadline:
        """Bound the waits of the block that follows by ``deadline``; returns ``self`` to enter.

        Raises:
            ValueError: ``deadline`` is NaN (as for a cancel scope).
        """
        if deadline != deadline:
            raise ValueError("deadline must not be NaN")
        self.fired = self.expired = False
        self._deadline = deadline
        if deadline < self._queued:
            self._queue(deadline)
        return self

    @property
    def deadline(self) -> float:
        """When the current wait times out (``math.inf``: never)."""
        return self._deadline

    @deadline.setter
    def deadline(self, deadline: float) -> None:
        if deadline != deadline:
            raise ValueError("deadline must not be NaN")
        self._deadline = deadline
        if deadline < self._queued:
            self._queue(deadline)

    def _queue(self, deadline: float) -> None:
        # Earlier than this connection's queued entry, or none is queued: queue one. A later deadline is found
        # when the queued entry comes due (see _Watchdog.run), so moving a deadline later queues nothing.
        self._queued = deadline
        _Watchdog.current().queue(deadline, self)

    def check(self) -> None:
        """Before a wait on the socket: raise ``trio.ClosedResourceError`` if the deadline has passed.

        The watchdog wakes a task waiting on the socket; this stops one that was not waiting when it fired
        (it had just been woken by the bytes it waited for) from starting a wait nothing would end. Like a
        cancel scope's cancellation, it holds until the block ends, even if the deadline is moved.
        """
        if self.fired:
            raise trio.ClosedResourceError("the deadline of this wait has passed")

    def __enter__(self) -> Deadline:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> bool:
        self._deadline = math.inf
        fired, self.fired = self.fired, False
        if fired and isinstance(exc, trio.ClosedResourceError):
            self.expired = True
            return True
        return False

    def _fire(self) -> None:
        # Called by the watchdog, in its own task, when the armed deadline has passed.
        self._deadline = math.inf
        self.fired = self.spent = True
        if self._socket.fileno() != -1:
            trio.lowlevel.notify_closing(self._socket)


class _Watchdog:
    # One per trio run: a heap of (deadline, sequence, Deadline) and the system task that sleeps until its
    # first entry. Each Deadline has at most one current entry (its `_queued`); an entry superseded by an
    # earlier one, or whose Deadline is no longer armed when it comes up, is dropped then or when the heap
    # is rebuilt.
    __slots__ = ("_heap", "_pruned", "_sequence", "_target", "_wake")

    _current: trio.lowlevel.RunVar[_Watchdog] = trio.lowlevel.RunVar("mcpfsm connection deadlines")

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Deadline]] = []
        # The heap's size after the last rebuild: it is rebuilt when it has grown beyond twice that (plus
        # some slack), so the work of rebuilding is constant per entry pushed, and the memory bounded.
        self._pruned = 0
        self._sequence = 0
        # What the task sleeps until; a deadline queued before it wakes the task.
        self._target = math.inf
        self._wake = trio.lowlevel.ParkingLot()

    @classmethod
    def current(cls) -> _Watchdog:
        try:
            return cls._current.get()
        except LookupError:
            watchdog = cls()
            # Served before it is registered: a run that cannot start the task (shutting down) keeps none.
            trio.lowlevel.spawn_system_task(watchdog.run, name="mcpfsm connection deadlines")
            cls._current.set(watchdog)
            return watchdog

    def queue(self, deadline: float, owner: Deadline) -> None:
        if len(self._heap) > 2 * self._pruned + _PRUNE_SLACK:
            self._prune()
        self._sequence += 1
        heappush(self._heap, (deadline, self._sequence, owner))
        if deadline < self._target:
            self._target = deadline
            self._wake.unpark_all()

    def _prune(self) -> None:
        # Keep the current entry of every connection still armed; forget the others (closed connections,
        # idle ones, superseded entries).
        kept = []
        for entry in self._heap:
            deadline, _, owner = entry
            if deadline != owner._queued:
                continue
            if owner._deadline == math.inf:
                owner._queued = math.inf
            else:
                kept.append(entry)
        heapify(kept)
        self._heap = kept
        self._pruned = len(kept)

    async def run(self) -> None:
        # A system task: nothing may escape it but the cancellation that ends the run.
        try:
            await self._serve()
        finally:
            # The run is ending: a connection kept for another trio run (each has its own watchdog) must not
            # count on an entry in this heap.
            for _, _, owner in self._heap:
                owner._queued = math.inf
            self._heap = []

    async def _serve(self) -> None:
        while True:
            now = trio.current_time()
            heap = self._heap
            while heap and heap[0][0] <= now:
                deadline, _, owner = heappop(heap)
                if deadline != owner._queued:
                    continue  # superseded by an earlier entry of the same connection
                owner._queued = math.inf
                if owner._deadline <= now:
                    owner._fire()
                elif owner._deadline != math.inf:
                    # Moved later since it was queued: queue it again for when it is due.
                    owner._queued = owner._deadline
                    self._sequence += 1
                    heappush(heap, (owner._deadline, self._sequence, owner))
            self._target = heap[0][0] if heap else math.inf
            with trio.CancelScope(deadline=self._target):
                await self._wake.park()
