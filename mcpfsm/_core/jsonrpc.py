"""JSON-RPC 2.0 framing for MCP (pure: no I/O).

Encodes requests and notifications, and classifies one decoded message from the peer as a
:class:`Response`, :class:`Notification` or server-to-client :class:`Request`. Anything that is
not valid JSON-RPC raises :class:`~mcpfsm.ProtocolError` naming what was wrong, so a malformed
reply never surfaces as an unrelated ``KeyError`` or ``TypeError``.

JSON lets a string escape half of a UTF-16 surrogate pair (U+D800 to U+DFFF alone), which is no Unicode
text (RFC 8259 §8.2: "unpredictable"); UTF-8 cannot carry it, so a cursor, a ``requestState`` or a name
holding one could never be sent back. :func:`decode_message` refuses such a message as a
:class:`~mcpfsm.ProtocolError`, and the encoders refuse such a string of the caller's as a ``ValueError``,
instead of a ``UnicodeEncodeError`` at the transport.
"""

# No `from __future__ import annotations` here: the records' fields are read as the objects they are, not compiled
# from their text as a NamedTuple of string annotations has typing do at `import mcpfsm` (bench/startup.py).

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, NamedTuple

from .constants import CLIENT_CAPABILITIES_KEY, CLIENT_INFO_KEY, PROTOCOL_VERSION_KEY
from .errors import ProtocolError, RpcError, rpc_error

__all__ = [
    "Message",
    "Notification",
    "Request",
    "Response",
    "decode_message",
    "encode_error",
    "encode_notification",
    "EncodedMeta",
    "encode_request",
    "encode_request_with_meta",
    "encoded_meta",
    "encode_result",
    "holds_lone_surrogate",
    "modern_meta",
    "outgoing_request",
    "outgoing_request_id",
    "parse_message",
    "success_result",
]


# Compiled with its first use (re keeps it): a message a caller hands a transport directly is rare.
_REQUEST_HEAD: Final = r'\{"jsonrpc":"2\.0","id":(-?(?:0|[1-9][0-9]{0,17})),"method":"([^"\\]*)"[,}]'
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
# json's C encoder factory (None where json runs without its accelerator); typeshed does not declare it.
_C_MAKE_ENCODER: Callable[..., Callable[[Any, int], Any]] | None = getattr(json.encoder, "c_make_encoder", None)
_DEFAULT = _ENCODER.default
_STRING = json.encoder.encode_basestring  # ensure_ascii=False


# The C encoder behind its self-check: every request and answer is encoded (bench/layer.py, bench/instructions.py).
def _one_shot(message: Mapping[str, Any]) -> str:
    # What _ENCODER.encode(message) does for an object with json's C encoder (json.encoder.JSONEncoder.iterencode,
    # its one-shot branch: the same factory, the same arguments, new circular-reference markers per message),
    # without encode's and iterencode's two Python frames: every request and answer is encoded here.
    make = _C_MAKE_ENCODER
    assert make is not None
    chunks = make({}, _DEFAULT, _STRING, None, ":", ",", False, False, False)(message, 0)
    return "".join(chunks)


def _checked_one_shot() -> Callable[[Mapping[str, Any]], str]:
    # _one_shot where json has its C encoder and its factory takes the arguments iterencode passes it here:
    # checked once on a sample, so a json that differs falls back to JSONEncoder.encode instead of failing.
    sample = {"a": [1, 2.5, None, True, "é\n"], "b": {}}
    try:
        if _C_MAKE_ENCODER is not None and _one_shot(sample) == _ENCODER.encode(sample):
            return _one_shot
    except TypeError:
        pass
    return _ENCODER.encode


_dumps = _checked_one_shot()
# Compiled on first use (re keeps it): a lone surrogate is rare, and this class costs more to compile than any
# other pattern mcpfsm has.
_SURROGATE: Final = "[\ud800-\udfff]"
_ESCAPE: Final = r"\\u[dD][89a-fA-F]"  # compiled with its first use, as _SURROGATE
_BOM = b"\xef\xbb\xbf"
# What json.loads ends in: the documented JSONDecoder.raw_decode, reading the document at the start of a text.
_raw_decode = json.JSONDecoder().raw_decode
_LONE = "peer sent a string holding a lone UTF-16 surrogate, which is no Unicode text (RFC 8259 §8.2)"


class Response(NamedTuple):
    """A response to one of our requests: ``result`` or ``error``, never both."""

    id: int | str | None
    result: dict[str, Any] | None = None
    error: RpcError | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Notification:
    """A message from the peer that expects no answer (progress, log messages, …)."""

    method: str
    params: dict[str, Any]


class Request(NamedTuple):
    """A server-to-client request (``ping``, sampling, elicitation, roots)."""

    id: int | str
    method: str
    params: dict[str, Any]


Message = Response | Notification | Request


