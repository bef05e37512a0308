"""JSON-RPC framing (pure): every malformed peer message is a ProtocolError naming what was wrong."""

from __future__ import annotations

import json
import math
import re
from typing import Any, Final

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpfsm import HeaderMismatchError, ProtocolError, RpcError
from mcpfsm._core import jsonrpc
from mcpfsm._core.jsonrpc import (
    Notification,
    Request,
    Response,
    decode_message,
    encode_notification,
    encode_request,
    outgoing_request,
    outgoing_request_id,
    parse_message,
    success_result,
)


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        pytest.param({"jsonrpc": "2.0", "id": 1, "result": {"x": 1}}, Response(id=1, result={"x": 1}), id="result"),
        pytest.param({"jsonrpc": "2.0", "id": "a", "result": {}}, Response(id="a", result={}), id="string-id"),
        pytest.param(
            {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}},
            Notification(method="notifications/progress", params={"progress": 1}),
            id="notification",
        ),
        pytest.param(
            {"jsonrpc": "2.0", "method": "notifications/initialized", "params": None},
            Notification(method="notifications/initialized", params={}),
            id="notification-null-params",
        ),
        pytest.param(
            {"jsonrpc": "2.0", "id": 7, "method": "ping"}, Request(id=7, method="ping", params={}), id="server-request"
        ),
    ],
)
def test_valid_messages(payload: Any, expected: Any) -> None:
    assert parse_message(payload) == expected


def test_error_responses_become_typed_errors() -> None:
    parsed = parse_message({"jsonrpc": "2.0", "id": 3, "error": {"code": -32020, "message": "m", "data": {"a": 1}}})
    assert isinstance(parsed, Response) and isinstance(parsed.error, HeaderMismatchError)
    assert (parsed.error.code, parsed.error.message, parsed.error.data) == (-32020, "m", {"a": 1})
    other = parse_message({"jsonrpc": "2.0", "id": None, "error": {"code": -32601, "message": "nope"}})
    assert isinstance(other, Response) and type(other.error) is RpcError and other.id is None


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        pytest.param([1, 2], "peer sent a JSON list, not a JSON-RPC message object", id="array"),
        pytest.param({"id": 1, "result": {}}, 'peer message lacks "jsonrpc": "2.0"', id="no-jsonrpc"),
        pytest.param({"jsonrpc": "2.0", "method": 5}, 'peer message has a non-string "method"', id="method-type"),
        pytest.param(
            {"jsonrpc": "2.0", "method": "m", "params": [1]}, "peer message 'm' has non-object params", id="params"
        ),
        pytest.param({"jsonrpc": "2.0", "id": True, "method": "m"}, "peer request 'm' has an invalid id", id="bool-id"),
        pytest.param({"jsonrpc": "2.0"}, 'peer message has neither "method" nor "id"', id="empty"),
        pytest.param({"jsonrpc": "2.0", "id": 1.5, "result": {}}, "peer response has an invalid id", id="float-id"),
        pytest.param(
            {"jsonrpc": "2.0", "id": 1, "error": "x"}, 'peer error response has a non-object "error"', id="error"
        ),
        pytest.param(
            {"jsonrpc": "2.0", "id": 1, "error": {"code": "x"}},
            "peer error response has a non-integer error code",
            id="error-code",
        ),
        pytest.param({"jsonrpc": "2.0", "id": 1}, 'peer response has neither "result" nor "error"', id="no-result"),
        pytest.param(
            {"jsonrpc": "2.0", "id": 1, "result": [1]}, 'peer response "result" is not an object', id="result"
        ),
    ],
)
def test_malformed_messages(payload: Any, message: str) -> None:
    with pytest.raises(ProtocolError) as caught:
        parse_message(payload)
    assert str(caught.value) == message


def test_invalid_json_is_a_protocol_error() -> None:
    with pytest.raises(ProtocolError, match=r"^peer sent invalid JSON: "):
        decode_message(b"<html>")
    with pytest.raises(ProtocolError, match=r"^peer sent invalid JSON: "):
        decode_message("[" * 100_000 + "]" * 100_000)


