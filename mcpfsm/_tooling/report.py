"""A trail viewer: a recorded audit trail as one self-contained HTML page (``mcpfsm trace FILE --html OUT``).

The page (docs/trail-viewer.md) holds everything it shows: the Graphviz SVG of each machine the trail uses,
drawn from the same :class:`~mcpfsm._machines.definition.MachineDefinition` as ``specs/`` (``render.dot``, then
``dot -Tsvg`` through :func:`mcpfsm._tooling.diagram.svg`), the runs as JSON, and the CSS and JavaScript that
draw the index, the filters, the lit path and the timeline. Its Content-Security-Policy is ``default-src
'none'``: it fetches nothing and opens from disk.

Nothing here knows a particular machine. A run is the events of one ``call_id``; its machine is the events'
``machine`` field, looked up in :data:`mcpfsm._machines.registry.MACHINES`; each event after the first names the edge it
took by ``(previous, trigger)``, which :func:`machine_svg` marks on the SVG as ``data-edge="previous:trigger"``
(every node as ``data-state``), so the script lights the path of any machine the same way. A run of a machine
without a definition is shown with its timeline only.
"""

from __future__ import annotations

import html
import json
import re
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from .._machines.definition import MachineDefinition
from .._machines.registry import MACHINES
from .diagram import svg
from .render import banner, dot
from .report_assets import SCRIPT, STYLE
from .trace import parse_records, run_id

__all__ = ["Run", "machine_svg", "parse_trail", "report_html", "runs_of"]

_SVG_NS: Final = "http://www.w3.org/2000/svg"
_XLINK_NS: Final = "http://www.w3.org/1999/xlink"
# Fields every event has, shown in their own timeline columns or on the run; the rest are details.
_RUN_FIELDS: Final = frozenset({"call_id", "machine", "tool", "server"})
# Left out of each event on the page: the chain's hashes (for `mcpfsm audit verify`; the page keeps log_seq),
# and the wall-clock time (the run keeps its first; each event has its elapsed time). A third less to parse for
# a large trail (bench/report.py).
_LEFT_OUT: Final = frozenset({"log_prev", "log_sha256", "log_hmac", "at"})
# Machines whose runs are a member's statuses, not work that ends (the page shows the last status as the outcome).
_STATUS_RUNS: Final = frozenset({"group"})
# Values the page assumes when an event leaves them out.
_DEFAULTS: Final = {"attempt": 1, "round": 0}


def parse_trail(text: str) -> list[dict[str, Any]]:
    """Read a JSON Lines audit trail: one event record per line, blank lines skipped (:func:`.trace.parse_records`).

    Each record must read back as an event (:meth:`CallEvent.from_dict`); it is kept whole, so fields this
    version does not know (a ``server``, a task's poll) reach the page too.

    Raises:
        ValueError: a line is not JSON or not a CallEvent record; the message starts with ``line N:``.
    """
    return [record for record, _ in parse_records(text)]


@dataclass(frozen=True, slots=True, kw_only=True)
class Run:
    """One run of one machine in a trail: the events of one ``call_id``, by ``seq``.

    Attributes:
        call_id: the run's id.
        machine: the machine's name (``"tool-call"``, ``"input"``, ``"authorization"``, …).
        events: the event records, ordered by ``seq``.
    """

    call_id: str
    machine: str
    events: tuple[Mapping[str, Any], ...]

    @property
    def path(self) -> list[str]:
        """The edges taken, in order, as ``previous:trigger`` (``start`` first when the run began at the start)."""
        steps = []
        for index, event in enumerate(self.events):
            if event.get("previous") is None or event.get("trigger") is None:
                steps.append("start" if index == 0 else "")
            else:
                steps.append(f"{event['previous']}:{event['trigger']}")
        return steps

    def label(self) -> str:
        """What the index calls the run: the tool, or the request and its target, or the issuer.

        A run of the gate: its method and the name it carries (``tools/call execute-sql``). A group member's run:
        ``member NAME``.
        """
        first = self.events[0]
        if self.machine == "group":
            return f"member {self.server()}"
        for event in self.events:
            if event.get("request"):
                return f"{event['request']} {event.get('target', '')}".strip()
            if event.get("method"):
                return f"{event['method']} {event.get('name') or ''}".strip()
        if first.get("tool"):
            return str(first["tool"])
        for event in reversed(self.events):
            if event.get("issuer"):
                return str(event["issuer"])
        return ""

    def server(self) -> str:
        """The server the run talked to, when the trail's events name one (``""`` otherwise)."""
        for event in self.events:
            if event.get("server"):
                return str(event["server"])
        return ""


