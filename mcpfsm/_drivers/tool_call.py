"""The trio driver of one tool call (the machine in ``mcpfsm._machines.tool_call``).

For the current state the driver (:func:`~mcpfsm._drivers.driver.drive`, the loop every machine shares)
performs one effect, the effect reports one fact as a trigger, the compiled table gives the next state,
and one :class:`CallEvent` is published. This module holds the effects and the events. Effects are the
only code here that awaits; everything they compute comes from the pure modules (planning, catalog,
events). The driver reaches the client through :class:`CallPort`, a narrow port of its own.

Input rounds (SEP-2322) are :class:`~mcpfsm._drivers.input_rounds.InputRounds` stepped by two effects:
``awaiting_input`` gathers the latest round's answers, and the one send effect (``sending``,
``resending``, ``retrying``, ``retry_resending``) always sends the latest round's answers and
``requestState``, so the -32020 retry of a resend carries them too.
"""

from __future__ import annotations

import itertools
import secrets
from collections.abc import Callable, Mapping
from time import perf_counter, time_ns
from typing import TYPE_CHECKING, Any, Final, Protocol

import trio

from .._core.catalog import ToolCatalog, ToolDefinition
from .._core.constants import MISSING_REQUIRED_CAPABILITY, is_modern
from .._core.errors import HeaderMismatchError, McpError, MirroringError, RpcError
from .._core.events import error_summary, input_failure_summary, tool_call_event
from .._core.input import INPUT_REQUIRED, TASK
from .._core.plan import HeaderPlan, plan_request
from .._core.results import ToolResult
from .._machines.tool_call import COMPILED, State, Trigger
from .audit import AuditBus
from .driver import Effect, Step, cancellation_summary, drive
from .input import InputHandlers

if TYPE_CHECKING:
    from .input_rounds import InputRounds

__all__ = ["CallPort", "ToolCall"]

_CALL_PREFIX = secrets.token_hex(4)
_CALL_COUNTER = itertools.count(1)


def _no_clock() -> float:
    raise RuntimeError("the call's clock is read before the call runs")


def _call_clock() -> Callable[[], float]:
    # What the run's clock reads, for the elapsed times of a call's events (differences of its readings). trio's
    # own clock is perf_counter plus a fixed offset: read directly, the differences are the same, at the cost of a C
    # call instead of a Python method (bench/repeatable.py: five readings per call). Any other clock (trio.testing's
    # MockClock, a caller's) is read as it is.
    clock = trio.lowlevel.current_clock()
    kind = type(clock)
    if kind.__name__ == "SystemClock" and kind.__module__.startswith("trio."):
        return perf_counter
    return clock.current_time


class CallPort(Protocol):
    """What the driver needs from the client: four operations, the input handlers and the audit bus."""

    @property
    def protocol_version(self) -> str | None:
        """The negotiated protocol version."""
        ...

    @property
    def audit(self) -> AuditBus:
        """Where the call's events go."""
        ...

    @property
    def inputs(self) -> InputHandlers:
        """The handlers that answer input requests, and the round limit."""
        ...

    @property
    def relist_generation(self) -> int:
        """How many relists have completed; read before each send (single flight)."""
        ...

    def known_definition(self, name: str) -> ToolDefinition | None:
        """The newest definition of ``name`` the client has listed, or ``None``."""
        ...

    async def call_once(self, params: dict[str, Any], plan: HeaderPlan) -> dict[str, Any]:
        """Send one ``tools/call`` with ``plan`` (a new JSON-RPC id each time) and return its result object.

        The result's ``resultType`` has been checked (SEP-2322): absent, ``"complete"`` or ``"input_required"``.
        """
        ...

    def check_output(self, name: str, result: ToolResult) -> None:
        """Validate a complete result against the tool's listed ``outputSchema``, as the client is configured.

        Raises:
            OutputValidationError: it does not conform and the client raises on that.
        """
        ...

    async def relist(self, since: int) -> tuple[ToolCatalog, bool]:
        """A complete, uncached ``tools/list`` that completed after generation ``since``, shared between calls.

        Returns the catalog and True when another call started that relist.
        """
        ...

    async def hand_over(self, call: ToolCall, result: dict[str, Any]) -> dict[str, Any] | None:
        """A ``CreateTaskResult`` answered the call (SEP-2663): hand over to the task machine (docs/tasks.md).

        Returns the task's ``result`` once it completed; ``None`` when the call only starts the task
        (``call.starting``: the handle is then in ``call.task``).

        Raises:
            ProtocolError: the client did not declare the tasks extension, or the answer is not a task.
            RpcError, TaskError: the task failed, was cancelled or expired.
        """
        ...


