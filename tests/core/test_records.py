"""The internal records made cheap to create at import (typing.NamedTuple): immutable values, as the dataclasses were.

Public types, events and plans stay frozen dataclasses; these are the wire and configuration records only the
library builds. Their reprs hiding credentials are checked with the other no-credential rules in test_wire.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from mcpfsm._core.cache import CacheHint, _Entry
from mcpfsm._core.catalog import ToolCatalog
from mcpfsm._core.h1 import ResponseHead
from mcpfsm._core.jsonrpc import Request, Response
from mcpfsm._core.proxies import ProxyRule, ProxyRules
from mcpfsm._core.sse import SseEvent
from mcpfsm._transports.base import Reply
from mcpfsm._transports.pool import ProxyRoute, Timeouts

RULE = ProxyRule(scheme="", host="", port=None, proxy="http://proxy.test:3128")
RECORDS = [
    pytest.param(Request(id=1, method="ping", params={}), id="Request"),
    pytest.param(Response(id=1, result={}), id="Response"),
    pytest.param(ResponseHead(200, "OK", {"content-length": "2"}, True), id="ResponseHead"),
    pytest.param(Reply(b"{}", 200, "s-1"), id="Reply"),
    pytest.param(Timeouts(read=5.0), id="Timeouts"),
    pytest.param(ProxyRoute(scheme="http", host="proxy.test", port=3128), id="ProxyRoute"),
    pytest.param(RULE, id="ProxyRule"),
    pytest.param(ProxyRules((RULE,)), id="ProxyRules"),
    pytest.param(SseEvent(event="message", data="{}", id="7", retry=None), id="SseEvent"),
    pytest.param(CacheHint(ttl_ms=1000, scope="private"), id="CacheHint"),
    pytest.param(_Entry({}, 1.0, "public", 2), id="_Entry"),
    pytest.param(ToolCatalog(), id="ToolCatalog"),
]


@pytest.mark.parametrize("record", RECORDS)
def test_no_field_can_be_set_or_deleted_nor_a_new_one_added(record: Any) -> None:
    for name in record._fields:
        with pytest.raises(AttributeError, match=r"^can't set attribute$"):
            setattr(record, name, None)
        with pytest.raises(AttributeError, match=r"^can't delete attribute$"):
            delattr(record, name)
    with pytest.raises(AttributeError, match=rf"^'{type(record).__name__}' object has no attribute 'extra'$"):
        record.extra = 1


@pytest.mark.parametrize("record", RECORDS)
def test_equal_by_value_and_rebuilt_from_its_fields(record: Any) -> None:
    fields = {name: getattr(record, name) for name in record._fields}
    assert type(record)(**fields) == record
    changed = record._replace(**{record._fields[0]: "other"})
    assert changed != record


def test_defaults_are_the_dataclasses_defaults() -> None:
    assert Timeouts() == Timeouts(connect=30.0, write=30.0, read=300.0, pool=30.0)
    assert Response(id=3) == Response(id=3, result=None, error=None)
    assert Reply("{}") == Reply("{}", status=None, session_id=None, www_authenticate=(), dpop_nonce=None)
    assert ResponseHead(204, "No Content", {}, False).set_cookie == ()
    assert ProxyRoute(scheme="http", host="p", port=1) == ProxyRoute(
        scheme="http", host="p", port=1, authorization=None, ssl_context=None
    )
    assert ProxyRules().select("http", "example.com", 80) is None
    assert ToolCatalog() == ToolCatalog(tools=(), excluded=(), inert=())
