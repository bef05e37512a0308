"""mcpfsm's pytest plugin: MCP cassettes for agent tests (docs/testing.md); the ``pytest11`` entry point ``mcpfsm``.

It adds ``--mcp-record=none|once|all`` and the ``mcp_cassette`` fixture. Loading it imports pytest and nothing of
mcpfsm (nor trio, httpx or h11): a project with mcpfsm installed that never asks for the fixture pays nothing for
it. The fixture's work is in :mod:`mcpfsm.testing._pytest`, imported by the first test that asks for it.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from mcpfsm.testing._pytest import CassettePath

RECORD_MODES = ("none", "once", "all")
"""``--mcp-record``: ``none`` replays only (a missing cassette fails the test), ``once`` records what is missing,
``all`` records every cassette again."""

_FAILED = pytest.StashKey[bool]()


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add ``--mcp-record``."""
    group = parser.getgroup("mcpfsm", "MCP cassettes (mcpfsm.testing)")
    group.addoption(
        "--mcp-record",
        choices=RECORD_MODES,
        default="none",
        dest="mcp_record",
        help="none (default): replay cassettes, a missing one fails its test; once: record the missing ones"
        " against the real server; all: record every one again",
    )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    """Remember whether a test failed, so that what it was recording does not replace its cassette."""
    outcome = yield
    report = outcome.get_result()
    if report.when in ("setup", "call") and report.failed:
        item.stash[_FAILED] = True


@pytest.fixture
def mcp_cassette(request: pytest.FixtureRequest) -> Generator[CassettePath, None, None]:
    """The test's cassette: ``cassettes/{module}/{test}.jsonl`` beside the test file, as a ``pathlib.Path``.

    ``mcp_cassette.client(url_or_command, **options)`` returns an unentered ``mcpfsm.Client`` that records the
    real server to the cassette or replays it, as ``--mcp-record`` says (docs/testing.md).
    """
    from mcpfsm.testing._pytest import cassette_for

    cassette = cassette_for(request)
    yield cassette
    cassette.finish(failed=request.node.stash.get(_FAILED, False))
