r"""Drawing a machine definition: Mermaid and Graphviz text, and the structure of a rendered SVG.

Every function takes a :class:`~mcpfsm._machines.definition.MachineDefinition`, so every machine is
drawn the same way:

- :func:`mermaid` — a Mermaid ``stateDiagram-v2`` (renders on GitHub), one line per edge;
- :func:`dot` — Graphviz source, top to bottom; cancellation edges dashed, loop edges bold with
  their bound in the label;
- :func:`svg_structure` — the node and edge titles and the label text of a Graphviz SVG, which is
  what a drift check compares: the layout (coordinates, fonts) depends on the Graphviz version,
  the structure does not, and :func:`expected_structure` derives it from the definition alone;
- :func:`states_table` — the Markdown table of states every walkthrough opens with, with
  :func:`code_cell` and :func:`slug`, the Markdown pieces the walkthroughs share.

Deterministic; each text ends with a newline.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from typing import Any, Final

from .._machines.definition import Edge, MachineDefinition

__all__ = [
    "SvgStructure",
    "banner",
    "code_cell",
    "dot",
    "expected_structure",
    "mermaid",
    "slug",
    "states_table",
    "svg_structure",
]

_START: Final = "start"
_FITS: Final = 11
_SVG: Final = "{http://www.w3.org/2000/svg}"


def banner(definition: MachineDefinition[Any, Any]) -> str:
    """The "generated, do not edit" line every generated file carries."""
    return f"Generated from the {definition.name} machine definition by `mcpfsm diagram`; do not edit by hand."


def _label(edge: Edge[Any, Any]) -> str:
    guard = edge.guard if edge.bound is None else f"{edge.guard}; {edge.bound}"
    return f"{edge.trigger} [{guard}]"


def mermaid(definition: MachineDefinition[Any, Any]) -> str:
    """The machine as a Mermaid ``stateDiagram-v2``, one line per edge in ``edges`` order.

    Edges read ``source --> dest : trigger [guard]`` (a loop edge adds ``; bound`` inside the
    brackets); terminal states lead to ``[*]``.
    """
    lines = [f"%% {banner(definition)}", "stateDiagram-v2", f"    [*] --> {definition.initial}"]
    lines += [f"    {e.source} --> {e.dest} : {_label(e)}" for e in definition.edges]
    lines += [f"    {state} --> [*]" for state in definition.states if state in definition.terminal]
    return "\n".join(lines) + "\n"


def _quoted(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def _width(state: object) -> str:
    # Circles are a fixed 1.1 in wide; a longer name (retry_awaiting_input) gets a circle it fits in.
    name = str(state)
    return "" if len(name) <= _FITS else f", width={0.085 * len(name) + 0.25:.2f}"


def _label_lines(edge: Edge[Any, Any]) -> list[str]:
    lines = [str(edge.trigger), f"[{edge.guard}]"]
    if edge.bound is not None:
        lines.append(f"while {edge.bound}")
    return lines


def dot(definition: MachineDefinition[Any, Any]) -> str:
    r"""The machine as Graphviz dot source, top to bottom, in ``edges`` order.

    Terminal states are double circles and share the bottom rank; every edge is labelled
    ``trigger\n[guard]`` (a loop edge adds ``while bound`` and is drawn bold); cancellation edges are
    dashed so the main path stays readable.
    """
    graph = definition.name.replace("-", "_")
    lines = [
        f"// {banner(definition)}",
        f"digraph {graph} {{",
        "    graph [rankdir=TB, fontname=Helvetica, nodesep=0.5, ranksep=0.45];",
        "    node [shape=circle, fontname=Helvetica, fontsize=12, width=1.1, fixedsize=true];",
        "    edge [fontname=Helvetica, fontsize=9];",
        "",
        f'    {_START} [shape=point, width=0.15, label="", group=spine];',
    ]
    # One group keeps the non-terminal states on a straight vertical spine.
    lines += [
        f"    {state} [shape=doublecircle];"
        if state in definition.terminal
        else f"    {state} [group=spine{_width(state)}];"
        for state in definition.states
    ]
    terminal = " ".join(f"{state};" for state in definition.states if state in definition.terminal)
    lines += ["    { rank=sink; " + terminal + " }", "", f"    {_START} -> {definition.initial};"]
    for e in definition.edges:
        if definition.cancel_trigger is not None and e.trigger == definition.cancel_trigger:
            style = ", style=dashed, color=gray40, fontcolor=gray40"
        elif e.bound is not None:
            style = ", style=bold, constraint=false"
        elif e.dest in definition.terminal:
            style = ""
        else:
            style = ", weight=8"
        label = _quoted("\n".join(_label_lines(e)))
        lines.append(f"    {e.source} -> {e.dest} [label={label}{style}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True, slots=True, kw_only=True)
class SvgStructure:
    """What a Graphviz SVG of a machine shows, without the layout.

    Attributes:
        nodes: the node titles (state names and ``start``), sorted.
        edges: each edge as (title ``source->dest``, its label lines), sorted.
    """

    nodes: tuple[str, ...]
    edges: tuple[tuple[str, tuple[str, ...]], ...]


def expected_structure(definition: MachineDefinition[Any, Any]) -> SvgStructure:
    """The structure :func:`dot` rendered by any Graphviz version must show."""
    nodes = sorted([_START, *map(str, definition.states)])
    edges: list[tuple[str, tuple[str, ...]]] = [(f"{_START}->{definition.initial}", ())]
    edges += [(f"{e.source}->{e.dest}", tuple(_label_lines(e))) for e in definition.edges]
    return SvgStructure(nodes=tuple(nodes), edges=tuple(sorted(edges)))


def svg_structure(svg_text: str) -> SvgStructure:
    """Read the node and edge titles and edge labels off a Graphviz SVG.

    Raises:
        ValueError: the text is not an SVG document.
    """
    try:
        root = ElementTree.fromstring(re.sub(r"<!DOCTYPE[^>]*>", "", svg_text, count=1))
    except ElementTree.ParseError as exc:
        raise ValueError(f"not an SVG document: {exc}") from exc
    nodes: list[str] = []
    edges: list[tuple[str, tuple[str, ...]]] = []
    for group in root.iter(f"{_SVG}g"):
        kind = group.get("class")
        title = group.findtext(f"{_SVG}title")
        if title is None or kind not in ("node", "edge"):
            continue
        if kind == "node":
            nodes.append(title)
        else:
            texts = tuple((text.text or "") for text in group.iter(f"{_SVG}text"))
            edges.append((title, texts))
    return SvgStructure(nodes=tuple(sorted(nodes)), edges=tuple(sorted(edges)))


def states_table(definition: MachineDefinition[Any, Any]) -> list[str]:
    """The Markdown table of the states, in ``states`` order: what happens there and the edges that leave it.

    Each edge reads ``trigger`` → ``dest`` (guard; a loop edge adds ``loop, while bound``); cancellation edges
    are left out (every non-terminal state has one). One line per row, header first.
    """
    lines = ["| state | what happens there | leaves by |", "|---|---|---|"]
    for state in definition.states:
        leaves = [
            f"`{e.trigger}` → `{e.dest}` ({e.guard}{'' if e.bound is None else f'; loop, while {e.bound}'})"
            for e in definition.leaving(state)
            if e.trigger != definition.cancel_trigger
        ]
        lines.append(f"| `{state}` | {definition.descriptions[state]} | {'<br>'.join(leaves) or '—'} |")
    return lines


def code_cell(text: str) -> str:
    """``text`` as Markdown inline code that fits in a table cell (a longer fence around a backtick, ``|`` escaped)."""
    fence = "``" if "`" in text else "`"
    pad = " " if fence == "``" else ""
    cell = text.replace("|", "\\|")
    return f"{fence}{pad}{cell}{pad}{fence}"


def slug(title: str) -> str:
    """GitHub's anchor of a heading: lowercase, punctuation but ``_`` dropped, spaces to hyphens."""
    kept = "".join(ch for ch in title.lower() if ch.isalnum() or ch in " -_")
    return kept.replace(" ", "-")


def diagram_section(definition: MachineDefinition[Any, Any], source: str) -> list[str]:
    """The "Diagram" section of a machine's walkthrough: its Mermaid chart and a link to its SVG.

    ``source`` names where the definition lives, e.g. ``TOOL_CALL`` in ``mcpfsm/_machines/tool_call.py``.
    """
    name = definition.name
    return [
        "## Diagram",
        "",
        "```mermaid",
        *mermaid(definition).rstrip("\n").split("\n"),
        "```",
        "",
        f"The same machine rendered by Graphviz: [diagrams/{name}.svg](../diagrams/{name}.svg). Both are "
        f"generated from {source}.",
    ]
