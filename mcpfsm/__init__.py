"""mcpfsm: an MCP client for trio where every tool call is an explicit, audited state machine.

Quick start::

    import mcpfsm

    async with mcpfsm.Client.http("http://127.0.0.1:8000/mcp") as client:
        tools = await client.tools()
        result = await tools.get("execute-sql").call({"database": "analytics"})

The library never configures logging: it calls ``logger.disable("mcpfsm")`` at import, and
applications that want its logs call ``logger.enable("mcpfsm")``.
"""

from typing import TYPE_CHECKING

from ._client.client import Client
from ._client.options import ClientOptions
from ._client.tools import Tool, ToolList
from ._core.cache import CacheStats, ResponseCache
from ._core.catalog import Exclusion, ToolDefinition
from ._core.codec import decode_header_value, encode_header_value
from ._core.constants import MCPFSM_VERSION
from ._core.errors import (
    AuthorizationError,
    CallTimeoutError,
    CassetteError,
    ConfigError,
    HeaderDecodeError,
    HeaderMismatchError,
    McpError,
    MirroringError,
    OutputValidationError,
    ProtocolError,
    RpcError,
    SessionExpired,
    StoreError,
    StoreLockTimeout,
    TaskError,
    TransportError,
    UnsafeStoreError,
)
from ._core.events import CallEvent
from ._core.jsonrpc import Notification
from ._core.plan import HeaderPlan, plan_request
from ._core.results import ServerInfo, ToolResult
from ._core.schema import MirroredParam, SchemaVerdict, inspect_input_schema
from ._log import disable_library_logs, log_to_stdlib
from ._machines.definition import Edge, MachineDefinition
from ._machines.tool_call import EDGES, STATES, TERMINAL, TOOL_CALL
from ._machines.tool_call import State as ToolCallState
from ._machines.tool_call import Trigger as ToolCallTrigger
from ._transports.base import Transport

if TYPE_CHECKING:
    from ._client.file_store import FileStore
    from ._client.group import ClientGroup, GroupTool
    from ._client.loopback import LoopbackAuthorizer
    from ._client.redis_store import RedisStore
    from ._client.skills import LoadedSkill, Skill
    from ._client.stores import FileTokenStore, MemoryStore, MemoryTokenStore
    from ._client.subscriptions import Subscription
    from ._client.task import Task
    from ._core.config import Config, ServerConfig, load_config
    from ._core.credentials import ClientCredentials, EnterpriseManaged, JwtBearer, OAuth, Store, TokenStore
    from ._core.events.authorization import AuthEvent
    from ._core.events.gate import GateEvent
    from ._core.events.group import MemberEvent
    from ._core.events.input import InputEvent
    from ._core.events.task import TaskEvent
    from ._core.skills import SkillFile, SkillVerificationError
    from ._core.surface import (
        Completion,
        Prompt,
        PromptArgument,
        PromptResult,
        Resource,
        ResourceResult,
        ResourceTemplate,
    )
    from ._core.tool_annotations import ToolAnnotations
    from ._drivers.audit_log import AuditLog
    from ._machines.authorization import AUTHORIZATION
    from ._machines.task import TASK
    from ._transports.http import HttpTransport
    from ._transports.stdio import StdioTransport

__version__ = MCPFSM_VERSION

State = ToolCallState
"""The tool-call machine's states under their first name (:data:`ToolCallState`, as ``TOOL_CALL`` names the machine)."""

Trigger = ToolCallTrigger
"""The tool-call machine's triggers under their first name (:data:`ToolCallTrigger`)."""

