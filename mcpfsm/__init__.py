"""mcpfsm: an MCP client for trio where every tool call is an explicit, audited state machine.

See README.md for the API; SPEC clauses are cited in each module.
"""

from loguru import logger

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
from ._plan import HeaderPlan, plan_request
from ._schema import MirroredParam, SchemaVerdict, inspect_input_schema

__version__ = "0.1.0"

# A library never configures logging; applications call logger.enable("mcpfsm").
logger.disable("mcpfsm")

__all__ = [
    "HeaderDecodeError",
    "HeaderMismatchError",
    "HeaderPlan",
    "McpError",
    "MirroredParam",
    "MirroringError",
    "ProtocolError",
    "RpcError",
    "SchemaVerdict",
    "TransportError",
    "__version__",
    "decode_header_value",
    "encode_header_value",
    "inspect_input_schema",
    "plan_request",
]
