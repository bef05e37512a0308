"""The driver of one request through the gate (the machine in ``mcpfsm._machines.gate``), under asyncio or trio.

:class:`GateRun` is one request: :meth:`GateRun.run` drives it with the shared loop
(:func:`~mcpfsm._drivers.driver.drive`) from ``received`` to ``forwarded``, ``reported``, ``rejected`` or
``cancelled``, one effect per state, and publishes one :class:`~mcpfsm.GateEvent` per state entered. Everything the
effects decide comes from the pure core (``mcpfsm._core.gate``: the limits, the era, the parse, the verdict, the
refusals); everything they do goes through a :class:`GatePort`, which the ASGI middleware and the proxy implement.

The middleware runs inside the SDK's and fastmcp's Starlette apps, which uvicorn serves on asyncio, and the proxy on
Hypercorn's trio worker, so the run names neither library: its every wait is I/O through the port (reading the body,
fetching a listing, forwarding, refusing), and those awaits are its checkpoints. A state that only computes (the
check) is no checkpoint: the loop does not stop the scheduler between states (``bench/gate.py``). Cancellation
(asyncio's or trio's) arriving at one of those awaits ends the run in ``cancelled`` from the state it was in, and
propagates unchanged.

A run whose events nobody listens to (no ``on_event``) builds none: it keeps its state and nothing else.

The port's contract, in one place:

- :meth:`GatePort.read_body` reads the body within its bound (the only read of it);
- :meth:`GatePort.schema` and :meth:`GatePort.learn` say what is known of the called tool (looked up, or fetched);
- :meth:`GatePort.forward` passes the request on (optionally without its ``Mcp-Param-*`` headers) and streams the
  answer back; :meth:`GatePort.refuse` answers the client instead. Exactly one of them is awaited per run, and a
  run that refuses never forwards.

A port turns its own expected failures into outcomes (an upstream that fails to answer is the port's 502, a fetch that
fails is ``learn`` returning ``None``); an exception out of a port method is a bug and propagates without an edge.
"""

from __future__ import annotations

import inspect
import itertools
import secrets
from collections.abc import Callable, Coroutine, Mapping
from time import perf_counter, time_ns
from typing import Any, Final, Protocol

from .._core.constants import HEADER_MISMATCH, INVALID_REQUEST
from .._core.events import utc_timestamp
from .._core.events.gate import GateEvent
from .._core.gate import (
    GateRefusal,
    GateSettings,
    HeaderPairs,
    McpHeaders,
    ParsedRequest,
    Refusal,
    ToolSchema,
    Verdict,
    VerifiedCall,
    check,
    parse_request,
)
from .._log import logger
from .._machines.gate import COMPILED, State, Trigger
from .driver import Effect, Step, drive

__all__ = ["GatePort", "GateRun"]

_RUN_PREFIX: Final = secrets.token_hex(4)
_RUN_COUNTER: Final = itertools.count(1)
_NO_SCHEMA: Final = "no schema is known for the called tool, so its Mcp-Param-* headers cannot be verified"
_POLICY: Final = "the policy refused the call"


class GatePort(Protocol):
    """What a run needs from the shape it runs in (the middleware, the proxy): one request's I/O."""

    @property
    def identity(self) -> str | None:
        """A fingerprint of the request's ``Authorization`` header (never the header), or ``None`` without one."""
        ...

    async def read_body(self, limit: int) -> bytes | None:
        """The whole request body, or ``None`` as soon as it is longer than ``limit`` bytes (the run answers 413)."""
        ...

    async def schema(self, tool: str) -> ToolSchema | None:
        """What is known of ``tool`` for this caller (learned, shared through the store, preloaded), or ``None``."""
        ...

    async def learn(self, tool: str) -> ToolSchema | None:
        """Fetch ``tools/list``, keep what it teaches, and return ``tool``'s schema, or ``None``.

        Every page, with the caller's own ``Authorization``, one fetch in flight per server and identity. ``None``
        when the fetch failed or the listing does not name ``tool``: the run then checks the standard headers and
        forwards without ``Mcp-Param-*``.
        """
        ...

    async def forward(self, *, strip_params: bool) -> None:
        """Pass the request on and stream the upstream's answer back; returns when the answer is complete.

        The request goes with its body, and without its ``Mcp-Param-*`` headers when ``strip_params``. Learning from
        a ``tools/list`` answer, and forgetting on a -32020 or a ``notifications/tools/list_changed``, happen here.
        """
        ...

    async def refuse(self, refusal: Refusal) -> None:
        """Answer the client with HTTP ``refusal.status`` and ``refusal.body()`` (``application/json``)."""
        ...