LONE: Final = r"^peer sent a string holding a lone UTF-16 surrogate, which is no Unicode text \(RFC 8259 §8\.2\)$"


@pytest.mark.parametrize(
    "text",
    [
        pytest.param('{"nextCursor":"\\ud800"}', id="escaped-high"),
        pytest.param('{"requestState":"a\\uDC00b"}', id="escaped-low-uppercase"),
        pytest.param('{"x":["\\ude00\\ud83d"]}', id="pair-in-the-wrong-order"),
        pytest.param('{"\\ud800":1}', id="in-a-key"),
        pytest.param(b'{"x":"\\ud800"}', id="escaped-in-bytes"),
        pytest.param('{"x":"\ud800"}', id="raw-in-text"),
        pytest.param("[" * 500 + '"\\ud800"' + "]" * 500, id="deep"),
    ],
)
def test_a_lone_surrogate_is_a_protocol_error_when_decoded(text: str | bytes) -> None:
    with pytest.raises(ProtocolError, match=LONE):
        decode_message(text)


def test_bytes_are_strict_utf8_so_an_encoded_surrogate_is_invalid() -> None:
    # RFC 3629 §3: the UTF-8 of a surrogate code point is ill-formed (json.loads alone would pass it through).
    with pytest.raises(
        ProtocolError,
        match=r"^peer sent invalid JSON: 'utf-8' codec can't decode byte 0xed in position 6: invalid continuation"
        r" byte$",
    ):
        decode_message(b'{"x":"\xed\xa0\x80"}')
    assert decode_message(b'\xef\xbb\xbf{"x":"caf\xc3\xa9"}') == {"x": "caf\u00e9"}


@pytest.mark.parametrize(
    ("text", "value"),
    [
        pytest.param('{"x":"\\ud83d\\ude00"}', {"x": "\U0001f600"}, id="escaped-pair"),
        pytest.param(b'{"x":"\\ud83d\\ude00"}', {"x": "\U0001f600"}, id="escaped-pair-bytes"),
        pytest.param('{"x":"\\\\ud800"}', {"x": "\\ud800"}, id="an-escaped-backslash-is-no-escape"),
        pytest.param('{"x":"\ud55c"}'.encode(), {"x": "\ud55c"}, id="hangul-starts-with-ed"),
    ],
)
def test_surrogate_pairs_and_look_alikes_decode(text: str | bytes, value: Any) -> None:
    assert decode_message(text) == value


def test_a_lone_surrogate_of_the_caller_is_refused_before_sending() -> None:
    with pytest.raises(
        ValueError,
        match=r"^cannot encode JSON-RPC message: a string holds a lone UTF-16 surrogate, which UTF-8 cannot carry$",
    ):
        encode_request(1, "tools/call", {"arguments": {"x": "\ud800"}})
    assert encode_request(1, "tools/call", {"x": "\U0001f600"}) == (
        '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"x":"\U0001f600"}}'
    )


def test_arguments_json_cannot_carry_are_refused_before_sending() -> None:
    with pytest.raises(ValueError, match=r"^cannot encode JSON-RPC message as JSON: "):
        encode_request(1, "tools/call", {"arguments": {"x": math.nan}})


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        pytest.param('{"jsonrpc":"2.0","id":4,"method":"tools/call"}', 4, id="request"),
        pytest.param('{"jsonrpc":"2.0","id":"r-1","method":"ping"}', "r-1", id="string-id"),
        pytest.param('{"jsonrpc":"2.0","method":"notifications/cancelled"}', None, id="notification"),
        pytest.param('{"jsonrpc":"2.0","id":4,"result":{}}', None, id="our-answer-to-the-server"),
        pytest.param('{"jsonrpc":"2.0","id":true,"method":"m"}', None, id="bool-id"),
        pytest.param("not json", None, id="not-json"),
    ],
)
def test_outgoing_request_id(message: str, expected: object) -> None:
    assert outgoing_request_id(message) == expected


