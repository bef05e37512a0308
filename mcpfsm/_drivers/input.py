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
The rest, in ``mcpfsm._drivers.input_machine`` (imported with the first ``prompts/get`` or
``resources/read`` or the first legacy server request: a client that only calls tools never loads the
input machine):

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
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextvars import ContextVar
from typing import Any, Final

import trio

from .._core.errors import ProtocolError
from .._core.input import (
    COMPLETE,
    ELICITATION,
    ELICITATION_MODES,
    ROOTS,
    SAMPLING,
    InputRequest,
    InputRequired,
    Offered,
    Refusal,
    parse_input_required,
    result_type,
    state_only_backoff,
    with_input,
)

__all__ = [
    "DEFAULT_MAX_INPUT_ROUNDS",
    "WAITING_TOOL",
    "InputHandler",
    "InputHandlers",
    "InputRounds",
]

InputHandler = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
"""An ``on_elicitation``/``on_sampling``/``on_roots`` handler: the request's params in, the result object out."""

DEFAULT_MAX_INPUT_ROUNDS: Final = 10
"""Input rounds one request may take before it fails (the official SDKs stop at 10 too)."""

WAITING_TOOL: ContextVar[str] = ContextVar("mcpfsm_waiting_tool", default="")
"""The tool whose ``tools/call`` the current task is sending (set around the send): a legacy server request
that arrives on that call's own event stream is read in this task, so its events name the tool."""


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
