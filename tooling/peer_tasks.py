"""A small tasks server (SEP-2663, ``io.modelcontextprotocol/tasks``) on the official SDK's extension mechanism.

For the task machine's walkthrough and the tests: ``python -m tooling.peer_tasks [--port 0]`` serves the
MCP endpoint at ``/mcp`` on 127.0.0.1 (modern era, ``MCPServer`` with one ``Extension``), prints
``READY http://127.0.0.1:PORT/mcp`` once listening and exits with status 0 on SIGTERM. The extension binds
``tasks/get``, ``tasks/update`` and ``tasks/cancel`` (``MethodBinding``) and intercepts ``tools/call``: a call
of one of its tools from a client that declared the extension is answered with a ``CreateTaskResult``. Tasks live
in memory; their status is computed when asked (a task has no worker of its own), so nothing runs between requests.

Tools (each an ordinary tool to a client that did not declare the extension, except ``needs-tasks``):

- ``build(seconds, poll_ms, ttl_ms)``: ``working`` (``statusMessage`` ``compiling 1/4`` to ``4/4``, one step every
  quarter of ``seconds``) until ``seconds`` after it was created, then ``completed``;
- ``approve(poll_ms)``: ``input_required`` with one elicitation (key ``confirm``), repeated by every poll until it is
  answered and by the first poll after (eventually consistent, as the extension allows); then ``completed`` with
  the answer;
- ``interview(poll_ms)``: two rounds of input, ``name`` then ``age``;
- ``explode(poll_ms)``: ``failed`` with a JSON-RPC error at the first poll;
- ``forever(poll_ms, ttl_ms)``: ``working`` until cancelled; with ``ttl_ms`` the server forgets it once that much
  time passed after it was created *and* a poll saw it past its TTL (``-32602 Task has expired``);
- ``manual()``: ``working`` (polls every 60 s) until ``POST /control/finish {"taskId": ...}`` completes it, which
  also pushes ``notifications/tasks`` to every ``subscriptions/listen`` stream that named the task;
- ``needs-tasks()``: answers ``-32021`` to a client that did not declare the extension;
- ``quick()``: answers at once, task or not (the server alone decides).

Control surface (plain HTTP, not MCP): ``GET /control/log`` lists every POST to ``/mcp`` as
``{"method", "mcp_method", "mcp_name", "params"}`` (``params`` without ``_meta``); ``POST /control/log/clear``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final, cast

import anyio
import anyio.streams.memory
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.extension import Extension, MethodBinding
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.server import require_client_extension
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolRequestParams
from mcp_types.jsonrpc import INVALID_PARAMS
from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mcpfsm._tooling.demo_server import MCP_PATH, _serve_http

__all__ = ["TASKS_EXTENSION", "TaskServer", "build_app", "main"]

TASKS_EXTENSION: Final = "io.modelcontextprotocol/tasks"
"""The extension's identifier (SEP-2663)."""

_TASK_TOOLS: Final = frozenset({"build", "approve", "interview", "explode", "forever", "manual", "needs-tasks"})
_ELICIT: Final = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _text_result(text: str) -> dict[str, Any]:
    # The tools return str, so they list an outputSchema {"result": string}: the result conforms to it.
    return {"content": [{"type": "text", "text": text}], "structuredContent": {"result": text}, "isError": False}


@dataclass(slots=True, kw_only=True)
class _Task:
    task_id: str
    tool: str
    arguments: dict[str, Any]
    created: float
    updated: float
    poll_ms: int | None
    ttl_ms: int | None
    status: str = "working"
    message: str | None = None
    answers: dict[str, Any] = field(default_factory=dict)
    echoes: set[str] = field(default_factory=set)  # keys answered, repeated once more by the next poll
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    past_ttl: bool = False
    polls: int = 0


