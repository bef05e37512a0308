"""Reading a cassette file, and the in-process replay (docs/testing.md)."""

from __future__ import annotations

import os
from collections.abc import Sequence

from .._core.cassette import Cassette, parse_cassette
from .._core.errors import CassetteError
from .._core.faults import Fault
from .._core.replay import ReplayBook
from .._transports.replay import ReplayTransport

__all__ = ["book_for", "load", "replay"]


def load(path: str | os.PathLike[str]) -> Cassette:
    """Read and check the cassette at ``path``.

    Raises:
        CassetteError: the file cannot be read, is empty, is of an unknown version, or has a malformed line
            (the message names the file and the line).
    """
    source = os.fspath(path)
    try:
        with open(source, "rb") as file:
            content = file.read()
    except OSError as exc:
        raise CassetteError(f"{source}: cannot be read: {exc.strerror or exc}") from None
    return parse_cassette(content.split(b"\n"), source=source)


def book_for(
    path: str | os.PathLike[str], *, mode: str, faults: Sequence[Fault], transport: str | None = None
) -> ReplayBook:
    """The :class:`~mcpfsm._core.replay.ReplayBook` of the cassette at ``path``, checked before anything is served.

    ``transport`` (``"http"`` or ``"stdio"``) is what it is to be served on; ``None``: either.

    Raises:
        CassetteError: as :func:`load`, or the cassette was recorded on the other transport.
        ValueError: ``mode`` or ``faults`` are not valid for it.
    """
    cassette = load(path)
    if transport is not None and cassette.transport != transport:
        recorded = "over HTTP" if cassette.transport == "http" else "over stdio"
        raise CassetteError(
            f"{cassette.source}: recorded {recorded}, so it cannot be served over {transport}"
            + (" (replay it with --stdio, or in process)" if cassette.transport == "stdio" else "")
        )
    return ReplayBook(cassette, mode=mode, faults=tuple(faults))


def replay(path: str | os.PathLike[str], *, mode: str = "any", faults: Sequence[Fault] = ()) -> ReplayTransport:
    """A transport that answers from the cassette at ``path``, in process: use it as ``mcpfsm.Client(replay(path))``.

    It opens no connection. An HTTP cassette is replayed as HTTP (the client mirrors ``x-mcp-header`` arguments
    and the replay checks them as the recorded server did), a stdio cassette as stdio. Requests match recorded
    exchanges by method, params and (HTTP) ``Mcp-Method``/``Mcp-Name``; ``mode="strict"`` also wants the recorded
    order; ``faults`` (:func:`mismatch_once` and the other helpers) make things go wrong on purpose. Where a fault
    drops a request or answers with an HTTP status and no JSON-RPC body, the client sees what the HTTP transport
    raises for the same event.

    Raises:
        CassetteError: the file cannot be read, is of an unknown version, or has a malformed line (named), before
            anything is served.
        ValueError: ``mode`` is not ``"any"`` or ``"strict"``, or a fault needs HTTP on a stdio cassette.
    """
    return ReplayTransport(book_for(path, mode=mode, faults=faults))