class ToolCall:
    """The mutable context of one call while the driver runs it; one instance per call."""

    __slots__ = (
        "arguments",
        "attempt",
        "call_id",
        "clock",
        "definition",
        "error",
        "generation",
        "handle",
        "headers",
        "mismatch",
        "name",
        "params",
        "plan",
        "port",
        "result",
        "rounds",
        "seq",
        "started",
        "starting",
        "task",
    )

    def __init__(
        self,
        port: CallPort,
        name: str,
        arguments: Mapping[str, Any],
        handle: ToolDefinition | None,
    ) -> None:
        """Prepare a call of tool ``name``; ``handle`` is the definition of a ``Tool`` handle, if any."""
        self.port = port
        self.name = name
        self.arguments = arguments
        self.handle = handle
        self.call_id = f"{_CALL_PREFIX}-{next(_CALL_COUNTER)}"
        self.seq = 0
        self.attempt = 1
        self.generation = 0
        self.started = 0.0
        # The run's clock (what trio.current_time() reads), looked up once per call: four events read it
        # (bench/layer.py).
        self.clock: Callable[[], float] = _no_clock
        self.definition: ToolDefinition | None = None
        self.plan: HeaderPlan | None = None
        # The plan as its events carry it: one dict per plan, shared by the events that carry that plan.
        self.headers: Mapping[str, str] | None = None
        self.mismatch: HeaderMismatchError | None = None
        self.error: BaseException | None = None
        self.result: ToolResult | None = None
        # Made with the first input_required result: most calls never ask for input.
        self.rounds: InputRounds | None = None
        # The request's params, built once: planning reads them, every send passes them on (the session, and
        # the input rounds, copy what they add to).
        self.params: dict[str, Any] = {"name": name, "arguments": arguments}
        # SEP-2663: whether the caller only starts the call (tool.start()), and the task handle it gets then.
        self.starting = False
        self.task: object = None

    def _plan(self, definition: ToolDefinition | None) -> HeaderPlan:
        return plan_request(
            "tools/call",
            self.params,
            protocol_version=self.port.protocol_version,
            mirrored=definition.mirrored if definition is not None else (),
        )

    # --- one effect per state; each returns the trigger naming what happened -----------------

    def _resolving(self) -> Trigger:
        if self.handle is not None:
            # The newest definition of that name this client has listed, else the handle's.
            self.definition = self.port.known_definition(self.name) or self.handle
        return _RESOLVED

    def _planning(self) -> Trigger:
        try:
            self.plan = self._plan(self.definition)
        except MirroringError as exc:
            self.error = exc
            return Trigger.unmirrorable
        # The plan's read-only view, shared by the events that carry it.
        self.headers = self.plan.mapping
        return _PLANNED

    async def _sending(self) -> Trigger:
        # The one effect of every state that sends: the machine tells them apart by its edges.
        assert self.plan is not None
        self.generation = self.port.relist_generation
        try:
            rounds = self.rounds
            # Before the first input round the params are sent as they are (rounds.params would copy them).
            params = self.params if rounds is None else rounds.params(self.params)
            result = await self.port.call_once(params, self.plan)
            # The session checked resultType (SEP-2322: absent, "complete" or "input_required"): only an
            # input_required result needs the rounds, which read it again as they parse it.
            kind = result.get("resultType")
            if kind == INPUT_REQUIRED:
                if rounds is None:
                    # Imported with the first input round, not with mcpfsm (start-up: bench/startup.py).
                    from .input_rounds import InputRounds

                    rounds = self.rounds = InputRounds(self.port.inputs, "tools/call", self.name)
                rounds.receive(result)
                if rounds.exhausted:
                    self.error = rounds.exhausted_error()
                    return Trigger.rounds_exhausted
                return Trigger.input_required
            if kind == TASK:
                # SEP-2663: the task machine runs from here; this call's terminal event comes after the task's.
                try:
                    final = await self.port.hand_over(self, result)
                except Exception as exc:
                    # The task failed, was cancelled or expired, or a handler raised while it asked for input.
                    self.error = exc
                    return Trigger.errored
                if final is None:
                    return _ANSWERED
                result = final
            self.result = ToolResult.from_complete(result)
            self.port.check_output(self.name, self.result)
        except HeaderMismatchError as exc:
            self.error = exc
            # SEP-2243: recovery exists only where headers are mirrored (modern era).
            if not is_modern(self.port.protocol_version):
                return Trigger.errored
            if self.mismatch is None:
                self.mismatch = exc
            return Trigger.mismatched
        except (McpError, ValueError) as exc:
            # McpError: the request failed (the transport's and the session's contract). ValueError: the caller's
            # arguments have no JSON-RPC form (not JSON, a lone surrogate: mcpfsm._core.jsonrpc), found before
            # anything is sent. Nothing else on this path raises by design (the encoder wraps TypeError).
            self.error = exc
            if isinstance(exc, RpcError) and exc.code == MISSING_REQUIRED_CAPABILITY:
                from .._core.task import tasks_required  # with the first -32021 (start-up: bench/startup.py)

                self.error = tasks_required(exc) or exc
            return Trigger.errored
        return _ANSWERED

    async def _awaiting_input(self) -> Trigger:
        try:
            assert self.rounds is not None
            await self.rounds.gather()
        except Exception as exc:
            # A handler's own error (the user's code: raised unchanged), or input not offered.
            self.error = exc
            return Trigger.input_failed
        return Trigger.gathered

    async def _relisting(self) -> Trigger:
        assert self.mismatch is not None
        try:
            catalog, joined = await self.port.relist(self.generation)
        except McpError as exc:
            # The original -32020 is raised, with the relist failure as its cause.
            self.mismatch.__cause__ = exc
            self.error = self.mismatch
            return Trigger.relist_failed
        fresh = catalog.get(self.name)
        if fresh is None:
            self.error = self.mismatch
            return Trigger.vanished
        self.definition = fresh
        return Trigger.joined if joined else Trigger.relisted

    async def _comparing(self) -> Trigger:
        assert self.mismatch is not None
        try:
            fresh = self._plan(self.definition)
        except MirroringError as exc:
            self.mismatch.__cause__ = exc
            self.error = self.mismatch
            return Trigger.unmirrorable
        if fresh == self.plan:
            self.error = self.mismatch
            return Trigger.unchanged
        self.plan = fresh
        self.headers = fresh.mapping
        return Trigger.changed

    # --- the driver ---------------------------------------------------------------------------

    async def run(self) -> ToolResult:
        """Drive the call to a terminal state and return its result (specs/tool-call.md).

        Raises:
            MirroringError: an argument cannot be mirrored (nothing was sent).
            HeaderMismatchError: -32020 that the SEP-2243 recovery could not resolve.
            ProtocolError: among others, input the client did not offer, or more than
                ``max_input_rounds`` input rounds (SEP-2322).
            McpError: any other error of the request, unchanged.
            Exception: whatever an input handler raised, unchanged.
            trio.Cancelled: the caller was cancelled; the call ends in ``cancelled``.
        """
        self.clock = _call_clock()
        self.started = self.clock()
        if await drive(COMPILED, _EFFECTS, self, _STEPS) == _SUCCEEDED:
            assert self.result is not None
            return self.result
        assert self.error is not None
        raise self.error

    async def start(self) -> object:
        """Drive the call as :meth:`run` does, for a caller that waits for a task itself (SEP-2663).

        Returns the task handle :meth:`CallPort.hand_over` made when the answer was a task, else the
        :class:`ToolResult`. Raises as :meth:`run`.
        """
        self.starting = True
        self.clock = _call_clock()
        self.started = self.clock()
        if await drive(COMPILED, _EFFECTS, self, _STEPS) == _SUCCEEDED:
            return self.task if self.task is not None else self.result
        assert self.error is not None
        raise self.error

    def entered(self, state: str, previous: str | None, trigger: str | None) -> None:
        """Publish the :class:`CallEvent` of the state entered (the driver's :class:`~.driver.Run`)."""
        if state == _RETRYING:
            self.attempt = 2
        state, previous, trigger = _STATES[state], _PLAIN[previous], _PLAIN[trigger]
        seq = self.seq
        self.seq = seq + 1
        audit = self.port.audit
        if not audit.observed:
            # Only loguru listens: the same DEBUG record, without building an event nobody receives.
            audit.log(self.call_id, self.name, previous, state, trigger)
            return
        error = requests = responses = None
        if state in _DETAILED:
            error, requests, responses = self._details(state, trigger)
        audit.publish(
            tool_call_event(
                self.call_id,
                seq,
                self.name,
                state,
                previous,
                trigger,
                self.attempt,
                time_ns(),
                self.clock() - self.started,
                self.headers,
                error,
                0 if self.rounds is None else self.rounds.round,
                requests,
                responses,
                audit.server,
            )
        )

    def _details(
        self, state: str, trigger: str | None
    ) -> tuple[Mapping[str, Any] | None, Mapping[str, str] | None, Mapping[str, Any] | None]:
        # The error, input requests and input responses of an event, for the states that may carry them.
        error: Mapping[str, Any] | None = None
        if state == State.cancelled:
            error = cancellation_summary("call")
        elif state in (State.failed, State.relisting) and self.error is not None:
            failed = input_failure_summary if trigger == Trigger.input_failed else error_summary
            error = failed(self.error)
        rounds = self.rounds
        requests: Mapping[str, str] | None = None
        responses: Mapping[str, Any] | None = None
        if rounds is None:
            pass
        elif state in _AWAITING and rounds.pending is not None:
            requests = rounds.pending.methods
        elif state in _RESENDING and rounds.responses is not None and rounds.handlers.audit_answers:
            responses = rounds.responses
        return error, requests, responses


