"""The mcpfsm error tree.

Every error mcpfsm raises on purpose derives from :class:`McpError`::

    McpError
    ├── RpcError                 the server answered a JSON-RPC error (.code, .message, .data)
    │   └── HeaderMismatchError  code -32020: the server's headers differ from ours (SEP-2243)
    ├── MirroringError           an argument cannot be mirrored into an Mcp-Param-* header (SEP-2243);
    │                            raised before anything is sent
    ├── HeaderDecodeError        a header value is not what the SEP-2243 encoder produces
    ├── TransportError           network failure, timeout, HTTP error without a JSON-RPC body,
    │   │                        a stream that ended before its response (MCP "Transports")
    │   ├── SessionExpired       HTTP 404 on a request that carried a legacy Mcp-Session-Id
    │   └── CallTimeoutError     progress_timeout or total_timeout fired (.timeout names which)
    ├── TaskError                a task ended cancelled or expired, or the server forgot it (SEP-2663;
    │                            .task_id, .status)
    ├── ProtocolError            the peer's reply is not valid JSON-RPC / MCP
    │   └── OutputValidationError  a tool's structuredContent does not match its outputSchema
    ├── AuthorizationError       the OAuth 2.1 flow cannot go on (.state, .reason, .error,
    │                            .error_description); never quotes a token, code or secret
    ├── ConfigError              an ``mcpServers`` configuration is malformed (.path: where), or a
    │                            client group's aggregated names collide
    ├── CassetteError            a recorded session (docs/testing.md) is unreadable, of an unknown
    │                            version, or served on another transport than it was recorded on (.line)
    ├── StoreError               a store cannot keep or give back a value, or do what was asked
    │   ├── StoreLockTimeout     ``store.lock(key, ttl, wait=…)`` did not get the lock within ``wait``
    │   └── UnsafeStoreError     a file store's directory or file that someone else could have written,
    │                            or that is not what the store writes (.path: which one)
    └── SkillVerificationError   a skill's file is not what its entry lists (.check: size, digest,
                                 frontmatter, unlisted, dynamic); defined in mcpfsm._core.skills

Foreign exceptions (httpx, trio, OS) are mapped to these in one place per transport and
always chained with ``raise ... from exc``. Cancellation is never wrapped.
"""

from __future__ import annotations

from typing import Any

from .constants import HEADER_MISMATCH

__all__ = [
    "AuthorizationError",
    "CallTimeoutError",
    "CassetteError",
    "ConfigError",
    "HeaderDecodeError",
    "HeaderMismatchError",
    "McpError",
    "MirroringError",
    "OutputValidationError",
    "ProtocolError",
    "RpcError",
    "SessionExpired",
    "StoreError",
    "StoreLockTimeout",
    "TaskError",
    "TransportError",
    "UnsafeStoreError",
    "rpc_error",
]

class McpError(Exception):
    """Base class of every error mcpfsm raises on purpose."""


class RpcError(McpError):
    """The server answered the request with a JSON-RPC error object.

    Attributes:
        code: the JSON-RPC error code.
        message: the server's error message.
        data: the optional ``data`` member, as decoded JSON (``None`` when absent).
        status: the HTTP status the error arrived with (``None`` on stdio).
        task_id: the task whose ``error`` this is (a ``failed`` task, SEP-2663), else ``None``.
    """

    task_id: str | None = None

    def __init__(self, code: int, message: str, data: Any = None, *, status: int | None = None) -> None:
        super().__init__(f"JSON-RPC error {code}: {message}")
        self.code = code
        self.message = message
        self.data = data
        self.status = status


class HeaderMismatchError(RpcError):
    """The server answered -32020 HeaderMismatch: mirrored headers and body disagree (SEP-2243)."""