# The one lazy edge of the package (PEP 562): what a client that only calls tools never uses is imported on first
# use of one of its names, so that `import mcpfsm` stays quick (bench/startup.py). The authorization side (the
# OAuth core and its many value types, the second machine); the events of the other machines; the results of
# resources, prompts and completion; the HTTP stack (imported by the first Client.http() too) and the stdio
# transport; subscriptions; tasks; server configurations and client groups.
_LAZY = {
    "AuthEvent": "._core.events.authorization",
    "GateEvent": "._core.events.gate",
    "MemberEvent": "._core.events.group",
    "InputEvent": "._core.events.input",
    "TaskEvent": "._core.events.task",
    "ClientGroup": "._client.group",
    "Config": "._core.config",
    "GroupTool": "._client.group",
    "ServerConfig": "._core.config",
    "load_config": "._core.config",
    "Completion": "._core.surface",
    "Prompt": "._core.surface",
    "PromptArgument": "._core.surface",
    "PromptResult": "._core.surface",
    "Resource": "._core.surface",
    "ResourceResult": "._core.surface",
    "ResourceTemplate": "._core.surface",
    "HttpTransport": "._transports.http",
    "StdioTransport": "._transports.stdio",
    "AuditLog": "._drivers.audit_log",
    "ToolAnnotations": "._core.tool_annotations",
    "Subscription": "._client.subscriptions",
    "Task": "._client.task",
    "TASK": "._machines.task",
    "AUTHORIZATION": "._machines.authorization",
    "ClientCredentials": "._core.credentials",
    "EnterpriseManaged": "._core.credentials",
    "FileStore": "._client.file_store",
    "FileTokenStore": "._client.stores",
    "JwtBearer": "._core.credentials",
    "LoopbackAuthorizer": "._client.loopback",
    "MemoryStore": "._client.stores",
    "MemoryTokenStore": "._client.stores",
    "OAuth": "._core.credentials",
    "RedisStore": "._client.redis_store",
    "Store": "._core.credentials",
    "TokenStore": "._core.credentials",
    "LoadedSkill": "._client.skills",
    "Skill": "._client.skills",
    "SkillFile": "._core.skills",
    "SkillVerificationError": "._core.skills",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


# A library never configures logging (loguru's README): applications call logger.enable("mcpfsm").
# loguru is not imported for that: see mcpfsm._log.
disable_library_logs()

__all__ = [
    "AUTHORIZATION",
    "AuditLog",
    "AuthEvent",
    "AuthorizationError",
    "CacheStats",
    "CallEvent",
    "CallTimeoutError",
    "CassetteError",
    "Client",
    "ClientCredentials",
    "ClientGroup",
    "ClientOptions",
    "Completion",
    "Config",
    "ConfigError",
    "EDGES",
    "Edge",
    "EnterpriseManaged",
    "Exclusion",
    "FileStore",
    "FileTokenStore",
    "GateEvent",
    "GroupTool",
    "HeaderDecodeError",
    "HeaderMismatchError",
    "HeaderPlan",
    "HttpTransport",
    "InputEvent",
    "JwtBearer",
    "LoadedSkill",
    "LoopbackAuthorizer",
    "MachineDefinition",
    "McpError",
    "MemberEvent",
    "MemoryStore",
    "MemoryTokenStore",
    "MirroredParam",
    "MirroringError",
    "Notification",
    "OAuth",
    "OutputValidationError",
    "Prompt",
    "PromptArgument",
    "PromptResult",
    "ProtocolError",
    "RedisStore",
    "Resource",
    "ResourceResult",
    "ResourceTemplate",
    "ResponseCache",
    "RpcError",
    "STATES",
    "SchemaVerdict",
    "ServerConfig",
    "ServerInfo",
    "SessionExpired",
    "Skill",
    "SkillFile",
    "SkillVerificationError",
    "State",
    "StdioTransport",
    "Store",
    "StoreError",
    "StoreLockTimeout",
    "Subscription",
    "TASK",
    "TERMINAL",
    "TOOL_CALL",
    "Task",
    "TaskError",
    "TaskEvent",
    "TokenStore",
    "Tool",
    "ToolAnnotations",
    "ToolCallState",
    "ToolCallTrigger",
    "ToolDefinition",
    "ToolList",
    "ToolResult",
    "Transport",
    "TransportError",
    "Trigger",
    "UnsafeStoreError",
    "__version__",
    "decode_header_value",
    "encode_header_value",
    "inspect_input_schema",
    "load_config",
    "log_to_stdlib",
    "plan_request",
]
