"""Fixtures of the transport tests."""

from __future__ import annotations

import pytest
import trio.testing


@pytest.fixture
def clock() -> trio.testing.MockClock:
    """trio's mock clock for the tests that ask for it (pytest-trio runs a test on the clock a fixture returns).

    The clock jumps only when every task has waited 10 ms of real time: loopback I/O between a raw server and the
    client never looks like an idle wait; a reconnect delay or a server's hour of silence does."""
    return trio.testing.MockClock(autojump_threshold=0.01)