class MirroringError(McpError, ValueError):
    """An argument value cannot be mirrored into its header (SEP-2243).

    Raised while planning, before any byte is sent; the connection stays usable.

    Attributes:
        path: the argument's property path, e.g. ``("options", "readOnly")``.
        header: the header it would have gone to, e.g. ``"Mcp-Param-Read-Only"``.
        declared_type: the schema type, ``"string"``, ``"integer"`` or ``"boolean"``.
    """

    def __init__(self, message: str, *, path: tuple[str, ...], header: str, declared_type: str) -> None:
        super().__init__(message)
        self.path = path
        self.header = header
        self.declared_type = declared_type


class HeaderDecodeError(McpError, ValueError):
    """A header value is not one the SEP-2243 encoder could have produced."""


class TransportError(McpError):
    """The request did not get a JSON-RPC answer: network, timeout, HTTP status, cut stream.

    Attributes:
        status: the HTTP status code of the response to the message itself, else ``None`` (a refused resumption
            of a legacy stream names its status in the message only: it answered a ``GET``, so it neither
            challenges nor expires the message, which is never resent on its account).
        www_authenticate: the ``WWW-Authenticate`` field values of that response (RFC 9110 §11.6.1),
            in order; empty when it had none. The authorization layer reads them on a 401 or 403.
        dpop_nonce: the response's ``DPoP-Nonce`` header (RFC 9449 §8, §9), or ``None``.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        www_authenticate: tuple[str, ...] = (),
        dpop_nonce: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.www_authenticate = www_authenticate
        self.dpop_nonce = dpop_nonce


class SessionExpired(TransportError):
    """HTTP 404 on a request that carried ``Mcp-Session-Id``: the legacy session is gone.

    MCP 2025-11-25, "Session Management": the client starts a new session with ``initialize``. The
    client does that once by itself and resends; this error reaches the caller only when the renewed
    session expires too.

    Attributes:
        session_id: the session id the request carried (never in the message: the message reaches audit
            events and log lines, and a session id is a bearer of the session).
    """

    def __init__(self, session_id: str) -> None:
        super().__init__("HTTP 404: the MCP session has expired", status=404)
        self.session_id = session_id


class CallTimeoutError(TransportError):
    """A call took longer than the client allows (docs/tasks.md, "Timeouts for long calls").

    Attributes:
        timeout: which limit fired: ``"progress_timeout"`` (no answer, progress notification or task status
            change for that long) or ``"total_timeout"`` (the whole call, task polling included).
        seconds: the limit, in seconds.
        task_id: the task the call was waiting for, or ``None``.
    """

    def __init__(self, timeout: str, seconds: float, *, task_id: str | None = None) -> None:
        what = "no answer, progress or task status change" if timeout == "progress_timeout" else "the call not over"
        on = "" if task_id is None else f" (task {task_id})"
        super().__init__(f"{timeout} of {seconds:g} s fired: {what} after {seconds:g} s{on}")
        self.timeout = timeout
        self.seconds = seconds
        self.task_id = task_id


class TaskError(McpError):
    """A task ended without a result (SEP-2663): it was cancelled, its TTL elapsed, or the server forgot it.

    Attributes:
        task_id: the task's id.
        status: ``"cancelled"`` or ``"expired"``.
    """

    def __init__(self, message: str, *, task_id: str, status: str) -> None:
        super().__init__(message)
        self.task_id = task_id
        self.status = status


class ProtocolError(McpError):
    """The peer's reply is not valid JSON-RPC or MCP (malformed JSON, wrong shapes, paging loops)."""


class OutputValidationError(ProtocolError):
    """A tool's ``structuredContent`` does not conform to the ``outputSchema`` it was listed with.

    MCP 2026-07-28 "Tools", "Output Schema": a server MUST return conforming structured results and a
    client SHOULD validate them. Raised with ``validate_output="raise"`` (the default); the call itself
    completed, so the result is kept here.

    Attributes:
        tool: the tool's name.
        result: the :class:`~mcpfsm.ToolResult` that failed validation.
        problems: one line per violation (``/path: message``), or why the schema itself is unusable.
    """

    def __init__(self, tool: str, problems: list[str], result: Any = None) -> None:
        shown = "; ".join(problems[:3]) + (f"; and {len(problems) - 3} more" if len(problems) > 3 else "")
        super().__init__(f"structured content of tool {tool!r} does not match its outputSchema: {shown}")
        self.tool = tool
        self.result = result
        self.problems = problems


