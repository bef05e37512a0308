"""The manual's recorded reports: the walkthroughs' event tables read back whole, each page's report holding the
runs of its examples, and the docs hook placing each report on its page (docs/_hooks/generated.py)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.support.peer.fixtures import REPO_ROOT
from tests.tooling.test_report import page_data
from tooling.recorded import MANUAL_REPORTS, manual_reports, walkthrough_records


def hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location("generated_hook", REPO_ROOT / "docs" / "_hooks" / "generated.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def by_call(records: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    grouped: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        grouped.setdefault(record["call_id"], []).append(record)
    return grouped


def test_the_tables_read_back_with_headers_errors_and_input() -> None:
    runs = by_call(walkthrough_records(REPO_ROOT))
    table_rows = sum(
        1
        for spec in ("specs/tool-call.md", "specs/authorization.md", "specs/task.md", "specs/gate.md")
        for line in (REPO_ROOT / spec).read_text(encoding="utf-8").splitlines()
        if re.match(r"^\| \d+ \| ", line)
    )
    assert sum(map(len, runs.values())) == table_rows
    recovery = runs["tool-call-2"]
    assert [event["state"] for event in recovery] == [
        "resolving", "planning", "sending", "relisting", "comparing", "retrying", "succeeded",
    ]
    assert recovery[3]["error"] == {
        "type": "HeaderMismatchError",
        "code": -32020,
        "message": "Mcp-Param-Region header is missing but the request body's 'region' argument is present",
    }
    assert recovery[0]["headers"] is None and recovery[2]["headers"] == {"Mcp-Param-Database": "analytics"}
    assert recovery[5]["headers"] == {"Mcp-Param-Database": "analytics", "Mcp-Param-Region": "eu"}
    assert recovery[5]["attempt"] == 2 and recovery[0]["walkthrough"] == "Stale listing, retried"
    interview = runs["tool-call-9"]
    assert interview[0]["tool"] == "interview" and interview[3]["round"] == 1
    assert interview[3]["input_requests"] == {"first": "elicitation/create", "last": "elicitation/create"}
    assert interview[6]["input_responses"] == {
        "greeting": {
            "role": "assistant", "content": {"type": "text", "text": "Hello, Grace Hopper!"}, "model": "stub-model",
        }
    }
    assert runs["tool-call-6"][-1]["error"] == {"type": "RpcError", "code": -32001, "message": "Request timed out"}
    assert runs["tool-call-7"][-1]["error"]["code"] is None  # Cancelled has no JSON-RPC code
    assert (runs["tool-call-7"][0]["tool"], runs["tool-call-7-2"][0]["tool"]) == ("slow", "echo")
    login = runs["authorization-1-1"]
    assert login[-1]["scopes"] == ["mcp:basic", "offline_access"] and login[-1]["issuer"] == "http://127.0.0.1:PORT"
    assert [event["machine"] for event in login] == ["authorization"] * 7
    approve = runs["task-1"]
    assert [(event["state"], event["round"]) for event in approve] == [
        ("submitting", 0), ("input_required", 0), ("answering", 0), ("working", 1), ("working", 1), ("completed", 1),
    ]
    assert approve[1]["task_id"] == "task-1:approve" and approve[1]["status_message"] == "waiting for confirm"
    assert approve[0]["tool"] == "approve" and approve[1]["poll_interval"] == 0.05
    assert runs["task-2"][-1]["error"] == {"type": "RpcError", "code": -32603, "message": "compiler crashed"}
    assert runs["task-4"][1]["poll_interval"] == 60.0 and runs["task-5"][0]["tool"] == ""
    lie = runs["gate-2"]
    assert [(event["state"], event["trigger"]) for event in lie] == [
        ("received", None), ("parsed", "read"), ("schema_known", "known"), ("checked", "mismatched"),
        ("rejected", "refused"),
    ]
    assert {key: lie[-1][key] for key in ("method", "name", "tool", "header", "reason", "status")} == {
        "method": "tools/call",
        "name": "execute-sql",
        "tool": "execute-sql",
        "header": "Mcp-Param-Database",
        "reason": "Mcp-Param-Database does not match the argument /database (string)",
        "status": 400,
    }
    assert (lie[0]["method"], lie[0]["name"], lie[0]["walkthrough"]) == ("", None, "A header the body contradicts")
    assert [event["machine"] for event in runs["gate-7"]] == ["gate", "gate"] and runs["gate-7"][-1]["status"] == 431


def test_a_cell_the_walkthroughs_do_not_write_is_refused(tmp_path: Path) -> None:
    for spec in ("specs/tool-call.md", "specs/authorization.md"):
        (tmp_path / spec).parent.mkdir(exist_ok=True)
        (tmp_path / spec).write_text((REPO_ROOT / spec).read_text(encoding="utf-8"), encoding="utf-8")
    text = (tmp_path / "specs/tool-call.md").read_text(encoding="utf-8")
    (tmp_path / "specs/tool-call.md").write_text(text.replace("`RpcError` -32001:", "RpcError -32001"), "utf-8")
    with pytest.raises(ValueError, match=r"^an error cell the walkthrough tables do not write: 'RpcError -32001 "):
        walkthrough_records(tmp_path)


def test_each_page_gets_the_runs_of_its_examples() -> None:
    pages = manual_reports(REPO_ROOT)
    assert list(pages) == [
        "reports/calls.html", "reports/input.html", "reports/authorization.html", "reports/tasks.html",
        "reports/gate.html",
    ]
    expected = {
        "reports/calls.html": [f"tool-call-{n}" for n in range(1, 8)] + ["tool-call-7-2"],
        "reports/input.html": ["tool-call-8", "tool-call-9"],
        "reports/tasks.html": [f"task-{n}" for n in range(1, 6)],
        "reports/gate.html": [f"gate-{n}" for n in range(1, 8)],
    }
    machines = {"reports/tasks.html": "task", "reports/gate.html": "gate"}
    for path, page in pages.items():
        data = page_data(page)
        ids = [run["id"] for run in data["runs"]]
        if path in expected:
            assert sorted(ids) == sorted(expected[path]), path
            assert set(data["machines"]) == {machines.get(path, "tool-call")}
        else:
            assert len(ids) == 17 and all(run_id.startswith("authorization-") for run_id in ids)
            assert set(data["machines"]) == {"authorization"}
        assert "<iframe" not in page and re.search(r"\bsrc\s*=", page.split('id="trail"')[0]) is None


def test_the_hook_places_each_report_on_its_page_relative_to_it() -> None:
    generated = hook()
    for report in MANUAL_REPORTS:
        name = report.path.removeprefix("reports/").removesuffix(".html")
        markdown = (REPO_ROOT / "docs" / report.page).read_text(encoding="utf-8")
        assert markdown.count("<!-- report: ") == 1 and f"<!-- report: {name} -->\n" in markdown, report.page
        frame = generated.report_frame(name, report.page.replace(".md", "/"))
        assert f'src="../{report.path}"' in frame and f'href="../{report.path}"' in frame
    # Without directory URLs, and from the site's root page.
    assert 'src="reports/calls.html"' in generated.report_frame("calls", "calls.html")
    assert 'src="reports/calls.html"' in generated.report_frame("calls", "")
    with pytest.raises(ValueError, match=r"^<!-- report: skills -->: no such report"):
        generated.report_frame("skills", "skills/")
