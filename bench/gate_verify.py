"""What the verifier costs one ``tools/call``, as a ratio to the JSON parse every server pays for the same body.

Run from the repository root:  python bench/gate_verify.py [--number N]

The request is a realistic 2026-07-28 ``tools/call`` of ``execute-sql``: ten headers as ASGI gives them (bytes,
lowercase names: five ordinary ones and five ``Mcp-*``), two declared parameters (a string and an integer) and a
body of about 300 bytes with the ``_meta`` envelope. Rows, per request, best of 7 repeats of ``timeit`` in one
process: ``json.loads`` of the body (the baseline: what any server does with it), reading the ``Mcp-*`` headers
(``McpHeaders.read``), parsing the body once (``parse_request``), checking (``check``), and all three together,
which is what the middleware and the proxy do per request (``mcpfsm.gate.verify`` is the same work on one call).

The figures quoted in docs/gate.md ("What the gate checks") and docs/benchmarks.md come from this script; compare
ratios, not microseconds, on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import sys
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mcpfsm._core.gate import McpHeaders, ToolSchema, check, parse_request

SCHEMA = ToolSchema.of(
    "execute-sql",
    {
        "type": "object",
        "properties": {
            "database": {"type": "string", "x-mcp-header": "Database"},
            "limit": {"type": "integer", "x-mcp-header": "Limit"},
            "query": {"type": "string"},
        },
    },
)
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "mcpfsm", "version": "0.1"},
}
ARGUMENTS = {"database": "analytics", "limit": 10, "query": "select id, total from orders where region = 'eu'"}
BODY = json.dumps(
    {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "execute-sql", "arguments": ARGUMENTS,
                                                                    "_meta": META}}
).encode()
HEADERS = [
    (b"host", b"127.0.0.1:8000"),
    (b"content-type", b"application/json"),
    (b"accept", b"application/json, text/event-stream"),
    (b"content-length", str(len(BODY)).encode()),
    (b"user-agent", b"mcpfsm/0.1"),
    (b"mcp-protocol-version", b"2026-07-28"),
    (b"mcp-method", b"tools/call"),
    (b"mcp-name", b"execute-sql"),
    (b"mcp-param-database", b"analytics"),
    (b"mcp-param-limit", b"10"),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--number", type=int, default=20000, help="requests per repeat (default 20000)")
    number = parser.parse_args().number
    read, parsed = McpHeaders.read(HEADERS), parse_request(BODY)
    assert check(read, parsed, SCHEMA).ok

    def best(task: object) -> float:
        return min(timeit.repeat(task, number=number, repeat=7)) / number * 1e6  # type: ignore[arg-type]

    rows = {
        "json.loads (baseline)": best(lambda: json.loads(BODY)),
        "McpHeaders.read": best(lambda: McpHeaders.read(HEADERS)),
        "parse_request": best(lambda: parse_request(BODY)),
        "check": best(lambda: check(read, parsed, SCHEMA)),
        "read + parse + check": best(lambda: check(McpHeaders.read(HEADERS), parse_request(BODY), SCHEMA)),
    }
    baseline = rows["json.loads (baseline)"]
    for name, micros in rows.items():
        print(f"{name:24} {micros:8.2f} µs  {micros / baseline:5.2f} x json.loads")


if __name__ == "__main__":
    main()
