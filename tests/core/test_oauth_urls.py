"""URLs (mcpfsm._core.oauth.urls): which hosts are loopback (RFC 8252 §7.3)."""

from __future__ import annotations

import pytest

from mcpfsm._core import oauth as o


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("localhost", True),
        ("LOCALHOST", True),
        ("127.0.0.1", True),
        ("127.255.0.9", True),
        ("::1", True),
        ("[::1]", True),
        ("128.0.0.1", False),
        ("localhost.example.com", False),
        ("10.0.0.1", False),
        ("", False),
        (None, False),
    ],
)
def test_is_loopback_host(host: str | None, expected: bool) -> None:
    assert o.is_loopback_host(host) is expected
