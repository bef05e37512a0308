"""Which errors say that a member's server is gone (``mcpfsm._client.members.server_gone``), one case each.

A member fails at a use only then; after any other error its client goes on (tests/integration/test_group_heal.py
runs the real cases: a killed child, a stopped server).
"""

from __future__ import annotations

import pytest

from mcpfsm import CallTimeoutError, ProtocolError, RpcError, SessionExpired, TransportError
from mcpfsm._client.members import server_gone
from mcpfsm._core.h1 import H1Error
from mcpfsm._transports.pool import WireTimeout
from mcpfsm._transports.pool.errors import ConnectError, NotResent


class Http:
    """An HTTP transport as ``server_gone`` sees it: no ``ended``."""


class Child:
    """A stdio transport as ``server_gone`` sees it: ``ended`` says whether the child is gone."""

    def __init__(self, ended: bool) -> None:
        self.ended = ended


def caused(cause: Exception, **options: object) -> TransportError:
    error = TransportError("POST to MCP server failed", **options)  # type: ignore[arg-type]
    error.__cause__ = cause
    return error


@pytest.mark.parametrize(
    ("error", "gone"),
    [
        pytest.param(caused(ConnectError("Connection refused", address="127.0.0.1:9", proxy=None)), True, id="refused"),
        pytest.param(caused(WireTimeout("ConnectTimeout", 5)), True, id="connect-timeout"),
        pytest.param(caused(NotResent("dropped")), True, id="kept-alive-connection-dropped"),
        pytest.param(caused(ConnectionResetError("reset")), True, id="reset"),
        pytest.param(caused(H1Error("truncated")), True, id="cut-response"),
        pytest.param(SessionExpired("session-1"), True, id="session-not-renewed"),
        pytest.param(caused(WireTimeout("ReadTimeout", 5)), False, id="read-timeout"),
        pytest.param(TransportError("HTTP 503", status=503), False, id="http-status"),
        pytest.param(TransportError("larger than max_response_bytes"), False, id="limit"),
        pytest.param(CallTimeoutError("total_timeout", 1.0), False, id="call-timeout"),
        pytest.param(RpcError(-32601, "no such method"), False, id="json-rpc-error"),
        pytest.param(ProtocolError("not JSON-RPC"), False, id="protocol-error"),
    ],
)
def test_an_http_member_is_gone_only_when_the_error_says_so(error: Exception, gone: bool) -> None:
    assert server_gone(Http(), error) is gone  # type: ignore[arg-type]


@pytest.mark.parametrize("ended", [True, False])
def test_a_stdio_member_is_gone_exactly_when_its_child_ended(ended: bool) -> None:
    # Whatever the error (an oversized line fails one request and the child goes on): the child decides.
    for error in (TransportError("the MCP server process exited"), TransportError("a line too long")):
        assert server_gone(Child(ended), error) is ended  # type: ignore[arg-type]
