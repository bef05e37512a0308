"""Header value codec: SEP-2243 encoding vectors, every character class, strict decoding, properties."""

from __future__ import annotations

import base64
import re

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from mcpfsm._core.codec import SENTINEL_PREFIX, SENTINEL_SUFFIX, decode_header_value, encode_header_value, is_literal
from mcpfsm._core.errors import HeaderDecodeError

# SEP-2243: nothing outside 0x21-0x7E starts or ends a header value, nothing outside 0x20-0x7E is inside.
HEADER_VALUE = re.compile(r"^[\x21-\x7E]([\x20-\x7E]*[\x21-\x7E])?$")


def b64(value: str) -> str:
    """The sentinel form of ``value``, computed independently of the codec."""
    return "=?base64?" + base64.b64encode(value.encode("utf-8")).decode("ascii") + "?="


# The SEP-2243 encoding examples, one row each (the booleans/integers row is covered in tests/core/test_plan.py).
SPEC_VECTORS = [
    pytest.param("us-west1", "us-west1", id="plain"),
    pytest.param("us west 1", "us west 1", id="interior-spaces"),
    pytest.param("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?=", id="non-ascii"),
    pytest.param(" padded ", "=?base64?IHBhZGRlZCA=?=", id="leading-and-trailing-space"),
    pytest.param("line1\nline2", "=?base64?bGluZTEKbGluZTI=?=", id="interior-lf"),
    pytest.param("\tindented", "=?base64?CWluZGVudGVk?=", id="leading-tab"),
    pytest.param("", "=?base64??=", id="empty"),
    pytest.param("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=", id="sentinel-look-alike"),
    pytest.param("=?base64?=", "=?base64?PT9iYXNlNjQ/PQ==?=", id="sentinel-overlapping-prefix-suffix"),
]


@pytest.mark.parametrize(("value", "header"), SPEC_VECTORS)
def test_spec_vectors_encode(value: str, header: str) -> None:
    assert encode_header_value(value) == header


@pytest.mark.parametrize(("value", "header"), SPEC_VECTORS)
def test_spec_vectors_decode(value: str, header: str) -> None:
    assert decode_header_value(header) == value


# Every class of character that forces Base64, and the look-alikes that must stay literal.
ENCODED = [
    pytest.param("a\x00b", id="nul-interior"),
    pytest.param("\x00", id="nul-alone"),
    pytest.param("a\tb", id="tab-interior"),
    pytest.param("ab\t", id="tab-trailing"),
    pytest.param("a\rb", id="cr-interior"),
    pytest.param("a\r\nb", id="crlf-interior"),
    pytest.param("a\nb", id="lf-interior"),
    pytest.param("a\x7fb", id="del-interior"),
    pytest.param("a\x1fb", id="unit-separator-0x1f"),
    pytest.param("a\x0bb", id="vertical-tab"),
    pytest.param("a\x85b", id="c1-nel"),
    pytest.param("a\u00a0b", id="nbsp"),
    pytest.param("caf\u00e9", id="latin-1"),
    pytest.param("\U0001f600", id="astral-emoji"),
    pytest.param("a\u2028b", id="line-separator"),
    pytest.param(" a", id="leading-space"),
    pytest.param("a ", id="trailing-space"),
    pytest.param(" ", id="single-space"),
    pytest.param("   ", id="only-spaces"),
    pytest.param("", id="empty"),
    pytest.param("=?base64?YWJj?=", id="sentinel-with-valid-payload"),
    pytest.param("=?base64??=", id="sentinel-empty-payload"),
    pytest.param("=?base64?not base64!?=", id="sentinel-with-garbage"),
    pytest.param("=?base64?=", id="sentinel-overlapping"),
]


@pytest.mark.parametrize("value", ENCODED)
def test_values_that_must_be_encoded(value: str) -> None:
    assert (is_literal(value), encode_header_value(value), decode_header_value(b64(value))) == (
        False,
        b64(value),
        value,
    )


