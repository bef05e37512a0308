"""Running the ``mcpfsm`` command for real (``python -m mcpfsm`` in a subprocess), for the CLI tests.

Every wait here is bounded (:data:`GUARD`): a command that hangs fails its test instead of the suite. A command
run in the background (:func:`background`) starts with SIGINT at its default disposition whatever this process
inherited: a runner that ignores SIGINT (``nohup``, some CI runners) hands that to its children, and a Python
child that starts with SIGINT ignored never raises ``KeyboardInterrupt``, so a test that interrupts it would wait
for nothing. Leaving the block kills what is still running and waits for it, bounded too.
"""

from __future__ import annotations

import contextlib
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Final

from tests.support.peer.fixtures import REPO_ROOT

GUARD: Final = 60.0
"""Seconds any wait on a command may take before the test fails (a hang guard, not a timing)."""

_DEFAULT_SIGINT: Final = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])"
)


@dataclass(frozen=True, slots=True)
class Run:
    code: int
    stdout: str
    stderr: str


def mcpfsm(*args: str, cwd: Path = REPO_ROOT, stdin: str | None = None) -> Run:
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    done = subprocess.run(
        [sys.executable, "-m", "mcpfsm", *args],
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=GUARD,
        check=False,
    )
    return Run(done.returncode, done.stdout, done.stderr)


def one_error_line(run: Run) -> str:
    """The run's stderr, checked to be exactly one `mcpfsm: error:` line and no traceback."""
    assert "Traceback" not in run.stderr
    lines = run.stderr.splitlines()
    assert len(lines) == 1, run.stderr
    assert lines[0].startswith("mcpfsm: error: ")
    return lines[0]


def with_default_sigint(argv: Sequence[str]) -> list[str]:
    """``argv`` run with SIGINT at its default disposition (the same process: it execs ``argv[0]``).

    A handler, unlike an ignored signal, is reset to the default by ``exec``; but subprocess offers no way to
    reset an ignored one without ``preexec_fn``, which is unsafe in a process with threads. So a tiny interpreter
    resets it and execs the command, which keeps the pid a test sends its signals to.
    """
    return [sys.executable, "-I", "-S", "-c", _DEFAULT_SIGINT, *argv]


@contextlib.contextmanager
def background(
    argv: Sequence[str], *, cwd: Path = REPO_ROOT, **options: Any
) -> Iterator[subprocess.Popen[Any]]:
    """``argv`` running for the block (pipes as ``options`` say; text unless ``text=False``), interruptible with SIGINT.

    On exit the process is killed if it still runs and reaped within :data:`GUARD` seconds; its pipes are closed.
    """
    env = {**os.environ, "PYTHONIOENCODING": "utf-8", **options.pop("env", {})}
    text = {"text": True, "encoding": "utf-8"} if options.pop("text", True) else {}
    process: subprocess.Popen[Any] = subprocess.Popen(with_default_sigint(argv), cwd=cwd, env=env, **text, **options)
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        try:
            process.wait(timeout=GUARD)
        finally:
            for stream in (process.stdin, process.stdout, process.stderr):
                if stream is not None:
                    with contextlib.suppress(OSError):
                        stream.close()


def command(*args: str) -> list[str]:
    """The argv of ``mcpfsm ARGS`` (this interpreter, ``-m mcpfsm``)."""
    return [sys.executable, "-m", "mcpfsm", *args]


def line_within(stream: IO[str] | None, timeout: float = GUARD) -> str:
    """The next line of ``stream`` ('' at its end), or an ``AssertionError`` after ``timeout`` seconds.

    The read runs in a daemon thread, so a command that prints nothing fails the test instead of hanging it.
    """
    assert stream is not None
    lines: queue.SimpleQueue[str | BaseException] = queue.SimpleQueue()

    def read() -> None:
        try:
            lines.put(stream.readline())
        except BaseException as exc:  # handed to the waiting test
            lines.put(exc)

    threading.Thread(target=read, name="clirun-line", daemon=True).start()
    try:
        line = lines.get(timeout=timeout)
    except queue.Empty:
        raise AssertionError(f"no line within {timeout:g} s") from None
    if isinstance(line, BaseException):
        raise line
    return line


def finished(process: subprocess.Popen[Any], timeout: float = GUARD) -> tuple[int, Any, Any]:
    """Wait (bounded) for ``process`` to end; its exit code and the rest of its stdout and stderr (or ``None``).

    The rest is read through the pipes' own file objects (``communicate`` reads the descriptors beneath them, and
    would lose what an earlier :func:`line_within` left in their buffers).
    """
    rests: dict[str, Any] = {}

    def drain(name: str, stream: IO[Any] | None) -> None:
        rests[name] = None if stream is None else stream.read()

    readers = [
        threading.Thread(target=drain, args=(name, stream), name=f"clirun-{name}", daemon=True)
        for name, stream in (("out", process.stdout), ("err", process.stderr))
    ]
    for reader in readers:
        reader.start()
    code = process.wait(timeout=timeout)
    for reader in readers:
        reader.join(timeout)
        assert not reader.is_alive(), f"the command's output was still open {timeout:g} s after it ended"
    return code, rests["out"], rests["err"]


class Screen:
    """What a command writes to the terminal side of a pseudo-terminal, read as it comes (a full pty would block it).

    ``Screen(controller)`` starts reading the controller side in a daemon thread; :meth:`text` waits (bounded) until
    the terminal side is closed by every process holding it, then returns everything read, decoded.
    """

    def __init__(self, controller: int) -> None:
        self._controller = controller
        self._chunks: list[bytes] = []
        self._thread = threading.Thread(target=self._read, name="clirun-screen", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self._controller, 4096)
            except OSError:  # EIO: every holder of the terminal side has closed it
                return
            if not chunk:
                return
            self._chunks.append(chunk)

    def text(self, timeout: float = GUARD) -> str:
        """Everything the terminal showed, once nothing holds its terminal side any more."""
        self._thread.join(timeout)
        assert not self._thread.is_alive(), f"the terminal was still open after {timeout:g} s"
        os.close(self._controller)
        return b"".join(self._chunks).decode()
