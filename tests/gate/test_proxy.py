"""``mcpfsm gate --upstream URL``: the validating reverse proxy, as real processes in front of a real server.

The upstream (tests/gate/upstream.py) checks no header, so its log is the proof of what the proxy let through.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

from tests.gate.conftest import META, call, control, headers, proxy_process, request, running, upstream_process

LIE = "analytics-lie"


def post(url: str, sent: list[tuple[str, str]], body: bytes, **options: Any) -> httpx.Response:
    return httpx.post(url, headers=sent, content=body, timeout=30, **options)


def tool_calls(upstream: str) -> list[dict[str, Any]]:
    return [entry for entry in control(upstream, "/control/log") if entry.get("jsonrpc_method") == "tools/call"]


def test_the_proxy_prints_its_ready_line_and_verifies_what_it_forwards(upstream_url: str) -> None:
    with proxy_process(upstream_url) as (_, url):
        assert url.endswith("/mcp") and url.startswith("http://127.0.0.1:")
        ok = post(url, headers(name="query", Database="prod"), call("query", {"database": "prod", "sql": "s"}))
        assert ok.status_code == 200 and "prod" in ok.text  # an event stream, streamed through
        lie = post(url, headers(name="query", Database=LIE), call("query", {"database": "prod", "sql": "s"}, 5))
        assert lie.status_code == 400 and lie.json()["id"] == 5 and lie.json()["error"]["code"] == -32020
        assert [entry["body"] for entry in tool_calls(upstream_url)] == [
            call("query", {"database": "prod", "sql": "s"}).decode()
        ]


def test_an_event_stream_is_passed_on_as_it_comes_and_closed_upstream_when_the_client_leaves(upstream_url: str) -> None:
    with proxy_process(upstream_url) as (_, url):
        # count 0: the upstream streams until its client leaves, so a first event can only come through unbuffered.
        body = call("stream", {"count": 0, "delay": 0.05})
        with (
            httpx.Client(timeout=30) as client,
            client.stream("POST", url, headers=headers(name="stream"), content=body) as answer,
        ):
            assert answer.status_code == 200 and answer.headers["content-type"] == "text/event-stream"
            first = next(answer.iter_lines())
            assert first.startswith("id: 0")
        # The client has gone: the proxy closes its upstream request, and the upstream sees its client leave.
        deadline = time.monotonic() + 20
        while not any(entry.get("event") == "stream_closed" for entry in control(upstream_url, "/control/log")):
            assert time.monotonic() < deadline, "the upstream stream was not closed after the client left"
            time.sleep(0.05)


def test_session_ids_last_event_id_and_statuses_pass_unchanged() -> None:
    with upstream_process("--token", "alice") as upstream, proxy_process(upstream) as (_, url):
        auth = [("authorization", "Bearer alice")]
        init = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}).encode()
        answer = post(url, [("content-type", "application/json"), *auth], init)
        assert answer.status_code == 200 and answer.headers["mcp-session-id"] == "session-1"
        resumed = httpx.get(url, headers=[("mcp-session-id", "session-1"), ("last-event-id", "41"), *auth], timeout=30)
        assert resumed.status_code == 200 and '"last_event_id": "41"' in resumed.text
        assert '"session": "session-1"' in resumed.text
        refused = post(url, headers("tools/list"), request("tools/list"))
        assert refused.status_code == 401 and refused.headers["www-authenticate"].startswith("Bearer ")
        note = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode()
        assert post(url, [("content-type", "application/json"), *auth], note).status_code == 202
        assert httpx.get(url.rsplit("/", 1)[0] + "/elsewhere", timeout=30).status_code == 404


@pytest.mark.parametrize(
    ("sent", "body", "status"),
    [
        pytest.param(
            headers(name="greet") + [(f"mcp-x{n}", "v") for n in range(62)], call("greet"), 431, id="65-mcp-headers"
        ),
        pytest.param(headers(name="greet", Big="v" * 8193), call("greet"), 431, id="8193-byte-value"),
        pytest.param([*headers(name="greet"), ("mcp-name", "greet")], call("greet"), 400, id="repeated-Mcp-Name"),
        pytest.param(
            headers(name="query", Database="=?base64?cHJvZA?="),
            call("query", {"database": "prod", "sql": "s"}),
            400,
            id="invalid-base64",
        ),
        pytest.param(
            headers(name="query", Database="prod"), call("query", {"sql": "s"}), 400, id="header-only-smuggling"
        ),
        pytest.param(
            [*headers(name="query", Database="prod"), ("connection", "Mcp-Param-Database")],
            call("query", {"database": "prod", "sql": "s"}),
            400,
            id="connection-named-param",
        ),
        pytest.param(headers(name="greet"), call("greet", {"name": "x" * 5000}), 413, id="body-over-max"),
        pytest.param(headers(name="greet"), b'{"jsonrpc": "2.0", "id": 1, "method": ', 400, id="not-json"),
    ],
)
def test_hostile_requests_never_reach_the_upstream(
    upstream_url: str, sent: list[tuple[str, str]], body: bytes, status: int
) -> None:
    with proxy_process(upstream_url, "--max-body", "4096") as (_, url):
        assert post(url, headers("tools/list"), request("tools/list")).status_code == 200
        answer = post(url, sent, body)
        assert answer.status_code == status
        assert answer.json()["error"]["code"] in (-32020, -32600, -32700)
        assert tool_calls(upstream_url) == []


def rss_kib(pid: int) -> int:
    """The resident memory of process ``pid``, in KiB (Linux ``/proc``)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