def runs_of(records: Iterable[Mapping[str, Any]]) -> list[Run]:
    """Group event records into runs by ``call_id`` (a group member's by ``group:NAME``), in order of appearance."""
    grouped: dict[str, list[Mapping[str, Any]]] = {}
    for record in records:
        grouped.setdefault(run_id(record), []).append(record)
    return [
        Run(
            call_id=call_id,
            machine=str(events[0].get("machine") or "tool-call"),
            events=tuple(sorted(events, key=lambda event: int(event["seq"]))),
        )
        for call_id, events in grouped.items()
    ]


def machine_svg(definition: MachineDefinition[Any, Any]) -> str:
    """The machine's Graphviz diagram (as ``specs/`` draws it) as inline SVG, its parts marked for the viewer.

    Each state's ``<g class="node">`` gets ``data-state="name"``; each edge's ``<g class="edge">`` gets
    ``data-edge="source:trigger"`` (the arrow from the start point: ``data-edge="start"``), read off the edge's
    title (``source->dest``) and the first line of its label (the trigger). The ``width`` and ``height`` go (the
    ``viewBox`` stays) so the page can scale it; ``data-width`` keeps the natural width.

    Raises:
        GraphvizNotFound: Graphviz's ``dot`` is not installed.
    """
    text = svg(dot(definition), banner(definition))
    ElementTree.register_namespace("", _SVG_NS)
    ElementTree.register_namespace("xlink", _XLINK_NS)
    root = ElementTree.fromstring(re.sub(r"<!DOCTYPE[^>]*>", "", text, count=1))
    svg_tag = f"{{{_SVG_NS}}}"
    for group in root.iter(f"{svg_tag}g"):
        kind = group.get("class")
        title = group.findtext(f"{svg_tag}title") or ""
        if kind == "node":
            group.set("data-state", title)
        elif kind == "edge":
            source = title.split("->", 1)[0]
            texts = [element.text or "" for element in group.iter(f"{svg_tag}text")]
            group.set("data-edge", "start" if source == "start" else f"{source}:{texts[0] if texts else ''}")
    width = root.attrib.pop("width", "")
    root.attrib.pop("height", None)
    root.set("data-width", width)
    root.set("data-machine", definition.name)
    root.set("class", "machine")
    return ElementTree.tostring(root, encoding="unicode")


def _compact(run: Run, machines: Mapping[str, MachineDefinition[Any, Any]]) -> dict[str, Any]:
    # The run as the page reads it: run-wide fields once, per event only what is set and differs from the
    # defaults, headers only when they change (a call's events share one plan).
    events: list[dict[str, Any]] = []
    headers: Any = None
    for event in run.events:
        item: dict[str, Any] = {}
        for name, value in event.items():
            if name in _RUN_FIELDS or name in _LEFT_OUT or value is None or value == [] or value == {}:
                continue
            if name in _DEFAULTS and value == _DEFAULTS[name]:
                continue
            if name == "headers":
                if value == headers:
                    continue
                headers = value
            item[name] = value
        events.append(item)
    last = run.events[-1]
    definition = machines.get(run.machine)
    ended = definition is not None and last["state"] in {str(state) for state in definition.terminal}
    # A group member's run is its statuses: the last one is where the member stands, not an unfinished run.
    ended = ended or run.machine in _STATUS_RUNS
    return {
        "id": run.call_id,
        "machine": run.machine,
        "label": run.label(),
        "server": run.server(),
        "outcome": str(last["state"]) if ended or definition is None else "unfinished",
        "ms": round(max(float(event["elapsed"]) for event in run.events) * 1000, 3),
        "at": str(run.events[0]["at"]),
        "events": events,
    }


