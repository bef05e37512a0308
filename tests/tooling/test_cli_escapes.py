"""A hostile server cannot drive the terminal through anything ``mcpfsm`` prints (mcpfsm/_tooling/cli/terminal.py).

A raw socket server (``tests/support/rawserver.py``, in this trio run) puts :data:`EVIL` — an OSC window title, ESC and
8-bit CSI sequences, BEL, a lone CR, DEL and a right-to-left override — in every string it serves: server info,
instructions, tool, parameter, type and enum names, descriptions, results, JSON-RPC error messages, task ids and
status messages, progress messages, resources, prompts, skills, notifications. Every command that prints server
text runs for real (``python -m mcpfsm`` in a subprocess); none of its output may carry a control character that a
terminal obeys, and the server's text is still there, escaped as ``\\uXXXX``.
"""

from __future__ import annotations

import hashlib
import json
import re
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Final

import pytest
import trio

import mcpfsm
from mcpfsm._tooling.cli.terminal import shown
from tests.support.clirun import GUARD, with_default_sigint
from tests.support.rawserver import HOST, Seen, Server, ok, serving

MODERN: Final = "2026-07-28"
EVIL: Final = "\x1b]0;pwned\x07\x1b[2J\x9b31mred\r\x7fgone\u202eevil"
"""What a hostile server puts in its strings (the form JSON carries them in is its own escaping)."""
SHOWN: Final = "\\u001b]0;pwned\\u0007\\u001b[2J\\u009b31mred\\u000d\\u007fgone\\u202eevil"
"""How :data:`EVIL` reaches the terminal."""
OBEYED: Final = re.compile("\r(?!\n)|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
"""What a terminal would act on (a CR before a line feed only ends the line)."""
TASK_ID: Final = "t\x1b[31mpwned"
SKILL_URI: Final = "skill://evil/SKILL.md"
SKILL_MD: Final = (
    '---\nname: evil\ndescription: "\\e]0;pwned\\a\\e[2J\\x9b31mred\\r\\x7fgone\\u202Eevil"\n---\n' + EVIL + "\n"
).encode()
EXTENSIONS: Final = {"io.modelcontextprotocol/tasks": {}, "io.modelcontextprotocol/skills": {}}


def test_the_escaping_rule() -> None:
    assert shown(EVIL) == SHOWN
    assert shown("line one\r\nline two\ttabbed\n") == "line one\r\nline two\ttabbed\n"
    assert shown("ä ✓ 日本") == "ä ✓ 日本"
    assert json.loads(shown(json.dumps({"k": EVIL}, ensure_ascii=False))) == {"k": EVIL}  # still the same JSON
    assert shown(shown(EVIL)) == SHOWN


def _task(status: str, **fields: Any) -> dict[str, Any]:
    stamp = "2026-12-01T00:00:00Z"
    return {
        "taskId": TASK_ID, "status": status, "statusMessage": EVIL, "createdAt": stamp, "lastUpdatedAt": stamp,
        "ttlMs": None, "pollIntervalMs": 50, **fields,
    }


def _text(text: str = EVIL) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}]}


def _tools() -> list[dict[str, Any]]:
    evil_schema = {
        "type": "object",
        "properties": {
            "color": {"type": "string", "enum": [EVIL, "blue"], "description": EVIL},
            "p" + EVIL: {"type": "string" + EVIL},
        },
        "required": ["color"],
    }
    return [
        {"name": "echo", "description": EVIL, "title": EVIL, "inputSchema": evil_schema},
        {"name": "broken", "description": EVIL, "inputSchema": {"type": "object"}},
        {
            "name": "pick",
            "inputSchema": {"type": "object", "properties": {"color": {"type": "string", "enum": [EVIL, "blue"]}}},
        },
        {"name": "job", "inputSchema": {"type": "object"}},
        {"name": "progress", "inputSchema": {"type": "object"}},
        {
            "name": "bad-header",
            "inputSchema": {
                "type": "object", "properties": {"r": {"type": "string", "x-mcp-header": "Bad" + EVIL}},
            },
        },
    ]


