"""``mcpfsm resources``, ``read``, ``prompts``, ``prompt`` and ``listen``, run for real against the SDK peer."""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
import time

import pytest
import trio

from mcpfsm._tooling.cli import Exit
from tests.support.clirun import (
    GUARD,
    Run,
    background,
    command,
    finished,
    line_within,
    mcpfsm,
    one_error_line,
    with_default_sigint,
)
from tests.support.peer.fixtures import HttpPeer
from tests.support.rawserver import HOST, JSON_HEADERS, Seen, Server, ok, serving

STDIO_SERVER = f"{sys.executable} -m tests.support.peer.server --stdio"


@pytest.mark.parametrize("protocol", ["2026-07-28", "2025-11-25"])
def test_resources_table(peer: HttpPeer, protocol: str) -> None:
    assert mcpfsm("resources", peer.url, "--protocol", protocol) == Run(
        0,
        "URI                    MIME              NAME    DESCRIPTION\n"
        "res://static/readme    text/plain        readme  A static text resource\n"
        "res://static/logo      image/png         logo    A static binary resource\n"
        "res://items/{item_id}  application/json  item    One item by id (template)\n"
        "res://ask/{key}        text/plain        ask     Asks who is asking (an input round) (template)\n",
        "",
    )


def test_resources_json(peer: HttpPeer) -> None:
    run = mcpfsm("resources", peer.url, "--json")
    assert (run.code, run.stderr) == (0, "")
    assert json.loads(run.stdout) == {
        "resources": [
            {"uri": "res://static/readme", "name": "readme", "description": "A static text resource",
             "mimeType": "text/plain"},
            {"uri": "res://static/logo", "name": "logo", "description": "A static binary resource",
             "mimeType": "image/png"},
        ],
        "resourceTemplates": [
            {"uriTemplate": "res://items/{item_id}", "name": "item", "description": "One item by id",
             "mimeType": "application/json"},
            {"uriTemplate": "res://ask/{key}", "name": "ask", "description": "Asks who is asking (an input round)",
             "mimeType": "text/plain"},
        ],
    }


@pytest.mark.parametrize(
    ("uri", "stdout"),
    [
        ("res://static/readme", "hello from a static resource\n"),
        ("res://static/logo", "[12 bytes of image/png from res://static/logo]\n"),
        ("res://items/7", '{\n  "id": "7",\n  "label": "item 7"\n}\n'),
    ],
)
def test_read(peer: HttpPeer, uri: str, stdout: str) -> None:
    assert mcpfsm("read", peer.url, uri) == Run(0, stdout, "")
    assert [(e["jsonrpc_method"], e["headers"].get("mcp-name")) for e in peer.log()] == [
        ("server/discover", None),
        ("resources/read", uri),
    ]


def test_read_json_and_over_stdio() -> None:
    run = mcpfsm("read", "--stdio", STDIO_SERVER, "res://static/logo", "--json")
    assert (run.code, run.stderr) == (0, "")
    assert json.loads(run.stdout)["contents"] == [
        {"uri": "res://static/logo", "mimeType": "image/png", "blob": "iVBORw0KGgpmYWtl"}
    ]


def test_read_an_unknown_resource_exits_8(peer: HttpPeer) -> None:
    run = mcpfsm("read", peer.url, "res://nope")
    assert run.code == Exit.rpc_error
    assert one_error_line(run) == "mcpfsm: error: the server answered JSON-RPC error -32602: Unknown resource: res://nope"


def test_prompts_and_prompt(peer: HttpPeer) -> None:
    assert mcpfsm("prompts", peer.url) == Run(
        0,
        "PROMPT     ARGUMENTS     DESCRIPTION\n"
        "greet      name*, style  Greeting prompt with arguments\n"
        "ask-greet  -             Asks who is asking (an input round), then greets\n",
        "",
    )
    assert mcpfsm("prompt", peer.url, "greet", "--args", '{"name": "Ada", "style": "fancy"}') == Run(
        0, "# Greeting prompt with arguments\nuser: Say hello to Ada in a fancy style.\n", ""
    )
    run = mcpfsm("prompt", peer.url, "greet", "--args", '{"name": "Ada"}', "--json")
    assert json.loads(run.stdout)["messages"] == [
        {"role": "user", "content": {"type": "text", "text": "Say hello to Ada in a plain style."}}
    ]
    assert [(e["jsonrpc_method"], e["headers"].get("mcp-name")) for e in peer.log()] == [
        ("server/discover", None),
        ("prompts/list", None),
        ("server/discover", None),
        ("prompts/get", "greet"),
        ("server/discover", None),
        ("prompts/get", "greet"),
    ]