def _script_json(value: Any) -> str:
    # Inside <script>, `</script` would end the element and `<!--` change how it ends: no `<` at all, `\u003c`
    # is the same JSON string.
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")


def report_html(
    records: Sequence[Mapping[str, Any]],
    *,
    title: str,
    machines: Mapping[str, MachineDefinition[Any, Any]] | None = None,
) -> str:
    """The whole report page for ``records`` (see the module docstring); ``title`` heads it (escaped).

    ``machines`` maps machine names to definitions (default: every machine of mcpfsm,
    :data:`mcpfsm._machines.registry.MACHINES`); a run of a machine not there gets a timeline and no diagram.

    Raises:
        ValueError: ``records`` is empty.
        GraphvizNotFound: a machine the trail uses must be drawn and Graphviz's ``dot`` is not installed.
    """
    known = MACHINES if machines is None else machines
    runs = runs_of(records)
    if not runs:
        raise ValueError("no events recorded")
    used = dict.fromkeys(run.machine for run in runs)
    diagrams = {name: machine_svg(known[name]) for name in used if name in known}
    described = {name: {"title": known[name].title, "initial": str(known[name].initial)} for name in diagrams}
    data = {"title": title, "machines": described, "runs": [_compact(run, known) for run in runs]}
    figures = "\n".join(
        f'<div class="figure" data-machine="{html.escape(name)}" hidden>{text}</div>' for name, text in diagrams.items()
    )
    parts = {
        "TITLE": html.escape(title),
        "STYLE": STYLE,
        "FIGURES": figures,
        "DATA": _script_json(data),
        "SCRIPT": SCRIPT,
    }
    # One pass: a recorded value that reads "@SCRIPT@" stays text.
    return _SLOT.sub(lambda match: parts[match.group(1)], _PAGE)


_SLOT: Final = re.compile(r"@(TITLE|STYLE|FIGURES|DATA|SCRIPT)@")
_PAGE: Final = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; \
script-src 'unsafe-inline'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="mcpfsm trace --html">
<title>@TITLE@</title>
<style>@STYLE@</style>
</head>
<body>
<header>
<h1>@TITLE@</h1>
<form id="filters" aria-label="filters">
<label>outcome <select id="f-outcome" data-field="outcome"></select></label>
<label>tool <select id="f-label" data-field="label"></select></label>
<label>server <select id="f-server" data-field="server"></select></label>
<label>machine <select id="f-machine" data-field="machine"></select></label>
<span id="shown" aria-live="polite"></span>
</form>
</header>
<main>
<section id="index" aria-label="calls">
<table>
<thead><tr><th>#</th><th>tool / request</th><th>server</th><th>outcome</th><th>ms</th><th>machine</th>\
<th>states</th></tr></thead>
<tbody id="rows"></tbody>
</table>
</section>
<section id="detail" aria-label="the selected call">
<p id="empty">Select a call in the index.</p>
<div id="run" hidden>
<h2 id="run-title"></h2>
<p id="run-meta"></p>
<div id="stepper" role="group" aria-label="step through the path">
<button type="button" id="first" title="first step (Home)">&#xAB; first</button>
<button type="button" id="back" title="previous step (left arrow)">&#x25C0; back</button>
<span id="position" aria-live="polite"></span>
<button type="button" id="forward" title="next step (right arrow)">forward &#x25B6;</button>
<button type="button" id="last" title="last step (End)">last &#xBB;</button>
<button type="button" id="zoom" title="the diagram at its natural size, or fitted">zoom</button>
</div>
<p id="no-diagram" hidden></p>
<div id="figures">@FIGURES@</div>
<table id="timeline">
<thead><tr><th>step</th><th>state</th><th>by</th><th>ms</th><th>attempt</th><th>round</th><th>details</th></tr></thead>
<tbody id="events"></tbody>
</table>
</div>
</section>
</main>
<script type="application/json" id="trail">@DATA@</script>
<script>@SCRIPT@</script>
</body>
</html>
"""