class TaskServer:
    """The tasks of one server process, and the listen streams that asked for their notifications."""

    def __init__(self) -> None:
        """No task yet."""
        self.tasks: dict[str, _Task] = {}
        self.log: list[dict[str, Any]] = []
        self._listeners: list[tuple[frozenset[str], anyio.streams.memory.MemoryObjectSendStream[dict[str, Any]]]] = []
        self._next = 0

    def create(self, tool: str, arguments: dict[str, Any]) -> _Task:
        """A new task of ``tool``, in its first status."""
        self._next += 1
        now = time.time()
        poll = arguments.get("poll_ms", 100)
        ttl = arguments.get("ttl_ms")
        task = _Task(
            task_id=f"task-{self._next}:{tool}",
            tool=tool,
            arguments=arguments,
            created=now,
            updated=now,
            poll_ms=60_000 if tool == "manual" else (None if poll == -1 else int(poll)),
            ttl_ms=None if ttl is None else int(ttl),
        )
        self.tasks[task.task_id] = task
        self._advance(task)
        return task

    def get(self, task_id: str) -> _Task:
        """The task, its status brought up to date.

        Raises:
            MCPError: -32602 when the server does not know it (never did, or forgot it past its TTL).
        """
        task = self.tasks.get(task_id)
        if task is None:
            raise MCPError(INVALID_PARAMS, "Task not found")
        over = task.status in ("completed", "failed", "cancelled")
        if task.ttl_ms is not None and not over and time.time() > task.created + task.ttl_ms / 1000:
            if task.past_ttl:
                del self.tasks[task_id]
                raise MCPError(INVALID_PARAMS, "Task has expired")
            task.past_ttl = True
        task.polls += 1
        self._advance(task)
        return task

    def _advance(self, task: _Task) -> None:
        if task.status in ("completed", "failed", "cancelled"):
            return
        before = (task.status, task.message)
        now = time.time()
        if task.tool == "build":
            seconds = float(task.arguments.get("seconds", 0.3))
            if now >= task.created + seconds:
                task.status, task.message = "completed", None
                task.result = _text_result(f"built in {seconds:g} s")
            else:
                # Four steps, each a change of statusMessage (what progress_timeout watches).
                task.message = f"compiling {min(4, int((now - task.created) / seconds * 4) + 1)}/4"
        elif task.tool in ("approve", "interview"):
            keys = ["confirm"] if task.tool == "approve" else ["name", "age"]
            pending = [key for key in keys if key not in task.answers]
            if pending:
                task.status, task.message = "input_required", f"waiting for {pending[0]}"
            elif task.echoes:
                task.status = "input_required"  # eventually consistent: the answered key once more
            else:
                task.status, task.message = "completed", None
                text = json.dumps({key: task.answers[key] for key in keys}, sort_keys=True)
                task.result = _text_result(text)
        elif task.tool == "explode" and task.polls > 0:
            task.status, task.message = "failed", "the build broke"
            task.error = {"code": -32603, "message": "compiler crashed"}
        if (task.status, task.message) != before:
            task.updated = now

    def shape(self, task: _Task) -> dict[str, Any]:
        """The task as ``tasks/get`` returns it (SEP-2663 ``Task``, the status-specific field inlined)."""
        shape: dict[str, Any] = {
            "taskId": task.task_id,
            "status": task.status,
            "createdAt": _iso(task.created),
            "lastUpdatedAt": _iso(task.updated),
            "ttlMs": task.ttl_ms,
        }
        if task.poll_ms is not None:
            shape["pollIntervalMs"] = task.poll_ms
        if task.message is not None:
            shape["statusMessage"] = task.message
        if task.status == "input_required":
            keys = ["confirm"] if task.tool == "approve" else ["name", "age"]
            pending = [key for key in keys if key not in task.answers]
            shown = pending[:1] or sorted(task.echoes)
            task.echoes.clear()
            shape["inputRequests"] = {key: _elicitation(key) for key in shown}
        elif task.status == "completed":
            shape["result"] = task.result
        elif task.status == "failed":
            shape["error"] = task.error
        return shape

    def update(self, task_id: str, responses: Mapping[str, Any]) -> None:
        """Record answers to the keys outstanding; answers to other keys are ignored (SEP-2663)."""
        task = self.get(task_id)
        if task.status != "input_required":
            return
        for key, answer in responses.items():
            if key in task.answers or not isinstance(answer, dict):
                continue
            content = answer.get("content")
            task.answers[key] = content if isinstance(content, dict) else answer.get("action")
            task.echoes.add(key)
        task.updated = time.time()

    async def cancel(self, task_id: str) -> None:
        """Cancel the task (a terminal one stays as it is)."""
        task = self.get(task_id)
        if task.status not in ("completed", "failed", "cancelled"):
            task.status, task.message, task.updated = "cancelled", "cancelled by the client", time.time()
            await self.push(task)

    async def finish(self, task_id: str) -> None:
        """Complete a ``manual`` task and push its notification."""
        task = self.get(task_id)
        task.status, task.message, task.updated = "completed", None, time.time()
        task.result = _text_result("finished")
        await self.push(task)

    async def push(self, task: _Task) -> None:
        """Send ``notifications/tasks`` with the whole task to every stream that named it."""
        shape = self.shape(task)
        for ids, stream in list(self._listeners):
            if task.task_id in ids:
                stream.send_nowait(shape)

    def listen(
        self, ids: frozenset[str]
    ) -> tuple[anyio.streams.memory.MemoryObjectReceiveStream[dict[str, Any]], Callable[[], None]]:
        """A stream of the notifications of ``ids``, and how to stop it."""
        send, receive = anyio.create_memory_object_stream[dict[str, Any]](64)
        entry = (ids, send)
        self._listeners.append(entry)
        return receive, lambda: self._listeners.remove(entry)


