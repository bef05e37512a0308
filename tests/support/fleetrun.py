"""Real worker processes for the fleet tests: start them, wait until each says READY, release them together.

A worker is ``python -m MODULE ARG...`` that prints ``READY`` once it is set up, then, for each line it reads
on stdin, does one round of work and prints one JSON line. :class:`Fleet` reads every worker's output in a
thread of its own (so a worker that hangs fails the test after :data:`GUARD` seconds instead of hanging it),
and kills whatever is left when its block ends.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Sequence
from typing import Any, Final

from tests.support.peer.fixtures import REPO_ROOT

__all__ = ["GUARD", "Fleet"]

GUARD: Final = 120.0
"""Hang guard, in seconds, for one line of one worker (never a timing assertion)."""


class Fleet:
    """Worker processes ``python -m module *argv`` (one per argv), with their output read line by line."""

    def __init__(self, module: str, argvs: Sequence[Sequence[str]], env: dict[str, str] | None = None) -> None:
        environment = {**os.environ, **(env or {}), "PYTHONPATH": str(REPO_ROOT)}
        self.processes = [
            subprocess.Popen(
                [sys.executable, "-m", module, *argv],
                cwd=REPO_ROOT,
                env=environment,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for argv in argvs
        ]
        self._lines: list[queue.Queue[str | None]] = []
        self._errors: list[list[str]] = []
        self._threads: list[threading.Thread] = []
        for process in self.processes:
            assert process.stdout is not None and process.stderr is not None
            lines: queue.Queue[str | None] = queue.Queue()
            errors: list[str] = []
            self._lines.append(lines)
            self._errors.append(errors)
            for target, args in ((_queue_lines, (process.stdout, lines)), (_keep_lines, (process.stderr, errors))):
                thread = threading.Thread(target=target, args=args, daemon=True)
                thread.start()
                self._threads.append(thread)

    def __enter__(self) -> Fleet:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.kill()

    def line(self, index: int) -> str:
        """The next line worker ``index`` printed; fails when it printed none within :data:`GUARD` seconds."""
        try:
            line = self._lines[index].get(timeout=GUARD)
        except queue.Empty:
            raise AssertionError(f"worker {index} printed nothing for {GUARD} s:\n{self.stderr(index)}") from None
        if line is None:
            self.processes[index].wait(timeout=GUARD)
            raise AssertionError(
                f"worker {index} exited ({self.processes[index].returncode}) early:\n{self.stderr(index)}"
            )
        return line.rstrip("\n")

    def expect(self, line: str) -> None:
        """Every worker's next line is ``line``."""
        for index in range(len(self.processes)):
            assert self.line(index) == line, self.stderr(index)

    def go(self) -> None:
        """Release every worker for one round (one line on each stdin, written one after the other)."""
        for process in self.processes:
            assert process.stdin is not None
            process.stdin.write("go\n")
            process.stdin.flush()

    def results(self) -> list[Any]:
        """Every worker's next line, as JSON."""
        return [json.loads(self.line(index)) for index in range(len(self.processes))]

    def round(self) -> list[Any]:
        """:meth:`go`, then :meth:`results`."""
        self.go()
        return self.results()

    def finish(self) -> None:
        """Close every stdin and wait for each worker to exit 0 (within :data:`GUARD` seconds)."""
        for process in self.processes:
            assert process.stdin is not None
            process.stdin.close()
        for index, process in enumerate(self.processes):
            assert process.wait(timeout=GUARD) == 0, self.stderr(index)

    def stderr(self, index: int) -> str:
        """What worker ``index`` wrote on stderr so far."""
        return "".join(self._errors[index])

    def kill(self) -> None:
        """Kill every worker still running and reap it."""
        for process in self.processes:
            if process.poll() is None:
                process.kill()
            process.wait(timeout=GUARD)
        for thread in self._threads:
            thread.join(timeout=GUARD)
        for process in self.processes:
            for stream in (process.stdin, process.stdout, process.stderr):
                if stream is not None and not stream.closed:
                    with contextlib.suppress(BrokenPipeError):
                        stream.close()


def _queue_lines(stream: Any, lines: queue.Queue[str | None]) -> None:
    for line in stream:
        lines.put(line)
    lines.put(None)


def _keep_lines(stream: Any, kept: list[str]) -> None:
    kept.extend(stream)