def test_prompt_arguments_must_be_strings(peer: HttpPeer) -> None:
    run = mcpfsm("prompt", peer.url, "greet", "--args", '{"name": 1}')
    assert run.code == Exit.usage
    assert one_error_line(run) == "mcpfsm: error: --args: prompt arguments are strings; 'name' is a JSON number"
    assert peer.log() == []


@pytest.mark.parametrize("protocol", ["2026-07-28", "2025-11-25"])
def test_listen_prints_json_lines_until_interrupted(peer: HttpPeer, protocol: str) -> None:
    argv = command("listen", peer.url, "--protocol", protocol, "--tools")
    with background(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as process:
        assert line_within(process.stderr) == 'mcpfsm: listening: {"toolsListChanged": true}\n'
        peer.control({"action": "prompts_changed"})  # not asked for
        peer.control({"action": "tools_changed"})
        line = json.loads(line_within(process.stdout))
        process.send_signal(signal.SIGINT)
        code, *rest = finished(process)

    assert line["method"] == "notifications/tools/list_changed"
    if protocol == "2026-07-28":
        [listen] = [e["id"] for e in peer.log() if e["jsonrpc_method"] == "subscriptions/listen"]
        assert line["params"] == {"_meta": {"io.modelcontextprotocol/subscriptionId": listen}}
    else:
        assert line["params"] == {}
    assert (code, rest) == (0, ["", ""])


@pytest.mark.parametrize("protocol", ["2026-07-28", "2025-11-25"])
def test_prompt_and_read_answer_the_servers_question_at_the_terminal(peer: HttpPeer, protocol: str) -> None:
    assert mcpfsm("prompt", peer.url, "ask-greet", "--protocol", protocol, stdin="y\nGrace\n").stdout == (
        "# Asks who is asking (an input round), then greets\nuser: Say hello to Grace.\n"
    )
    assert mcpfsm("read", peer.url, "res://ask/k1", "--protocol", protocol, "--yes") == Run(
        0, "k1 for Ada\n", "mcpfsm: the server asks: Who is asking?\nmcpfsm: accepted with the defaults (--yes)\n"
    )


async def test_listen_exits_0_when_a_second_sigint_arrives_during_its_shutdown() -> None:
    # A legacy server whose DELETE of the session (the last step of the shutdown) waits for the test: the second
    # SIGINT arrives while the command is ending the session, and must not turn a clean stop into exit 130.
    deleting, release = trio.Event(), trio.Event()

    async def answer(stream: trio.abc.Stream, seen: Seen) -> bool:
        method = seen.request_line.split(" ", 1)[0]
        if method == "GET":  # the standalone stream: open, silent
            await stream.send_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n")
            await trio.sleep_forever()
        if method == "DELETE":
            deleting.set()
            await release.wait()
            return await ok(b"", headers=[])(stream, seen)
        request = json.loads(seen.body)
        if "id" not in request:
            return await ok(b"", status=202, headers=[])(stream, seen)
        result = {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {"listChanged": True}},
            "serverInfo": {"name": "slow-goodbye", "version": "1"},
        }
        body = json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}).encode()
        return await ok(body, headers=[*JSON_HEADERS, ("Mcp-Session-Id", "s-1")])(stream, seen)

    async with serving(Server(default=answer)) as server:
        argv = with_default_sigint(command("listen", f"http://{HOST}:{server.port}/mcp", "--protocol", "2025-11-25"))
        process = await trio.lowlevel.open_process(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            with trio.fail_after(GUARD):
                assert process.stderr is not None
                said = b""
                while b"\n" not in said:
                    said += await process.stderr.receive_some(1024)
                assert said.startswith(b"mcpfsm: listening: ")
                process.send_signal(signal.SIGINT)
                await deleting.wait()
                process.send_signal(signal.SIGINT)
                release.set()
                code = await process.wait()
        finally:
            process.kill()
            with trio.move_on_after(GUARD):
                await process.wait()
    assert code == 0


def test_listen_exits_0_however_soon_the_second_sigint_follows_the_first(peer: HttpPeer) -> None:
    # The shutdown of a modern listen is short: the second SIGINT lands in it, or in the interpreter's exit after it
    # (where a signal with a Python handler is back at its default disposition: killed, as a shell's 130).
    codes = []
    for gap in (0.0, 0.002, 0.005, 0.01, 0.02, 0.05):
        argv = command("listen", peer.url, "--protocol", "2026-07-28", "--tools")
        with background(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as process:
            assert line_within(process.stderr).startswith("mcpfsm: listening: ")
            process.send_signal(signal.SIGINT)
            time.sleep(gap)  # not a wait for anything: the offset of the second signal is what is varied
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGINT)
            code, _, stderr = finished(process)
        codes.append((gap, code, stderr))
    assert codes == [(gap, 0, "") for gap, _, _ in codes]
