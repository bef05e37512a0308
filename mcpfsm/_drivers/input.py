"""Input the server asks for, under trio: the user's handlers and the input rounds of one request (SEP-2322).

The internal API, used by the tool-call driver, by the session (legacy server requests) and by any
request that may answer ``input_required`` (``tools/call``, ``prompts/get``, ``resources/read``):

- :class:`InputHandlers` — the handlers given to the client (``on_elicitation``, ``on_sampling``,
  ``on_roots``), what they declare, and :meth:`InputHandlers.answer` (one input request) and
  :meth:`InputHandlers.gather` (one round, concurrently);
- :class:`InputRounds` — the rounds of one request: :meth:`InputRounds.params` (what to send next),
  :meth:`InputRounds.receive` (classify a result), :meth:`InputRounds.gather` (answer the latest round).
  The tool-call driver calls these from its ``awaiting_input`` and ``resending`` states, so every round
  is a state of the machine and an audit event;
- :func:`request_with_input` — the same rounds as one bounded loop, for a request that is not a tool call::

      result = await request_with_input(session.request, handlers, "prompts/get", {"name": "greet"})

  ``send(method, params)`` sends one request with a fresh JSON-RPC id and returns its result; the loop
  returns the first ``complete`` result and raises :class:`~mcpfsm.ProtocolError` after
  ``max_input_rounds`` rounds. Given the client's audit bus, a request that asks for input is one run of
  the input machine (``mcpfsm._machines.input``);
- :func:`answer_server_request` — a legacy server request (MCP 2025-11-25) answered with the handlers, one
  run of the same machine; :data:`WAITING_TOOL` names the tool whose call's stream it came on;
- :class:`InputRun` — the tracker of one such run: it advances through the compiled machine and publishes
  one :class:`~mcpfsm.InputEvent` per state entered (README, "Reading the audit events").

Pure rules (result types, shapes, capabilities, SEP-1034 defaults) live in ``mcpfsm._core.input``.
"""

from __future__ import annotations

import copy
import inspect
import itertools
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Final

import trio

from .._core.constants import INTERNAL_ERROR
from .._core.errors import McpError, ProtocolError, RpcError
from .._core.events import InputEvent, error_summary, utc_timestamp
from .._core.input import (
    COMPLETE,
    ELICITATION,
    ELICITATION_MODES,
    ROOTS,
    SAMPLING,
    FormContentError,
    InputRequest,
    InputRequired,
    Offered,
    Refusal,
    parse_input_required,
    result_type,
    state_only_backoff,
    with_input,
)
from .._core.jsonrpc import Request, encode_error, encode_result
from .._log import logger
from .._machines.input import COMPILED, State, Trigger
from .audit import AuditBus
from .driver import advance as follow
from .driver import cancellation_summary, start

__all__ = [
    "DEFAULT_MAX_INPUT_ROUNDS",
    "WAITING_TOOL",
    "InputHandler",
    "InputHandlers",
    "InputRounds",
    "InputRun",
    "answer_server_request",
    "request_with_input",
]

InputHandler = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
"""An ``on_elicitation``/``on_sampling``/``on_roots`` handler: the request's params in, the result object out."""

DEFAULT_MAX_INPUT_ROUNDS: Final = 10
"""Input rounds one request may take before it fails (the official SDKs stop at 10 too)."""

WAITING_TOOL: ContextVar[str] = ContextVar("mcpfsm_waiting_tool", default="")
"""The tool whose ``tools/call`` the current task is sending (set around the send): a legacy server request
that arrives on that call's own event stream is read in this task, so its events name the tool."""

_RUN_PREFIX = secrets.token_hex(4)
_RUN_COUNTER = itertools.count(1)


