"""AuthorizationError (mcpfsm._core.errors): its message names the step that refused, then the server's OAuth error."""

from __future__ import annotations

from mcpfsm._core.errors import AuthorizationError, McpError


def test_error_message_and_fields() -> None:
    error = AuthorizationError(
        "the token endpoint answered HTTP 400",
        state="exchanging",
        error="invalid_grant",
        error_description="code used",
    )
    assert (
        str(error)
        == "exchanging: the token endpoint answered HTTP 400 (error='invalid_grant', error_description='code used')"
    )
    assert (error.state, error.reason, error.error, error.error_description) == (
        "exchanging",
        "the token endpoint answered HTTP 400",
        "invalid_grant",
        "code used",
    )
    assert str(AuthorizationError("x", state="failed", error="e")) == "failed: x (error='e')"
    assert str(AuthorizationError("x", state="failed")) == "failed: x"
    assert isinstance(error, McpError)
