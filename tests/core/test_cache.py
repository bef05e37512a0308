"""The pure response cache (SEP-2549): keys, hints, freshness on a fake clock, scope, invalidation, bounds."""

from __future__ import annotations

from typing import Any

import pytest

from mcpfsm._core.cache import (
    DEFAULT_MAX_BYTES,
    MAX_TTL_MS,
    CacheHint,
    ResponseCache,
    cache_hint,
    cache_key,
    encoded_size,
)

MODERN = "2026-07-28"


def page(ttl: Any = 60_000, scope: Any = "private", **extra: Any) -> dict[str, Any]:
    result: dict[str, Any] = {"tools": [{"name": "t"}], "resultType": "complete", **extra}
    if ttl is not None:
        result["ttlMs"] = ttl
    if scope is not None:
        result["cacheScope"] = scope
    return result


@pytest.mark.parametrize(
    ("method", "params", "key"),
    [
        ("tools/list", None, (MODERN, "tools/list", None)),
        ("tools/list", {"cursor": "c2"}, (MODERN, "tools/list", "c2")),
        ("tools/list", {"cursor": ""}, (MODERN, "tools/list", "")),
        ("prompts/list", {"_meta": {"progressToken": 1}}, (MODERN, "prompts/list", None)),
        ("resources/read", {"uri": "res://a", "_meta": {}}, (MODERN, "resources/read", "res://a")),
        ("resources/templates/list", {}, (MODERN, "resources/templates/list", None)),
        ("server/discover", {}, (MODERN, "server/discover", None)),
        ("tools/call", {"name": "x"}, None),
        ("prompts/get", {"name": "x"}, None),
        ("completion/complete", {}, None),
        ("subscriptions/listen", {}, None),
        ("resources/read", {"uri": "res://a", "inputResponses": {}}, None),
        ("resources/read", {"uri": "res://a", "requestState": "s"}, None),
        ("tools/list", {"cursor": 3}, None),
    ],
)
def test_cache_key(method: str, params: dict[str, Any] | None, key: Any) -> None:
    assert cache_key(MODERN, method, params) == key


@pytest.mark.parametrize(
    ("result", "hint"),
    [
        (page(), CacheHint(ttl_ms=60_000, scope="private")),
        (page(scope="public"), CacheHint(ttl_ms=60_000, scope="public")),
        (page(scope=None), CacheHint(ttl_ms=60_000, scope="private")),
        (page(scope="shared"), CacheHint(ttl_ms=60_000, scope="private")),
        (page(ttl=None), None),
        (page(ttl=0), None),
        (page(ttl=-5), None),
        (page(ttl=1.5), None),
        (page(ttl=True), None),
        (page(ttl="60"), None),
        ({**page(), "resultType": "input_required"}, None),
        (page(ttl=MAX_TTL_MS), CacheHint(ttl_ms=86_400_000, scope="private")),
        (page(ttl=MAX_TTL_MS + 1), CacheHint(ttl_ms=86_400_000, scope="private")),
        (page(ttl=10**400), CacheHint(ttl_ms=86_400_000, scope="private")),
    ],
    ids=["private", "public", "scope-absent", "scope-unknown", "ttl-absent", "ttl-zero", "ttl-negative",
         "ttl-float", "ttl-bool", "ttl-string", "input-required", "ttl-24h", "ttl-above-24h-clamped",
         "ttl-huge-clamped"],
)
def test_cache_hint(result: dict[str, Any], hint: CacheHint | None) -> None:
    assert cache_hint(result) == hint


def test_an_entry_is_fresh_until_its_ttl_runs_out_on_the_callers_clock() -> None:
    cache = ResponseCache()
    key = (MODERN, "tools/list", None)
    assert cache.put(key, page(ttl=1000), received=10.0) is True
    assert cache.get(key, 10.999) == page(ttl=1000)
    assert cache.get(key, 11.0) is None
    assert (len(cache), cache.stats.hits, cache.stats.misses) == (0, 1, 1)


def test_a_huge_ttl_is_kept_for_24_hours_at_most() -> None:
    # A ttlMs of 400 digits would overflow float arithmetic: it is clamped before any.
    cache = ResponseCache()
    key = (MODERN, "tools/list", None)
    assert cache.put(key, page(ttl=10**400), received=10.0) is True
    assert cache.get(key, 10.0 + 86_399.999) == page(ttl=10**400)
    assert cache.get(key, 10.0 + 86_400.0) is None


def test_hits_are_copies_so_a_caller_cannot_change_the_next_hit() -> None:
    cache = ResponseCache()
    key = (MODERN, "tools/list", None)
    original = page()
    cache.put(key, original, 0.0)
    original["tools"].append({"name": "added after put"})
    first = cache.get(key, 1.0)
    assert first is not None
    first["tools"].clear()
    assert cache.get(key, 1.0) == page()


def test_a_result_that_may_not_be_stored_drops_the_older_entry() -> None:
    cache = ResponseCache()
    key = (MODERN, "tools/list", None)
    cache.put(key, page(), 0.0)
    assert cache.put(key, page(ttl=0), 1.0) is False
    assert cache.get(key, 1.0) is None