def _result(method: str, params: dict[str, Any]) -> dict[str, Any] | tuple[int, str]:
    """The result of one request, or ``(code, message)`` for a JSON-RPC error."""
    if method == "server/discover":
        return {
            "supportedVersions": [MODERN],
            "capabilities": {
                "tools": {"listChanged": True}, "resources": {"subscribe": True, "listChanged": True},
                "prompts": {"listChanged": True}, "extensions": EXTENSIONS,
            },
            "serverInfo": {"name": "evil" + EVIL, "version": EVIL},
            "instructions": EVIL + "\nsecond line " + EVIL,
        }
    if method == "tools/list":
        return {"tools": _tools()}
    if method == "tools/call":
        name = params.get("name")
        if name == "broken":
            return -32603, EVIL
        if name == "job":
            return {"resultType": "task", **_task("working")}
        return _text()
    if method == "tasks/get":
        return _task("completed", result=_text())
    if method == "tasks/cancel":
        return _task("cancelled")
    if method == "resources/list":
        return {"resources": [{"uri": "res://evil", "name": EVIL, "description": EVIL, "mimeType": "text/plain"}]}
    if method == "resources/templates/list":
        return {"resourceTemplates": [{"uriTemplate": "res://t/{x}", "name": EVIL, "description": EVIL}]}
    if method == "resources/read":
        if params.get("uri") == SKILL_URI:
            return {"contents": [{"uri": SKILL_URI, "mimeType": "text/markdown", "text": SKILL_MD.decode()}]}
        return {"contents": [{"uri": "res://evil", "mimeType": "text/plain", "text": EVIL}]}
    if method == "prompts/list":
        argument = {"name": "who", "description": EVIL}
        return {"prompts": [{"name": "greet", "description": EVIL, "arguments": [argument]}]}
    if method == "prompts/get":
        return {"description": EVIL, "messages": [{"role": "user", "content": {"type": "text", "text": EVIL}}]}
    if method in ("skills/list", "skills/get"):
        entry = {
            "uri": SKILL_URI,
            "frontmatter": {"name": "evil", "description": EVIL},
            "resources": [
                {"uri": SKILL_URI, "digest": "sha256:" + hashlib.sha256(SKILL_MD).hexdigest(), "size": len(SKILL_MD)}
            ],
        }
        return {"skills": [entry]} if method == "skills/list" else {"skill": entry}
    return -32601, EVIL


def hostile() -> Server:
    async def answer(stream: trio.abc.Stream, seen: Seen) -> bool:
        request = json.loads(seen.body) if seen.body else {}
        if "id" not in request:
            return await ok(b"", status=202, headers=[])(stream, seen)
        method, params = request.get("method"), request.get("params") or {}
        if seen.request_line.split()[1] == "/refuses":
            return await _answer(stream, seen, request["id"], (-32603, EVIL))
        if method == "subscriptions/listen":
            await _listen(stream, request["id"])
            return False
        if method == "tools/call" and params.get("name") == "progress":
            token = (params.get("_meta") or {}).get("progressToken")
            note = {"method": "notifications/progress", "params": {"progressToken": token, "progress": 1, "total": 2,
                                                                   "message": EVIL}}
            final = {"id": request["id"], "result": _text()}
            events = b"".join(b"event: message\ndata: " + json.dumps({"jsonrpc": "2.0", **m}).encode() + b"\n\n"
                              for m in (note, final))
            return await ok(events, headers=[("Content-Type", "text/event-stream")])(stream, seen)
        return await _answer(stream, seen, request["id"], _result(str(method), params))

    return Server(default=answer)


async def _answer(stream: trio.abc.Stream, seen: Seen, request_id: Any, outcome: Any) -> bool:
    if isinstance(outcome, tuple):
        body = {"jsonrpc": "2.0", "id": request_id, "error": {"code": outcome[0], "message": outcome[1]}}
    else:
        body = {"jsonrpc": "2.0", "id": request_id, "result": outcome}
    return await ok(json.dumps(body).encode())(stream, seen)


async def _listen(stream: trio.abc.Stream, request_id: Any) -> None:
    meta = {"io.modelcontextprotocol/subscriptionId": request_id, "evil": EVIL}
    notes = [
        {"method": "notifications/subscriptions/acknowledged",
         "params": {"_meta": meta, "toolsListChanged": True, "promptsListChanged": True, "resourcesListChanged": True}},
        {"method": "notifications/tools/list_changed", "params": {"_meta": meta}},
    ]
    await stream.send_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n")
    for note in notes:
        await stream.send_all(b"event: message\ndata: " + json.dumps({"jsonrpc": "2.0", **note}).encode() + b"\n\n")
    await trio.sleep_forever()


@asynccontextmanager
async def evil_server() -> AsyncIterator[str]:
    async with serving(hostile()) as server:
        yield f"http://{HOST}:{server.port}"


async def run(*args: str, cwd: Path | None = None) -> tuple[int, str, str]:
    with trio.fail_after(GUARD):
        done = await trio.run_process(
            [sys.executable, "-m", "mcpfsm", *args], capture_stdout=True, capture_stderr=True, check=False, cwd=cwd,
            env={"PYTHONIOENCODING": "utf-8", "PATH": "/usr/bin:/bin", "PYTHONPATH": str(Path.cwd())},
        )
    return done.returncode, done.stdout.decode("utf-8"), done.stderr.decode("utf-8")


def obeyed(text: str) -> list[str]:
    return [f"{match.group()!r} at {match.start()}" for match in OBEYED.finditer(text)]