LITERAL = [
    pytest.param("a", id="single-char"),
    pytest.param("!", id="single-punctuation"),
    pytest.param("~", id="tilde-0x7e"),
    pytest.param("a b", id="interior-space"),
    pytest.param("a  b", id="double-interior-space"),
    pytest.param("=?BASE64?x?=", id="uppercase-markers"),
    pytest.param("=?Base64?YWJj?=", id="mixed-case-markers"),
    pytest.param("=?base64?", id="prefix-only"),
    pytest.param("?=", id="suffix-only"),
    pytest.param("=?base64?x", id="prefix-without-suffix"),
    pytest.param("x=?base64?x?=", id="sentinel-not-at-start"),
    pytest.param("=?base64?x? =", id="suffix-split-by-space"),
    pytest.param("=?base64?x?=x", id="sentinel-not-at-end"),
    pytest.param("=?utf-8?q?x?=", id="rfc2047-shape"),
    pytest.param("SGVsbG8=", id="bare-base64"),
    pytest.param("true", id="true-text"),
    pytest.param("42", id="digits"),
    pytest.param("\"quoted\"", id="double-quotes"),
    pytest.param("a,b;c=d", id="list-punctuation"),
]


@pytest.mark.parametrize("value", LITERAL)
def test_values_sent_literally(value: str) -> None:
    assert (is_literal(value), encode_header_value(value), decode_header_value(value)) == (True, value, value)


# Headers the encoder can never produce: each is refused with an exact reason.
DECODE_ERRORS = [
    # "\t" is CQ==, "\t\t" is CQk=, "\t\t\t" is CQkJ: all would decode to values that need Base64.
    pytest.param("=?base64?CQ?=", "is not canonical padded Base64", id="missing-both-pads"),
    pytest.param("=?base64?CQ=?=", "is not canonical padded Base64", id="missing-one-of-two-pads"),
    pytest.param("=?base64?CQk?=", "is not canonical padded Base64", id="missing-single-pad"),
    pytest.param("=?base64?CQkJ=?=", "is not canonical padded Base64", id="padding-where-none-belongs"),
    pytest.param("=?base64?CQ===?=", "is not canonical padded Base64", id="extra-padding"),
    pytest.param("=?base64?QR==?=", "is not canonical padded Base64", id="non-zero-padding-bits-2"),
    pytest.param("=?base64?QUJ=?=", "is not canonical padded Base64", id="non-zero-padding-bits-1"),
    pytest.param("=?base64?SGVs bG8=?=", "is not canonical padded Base64", id="space-in-payload"),
    pytest.param("=?base64?SGVs\nbG8=?=", "is not canonical padded Base64", id="newline-in-payload"),
    pytest.param("=?base64?-_-_?=", "is not canonical padded Base64", id="url-safe-alphabet"),
    pytest.param("=?base64?YQ==YQ==?=", "is not canonical padded Base64", id="padding-in-the-middle"),
    pytest.param("=?base64?Y?=", "is not canonical padded Base64", id="one-char-payload"),
    pytest.param("=?base64?=", "is not canonical padded Base64", id="overlapping-sentinel"),
    pytest.param("=?base64?/w==?=", "does not decode to UTF-8 text", id="invalid-utf8-0xff"),
    pytest.param("=?base64?wA==?=", "does not decode to UTF-8 text", id="invalid-utf8-overlong"),
    pytest.param("=?base64?7aCA?=", "does not decode to UTF-8 text", id="utf8-encoded-surrogate"),
    pytest.param("=?base64?YWJj?=", "encodes a value that is sent literally", id="sentinel-of-literal"),
    pytest.param("=?base64?YSBi?=", "encodes a value that is sent literally", id="sentinel-of-interior-space"),
    pytest.param("=?base64?PT9CQVNFNjQ/eD89?=", "encodes a value that is sent literally", id="sentinel-of-upper"),
    pytest.param("a\tb", "must be Base64-encoded", id="literal-with-tab"),
    pytest.param("a\x00b", "must be Base64-encoded", id="literal-with-nul"),
    pytest.param("a\r\nb", "must be Base64-encoded", id="literal-with-crlf"),
    pytest.param("a\x7f", "must be Base64-encoded", id="literal-with-del"),
    pytest.param("caf\u00e9", "must be Base64-encoded", id="literal-non-ascii"),
    pytest.param(" a", "must be Base64-encoded", id="literal-leading-space"),
    pytest.param("a ", "must be Base64-encoded", id="literal-trailing-space"),
    pytest.param("", "must be Base64-encoded", id="literal-empty"),
]