_AWAITING: Final = frozenset({State.awaiting_input, State.retry_awaiting_input})
_RESENDING: Final = frozenset({State.resending, State.retry_resending})
# The states whose events may carry an error or input details; the others skip looking.
_DETAILED: Final = frozenset({State.cancelled, State.failed, State.relisting, *_AWAITING, *_RESENDING})


# The members the hot path names, read once: a member's lookup on its enum class costs a Python-level call
# (bench/layer.py).
_RESOLVED: Final = Trigger.resolved
_PLANNED: Final = Trigger.planned
_ANSWERED: Final = Trigger.answered
_SUCCEEDED: Final = State.succeeded
_RETRYING: Final = State.retrying

# Events carry plain strings, not the machine's enum members.
_STATES: Final[Mapping[str, str]] = {str(state): str(state) for state in State}
_PLAIN: Final[Mapping[str | None, str | None]] = {None: None, **{str(m): str(m) for m in (*State, *Trigger)}}


_STEPS: Final[Mapping[str, Step[ToolCall, Trigger]]] = {
    State.resolving: ToolCall._resolving,
    State.planning: ToolCall._planning,
}
"""The effects of the states that never wait (specs/tool-call.md): called, not awaited."""

_EFFECTS: Final[Mapping[str, Effect[ToolCall, Trigger]]] = {
    State.sending: ToolCall._sending,
    State.awaiting_input: ToolCall._awaiting_input,
    State.resending: ToolCall._sending,
    State.relisting: ToolCall._relisting,
    State.comparing: ToolCall._comparing,
    # `retrying` is its own state (so the recovery stays acyclic) with the effect of `sending`; so are the
    # retry's copy of the input loop.
    State.retrying: ToolCall._sending,
    State.retry_awaiting_input: ToolCall._awaiting_input,
    State.retry_resending: ToolCall._sending,
}
"""The effect of every other non-terminal state (specs/tool-call.md)."""
