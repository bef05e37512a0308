"""Scopes (mcpfsm._core.oauth.scopes; MCP 2026-07-28 "Scope Selection Strategy"): what a flow asks for, offline
access, step-up."""

from __future__ import annotations

import pytest

from mcpfsm._core import oauth as o
from mcpfsm._core.oauth import BearerChallenge
from tests.core.oauth_cases import (
    AS,
    MCP,
    as_metadata,
)


@pytest.mark.parametrize(
    ("challenge", "prm_scopes", "expected"),
    [
        pytest.param(BearerChallenge(scope=("mcp:basic",)), ("a", "b"), ("mcp:basic",), id="challenge-wins"),
        pytest.param(BearerChallenge(), ("a", "b", "a"), ("a", "b"), id="prm-scopes"),
        pytest.param(None, ("a",), ("a",), id="no-challenge"),
        pytest.param(BearerChallenge(), None, (), id="none"),
        pytest.param(BearerChallenge(), (), (), id="empty-prm-list"),
    ],
)
def test_requested_scopes(
    challenge: BearerChallenge | None, prm_scopes: tuple[str, ...] | None, expected: tuple[str, ...]
) -> None:
    prm = o.ProtectedResourceMetadata(resource=MCP, authorization_servers=(AS,), scopes_supported=prm_scopes)
    assert o.requested_scopes(challenge, prm) == expected


def test_requested_scopes_without_metadata() -> None:
    assert o.requested_scopes(None, None) == ()


@pytest.mark.parametrize(
    ("scopes", "supported", "wanted", "expected"),
    [
        pytest.param(
            ("mcp:basic",), ("mcp:basic", "offline_access"), True, ("mcp:basic", "offline_access"), id="added"
        ),
        pytest.param(("mcp:basic",), ("mcp:basic", "mcp:read"), True, ("mcp:basic",), id="not-supported"),
        pytest.param(("mcp:basic",), None, True, ("mcp:basic",), id="no-list"),
        pytest.param((), ("offline_access",), True, (), id="empty-scope-set"),
        pytest.param(("mcp:basic",), ("offline_access",), False, ("mcp:basic",), id="refresh-unwanted"),
        pytest.param(("offline_access", "a"), ("offline_access",), True, ("offline_access", "a"), id="already-there"),
    ],
)
def test_with_offline_access(
    scopes: tuple[str, ...], supported: tuple[str, ...] | None, wanted: bool, expected: tuple[str, ...]
) -> None:
    assert o.with_offline_access(scopes, as_metadata(scopes_supported=supported), refresh_wanted=wanted) == expected


def test_step_up_scopes_and_parameter() -> None:
    assert o.step_up_scopes(("mcp:basic", "offline_access"), ("mcp:write", "mcp:basic")) == (
        "mcp:basic",
        "offline_access",
        "mcp:write",
    )
    assert o.scope_parameter(("a", "b")) == "a b"
    assert o.scope_parameter(()) is None