@pytest.mark.parametrize(("header", "why"), DECODE_ERRORS)
def test_decode_refuses_what_the_encoder_never_sends(header: str, why: str) -> None:
    with pytest.raises(HeaderDecodeError, match=rf"^header value {re.escape(repr(header))} {why}$"):
        decode_header_value(header)


def test_decode_error_shortens_long_values() -> None:
    header = "\t" + "x" * 200
    with pytest.raises(HeaderDecodeError, match=r"^header value '\\t" + "x" * 74 + r"\.\.\. must be Base64-encoded$"):
        decode_header_value(header)


def test_decode_error_is_a_value_error() -> None:
    with pytest.raises(ValueError, match=r"^header value 'a\\tb' must be Base64-encoded$"):
        decode_header_value("a\tb")


@pytest.mark.parametrize("value", [pytest.param("\ud800", id="alone"), pytest.param("a\udfffb", id="interior")])
def test_lone_surrogate_cannot_be_encoded(value: str) -> None:
    with pytest.raises(UnicodeEncodeError, match=r"^'utf-8' codec can't encode character '\\ud[8f]\w\w' in "):
        encode_header_value(value)


def test_markers_are_the_spec_ones() -> None:
    assert (SENTINEL_PREFIX, SENTINEL_SUFFIX) == ("=?base64?", "?=")


@given(st.text())
@example("")
@example("=?base64?=")
@example("=?base64?YWJj?=")
def test_round_trip(value: str) -> None:
    assert decode_header_value(encode_header_value(value)) == value


@given(st.text())
@example("")
@example(" ")
@example("\x00")
def test_encoded_values_are_visible_ascii(value: str) -> None:
    assert HEADER_VALUE.match(encode_header_value(value))


_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def with_padding_bits(raw: bytes) -> str:
    """``raw`` (not a multiple of 3 bytes) in the sentinel, its unused padding bits set: a second spelling."""
    payload = base64.b64encode(raw).decode("ascii").rstrip("=")
    last = _ALPHABET[_ALPHABET.index(payload[-1]) | 1]
    return "=?base64?" + payload[:-1] + last + "=" * (-len(payload) % 4) + "?="


# Fragments that build sentinel-shaped, nearly-canonical and control-laden header candidates,
# which plain st.text() almost never produces; and second spellings of Base64 payloads.
_FRAGMENTS = ["=?base64?", "?=", "=", "==", "?", "A", "Q", "QQ", "YWJj", "/w", "+", "/", " ", "\t", "\u00e9", "a"]
header_candidates = st.one_of(
    st.text(),
    st.lists(st.sampled_from(_FRAGMENTS), max_size=8).map("".join),
    st.binary().map(lambda raw: "=?base64?" + base64.b64encode(raw).decode("ascii") + "?="),
    st.text().map(lambda text: "=?base64?" + base64.b64encode(text.encode("utf-8")).decode("ascii") + "?="),
    st.text(min_size=1).map(str.encode).filter(lambda raw: len(raw) % 3 != 0).map(with_padding_bits),
)


@given(header_candidates)
@example("=?base64?=")
@example("=?base64?QR==?=")
@example("=?base64?CR==?=")  # "\t" (CQ==) with a padding bit set
def test_decode_is_strict(header: str) -> None:
    try:
        value = decode_header_value(header)
    except HeaderDecodeError:
        return
    assert encode_header_value(value) == header


@given(st.text(max_size=12) | st.text(alphabet="!#$%&'*+-.^_`|~0Aa z:\t\n\x7f\u00e9", max_size=8))
def test_a_token_is_what_the_rfc_9110_pattern_matches_whole(text: str) -> None:
    # RFC 9110 §5.6.2: tchar; is_token checks it without a pattern compiled at import.
    from mcpfsm._core.codec import is_token

    assert is_token(text) == bool(re.fullmatch(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+", text))
