"""Ranking listed tools for a query, and what a listing costs a model's context (docs/groups.md, "Many servers").

Pure: no I/O, deterministic for a given listing and query. The ranking is Okapi BM25 over one bag of words per
tool (its name as listed or aggregated, title, description, and every parameter's name and description), as in
Robertson and Zaragoza, "The Probabilistic Relevance Framework: BM25 and Beyond" (2009), with the idf that never
goes negative (Lucene's)::

    score(tool, query) = sum over the distinct query terms q of
        idf(q) * f(q) * (k1 + 1) / (f(q) + k1 * (1 - b + b * length / average_length))
    idf(q) = ln((N - n(q) + 0.5) / (n(q) + 0.5) + 1)

where ``f(q)`` is how often ``q`` occurs in the tool's words, ``length`` the number of its words, ``N`` the number
of tools and ``n(q)`` the number of tools with ``q``; ``k1 = 1.2`` and ``b = 0.75``. Words are the runs of letters
and digits, split again where camelCase starts a new word (``getHTTPResponse`` -> ``get``, ``http``,
``response``) and case-folded; the query is split the same way. Only tools with at least one query word are
returned, best first; equal scores keep the listing's order.

Why not a library: the well-kept BM25 packages (``rank-bm25``, ``bm25s``) bring NumPy (and SciPy) with them, a
numeric stack for a few thousand short documents; this module is the formula above and an inverted index.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

__all__ = ["B", "K1", "DefinitionStyle", "SearchIndex", "context_bytes", "definition", "terms", "tool_words"]

K1: Final = 1.2
"""BM25's term-frequency saturation."""
B: Final = 0.75
"""BM25's length normalisation."""

DefinitionStyle = Literal["mcp", "openai", "anthropic"]
"""The shapes :func:`definition` writes: MCP's ``Tool``, OpenAI's function tool, Anthropic's tool."""

_RUN: Final = re.compile(r"[^\W_]+")
_MAX_PARAMETERS: Final = 10_000
"""Parameters read from one schema at most, so that a hostile schema cannot make indexing unbounded."""


def terms(text: str) -> list[str]:
    """The words of ``text``: letter and digit runs, split at camelCase boundaries, case-folded."""
    words: list[str] = []
    for run in _RUN.findall(text):
        rest = run[1:]
        if not rest or rest.islower() or rest.isdigit():
            # Splits come only before an upper-case letter after the first: most words of a description have
            # none (bench/group.py, the first search of a list, which builds its index).
            words.append(run.casefold())
            continue
        start = 0
        for index in range(1, len(run)):
            previous, current = run[index - 1], run[index]
            if current.isupper() and (
                previous.islower()
                or previous.isdigit()
                or (previous.isupper() and index + 1 < len(run) and run[index + 1].islower())
            ):
                words.append(run[start:index].casefold())
                start = index
        words.append(run[start:].casefold())
    return words


def _parameters(schema: object) -> Iterator[str]:
    # Every property name and description, at any depth of `properties` (an explicit stack: schemas of any depth).
    stack: list[object] = [schema]
    seen = 0
    while stack and seen < _MAX_PARAMETERS:
        node = stack.pop()
        if not isinstance(node, Mapping):
            continue
        properties = node.get("properties")
        if not isinstance(properties, Mapping):
            continue
        for name, subschema in properties.items():
            seen += 1
            if isinstance(name, str):
                yield name
            if isinstance(subschema, Mapping):
                description = subschema.get("description")
                if isinstance(description, str):
                    yield description
                stack.append(subschema)


def tool_words(name: str, entry: Mapping[str, Any]) -> list[str]:
    """The words BM25 counts for one tool: ``name`` (as listed or aggregated), title, description, parameters."""
    texts = [name]
    for field in ("title", "description"):
        value = entry.get(field)
        if isinstance(value, str):
            texts.append(value)
    texts.extend(_parameters(entry.get("inputSchema")))
    return [word for text in texts for word in terms(text)]


