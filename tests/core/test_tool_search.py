import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpfsm._core.tool_search import SearchIndex, context_bytes, definition, terms, tool_words


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("read_file", ["read", "file"]),
        ("read-file.v2/beta", ["read", "file", "v2", "beta"]),
        ("getHTTPResponse", ["get", "http", "response"]),
        ("file2Text", ["file2", "text"]),
        ("ABCdef", ["ab", "cdef"]),
        ("  Search the WEB!  ", ["search", "the", "web"]),
        ("Größe_Übersicht", ["grösse", "übersicht"]),
        ("", []),
        ("___", []),
    ],
    ids=lambda value: repr(value),
)
def test_words_split_at_separators_and_camel_case(text: str, words: list[str]) -> None:
    assert terms(text) == words


def test_a_tool_is_indexed_on_name_title_description_and_parameters() -> None:
    entry = {
        "title": "Weather",
        "description": "Forecast for a city",
        "inputSchema": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name"},
                "options": {"type": "object", "properties": {"unitSystem": {"description": "metric"}}},
            },
        },
        "outputSchema": {"properties": {"ignored": {"description": "never indexed"}}},
    }
    assert tool_words("wx_getForecast", entry) == [
        "wx", "get", "forecast", "weather", "forecast", "for", "a", "city",
        "city", "city", "name", "options", "unit", "system", "metric",
    ]  # fmt: skip


def _index(*documents: str) -> SearchIndex:
    return SearchIndex.build(terms(text) for text in documents)


def test_scores_follow_bm25_with_k1_1_2_and_b_0_75() -> None:
    # Three documents, lengths 2, 4 and 1: "file" is in the first two, once and twice.
    index = _index("read file", "file file write disk", "web")
    average = (2 + 4 + 1) / 3
    idf = math.log((3 - 2 + 0.5) / (2 + 0.5) + 1)

    def score(occurrences: int, length: int) -> float:
        return idf * occurrences * 2.2 / (occurrences + 1.2 * (0.25 + 0.75 * length / average))

    assert score(2, 4) > score(1, 2)
    assert index.rank("file", 10) == [1, 0]
    assert index.rank("FILE files", 10) == [1, 0]  # case folded; "files" is another word


def test_only_matching_tools_are_returned_and_ties_keep_listing_order() -> None:
    index = _index("alpha one", "beta two", "alpha one", "gamma")
    assert index.rank("alpha", 10) == [0, 2]
    assert index.rank("delta", 10) == []
    assert index.rank("alpha gamma beta", 2) == [3, 1]


def test_a_rarer_word_weighs_more() -> None:
    index = _index("common rare", "common", "common", "common")
    assert index.rank("common rare", 10)[0] == 0


@pytest.mark.parametrize("query", ["", "   ", "\t\n"])
def test_an_empty_query_is_refused(query: str) -> None:
    with pytest.raises(ValueError, match=r"^a tool search needs a query with at least one word$"):
        _index("a").rank(query, 10)


@pytest.mark.parametrize("limit", [0, -1, 1.5, True, "3"])
def test_limit_must_be_a_positive_integer(limit: object) -> None:
    with pytest.raises(ValueError, match=r"^limit must be a positive integer, got "):
        _index("a").rank("a", limit)  # type: ignore[arg-type]


@given(st.lists(st.text(max_size=40), max_size=30), st.text(min_size=1, max_size=20))
def test_ranking_is_deterministic_and_returns_only_matches(documents: list[str], query: str) -> None:
    if not query.strip():
        return
    index = _index(*documents)
    ranked = index.rank(query, 50)
    assert ranked == _index(*documents).rank(query, 50)
    wanted = set(terms(query))
    assert all(wanted & set(terms(documents[position])) for position in ranked)
    assert len(set(ranked)) == len(ranked)


ENTRY = {
    "name": "search",
    "title": "Search",
    "description": "Find things",
    "inputSchema": {"type": "object", "properties": {"q": {"type": "string", "x-mcp-header": "Query"}}},
    "outputSchema": {"type": "object"},
    "annotations": {"readOnlyHint": True},
}


def test_definitions_in_the_three_shapes() -> None:
    schema = ENTRY["inputSchema"]
    assert definition("gh_search", ENTRY, "mcp") == {
        "name": "gh_search",
        "title": "Search",
        "description": "Find things",
        "inputSchema": schema,
        "outputSchema": {"type": "object"},
    }
    assert definition("gh_search", ENTRY, "openai") == {
        "type": "function",
        "function": {"name": "gh_search", "description": "Find things", "parameters": schema},
    }
    assert definition("gh_search", ENTRY, "anthropic") == {
        "name": "gh_search",
        "description": "Find things",
        "input_schema": schema,
    }


def test_definitions_leave_out_what_the_tool_lacks() -> None:
    bare = {"name": "t", "inputSchema": {"type": "object"}}
    assert definition("t", bare, "mcp") == {"name": "t", "inputSchema": {"type": "object"}}
    assert definition("t", bare, "openai") == {
        "type": "function",
        "function": {"name": "t", "parameters": bare["inputSchema"]},
    }
    assert definition("t", {"name": "t"}, "anthropic") == {
        "name": "t",
        "input_schema": {"type": "object", "properties": {}},
    }
    with pytest.raises(ValueError, match=r"^style must be 'mcp', 'openai' or 'anthropic', got 'gemini'$"):
        definition("t", bare, "gemini")  # type: ignore[arg-type]


def test_context_bytes_is_the_compact_utf8_json_length() -> None:
    shaped = [definition("wetter", {"description": "Größe", "inputSchema": {"type": "object"}}, "mcp")]
    text = '[{"name":"wetter","description":"Größe","inputSchema":{"type":"object"}}]'
    assert (
        context_bytes(shaped)
        == len(text.encode("utf-8"))
        == len(json.dumps(shaped, ensure_ascii=False, separators=(",", ":")).encode())
    )