@given(
    request_id=st.integers(-(10**18), 10**18) | st.text(max_size=5),
    method=st.text(max_size=20),
    params=st.none() | st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=3),
)
def test_outgoing_request_reads_id_and_method_as_json_does(request_id: Any, method: str, params: Any) -> None:
    # The fast path for encode_request's own output must agree with parsing the whole message.
    for message in (encode_request(request_id, method, params), encode_notification(method, params)):
        payload = json.loads(message)
        assert outgoing_request(message) == (payload.get("id"), payload["method"])


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        pytest.param('{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{}}', (4, "tools/call"), id="request"),
        pytest.param('{"method":"ping","id":"x","jsonrpc":"2.0"}', ("x", "ping"), id="other-order"),
        pytest.param('{"jsonrpc":"2.0","method":"notifications/x"}', (None, "notifications/x"), id="notification"),
        pytest.param('{"jsonrpc":"2.0","id":4,"result":{}}', (None, None), id="our-answer"),
        pytest.param('{"jsonrpc":"2.0","id":1,"method":7}', (None, None), id="method-not-a-string"),
        pytest.param("[1]", (None, None), id="not-an-object"),
        pytest.param("not json", (None, None), id="not-json"),
    ],
)
def test_outgoing_request_cases(message: str, expected: tuple[object, object]) -> None:
    assert outgoing_request(message) == expected


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        pytest.param({"jsonrpc": "2.0", "id": 7, "result": {"x": 1}}, {"x": 1}, id="success"),
        pytest.param({"jsonrpc": "2.0", "id": 8, "result": {}}, None, id="other-id"),
        pytest.param({"jsonrpc": "2.0", "id": "7", "result": {}}, None, id="string-id"),
        pytest.param({"jsonrpc": "2.0", "id": 7.0, "result": {}}, None, id="float-id"),
        pytest.param({"jsonrpc": "2.0", "id": True, "result": {}}, None, id="bool-id"),
        pytest.param({"jsonrpc": "2.0", "id": None, "result": {}}, None, id="null-id"),
        pytest.param({"jsonrpc": "2.0", "result": {}}, None, id="no-id"),
        pytest.param({"jsonrpc": "2.1", "id": 7, "result": {}}, None, id="version"),
        pytest.param({"id": 7, "result": {}}, None, id="no-version"),
        pytest.param({"jsonrpc": "2.0", "id": 7, "result": []}, None, id="list-result"),
        pytest.param({"jsonrpc": "2.0", "id": 7}, None, id="no-result"),
        pytest.param({"jsonrpc": "2.0", "id": 7, "result": {}, "error": None}, None, id="error-member"),
        pytest.param({"jsonrpc": "2.0", "id": 7, "result": {}, "method": None}, None, id="method-member"),
        pytest.param([{"jsonrpc": "2.0", "id": 7, "result": {}}], None, id="batch"),
    ],
)
def test_success_result_takes_only_a_plain_success_to_the_request(payload: Any, expected: Any) -> None:
    assert success_result(payload, 7) == expected
    if expected is not None:
        # What it takes, parse_message reads as the same successful response.
        assert parse_message(payload) == Response(id=7, result=expected)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param('{"a":1}', {"a": 1}, id="bare"),
        pytest.param(' \n{"a":1}\r\n ', {"a": 1}, id="whitespace-around"),
        pytest.param("[1,2]", [1, 2], id="array"),
    ],
)
def test_decode_message_reads_what_json_loads_reads(text: str, expected: Any) -> None:
    assert decode_message(text) == expected == json.loads(text)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param('{"a":1} x', r"^peer sent invalid JSON: Extra data: line 1 column 9 \(char 8\)$", id="extra"),
        pytest.param('\ufeff{"a":1}', r"^peer sent invalid JSON: Unexpected UTF-8 BOM .*$", id="bom-text"),
        pytest.param('{"a":}', r"^peer sent invalid JSON: Expecting value: line 1 column 6 \(char 5\)$", id="value"),
        pytest.param("", r"^peer sent invalid JSON: Expecting value: line 1 column 1 \(char 0\)$", id="empty"),
    ],
)
def test_decode_message_refuses_what_json_loads_refuses_with_its_message(text: str, message: str) -> None:
    with pytest.raises(ProtocolError, match=message):
        decode_message(text)