class GateRun:
    """One request through the gate: the run of the gate machine (specs/gate.md).

    Args:
        port: the request's I/O (:class:`GatePort`).
        headers: the request's headers as received (``(name, value)`` pairs of ``bytes`` or ``str``, duplicates
            kept), or read already (:class:`~mcpfsm._core.gate.McpHeaders`).
        settings: the gate's rules.
        on_event: called with each :class:`~mcpfsm.GateEvent`, synchronously; an exception it raises is logged
            and ignored (an auditor never breaks a request).
    """

    __slots__ = (
        "_began",
        "_legacy",
        "_on_event",
        "_run_id",
        "_seq",
        "body",
        "headers",
        "port",
        "reason",
        "refusal",
        "request",
        "schema",
        "settings",
        "state",
        "strip_params",
        "verdict",
    )

    def __init__(
        self,
        port: GatePort,
        headers: HeaderPairs | McpHeaders,
        settings: GateSettings,
        on_event: Callable[[GateEvent], object] | None = None,
    ) -> None:
        self.port = port
        self.headers = headers if isinstance(headers, McpHeaders) else McpHeaders.read(headers)
        self.settings = settings
        self._on_event = on_event
        self._run_id: str | None = None
        self._legacy = self.headers.legacy
        self._seq = 0
        self._began = 0.0
        self.state: State = COMPILED.definition.initial
        """The state the run is in (its last event's ``state``)."""
        self.body: bytes | None = None
        """The body, once read."""
        self.request: ParsedRequest | Verdict | None = None
        """The body parsed once (or the verdict on a body that is no request); ``None`` for a legacy request."""
        self.schema: ToolSchema | None = None
        """What is known of the called tool's schema, once settled."""
        self.strip_params = False
        """The request goes on without its ``Mcp-Param-*`` headers (legacy ``"strip"``, or a failed fetch)."""
        self.verdict: Verdict | None = None
        """The verdict, once checked."""
        self.refusal: Refusal | None = None
        """How the gate answered, when it refused the request."""
        self.reason: str | None = None
        """Why, for the events: names a header or a limit, never a value."""

    @property
    def run_id(self) -> str:
        """Unique per run: the ``call_id`` of its events (made when first asked for)."""
        run_id = self._run_id
        if run_id is None:
            run_id = self._run_id = f"gate-{_RUN_PREFIX}-{next(_RUN_COUNTER)}"
        return run_id

    def run(self) -> Coroutine[Any, Any, State]:
        """Drive the request to its end; returns the terminal state (``forwarded``, ``reported`` or ``rejected``).

        Raises:
            BaseException: cancellation (asyncio's or trio's), after the run entered ``cancelled``, unchanged; an
                exception out of the port or the policy hook (other than :class:`GateRefusal`), unchanged.
        """
        if self._on_event is not None:
            self._began = perf_counter()
        # The driver's coroutine itself, awaited by the caller: no coroutine of the run's own (bench/gate.py).
        return drive(COMPILED, _EFFECTS, self, _STEPS, checkpoint=None)

    # --- events ---------------------------------------------------------------------------------------

    def entered(self, state: str, previous: str | None, trigger: str | None) -> None:
        """Publish the :class:`~mcpfsm.GateEvent` of ``state`` (the driver's ``Run`` protocol)."""
        self.state = state  # type: ignore[assignment]  # the compiled table's State members
        on_event = self._on_event
        if on_event is None:
            return
        seq = self._seq
        self._seq += 1
        request = self.request if isinstance(self.request, ParsedRequest) else None
        name = request.name if request is not None else None
        refusal = self.refusal if state == State.rejected else None
        blamed = self.verdict if state == State.reported else None
        reason = self.reason if refusal is not None else blamed.reason if blamed is not None else None
        event = GateEvent(
            call_id=self.run_id,
            seq=seq,
            tool=(request.tool or "") if request is not None else "",
            state=str(state),
            previous=None if previous is None else str(previous),
            trigger=None if trigger is None else str(trigger),
            attempt=1,
            at=utc_timestamp(time_ns()),
            elapsed=perf_counter() - self._began,
            error=_error(refusal, blamed),
            method=request.method if request is not None else "",
            name=name if isinstance(name, str) else None,
            header=refusal.header if refusal is not None else blamed.header if blamed is not None else None,
            reason=reason,
            status=refusal.status if refusal is not None else None,
        )
        try:
            on_event(event)
        except Exception as exc:
            logger.warning("gate on_event callback raised {!r}; the request goes on", exc)

    # --- effects --------------------------------------------------------------------------------------

    async def _refuse(self, refusal: Refusal, reason: str) -> None:
        self.refusal, self.reason = refusal, reason
        await self.port.refuse(refusal)

    async def _received(self) -> Trigger:
        # Defence first: count and measure before decoding anything, then read within the bound.
        limit = self.headers.limit_exceeded()
        if limit is not None:
            refusal = Refusal(status=431, code=INVALID_REQUEST, message=f"Header fields too large: {limit}")
            await self._refuse(refusal, limit)
            return Trigger.oversized
        body = await self.port.read_body(self.settings.max_body)
        if body is None:
            message = f"the request body is longer than {self.settings.max_body} bytes"
            await self._refuse(Refusal(status=413, code=INVALID_REQUEST, message=message), message)
            return Trigger.oversized
        self.body = body
        if not self._legacy:
            self.request = parse_request(body)
        return Trigger.read

    async def _parsed(self) -> Trigger:
        if self._legacy:
            legacy = self.settings.legacy
            if legacy == "reject":
                # The answer carries the request's id when the body is a JSON-RPC request (read within the same
                # max_body, by the same strict reader); the request is still not verified.
                parsed = parse_request(self.body if self.body is not None else b"")
                request_id = parsed.id if isinstance(parsed, ParsedRequest) else None
                refusal = _legacy_refusal(self.headers.protocol_version, request_id)
                await self._refuse(refusal, refusal.message)
                return Trigger.legacy_refused
            await self.port.forward(strip_params=legacy == "strip")
            return Trigger.legacy
        request = self.request
        if isinstance(request, Verdict):
            await self._refuse(Refusal.of_verdict(request, None), str(request.reason))
            return Trigger.malformed
        assert request is not None
        tool = request.tool
        if tool is None or (not request.arguments and not self.headers.param_names):
            # No tool, or nothing a schema could declare: an argument-less call without Mcp-Param-* headers.
            return Trigger.known
        self.schema = await self.port.schema(tool)
        if self.schema is not None:
            return Trigger.known
        on_unknown = self.settings.on_unknown
        if on_unknown == "fetch":
            return Trigger.unknown
        if on_unknown == "pass":
            return Trigger.passed
        refusal = Refusal(status=400, code=HEADER_MISMATCH, message=f"Header mismatch: {_NO_SCHEMA}", id=request.id)
        await self._refuse(refusal, _NO_SCHEMA)
        return Trigger.unknown_refused

    async def _learning(self) -> Trigger:
        request = self.request
        assert isinstance(request, ParsedRequest) and request.tool is not None
        self.schema = await self.port.learn(request.tool)
        if self.schema is None:
            self.strip_params = True
            return Trigger.unlearned
        return Trigger.learned

    def _schema_known(self) -> Trigger:
        request = self.request
        assert isinstance(request, ParsedRequest)
        # The verified values are kept for a policy only: without one, an ok verdict is OK (bench/gate.py).
        self.verdict = verdict = check(self.headers, request, self.schema, params=self.settings.policy is not None)
        return Trigger.matched if verdict.ok else Trigger.mismatched

    async def _checked(self) -> Trigger:
        request, verdict = self.request, self.verdict
        assert isinstance(request, ParsedRequest) and verdict is not None
        if not verdict.ok:
            if self.settings.mode == "report":
                await self.port.forward(strip_params=self.strip_params)
                return Trigger.reported
            await self._refuse(Refusal.of_verdict(verdict, request.id), str(verdict.reason))
            return Trigger.refused
        policy = self.settings.policy
        if policy is not None:
            name = request.name
            call = VerifiedCall(
                method=request.method,
                name=name if isinstance(name, str) else None,
                params=verdict.params,
                identity=self.port.identity,
            )
            try:
                outcome = policy(call)
                if inspect.isawaitable(outcome):
                    await outcome
            except GateRefusal as refusal:
                await self._refuse(Refusal.of_policy(refusal, request.id), _POLICY)
                return Trigger.refused
        await self.port.forward(strip_params=self.strip_params)
        return Trigger.forwarded


def _legacy_refusal(version: str | None, request_id: int | str | None) -> Refusal:
    # SPEC: -32600 naming the version; only a known legacy version is named (it is one of a few constants).
    said = f"protocol version {version}" if version is not None else "a request without MCP-Protocol-Version"
    message = f"{said} is not accepted here: this gate verifies 2026-07-28 requests only"
    return Refusal(status=400, code=INVALID_REQUEST, message=message, id=request_id)


def _error(refusal: Refusal | None, blamed: Verdict | None) -> Mapping[str, Any] | None:
    if refusal is not None:
        return {"type": "Refusal", "code": refusal.code, "message": refusal.message}
    if blamed is not None:
        return {"type": "HeaderMismatch", "code": blamed.code, "message": blamed.reason}
    return None


_EFFECTS: Final[Mapping[str, Effect[GateRun, Trigger]]] = {
    State.received: GateRun._received,
    State.parsed: GateRun._parsed,
    State.learning: GateRun._learning,
    State.checked: GateRun._checked,
}
_STEPS: Final[Mapping[str, Step[GateRun, Trigger]]] = {State.schema_known: GateRun._schema_known}
