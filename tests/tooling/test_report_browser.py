"""The trail viewer in a real browser: headless Chromium (Debian ``chromium``, ``chromium-driver``) through Selenium.

One report holds the walkthroughs' recorded runs (``specs/tool-call.md``, ``specs/authorization.md``,
``specs/task.md``, ``specs/gate.md``), a live run of the input machine and live calls against two test servers whose
events name their ``server``; live requests through the gate's run make a report of their own. For every run the page
must light exactly the recorded path on its machine's diagram, step through it with the buttons and the arrow keys,
filter the index, and fetch nothing. ``.ci/run`` installs Chromium and its driver when missing; the driver is always
/usr/bin/chromedriver, so Selenium Manager never downloads one.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.select import Select
from selenium.webdriver.support.ui import WebDriverWait

from mcpfsm._tooling.report import report_html
from tests.support.peer.fixtures import REPO_ROOT
from tests.tooling.recordings import TASK, group_records, input_records, jsonl, task_records, walkthrough_records

CHROMEDRIVER: Final = "/usr/bin/chromedriver"
CHROMIUM: Final = "/usr/bin/chromium"
WAIT: Final = 15.0


@pytest.fixture(scope="module")
def driver() -> Iterator[WebDriver]:
    assert Path(CHROMEDRIVER).exists() and Path(CHROMIUM).exists(), (
        "the browser tests need Debian's chromium and chromium-driver (.ci/need chromedriver chromium chromium-driver)"
    )
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1400,1000"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    browser = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    try:
        yield browser
    finally:
        browser.quit()


@pytest.fixture(scope="module")
def trail(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[dict[str, Any]], Path]:
    records = walkthrough_records() + input_records() + group_records()
    folder = tmp_path_factory.mktemp("report")
    source = folder / "trail.jsonl"
    source.write_text(jsonl(records), encoding="utf-8")
    page = folder / "trail.html"
    done = subprocess.run(
        [sys.executable, "-m", "mcpfsm", "trace", str(source), "--html", str(page)],
        capture_output=True, text=True, cwd=REPO_ROOT, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return records, page


def runs(records: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    grouped: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        grouped.setdefault(record["call_id"], []).append(record)
    return {call_id: sorted(events, key=lambda event: event["seq"]) for call_id, events in grouped.items()}


def recorded_path(events: list[dict[str, Any]]) -> list[str]:
    """The edges a run took, from its records alone: the start arrow, then ``previous:trigger`` per event."""
    return ["start"] + [f"{event['previous']}:{event['trigger']}" for event in events[1:]]


def load(driver: WebDriver, page: Path, fragment: str = "") -> None:
    driver.get("about:blank")  # a fresh load, even when only the fragment differs
    driver.get(page.as_uri() + fragment)
    WebDriverWait(driver, WAIT).until(lambda d: d.execute_script("return document.body.dataset.ready === '1'"))


def lit(driver: WebDriver) -> dict[str, Any]:
    """What the visible diagram shows lit: edges by the steps they were taken at, visited and current states."""
    return driver.execute_script(
        """
        const svg = document.querySelector('#figures .figure:not([hidden]) svg');
        const taken = [];
        for (const edge of svg.querySelectorAll('g.edge.taken')) {
            for (const step of edge.dataset.steps.split(' ')) taken.push([Number(step), edge.dataset.edge]);
        }
        taken.sort((a, b) => a[0] - b[0]);
        return {
            machine: svg.dataset.machine,
            edges: taken.map((pair) => pair[1]),
            visited: [...svg.querySelectorAll('g.node.visited')].map((node) => node.dataset.state).sort(),
            current: [...svg.querySelectorAll('g.node.current')].map((node) => node.dataset.state),
            currentEdge: [...svg.querySelectorAll('g.edge.current')].map((edge) => edge.dataset.edge),
            step: Number(document.getElementById('run').dataset.step),
            call: document.getElementById('run').dataset.call,
        };
        """
    )


def step_is(driver: WebDriver, step: int) -> None:
    WebDriverWait(driver, WAIT).until(lambda d: lit(d)["step"] == step)


def test_every_run_lights_its_recorded_path_on_its_own_machine(
    driver: WebDriver, trail: tuple[list[dict[str, Any]], Path]
) -> None:
    records, page = trail
    recorded = runs(records)
    machines = {events[0]["machine"] for events in recorded.values()}
    assert machines == {"tool-call", "authorization", "input", "task", "gate"}
    assert {events[0].get("server") for events in recorded.values()} >= {"alpha", "beta"}
    load(driver, page)
    assert driver.find_element(By.ID, "shown").text == f"{len(recorded)} of {len(recorded)} calls"
    body = driver.find_element(By.TAG_NAME, "body")
    for number, (call_id, events) in enumerate(recorded.items()):
        if number:
            body.send_keys(Keys.ARROW_DOWN)  # the next call in the index
        WebDriverWait(driver, WAIT).until(lambda d, call_id=call_id: lit(d)["call"] == call_id)
        selected = driver.find_element(By.CSS_SELECTOR, "#rows tr.selected")
        assert selected.get_attribute("data-call") == call_id
        shown = lit(driver)
        assert shown["machine"] == events[0]["machine"], call_id
        assert shown["edges"] == recorded_path(events), call_id
        assert shown["visited"] == sorted({event["state"] for event in events}), call_id
        assert shown["current"] == [events[-1]["state"]], call_id
        assert shown["currentEdge"] == [recorded_path(events)[-1]], call_id
        # No event was drawn off the machine: every recorded step is an edge of the definition.
        assert driver.find_elements(By.CSS_SELECTOR, "#events tr.stray") == [], call_id
        timeline = [cell.text for cell in driver.find_elements(By.CSS_SELECTOR, "#events tr td:nth-child(2)")]
        assert timeline == [event["state"] for event in events], call_id
    # A click selects too: the first row, back at the top of the index.
    body.send_keys(Keys.ARROW_UP)
    first = next(iter(recorded))
    driver.execute_script("document.getElementById('index').scrollTop = 0")
    row = WebDriverWait(driver, WAIT).until(
        lambda d: d.find_element(By.CSS_SELECTOR, f"#rows tr[data-call='{first}']")
    )
    row.click()
    WebDriverWait(driver, WAIT).until(lambda d: lit(d)["call"] == first)
    assert lit(driver)["edges"] == recorded_path(recorded[first])


def test_the_step_control_walks_the_path_with_buttons_and_arrow_keys(
    driver: WebDriver, trail: tuple[list[dict[str, Any]], Path]
) -> None:
    records, page = trail
    events = runs(records)["tool-call-2"]  # the -32020 recovery: seven states
    path = recorded_path(events)
    load(driver, page, "#call=tool-call-2")
    step_is(driver, len(events) - 1)
    driver.find_element(By.ID, "first").click()
    step_is(driver, 0)
    assert lit(driver)["edges"] == ["start"] and lit(driver)["current"] == [events[0]["state"]]
    assert driver.find_element(By.ID, "back").get_attribute("disabled") == "true"
    driver.find_element(By.ID, "forward").click()
    step_is(driver, 1)
    assert lit(driver)["edges"] == path[:2]
    assert lit(driver)["currentEdge"] == [path[1]]
    body = driver.find_element(By.TAG_NAME, "body")
    for expected in range(2, len(events)):
        body.send_keys(Keys.ARROW_RIGHT)
        step_is(driver, expected)
        shown = lit(driver)
        assert shown["edges"] == path[: expected + 1]
        assert shown["current"] == [events[expected]["state"]]
    assert driver.find_element(By.ID, "forward").get_attribute("disabled") == "true"
    body.send_keys(Keys.ARROW_RIGHT)  # past the end: stays
    step_is(driver, len(events) - 1)
    body.send_keys(Keys.ARROW_LEFT)
    step_is(driver, len(events) - 2)
    assert lit(driver)["edges"] == path[:-1]
    driver.find_element(By.ID, "back").click()
    step_is(driver, len(events) - 3)
    assert driver.find_element(By.ID, "position").text == (
        f"step {len(events) - 2} of {len(events)}: {events[-3]['state']}"
    )
    # The timeline follows: the current row, and the rows ahead dimmed.
    assert [row.get_attribute("class") for row in driver.find_elements(By.CSS_SELECTOR, "#events tr")][-3:] == [
        "current", "ahead", "ahead",
    ]


def test_the_filters_narrow_the_index(driver: WebDriver, trail: tuple[list[dict[str, Any]], Path]) -> None:
    records, page = trail
    recorded = runs(records)
    load(driver, page)

    def shown() -> list[str]:
        rows = driver.find_elements(By.CSS_SELECTOR, "#rows tr[data-run]")
        return [row.get_attribute("data-call") or "" for row in rows]

    Select(driver.find_element(By.ID, "f-server")).select_by_visible_text("beta")
    beta = [call_id for call_id, events in recorded.items() if events[0].get("server") == "beta"]
    assert len(beta) == 3
    WebDriverWait(driver, WAIT).until(lambda d: shown() == beta)
    assert driver.find_element(By.ID, "shown").text == f"3 of {len(recorded)} calls"
    Select(driver.find_element(By.ID, "f-outcome")).select_by_visible_text("failed")
    failed_beta = [call_id for call_id in beta if recorded[call_id][-1]["state"] == "failed"]
    assert len(failed_beta) == 1
    WebDriverWait(driver, WAIT).until(lambda d: shown() == failed_beta)
    Select(driver.find_element(By.ID, "f-server")).select_by_visible_text("all")
    Select(driver.find_element(By.ID, "f-outcome")).select_by_visible_text("all")
    Select(driver.find_element(By.ID, "f-machine")).select_by_visible_text("input")
    inputs = [call_id for call_id, events in recorded.items() if events[0]["machine"] == "input"]
    WebDriverWait(driver, WAIT).until(lambda d: shown() == inputs)
    Select(driver.find_element(By.ID, "f-machine")).select_by_visible_text("all")
    Select(driver.find_element(By.ID, "f-label")).select_by_visible_text("prompts/get greet")
    WebDriverWait(driver, WAIT).until(lambda d: shown() == inputs)
    driver.find_element(By.CSS_SELECTOR, "#rows tr[data-run]").click()
    WebDriverWait(driver, WAIT).until(lambda d: lit(d)["call"] == inputs[0])
    assert lit(driver)["edges"] == recorded_path(recorded[inputs[0]])
    asks = driver.find_element(By.CSS_SELECTOR, "#events tr[data-step='0'] [data-field='input_requests']").text
    assert asks == "input_requests who (elicitation/create)"


def test_the_page_fetches_nothing(driver: WebDriver, trail: tuple[list[dict[str, Any]], Path]) -> None:
    _, page = trail
    driver.get_log("performance")  # drop what earlier tests logged
    load(driver, page)
    csp = driver.find_element(By.CSS_SELECTOR, "meta[http-equiv='Content-Security-Policy']").get_attribute("content")
    assert csp is not None and csp.startswith("default-src 'none';")
    assert driver.execute_script("return performance.getEntriesByType('resource').length") == 0
    requested = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            requested.append(message["params"]["request"]["url"])
    assert [url for url in requested if url != "about:blank"] == [page.as_uri()]
    # And nothing was refused by the policy either (a refused fetch would be a console error).
    errors = [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]
    assert errors == []


def test_chromium_is_the_debian_one_and_no_driver_was_downloaded(driver: WebDriver) -> None:
    assert driver.capabilities["browserName"] == "chrome"
    assert shutil.which("chromedriver") == CHROMEDRIVER or Path(CHROMEDRIVER).exists()
    assert not (Path.home() / ".cache" / "selenium" / "chromedriver").exists()


def test_a_machine_the_viewer_has_no_code_for_is_lit_the_same_way(driver: WebDriver, tmp_path: Path) -> None:
    records = task_records()
    page = tmp_path / "task.html"
    page.write_text(report_html(records, title="a task", machines={"task": TASK}), encoding="utf-8")
    load(driver, page)
    shown = lit(driver)
    assert (shown["machine"], shown["edges"]) == ("task", recorded_path(records))
    # The loop edge taken twice carries both step numbers, on the diagram and in its badge.
    polled = driver.find_element(By.CSS_SELECTOR, "g.edge[data-edge='working:polled']")
    assert polled.get_attribute("data-steps") == "3 6"
    assert polled.find_element(By.CSS_SELECTOR, "text.badge").get_attribute("textContent") == "3,6"
    details = driver.find_element(By.CSS_SELECTOR, "#events tr[data-step='2'] td:last-child").text
    assert details.splitlines() == ["task_id t-42", "poll 2", "status working"]
    driver.find_element(By.TAG_NAME, "body").send_keys(Keys.HOME)
    step_is(driver, 0)
    assert lit(driver)["current"] == ["submitted"]


def test_the_manuals_reports_light_every_recorded_path(driver: WebDriver, tmp_path: Path) -> None:
    from tooling.recorded import manual_reports

    recorded = runs(walkthrough_records())
    for path, text in manual_reports(REPO_ROOT).items():
        page = tmp_path / Path(path).name
        page.write_text(text, encoding="utf-8")
        load(driver, page)
        body = driver.find_element(By.TAG_NAME, "body")
        ids = [row["id"] for row in json.loads(
            driver.execute_script("return document.getElementById('trail').textContent"))["runs"]]
        for number, call_id in enumerate(ids):
            if number:
                body.send_keys(Keys.ARROW_DOWN)
            WebDriverWait(driver, WAIT).until(lambda d, call_id=call_id: lit(d)["call"] == call_id)
            assert lit(driver)["edges"] == recorded_path(recorded[call_id]), (path, call_id)
        assert driver.find_elements(By.CSS_SELECTOR, "#events tr.stray") == [], path


def test_a_live_task_run_is_drawn_on_the_task_machine(driver: WebDriver, tmp_path: Path) -> None:
    import trio

    import mcpfsm
    from tests.support.peer.fixtures import start_http_peer

    events: list[mcpfsm.CallEvent] = []

    async def confirm(params: dict[str, Any]) -> dict[str, Any]:
        return {"action": "accept", "content": {"ok": True}}

    async def main(url: str) -> None:
        async with mcpfsm.Client.http(url, tasks=True, on_elicitation=confirm, on_event=events.append) as client:
            await client.call_tool("approve", {"poll_ms": 50})

    with start_http_peer("modern", module="tooling.peer_tasks") as server:
        trio.run(main, server.url)
    source, page = tmp_path / "task.jsonl", tmp_path / "task.html"
    source.write_text("".join(event.to_json() + "\n" for event in events), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "mcpfsm", "trace", str(source), "--html", str(page)],
        capture_output=True, text=True, cwd=REPO_ROOT, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    recorded = runs([event.to_dict() for event in events])
    assert sorted(events[0]["machine"] for events in recorded.values()) == ["task", "tool-call"]
    load(driver, page)
    body = driver.find_element(By.TAG_NAME, "body")
    seen: set[str] = set()
    for number in range(len(recorded)):
        if number:
            body.send_keys(Keys.ARROW_DOWN)  # the next run in the index
        WebDriverWait(driver, WAIT).until(lambda d: lit(d)["call"] in set(recorded) - seen)
        shown = lit(driver)
        run = recorded[shown["call"]]
        assert (shown["machine"], shown["edges"]) == (run[0]["machine"], recorded_path(run))
        assert shown["current"] == [run[-1]["state"]]
        seen.add(shown["call"])
        assert driver.find_elements(By.CSS_SELECTOR, "#events tr.stray") == []
    task_run = next(run for run in recorded.values() if run[0]["machine"] == "task")
    assert [event["state"] for event in task_run][-1] == "completed" and "input_required" in {
        event["state"] for event in task_run
    }


def test_live_gate_runs_show_their_path_and_the_refusal_without_a_value(driver: WebDriver, tmp_path: Path) -> None:
    import json as json_module

    import anyio

    from mcpfsm import AuditLog
    from mcpfsm._core.gate import GateSettings, Refusal, ToolSchema
    from mcpfsm._drivers.gate import GateRun

    schema = ToolSchema.of("execute-sql", {
        "type": "object", "properties": {"database": {"type": "string", "x-mcp-header": "Database"}}})

    class Upstream:
        identity = None

        def __init__(self, body: bytes) -> None:
            self.body = body

        async def read_body(self, limit: int) -> bytes | None:
            return self.body

        async def schema(self, tool: str) -> ToolSchema | None:
            return None

        async def learn(self, tool: str) -> ToolSchema | None:
            return schema

        async def forward(self, *, strip_params: bool) -> None:
            await anyio.lowlevel.checkpoint()

        async def refuse(self, refusal: Refusal) -> None:
            await anyio.lowlevel.checkpoint()

    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}
    body = json_module.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "execute-sql", "arguments": {"database": "prod"}, "_meta": meta}}).encode()
    standard = [("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/call"), ("Mcp-Name", "execute-sql")]
    source, page = tmp_path / "gate.jsonl", tmp_path / "gate.html"

    async def main() -> None:
        with AuditLog(source, chain=True) as log:
            for value in ("prod", "analytics-SECRET-VALUE"):
                await GateRun(Upstream(body), [*standard, ("Mcp-Param-Database", value)], GateSettings(), log).run()

    anyio.run(main, backend="asyncio")
    done = subprocess.run(
        [sys.executable, "-m", "mcpfsm", "trace", str(source), "--html", str(page)],
        capture_output=True, text=True, cwd=REPO_ROOT, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "analytics-SECRET-VALUE" not in source.read_text(encoding="utf-8") + page.read_text(encoding="utf-8")
    recorded = runs([json_module.loads(line) for line in source.read_text(encoding="utf-8").splitlines()])
    assert [events[-1]["state"] for events in recorded.values()] == ["forwarded", "rejected"]
    load(driver, page)
    assert [cell.text for cell in driver.find_elements(By.CSS_SELECTOR, "#rows tr[data-run] td:nth-child(2)")] == [
        "tools/call execute-sql", "tools/call execute-sql",
    ]
    body_element = driver.find_element(By.TAG_NAME, "body")
    for number, (call_id, events) in enumerate(recorded.items()):
        if number:
            body_element.send_keys(Keys.ARROW_DOWN)
        WebDriverWait(driver, WAIT).until(lambda d, call_id=call_id: lit(d)["call"] == call_id)
        shown = lit(driver)
        assert (shown["machine"], shown["edges"]) == ("gate", recorded_path(events))
        assert shown["current"] == [events[-1]["state"]]
        assert driver.find_elements(By.CSS_SELECTOR, "#events tr.stray") == []
    last = len(recorded[call_id]) - 1
    fields = {
        name: driver.find_element(By.CSS_SELECTOR, f"#events tr[data-step='{last}'] [data-field='{name}']").text
        for name in ("header", "reason", "status")
    }
    assert fields == {
        "header": "header Mcp-Param-Database",
        "reason": "reason Mcp-Param-Database does not match the argument /database (string)",
        "status": "status 400",
    }