class AuthorizationError(McpError):
    """The authorization flow (OAuth 2.1, MCP "Authorization") cannot go on.

    The message is ``"{state}: {reason}"`` plus the server's OAuth error when it sent one; it never
    quotes a token, code, verifier, secret or assertion (docs/authorization.md).

    Attributes:
        state: the state of the authorization machine the flow was in (``"discovering_resource"``, …).
        reason: what went wrong, in protocol words.
        error: the OAuth ``error`` code a server answered (RFC 6749 §5.2), or ``None``.
        error_description: the server's ``error_description``, or ``None``.
    """

    def __init__(
        self,
        reason: str,
        *,
        state: str,
        error: str | None = None,
        error_description: str | None = None,
    ) -> None:
        message = f"{state}: {reason}"
        if error is not None:
            message += f" (error={error!r}"
            message += f", error_description={error_description!r})" if error_description is not None else ")"
        super().__init__(message)
        self.state = str(state)
        self.reason = reason
        self.error = error
        self.error_description = error_description


class ConfigError(McpError):
    """A server configuration (``mcpServers``, docs/groups.md) cannot be used, or aggregated names collide.

    The message names where: the file (with line and column for a JSON syntax error) or the JSON path of the
    field (``mcpServers.github.headers.Authorization``), and for an unset variable its name; never a value
    the configuration holds (it may be a secret).

    Attributes:
        path: the JSON path of the problem (``"$"`` for the whole document), or ``None`` when it is not one
            place in the configuration (a collision between two servers' tools).
    """

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


class CassetteError(McpError):
    """A cassette cannot be replayed: unreadable, malformed, of an unknown version, or on the wrong transport.

    Raised by :func:`mcpfsm.testing.replay`, :func:`mcpfsm.testing.serve` and ``mcpfsm replay`` before anything
    is served (docs/testing.md).

    Attributes:
        line: the 1-based line of the cassette at fault (the header is line 1), or ``None`` when the fault is
            the whole file's (it cannot be read, it is empty, or it was recorded on another transport).
    """

    def __init__(self, message: str, *, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line


class StoreError(McpError):
    """A store cannot keep or give back a value, or do what was asked (docs/stores.md).

    Its message names the store's kind and what failed, never a value, a key's secret or a password.
    """


class StoreLockTimeout(StoreError):
    """``store.lock(key, ttl, wait=…)`` did not hold the lock within ``wait`` seconds: another holder kept it.

    Raised by the store itself, which bounds its own wait (docs/stores.md, "What every store guarantees"), so
    that no caller needs a cancel scope around the lock.

    Attributes:
        wait: the seconds waited.
    """

    def __init__(self, message: str, *, wait: float) -> None:
        super().__init__(message)
        self.wait = wait


class UnsafeStoreError(StoreError):
    """A file store refuses a directory or a file that someone else could have written (docs/stores.md).

    A ``FileStore`` directory (or a ``FileTokenStore`` file's directory) not owned by the user or writable by
    group or others; a file in it that is not a regular file (a FIFO, a device, a symbolic link), not owned
    by the user, writable by group or others, or larger than any value the store writes. A client that uses
    the store falls back to its memory, as for a store that is down.

    Attributes:
        path: the directory or file refused.
    """

    def __init__(self, message: str, *, path: str) -> None:
        super().__init__(message)
        self.path = path


def rpc_error(code: int, message: str, data: Any = None) -> RpcError:
    """Build the most specific :class:`RpcError` subclass for ``code``."""
    if code == HEADER_MISMATCH:
        return HeaderMismatchError(code, message, data)
    return RpcError(code, message, data)
