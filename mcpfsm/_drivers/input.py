"""Input the server asks for, under trio: the user's handlers (SEP-2322 input rounds, legacy server requests).

The internal API, used by the client (which declares the handlers' capabilities on every session), by the
tool-call driver, by the session (legacy server requests) and by any request that may answer
``input_required`` (``tools/call``, ``prompts/get``, ``resources/read``):

- :class:`InputHandlers` — the handlers given to the client (``on_elicitation``, ``on_sampling``,
  ``on_roots``), what they declare (:meth:`InputHandlers.capabilities`), and :meth:`InputHandlers.answer`
  (one input request) and :meth:`InputHandlers.gather` (one round, concurrently);
- :data:`WAITING_TOOL` — the tool whose call's stream a legacy server request came on.

Every client makes an :class:`InputHandlers`, so this module is imported with ``mcpfsm`` and holds no more
than that. What only an input round needs is imported with the first one (start-up: bench/startup.py):

- ``mcpfsm._drivers.input_rounds`` — :class:`~mcpfsm._drivers.input_rounds.InputRounds`, the rounds of one
  request, which the tool-call driver steps from its ``awaiting_input`` and ``resending`` states (every
  round a state of the machine and an audit event), made with a tool call's first ``input_required``;
- ``mcpfsm._drivers.input_machine`` — the same rounds as one bounded loop for a request that is not a
  tool call, and the legacy server requests, as runs of the input machine (``mcpfsm._machines.input``),
  imported with the first ``prompts/get`` or ``resources/read`` or the first legacy server request;
- ``mcpfsm._core.input_rounds`` — the pure rules of a round (the parsed ``input_required`` result,
  refusals, checked answers, SEP-1034 defaults, the resend's params), imported with either.

The method names and :func:`~mcpfsm._core.input.result_type`, which every request needs, are in
``mcpfsm._core.input``.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Final

import trio

from .._core.errors import ProtocolError
from .._core.input import ELICITATION, ELICITATION_MODES, ROOTS, SAMPLING, declared_capabilities

if TYPE_CHECKING:
    from .._core.input_rounds import InputRequest, Offered, Refusal

__all__ = [
    "DEFAULT_MAX_INPUT_ROUNDS",
    "MAX_CONCURRENT_HANDLERS",
    "WAITING_TOOL",
    "InputHandler",
    "InputHandlers",
]

InputHandler = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
"""An ``on_elicitation``/``on_sampling``/``on_roots`` handler: the request's params in, the result object out."""

DEFAULT_MAX_INPUT_ROUNDS: Final = 10
"""Input rounds one request may take before it fails (the official SDKs stop at 10 too)."""

MAX_CONCURRENT_HANDLERS: Final = 16
"""Handler calls one client runs at once, input rounds and legacy server requests together; the rest wait
their turn (a round of many requests, or a legacy stream of many server requests, never starts them all)."""

_NESTING: ContextVar[int] = ContextVar("mcpfsm_handler_nesting", default=0)
# How many handler calls the running task is inside of (a handler's own request may take an input round whose
# handlers run in the handler's task or tasks it started, so they see the count).

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

    __slots__ = ("_declared", "_handlers", "_limiters", "_offered", "audit_answers", "max_rounds")

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
        self._declared = (modes if on_elicitation is not None else (), on_sampling is not None, on_roots is not None)
        self._offered: Offered | None = None
        self._limiters: list[trio.CapacityLimiter] = []
        self.max_rounds = max_input_rounds
        """``max_input_rounds``."""
        self.audit_answers = audit_answers
        """Whether the answers go into the audit events."""

    @property
    def offered(self) -> Offered:
        """What the handlers declare, with the rules of answering (``mcpfsm._core.input_rounds.Offered``).

        Made on first use (the first input request to answer): a client that only calls tools never needs it.
        """
        offered = self._offered
        if offered is None:
            from .._core.input_rounds import Offered  # with the first input request (start-up)

            modes, sampling, roots = self._declared
            offered = self._offered = Offered(elicitation_modes=modes, sampling=sampling, roots=roots)
        return offered

    def capabilities(self) -> dict[str, Any]:
        """The client capabilities the handlers declare (``_meta`` of every modern request, legacy ``initialize``)."""
        return declared_capabilities(*self._declared)

    def refusal(self, method: str, params: Mapping[str, Any]) -> Refusal | None:
        """Why ``method`` cannot be answered (no handler, an undeclared mode, bad params), or ``None``."""
        return self.offered.refusal(method, params)

    async def answer(self, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
        """Run the handler of ``method`` on (a copy of) ``params`` and return its checked answer.

        The caller has made sure :meth:`refusal` is ``None``. An accepted form elicitation gets the
        schema's defaults for whatever the handler left out (SEP-1034). At most
        :data:`MAX_CONCURRENT_HANDLERS` handler calls of this client run at once; this one waits its turn. The
        handlers of a round that a handler's own request takes (nested input) are bounded apart, by the same
        number, so that the handlers waiting for them never hold every place.

        Raises:
            TypeError, ValueError: the handler is not async or its answer is malformed.
            Exception: whatever the handler raises, unchanged.
        """
        handler = self._handlers[method]
        # One bound per nesting level: a handler holds its place while its own request waits for a nested round,
        # so the nested round's handlers take places of the next level, never the ones their callers hold.
        depth = _NESTING.get()
        limiters = self._limiters
        while len(limiters) <= depth:  # made with the first input request of a level (start-up)
            limiters.append(trio.CapacityLimiter(MAX_CONCURRENT_HANDLERS))
        limiter = limiters[depth]
        # A borrower of its own: a handler may make a request whose input is answered in the same task.
        borrower = object()
        await limiter.acquire_on_behalf_of(borrower)
        nesting = _NESTING.set(depth + 1)
        try:
            outcome = handler(copy.deepcopy(dict(params)))
            if not inspect.isawaitable(outcome):
                raise TypeError(f"the {method} handler must be async (it returned {type(outcome).__name__})")
            answer = await outcome
        finally:
            _NESTING.reset(nesting)
            limiter.release_on_behalf_of(borrower)
        return self.offered.checked_answer(method, params, answer)

    async def gather(self, requests: Mapping[str, InputRequest]) -> dict[str, dict[str, Any]]:
        """Answer every input request of one round, concurrently; the answers by key, in the server's order.

        At most :data:`MAX_CONCURRENT_HANDLERS` handlers run at once (see :meth:`answer`). Nothing runs when
        any request cannot be answered at all: a round is never half-answered. The first handler to fail
        cancels the others, and its error is raised.

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
