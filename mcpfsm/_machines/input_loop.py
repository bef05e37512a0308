"""The guards of the SEP-2322 input loop, drawn on both machines that run it.

The tool-call machine runs the loop for a tool call (twice: before and after the -32020 recovery); the input
machine for ``prompts/get`` and ``resources/read``. Both drive :class:`~mcpfsm._drivers.input_rounds.InputRounds`,
so their diagrams label the loop's edges with the same words, written here once.
"""

from __future__ import annotations

from typing import Final

__all__ = ["EXHAUSTED", "GATHERED", "INPUT_FAILED", "INPUT_REQUIRED", "ROUND_BOUND"]

ROUND_BOUND: Final = "round < max_input_rounds"
"""The bound of the loop edge (``resending -> awaiting_input``)."""

INPUT_REQUIRED: Final = "input_required result"
"""The guard of the loop edge."""

GATHERED: Final = "inputs answered, or backoff after a state-only round"
"""``awaiting_input -> resending``."""

INPUT_FAILED: Final = "a handler raised, or input not offered"
"""``awaiting_input -> failed``."""

EXHAUSTED: Final = "input_required after max_input_rounds rounds"
"""``resending -> failed``: one ``input_required`` too many."""
