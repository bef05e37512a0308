"""Keep-alive HTTP/1.1 connections to one server, over trio sockets (MCP "Transports").

:class:`ConnectionPool` is the default connection layer of :class:`~mcpfsm.HttpTransport` for
``http://`` and ``https://`` endpoints. It does what an MCP client needs and nothing more, with
constant work per request whatever the number of connections. One concept per module, as httpcore's
``_async/``:

- :mod:`.connection_pool`: the pool of one origin: a LIFO stack of idle keep-alive connections, checkout
  and release, and how many connections (the policy measured with ``bench/call.py --pool-sizes``);
- :mod:`.connection`: opening one connection (TCP, TLS, through a proxy), and a plain TCP socket driven
  directly (``http://``, the usual local or in-cluster MCP server);
- :mod:`.http11`: one request and its response head on one connection (framing is :mod:`mcpfsm._core.h1`),
  with its timeouts, and the keep-alive race: only a *resendable* request is sent again (RFC 9110 §9.2.2);
- :mod:`.reply`: the response, whose body is read on demand and whose connection then goes back;
- :mod:`.http_proxy`: forward proxies (absolute form, RFC 9112 §3.2.2; ``CONNECT`` tunnels, RFC 9110 §9.3.6);
- :mod:`.interfaces`: :class:`Timeouts` and :class:`HttpResponse`, what ``HttpTransport`` consumes;
- :mod:`.errors`: what the pool raises.

Every wait has its timeout (:class:`Timeouts`); an expired one raises :class:`WireTimeout`. On a plain
connection the timeout is a :class:`~mcpfsm._transports.deadlines.Deadline` on the connection, enforced by
one watchdog task per trio run, not a cancel scope per request (which cost more than the rest of the
exchange); TLS connections use cancel scopes. The body of a *long-lived* request (a stream meant to stay
open and quiet: a subscription, the standalone event stream) is the exception: the read timeout bounds the
wait for its head, not the silences of its body.

Errors: :class:`WireError` (the pool is closed, or a response was closed before its body was
read), :class:`ConnectError` (a connection could not be opened: its plain cause),
:class:`NotResent`, :class:`TunnelError`, :class:`WireTimeout`,
:class:`~mcpfsm._core.h1.H1Error` (a request that cannot be written, a server that closed the
connection mid-response or broke HTTP/1.1 framing), and ``OSError`` or
``trio.BrokenResourceError`` from the socket. :mod:`mcpfsm._transports.http.errors` turns them into
:class:`~mcpfsm.TransportError`. Cancellation is never wrapped; a cancelled request closes its
connection.
"""

from .connection_pool import ConnectionPool
from .errors import ConnectError, NotResent, TunnelError, WireError, WireTimeout
from .http_proxy import ProxyRoute
from .interfaces import HttpResponse, Timeouts
from .reply import WireReply

__all__ = [
    "ConnectError",
    "ConnectionPool",
    "HttpResponse",
    "NotResent",
    "ProxyRoute",
    "Timeouts",
    "TunnelError",
    "WireError",
    "WireReply",
    "WireTimeout",
]