def test_notifications_invalidate_what_they_name() -> None:
    cache = ResponseCache()
    keys = {
        "tools": (MODERN, "tools/list", None),
        "tools-2": (MODERN, "tools/list", "c2"),
        "prompts": (MODERN, "prompts/list", None),
        "resources": (MODERN, "resources/list", None),
        "templates": (MODERN, "resources/templates/list", None),
        "dir": (MODERN, "resources/read", "file:///dir"),
        "file": (MODERN, "resources/read", "file:///dir/a.txt"),
        "sibling": (MODERN, "resources/read", "file:///dir2"),
        "other": (MODERN, "resources/read", "res://other"),
        "discover": (MODERN, "server/discover", None),
    }

    def remaining() -> list[str]:
        return sorted(name for name, key in keys.items() if key in cache._entries)

    for key in keys.values():
        cache.put(key, page(), 0.0)
    cache.invalidate("notifications/tools/list_changed", {})
    assert remaining() == ["dir", "discover", "file", "other", "prompts", "resources", "sibling", "templates"]
    cache.invalidate("notifications/prompts/list_changed")
    cache.invalidate("notifications/resources/list_changed")
    assert remaining() == ["dir", "discover", "file", "other", "sibling"]
    cache.invalidate("notifications/resources/updated", {"uri": "file:///dir/a.txt"})
    assert remaining() == ["discover", "other", "sibling"]
    cache.invalidate("notifications/message", {"level": "info"})
    cache.invalidate("notifications/resources/updated", {})
    assert remaining() == ["discover", "other", "sibling"]


def test_clear_empties_and_keep_public_keeps_only_public_entries() -> None:
    cache = ResponseCache()
    public, private = (MODERN, "tools/list", None), (MODERN, "prompts/list", None)
    cache.put(public, page(scope="public"), 0.0)
    cache.put(private, page(scope="private"), 0.0)
    cache.clear(keep_public=True)
    assert (cache.get(public, 1.0) is not None, cache.get(private, 1.0)) == (True, None)
    cache.clear()
    assert len(cache) == 0


def test_the_least_recently_used_entry_goes_first() -> None:
    cache = ResponseCache(max_entries=2)
    a, b, c = ((MODERN, "resources/read", uri) for uri in ("res://a", "res://b", "res://c"))
    cache.put(a, page(), 0.0)
    cache.put(b, page(), 0.0)
    assert cache.get(a, 1.0) is not None
    cache.put(c, page(), 0.0)
    assert [key[2] for key in cache._entries] == ["res://a", "res://c"]


def test_forget_drops_every_page_of_one_method() -> None:
    cache = ResponseCache()
    for cursor in (None, "c2", "c3"):
        cache.put((MODERN, "tools/list", cursor), page(), 0.0)
    cache.put((MODERN, "prompts/list", None), page(), 0.0)
    cache.forget("tools/list")
    assert list(cache._entries) == [(MODERN, "prompts/list", None)]


def test_max_entries_must_be_positive() -> None:
    with pytest.raises(ValueError, match=r"^max_entries must be at least 1$"):
        ResponseCache(max_entries=0)


def resource(size: int) -> dict[str, Any]:
    return {"contents": [{"uri": "res://big", "text": "x" * size}], "resultType": "complete", "ttlMs": 60_000}


def test_the_default_cache_keeps_a_byte_budget_not_every_dropped_10_mb_resource() -> None:
    # The fault run: 30 resources of 10 MB each, read once and never again, all stayed in memory.
    cache = ResponseCache()
    for number in range(30):
        cache.put((MODERN, "resources/read", f"res://big/{number}"), resource(10_000_000), 0.0)
    assert cache.bytes <= DEFAULT_MAX_BYTES
    assert [key[2] for key in cache._entries] == ["res://big/27", "res://big/28", "res://big/29"]


def test_the_oldest_entries_go_first_until_the_bytes_fit() -> None:
    cache = ResponseCache(max_bytes=3 * encoded_size(resource(1000)))
    for uri in ("res://a", "res://b", "res://c"):
        cache.put((MODERN, "resources/read", uri), resource(1000), 0.0)
    assert cache.get((MODERN, "resources/read", "res://a"), 1.0) is not None
    cache.put((MODERN, "resources/read", "res://d"), resource(1000), 0.0)
    assert [key[2] for key in cache._entries] == ["res://c", "res://a", "res://d"]
    assert cache.bytes == 3 * encoded_size(resource(1000))


def test_a_result_over_the_budget_is_not_stored_and_drops_the_older_one() -> None:
    key = (MODERN, "resources/read", "res://a")
    cache = ResponseCache(max_bytes=2000)
    assert cache.put(key, resource(100), 0.0)
    assert not cache.put(key, resource(5000), 0.0)
    assert (len(cache), cache.bytes) == (0, 0)


def test_the_byte_count_follows_every_removal() -> None:
    cache = ResponseCache()
    cache.put((MODERN, "tools/list", None), page(), 0.0)
    cache.put((MODERN, "resources/read", "res://a"), resource(10), 0.0)
    cache.put((MODERN, "prompts/list", None), page(ttl=1000), 0.0)
    cache.forget("tools/list")
    cache.invalidate("notifications/resources/updated", {"uri": "res://a"})
    assert cache.bytes == encoded_size(page(ttl=1000))
    assert cache.get((MODERN, "prompts/list", None), 5.0) is None
    assert cache.bytes == 0


def test_the_size_is_the_utf8_json_encoding() -> None:
    assert encoded_size({"a": "é"}) == len('{"a":"é"}'.encode())


def test_max_bytes_must_be_positive() -> None:
    with pytest.raises(ValueError, match=r"^max_bytes must be at least 1$"):
        ResponseCache(max_bytes=0)