class InputHandlers:
    """The client's input handlers and the limits of an input loop.

    Args:
        on_elicitation: answers ``elicitation/create`` (an ``ElicitResult``: ``action`` and, on a form
            ``accept``, ``content``).
        on_sampling: answers ``sampling/createMessage`` (a ``CreateMessageResult``).
        on_roots: answers ``roots/list`` (a ``ListRootsResult``: ``{"roots": [...]}``).
        elicitation_modes: the elicitation modes ``on_elicitation`` handles: ``("form",)``, ``("url",)``
            or both.
        max_input_rounds: how many ``input_required`` results one request may receive; the next one is
            a :class:`~mcpfsm.ProtocolError`.
        audit_answers: put the answers sent into the audit events (``input_responses`` of a ``CallEvent``
            or an ``InputEvent``).

    Raises:
        TypeError: a handler is not callable, or ``max_input_rounds`` is not an int.
        ValueError: ``elicitation_modes`` is empty or names a mode other than ``form`` and ``url``, or
            ``max_input_rounds`` is less than 1.
    """

    __slots__ = ("_handlers", "audit_answers", "max_rounds", "offered")

    def __init__(
        self,
        *,
        on_elicitation: InputHandler | None = None,
        on_sampling: InputHandler | None = None,
        on_roots: InputHandler | None = None,
        elicitation_modes: Sequence[str] = ("form",),
        max_input_rounds: int = DEFAULT_MAX_INPUT_ROUNDS,
        audit_answers: bool = False,
    ) -> None:
        """Check and keep the handlers; see the class docstring."""
        handlers = {ELICITATION: on_elicitation, SAMPLING: on_sampling, ROOTS: on_roots}
        for name, handler in zip(("on_elicitation", "on_sampling", "on_roots"), handlers.values(), strict=True):
            if handler is not None and not callable(handler):
                raise TypeError(f"{name} must be an async callable, got {type(handler).__name__}")
        if isinstance(elicitation_modes, str):
            raise TypeError("elicitation_modes must be a tuple of modes, e.g. ('form', 'url'), not a str")
        modes = tuple(dict.fromkeys(elicitation_modes))
        if not modes or any(mode not in ELICITATION_MODES for mode in modes):
            raise ValueError(f"elicitation_modes must name 'form' and/or 'url', got {tuple(elicitation_modes)!r}")
        if not isinstance(max_input_rounds, int) or isinstance(max_input_rounds, bool):
            raise TypeError(f"max_input_rounds must be an int, got {type(max_input_rounds).__name__}")
        if max_input_rounds < 1:
            raise ValueError(f"max_input_rounds must be at least 1, got {max_input_rounds}")
        self._handlers = {method: handler for method, handler in handlers.items() if handler is not None}
        self.offered = Offered(
            elicitation_modes=modes if on_elicitation is not None else (),
            sampling=on_sampling is not None,
            roots=on_roots is not None,
        )
        """What the handlers declare (``mcpfsm._core.input.Offered``)."""
        self.max_rounds = max_input_rounds
        """``max_input_rounds``."""
        self.audit_answers = audit_answers
        """Whether the answers go into the audit events."""

    def capabilities(self) -> dict[str, Any]:
        """The client capabilities the handlers declare (``_meta`` of every modern request, legacy ``initialize``)."""
        return self.offered.capabilities()

    def refusal(self, method: str, params: Mapping[str, Any]) -> Refusal | None:
        """Why ``method`` cannot be answered (no handler, an undeclared mode, bad params), or ``None``."""
        return self.offered.refusal(method, params)

    async def answer(self, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
        """Run the handler of ``method`` on (a copy of) ``params`` and return its checked answer.

        The caller has made sure :meth:`refusal` is ``None``. An accepted form elicitation gets the
        schema's defaults for whatever the handler left out (SEP-1034).

        Raises:
            TypeError, ValueError: the handler is not async or its answer is malformed.
            Exception: whatever the handler raises, unchanged.
        """
        handler = self._handlers[method]
        outcome = handler(copy.deepcopy(dict(params)))
        if not inspect.isawaitable(outcome):
            raise TypeError(f"the {method} handler must be async (it returned {type(outcome).__name__})")
        return self.offered.checked_answer(method, params, await outcome)

    async def gather(self, requests: Mapping[str, InputRequest]) -> dict[str, dict[str, Any]]:
        """Answer every input request of one round, concurrently; the answers by key, in the server's order.

        Nothing runs when any request cannot be answered at all: a round is never half-answered. The
        first handler to fail cancels the others, and its error is raised.

        Raises:
            ProtocolError: the server asked for input the client did not offer (SEP-2322: a server
                MUST NOT), naming the key.
            Exception: the first error a handler raised, unchanged.
        """
        for key, request in requests.items():
            refusal = self.refusal(request.method, request.params)
            if refusal is not None:
                raise ProtocolError(f"input request {key!r}: {refusal.message}")
        if len(requests) == 1:
            ((key, request),) = requests.items()
            return {key: await self.answer(request.method, request.params)}
        answers: dict[str, dict[str, Any]] = {}
        failure: list[Exception] = []

        async def answer(key: str, request: InputRequest, cancel_scope: trio.CancelScope) -> None:
            try:
                answers[key] = await self.answer(request.method, request.params)
            except Exception as exc:
                if not failure:
                    failure.append(exc)
                cancel_scope.cancel()

        async with trio.open_nursery() as nursery:
            for key, request in requests.items():
                nursery.start_soon(answer, key, request, nursery.cancel_scope)
        if failure:
            raise failure[0]
        return {key: answers[key] for key in requests}


class InputRounds:
    """The input rounds of one request (SEP-2322); see the module docstring.

    Args:
        handlers: the client's handlers and limits.
        method: ``tools/call``, ``prompts/get`` or ``resources/read``.
        target: the tool or prompt name or resource URI, for error messages.
    """

    __slots__ = ("_streak", "handlers", "method", "pending", "responses", "round", "target")

    def __init__(self, handlers: InputHandlers, method: str, target: str) -> None:
        """Start before the first send: no round yet."""
        self.handlers = handlers
        self.method = method
        self.target = target
        self.round = 0
        """How many ``input_required`` results this request has received."""
        self.pending: InputRequired | None = None
        """The latest ``input_required`` result, or ``None`` before the first."""
        self.responses: dict[str, dict[str, Any]] | None = None
        """The answers to :attr:`pending`'s requests once gathered (``None`` for a state-only round)."""
        self._streak = 0

    @property
    def exhausted(self) -> bool:
        """True when the latest ``input_required`` result came after ``max_input_rounds`` rounds."""
        return self.round > self.handlers.max_rounds

    def params(self, base: Mapping[str, Any]) -> dict[str, Any]:
        """What to send next: ``base``, plus the latest round's answers and echoed ``requestState``."""
        if self.pending is None:
            return dict(base)
        return with_input(base, self.responses, self.pending.state)

    def receive(self, result: Mapping[str, Any]) -> bool:
        """Classify a result of the request: True when it is complete, False when it asks for input.

        An ``input_required`` result starts the next round (check :attr:`exhausted` before gathering).

        Raises:
            ProtocolError: an unknown ``resultType``, or a malformed ``input_required`` result.
        """
        if result_type(self.method, result) == COMPLETE:
            return True
        self.pending = parse_input_required(self.method, result)
        self.responses = None
        self.round += 1
        return False

    def exhausted_error(self) -> ProtocolError:
        """The error of a request that asked for input once too often."""
        return ProtocolError(
            f"{self.method} {self.target!r} still asked for input after max_input_rounds="
            f"{self.handlers.max_rounds} rounds"
        )

    async def gather(self) -> None:
        """Answer the latest round: run the handlers, or, for a state-only round, wait the backoff.

        Raises:
            ProtocolError: input the client did not offer.
            Exception: whatever a handler raised.
        """
        assert self.pending is not None
        if not self.pending.requests:
            self._streak += 1
            await trio.sleep(state_only_backoff(self._streak))
            self.responses = None
            return
        self._streak = 0
        self.responses = await self.handlers.gather(self.pending.requests)


class InputRun:
    """The tracker of one run of the input machine (``mcpfsm._machines.input``): publishes as it advances.

    A run with no effects of its own, stepped with the shared driver's :func:`~mcpfsm._drivers.driver.start`
    and :func:`~mcpfsm._drivers.driver.advance`: creating it enters the initial state, ``awaiting_input``;
    :meth:`advance` reports a trigger and the compiled machine gives the state entered (an undeclared
    transition raises ``InvalidTransition``). Each state entered is one :class:`~mcpfsm.InputEvent` (only a
    loguru DEBUG line when nobody observes the bus). :func:`request_with_input` and
    :func:`answer_server_request` do the work and report.

    Args:
        audit: the client's audit bus.
        request: the method the input is for (``prompts/get``), or the server request's method.
        target: the prompt name or resource URI, or the server request's id as text.
        tool: the tool whose call's stream carried a server request, else ``""``.
        round: the first event's round (0 for a server request).
        requests: what the server asks for, by key (the first event's ``input_requests``).
    """

    __slots__ = ("_audit", "_details", "_seq", "_started", "request", "run_id", "state", "target", "tool")

    def __init__(
        self,
        audit: AuditBus,
        *,
        request: str,
        target: str,
        tool: str = "",
        round: int = 0,
        requests: Mapping[str, str] | None = None,
    ) -> None:
        """Enter ``awaiting_input`` and publish it."""
        self._audit = audit
        self._seq = 0
        self._started = trio.current_time()
        self.run_id = f"{_RUN_PREFIX}-i{next(_RUN_COUNTER)}"
        """The events' ``call_id``."""
        self.request = request
        self.target = target
        self.tool = tool
        self._details = _Details(round=round, requests=requests)
        self.state: State = start(COMPILED, self)
        """The state the run is in."""

    def advance(
        self,
        trigger: Trigger,
        *,
        round: int = 0,
        requests: Mapping[str, str] | None = None,
        responses: Mapping[str, Any] | None = None,
        error: BaseException | None = None,
    ) -> None:
        """Leave the current state by ``trigger`` and publish the state entered, with these details.

        Raises:
            InvalidTransition: the machine declares no such transition (a bug in mcpfsm; nothing is published).
        """
        self._details = _Details(round=round, requests=requests, responses=responses, error=error)
        self.state = follow(COMPILED, self, self.state, trigger)

    def end(self, error: BaseException, trigger: Trigger, *, round: int = 0) -> None:
        """Record that the run ends with ``error``: ``trigger`` for an ``Exception``, else ``cancelled``."""
        self.advance(trigger if isinstance(error, Exception) else Trigger.cancelled, round=round, error=error)

    def entered(self, state: str, previous: str | None, trigger: str | None) -> None:
        """Publish the event of ``state`` with the details last reported (the driver's ``Run`` protocol)."""
        seq, self._seq = self._seq, self._seq + 1
        state, previous, trigger = str(state), _text(previous), _text(trigger)
        audit = self._audit
        if not audit.observed:
            audit.log(self.run_id, self.tool, previous, state, trigger, machine=InputEvent.MACHINE)
            return
        details = self._details
        audit.publish(
            InputEvent(
                call_id=self.run_id,
                seq=seq,
                tool=self.tool,
                state=state,
                previous=previous,
                trigger=trigger,
                attempt=1,
                at=utc_timestamp(time.time_ns()),
                elapsed=trio.current_time() - self._started,
                error=None if details.error is None else _summary(details.error, trigger),
                round=details.round,
                input_requests=None if details.requests is None else dict(details.requests),
                input_responses=None if details.responses is None else dict(details.responses),
                request=self.request,
                target=self.target,
            )
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class _Details:
    # What the next event records besides the transition: the round, the requests, the answers, the error.
    round: int
    requests: Mapping[str, str] | None = None
    responses: Mapping[str, Any] | None = None
    error: BaseException | None = None


def _text(name: str | None) -> str | None:
    # Events carry plain strings, not the machine's enum members.
    return None if name is None else str(name)


def _summary(error: BaseException, trigger: str | None) -> Mapping[str, Any]:
    if not isinstance(error, Exception):
        return cancellation_summary("input run")
    summary = error_summary(error)
    if trigger == Trigger.input_failed and not isinstance(error, McpError | FormContentError):
        # A handler's own exception may quote what the user typed: the event names its type only
        # (mcpfsm's own FormContentError names properties and rules, never a value).
        summary["message"] = f"an input handler raised {type(error).__name__}"
    return summary


Send = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]


async def request_with_input(
    send: Send,
    handlers: InputHandlers,
    method: str,
    params: Mapping[str, Any],
    *,
    audit: AuditBus | None = None,
) -> dict[str, Any]:
    """Send ``method`` and run its input rounds until a complete result; see the module docstring.

    With ``audit``, a request whose answer is ``input_required`` is one run of the input machine, from that
    answer on: ``awaiting_input`` per round (what is asked for), ``resending`` (the answers, only with
    ``audit_answers``), then ``succeeded``, ``failed`` or ``cancelled``. One that asks for nothing is no run.

    Raises:
        ProtocolError: an unknown ``resultType``, a malformed ``input_required`` result, input the
            client did not offer, or more than ``max_input_rounds`` rounds.
        McpError: a request failed.
        Exception: whatever a handler raised.
    """
    target = str(params.get("uri" if method == "resources/read" else "name"))
    rounds = InputRounds(handlers, method, target)
    run: InputRun | None = None
    failing = Trigger.errored
    try:
        for _ in range(handlers.max_rounds + 1):
            failing = Trigger.errored
            result = await send(method, rounds.params(params))
            if rounds.receive(result):
                if run is not None:
                    run.advance(Trigger.answered, round=rounds.round)
                return result
            if rounds.exhausted:
                break
            assert rounds.pending is not None
            asked = rounds.pending.methods
            if run is not None:
                run.advance(Trigger.input_required, round=rounds.round, requests=asked)
            elif audit is not None:
                run = InputRun(audit, request=method, target=target, round=rounds.round, requests=asked)
            failing = Trigger.input_failed
            await rounds.gather()
            if run is not None:
                answers = rounds.responses if handlers.audit_answers else None
                run.advance(Trigger.gathered, round=rounds.round, responses=answers)
        failing = Trigger.rounds_exhausted
        raise rounds.exhausted_error()
    except BaseException as exc:
        if run is not None:
            run.end(exc, failing, round=rounds.round)
        raise


async def answer_server_request(
    handlers: InputHandlers,
    request: Request,
    deliver: Callable[[str], Awaitable[object]],
    *,
    audit: AuditBus | None = None,
    tool: str = "",
) -> None:
    """Answer a legacy server request with the handlers and ``deliver`` the answer (MCP 2025-11-25).

    ``ping`` is answered ``{}``; a method without a handler ``-32601``; an undeclared mode ``-32602``; a handler
    raising :class:`~mcpfsm.RpcError` (e.g. ``-1``, "User rejected sampling request") that error; an answer that
    fails mcpfsm's own check (``FormContentError``) and any other exception ``-32603`` (a handler's own text,
    which may quote the user, is neither sent nor logged). A failure to deliver is logged: the server may give
    up on its request, and the client's own request is still worth waiting for.

    With ``audit``, every request but ``ping`` is one run of the input machine: ``awaiting_input``, then
    ``succeeded`` (``answered``), ``failed`` (``refused``, ``input_failed``, ``errored``) or ``cancelled``;
    ``tool`` is the tool whose call's stream carried the request, if any.
    """
    if request.method == "ping":
        await _deliver(deliver, request, encode_result(request.id, {}))
        return
    key = str(request.id)
    run = None
    if audit is not None:
        run = InputRun(audit, request=request.method, target=key, tool=tool, requests={key: request.method})
    trigger = Trigger.answered
    failure: Exception | None = None
    result: dict[str, Any] | None = None
    try:
        refusal = handlers.refusal(request.method, request.params)
        if refusal is not None:
            trigger, failure = Trigger.refused, RpcError(refusal.code, refusal.message)
            answer = encode_error(request.id, refusal.code, refusal.message)
        else:
            try:
                result = await handlers.answer(request.method, request.params)
                answer = encode_result(request.id, result)
            except RpcError as exc:
                trigger, failure = Trigger.input_failed, exc
                answer = encode_error(request.id, exc.code, exc.message)
            except FormContentError as exc:
                # mcpfsm's own check of the answer: it names properties and rules, never what the user typed.
                logger.warning("the {} handler's answer was not sent: {}", request.method, exc)
                trigger, failure = Trigger.input_failed, exc
                answer = encode_error(request.id, INTERNAL_ERROR, str(exc))
            except Exception as exc:
                # The handler's message may hold what the user typed: only its type is logged or sent.
                logger.warning("the {} handler raised {}; answering -32603", request.method, type(exc).__name__)
                trigger, failure = Trigger.input_failed, exc
                answer = encode_error(request.id, INTERNAL_ERROR, f"the client's {request.method} handler failed")
        undelivered = await _deliver(deliver, request, answer)
    except BaseException as exc:
        if run is not None:
            run.end(exc, Trigger.errored)
        raise
    if run is None:
        return
    if undelivered is not None:
        run.advance(Trigger.errored, error=undelivered)
    elif failure is not None:
        run.advance(trigger, error=failure)
    else:
        run.advance(Trigger.answered, responses={key: result} if handlers.audit_answers else None)


async def _deliver(deliver: Callable[[str], Awaitable[object]], request: Request, answer: str) -> McpError | None:
    try:
        await deliver(answer)
    except McpError as exc:
        logger.warning("could not answer the server's {!r} request: {}", request.method, exc)
        return exc
    return None
