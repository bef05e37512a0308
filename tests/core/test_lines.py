"""stdio framing (mcpfsm/_core/lines.py): lines in linear time, oversized lines skipped with their id found."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpfsm._core.lines import LineFramer, OversizedLine, TopLevelId


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    bounds = sorted({0, len(data), *(c for c in cuts if c < len(data))})
    return [data[a:b] for a, b in itertools.pairwise(bounds)]


def top_level_id(data: bytes, cuts: list[int]) -> tuple[bool, int | str | None]:
    sniffer = TopLevelId()
    for piece in split(data, cuts):
        sniffer.feed(piece)
    return sniffer.done, sniffer.value


KEYS = ["jsonrpc", "result", "error", "method", "params", 'x"y', "i", "idx", "\\id"]
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=10,
)


@settings(max_examples=300, deadline=None)
@given(
    members=st.dictionaries(st.sampled_from(KEYS), json_values, max_size=4),
    request_id=st.none() | st.integers(-(10**9), 10**9) | st.text(max_size=6) | st.booleans() | st.floats(),
    position=st.integers(0, 4),
    separators=st.sampled_from([(",", ":"), (", ", ": "), (" ,\n", " :\t")]),
    cuts=st.lists(st.integers(0, 400), max_size=10),
)
def test_the_top_level_id_agrees_with_json_however_the_text_is_split(
    members: dict[str, Any], request_id: Any, position: int, separators: tuple[str, str], cuts: list[int]
) -> None:
    items = list(members.items())
    items.insert(min(position, len(items)), ("id", request_id))
    text = json.dumps(dict(items), separators=separators, ensure_ascii=False).encode()
    expected = request_id if isinstance(request_id, int | str) and not isinstance(request_id, bool) else None
    # A whole-number float id (1.0) is not an int in JSON-RPC: json.loads gives a float, so no id.
    assert top_level_id(text, cuts)[1] == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(b'{"id":7,"result":{}}', (True, 7), id="first"),
        pytest.param(b'{"result":{"id":1,"nested":[{"id":2}]},"id":"r-9"}', (True, "r-9"), id="after-nested-ids"),
        pytest.param(b'{"result":"a \\" \\\\\\" id: 5","id":5}', (True, 5), id="escaped-quotes"),
        pytest.param(b'{"jsonrpc":"2.0","method":"x"}', (True, None), id="no-id"),
        pytest.param(b'  [1,2,3]', (True, None), id="not-an-object"),
        pytest.param(b'{"id":{"a":1},"result":1}', (True, None), id="object-id"),
        pytest.param(b'{"id":' + b"1" * 2000 + b"}", (True, None), id="absurdly-long-id"),
        pytest.param(b'{"result":"unterminated', (False, None), id="cut-short"),
    ],
)
def test_top_level_id_cases(text: bytes, expected: tuple[bool, object]) -> None:
    for cuts in ([], list(range(len(text)))):
        assert top_level_id(text, cuts) == expected


@settings(max_examples=200, deadline=None)
@given(
    lines=st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=8),
    cuts=st.lists(st.integers(0, 400), max_size=12),
)
def test_lines_come_out_whole_however_the_bytes_are_split(lines: list[bytes], cuts: list[int]) -> None:
    framer = LineFramer(limit=1000)
    data = b"".join(line + b"\n" for line in lines)
    out = [line for piece in split(data, cuts) for line in framer.feed(piece)]
    assert out == lines
    assert framer.buffered == 0


def test_an_oversized_line_is_skipped_with_its_id_and_the_next_line_is_whole() -> None:
    framer = LineFramer(limit=10)
    big = b'{"result":"' + b"x" * 100 + b'","id":3}'
    out: list[bytes | OversizedLine] = []
    for piece in split(big + b"\n" + b'{"id":4}\n' + b"tail", list(range(0, 200, 7))):
        out += framer.feed(piece)
        assert framer.buffered <= 10
    assert out == [OversizedLine(size=len(big), id=3), b'{"id":4}']
    assert framer.buffered == 4


def test_a_line_of_exactly_the_limit_is_kept() -> None:
    framer = LineFramer(limit=4)
    assert framer.feed(b"abcd\nabcde\n") == [b"abcd", OversizedLine(size=5, id=None)]


def test_the_limit_must_be_positive() -> None:
    with pytest.raises(ValueError, match=r"^limit must be at least 1, got 0$"):
        LineFramer(limit=0)
