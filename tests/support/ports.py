"""An OS-assigned loopback port held for a test, for listeners that must be told their port in advance.

The loopback authorizer listens on the port its redirect URI names, and that URI is fixed before it listens
(it is registered with the authorization server first). A fixed port collides with a parallel run of the
suite; a port found by binding port 0 and closing the socket may be handed to someone else before the
listener takes it. :func:`reserved_port` does neither: the socket that got the port from the OS stays bound
(with ``SO_REUSEADDR``, never listening) for the whole block, so no other ``bind`` to port 0 is given that
port, while a listener that also sets ``SO_REUSEADDR`` (trio's ``open_tcp_listeners`` does, on every
platform but Windows) can still take it (Linux ``socket(7)``: only an active listener blocks such a bind).
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["reserved_port"]


@contextmanager
def reserved_port(host: str = "127.0.0.1") -> Iterator[int]:
    """Yield a port on ``host`` that the OS assigned and that stays reserved until the block ends."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
        holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        holder.bind((host, 0))
        yield holder.getsockname()[1]
