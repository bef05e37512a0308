"""Rules the suite keeps about itself, where a machine can check them.

Checked here: no test cancels after a short fixed delay (`move_on_after`/`fail_after` with a literal below one
second): on a busy machine the delay may end before the thing it stands for happened. The suite's layout
(docs/development.md, "The test suite"): helpers live in tests/support/, not loose at the top of tests/, and no test
reaches into a client's session (``._session``) — it goes through the public API or a part's own constructor. Not
checked by this file, kept by review: short timeouts handed to the code under test (`Timeouts(read=0.05)`,
`httpx.Timeout`) either wait for something that never comes, or run on a mock clock that moves only once every task has
waited (`mock_clock.autojump_threshold`); tests wait for a readiness signal (an event, a log entry, a READY
line) and bound that wait with a generous hang guard."""

from __future__ import annotations

import ast
from typing import Final

from tests.support.peer.fixtures import REPO_ROOT

SHORT: Final = 1.0
"""Deadlines below this many seconds are timing, not a hang guard."""
TIMED: Final = frozenset({"move_on_after", "fail_after"})


def short_deadlines(source: str) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        first = node.args[0]
        number = first.value if isinstance(first, ast.Constant) else None
        if name in TIMED and isinstance(number, int | float) and number < SHORT:
            found.append((node.lineno, f"{name}({number})"))
    return sorted(found)


def test_the_rule() -> None:
    source = "with trio.move_on_after(0.1):\n    pass\nwith trio.fail_after(120):\n    pass\nmove_on_after(0.5)\n"
    assert short_deadlines(source) == [(1, "move_on_after(0.1)"), (5, "move_on_after(0.5)")]


def test_no_test_cancels_after_a_short_fixed_delay() -> None:
    found = {
        str(path.relative_to(REPO_ROOT)): hits
        for path in sorted((REPO_ROOT / "tests").rglob("*.py"))
        if (hits := short_deadlines(path.read_text(encoding="utf-8")))
    }
    assert found == {}


def private_sessions(source: str) -> list[int]:
    """The lines of ``source`` that read or write an attribute named ``_session``."""
    nodes = ast.walk(ast.parse(source))
    return sorted(node.lineno for node in nodes if isinstance(node, ast.Attribute) and node.attr == "_session")


def test_the_session_rule() -> None:
    assert private_sessions("client._session.shared.timeout = 1\nx = client.session\nlayer = c._session\n") == [1, 3]


def test_no_test_reaches_into_a_clients_session() -> None:
    found = {
        str(path.relative_to(REPO_ROOT)): hits
        for path in sorted((REPO_ROOT / "tests").rglob("*.py"))
        if (hits := private_sessions(path.read_text(encoding="utf-8")))
    }
    assert found == {}


def test_the_top_of_tests_holds_only_the_shared_fixtures() -> None:
    # Servers, workers and fakes are in tests/support/; a folder's fixtures in its conftest.py.
    top = sorted(path.name for path in (REPO_ROOT / "tests").glob("*.py"))
    assert top == ["__init__.py", "conftest.py"]