RESET = 0
"""The status recorded for a connection the kernel reset before it was accepted (its listen queue overflowed)."""


async def burst(url: str, count: int, lie_every: int) -> list[int]:
    """``count`` requests in flight at once, each on its own connection; every ``lie_every``-th one lies.

    Connections are opened at most 1,000 at a time; each request then waits for its answer with all the others.
    Returns the statuses; :data:`RESET` for a connection reset before it was answered: on a busy machine the
    kernel's listen queue (at most ``somaxconn``, 4,096) overflows before the proxy accepts every connection, and
    the kernel drops the excess (its SYN-ACK retries run out, then it resets), whatever the server does.

    The client is kept cheap, so that the machine's time goes to the proxy under test: the two requests are built
    once, each is one plain trio socket (no stream wrappers, no happy-eyeballs nursery per connection), and of an
    answer only its status line is kept while the rest is read to the end.
    """
    target = httpx.URL(url)
    address = (target.host, target.port)
    honest = call("query", {"database": "prod", "sql": "s"})

    def raw(lying: bool) -> bytes:
        head = [
            f"POST {target.path} HTTP/1.1",
            f"Host: {target.host}:{target.port}",
            "Connection: close",
            f"Content-Length: {len(honest)}",
        ]
        head += [f"{name}: {field}" for name, field in headers(name="query", Database=LIE if lying else "prod")]
        return ("\r\n".join(head) + "\r\n\r\n").encode() + honest

    prepared = (raw(False), raw(True))
    statuses: list[int] = []
    opening = trio.CapacityLimiter(1000)

    async def one(n: int) -> None:
        with trio.socket.socket(trio.socket.AF_INET, trio.socket.SOCK_STREAM) as sock:
            try:
                async with opening:
                    await sock.connect(address)
                    pending = memoryview(prepared[n % lie_every == 0])
                    while pending:
                        pending = pending[await sock.send(pending) :]
                head = b""
                while b"\r\n" not in head and (chunk := await sock.recv(65536)):
                    head += chunk
                while await sock.recv(65536):
                    pass
            except OSError:  # reset or refused: the kernel's listen queue overflowed
                statuses.append(RESET)
                return
        statuses.append(int(head.split(b" ", 2)[1]) if head else RESET)

    with trio.fail_after(300):
        async with trio.open_nursery() as nursery:
            for n in range(count):
                nursery.start_soon(one, n)
    return statuses


