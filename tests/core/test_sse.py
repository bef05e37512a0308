"""Tests for the incremental text/event-stream parser (MCP Streamable HTTP, WHATWG event-stream interpretation)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpfsm._core.sse import DEFAULT_MAX_EVENT_BYTES, SseError, SseEvent, SseParser, reconnection_delay


def ev(data: str, event: str = "message", id: str | None = None, retry: int | None = None) -> SseEvent:
    return SseEvent(event=event, data=data, id=id, retry=retry)


def feed_chunks(chunks: list[bytes], max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES) -> list[SseEvent]:
    parser = SseParser(max_event_bytes=max_event_bytes)
    events: list[SseEvent] = []
    for chunk in chunks:
        events += parser.feed(chunk)
    events += parser.close()
    return events


def parse(stream: bytes) -> list[SseEvent]:
    """Parse in one chunk, in 1-byte chunks and in 2-byte chunks; all must agree."""
    whole = feed_chunks([stream])
    assert feed_chunks([stream[i : i + 1] for i in range(len(stream))]) == whole
    assert feed_chunks([stream[i : i + 2] for i in range(0, len(stream), 2)]) == whole
    return whole


# --- fields, values, comments -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stream", "expected"),
    [
        pytest.param(b"data: hello\n\n", [ev("hello")], id="one-event"),
        pytest.param(b"data:hello\n\n", [ev("hello")], id="no-space-after-colon"),
        pytest.param(b"data:  hello\n\n", [ev(" hello")], id="only-one-space-removed"),
        pytest.param(b"data:\thello\n\n", [ev("\thello")], id="tab-is-not-removed"),
        pytest.param(b"data: a: b:c\n\n", [ev("a: b:c")], id="later-colons-belong-to-the-value"),
        pytest.param(b"data: hello \n\n", [ev("hello ")], id="trailing-space-kept"),
        pytest.param(b"data: a\ndata: b\ndata: c\n\n", [ev("a\nb\nc")], id="multi-line-data-joined-with-lf"),
        pytest.param(b"data\n\n", [ev("")], id="line-without-colon-is-empty-data"),
        pytest.param(b"data:\n\n", [ev("")], id="empty-data-value"),
        pytest.param(b"data\ndata\n\n", [ev("\n")], id="two-empty-data-lines"),
        pytest.param(b"data: a\ndata:\n\n", [ev("a\n")], id="trailing-empty-data-line"),
        pytest.param(b"data: a\x00b\n\n", [ev("a\x00b")], id="nul-in-data-kept"),
        pytest.param(b"data: 1\n\ndata: 2\n\n", [ev("1"), ev("2")], id="two-events"),
        pytest.param(b"event: ping\ndata: x\n\n", [ev("x", event="ping")], id="event-type"),
        pytest.param(b"data: x\nevent: ping\n\n", [ev("x", event="ping")], id="event-type-after-data"),
        pytest.param(b"event:\ndata: x\n\n", [ev("x")], id="empty-event-type-is-message"),
        pytest.param(b"event: a\nevent: b\ndata: x\n\n", [ev("x", event="b")], id="last-event-type-wins"),
        pytest.param(
            b"event: a\ndata: 1\n\ndata: 2\n\n",
            [ev("1", event="a"), ev("2")],
            id="event-type-reset-after-dispatch",
        ),
        pytest.param(b"event: a\n\ndata: 2\n\n", [ev("2")], id="event-type-reset-by-blank-line-without-data"),
        pytest.param(b": keep-alive\ndata: x\n\n", [ev("x")], id="comment-ignored"),
        pytest.param(b"data: x\n: between\ndata: y\n\n", [ev("x\ny")], id="comment-inside-event"),
        pytest.param(b":\ndata: x\n\n", [ev("x")], id="bare-colon-is-comment"),
        pytest.param(b": ping\n\n", [], id="comment-only-block-dispatches-nothing"),
        pytest.param(b":data: x\n\n", [], id="comment-looking-like-data"),
        pytest.param(b"foo: bar\ndata: x\n\n", [ev("x")], id="unknown-field-ignored"),
        pytest.param(b"Data: x\n\n", [], id="field-names-are-case-sensitive"),
        pytest.param(b"data : x\n\n", [], id="space-before-colon-makes-another-field"),
        pytest.param(b"data x\n\n", [], id="line-without-colon-is-whole-field-name"),
        pytest.param(b"\n\n\n", [], id="blank-lines-without-data"),
        pytest.param(b"data: x\n", [], id="no-blank-line-no-event"),
        pytest.param(b"data: x", [], id="unterminated-line-no-event"),
        pytest.param(b"", [], id="empty-stream"),
    ],
)
def test_fields(stream: bytes, expected: list[SseEvent]) -> None:
    assert parse(stream) == expected


# --- id and retry ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stream", "expected", "last_event_id"),
    [
        pytest.param(b"id: 7\ndata: x\n\n", [ev("x", id="7")], "7", id="id-set"),
        pytest.param(b"data: x\nid: 7\n\n", [ev("x", id="7")], "7", id="id-after-data"),
        pytest.param(b"id:  7\ndata: x\n\n", [ev("x", id=" 7")], " 7", id="id-keeps-second-space"),
        pytest.param(
            b"id: 7\ndata: x\n\ndata: y\n\n", [ev("x", id="7"), ev("y", id="7")], "7", id="id-persists"
        ),
        pytest.param(
            b"id: 7\ndata: x\n\nid\ndata: y\n\n", [ev("x", id="7"), ev("y", id="")], "", id="empty-id-resets"
        ),
        pytest.param(
            b"id: 7\ndata: x\n\nid: 8\x009\ndata: y\n\n",
            [ev("x", id="7"), ev("y", id="7")],
            "7",
            id="id-with-nul-ignored",
        ),
        pytest.param(b"id: 5\n\n", [], "5", id="blank-line-without-data-still-sets-id"),
        pytest.param(b"id: 5\n\ndata: x\n\n", [ev("x", id="5")], "5", id="id-from-empty-block-carries-on"),
        pytest.param(
            b"id: 1\ndata: x\n\nid: 2\ndata: y\n",
            [ev("x", id="1")],
            "1",
            id="id-of-unfinished-event-not-applied",
        ),
        pytest.param(b"id: 1\nid: 2\ndata: x\n\n", [ev("x", id="2")], "2", id="last-id-wins"),
        pytest.param(b"data: x\n\n", [ev("x")], None, id="no-id-is-none"),
        pytest.param(b"ID: 3\ndata: x\n\n", [ev("x")], None, id="uppercase-id-is-unknown"),
    ],
)
def test_id(stream: bytes, expected: list[SseEvent], last_event_id: str | None) -> None:
    parser = SseParser()
    events = parser.feed(stream) + parser.close()
    assert (events, parser.last_event_id) == (expected, last_event_id)
    assert parse(stream) == expected


@pytest.mark.parametrize(
    ("value", "retry"),
    [
        pytest.param(b"1500", 1500, id="digits"),
        pytest.param(b"0", 0, id="zero"),
        pytest.param(b"0010", 10, id="leading-zeros"),
        pytest.param(b"12345678901234567890", 12345678901234567890, id="larger-than-64-bit"),
        pytest.param(b"", 100, id="empty"),
        pytest.param(b" 5", 100, id="second-space"),
        pytest.param(b"5 ", 100, id="trailing-space"),
        pytest.param(b"1.5", 100, id="decimal-point"),
        pytest.param(b"-1", 100, id="negative"),
        pytest.param(b"+1", 100, id="plus-sign"),
        pytest.param(b"1e3", 100, id="exponent"),
        pytest.param(b"0x10", 100, id="hex"),
        pytest.param(b"1_000", 100, id="underscore"),
        pytest.param("\u0661\u0662".encode(), 100, id="non-ascii-digits"),
        pytest.param(b"9" * 5000, 100, id="more-digits-than-int-converts"),
    ],
)
def test_retry(value: bytes, retry: int) -> None:
    stream = b"retry: 100\ndata: a\n\nretry: " + value + b"\ndata: b\n\n"
    parser = SseParser()
    events = parser.feed(stream)
    assert (events, parser.retry) == ([ev("a", retry=100), ev("b", retry=retry)], retry)


def test_retry_takes_effect_at_its_line_without_an_event() -> None:
    parser = SseParser()
    assert (parser.retry, parser.feed(b"retry: 3000\n"), parser.retry) == (None, [], 3000)
    assert (parser.feed(b"\n"), parser.close(), parser.retry) == ([], [], 3000)


@pytest.mark.parametrize(
    ("retry", "seconds"),
    [(None, 1.0), (0, 0.0), (250, 0.25), (60_000, 60.0), (60_001, 60.0), (10**1000, 60.0)],
    ids=["default", "zero", "250-ms", "one-minute", "above-a-minute", "1001-digits"],
)
def test_reconnection_delay_is_the_servers_retry_clamped_to_a_minute(retry: int | None, seconds: float) -> None:
    assert reconnection_delay(retry) == seconds


def test_properties_start_as_none() -> None:
    parser = SseParser()
    assert (parser.last_event_id, parser.retry) == (None, None)


# --- line endings --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "stream",
    [
        pytest.param(b"event: e\ndata: x\ndata: y\n\n", id="lf"),
        pytest.param(b"event: e\r\ndata: x\r\ndata: y\r\n\r\n", id="crlf"),
        pytest.param(b"event: e\rdata: x\rdata: y\r\r", id="cr"),
        pytest.param(b"event: e\rdata: x\r\ndata: y\n\r\n", id="mixed"),
    ],
)
def test_line_endings(stream: bytes) -> None:
    assert parse(stream) == [ev("x\ny", event="e")]


@pytest.mark.parametrize(
    ("stream", "expected"),
    [
        pytest.param(b"data: x\r\n\r\n", [ev("x")], id="crlf-is-one-line-ending"),
        pytest.param(b"data: x\n\rdata: y\n\n", [ev("x"), ev("y")], id="lf-then-cr-is-two-line-endings"),
        pytest.param(b"data: x\r\rdata: y\r\r", [ev("x"), ev("y")], id="cr-cr-is-a-blank-line"),
        pytest.param(b"data: x\r\n\ndata: y\n\n", [ev("x"), ev("y")], id="crlf-then-lf-is-a-blank-line"),
    ],
)
def test_line_ending_combinations(stream: bytes, expected: list[SseEvent]) -> None:
    assert parse(stream) == expected


@pytest.mark.parametrize(
    ("chunks", "expected"),
    [
        pytest.param(
            [b"data: x\r", b"\ndata: y\r", b"\n\r", b"\n"], [ev("x\ny")], id="cr|lf-is-one-line-ending"
        ),
        pytest.param([b"data: x\r", b"\n", b"\r", b"\n"], [ev("x")], id="lf-alone-in-chunk-after-cr"),
        pytest.param([b"data: x\r", b"", b"\n", b"\r\n"], [ev("x")], id="empty-chunk-between-cr-and-lf"),
        pytest.param([b"data: x\r", b"\r"], [ev("x")], id="cr|cr-is-a-blank-line"),
        pytest.param([b"data: x\r\n", b"\n"], [ev("x")], id="crlf|lf-is-a-blank-line"),
        pytest.param([b"data: x\n\r", b"\ndata: y\n\n"], [ev("x"), ev("y")], id="lf-cr|lf"),
    ],
)
def test_cr_lf_split_across_chunks(chunks: list[bytes], expected: list[SseEvent]) -> None:
    assert feed_chunks(chunks) == expected


def test_feed_returns_the_events_each_chunk_completes() -> None:
    parser = SseParser()
    assert [
        parser.feed(b"data: a\n\ndata: b"),
        parser.feed(b"\n"),
        parser.feed(b"\ndata: c\n\ndata: d\n\n"),
        parser.close(),
    ] == [[ev("a")], [], [ev("b"), ev("c"), ev("d")], []]


# --- BOM and UTF-8 ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stream", "expected"),
    [
        pytest.param(b"\xef\xbb\xbfdata: x\n\n", [ev("x")], id="leading-bom-stripped"),
        pytest.param(b"\xef\xbb\xbf\n\ndata: x\n\n", [ev("x")], id="bom-then-blank-line"),
        pytest.param(b"\xef\xbb\xbf\xef\xbb\xbfdata: x\n\n", [], id="only-one-bom-stripped"),
        pytest.param(b"data: x\n\n\xef\xbb\xbfdata: y\n\n", [ev("x")], id="bom-after-start-is-content"),
        pytest.param(b"data: \xef\xbb\xbfx\n\n", [ev("\ufeffx")], id="bom-in-value-kept"),
        pytest.param(b"\xef\xbbdata: x\n\n", [], id="partial-bom-is-content"),
        pytest.param(b"\xef\xbb\xbf", [], id="bom-only"),
    ],
)
def test_bom(stream: bytes, expected: list[SseEvent]) -> None:
    assert parse(stream) == expected


@pytest.mark.parametrize(
    ("stream", "expected"),
    [
        pytest.param("data: 世界 🌍\n\n".encode(), [ev("世界 🌍")], id="multibyte"),
        pytest.param("event: ünï\ndata: x\n\n".encode(), [ev("x", event="ünï")], id="multibyte-event-type"),
        pytest.param("id: ïd\ndata: x\n\n".encode(), [ev("x", id="ïd")], id="multibyte-id"),
        pytest.param(b"data: a\xffb\n\n", [ev("a\ufffdb")], id="invalid-byte-replaced"),
        pytest.param(b"data: \xe4\xb8\n\n", [ev("\ufffd")], id="truncated-sequence-at-line-end"),
        pytest.param(
            b"data: \xe4\xb8\ndata: x\n\n", [ev("\ufffd\nx")], id="truncated-sequence-before-next-line"
        ),
        pytest.param(b"data: \xc0\xaf\n\n", [ev("\ufffd\ufffd")], id="overlong-encoding"),
        pytest.param(b"data: \xed\xa0\x80\n\n", [ev("\ufffd\ufffd\ufffd")], id="encoded-surrogate"),
        pytest.param(b"event: \xff\ndata: x\n\n", [ev("x", event="\ufffd")], id="invalid-event-type"),
        pytest.param(b"id: \xff\ndata: x\n\n", [ev("x", id="\ufffd")], id="invalid-id"),
        pytest.param(b"dat\xff: x\n\n", [], id="invalid-field-name-is-unknown"),
    ],
)
def test_utf8(stream: bytes, expected: list[SseEvent]) -> None:
    assert parse(stream) == expected


# --- close --------------------------------------------------------------------------------------


def test_close_discards_the_unfinished_event() -> None:
    parser = SseParser()
    assert (parser.feed(b"data: a\n\nid: 9\nevent: e\ndata: b\n"), parser.close()) == ([ev("a")], [])
    assert parser.last_event_id is None


def test_close_twice() -> None:
    parser = SseParser()
    assert (parser.close(), parser.close()) == ([], [])


@pytest.mark.parametrize("chunk", [pytest.param(b"data: x\n\n", id="data"), pytest.param(b"", id="empty")])
def test_feed_after_close(chunk: bytes) -> None:
    parser = SseParser()
    parser.close()
    with pytest.raises(SseError, match=r"^SSE parser is closed$"):
        parser.feed(chunk)


# --- resuming ------------------------------------------------------------------------------------


def test_resumed_stream_carries_id_and_retry_but_not_buffers() -> None:
    first = SseParser()
    assert first.feed(b"retry: 500\nid: 3\ndata: a\n\nevent: e\ndata: cut") == [ev("a", id="3", retry=500)]
    assert first.close() == []
    second = SseParser(last_event_id=first.last_event_id, retry=first.retry)
    assert (second.last_event_id, second.retry) == ("3", 500)
    assert second.feed(b"\xef\xbb\xbfdata: b\n\nid: 4\ndata: c\n\n") == [
        ev("b", id="3", retry=500),
        ev("c", id="4", retry=500),
    ]
    assert second.last_event_id == "4"


# --- size limit ---------------------------------------------------------------------------------


def test_default_limit_is_16_mib() -> None:
    assert DEFAULT_MAX_EVENT_BYTES == 16 * 1024 * 1024
    parser = SseParser()
    assert parser.feed(b"data: " + b"x" * (DEFAULT_MAX_EVENT_BYTES - 6)) == []
    with pytest.raises(SseError, match=r"^SSE line longer than max_event_bytes \(16777216 bytes\)$"):
        parser.feed(b"x")


@pytest.mark.parametrize(
    "chunks",
    [
        pytest.param([b"data: 12345\n\n"], id="terminated-line-in-one-chunk"),
        pytest.param([b"data: 1234", b"5"], id="unterminated-line-grows-past-limit"),
        pytest.param([b"data: 1\n\n:", b"0123456789", b"\n"], id="long-comment"),
        pytest.param([b"data: 1\n\nx", b"0123456789\n\n"], id="long-unterminated-rest-in-chunk-with-lines"),
        pytest.param([b"\xef\xbb", b"\xbf0123456789a"], id="after-bom"),
        pytest.param([b"data: x\r", b"\n0123456789a"], id="after-split-crlf"),
    ],
)
def test_line_limit(chunks: list[bytes]) -> None:
    parser = SseParser(max_event_bytes=10)
    with pytest.raises(SseError, match=r"^SSE line longer than max_event_bytes \(10 bytes\)$"):
        for chunk in chunks:
            parser.feed(chunk)
    with pytest.raises(SseError, match=r"^SSE parser is closed$"):
        parser.feed(b"\n\n")


@pytest.mark.parametrize(
    "stream",
    [
        pytest.param(b"data:12345\ndata:12345\n", id="two-lines"),
        pytest.param(b"data\n" * 12, id="many-empty-lines"),
        pytest.param(b"data:12345\n: comment\ndata:12345\n", id="comment-between"),
    ],
)
def test_event_limit(stream: bytes) -> None:
    parser = SseParser(max_event_bytes=10)
    with pytest.raises(SseError, match=r"^SSE event data larger than max_event_bytes \(10 bytes\)$"):
        parser.feed(stream)
    with pytest.raises(SseError, match=r"^SSE parser is closed$"):
        parser.feed(b"\n\n")


@pytest.mark.parametrize(
    ("stream", "expected"),
    [
        pytest.param(b"data: 1234\n\n", [ev("1234")], id="line-exactly-at-limit"),
        pytest.param(b"data:12345\rdata:1234\r\r", [ev("12345\n1234")], id="data-exactly-at-limit"),
        pytest.param(b"data\n" * 11 + b"\n", [ev("\n" * 10)], id="empty-lines-exactly-at-limit"),
        pytest.param(b": 12345678\n" * 10 + b"data: 1\n\n", [ev("1")], id="comments-do-not-add-up"),
        pytest.param(b"data:12345\n\n" * 10, [ev("12345")] * 10, id="events-do-not-add-up"),
        pytest.param(b"data: 12\r\n\r\n", [ev("12")], id="line-ending-not-counted"),
    ],
)
def test_within_limit(stream: bytes, expected: list[SseEvent]) -> None:
    assert feed_chunks([stream], max_event_bytes=10) == expected
    assert feed_chunks([stream[i : i + 1] for i in range(len(stream))], max_event_bytes=10) == expected


@pytest.mark.parametrize("limit", [pytest.param(0, id="zero"), pytest.param(-1, id="negative")])
def test_limit_must_be_positive(limit: int) -> None:
    with pytest.raises(ValueError, match=rf"^max_event_bytes must be at least 1, got {limit}$"):
        SseParser(max_event_bytes=limit)


def test_sse_error_is_a_value_error() -> None:
    assert issubclass(SseError, ValueError)


# --- property: any stream, any line endings, any chunking ---------------------------------------

_KNOWN_FIELDS = {"data", "event", "id", "retry"}
_line_text = st.text(st.characters(codec="utf-8", exclude_characters="\r\n"), max_size=12)
_endings = st.sampled_from(["\n", "\r\n", "\r"])


@dataclass(frozen=True, slots=True, kw_only=True)
class Block:
    """One blank-line-terminated block of the generated stream."""

    data: str | None  # None: a block without data lines, which dispatches nothing
    event: str | None
    id: str | None
    retry: str | None


@st.composite
def field_line(draw: st.DrawFn, name: str, value: str) -> str:
    if value == "" and draw(st.booleans()):
        return name
    space = value.startswith(" ") or draw(st.booleans())
    return f"{name}:{' ' if space else ''}{value}"


@st.composite
def noise_line(draw: st.DrawFn) -> str:
    if draw(st.booleans()):
        return ":" + draw(_line_text)
    name = draw(
        st.text("abcdefghijklmnopqrstuvwxyz-_", min_size=1, max_size=6).filter(
            lambda n: n not in _KNOWN_FIELDS
        )
    )
    return draw(field_line(name, draw(_line_text)))


@st.composite
def block_lines(draw: st.DrawFn, block: Block) -> list[str]:
    lines = [] if block.data is None else [draw(field_line("data", part)) for part in block.data.split("\n")]
    for name, value in [("event", block.event), ("id", block.id), ("retry", block.retry)]:
        if value is not None:
            lines.insert(draw(st.integers(0, len(lines))), draw(field_line(name, value)))
    for _ in range(draw(st.integers(0, 2))):
        lines.insert(draw(st.integers(0, len(lines))), draw(noise_line()))
    return [*lines, ""]


blocks = st.builds(
    Block,
    data=st.none() | st.text(st.characters(codec="utf-8", exclude_characters="\r"), max_size=30),
    event=st.none() | _line_text,
    id=st.none() | st.text(st.characters(codec="utf-8", exclude_characters="\r\n"), max_size=6),
    retry=st.none() | st.integers(0, 2**40).map(str) | st.text("0123456789 +-.x\u0661", max_size=4),
)


def render(lines: list[str], endings: list[str], bom: bool) -> bytes:
    out = []
    previous = ""
    for line, ending in zip(lines, endings, strict=True):
        if previous == "\r" and line == "" and ending == "\n":
            # CR followed by an LF-terminated blank line would read as one CRLF: not what we mean.
            ending = "\r\n"
        out.append(line + ending)
        previous = ending
    return ("\ufeff" if bom else "").encode() + "".join(out).encode()


def expected_events(stream_blocks: list[Block]) -> list[SseEvent]:
    events = []
    last_id: str | None = None
    retry: int | None = None
    for block in stream_blocks:
        if block.id is not None and "\x00" not in block.id:
            last_id = block.id
        if block.retry and all(c in "0123456789" for c in block.retry):
            retry = int(block.retry)
        if block.data is not None:
            events.append(SseEvent(event=block.event or "message", data=block.data, id=last_id, retry=retry))
    return events


@st.composite
def streams(draw: st.DrawFn) -> tuple[bytes, list[SseEvent]]:
    stream_blocks = draw(st.lists(blocks, max_size=6))
    lines = [line for block in stream_blocks for line in draw(block_lines(block))]
    endings = draw(st.lists(_endings, min_size=len(lines), max_size=len(lines)))
    return render(lines, endings, draw(st.booleans())), expected_events(stream_blocks)


@given(streams(), st.data())
def test_any_stream_any_chunking(stream: tuple[bytes, list[SseEvent]], data: st.DataObject) -> None:
    raw, expected = stream
    cuts = sorted(set(data.draw(st.lists(st.integers(0, len(raw)), max_size=12))))
    chunks = [raw[a:b] for a, b in zip([0, *cuts], [*cuts, len(raw)], strict=True)]
    assert feed_chunks([raw]) == expected
    assert feed_chunks(chunks) == expected
    assert feed_chunks([raw[i : i + 1] for i in range(len(raw))]) == expected


@given(st.text(st.characters(codec="utf-8", exclude_characters="\r")), _endings)
def test_data_with_newlines_round_trips(data: str, ending: str) -> None:
    raw = "".join(f"data: {part}{ending}" for part in data.split("\n")) + ending
    assert feed_chunks([raw.encode()]) == [ev(data)]
