"""The telemetry seam: a session layer and an observer of the drivers, present only when someone listens.

A client asks :func:`probe` once, when it is created, whether an application configured an OpenTelemetry
tracer or meter provider (the global API's, so it may be configured after ``import mcpfsm``). The answer
is ``None`` unless one is, and then the client builds nothing per call: the session's ``telemetry`` stays
``None`` (one attribute test per request), calls run the driver directly, and OpenTelemetry is never
imported. The test needs no import either: a provider can only have been configured by code that imported
``opentelemetry.trace`` or ``opentelemetry.metrics``, so when neither module is loaded the answer is
``None`` at once (and so it is with the ``otel`` extra not installed).

Otherwise :class:`Telemetry` (implemented in ``mcpfsm._client.otel``, docs/telemetry.md) is

- a session layer: :meth:`Telemetry.request` wraps each request the session sends (one JSON-RPC id: a
  CLIENT span, the W3C context in ``params._meta``, the duration histogram);
- the wrapper of each machine's run: :meth:`Telemetry.run` (an INTERNAL span named by the machine's definition,
  ``MachineDefinition.span``, that is the current span while the run sends, so its requests are its children),
  and for the tool-call and authorization machines :meth:`Telemetry.tool_call` and :meth:`Telemetry.flow`;
- an audit sink: :meth:`Telemetry.observe` puts each event on its run's span as a span event.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from .._core.results import ToolResult
from .._drivers.tool_call import ToolCall
from .._transports.base import Transport
from .options import EventSink

if TYPE_CHECKING:
    from .._drivers.authorization import AuthorizationFlow
    from .._machines.definition import MachineDefinition

__all__ = ["EventSink", "SessionState", "Telemetry", "probe"]

R = TypeVar("R")


class SessionState(Protocol):
    """What the request layer reads of the session: the era and the legacy session in effect."""

    @property
    def version(self) -> str | None:
        """The negotiated protocol version."""
        ...

    @property
    def session_id(self) -> str | None:
        """The legacy ``Mcp-Session-Id`` in effect."""
        ...


class Telemetry(Protocol):
    """What the session, the client and the authorization layer ask of telemetry that is switched on."""

    async def request(
        self,
        session: SessionState,
        method: str,
        params: Mapping[str, Any] | None,
        request_id: int,
        send: Callable[[Mapping[str, Any] | None], Awaitable[dict[str, Any]]],
    ) -> dict[str, Any]:
        """Send one request through ``send`` (with the trace context added to ``params._meta``) and record it."""
        ...

    async def run(
        self,
        machine: MachineDefinition[Any, Any],
        run_id: str,
        attributes: Mapping[str, Any],
        body: Callable[[], Awaitable[R]],
        *,
        tool: str = "",
    ) -> R:
        """Run ``body``, one run of ``machine``, under the span its definition names; its result, or what it raised."""
        ...

    async def tool_call(self, call: ToolCall) -> ToolResult:
        """Run ``call`` under its span and return its result."""
        ...

    async def flow(self, flow: AuthorizationFlow) -> None:
        """Run an authorization ``flow`` under its span."""
        ...

    def observe(self, on_event: EventSink | None) -> EventSink | None:
        """The ``on_event`` of the client's audit bus: this layer's sink, then ``on_event``."""
        ...


def probe(endpoint: Transport | str) -> Telemetry | None:
    """Telemetry from the global OpenTelemetry providers for a client of ``endpoint``, or ``None`` when none is set.

    ``endpoint`` is the client's transport, or the URL of the HTTP transport about to be made for it (whose
    authorization layer takes this telemetry first).
    """
    if sys.modules.get("opentelemetry.trace") is None and sys.modules.get("opentelemetry.metrics") is None:
        return None
    try:
        from . import otel
    except ImportError:  # the extra is partly installed: behave as without it
        return None
    return otel.from_globals(endpoint)
