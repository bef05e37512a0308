"""mcpfsm: an MCP client for trio where every tool call is an explicit, audited state machine.

Quick start::

    import mcpfsm

    async with mcpfsm.Client.http("http://127.0.0.1:8000/mcp") as client:
        tools = await client.tools()
        result = await tools.get("execute-sql").call({"database": "analytics"})

The library never configures logging: it calls ``logger.disable("mcpfsm")`` at import, and
applications that want its logs call ``logger.enable("mcpfsm")``.
"""

from loguru import logger

from ._catalog import Exclusion, ToolDefinition
from ._client import Client, Tool, ToolList, ToolResult
from ._codec import decode_header_value, encode_header_value
from ._errors import (
    HeaderDecodeError,
    HeaderMismatchError,
    McpError,
    MirroringError,
    ProtocolError,
    RpcError,
    TransportError,
)
from ._events import CallEvent
from ._http import HttpTransport
from ._machine import EDGES, STATES, TERMINAL, Edge, State, Trigger
from ._plan import HeaderPlan, plan_request
from ._schema import MirroredParam, SchemaVerdict, inspect_input_schema
from ._stdio import StdioTransport
from ._transport import Transport

__version__ = "0.1.0"

# A library never configures logging (loguru's README): applications call logger.enable("mcpfsm").
logger.disable("mcpfsm")

__all__ = [
    "CallEvent",
    "Client",
    "EDGES",
    "Edge",
    "Exclusion",
    "HeaderDecodeError",
    "HeaderMismatchError",
    "HeaderPlan",
    "HttpTransport",
    "McpError",
    "MirroredParam",
    "MirroringError",
    "ProtocolError",
    "RpcError",
    "STATES",
    "SchemaVerdict",
    "State",
    "StdioTransport",
    "TERMINAL",
    "Tool",
    "ToolDefinition",
    "ToolList",
    "ToolResult",
    "Transport",
    "TransportError",
    "Trigger",
    "__version__",
    "decode_header_value",
    "encode_header_value",
    "inspect_input_schema",
    "plan_request",
]
