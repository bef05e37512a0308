"""Input fan-out is bounded: requests per round, and handler calls at once (SEP-2322; MCP 2025-11-25 server requests).

Against raw servers on 127.0.0.1 (tests/support/rawserver.py): a modern server whose ``tools/call`` answers
``input_required`` with as many ``roots/list`` requests as the test asks, and a legacy server whose
``tools/call`` stream carries that many server requests. A round beyond :data:`MAX_INPUT_REQUESTS` is a
``ProtocolError`` naming the limit, before any handler runs; otherwise at most
:data:`MAX_CONCURRENT_HANDLERS` handlers run at once, and every request is answered.

:class:`Crowd`'s handlers hold until every task is blocked (``trio.testing.wait_all_tasks_blocked``), so all
the handler calls that may run together do before any ends: its peak is the bound, not a timing accident.
"""

from __future__ import annotations

import json
from typing import Any, Final

import pytest
import trio
import trio.testing

import mcpfsm
from mcpfsm._core.input_rounds import MAX_INPUT_REQUESTS
from mcpfsm._drivers.input import MAX_CONCURRENT_HANDLERS
from tests.support.layers import connect
from tests.support.rawserver import HOST, Seen, Server, no_stream, ok, serving

MODERN: Final = "2026-07-28"
LEGACY: Final = "2025-11-25"
ROOTS: Final = {"roots": [{"uri": "file:///work", "name": "work"}]}


def url_of(server: Server) -> str:
    return f"http://{HOST}:{server.port}/mcp"


async def send_json(stream: trio.abc.Stream, message: dict[str, Any], headers: str = "") -> None:
    body = json.dumps(message).encode()
    head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n{headers}Content-Length: {len(body)}\r\n\r\n"
    await stream.send_all(head.encode() + body)


class Crowd:
    """An ``on_roots`` handler that counts its calls and how many run at once; see the module docstring."""

    def __init__(self) -> None:
        self.calls = 0
        self.running = 0
        self.peak = 0
        self._wave = trio.Event()

    async def on_roots(self, params: dict[str, Any]) -> dict[str, Any]:
        self.calls += 1
        self.running += 1
        self.peak = max(self.peak, self.running)
        try:
            await self._wave.wait()
        finally:
            self.running -= 1
        return ROOTS

    async def release_in_waves(self) -> None:
        """Each time every task is blocked, let the handlers waiting then go on (run in a test's nursery)."""
        while True:
            await trio.testing.wait_all_tasks_blocked(cushion=0.01)
            if self.running:
                wave, self._wave = self._wave, trio.Event()
                wave.set()


# --- modern: one input_required round with many requests -------------------------------------------------------------


def modern_server() -> Server:
    """``tools/call`` ``ask`` ``{"count": N}`` asks for N roots in one round, then says how many answers came."""

    async def answer(stream: trio.abc.Stream, seen: Seen) -> bool:
        message = json.loads(seen.body)
        if message["method"] == "server/discover":
            result: dict[str, Any] = {"supportedVersions": [MODERN], "capabilities": {}}
        elif "inputResponses" in message["params"]:
            answers = message["params"]["inputResponses"]
            text = f"{len(answers)} answers, {sum(a == ROOTS for a in answers.values())} as given"
            result = {"resultType": "complete", "content": [{"type": "text", "text": text}]}
        else:
            count = message["params"]["arguments"]["count"]
            requests = {f"r{n}": {"method": "roots/list"} for n in range(count)}
            result = {"resultType": "input_required", "inputRequests": requests, "requestState": "st"}
        await send_json(stream, {"jsonrpc": "2.0", "id": message["id"], "result": result})
        return True

    return Server(default=answer)


async def test_a_round_of_fifty_thousand_requests_is_a_protocol_error_and_runs_no_handler() -> None:
    crowd = Crowd()
    async with serving(modern_server()) as server, trio.open_nursery() as nursery:
        nursery.start_soon(crowd.release_in_waves)
        async with connect(url_of(server), "pool", protocol=MODERN, on_roots=crowd.on_roots) as client:
            # A guard only (running 50,000 handlers and sending their answers takes longer).
            with (
                trio.fail_after(30),
                pytest.raises(
                    mcpfsm.ProtocolError,
                    match=rf"^tools/call input_required result carries 50000 input requests, more than the"
                    rf" {MAX_INPUT_REQUESTS} one round may carry$",
                ),
            ):
                await client.call_tool("ask", {"count": 50_000})
            # The client stays usable, and a round within the limit is answered whole.
            within = await client.call_tool("ask", {"count": MAX_INPUT_REQUESTS})
        nursery.cancel_scope.cancel()
    calls = [json.loads(seen.body)["params"] for seen in server.seen if b'"tools/call"' in seen.body]
    assert [("inputResponses" in params, params["arguments"]["count"]) for params in calls] == [
        (False, 50_000),
        (False, MAX_INPUT_REQUESTS),
        (True, MAX_INPUT_REQUESTS),
    ]
    assert within.text == f"{MAX_INPUT_REQUESTS} answers, {MAX_INPUT_REQUESTS} as given"
    assert crowd.calls == MAX_INPUT_REQUESTS


async def test_the_handlers_of_one_round_run_at_most_the_bound_at_once() -> None:
    crowd = Crowd()
    async with serving(modern_server()) as server, trio.open_nursery() as nursery:
        nursery.start_soon(crowd.release_in_waves)
        async with connect(url_of(server), "pool", protocol=MODERN, on_roots=crowd.on_roots) as client:
            done = await client.call_tool("ask", {"count": MAX_INPUT_REQUESTS})
        nursery.cancel_scope.cancel()
    assert done.text == f"{MAX_INPUT_REQUESTS} answers, {MAX_INPUT_REQUESTS} as given"
    assert (crowd.calls, crowd.peak, crowd.running) == (MAX_INPUT_REQUESTS, MAX_CONCURRENT_HANDLERS, 0)