def _elicitation(key: str) -> dict[str, Any]:
    params = {"mode": "form", "message": f"{key}?", "requestedSchema": _ELICIT}
    return {"method": "elicitation/create", "params": params}


class _TaskParams(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)
    task_id: str = Field(alias="taskId")


class _UpdateParams(_TaskParams):
    input_responses: dict[str, Any] = Field(default_factory=dict, alias="inputResponses")


class _ListenParams(BaseModel):
    model_config = ConfigDict(extra="allow")
    notifications: dict[str, Any] = Field(default_factory=dict)


class _Notification(BaseModel):
    # What ServerSession.send_notification needs: a model that dumps to {"method", "params"}.
    method: str
    params: dict[str, Any]


class TasksExtension(Extension):
    """The extension: three methods and a ``tools/call`` interceptor."""

    identifier = TASKS_EXTENSION

    def __init__(self, tasks: TaskServer) -> None:
        """Serve ``tasks``."""
        self.tasks = tasks

    def methods(self) -> list[MethodBinding]:
        """``tasks/get``, ``tasks/update``, ``tasks/cancel``."""
        return [
            MethodBinding("tasks/get", _TaskParams, self._get),
            MethodBinding("tasks/update", _UpdateParams, self._update),
            MethodBinding("tasks/cancel", _TaskParams, self._cancel),
        ]

    async def _get(self, ctx: ServerRequestContext[Any, Any], params: Any) -> HandlerResult:
        require_client_extension(ctx, TASKS_EXTENSION)
        return self.tasks.shape(self.tasks.get(cast(_TaskParams, params).task_id))

    async def _update(self, ctx: ServerRequestContext[Any, Any], params: Any) -> HandlerResult:
        require_client_extension(ctx, TASKS_EXTENSION)
        update = cast(_UpdateParams, params)
        self.tasks.update(update.task_id, update.input_responses)
        return {}

    async def _cancel(self, ctx: ServerRequestContext[Any, Any], params: Any) -> HandlerResult:
        require_client_extension(ctx, TASKS_EXTENSION)
        await self.tasks.cancel(cast(_TaskParams, params).task_id)
        return {}

    async def intercept_tool_call(
        self, params: CallToolRequestParams, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        """Answer a call of a task tool with a ``CreateTaskResult`` when the client declared the extension."""
        if params.name not in _TASK_TOOLS:
            return await call_next(ctx)
        if params.name == "needs-tasks":
            require_client_extension(ctx, TASKS_EXTENSION)
        else:
            try:
                require_client_extension(ctx, TASKS_EXTENSION)
            except MCPError:
                return await call_next(ctx)
        task = self.tasks.create(params.name, dict(params.arguments or {}))
        return {"resultType": "task", **self.tasks.shape(task)}


def build_server(tasks: TaskServer) -> MCPServer[Any]:
    """The server: its tools (what a client without the extension gets) and the extension."""
    server: MCPServer[Any] = MCPServer(
        "mcpfsm-tasks-peer",
        version="1.0.0",
        log_level="WARNING",
        extensions=[TasksExtension(tasks)],
        subscriptions=False,
    )

    @server.tool(name="build")
    def build(seconds: float = 0.3, poll_ms: int = 100, ttl_ms: int | None = None) -> str:
        return f"built in {seconds:g} s"

    @server.tool(name="approve")
    def approve(poll_ms: int = 100) -> str:
        return "approve needs a task"

    @server.tool(name="interview")
    def interview(poll_ms: int = 100) -> str:
        return "interview needs a task"

    @server.tool(name="explode")
    def explode(poll_ms: int = 100) -> str:
        return "nothing exploded"

    @server.tool(name="forever")
    def forever(poll_ms: int = 100, ttl_ms: int | None = None) -> str:
        return "forever needs a task"

    @server.tool(name="manual")
    def manual() -> str:
        return "manual needs a task"

    @server.tool(name="needs-tasks")
    def needs_tasks() -> str:
        return "unreachable"

    @server.tool(name="quick")
    def quick() -> str:
        return "quick"

    async def listen(ctx: ServerRequestContext[Any, Any], params: Any) -> HandlerResult:
        # SEP-2663 "Notifications": subscriptions/listen with notifications.taskIds (the SDK's handler knows only
        # the core kinds); acknowledged with the ids accepted, then notifications/tasks until the client leaves.
        wanted = cast(_ListenParams, params).notifications.get("taskIds")
        ids = frozenset(each for each in wanted if isinstance(each, str)) if isinstance(wanted, list) else frozenset()
        meta = {"io.modelcontextprotocol/subscriptionId": ctx.request_id}
        receive, stop = tasks.listen(ids)
        try:
            await ctx.session.send_notification(
                _Notification(  # type: ignore[arg-type]
                    method="notifications/subscriptions/acknowledged",
                    params={"notifications": {"taskIds": sorted(ids)}, "_meta": meta},
                ),
                related_request_id=ctx.request_id,
            )
            async for shape in receive:
                await ctx.session.send_notification(
                    _Notification(method="notifications/tasks", params={**shape, "_meta": meta}),  # type: ignore[arg-type]
                    related_request_id=ctx.request_id,
                )
        finally:
            stop()
        return {"_meta": meta}

    server._lowlevel_server.add_request_handler("subscriptions/listen", _ListenParams, listen)
    return server


class _Log:
    # ASGI middleware: every POST to /mcp into tasks.log (its method, the routing headers, params without _meta),
    # and the control surface.
    def __init__(self, app: ASGIApp, tasks: TaskServer) -> None:
        self._app = app
        self._tasks = tasks

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        if scope["path"].startswith("/control"):
            await self._control(scope, receive, send)
            return
        if scope["path"] != MCP_PATH or scope["method"] != "POST":
            await self._app(scope, receive, send)
            return
        chunks = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        body = b"".join(chunks)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        try:
            decoded = json.loads(body)
        except ValueError:
            decoded = None
        if isinstance(decoded, dict) and "method" in decoded:
            raw = decoded.get("params")
            params: dict[str, Any] = raw if isinstance(raw, dict) else {}
            self._tasks.log.append(
                {
                    "method": decoded["method"],
                    "mcp_method": headers.get("mcp-method"),
                    "mcp_name": headers.get("mcp-name"),
                    "params": {k: v for k, v in params.items() if k != "_meta"},
                    "extensions": sorted(
                        params.get("_meta", {})
                        .get("io.modelcontextprotocol/clientCapabilities", {})
                        .get("extensions", {})
                    ),
                }
            )
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self._app(scope, replay, send)

    async def _control(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        response: Response
        if scope["path"] == "/control/log":
            response = JSONResponse(self._tasks.log)
        elif scope["path"] == "/control/log/clear":
            self._tasks.log.clear()
            response = JSONResponse({})
        elif scope["path"] == "/control/finish":
            await self._tasks.finish(str((await request.json())["taskId"]))
            response = JSONResponse({})
        else:
            response = JSONResponse({"error": "unknown control path"}, status_code=404)
        await response(scope, receive, send)


def build_app(tasks: TaskServer) -> ASGIApp:
    """The ASGI app: the SDK's Streamable HTTP app (SSE answers) behind the log and the control surface."""
    return _Log(build_server(tasks).streamable_http_app(streamable_http_path=MCP_PATH), tasks)


def main(argv: list[str] | None = None) -> None:
    """Serve until SIGTERM/SIGINT."""
    parser = argparse.ArgumentParser(prog="python -m tooling.peer_tasks", description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0, help="TCP port on 127.0.0.1 (0: the OS picks)")
    parser.add_argument("--mode", default="modern", choices=["modern"], help="the era served (modern only)")
    args = parser.parse_args(argv)
    anyio.run(_serve_http, build_app(TaskServer()), args.port)


if __name__ == "__main__":
    main(sys.argv[1:])
