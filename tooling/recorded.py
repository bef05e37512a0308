"""The walkthroughs' recorded runs as an audit trail, and the manual's reports made from them.

``specs/tool-call.md``, ``specs/authorization.md`` and ``specs/task.md`` (written by ``python -m tooling.diagram``
from runs of the real client against the test servers and the test authorization server, and kept byte for byte by
its drift check), and ``specs/gate.md`` (requests through the gate's own run), show each example's events as a table.
:func:`walkthrough_records` reads those tables back into event records, with what the tables show of each event: the
header plan (the ``Mcp-Param-*`` headers beyond the standard ones), the error, the input requests and the answers
sent, the issuer and scopes of an authorization flow, a task's id, status message and poll interval, a gate run's
method, name, header, reason and status. Nothing nondeterministic is in the tables, so neither is it in the records:
``at`` is one fixed time and ``elapsed`` counts steps.

:data:`MANUAL_REPORTS` names the reports the manual's pages embed (docs/calls.md, docs/input.md,
docs/authorization.md, docs/tasks.md, docs/gate.md) and which examples each holds; :func:`manual_reports` writes them
with the trail viewer (:func:`mcpfsm._tooling.report.report_html`). The docs build makes them
(``docs/_hooks/generated.py``), so a report can never disagree with the walkthrough it shows.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from mcpfsm._core.events import CallEvent
from mcpfsm._tooling.report import report_html

__all__ = ["MANUAL_REPORTS", "ManualReport", "manual_reports", "walkthrough_records"]

AT: Final = "2026-12-01T10:00:00.000000+00:00"
"""The ``at`` of every recorded event: the tables leave the wall clock out."""

_ROW: Final = re.compile(r"^\|(.*)\|\s*$")
_HEADING: Final = re.compile(r"^### (\d+)\. (.*)$")
_ERROR: Final = re.compile(r"^`(?P<type>[A-Za-z_][\w.]*)`(?: (?P<code>-?\d+))?: `(?P<message>.*)`$")
_ASK: Final = re.compile(r"`([^`]+)`: `([^`]+)`")
_ANSWER: Final = re.compile(r"`([^`:]+): ((?:[^`]|``)*)`")
_COLUMNS: Final = {"#": "seq", "from": "previous"}  # the task walkthrough's names for them
_TASK_TOOL: Final = re.compile(r'(?:call_tool|start_tool)\("([^"]+)"')
_RPC_RAISED: Final = re.compile(r"^The call raises RpcError: JSON-RPC error (-?\d+): (.*)\.$")


@dataclass(frozen=True, slots=True, kw_only=True)
class ManualReport:
    """One report the manual embeds: its file under the site, the page that shows it, what it holds.

    Attributes:
        path: where the report goes in the site (``reports/calls.html``).
        page: the manual's page that embeds it (``calls.md``).
        title: the report's title.
        spec: the walkthrough its runs come from (``specs/tool-call.md``).
        examples: the walkthrough's example numbers it holds, in order.
    """

    path: str
    page: str
    title: str
    spec: str
    examples: tuple[int, ...]


MANUAL_REPORTS: Final = (
    ManualReport(
        path="reports/calls.html",
        page="calls.md",
        title="Recorded tool calls: success, the -32020 recovery and the ways a call fails",
        spec="specs/tool-call.md",
        examples=(1, 2, 3, 4, 5, 6, 7),
    ),
    ManualReport(
        path="reports/input.html",
        page="input.md",
        title="Recorded tool calls that ask for input: one elicitation round, then two rounds",
        spec="specs/tool-call.md",
        examples=(8, 9),
    ),
    ManualReport(
        path="reports/authorization.html",
        page="authorization.md",
        title="Recorded authorization flows: login, step-up, refresh, migration, grants and refusals",
        spec="specs/authorization.md",
        examples=tuple(range(1, 15)),
    ),
    ManualReport(
        path="reports/tasks.html",
        page="tasks.md",
        title="Recorded task runs: input while working, a failure, a cancellation, a pushed status, an unknown task",
        spec="specs/task.md",
        examples=(1, 2, 3, 4, 5),
    ),
    ManualReport(
        path="reports/gate.html",
        page="gate.md",
        title="Recorded requests through the gate: true, contradicted, learned, legacy, reported, refused",
        spec="specs/gate.md",
        examples=(1, 2, 3, 4, 5, 6, 7),
    ),
)
"""The reports the manual's pages embed, made from the walkthroughs' recorded runs."""


def _cell(text: str) -> str | None:
    text = text.strip()
    return None if text in ("—", "") else text


def _plain(text: str | None) -> str | None:
    return None if text is None else text.strip("`")


def _tables(text: str) -> Iterator[tuple[int, str, list[dict[str, str | None]]]]:
    # (example number, title, rows) of each "### N. Title" section's event table, cells as written (backticks
    # kept).
    example, title = 0, ""
    header: list[str] | None = None
    rows: list[dict[str, str | None]] = []
    for line in text.splitlines():
        heading = _HEADING.match(line)
        if heading:
            if rows:
                yield example, title, rows
            example, title, header, rows = int(heading.group(1)), heading.group(2), None, []
            continue
        match = _ROW.match(line)
        if not match or not example:
            continue
        cells = [cell.strip() for cell in match.group(1).split(" | ")]
        if header is None:
            named = [_COLUMNS.get(cell, cell) for cell in cells]
            if "seq" in named and "state" in named:
                header = named
            continue
        if set(match.group(1)) <= set("-| ") or [_COLUMNS.get(cell, cell) for cell in cells] == header:
            continue
        rows.append(dict(zip(header, map(_cell, cells), strict=False)))
    if rows:
        yield example, title, rows


def _headers(cell: str | None) -> dict[str, str] | None:
    # "`Mcp-Param-Database: analytics`<br>`Mcp-Param-Region: eu`"; "(no `Mcp-Param-*`)" is an empty plan.
    if cell is None:
        return None
    if cell.startswith("(no "):
        return {}
    headers = {}
    for part in cell.split("<br>"):
        name, _, value = part.strip().strip("`").partition(": ")
        headers[name] = value
    return headers


def _error(cell: str | None) -> dict[str, Any] | None:
    # "`HeaderMismatchError` -32020: `message`", "`Cancelled`: `the call was cancelled`".
    if cell is None:
        return None
    match = _ERROR.match(cell)
    if match is None:
        raise ValueError(f"an error cell the walkthrough tables do not write: {cell!r}")
    code = match.group("code")
    return {"type": match.group("type"), "code": None if code is None else int(code), "message": match["message"]}


def _input(cell: str | None) -> dict[str, Any]:
    # "asks `name`: `elicitation/create`, ..." or "answers `name: {json}`, ...".
    if cell is None:
        return {}
    if cell.startswith("asks "):
        return {"input_requests": dict(_ASK.findall(cell))}
    if cell.startswith("answers "):
        return {"input_responses": {key: json.loads(value) for key, value in _ANSWER.findall(cell)}}
    raise ValueError(f"an input cell the walkthrough tables do not write: {cell!r}")


def _record(row: Mapping[str, str | None], call_id: str, machine: str, **extra: Any) -> dict[str, Any]:
    seq = int(row["seq"] or 0)
    record: dict[str, Any] = {
        "machine": machine,
        "call_id": call_id,
        "seq": seq,
        "state": _plain(row["state"]),
        "previous": _plain(row["previous"]),
        "trigger": _plain(row["trigger"]),
        "attempt": int(row.get("attempt") or 1),
        "at": AT,
        "elapsed": seq / 1000,
        **extra,
    }
    error = _error(row.get("error"))
    if error is not None:
        record["error"] = error
    CallEvent.from_dict(record)  # every record reads back as an event of its machine
    return record


def walkthrough_records(root: Path, *, spec: str | None = None) -> list[dict[str, Any]]:
    """The walkthroughs' recorded runs under the repository ``root``, as audit records, example by example.

    Run ids: ``tool-call-N`` (``tool-call-N-2`` for an example's follow-up call), ``authorization-N-F``
    (flow ``F`` of example ``N``), ``task-N`` and ``gate-N``. ``spec`` limits the records to one walkthrough
    (``"specs/tool-call.md"``).
    Each record carries ``example`` and ``walkthrough``, the example's number and title, which the trail viewer
    shows as details.

    Raises:
        OSError: a walkthrough cannot be read.
        ValueError: a table cell is not in the form the walkthroughs write.
    """
    records: list[dict[str, Any]] = []
    if spec in (None, "specs/tool-call.md"):
        text = (root / "specs/tool-call.md").read_text(encoding="utf-8")
        tools = _tools_by_example(text)
        for example, title, rows in _tables(text):
            runs = 0
            for row in rows:
                runs += row["seq"] == "0"  # an example with a follow-up call records two runs
                call_id = f"tool-call-{example}" + ("" if runs == 1 else f"-{runs}")
                named = tools.get(example, [])
                extra = {
                    "tool": named[runs - 1] if runs <= len(named) else "execute-sql",
                    "round": int(row.get("round") or 0),
                    "headers": _headers(row.get("plan (beyond the standard headers)")),
                    **_input(row.get("input")),
                }
                records.append(_record(row, call_id, "tool-call", **extra, example=example, walkthrough=title))
    if spec in (None, "specs/authorization.md"):
        for example, title, rows in _tables((root / "specs/authorization.md").read_text(encoding="utf-8")):
            for row in rows:
                extra = {
                    "tool": _plain(row.get("tool")) or "",
                    "issuer": _plain(row.get("issuer")),
                    "scopes": (row.get("scopes") or "").split(),
                }
                call_id = f"authorization-{example}-{row['flow']}"
                records.append(_record(row, call_id, "authorization", **extra, example=example, walkthrough=title))
    if spec in (None, "specs/task.md"):
        text = (root / "specs/task.md").read_text(encoding="utf-8")
        task_tools, failures = _task_examples(text)
        for example, title, rows in _tables(text):
            updates = 0
            for row in rows:
                updates += row["trigger"] == "`updated`"  # round: the tasks/update requests acknowledged
                interval = row.get("poll interval")
                fields: dict[str, Any] = {
                    "tool": task_tools.get(example, ""),
                    "round": updates,
                    "task_id": _plain(row.get("task id")),
                    "status_message": row.get("status message"),
                    "poll_interval": None if interval is None else float(interval.removesuffix(" s")),
                }
                if _plain(row["state"]) == "failed" and example in failures:
                    fields["error"] = failures[example]
                call_id = f"task-{example}"
                records.append(_record(row, call_id, "task", **fields, example=example, walkthrough=title))
    if spec in (None, "specs/gate.md"):
        for example, title, rows in _tables((root / "specs/gate.md").read_text(encoding="utf-8")):
            for row in rows:
                method, name = _plain(row.get("method")) or "", _plain(row.get("name"))
                status = row.get("status")
                fields = {
                    "tool": name if method == "tools/call" and name is not None else "",
                    "method": method,
                    "name": name,
                    "header": _plain(row.get("header")),
                    "reason": row.get("reason"),
                    "status": None if status is None else int(status),
                }
                records.append(_record(row, f"gate-{example}", "gate", **fields, example=example, walkthrough=title))
    return records


def _task_examples(text: str) -> tuple[dict[int, str], dict[int, dict[str, Any]]]:
    # The tool each task example starts (its code line) and the error of the examples whose call raised RpcError.
    tools: dict[int, str] = {}
    failures: dict[int, dict[str, Any]] = {}
    example = 0
    for line in text.splitlines():
        heading = _HEADING.match(line)
        if heading:
            example = int(heading.group(1))
            continue
        named = _TASK_TOOL.search(line)
        if named and example:
            tools.setdefault(example, named.group(1))
        raised = _RPC_RAISED.match(line)
        if raised and example:
            failures[example] = {"type": "RpcError", "code": int(raised.group(1)), "message": raised.group(2)}
    return tools, failures


def _tools_by_example(text: str) -> dict[int, list[str]]:
    # The tool-call walkthrough names each run's tool in its code lines (`tools.get("ask-name")`), in order.
    tools: dict[int, list[str]] = {}
    example = 0
    for line in text.splitlines():
        heading = _HEADING.match(line)
        if heading:
            example = int(heading.group(1))
            continue
        named = re.search(r'tools\.get\("([^"]+)"\)', line)
        if named and example:
            tools.setdefault(example, []).append(named.group(1))
    return tools


def manual_reports(root: Path) -> dict[str, str]:
    """The manual's reports (:data:`MANUAL_REPORTS`) from the walkthroughs under ``root``: site path -> page.

    Raises:
        OSError: a walkthrough cannot be read.
        ValueError: a walkthrough's tables are malformed, or an example a report names is not there.
        GraphvizNotFound: Graphviz's ``dot`` is not installed (the reports inline the machines' diagrams).
    """
    pages = {}
    for report in MANUAL_REPORTS:
        records = walkthrough_records(root, spec=report.spec)
        chosen = [record for record in records if record["example"] in report.examples]
        missing = set(report.examples) - {record["example"] for record in chosen}
        if missing:
            raise ValueError(f"{report.spec} has no example {', '.join(map(str, sorted(missing)))}")
        # The example's title once, on its first event (the timeline shows it there); the number is in the run id.
        shown = []
        for record in chosen:
            record = {key: value for key, value in record.items() if key != "example"}
            if record["seq"]:
                del record["walkthrough"]
            shown.append(record)
        pages[report.path] = report_html(shown, title=report.title)
    return pages
