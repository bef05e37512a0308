"""The input rounds of one request, under trio (SEP-2322 multi round-trip requests).

- :class:`InputRounds` — the rounds of one ``tools/call``, ``prompts/get`` or ``resources/read``:
  :meth:`InputRounds.params` (what to send next), :meth:`InputRounds.receive` (classify a result),
  :meth:`InputRounds.gather` (answer the latest round with the client's
  :class:`~mcpfsm._drivers.input.InputHandlers`). The tool-call driver calls these from its
  ``awaiting_input`` and ``resending`` states, so every round is a state of the machine and an audit event;
  ``mcpfsm._drivers.input_machine`` runs them as one bounded loop for the other two methods.

Imported with the first ``input_required`` result (the tool-call driver makes its rounds then) or with
``mcpfsm._drivers.input_machine``, not with ``mcpfsm``: most calls never ask for input (start-up:
bench/startup.py). The pure rules are ``mcpfsm._core.input_rounds``'.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import trio

from .._core.errors import ProtocolError
from .._core.input import COMPLETE, result_type
from .._core.input_rounds import InputRequired, parse_input_required, state_only_backoff, with_input

if TYPE_CHECKING:
    from .input import InputHandlers

__all__ = ["InputRounds"]


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
