"""Streamable HTTP transport (MCP "Transports"), behaving like an httpx client wherever a user can tell.

One :class:`HttpTransport` per client. By default it drives mcpfsm's own keep-alive
:class:`~mcpfsm._transports.pool.ConnectionPool` (HTTP/1.1 over trio sockets, one pool per origin): a pool
does constant work per request, where httpx's ``AsyncClient`` and httpcore's pool spend more CPU on each
request than the rest of a tool call together. Any ``httpx.AsyncBaseTransport`` given as ``transport``
(``httpx.MockTransport`` in unit tests) is driven instead, unchanged; both answer with a
:class:`~mcpfsm._transports.pool.HttpResponse`.

What ``httpx.AsyncClient(follow_redirects=True, trust_env=True)`` does, this does on either path, one
module per concern (as httpx's ``send → _send_handling_redirects → _send_single_request``):

- :mod:`.transport`: :class:`HttpTransport`, the POST of each message and its answer, the session ``DELETE``;
- :mod:`.endpoint`: **redirects** (RFC 9110 §15.4): 307 and 308 followed, a 308 moving the endpoint; 301/302/303
  not followed for a POST (the error names the ``Location``);
- :mod:`.headers`: **credentials** only ever to the origin of the URL the transport was made with (the URL's
  own as ``Authorization: Basic``, RFC 7617), ``User-Agent``, ``Accept-Encoding``, **cookies** (RFC 6265);
- :mod:`.urls`: parsing, redaction (credentials appear in no URL, log line or error) and
  :func:`carries_credentials`, the one rule also for ``Client.http`` and the CLI;
- :mod:`.routing`: the pool of each origin, **proxies** (``proxy=``, or with ``trust_env`` the environment's
  rules) and TLS (``verify``/``cert``); :mod:`.httpx_route`: a caller's httpx transport instead;
- :mod:`.body`: content decoding and **limits** (``max_response_bytes``, counted after decoding);
- :mod:`.event_stream`: a POST's ``text/event-stream`` answer, its other messages handed to the inbound
  handler, a cut legacy stream resumed; :mod:`.standalone`: the legacy standalone ``GET`` stream;
- :mod:`.errors`: the one mapping point: every connection-layer exception (httpx, trio, OS, HTTP framing)
  becomes a :class:`~mcpfsm.TransportError`.
"""

from __future__ import annotations

from .endpoint import MAX_REDIRECTS
from .headers import USER_AGENT
from .transport import HttpTransport
from .urls import carries_credentials

__all__ = ["MAX_REDIRECTS", "USER_AGENT", "HttpTransport", "carries_credentials"]