@dataclass(frozen=True, slots=True)
class SearchIndex:
    """An inverted index of one listing's tools, built once and searched many times.

    ``postings`` maps a word to ``(tool position, occurrences)`` pairs in listing order; ``lengths`` holds each
    tool's number of words.
    """

    postings: Mapping[str, tuple[tuple[int, int], ...]]
    lengths: tuple[int, ...]

    @classmethod
    def build(cls, documents: Iterable[Sequence[str]]) -> SearchIndex:
        """Index ``documents``, each the words of one tool (:func:`tool_words`), in listing order."""
        postings: dict[str, list[tuple[int, int]]] = {}
        lengths: list[int] = []
        for position, words in enumerate(documents):
            lengths.append(len(words))
            counts: dict[str, int] = {}
            for word in words:
                counts[word] = counts.get(word, 0) + 1
            for word, count in counts.items():
                postings.setdefault(word, []).append((position, count))
        return cls({word: tuple(entries) for word, entries in postings.items()}, tuple(lengths))

    def rank(self, query: str, limit: int) -> list[int]:
        """The positions of the tools matching ``query``, best first (ties in listing order), at most ``limit``.

        Raises:
            ValueError: ``query`` is empty or only whitespace, or ``limit`` is not a positive integer.
        """
        if not isinstance(query, str) or not query.strip():
            raise ValueError("a tool search needs a query with at least one word")
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValueError(f"limit must be a positive integer, got {limit!r}")
        count = len(self.lengths)
        if count == 0:
            return []
        average = sum(self.lengths) / count or 1.0
        scores: dict[int, float] = {}
        for word in dict.fromkeys(terms(query)):
            entries = self.postings.get(word)
            if not entries:
                continue
            idf = math.log((count - len(entries) + 0.5) / (len(entries) + 0.5) + 1)
            for position, occurrences in entries:
                norm = K1 * (1 - B + B * self.lengths[position] / average)
                scores[position] = scores.get(position, 0.0) + idf * occurrences * (K1 + 1) / (occurrences + norm)
        return sorted(scores, key=lambda position: (-scores[position], position))[:limit]


def definition(name: str, entry: Mapping[str, Any], style: DefinitionStyle) -> dict[str, Any]:
    """One tool's definition in ``style``, named ``name``; ``inputSchema`` is passed on unchanged.

    ``"mcp"``: ``name``, then ``title``, ``description``, ``inputSchema``, ``outputSchema``, each only where the
    tool has it. ``"openai"``: ``{"type": "function", "function": {"name", "description", "parameters"}}``.
    ``"anthropic"``: ``{"name", "description", "input_schema"}``. A description is left out where the tool has
    none; a tool listed without an ``inputSchema`` object gets the empty object schema in the two LLM styles,
    which require one.

    Raises:
        ValueError: ``style`` is not one of the three.
    """
    description = entry.get("description")
    schema = entry.get("inputSchema")
    if style == "mcp":
        shaped: dict[str, Any] = {"name": name}
        for field in ("title", "description", "inputSchema", "outputSchema"):
            if field in entry:
                shaped[field] = entry[field]
        return shaped
    parameters = schema if isinstance(schema, Mapping) else {"type": "object", "properties": {}}
    if style == "openai":
        function: dict[str, Any] = {"name": name}
        if isinstance(description, str):
            function["description"] = description
        function["parameters"] = parameters
        return {"type": "function", "function": function}
    if style == "anthropic":
        tool: dict[str, Any] = {"name": name}
        if isinstance(description, str):
            tool["description"] = description
        tool["input_schema"] = parameters
        return tool
    raise ValueError(f"style must be 'mcp', 'openai' or 'anthropic', got {style!r}")


def context_bytes(definitions: Iterable[Mapping[str, Any]]) -> int:
    """The UTF-8 length of one compact JSON array (separators ``,`` and ``:``) of ``definitions``."""
    text = json.dumps(list(definitions), separators=(",", ":"), ensure_ascii=False)
    return len(text.encode("utf-8"))
