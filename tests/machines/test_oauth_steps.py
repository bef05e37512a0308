"""The state names the pure OAuth readers put in their errors are the authorization machine's own.

``mcpfsm._core`` may not import ``mcpfsm._machines`` (tests/client/test_layers.py), so the readers of
``mcpfsm._core.oauth`` name the step they refuse in from ``_core/oauth/_steps.py``; this test holds those
names to the machine definition, the single source of the states.
"""

from __future__ import annotations

from mcpfsm._core.oauth import _steps
from mcpfsm._machines.authorization import AUTHORIZATION, State


def test_the_step_names_are_the_machines_working_states() -> None:
    names = {getattr(_steps, name) for name in _steps.__all__}
    working = {str(state) for state in State if state not in AUTHORIZATION.terminal and state != AUTHORIZATION.initial}
    assert names == working
    assert len(names) == len(_steps.__all__) == 7
