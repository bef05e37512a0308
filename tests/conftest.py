"""Shared fixtures: a fresh ``FakeServer``, the dual-mode test peer, and captured loguru records (as dicts or as
(level, message))."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from loguru import logger

from tests.support.fakeserver import FakeServer
from tests.support.fastmcp_peer import FastmcpServer, run_fastmcp
from tests.support.peer.fixtures import HttpPeer, start_http_peer
from tests.support.redisserver import RedisServer, start_redis

# `tests.<module>` imports (tests.support.peer, tests.support.fakeserver) resolve through pyproject's pytest
# `pythonpath = ["."]`.
from tooling.processes import RunningAuthServer, RunningSkillsPeer, run_authserver, run_skills_peer

# The pytest plugin's own tests (tests/testing/test_plugin.py) run pytest in a subprocess with pytester.
pytest_plugins = ["pytester"]

# No timed assertions: hypothesis' per-example deadline (200 ms) is one, and fails on a busy 2-core machine; so is
# the health check that fails a test whose examples were slow to generate.
settings.register_profile("mcpfsm", deadline=None, suppress_health_check=[HealthCheck.too_slow])
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


@pytest.fixture(scope="module")
def modern_peer() -> Iterator[HttpPeer]:
    """The test peer in its ``modern`` mode (no legacy era), one per test module that asks for it."""
    with start_http_peer(mode="modern", timeout=60) as peer:
        yield peer


@pytest.fixture(scope="module")
def tasks_peer() -> Iterator[HttpPeer]:
    """The tasks server (SEP-2663, ``tooling.peer_tasks``) in modern mode, one per test module."""
    with start_http_peer("modern", module="tooling.peer_tasks") as running:
        yield running


@pytest.fixture(scope="module")
def skills_peer() -> Iterator[RunningSkillsPeer]:
    """The skills server (skills as resources), one per test module; tests clear its log first."""
    with run_skills_peer() as running:
        yield running


@pytest.fixture(scope="module")
def fastmcp_http() -> Iterator[FastmcpServer]:
    """fastmcp's server (tests/support/fastmcp_server.py) over HTTP, one per test module that asks for it."""
    with run_fastmcp() as server:
        yield server


@pytest.fixture(scope="module")
def authserver() -> Iterator[RunningAuthServer]:
    """The project's local authorization server (with its MCP endpoint) in a process of its own, one per test module
    that asks for it. It starts with an empty scenario: a test (or a fixture of its module) calls ``configure`` with
    its own, which also starts the server afresh (no clients, tokens or log of an earlier test)."""
    with run_authserver({}) as running:
        yield running


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