_JSON_VALUES: Final = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


def test_requests_are_encoded_by_the_one_shot_c_encoder() -> None:
    # The fast path is the one in use on CPython (the tests below compare it with JSONEncoder.encode).
    assert jsonrpc._dumps is jsonrpc._one_shot


@given(params=st.dictionaries(st.text(max_size=8), _JSON_VALUES, max_size=5))
def test_one_shot_encoding_equals_the_json_encoder(params: dict[str, Any]) -> None:
    message = {"jsonrpc": "2.0", "id": 1, "method": "m", "params": params}
    assert jsonrpc._one_shot(message) == jsonrpc._ENCODER.encode(message)


@pytest.mark.parametrize(
    "params",
    [
        pytest.param({"x": math.nan}, id="nan"),
        pytest.param({"x": object()}, id="object"),
        pytest.param({"x": math.inf}, id="inf"),
        pytest.param({(1, 2): "x"}, id="tuple-key"),
        pytest.param({"x": {"y": [1, {2}]}}, id="set-deep"),
    ],
)
def test_one_shot_encoding_refuses_what_the_json_encoder_refuses(params: dict[Any, Any]) -> None:
    message = {"jsonrpc": "2.0", "id": 1, "method": "m", "params": params}
    with pytest.raises((TypeError, ValueError)) as expected:
        jsonrpc._ENCODER.encode(message)
    with pytest.raises(type(expected.value), match=f"^{re.escape(str(expected.value))}$"):
        jsonrpc._one_shot(message)


def test_one_shot_encoding_refuses_a_circular_message_as_the_json_encoder_does() -> None:
    params: dict[str, Any] = {}
    params["self"] = params
    message = {"jsonrpc": "2.0", "id": 1, "method": "m", "params": params}
    with pytest.raises(ValueError, match=r"^Circular reference detected$"):
        jsonrpc._one_shot(message)
    with pytest.raises(ValueError, match=r"^Circular reference detected$"):
        jsonrpc._ENCODER.encode(message)
    # New markers per message: the failed one leaves nothing behind.
    assert jsonrpc._one_shot({"a": 1}) == '{"a":1}'


_META: Final = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "x": {"é": [1, None]}}


@given(
    request_id=st.integers(min_value=0, max_value=2**53),
    method=st.text(max_size=12),
    params=st.none() | st.dictionaries(st.text(max_size=8), _JSON_VALUES, max_size=5),
    own=st.none() | st.dictionaries(st.text(max_size=8), _JSON_VALUES, max_size=3),
)
def test_a_request_with_the_session_meta_is_the_merged_request_encoded(
    request_id: int, method: str, params: dict[str, Any] | None, own: dict[str, Any] | None
) -> None:
    # The session's _meta text is spliced in, or merged after the params' own _meta: the same text as encoding the
    # merged params (the meta last, its keys over the params' own).
    if params is not None and own is not None:
        params["_meta"] = own
    merged = {**(params or {}), "_meta": {**(own or {}), **_META} if params is not None and own is not None else _META}
    text = jsonrpc.encode_request_with_meta(request_id, method, params, jsonrpc.encoded_meta(dict(_META)))
    assert text == encode_request(request_id, method, merged)
    assert json.loads(text) == {"jsonrpc": "2.0", "id": request_id, "method": method, "params": merged}


def test_a_request_with_the_session_meta_refuses_what_encode_request_refuses() -> None:
    meta = jsonrpc.encoded_meta({"v": 1})
    with pytest.raises(ValueError, match=r"^cannot encode JSON-RPC message as JSON: Out of range float values"):
        jsonrpc.encode_request_with_meta(1, "tools/call", {"arguments": {"x": math.nan}}, meta)
    with pytest.raises(ValueError, match=r"lone UTF-16 surrogate"):
        jsonrpc.encode_request_with_meta(1, "tools/call", {"arguments": {"x": "\ud800"}}, meta)
