"""The event of the input machine: one :class:`InputEvent` per state a run enters (docs/events.md, specs/input.md).

Imported with the input machine (the first input round outside a tool call, or legacy server request) or the first
record read of it. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from . import CallEvent, common_fields

__all__ = ["InputEvent"]


@dataclass(frozen=True, slots=True, kw_only=True)
class InputEvent(CallEvent):
    """Input the server asked for outside the tool-call machine (docs/events.md).

    Each is one state entered by a run of the input machine (``mcpfsm._machines.input``, specs/input.md); its
    first event is that machine's initial state, ``awaiting_input``, with no ``previous`` and no ``trigger``.
    Two kinds of run publish these:

    - the input rounds (SEP-2322) of a ``prompts/get`` or ``resources/read`` (and of any request sent with
      ``Client.request``), once its first ``input_required`` result arrives (a request that asks for nothing
      publishes nothing): ``awaiting_input`` per round (``input_requests``), ``resending`` when the round's
      answers go out, then ``succeeded``, ``failed`` or ``cancelled``;
    - a server request the client answers in the legacy era (``elicitation/create``, ``sampling/createMessage``,
      ``roots/list``; a ``ping`` is no input and is not recorded): ``awaiting_input`` when it arrives
      (``input_requests`` is ``{id: method}``), then ``succeeded`` once the answer was sent, ``failed`` (the
      JSON-RPC error sent: a refusal such as -32601, or a handler that raised; or the answer could not be sent)
      or ``cancelled`` (the client closed first).

    The fields of :class:`CallEvent` mean the same here, with ``call_id`` naming this run, ``tool`` the tool
    whose call was waiting for a server request's answer (it arrived on that call's stream; ``""`` otherwise),
    ``attempt`` always 1 and ``headers`` always ``None``. ``input_responses`` (on ``resending``, and on
    ``succeeded`` for a server request: ``{id: result}``) is recorded only with ``audit_answers=True``; a
    handler's own exception is named by its type only.

    Attributes:
        request: the method of the request the input is for (``prompts/get``, ``resources/read``), or the
            method of the server's request (``elicitation/create``, …).
        target: the prompt name or resource URI; for a server request, its JSON-RPC id as text.
    """

    MACHINE: ClassVar[str] = "input"

    machine: str = MACHINE
    request: str = ""
    target: str = ""

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> InputEvent:
        """Rebuild an event from :meth:`to_dict` output.

        Raises:
            ValueError: a field is missing or has the wrong type.
        """
        try:
            return InputEvent(**common_fields(data), request=str(data["request"]), target=str(data["target"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not an InputEvent record: {exc}") from exc
