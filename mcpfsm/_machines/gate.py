"""The gate machine: one request through ``mcpfsm.gate``, from its arrival to its answer, as data (docs/gate.md).

:data:`GATE` is the single definition. The driver in ``mcpfsm._drivers.gate`` runs it, one effect per state through
a ``GatePort`` (the middleware and the proxy implement it), and publishes one :class:`~mcpfsm.GateEvent` per state
entered; ``specs/gate.*``, ``diagrams/gate.svg`` and the walkthrough ``specs/gate.md`` are generated from it.

A request is ``received`` (headers counted and measured before any decoding, then the body read within its bound),
``parsed`` once (its era decided from ``MCP-Protocol-Version``, the called tool's schema looked up), its schema
settled (``schema_known``, after ``learning`` it from a ``tools/list`` when none was known), ``checked`` against its
body, and then ``forwarded``, ``rejected`` or ``reported`` (a mismatch forwarded in report mode). Every refusal is a
way into ``rejected``, so a rejected request has no path through a forwarding state: it never reaches the upstream.

The machine is acyclic: a request is checked once and learning happens at most once per request. Cancellation (the
client went away, the server shuts down) ends a run in ``cancelled`` from any state before its answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Final

from .definition import CompiledMachine, Edge, define, edge

__all__ = ["COMPILED", "GATE", "State", "Trigger"]


class State(StrEnum):
    """A state of one request through the gate; names equal values, so ``State.checked == "checked"``."""

    received = "received"
    parsed = "parsed"
    learning = "learning"
    schema_known = "schema_known"
    checked = "checked"
    forwarded = "forwarded"
    reported = "reported"
    rejected = "rejected"
    cancelled = "cancelled"


class Trigger(StrEnum):
    """A fact the driver reports to leave a state; names equal values, as for :class:`State`."""

    read = "read"
    oversized = "oversized"
    legacy = "legacy"
    legacy_refused = "legacy_refused"
    malformed = "malformed"
    known = "known"
    unknown = "unknown"
    passed = "passed"
    unknown_refused = "unknown_refused"
    learned = "learned"
    unlearned = "unlearned"
    matched = "matched"
    mismatched = "mismatched"
    forwarded = "forwarded"
    reported = "reported"
    refused = "refused"
    cancelled = "cancelled"


_EDGES: Final[tuple[Edge[State, Trigger], ...]] = (
    edge(Trigger.read, State.received, State.parsed, "Mcp-* headers within 64 and 8,192 bytes; body within max_body"),
    edge(Trigger.oversized, State.received, State.rejected, "too many or too long Mcp-* headers (431); body (413)"),
    edge(Trigger.legacy, State.parsed, State.forwarded, "legacy era: not verified; Mcp-Param-* stripped unless 'pass'"),
    edge(Trigger.legacy_refused, State.parsed, State.rejected, "legacy era, legacy='reject' (400, -32600)"),
    edge(Trigger.malformed, State.parsed, State.rejected, "the body is no JSON-RPC request (400, -32700 or -32600)"),
    edge(Trigger.known, State.parsed, State.schema_known, "the tool's schema is known, or no tool is called"),
    edge(Trigger.unknown, State.parsed, State.learning, "no schema known, on_unknown='fetch'"),
    edge(Trigger.passed, State.parsed, State.schema_known, "no schema known, on_unknown='pass': standard headers only"),
    edge(Trigger.unknown_refused, State.parsed, State.rejected, "no schema known, on_unknown='reject' (400, -32020)"),
    edge(Trigger.learned, State.learning, State.schema_known, "tools/list answered: the tool's schema, or none"),
    edge(Trigger.unlearned, State.learning, State.schema_known, "tools/list failed: standard headers, Mcp-Param-* cut"),
    edge(Trigger.matched, State.schema_known, State.checked, "every recognized header matches the body"),
    edge(Trigger.mismatched, State.schema_known, State.checked, "a header differs, repeats, is missing or malformed"),
    edge(Trigger.forwarded, State.checked, State.forwarded, "matched, and the policy (if any) allowed it"),
    edge(Trigger.reported, State.checked, State.reported, "mismatched, mode='report': forwarded, counted and logged"),
    edge(Trigger.refused, State.checked, State.rejected, "mismatched, mode='verify' (400, -32020); or GateRefusal"),
)
"""Every declared transition, in the order the diagrams draw them; ``define`` adds the cancel edges."""

_DESCRIPTIONS: Final[Mapping[State, str]] = {
    State.received: (
        "Count and measure the `Mcp-*` headers before decoding any (at most 64, each at most 8,192 bytes: else 431), "
        "then read the body within `max_body` (else 413); parse it once unless the request is of the legacy era."
    ),
    State.parsed: (
        "Decide the era from `MCP-Protocol-Version` (none, or a 2025 version: legacy, not verified; anything else is "
        "verified); refuse a body that is no JSON-RPC request; look up the called tool's schema (learned, shared, "
        "or preloaded), or apply `on_unknown` when none is known."
    ),
    State.learning: (
        "Fetch `tools/list` from the upstream with the caller's own `Authorization`, every page, one fetch in flight "
        "per server and identity; learn each tool's mirrored headers for `ttlMs` (else `learn_ttl`)."
    ),
    State.schema_known: (
        "Verify: `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` and every declared `Mcp-Param-*` against the body "
        "(`mcpfsm.gate.verify`); the verdict names the header and never quotes a value."
    ),
    State.checked: (
        "Act on the verdict: a mismatch is refused (mode `verify`) or forwarded and counted (mode `report`); a match "
        "is shown to the `policy=` hook as a `VerifiedCall`, which may raise `GateRefusal`; then forward."
    ),
    State.forwarded: "Terminal: the request was passed on and the upstream's answer streamed back to the client.",
    State.reported: "Terminal: report mode passed on a request whose headers do not match its body; it is counted.",
    State.rejected: "Terminal: the gate answered with an HTTP and a JSON-RPC error; nothing reached the upstream.",
    State.cancelled: "Terminal: the run was cancelled (the client went away, or the server is shutting down).",
}

GATE: Final = define(
    "gate", State, Trigger, _EDGES, _DESCRIPTIONS,
    title="One request through mcpfsm.gate: headers checked against the body before anything acts on them",
    cancel=(Trigger.cancelled, State.cancelled),
    walkthrough="tooling.walkthrough_gate", span="gate",
)
"""The gate machine."""

COMPILED: Final = CompiledMachine(GATE)
""":data:`GATE` with its transition table, read off a built ``transitions`` Machine."""