@pytest.mark.parametrize(
    ("args", "code"),
    [
        pytest.param(["tools", "{url}/mcp", "--instructions"], 0, id="tools"),
        pytest.param(["tools", "{url}/mcp", "--instructions", "--json"], 0, id="tools-json"),
        pytest.param(["call", "{url}/mcp", "echo", "color=blue", "-vv"], 0, id="call-verbose"),
        pytest.param(["call", "{url}/mcp", "pick", "color=red"], 2, id="call-enum-refused"),
        pytest.param(["call", "{url}/mcp", "broken"], 8, id="call-rpc-error"),
        pytest.param(["call", "{url}/mcp", "job", "--tasks"], 0, id="call-tasks"),
        pytest.param(["call", "{url}/mcp", "progress"], 0, id="call-progress"),
        pytest.param(["call", "{url}/mcp", "nothing"], 6, id="call-unknown-tool"),
        pytest.param(["resources", "{url}/mcp"], 0, id="resources"),
        pytest.param(["resources", "{url}/mcp", "--json"], 0, id="resources-json"),
        pytest.param(["read", "{url}/mcp", "res://evil"], 0, id="read"),
        pytest.param(["prompts", "{url}/mcp"], 0, id="prompts"),
        pytest.param(["prompt", "{url}/mcp", "greet", "--args", '{"who": "x"}'], 0, id="prompt"),
        pytest.param(["skills", "{url}/mcp"], 0, id="skills"),
        pytest.param(["skill", "{url}/mcp", SKILL_URI], 0, id="skill"),
        pytest.param(["task", "{url}/mcp", TASK_ID], 0, id="task"),
        pytest.param(["task", "{url}/mcp", TASK_ID, "--json"], 0, id="task-json"),
        pytest.param(["tools", "{url}/refuses"], 8, id="error-line"),
    ],
)
async def test_no_command_prints_a_control_character_the_server_sent(args: list[str], code: int) -> None:
    async with evil_server() as url:
        done = await run(*(arg.replace("{url}", url) for arg in args))
    assert done[0] == code, done
    assert (obeyed(done[1]), obeyed(done[2])) == ([], [])
    assert "pwned" in done[1] + done[2]  # the server's text is shown, escaped, not dropped


async def test_the_configured_servers_trails_stores_and_listings_escape_the_server_text_too(tmp_path: Path) -> None:
    outputs = []
    async with evil_server() as url:
        config = tmp_path / "mcp.json"
        config.write_text(json.dumps({"mcpServers": {"good": {"url": f"{url}/mcp"}, "bad": {"url": f"{url}/refuses"}}}))
        outputs.append(await run("servers", "--config", str(config)))
        outputs.append(await run("tools", "--config", str(config)))
        trail = tmp_path / "trail.jsonl"
        outputs.append(await run("call", f"{url}/mcp", "broken", "--events", str(trail)))
        outputs.append(await run("trace", str(trail)))
        store = tmp_path / "store"
        async with mcpfsm.Client.http(f"{url}/mcp", tasks=True, store=mcpfsm.FileStore(store)) as client:
            assert (await client.start_tool("job")).id == TASK_ID
        outputs.append(await run("store", "check", str(store)))
        outputs.append(await run("tasks", f"{url}/mcp", "--store", str(store)))  # polled: completed, forgotten
    assert [code for code, _, _ in outputs] == [0, 0, 8, 0, 0, 0]
    for _, out, err in outputs:
        assert (obeyed(out), obeyed(err)) == ([], []), (out, err)
    assert all("pwned" in out + err for _, out, err in outputs)


async def test_listen_escapes_the_notifications_it_prints() -> None:
    async with evil_server() as url:
        argv = with_default_sigint([sys.executable, "-m", "mcpfsm", "listen", f"{url}/mcp"])
        process = await trio.lowlevel.open_process(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            with trio.fail_after(GUARD):
                assert process.stdout is not None and process.stderr is not None
                said = b""
                while b"\n" not in said:
                    said += await process.stdout.receive_some(65536)
                process.send_signal(signal.SIGINT)
                code = await process.wait()
                err = b""
                while chunk := await process.stderr.receive_some(65536):
                    err += chunk
        finally:
            process.kill()
            with trio.move_on_after(GUARD):
                await process.wait()
    out = said.decode()
    assert code == 0
    assert (obeyed(out), obeyed(err.decode())) == ([], [])
    assert json.loads(out.splitlines()[0])["params"]["_meta"]["evil"] == EVIL


def test_every_write_of_the_command_goes_through_the_one_escaping_module() -> None:
    # Writes that bypass mcpfsm/_tooling/cli/terminal.py, each with the reason it may.
    allowed = {
        ("call.py", "self._file.write(event.to_json() + \"\\n\")"),  # --events FILE: a file, not the terminal
        ("skill.py", "sys.stdout.buffer.write(data)"),  # a binary file, only when stdout is not a terminal
    }
    cli = Path(mcpfsm.__file__).parent / "_tooling" / "cli"
    found = {
        (path.name, line.strip())
        for path in sorted(cli.glob("*.py"))
        if path.name != "terminal.py"
        for line in path.read_text(encoding="utf-8").splitlines()
        if re.search(r"\.write\(|\bprint\(|\.writelines\(", line)
    }
    assert found == allowed
