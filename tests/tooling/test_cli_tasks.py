"""``mcpfsm call --tasks``, ``mcpfsm task`` and ``mcpfsm tasks``, run for real against the tasks server (SEP-2663)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

import mcpfsm
from mcpfsm._tooling.cli import Exit
from tests.support.clirun import Screen, background, command, finished, line_within, one_error_line
from tests.support.clirun import mcpfsm as run_mcpfsm
from tests.support.peer.fixtures import HttpPeer, start_http_peer


@pytest.fixture
def server(tasks_peer: HttpPeer) -> HttpPeer:
    tasks_peer.clear_log()
    return tasks_peer


def methods(server: HttpPeer) -> list[tuple[str, str | None]]:
    """(method, Mcp-Name) of every POST the server received, in order."""
    return [(each["method"], each["mcp_name"]) for each in server.log()]


def start(server: HttpPeer, tool: str, arguments: dict[str, object] | None = None) -> str:
    """Start a task with a client of its own (which then goes away) and return its id."""

    async def main() -> str:
        async with mcpfsm.Client.http(server.url, tasks=True) as client:
            task = await client.start_tool(tool, arguments)
            assert task.id is not None
            return task.id

    return trio.run(main)


def test_call_tasks_shows_each_status_change_and_prints_the_result(server: HttpPeer) -> None:
    run = run_mcpfsm("call", server.url, "build", "--tasks", "seconds=0.6", "poll_ms=20", "--compact")
    assert (run.code, json.loads(run.stdout)["content"]) == (0, [{"type": "text", "text": "built in 0.6 s"}])
    lines = run.stderr.splitlines()
    task_id = re.fullmatch(r"mcpfsm: task (\S+) completed", lines[-1]).group(1)  # type: ignore[union-attr]
    assert task_id.endswith(":build")
    # One line per change (not per poll): statusMessage steps, each shown once, in order.
    steps = [int(re.fullmatch(rf"mcpfsm: task {re.escape(task_id)} working: compiling (\d)/4", line).group(1))  # type: ignore[union-attr]
             for line in lines[:-1]]
    assert steps == sorted(set(steps)) and steps[0] == 1
    polls = [name for method, name in methods(server) if method == "tasks/get"]
    assert len(polls) > len(lines) and set(polls) == {task_id}


def test_call_without_tasks_shows_no_task_and_sends_no_poll(server: HttpPeer) -> None:
    run = run_mcpfsm("call", server.url, "build", "seconds=0.1", "--compact")
    assert (run.code, run.stderr, json.loads(run.stdout)["content"]) == (
        0, "", [{"type": "text", "text": "built in 0.1 s"}]
    )
    assert "tasks/get" not in [method for method, _ in methods(server)]


def test_call_tasks_of_a_failed_task_is_one_error_line_after_its_status(server: HttpPeer) -> None:
    run = run_mcpfsm("call", server.url, "explode", "--tasks", "poll_ms=20", "--compact")
    assert run.code == Exit.rpc_error
    lines = run.stderr.splitlines()
    assert re.fullmatch(r"mcpfsm: task \S+:explode failed: the build broke", lines[-2])
    assert lines[-1] == "mcpfsm: error: the server answered JSON-RPC error -32603: compiler crashed"


def test_task_shows_a_running_task_then_cancels_it(server: HttpPeer) -> None:
    task_id = start(server, "forever", {"poll_ms": 250})
    server.clear_log()
    run = run_mcpfsm("task", server.url, task_id)
    assert run.code == 0 and run.stderr == ""
    shown = dict(line.split(": ", 1) for line in run.stdout.splitlines())
    assert (shown["task"], shown["status"], shown["poll every"]) == (task_id, "working", "0.25 s")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT[\d:.]+Z", shown["created"])
    assert methods(server) == [("server/discover", None), ("tasks/get", task_id)]

    server.clear_log()
    run = run_mcpfsm("task", server.url, task_id, "--cancel", "--json")
    assert run.code == 0 and run.stderr == ""
    shown = json.loads(run.stdout)
    assert (shown["taskId"], shown["status"], shown["statusMessage"]) == (task_id, "cancelled", None)
    assert methods(server)[1:] == [("tasks/get", task_id), ("tasks/cancel", task_id)]

    # Over: shown as the server has it; --cancel of a task that is over sends no tasks/cancel.
    server.clear_log()
    run = run_mcpfsm("task", server.url, task_id, "--cancel")
    assert run.code == 0
    assert "status: cancelled" in run.stdout.splitlines()
    assert "tasks/cancel" not in [method for method, _ in methods(server)]


def test_task_the_server_does_not_know_shows_as_expired(server: HttpPeer) -> None:
    run = run_mcpfsm("task", server.url, "no-such-task", "--json")
    assert run.code == 0
    assert json.loads(run.stdout)["status"] == "expired"


def test_task_needs_an_id(server: HttpPeer) -> None:
    run = run_mcpfsm("task", server.url, "")
    assert run.code == Exit.usage
    assert one_error_line(run) == "mcpfsm: error: give the task's id: mcpfsm task URL ID"


def test_tasks_lists_what_the_commands_store_recorded(server: HttpPeer) -> None:
    # The command's store is its own, in memory: nothing is recorded there before it runs.
    start(server, "forever")
    run = run_mcpfsm("tasks", server.url)
    assert (run.code, run.stdout, run.stderr) == (0, "no pending tasks\n", "")
    run = run_mcpfsm("tasks", server.url, "--json")
    assert json.loads(run.stdout) == {"tasks": []}
    assert "tasks/get" not in [method for method, _ in methods(server)]


@contextlib.contextmanager
def started_call(server: HttpPeer, store: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """``mcpfsm call --tasks --store`` of ``forever`` in the background, once its task is working: (process, id)."""
    argv = command("call", server.url, "forever", "--tasks", "--store", str(store), "--compact")
    with background(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as process:
        line = line_within(process.stderr)  # the readiness signal: the task's first status line
        match = re.fullmatch(r"mcpfsm: task (\S+) working\n", line)
        assert match is not None, line
        yield process, match.group(1)


def test_a_call_with_a_store_is_listed_while_it_runs_and_cancelled_from_another_command(
    server: HttpPeer, tmp_path: Path
) -> None:
    store = tmp_path / "store"
    with started_call(server, store) as (process, task_id):
        run = run_mcpfsm("tasks", server.url, "--store", str(store))
        assert (run.code, run.stderr) == (0, "")
        assert run.stdout.splitlines()[1].split() == [task_id, "forever", "working"]
        run = run_mcpfsm("task", server.url, task_id, "--store", str(store), "--cancel")
        assert run.code == 0
        assert run.stdout.splitlines()[:3] == [f"task: {task_id}", "tool: forever", "status: cancelled"]
        code, _, stderr = finished(process)
    assert code == Exit.rpc_error
    assert stderr.splitlines() == [
        f"mcpfsm: task {task_id} cancelled: cancelled by the client",
        f"mcpfsm: error: task {task_id} was cancelled",
    ]
    assert run_mcpfsm("tasks", server.url, "--store", str(store)).stdout == "no pending tasks\n"


def test_a_call_interrupted_leaves_its_task_recorded(server: HttpPeer, tmp_path: Path) -> None:
    store = tmp_path / "store"
    with started_call(server, store) as (process, task_id):
        process.send_signal(signal.SIGINT)
        code, _, _ = finished(process)
    assert code == Exit.interrupted
    run = run_mcpfsm("tasks", server.url, "--store", str(store), "--json")
    assert [(each["taskId"], each["tool"], each["status"]) for each in json.loads(run.stdout)["tasks"]] == [
        (task_id, "forever", "working")
    ]
    assert run_mcpfsm("task", server.url, task_id, "--store", str(store), "--cancel").code == 0
    assert run_mcpfsm("tasks", server.url, "--store", str(store)).stdout == "no pending tasks\n"


def test_a_store_that_does_not_answer_is_one_error_line(server: HttpPeer) -> None:
    run = run_mcpfsm("tasks", server.url, "--store", "redis://:hunter2@127.0.0.1:1/")
    assert run.code == Exit.unreachable
    line = one_error_line(run)
    assert line.startswith("mcpfsm: error: cannot use the store redis://") and "hunter2" not in line


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_call_tasks_on_a_terminal_redraws_one_status_line(server: HttpPeer) -> None:
    controller, terminal = os.openpty()
    screen = Screen(controller)
    argv = command("call", server.url, "build", "--tasks", "seconds=1.6", "--compact")
    with background(argv, stdout=subprocess.PIPE, stderr=terminal, text=False) as process:
        os.close(terminal)
        code, out, _ = finished(process)
        stdout = out.decode()
    text = screen.text()
    assert (code, json.loads(stdout)["content"]) == (0, [{"type": "text", "text": "built in 1.6 s"}])
    live = re.compile(r"\r[|/\\-] build \d+\.\ds task \S+:build working: compiling [1-4]/4\x1b\[K")
    assert live.search(text)
    # No status line of its own: the live line only, cleared at the end.
    spinner = re.compile(r"\r[|/\\-] build \d+\.\ds\x1b\[K")
    assert spinner.sub("", live.sub("", text)).replace("\r\x1b[K", "") == ""


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_the_live_line_fits_a_narrow_terminal(server: HttpPeer) -> None:
    import fcntl
    import struct
    import termios

    controller, terminal = os.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 30, 0, 0))  # 30 columns
    screen = Screen(controller)
    argv = command("call", server.url, "build", "--tasks", "seconds=1", "--compact")
    with background(argv, stdout=subprocess.PIPE, stderr=terminal, text=False) as process:
        os.close(terminal)
        assert finished(process)[0] == 0
    draws = re.findall(r"\r([^\r\x1b]+)\x1b\[K", screen.text())
    assert draws and all(len(draw) <= 29 for draw in draws)
    assert any(" build " in draw for draw in draws)


def test_the_command_files_its_tasks_under_the_server_it_calls(server: HttpPeer, tmp_path: Path) -> None:
    # Two tasks servers, one store: what `mcpfsm tasks` does on one never touches the other's records, and a
    # Python client of the first finds the command's task there (pending_tasks()).
    store = tmp_path / "store"
    with (
        start_http_peer("modern", module="tooling.peer_tasks") as other,
        started_call(server, store) as (process, task_id),
    ):
        run = run_mcpfsm("tasks", other.url, "--store", str(store), "--json")
        assert (run.code, json.loads(run.stdout), run.stderr) == (0, {"tasks": []}, "")
        assert "tasks/get" not in [each["method"] for each in other.log()]

        async def pending() -> list[tuple[str | None, str | None]]:
            async with mcpfsm.Client.http(server.url, tasks=True, store=mcpfsm.FileStore(store)) as client:
                return [(task.id, task.tool) for task in await client.pending_tasks()]

        assert trio.run(pending) == [(task_id, "forever")]
        run = run_mcpfsm("tasks", server.url, "--store", str(store), "--json")
        assert [(each["taskId"], each["status"]) for each in json.loads(run.stdout)["tasks"]] == [
            (task_id, "working")
        ]
        assert run_mcpfsm("task", server.url, task_id, "--store", str(store), "--cancel").code == 0
        assert finished(process)[0] == Exit.rpc_error