def modern_meta(
    protocol_version: str, client_info: Mapping[str, str], capabilities: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The ``params._meta`` every modern request carries (MCP 2026-07-28, "Request Metadata").

    ``capabilities`` is the full ``ClientCapabilities`` object, the same on every request (``{}`` when
    the client offers nothing): servers infer nothing from earlier requests.
    """
    return {
        PROTOCOL_VERSION_KEY: protocol_version,
        CLIENT_CAPABILITIES_KEY: dict(capabilities or {}),
        CLIENT_INFO_KEY: dict(client_info),
    }


def encode_request(request_id: int | str, method: str, params: Mapping[str, Any] | None) -> str:
    """Serialise a JSON-RPC request.

    Raises:
        ValueError: ``params`` holds something JSON cannot carry (nan, inf, non-str keys, objects, a
            string with a lone UTF-16 surrogate).
    """
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return _encode(message)


EncodedMeta = tuple[dict[str, Any], str]
"""A ``params._meta`` object every request of a session carries, and its JSON text (:func:`encoded_meta`)."""


def encoded_meta(meta: dict[str, Any]) -> EncodedMeta:
    """``meta`` with its JSON text, for :func:`encode_request_with_meta`.

    Raises:
        ValueError: ``meta`` holds something JSON cannot carry.
    """
    return meta, _encode(meta)


def encode_request_with_meta(request_id: int, method: str, params: Mapping[str, Any] | None, meta: EncodedMeta) -> str:
    """The text of ``encode_request(request_id, method, {**params, "_meta": meta[0]})``, ``meta[0]`` encoded once.

    MCP 2026-07-28 "Request Metadata": every modern request carries the same ``_meta`` (version, capabilities,
    client info), about two thirds of a tool call's request text. Its text is spliced in rather than encoded
    again (bench/repeatable.py). Params that carry a ``_meta`` of their own, or are no plain dict, are encoded
    whole, with the two merged (``meta`` last).

    Raises:
        ValueError: ``params`` holds something JSON cannot carry (as :func:`encode_request`).
    """
    if params is None:
        params = {}
    elif type(params) is not dict or "_meta" in params:
        own = params.get("_meta")
        common = meta[0]
        merged = {**params, "_meta": {**own, **common} if isinstance(own, Mapping) else common}
        return encode_request(request_id, method, merged)
    body = _encode(params)
    # The params object without its closing brace, then the _meta member: what the encoder writes for the merge.
    return "".join(
        (
            '{"jsonrpc":"2.0","id":',
            str(request_id),
            ',"method":',
            _STRING(method),
            ',"params":',
            body[:-1],
            ',"_meta":' if len(body) > 2 else '"_meta":',
            meta[1],
            "}}",
        )
    )


def encode_notification(method: str, params: Mapping[str, Any] | None = None) -> str:
    """Serialise a JSON-RPC notification (no id)."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return _encode(message)


def encode_result(request_id: int | str, result: Mapping[str, Any]) -> str:
    """Serialise our answer to a server-to-client request."""
    return _encode({"jsonrpc": "2.0", "id": request_id, "result": result})


def encode_error(request_id: int | str | None, code: int, message: str) -> str:
    """Serialise a JSON-RPC error answer to a server-to-client request."""
    return _encode({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}})


def _encode(message: Mapping[str, Any]) -> str:
    try:
        text = _dumps(message)
    except (TypeError, ValueError, RecursionError) as exc:
        raise ValueError(f"cannot encode JSON-RPC message as JSON: {exc}") from exc
    # str.isascii() is a flag check: only text with non-ASCII characters is tried, by the encoder itself.
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError(
                "cannot encode JSON-RPC message: a string holds a lone UTF-16 surrogate, which UTF-8 cannot carry"
            ) from None
    return text


def outgoing_request_id(message: str) -> int | str | None:
    """The id of a JSON-RPC request we are about to send, or ``None`` for a notification (or non-JSON).

    Transports use it to match the response on a stream that carries other messages too.
    """
    return outgoing_request(message)[0]


def outgoing_request(message: str) -> tuple[int | str | None, str | None]:
    """``(id, method)`` of a JSON-RPC message we are about to send.

    A request gives both; a notification ``(None, method)``; a response of ours or non-JSON
    ``(None, None)``. The HTTP transport reads the method to know whether it may resend the message
    after a connection failure (RFC 9110 §9.2.2), without widening the transport contract.
    """
    # What encode_request writes starts like this: no need to parse the arguments to know.
    head = re.match(_REQUEST_HEAD, message)
    if head is not None:
        return int(head[1]), head[2]
    try:
        payload = json.loads(message)
    except ValueError:
        return None, None
    if not isinstance(payload, dict):
        return None, None
    method = payload.get("method")
    if not isinstance(method, str):
        return None, None
    request_id = payload.get("id")
    if isinstance(request_id, int | str) and not isinstance(request_id, bool):
        return request_id, method
    return None, method