def test_ten_thousand_concurrent_requests_are_bounded_and_the_proxys_memory_stays_flat() -> None:
    with upstream_process() as upstream, proxy_process(upstream) as (process, url):
        assert post(url, headers("tools/list"), request("tools/list")).status_code == 200
        trio.run(burst, url, 2000, 2)  # warm up: the pool, the caches, the allocator
        before = rss_kib(process.pid)
        first = trio.run(burst, url, 10_000, 2)
        after_first = rss_kib(process.pid)
        second = trio.run(burst, url, 10_000, 2)
        after_second = rss_kib(process.pid)
        third = trio.run(burst, url, 10_000, 2)
        after_third = rss_kib(process.pid)
        bursts = (first, second, third)
        for statuses in bursts:
            # A lie is refused at once; an honest request is answered, or 504 when it waited longer than the pool's
            # 30 s for one of the 100 connections to the upstream: the queue is bounded in time, it does not grow.
            assert set(statuses) <= {200, 400, 504, RESET}
            assert statuses.count(200) + statuses.count(400) >= len(statuses) // 2
        counts = control(upstream, "/control/counts")
        answered = sum(statuses.count(200) for statuses in bursts)
        resets = sum(statuses.count(RESET) for statuses in bursts)
        assert answered <= counts["tools/call"] - 1000 <= answered + resets
        lies_refused = sum(statuses.count(400) for statuses in bursts)
        sys.stderr.write(
            f"proxy RSS: {before} KiB after 2,000 requests, {after_first} KiB after 12,000, {after_second} KiB after"
            f" 22,000, {after_third} KiB after 32,000; statuses"
            f" {sorted((s, sum(b.count(s) for b in bursts)) for s in {*first, *second, *third})}\n"
        )
        assert lies_refused > 0
        # Flat: once the first burst of 10,000 has grown every buffer it needs, a later burst adds at most 8 MiB.
        # One of the two later bursts suffices: a burst that reaches a higher peak of requests in flight than the
        # first (the machine's scheduling decides it) grows the allocator's arenas once, where a leak of even 840
        # bytes per request grows both.
        growths = (after_second - after_first, after_third - after_second)
        assert min(growths) < 8 * 1024, f"the proxy grew {growths} KiB over two bursts of 10,000 requests"


def test_the_gate_command_refuses_bad_options() -> None:
    import subprocess

    def gate(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "mcpfsm", "gate", *args], capture_output=True, text=True, timeout=60
        )

    bad_url = gate("--upstream", "ftp://example.test/mcp")
    assert bad_url.returncode == 3 and "http:// or https://" in bad_url.stderr
    with_password = gate("--upstream", "http://ops:hunter2@127.0.0.1:9/mcp")
    assert with_password.returncode == 3 and "carries a user or password" in with_password.stderr
    assert "hunter2" not in with_password.stderr + with_password.stdout
    odd_password = gate("--upstream", "ftp://ops:hunter2@example.test/mcp")
    assert odd_password.returncode == 3 and "hunter2" not in odd_password.stderr
    bad_listen = gate("--upstream", "http://127.0.0.1:9/mcp", "--listen", "nowhere")
    assert bad_listen.returncode == 2 and "--listen takes HOST:PORT" in bad_listen.stderr
    with running([sys.executable, "-m", "mcpfsm", "gate", "--upstream", "http://127.0.0.1:9/mcp"]) as (_, url):
        down = post(url, headers("tools/list"), request("tools/list"))
        assert down.status_code == 502 and down.json()["error"]["code"] == -32603
    assert META


def test_the_proxy_writes_its_events_as_json_lines(upstream_url: str, tmp_path: Path) -> None:
    from mcpfsm import GateEvent

    log = tmp_path / "gate.jsonl"
    with proxy_process(upstream_url, "--events", str(log)) as (_, url):
        post(url, headers("tools/list"), request("tools/list"))
        assert (
            post(url, headers(name="query", Database=LIE), call("query", {"database": "p", "sql": "s"})).status_code
            == 400
        )
    events = [GateEvent.from_dict(json.loads(line)) for line in log.read_text().splitlines()]
    assert {event.machine for event in events} == {"gate"}
    assert [event.state for event in events if event.state in ("forwarded", "rejected")] == ["forwarded", "rejected"]
    assert events[-1].header == "Mcp-Param-Database" and LIE not in log.read_text()
