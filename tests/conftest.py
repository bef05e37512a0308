"""Shared fixtures: a fresh ``FakeServer``, the dual-mode test peer, and captured loguru records (as dicts or as
(level, message))."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import settings
from loguru import logger

# `tests.<module>` imports (tests.support.peer, tests.support.fakeserver) resolve through pyproject's pytest
# `pythonpath = ["."]`.
from tests.support.fakeserver import FakeServer
from tests.support.peer.fixtures import HttpPeer, start_http_peer
from tests.support.redisserver import RedisServer, start_redis

# The pytest plugin's own tests (tests/testing/test_plugin.py) run pytest in a subprocess with pytester.
pytest_plugins = ["pytester"]

# No timed assertions: hypothesis' per-example deadline (200 ms) is one, and fails on a busy 2-core machine.
settings.register_profile("mcpfsm", deadline=None)
settings.load_profile("mcpfsm")


@pytest.fixture
def fake() -> FakeServer:
    """A modern-era fake MCP server with no tools; tests set ``fake.tools`` and queue answers."""
    return FakeServer()


@pytest.fixture(scope="module")
def dual() -> Iterator[HttpPeer]:
    """The test peer (official SDK) in dual mode, one per test module that asks for it."""
    with start_http_peer() as peer:
        yield peer


@pytest.fixture
def peer(dual: HttpPeer) -> HttpPeer:
    """The module's dual-mode peer, reset (``{"action": "reset"}``) before each test."""
    dual.control({"action": "reset"})
    return dual


@pytest.fixture
def ca() -> Any:
    """A trustme certificate authority (trustme is in the test extra: a missing install fails, never skips)."""
    import trustme

    return trustme.CA()


@pytest.fixture
def logs() -> Iterator[list[dict[str, Any]]]:
    """Every loguru record mcpfsm logs during the test (DEBUG and up), as loguru record dicts."""
    records: list[dict[str, Any]] = []
    logger.enable("mcpfsm")
    sink = logger.add(lambda message: records.append(dict(message.record)), level="DEBUG", filter="mcpfsm")
    try:
        yield records
    finally:
        logger.remove(sink)
        logger.disable("mcpfsm")


@pytest.fixture
def records() -> Iterator[list[tuple[str, str]]]:
    """Every loguru record logged during the test (DEBUG and up), as ``(level name, message)`` pairs."""
    seen: list[tuple[str, str]] = []
    logger.enable("mcpfsm")
    sink = logger.add(lambda m: seen.append((m.record["level"].name, m.record["message"])), level="DEBUG")
    try:
        yield seen
    finally:
        logger.remove(sink)
        logger.disable("mcpfsm")


@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisServer]:
    """A real ``redis-server`` on a free 127.0.0.1 port, one per test module that asks for it.

    See tests/support/redisserver.py."""
    with start_redis() as server:
        yield server


@pytest.fixture
def redis_prefix() -> str:
    """A key prefix of this test's own, so that the tests of a module never see each other's keys."""
    return f"mcpfsm-test-{uuid.uuid4().hex[:12]}:"
