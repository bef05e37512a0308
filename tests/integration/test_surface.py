"""Resources, prompts, completion, subscriptions and logging against the official SDK server, in both eras.

The peer (``mcpfsm._tooling.demo_server`` with ``demo_surface``) logs every request it receives, so each test also
proves what went on the wire: ``Mcp-Name`` carries the prompt name or resource URI in the modern era and no
``Mcp-*`` request header goes out in the legacy era (SEP-2243; MCP 2025-11-25 and 2026-07-28).
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

import pytest
import trio

import mcpfsm
from mcpfsm._core.jsonrpc import Notification
from mcpfsm._core.surface import Prompt, PromptArgument, Resource, ResourceTemplate
from tests.support.peer.fixtures import HttpPeer

MODERN: Final = "2026-07-28"
LEGACY: Final = "2025-11-25"
ERAS: Final = [MODERN, LEGACY]
SUB_ID: Final = "io.modelcontextprotocol/subscriptionId"

RESOURCES: Final = [
    Resource(
        uri="res://static/readme",
        name="readme",
        description="A static text resource",
        mime_type="text/plain",
        raw={},
    ),
    Resource(
        uri="res://static/logo", name="logo", description="A static binary resource", mime_type="image/png", raw={}
    ),
]
TEMPLATES: Final = [
    ResourceTemplate(
        uri_template="res://items/{item_id}", name="item", description="One item by id", mime_type="application/json",
        raw={},
    ),
    ResourceTemplate(
        uri_template="res://ask/{key}", name="ask", description="Asks who is asking (an input round)",
        mime_type="text/plain", raw={},
    ),
]
PROMPTS: Final = [
    Prompt(
        name="greet",
        description="Greeting prompt with arguments",
        arguments=(PromptArgument(name="name", required=True), PromptArgument(name="style", required=False)),
        raw={},
    ),
    Prompt(name="ask-greet", description="Asks who is asking (an input round), then greets", raw={}),
]


def wire(peer: HttpPeer) -> list[tuple[str, str | None, int | None, str | None, str | None]]:
    """(HTTP method, JSON-RPC method, status, Mcp-Method, Mcp-Name) of every request the peer saw."""
    return [
        (
            entry["http_method"],
            entry["jsonrpc_method"],
            entry["status"],
            entry["headers"].get("mcp-method"),
            entry["headers"].get("mcp-name"),
        )
        for entry in peer.log()
    ]


def sent(era: str, method: str, name: str | None = None, status: int = 200) -> tuple[Any, ...]:
    if era == MODERN:
        return ("POST", method, status, method, name)
    return ("POST", method, status, None, None)


def opened(era: str) -> list[tuple[Any, ...]]:
    """The legacy handshake, then the standalone GET stream the session keeps (MCP 2025-11-25)."""
    if era == MODERN:
        return []
    return [
        ("POST", "initialize", 200, None, None),
        ("POST", "notifications/initialized", 202, None, None),
        ("GET", None, 200, None, None),
    ]


def closed(era: str) -> list[tuple[Any, ...]]:
    return [] if era == MODERN else [("DELETE", None, 200, None, None)]


async def control(peer: HttpPeer, action: dict[str, Any]) -> None:
    await trio.to_thread.run_sync(peer.control, action)


@pytest.mark.parametrize("era", ERAS)
async def test_every_surface_method_returns_typed_results_and_names_its_target(peer: HttpPeer, era: str) -> None:
    async with mcpfsm.Client.http(peer.url, protocol=era) as client:
        resources = await client.resources()
        templates = await client.resource_templates()
        readme = await client.read_resource(resources[0])
        logo = await client.read_resource("res://static/logo")
        item = await client.read_resource("res://items/7")
        prompts = await client.prompts()
        prompt = await client.get_prompt(prompts[0], {"name": "Ada", "style": "fancy"})
        styles = await client.complete(prompts[0], ("style", "f"))
        ids = await client.complete(templates[0], {"name": "item_id", "value": "4"})
        by_wire = await client.complete({"type": "ref/prompt", "name": "greet"}, ("style", "p"), {"name": "Ada"})

    assert (resources, templates, prompts) == (RESOURCES, TEMPLATES, PROMPTS)
    assert resources[0].raw == {
        "uri": "res://static/readme",
        "name": "readme",
        "description": "A static text resource",
        "mimeType": "text/plain",
    }
    assert readme.contents == [
        {"uri": "res://static/readme", "mimeType": "text/plain", "text": "hello from a static resource"}
    ]
    assert (readme.text, readme.blobs) == ("hello from a static resource", [])
    assert (logo.text, logo.blobs) == ("", [b"\x89PNG\r\n\x1a\nfake"])
    assert json.loads(item.text) == {"id": "7", "label": "item 7"}
    assert (prompt.description, prompt.messages, prompt.text) == (
        "Greeting prompt with arguments",
        [{"role": "user", "content": {"type": "text", "text": "Say hello to Ada in a fancy style."}}],
        "Say hello to Ada in a fancy style.",
    )
    assert [(c.values, c.total, c.has_more) for c in (styles, ids, by_wire)] == [
        (("fancy", "formal"), 2, False),
        (("42",), None, False),
        (("plain",), 1, False),
    ]
    assert wire(peer) == [
        *opened(era),
        sent(era, "resources/list"),
        sent(era, "resources/templates/list"),
        sent(era, "resources/read", "res://static/readme"),
        sent(era, "resources/read", "res://static/logo"),
        sent(era, "resources/read", "res://items/7"),
        sent(era, "prompts/list"),
        sent(era, "prompts/get", "greet"),
        sent(era, "completion/complete"),
        sent(era, "completion/complete"),
        sent(era, "completion/complete"),
        *closed(era),
    ]


@pytest.mark.parametrize(
    ("era", "code", "message"),
    [(MODERN, -32603, "Internal server error"), (LEGACY, 0, "Missing required arguments: {'name'}")],
)
async def test_server_errors_are_rpc_errors_and_the_client_stays_usable(
    peer: HttpPeer, era: str, code: int, message: str
) -> None:
    async with mcpfsm.Client.http(peer.url, protocol=era) as client:
        with pytest.raises(mcpfsm.RpcError, match=r"^JSON-RPC error -32602: Unknown resource: res://nope$") as unknown:
            await client.read_resource("res://nope")
        with pytest.raises(mcpfsm.RpcError) as missing:
            await client.get_prompt("greet", {})
        assert (await client.read_resource("res://static/readme")).text == "hello from a static resource"

    assert (unknown.value.code, unknown.value.data) == (-32602, {"uri": "res://nope"})
    assert (missing.value.code, missing.value.message) == (code, message)


async def test_bad_arguments_raise_before_anything_is_sent(peer: HttpPeer) -> None:
    async with mcpfsm.Client.http(peer.url, protocol=MODERN) as client:
        with pytest.raises(TypeError, match=r"^uri must be a str or a Resource, got int$"):
            await client.read_resource(3)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=r"^name must be a str or a Prompt, got NoneType$"):
            await client.get_prompt(None)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=r"^arguments must map names to string values$"):
            await client.get_prompt("greet", {"name": 1})  # type: ignore[dict-item]
        with pytest.raises(TypeError, match=r"^argument must be \(name, value\) or \{'name'"):
            await client.complete({"type": "ref/prompt", "name": "greet"}, ("style",))  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=r"^ref must be a Prompt, a ResourceTemplate"):
            await client.complete({"type": "ref/tool", "name": "x"}, ("a", "b"))
        with pytest.raises(TypeError, match=r"^resource_uris must be a sequence of URI strings$"):
            async with client.listen(resource_uris="res://static/readme"):
                pass
        with pytest.raises(mcpfsm.MirroringError, match=r"^params\.uri of resources/read must be a string"):
            await client.request("resources/read", {"uri": 5})

    assert wire(peer) == []


async def test_a_non_ascii_uri_goes_into_mcp_name_encoded(peer: HttpPeer) -> None:
    async with mcpfsm.Client.http(peer.url, protocol=MODERN) as client:
        item = await client.read_resource("res://items/café")

    assert json.loads(item.text) == {"id": "café", "label": "item café"}
    assert wire(peer) == [sent(MODERN, "resources/read", "=?base64?cmVzOi8vaXRlbXMvY2Fmw6k=?=")]


@pytest.mark.parametrize("era", ERAS)
async def test_listen_delivers_what_was_asked_for_and_nothing_else(peer: HttpPeer, era: str) -> None:
    async with mcpfsm.Client.http(peer.url, protocol=era) as client:
        async with client.listen(tools=True, resource_uris=["res://static/readme"]) as subscription:
            # Announced but not asked for: the server (modern) or the client (legacy) filters it out.
            await control(peer, {"action": "prompts_changed"})
            await control(peer, {"action": "resource_updated", "uri": "res://static/logo"})
            await control(peer, {"action": "tools_changed"})
            first = await subscription.receive()
            await control(peer, {"action": "resource_updated", "uri": "res://static/readme"})
            second = await subscription.receive()
        acknowledged, subscription_id = subscription.acknowledged, subscription.subscription_id
        # The client is still usable once the subscription has ended.
        assert len(await client.resources()) == 2

    assert acknowledged == {"toolsListChanged": True, "resourceSubscriptions": ["res://static/readme"]}
    if era == MODERN:
        meta = {"_meta": {SUB_ID: subscription_id}}
        assert isinstance(subscription_id, int)
        assert (first, second) == (
            Notification(method="notifications/tools/list_changed", params=meta),
            Notification(method="notifications/resources/updated", params={**meta, "uri": "res://static/readme"}),
        )
        assert wire(peer) == [sent(MODERN, "subscriptions/listen"), sent(MODERN, "resources/list")]
    else:
        assert subscription_id is None
        assert (first, second) == (
            Notification(method="notifications/tools/list_changed", params={}),
            Notification(method="notifications/resources/updated", params={"uri": "res://static/readme"}),
        )
        assert wire(peer) == [
            *opened(LEGACY),
            sent(LEGACY, "resources/subscribe"),
            sent(LEGACY, "resources/unsubscribe"),
            sent(LEGACY, "resources/list"),
            *closed(LEGACY),
        ]


async def test_a_graceful_end_of_a_modern_subscription_ends_the_iteration(peer: HttpPeer) -> None:
    received: list[str] = []
    async with (
        mcpfsm.Client.http(peer.url, protocol=MODERN) as client,
        client.listen(prompts=True, resources=True) as subscription,
    ):
            await control(peer, {"action": "resources_changed"})
            await control(peer, {"action": "close_listens"})
            async for notification in subscription:
                received.append(notification.method)

    assert (subscription.acknowledged, received) == (
        {"promptsListChanged": True, "resourcesListChanged": True},
        ["notifications/resources/list_changed"],
    )


async def test_two_modern_subscriptions_are_told_apart_by_their_ids(peer: HttpPeer) -> None:
    async with (
        mcpfsm.Client.http(peer.url, protocol=MODERN) as client,
        client.listen(tools=True) as tools,
        client.listen(prompts=True) as prompts,
    ):
            await control(peer, {"action": "prompts_changed"})
            await control(peer, {"action": "tools_changed"})
            got = [(await tools.receive()).method, (await prompts.receive()).method]

    assert tools.subscription_id != prompts.subscription_id
    assert got == ["notifications/tools/list_changed", "notifications/prompts/list_changed"]


@pytest.mark.parametrize(
    ("era", "level", "messages"),
    [
        (MODERN, "info", [("info", "slow: sleeping 0.01 s")]),
        (MODERN, "warning", []),
        (LEGACY, "info", [("info", "slow: sleeping 0.01 s")]),
    ],
)
async def test_log_level_asks_the_server_for_its_log_messages(
    peer: HttpPeer, era: str, level: str, messages: list[tuple[str, str]]
) -> None:
    seen: list[tuple[str, str]] = []

    def note(method: str, params: dict[str, Any]) -> None:
        if method == "notifications/message":
            seen.append((params["level"], params["data"]))

    options: Any = {"log_level": level, "on_notification": note}
    async with mcpfsm.Client.http(peer.url, protocol=era, **options) as client:
        assert (await client.call_tool("slow", {"seconds": 0.01})).text == "done"

    assert seen == messages
    methods = [entry[1] for entry in wire(peer)]
    assert ("logging/setLevel" in methods) == (era == LEGACY)


def test_an_unknown_log_level_is_refused() -> None:
    message = (
        "log_level must be None or one of ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert',"
        " 'emergency'], got 'verbose'"
    )
    with pytest.raises(ValueError, match="^" + re.escape(message) + "$"):
        mcpfsm.Client.http("http://127.0.0.1:1/mcp", log_level="verbose")  # type: ignore[arg-type]


@pytest.mark.parametrize("era", ERAS)
async def test_prompts_and_reads_run_the_input_rounds_of_the_server(peer: HttpPeer, era: str) -> None:
    asked: list[dict[str, Any]] = []

    async def elicit(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return {"action": "accept", "content": {"name": "Grace"}}

    peer.control({"action": "cache_hints", "hints": {"resources/read": {"ttlMs": 3_600_000}}})
    async with mcpfsm.Client.http(peer.url, protocol=era, on_elicitation=elicit) as client:
        prompt = await client.get_prompt("ask-greet")
        first = await client.read_resource("res://ask/k1")
        again = await client.read_resource("res://ask/k1")

    assert (prompt.text, first.text, again.text) == ("Say hello to Grace.", "k1 for Grace", "k1 for Grace")
    assert [params["message"] for params in asked] == ["Who is asking?"] * 3
    if era == MODERN:
        # Each answered by a resend with the answers; the input_required reads and their retries are never
        # cached (SEP-2549, SEP-2322), so the second read asks again.
        assert wire(peer) == [
            sent(MODERN, "prompts/get", "ask-greet"),
            sent(MODERN, "prompts/get", "ask-greet"),
            *[sent(MODERN, "resources/read", "res://ask/k1")] * 4,
        ]
    else:
        # Answered by POST while the request waits (the 202s are the answers).
        assert wire(peer) == [
            *opened(LEGACY),
            sent(LEGACY, "prompts/get"),
            ("POST", None, 202, None, None),
            sent(LEGACY, "resources/read"),
            ("POST", None, 202, None, None),
            sent(LEGACY, "resources/read"),
            ("POST", None, 202, None, None),
            *closed(LEGACY),
        ]
