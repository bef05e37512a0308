"""The ``mcp_cassette`` fixture's value: a test's cassette path that makes recording or replaying clients.

Imported by the pytest plugin (the top-level ``pytest_mcpfsm`` module) the first time a test asks for
``mcp_cassette``, never when the plugin loads. The cassette of test ``test_x`` in ``tests/test_agent.py`` is
``tests/cassettes/test_agent/test_x.jsonl``: characters of the test's name outside ``[A-Za-z0-9_.-]`` (a
parametrized id's brackets, say) become ``_``.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import pytest

from .._client.client import Client
from .._core.faults import Fault
from ._cassettes import replay

__all__ = ["CONNECTION_OPTIONS", "CassettePath", "cassette_for", "cassette_path"]

CONNECTION_OPTIONS: Final = frozenset(
    {
        "headers",
        "timeout",
        "http_transport",
        "verify",
        "cert",
        "proxy",
        "trust_env",
        "max_response_bytes",
        "auth",
        "env",
        "cwd",
    }
)
"""Options of ``Client.http`` and ``Client.stdio`` that describe the connection: a replay has none, so it drops
them (the same test code records and replays)."""

_UNSAFE: Final = re.compile(r"[^A-Za-z0-9_.-]")
_URL: Final = re.compile(r"^https?://", re.IGNORECASE)


def cassette_path(test_file: Path, test_name: str) -> Path:
    """Where the cassette of ``test_name`` in ``test_file`` lives: ``cassettes/{module}/{test}.jsonl`` beside it."""
    return test_file.parent / "cassettes" / test_file.stem / f"{_UNSAFE.sub('_', test_name)}.jsonl"


class CassettePath(type(Path())):  # type: ignore[misc]
    """A test's cassette: a ``pathlib.Path`` whose :meth:`client` records the real server to it or replays it.

    What :meth:`client` does follows ``--mcp-record``: ``none`` replays (a missing cassette fails the test,
    naming the path), ``once`` records when the cassette is missing and replays otherwise, ``all`` records. A
    recording becomes the cassette when its test passes (until then it is written to :attr:`partial`).
    """

    recording = False
    """Whether :meth:`client` records (``--mcp-record=all``, or ``once`` and no cassette yet) rather than replays."""
    _recorded = False

    def client(
        self,
        url_or_command: str | Sequence[str],
        *,
        mode: str = "any",
        faults: Sequence[Fault] = (),
        **options: Any,
    ) -> Client:
        """An unentered ``mcpfsm.Client`` for the server ``url_or_command``: recording it here, or replaying this file.

        ``url_or_command`` is an ``http(s)://`` URL, or a command (a list, or a string split like a shell) that
        serves MCP on stdio. ``options`` are those of ``Client.http`` or ``Client.stdio`` (``on_event=``,
        ``protocol=``, ``auth=``...); when replaying, those that describe the connection (``headers``, ``auth``,
        ``timeout``, TLS, ``env``, ``cwd``...) are dropped. ``mode`` and ``faults`` are those of
        :func:`mcpfsm.testing.replay` and apply to a replay.

        Use it with ``async with``. A test records one client at most (a second would replace the first's
        cassette); it may replay as many as it likes.
        """
        if self.recording:
            if faults:
                pytest.fail(
                    f"faults apply to a replay, and {self} is being recorded: record it first without faults"
                    " (--mcp-record=once), then run the test again",
                    pytrace=False,
                )
            if self._recorded:
                pytest.fail(f"{self} already records a client of this test: one cassette records one client")
            self._recorded = True
            self.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(url_or_command, str) and _URL.match(url_or_command):
                return Client.http(url_or_command, record=self.partial, **options)
            command = shlex.split(url_or_command) if isinstance(url_or_command, str) else list(url_or_command)
            return Client.stdio(command, record=self.partial, **options)
        if not self.exists():
            pytest.fail(
                f"no cassette at {self}: record it once against the real server with --mcp-record=once",
                pytrace=False,
            )
        kept = {name: value for name, value in options.items() if name not in CONNECTION_OPTIONS}
        return Client(replay(self, mode=mode, faults=faults), **kept)

    @property
    def partial(self) -> Path:
        """Where a recording goes until its test passes: ``{name}.jsonl.part`` beside the cassette."""
        return Path(f"{self}.part")

    def finish(self, *, failed: bool) -> None:
        """After the test: a recording whose test passed becomes the cassette; one whose test failed is dropped.

        So a failed ``--mcp-record=all`` keeps the cassette recorded before, and ``once`` records it again next time.
        """
        if not self._recorded:
            return
        partial = self.partial
        if failed or not partial.exists():
            partial.unlink(missing_ok=True)
        else:
            os.replace(partial, self)


def cassette_for(request: pytest.FixtureRequest) -> CassettePath:
    """The ``mcp_cassette`` of the test behind ``request``."""
    cassette = CassettePath(cassette_path(Path(str(request.node.path)), request.node.name))
    mode = request.config.getoption("mcp_record")
    cassette.recording = mode == "all" or (mode == "once" and not cassette.exists())
    return cassette
