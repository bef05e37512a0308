"""Reading a response body: content decoding (gzip, deflate) and the ``max_response_bytes`` limit, on both paths.

``max_response_bytes`` bounds a JSON body and one event of a stream, counted after decoding; beyond it the
request fails, nothing more is buffered and the connection is closed.
"""

from __future__ import annotations

from ..._core.content_coding import BodyTooLarge, ContentDecodeError, ContentDecoder
from ..._core.errors import ProtocolError
from ..pool import HttpResponse, WireReply
from .errors import mapped, raise_mapped, too_large
from .httpx_route import HttpxResponse

__all__ = ["abort", "decoder", "media_type", "read_body"]


def media_type(response: HttpResponse) -> str:
    """The media type of ``response`` (``Content-Type`` without parameters, lowercase; empty for none)."""
    content_type = response.headers.get("content-type", "")
    return content_type.partition(";")[0].strip().lower()


def decoder(response: HttpResponse, *, limit: int | None) -> ContentDecoder:
    """The decoder of ``response``'s ``Content-Encoding`` (none for a body httpx has already decoded).

    Raises:
        ProtocolError: a coding mcpfsm does not decode.
    """
    decoded = isinstance(response, HttpxResponse) and response.decoded
    coding = None if decoded else response.headers.get("content-encoding")
    try:
        return ContentDecoder(coding, limit=limit)
    except ContentDecodeError as exc:
        raise ProtocolError(str(exc)) from exc


async def abort(response: HttpResponse) -> None:
    """Close ``response``'s connection without reading further (a body over the limit)."""
    with mapped("closing HTTP response"):
        await response.abort()


async def read_body(
    response: HttpResponse, limit: int, *, what: str = "reading HTTP response", keep: bool = False
) -> bytes:
    """The whole body of ``response``, decoded, at most ``limit`` bytes.

    ``keep``: a pooled reply keeps its connection after the body (``WireReply.read``), until it is released.

    Raises:
        TransportError: the body is beyond ``limit`` (the connection is closed), or reading it failed.
        ProtocolError: the body's coding is unknown or broken.
    """
    length = response.headers.get("content-length", "")
    identity = "content-encoding" not in response.headers
    if identity and length.isdigit() and int(length) > limit:
        await abort(response)
        raise too_large(f"the server's answer (Content-Length {length})", limit)
    if identity and length.isdigit() and isinstance(response, WireReply):
        # Hot path (bench/instructions.py): no coding, and a length within the limit that framing holds the body
        # to: nothing to decode or count.
        try:
            return await response.read(keep=keep)
        except Exception as exc:
            raise_mapped(what, exc)
            raise
    body = decoder(response, limit=limit)
    pieces: list[bytes] = []
    # A pooled reply kept (its request id is checked once decoded) keeps its connection after the last chunk too.
    chunks = response.chunks(keep=True) if keep and isinstance(response, WireReply) else response.chunks()
    try:
        with mapped(what):
            async for chunk in chunks:
                pieces.extend(body.decode(chunk))
            pieces.extend(body.finish())
    except BodyTooLarge as exc:
        await abort(response)
        raise too_large("the server's answer", limit) from exc
    except ContentDecodeError as exc:
        raise ProtocolError(str(exc)) from exc
    return pieces[0] if len(pieces) == 1 else b"".join(pieces)
