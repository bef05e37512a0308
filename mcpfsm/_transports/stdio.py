"""stdio transport: a trio subprocess speaking newline-delimited JSON-RPC (MCP "Transports").

The child's stdout is read by one task that routes each response to the request waiting for it;
notifications and server-to-client requests go to the inbound handler. Lines are cut in linear
time (:class:`~mcpfsm._core.lines.LineFramer`); a line longer than ``max_response_bytes`` is
skipped without being buffered and fails the request it answers (the others go on, and so does
the child). stderr is drained into DEBUG logs so a chatty child never blocks on a full pipe, and
its last lines are kept: when the child exits or closes stdout before answering, the error names
its exit status and ends with them. The child's exit is watched apart from its stdout: a process it
started may keep stdout open after the child is gone, and the calls waiting then fail a moment after
the exit all the same. Headers are accepted and ignored: there are none on stdio.
Closing (also on cancellation) closes stdin, waits briefly, then terminates and finally kills the
child.

The reader tasks and the exit watcher are trio *system* tasks with a cancel scope each
(:class:`~mcpfsm._transports.background.BackgroundTasks`), not children of a nursery held open between
:meth:`StdioTransport.open` and :meth:`StdioTransport.aclose`: a nursery must be exited in the cancel
scope it was entered in, and a client closes its transport inside a shielded scope of its own (and may
be closed from a different task), which would corrupt trio's cancel-scope stack. The inbound handler
returns at once for a server request (the session answers it in a task of its own), so a handler
waiting for a user never keeps the reader from routing other responses.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Final

import trio

from .._core.constants import DEFAULT_MAX_RESPONSE_BYTES
from .._core.errors import McpError, ProtocolError, TransportError
from .._core.jsonrpc import Response, decode_message, parse_message
from .._core.lines import LineFramer, OversizedLine
from .._log import logger
from .background import BackgroundTasks
from .base import NO_HEADERS, InboundHandler, OutgoingMessage, Reply

__all__ = ["StdioTransport"]

_CLOSE_GRACE: Final = 2.0
# After the child exited, how long its stdout may stay open (what it wrote last is still being read).
_EXIT_GRACE: Final = 1.0
_RECEIVE_BYTES: Final = 65536
_STDERR_TAIL_BYTES: Final = 4096
_STDERR_TAIL_LINES: Final = 10


class _Pending:
    __slots__ = ("event", "reply")

    def __init__(self) -> None:
        self.event = trio.Event()
        self.reply: str | BaseException | None = None


class StdioTransport:
    """Runs an MCP server as a child process and talks to it over stdin/stdout (MCP "Transports").

    :meth:`open` starts the child (``Client`` does this for you when it is entered).

    Args:
        command: the program and its arguments.
        env: extra environment variables for the child (merged over ``os.environ``).
        cwd: working directory of the child.
        max_response_bytes: the longest line accepted from the child, in bytes.
    """

    def __init__(
        self,
        command: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        redact: Callable[[str], str] | None = None,
    ) -> None:
        """Prepare the transport; the child starts when the transport is entered.

        ``redact`` takes the client's secrets out of what the server writes to stderr before it is logged (a
        configuration's expanded variables may be in the child's arguments); ``None``: the client holds none.

        Raises:
            TransportError: ``command`` is empty.
            ValueError: ``max_response_bytes`` is below 1.
        """
        if isinstance(command, str) or not command:
            raise TransportError("stdio command must be a non-empty list of program and arguments")
        if max_response_bytes < 1:
            raise ValueError(f"max_response_bytes must be at least 1, got {max_response_bytes}")
        self._max = max_response_bytes
        self._stderr_tail = b""
        self._stderr_done = trio.Event()
        self._stdout_done = trio.Event()
        self._exited = trio.Event()
        self._command = list(command)
        self._env = None if env is None else {**os.environ, **env}
        self._cwd = cwd
        self.redact = redact
        """Takes the client's secrets out of what the server writes to stderr before it is logged, or ``None``."""
        self._process: trio.Process | None = None
        self._pid: int | None = None
        self._returncode: int | None = None
        self._readers = BackgroundTasks()
        self._pending: dict[object, _Pending] = {}
        self._write_lock = trio.Lock()
        self._failure: TransportError | None = None
        self._inbound: InboundHandler | None = None

    @property
    def carries_headers(self) -> bool:
        """False: stdio has no HTTP headers, so ``x-mcp-header`` mirroring never applies."""
        return False

    async def open(self, inbound: InboundHandler) -> None:
        """Start the child process and the stdout/stderr reader tasks; ``inbound`` gets what the child sends unasked.

        Raises:
            TransportError: the program cannot be started.
        """
        self._inbound = inbound
        try:
            self._process = await trio.lowlevel.open_process(
                self._command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=self._env,
                cwd=self._cwd,
            )
        except OSError as exc:
            raise TransportError(f"cannot start MCP server {self._command[0]!r}: {exc}") from exc
        self._pid = self._process.pid
        self._spawn(self._read_stdout)
        self._spawn(self._drain_stderr)
        self._spawn(self._watch_exit)

    @property
    def command(self) -> list[str]:
        """The program and its arguments, as given."""
        return list(self._command)

    @property
    def ended(self) -> bool:
        """True once the child has exited or its stdout ended: no request can be answered any more."""
        return self._exited.is_set() or self._stdout_done.is_set()

    async def wait_ended(self) -> TransportError:
        """Return once the child has exited or closed its stdout, with the error a request would now get.

        The error names the exit status and ends with the last lines of the child's stderr (given a moment to
        drain). A client group watches its stdio members this way, so that a member whose child exits is
        ``"failed"`` when it happens, not at its next use (docs/groups.md). :meth:`aclose` ends the child too, so a
        caller that closes the transport stops waiting first.
        """
        async with trio.open_nursery() as nursery:

            async def wait_for(event: trio.Event) -> None:
                await event.wait()
                nursery.cancel_scope.cancel()

            nursery.start_soon(wait_for, self._exited)
            nursery.start_soon(wait_for, self._stdout_done)
        with trio.move_on_after(_EXIT_GRACE):
            await self._exited.wait()
            await self._stderr_done.wait()
        return self._exit_error(self._returncode)

    @property
    def pid(self) -> int | None:
        """The child's process id once started (kept after close, for diagnostics)."""
        return self._pid

    def _spawn(self, reader: Callable[[], Awaitable[None]]) -> None:
        def failed(exc: Exception) -> None:
            self._fail(TransportError(f"the MCP server process reader failed: {exc!r}"))

        self._readers.start(reader, name=f"mcpfsm stdio {reader.__name__}", on_error=failed)

    async def send(self, message: str, headers: Mapping[str, str] = NO_HEADERS) -> Reply | None:
        """Write one message; for a request, wait for and return its response.

        ``headers`` is accepted and ignored: stdio has none. The text is read for its id
        (:meth:`OutgoingMessage.of`); a session hands :meth:`send_message` both.

        Raises:
            TransportError: the child is not running or exited before answering.
        """
        return await self.send_message(OutgoingMessage.of(message), headers)

    async def send_message(self, message: OutgoingMessage, headers: Mapping[str, str] = NO_HEADERS) -> Reply | None:
        """Write ``message``'s text as :meth:`send` does, waiting for the answer to the id beside it.

        Raises:
            As :meth:`send`.
        """
        process = self._process
        if process is None or process.stdin is None:
            raise TransportError("the stdio transport is not started (call open() first)")
        if self._failure is not None:
            raise TransportError(str(self._failure)) from self._failure
        request_id = message.request_id
        pending: _Pending | None = None
        if request_id is not None:
            pending = _Pending()
            self._pending[request_id] = pending
        try:
            await self._write(message.text)
            if pending is None:
                return None
            await pending.event.wait()
            if isinstance(pending.reply, BaseException):
                raise pending.reply
            assert pending.reply is not None
            return Reply(pending.reply)
        finally:
            if request_id is not None:
                self._pending.pop(request_id, None)

    async def _write(self, message: str) -> None:
        process = self._process
        assert process is not None and process.stdin is not None
        data = message.encode() + b"\n"
        async with self._write_lock:
            try:
                await process.stdin.send_all(data)
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
                raise TransportError(f"cannot write to the MCP server process: {exc}") from exc

    async def _read_stdout(self) -> None:
        process = self._process
        assert process is not None and process.stdout is not None
        framer = LineFramer(limit=self._max)
        try:
            while chunk := await process.stdout.receive_some(_RECEIVE_BYTES):
                for line in framer.feed(chunk if isinstance(chunk, bytes) else bytes(chunk)):
                    if isinstance(line, OversizedLine):
                        self._skip(line)
                    elif line.strip():
                        await self._route(line)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass
        except McpError as exc:
            self._fail(TransportError(f"MCP server process stream is unusable: {exc}"))
            return
        finally:
            self._stdout_done.set()
        self._fail(await self._ended(process))

    async def _watch_exit(self) -> None:
        # The child's exit, apart from its stdout: a process it started (a server behind a wrapper, a helper
        # left running) may hold stdout open, and then no end of stdout ever says that nobody will answer.
        process = self._process
        assert process is not None
        await process.wait()
        self._returncode = process.returncode
        self._exited.set()
        with trio.move_on_after(_EXIT_GRACE):
            await self._stdout_done.wait()
        if not self._stdout_done.is_set():
            self._fail(self._exit_error(process.returncode, held=True))

    async def _ended(self, process: trio.Process) -> TransportError:
        # stdout is closed: give the child a moment to exit and stderr to drain, so the error can say why.
        with trio.move_on_after(_CLOSE_GRACE):
            await process.wait()
            await self._stderr_done.wait()
        return self._exit_error(process.returncode)

    def _exit_error(self, status: int | None, *, held: bool = False) -> TransportError:
        # How the child ended (exit status or signal), and the last lines of its stderr.
        if status is None:
            message = "the MCP server process closed its stdout before answering"
        elif status < 0:
            message = f"the MCP server process was killed by signal {-status} before answering"
        else:
            message = f"the MCP server process exited with status {status} before answering"
        if held:
            message += " (a process it started still holds its stdout open)"
        lines = [line for line in self._stderr_tail.decode("utf-8", "replace").splitlines() if line.strip()]
        if lines:
            message += "; the last lines of its stderr:\n" + "\n".join(lines[-_STDERR_TAIL_LINES:])
        return TransportError(message)

    def _skip(self, line: OversizedLine) -> None:
        error = TransportError(
            f"a line of {line.size} bytes from the MCP server process is larger than max_response_bytes"
            f" ({self._max} bytes); it was skipped without being buffered"
        )
        pending = None if line.id is None else self._pending.get(line.id)
        if pending is None:
            logger.warning("ignoring a message: {}", error)
            return
        pending.reply = error
        pending.event.set()

    async def _route(self, line: bytes) -> None:
        try:
            message = parse_message(decode_message(line))
        except ProtocolError as exc:
            pending = self._pending.get(_response_id(line))
            if pending is not None:
                # JSON with an id (a lone surrogate in it, say): the request it answers fails, rather than hang.
                pending.reply = exc
                pending.event.set()
                return
            logger.warning("ignoring a malformed line from the MCP server process: {}", exc)
            return
        if isinstance(message, Response):
            pending = self._pending.get(message.id)
            if pending is None:
                logger.warning("ignoring a response for unknown request id {!r} from the MCP server", message.id)
                return
            pending.reply = line.decode()
            pending.event.set()
            return
        if self._inbound is not None:
            await self._inbound(message)

    def _fail(self, error: TransportError) -> None:
        self._failure = error
        for pending in self._pending.values():
            if not pending.event.is_set():
                pending.reply = error
                pending.event.set()

    async def _drain_stderr(self) -> None:
        process = self._process
        assert process is not None and process.stderr is not None
        try:
            while chunk := await process.stderr.receive_some(_RECEIVE_BYTES):
                # Keep only the end: what a failing server says last is why it failed.
                self._stderr_tail = (self._stderr_tail + chunk)[-_STDERR_TAIL_BYTES:]
                text = chunk.decode("utf-8", "replace").rstrip()
                logger.debug("MCP server stderr: {}", text if self.redact is None else self.redact(text))
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            return
        finally:
            self._stderr_done.set()

    async def open_stream(self, headers: Mapping[str, str]) -> bool:
        """Nothing to open: everything the server sends unasked already arrives on stdout. Returns False."""
        return False

    async def end_session(self, headers: Mapping[str, str]) -> None:
        """Nothing to do: a stdio server's session ends with its process."""

    async def aclose(self) -> None:
        """Close stdin, give the child a moment to exit, then terminate or kill it. Idempotent."""
        process, self._process = self._process, None
        if process is None:
            return
        with trio.CancelScope(shield=True):
            try:
                if process.stdin is not None:
                    await process.stdin.aclose()
                with trio.move_on_after(_CLOSE_GRACE):
                    await process.wait()
                if process.returncode is None:
                    process.terminate()
                    with trio.move_on_after(_CLOSE_GRACE):
                        await process.wait()
                if process.returncode is None:
                    process.kill()
                    await process.wait()
            finally:
                self._fail(TransportError("the stdio transport is closed"))
                await self._readers.aclose()


def _response_id(line: bytes) -> int | str | None:
    # The id of a line that is a JSON object without a method, or None.
    try:
        payload = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(payload, dict) or "method" in payload:
        return None
    request_id = payload.get("id")
    return request_id if isinstance(request_id, int | str) and not isinstance(request_id, bool) else None
