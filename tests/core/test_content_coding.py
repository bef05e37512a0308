"""Content-Encoding decoding (mcpfsm/_core/content_coding.py): gzip and deflate as httpx decodes them, bounded."""

from __future__ import annotations

import gzip
import itertools
import zlib

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpfsm._core.content_coding import PIECE_BYTES, BodyTooLarge, ContentDecodeError, ContentDecoder


def raw_deflate(data: bytes) -> bytes:
    compressor = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return compressor.compress(data) + compressor.flush()


CODINGS = {
    "gzip": gzip.compress,
    "x-gzip": gzip.compress,
    "deflate": zlib.compress,
    "deflate-raw": raw_deflate,
    "identity": lambda data: data,
    "gzip, deflate": lambda data: zlib.compress(gzip.compress(data)),
}


def decode(header: str | None, data: bytes, cuts: list[int], limit: int | None = None) -> bytes:
    decoder = ContentDecoder(header, limit=limit)
    bounds = sorted({0, len(data), *(c for c in cuts if c < len(data))})
    pieces = [p for a, b in itertools.pairwise(bounds) for p in decoder.decode(data[a:b])]
    pieces += decoder.finish()
    assert all(0 < len(p) <= PIECE_BYTES for p in pieces)
    return b"".join(pieces)


@settings(max_examples=100, deadline=None)
@given(
    coding=st.sampled_from(sorted(CODINGS)),
    body=st.binary(max_size=3000),
    cuts=st.lists(st.integers(0, 3000), max_size=8),
)
def test_decoding_agrees_with_httpx_however_the_body_is_split(coding: str, body: bytes, cuts: list[int]) -> None:
    header = "deflate" if coding == "deflate-raw" else coding
    encoded = CODINGS[coding](body)
    assert decode(header, encoded, cuts) == body
    if coding != "x-gzip":  # RFC 9110 §8.4.1.3 treats x-gzip as gzip; httpx passes it through
        assert httpx.Response(200, headers={"Content-Encoding": header}, content=encoded).content == body


def test_a_bomb_is_refused_at_the_limit_without_inflating_the_rest() -> None:
    bomb = gzip.compress(b"\0" * (64 * 1024 * 1024))  # 64 MiB of zeros in about 64 KiB
    decoder = ContentDecoder("gzip", limit=1024 * 1024)
    with pytest.raises(BodyTooLarge, match=r"^the decoded body is larger than 1048576 bytes$"):
        for _ in decoder.decode(bomb):
            pass
    assert decoder.produced <= 1024 * 1024 + PIECE_BYTES


def test_the_limit_counts_decoded_bytes_and_allows_exactly_the_limit() -> None:
    assert decode("gzip", gzip.compress(b"a" * 1000), [], limit=1000) == b"a" * 1000
    with pytest.raises(BodyTooLarge):
        decode("gzip", gzip.compress(b"a" * 1001), [], limit=1000)
    with pytest.raises(BodyTooLarge):
        decode(None, b"a" * 1001, [500], limit=1000)


@pytest.mark.parametrize(
    ("header", "data", "message"),
    [
        pytest.param("br", b"", r"^unsupported Content-Encoding 'br' \(mcpfsm asks for gzip, deflate\)$", id="br"),
        pytest.param(
            "gzip, zstd",
            b"",
            r"^unsupported Content-Encoding 'gzip, zstd' \(mcpfsm asks for gzip, deflate\)$",
            id="zstd",
        ),
        pytest.param(
            "gzip",
            b"not gzip at all",
            r"^malformed gzip body: Error -3 while decompressing data: incorrect header check$",
            id="bad",
        ),
    ],
)
def test_what_cannot_be_decoded_is_an_error(header: str, data: bytes, message: str) -> None:
    with pytest.raises(ContentDecodeError, match=message):
        decode(header, data, [])