# --- legacy: a tools/call stream carrying many server requests ------------------------------------------------------


class LegacyServer:
    """A legacy session whose ``tools/call`` stream sends ``count`` ``roots/list`` requests, then waits for every
    answer (each POSTed on a connection of its own) before it sends the call's response."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.answered: dict[str, Any] = {}
        self.all_answered = trio.Event()
        self.server = Server(default=self.answer)

    async def answer(self, stream: trio.abc.Stream, seen: Seen) -> bool:
        line = seen.request_line
        if line.startswith("GET"):
            return await no_stream()(stream, seen)
        if line.startswith("DELETE"):
            return await ok(b"")(stream, seen)
        message = json.loads(seen.body)
        if "method" not in message:  # the client's answer to one of the server's requests
            self.answered[message["id"]] = message.get("result")
            if len(self.answered) == self.count:
                self.all_answered.set()
            return await ok(b"", status=202)(stream, seen)
        if message["method"] == "notifications/initialized":
            return await ok(b"", status=202)(stream, seen)
        if message["method"] == "initialize":
            result = {"protocolVersion": LEGACY, "capabilities": {}, "serverInfo": {"name": "raw", "version": "1"}}
            answer = {"jsonrpc": "2.0", "id": message["id"], "result": result}
            await send_json(stream, answer, "Mcp-Session-Id: s-1\r\n")
            return True
        # tools/call: one chunk of `count` server requests, then the response once all are answered.
        await stream.send_all(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        requests = b"".join(
            b"event: message\ndata: "
            + json.dumps({"jsonrpc": "2.0", "id": f"q{n}", "method": "roots/list"}).encode()
            + b"\n\n"
            for n in range(self.count)
        )
        await stream.send_all(b"%x\r\n%s\r\n" % (len(requests), requests))
        await self.all_answered.wait()
        content = [{"type": "text", "text": f"{len(self.answered)} answered"}]
        response = {"jsonrpc": "2.0", "id": message["id"], "result": {"content": content}}
        event = b"event: message\ndata: " + json.dumps(response).encode() + b"\n\n"
        await stream.send_all(b"%x\r\n%s\r\n0\r\n\r\n" % (len(event), event))
        return True


async def test_a_legacy_stream_of_many_server_requests_runs_at_most_the_bound_at_once() -> None:
    count = 10 * MAX_CONCURRENT_HANDLERS
    crowd = Crowd()
    legacy = LegacyServer(count)
    async with serving(legacy.server) as server, trio.open_nursery() as nursery:
        nursery.start_soon(crowd.release_in_waves)
        async with connect(url_of(server), "pool", protocol=LEGACY, on_roots=crowd.on_roots) as client:
            done = await client.call_tool("ask", {})
        nursery.cancel_scope.cancel()
    assert done.text == f"{count} answered"
    assert legacy.answered == {f"q{n}": ROOTS for n in range(count)}
    assert (crowd.calls, crowd.peak, crowd.running) == (count, MAX_CONCURRENT_HANDLERS, 0)


# --- nested: a handler whose own request triggers an input round -------------------------------------------------


def nesting_server() -> Server:
    """``tools/call`` ``outer`` asks ``count`` elicitations in one round, each with the message ``outer``;
    ``tools/call`` ``inner`` asks one, with the message ``inner``. Either completes once its round is answered."""

    async def answer(stream: trio.abc.Stream, seen: Seen) -> bool:
        message = json.loads(seen.body)
        params = message["params"]
        if message["method"] == "server/discover":
            result: dict[str, Any] = {"supportedVersions": [MODERN], "capabilities": {}}
        elif "inputResponses" in params:
            text = f"{params['name']}: {len(params['inputResponses'])} answers"
            result = {"resultType": "complete", "content": [{"type": "text", "text": text}]}
        else:
            count = params["arguments"].get("count", 1)
            form = {"type": "object", "properties": {}}
            ask = {"method": "elicitation/create", "params": {"message": params["name"], "requestedSchema": form}}
            requests = {f"e{n}": ask for n in range(count)}
            result = {"resultType": "input_required", "inputRequests": requests, "requestState": "st"}
        await send_json(stream, {"jsonrpc": "2.0", "id": message["id"], "result": result})
        return True

    return Server(default=answer)


@pytest.mark.parametrize("outer", [MAX_CONCURRENT_HANDLERS, 3 * MAX_CONCURRENT_HANDLERS])
async def test_handlers_whose_requests_need_input_themselves_do_not_deadlock_the_bound(outer: int) -> None:
    # Every outer handler holds its place under the bound while its own tools/call waits for a nested round: if
    # the nested handlers took from the same places, none would be left for them.
    inner_texts: list[str] = []
    nested = 0

    async def on_elicitation(params: dict[str, Any]) -> dict[str, Any]:
        nonlocal nested
        if params["message"] == "outer":
            inner_texts.append((await client.call_tool("inner", {})).text)
        else:
            nested += 1
        return {"action": "decline"}

    async with (
        serving(nesting_server()) as server,
        connect(url_of(server), "pool", protocol=MODERN, on_elicitation=on_elicitation) as client,
    ):
        with trio.fail_after(30):  # a guard only: a deadlock would wait forever
            done = await client.call_tool("outer", {"count": outer})
    assert done.text == f"outer: {outer} answers"
    assert (inner_texts, nested) == (["inner: 1 answers"] * outer, outer)