def decode_message(text: str | bytes) -> Any:
    """Decode JSON text from the peer: UTF-8 bytes (a leading BOM is skipped), or text decoded from them.

    Raises:
        ProtocolError: the text is not UTF-8 JSON, or a string in it holds a lone UTF-16 surrogate.
    """
    try:
        if isinstance(text, str):
            if not text.isascii():
                text.encode("utf-8")  # only a surrogate code point fails: not Unicode text
        else:
            # Strict UTF-8, as MCP messages are (json.loads on bytes would let surrogates through). The
            # "utf-8-sig" codec costs ten times "utf-8": it is used only when there is a BOM to skip.
            text = text.decode("utf-8-sig") if text.startswith(_BOM) else text.decode("utf-8")
        value = _loads(text)
    except UnicodeEncodeError as exc:
        raise ProtocolError(_LONE) from exc
    except (ValueError, RecursionError) as exc:
        raise ProtocolError(f"peer sent invalid JSON: {exc}") from exc
    # An escaped lone surrogate decodes to a str that no encoder takes back: find one (a \u escape is rare
    # in most answers, unlike an escaped quote, and finding the first is a fast substring search), then walk
    # the value only on a hit.
    escape = text.find("\\u")
    if escape >= 0 and re.compile(_ESCAPE).search(text, escape) and holds_lone_surrogate(value):
        raise ProtocolError(_LONE)
    return value


def _loads(text: str) -> Any:
    # json.loads(text), two Python frames and two whitespace matches shorter (bench/layer.py) for a document
    # with nothing around it. Anything else (whitespace around it, extra data, a BOM, invalid JSON) goes through
    # json.loads itself: the same value, or json's own error.
    try:
        value, end = _raw_decode(text)
    except ValueError:
        return json.loads(text)
    if end != len(text):
        return json.loads(text)
    return value


def holds_lone_surrogate(value: Any) -> bool:
    """Tell whether a decoded JSON value holds a string (or key) with a lone UTF-16 surrogate.

    Iterative, so a deeply nested value cannot exhaust the stack.
    """
    surrogate = re.compile(_SURROGATE).search
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            if surrogate(item):
                return True
        elif isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return False


def success_result(payload: Any, request_id: int) -> dict[str, Any] | None:
    """The ``result`` of ``payload`` when it is a successful response to request ``request_id``, else ``None``.

    The checks :func:`parse_message` makes of such a response, and the id match, without building a
    :class:`Response`: the answer to nearly every request. ``None`` says nothing is wrong; the caller parses
    the payload with :func:`parse_message`, which does say what is (a ``"method"`` or ``"error"`` member
    present, even ``null``, also goes that way).
    """
    if type(payload) is not dict or payload.get("jsonrpc") != "2.0" or "method" in payload or "error" in payload:
        return None
    response_id = payload.get("id")
    result = payload.get("result")
    # type() is int, not isinstance: a JSON true is no id, although True == 1.
    if type(response_id) is not int or response_id != request_id or type(result) is not dict:
        return None
    return result


def parse_message(payload: Any) -> Message:
    """Classify one decoded JSON-RPC message from the peer.

    Raises:
        ProtocolError: the value is not a JSON-RPC 2.0 response, notification or request.
    """
    if not isinstance(payload, dict):
        raise ProtocolError(f"peer sent a JSON {type(payload).__name__}, not a JSON-RPC message object")
    if payload.get("jsonrpc") != "2.0":
        raise ProtocolError('peer message lacks "jsonrpc": "2.0"')
    method = payload.get("method")
    if method is not None:
        if not isinstance(method, str):
            raise ProtocolError('peer message has a non-string "method"')
        params = payload.get("params", {})
        if params is None:
            params = {}
        if not isinstance(params, dict):
            raise ProtocolError(f"peer message {method!r} has non-object params")
        if "id" in payload:
            request_id = payload["id"]
            if not isinstance(request_id, int | str) or isinstance(request_id, bool):
                raise ProtocolError(f"peer request {method!r} has an invalid id")
            return Request(id=request_id, method=method, params=params)
        return Notification(method=method, params=params)
    if "id" not in payload:
        raise ProtocolError('peer message has neither "method" nor "id"')
    response_id = payload["id"]
    if response_id is not None and (not isinstance(response_id, int | str) or isinstance(response_id, bool)):
        raise ProtocolError("peer response has an invalid id")
    if "error" in payload:
        error = payload["error"]
        if not isinstance(error, dict):
            raise ProtocolError('peer error response has a non-object "error"')
        code = error.get("code")
        message = error.get("message", "")
        if not isinstance(code, int) or isinstance(code, bool):
            raise ProtocolError("peer error response has a non-integer error code")
        if not isinstance(message, str):
            message = str(message)
        return Response(id=response_id, error=rpc_error(code, message, error.get("data")))
    if "result" not in payload:
        raise ProtocolError('peer response has neither "result" nor "error"')
    result = payload["result"]
    if not isinstance(result, dict):
        raise ProtocolError('peer response "result" is not an object')
    return Response(id=response_id, result=result)
