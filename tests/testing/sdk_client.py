"""A second, real MCP client: the official Python SDK's (``mcp==2.3.0``): ``python -m tests.testing.sdk_client URL``.

It negotiates the era by itself (``server/discover``, then ``initialize`` if that is refused), lists the tools,
calls ``execute-sql`` (mirroring ``x-mcp-header`` arguments into ``Mcp-Param-*`` headers, as the SDK does) and
``echo``, and prints what it got as one JSON object.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
from mcp.client.client import Client

SQL = {"query": "select 1", "database": "analytics", "options": {"readOnly": True}}


async def main(url: str) -> None:
    async with Client(url) as client:
        tools = await client.list_tools()
        sql = await client.call_tool("execute-sql", SQL)
        echo = await client.call_tool("echo", {"text": "héllo\nworld"})
        report: dict[str, Any] = {
            "tools": [tool.name for tool in tools.tools][:4],
            "sql": sql.structured_content,
            "echo": echo.content[0].text,  # type: ignore[union-attr]
        }
    print(json.dumps(report, ensure_ascii=False))


if __name__ == "__main__":
    anyio.run(main, sys.argv[1])
