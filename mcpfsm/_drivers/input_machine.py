"""The input machine's runs, under trio: input asked for outside a tool call's own machine (SEP-2322).

- :func:`request_with_input` — the input rounds of a request that is not a tool call (``prompts/get``,
  ``resources/read``) as one bounded loop; a request that asks for input is one run of the input machine
  (``mcpfsm._machines.input``);
- :func:`answer_server_request` — a legacy server request (MCP 2025-11-25) answered with the handlers, one
  run of the same machine;
- :class:`InputRun` — the tracker of one such run: it advances through the compiled machine and publishes
  one :class:`~mcpfsm.InputEvent` per state entered (docs/events.md).

The handlers are :mod:`mcpfsm._drivers.input`'s, the rounds of one request
:mod:`mcpfsm._drivers.input_rounds`'. This module is imported
with the first ``prompts/get`` or ``resources/read`` or the first legacy server request, so that
``import mcpfsm`` does not build the input machine (bench/startup.py).
"""

from __future__ import annotations

import itertools
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import trio

from .._core.constants import INTERNAL_ERROR
from .._core.errors import McpError, RpcError
from .._core.events import error_summary, input_failure_summary, utc_timestamp
from .._core.events.input import InputEvent
from .._core.input import FormContentError
from .._core.jsonrpc import Request, encode_error, encode_result
from .._log import logger
from .._machines.input import COMPILED, State, Trigger
from .audit import AuditBus
from .driver import advance as follow
from .driver import cancellation_summary, plain, start
from .input import InputHandlers
from .input_rounds import InputRounds

__all__ = ["InputRun", "answer_server_request", "request_with_input"]

_RUN_PREFIX = secrets.token_hex(4)
_RUN_COUNTER = itertools.count(1)


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
        state, previous, trigger = str(state), plain(previous), plain(trigger)
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



def _summary(error: BaseException, trigger: str | None) -> Mapping[str, Any]:
    if not isinstance(error, Exception):
        return cancellation_summary("input run")
    return input_failure_summary(error) if trigger == Trigger.input_failed else error_summary(error)


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
