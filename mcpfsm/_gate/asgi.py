"""ASGI plumbing for the gate: a request body read under its cap, replayed to the app, and plain answers.

The ASGI 3 interface (asgiref's specification, "HTTP"): ``scope`` a dict, ``receive`` and ``send`` coroutines of
message dicts. Nothing here names an event loop, so it runs under asyncio and trio alike.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from typing import Any, Final

__all__ = [
    "App",
    "BodyTooLarge",
    "ClientGone",
    "Message",
    "Receive",
    "Scope",
    "Send",
    "answer",
    "read_body",
    "replayed",
]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

_JSON: Final = (b"content-type", b"application/json")


class BodyTooLarge(Exception):
    """The request body is longer than the cap (413); nothing past the cap was kept."""


class ClientGone(Exception):
    """The client went away before its request body was complete."""


async def read_body(receive: Receive, limit: int, declared: bytes | None) -> bytes:
    """The whole request body, at most ``limit`` bytes.

    ``declared`` is the request's ``Content-Length`` value: a body declared longer than ``limit`` is refused before
    any of it is read.

    Raises:
        BodyTooLarge: the body is (or is declared) longer than ``limit``.
        ClientGone: the client disconnected before the end of the body.
    """
    if declared is not None and declared.strip().isdigit() and int(declared) > limit:
        raise BodyTooLarge
    message = await receive()
    if message["type"] == "http.disconnect":
        raise ClientGone
    body = message.get("body", b"")
    if not message.get("more_body", False):
        if len(body) > limit:
            raise BodyTooLarge
        return body if type(body) is bytes else bytes(body)  # one message: the very bytes, no copy
    pieces = [body]
    size = len(body)
    while message.get("more_body", False):
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientGone
        piece = message.get("body", b"")
        size += len(piece)
        if size > limit:
            raise BodyTooLarge
        pieces.append(piece)
    return b"".join(pieces)


def replayed(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that gives ``body`` as the whole request, then whatever ``receive`` gives (a disconnect)."""
    pending = True

    async def replay() -> Message:
        nonlocal pending
        if pending:
            pending = False
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


async def answer(send: Send, status: int, body: bytes, headers: Sequence[tuple[bytes, bytes]] = (_JSON,)) -> None:
    """Send a whole response: ``status``, ``headers`` (default ``Content-Type: application/json``) and ``body``."""
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [*headers, (b"content-length", str(len(body)).encode("ascii"))],
        }
    )
    await send({"type": "http.response.body", "body": body, "more_body": False})
