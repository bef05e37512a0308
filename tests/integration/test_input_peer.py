"""Input the server asks for, against the official SDK server (tests/support/peer, tools of
mcpfsm/_tooling/demo_input.py).

Modern (2026-07-28): the SDK answers ``input_required`` and checks the resend (its sealed ``requestState`` must
come back exactly, or it answers -32602). Legacy (2025-11-25): the SDK sends real requests on the call's
stream or on the standalone GET stream, which mcpfsm opens after ``notifications/initialized``. Over stdio,
both eras share the one pipe.
"""

from __future__ import annotations

import sys
from typing import Any, Final

import pytest
import trio

import mcpfsm
from tests.support.peer.fixtures import REPO_ROOT, HttpPeer

MODERN: Final = "2026-07-28"
LEGACY: Final = "2025-11-25"
GREETING: Final = "Hello, Grace Hopper!"


class User:
    """The handlers: a user who answers forms by their message, a stub model, one root."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, str]] = []

    async def on_elicitation(self, params: dict[str, Any]) -> dict[str, Any]:
        message = params.get("message", "")
        self.asked.append(("elicitation", message))
        if params.get("mode") == "url":
            return {"action": "accept"}
        names = {"First name?": "Grace", "Last name?": "Hopper"}
        content = {"name": names[message]} if message in names else {}
        return {"action": "accept", "content": content}

    async def on_sampling(self, params: dict[str, Any]) -> dict[str, Any]:
        self.asked.append(("sampling", params["messages"][0]["content"]["text"]))
        return {"role": "assistant", "content": {"type": "text", "text": GREETING}, "model": "stub-model"}

    async def on_roots(self, params: dict[str, Any]) -> dict[str, Any]:
        self.asked.append(("roots", ""))
        return {"roots": [{"uri": "file:///work/project", "name": "project"}]}

    def handlers(self, **extra: Any) -> dict[str, Any]:
        return {
            "on_elicitation": self.on_elicitation,
            "on_sampling": self.on_sampling,
            "on_roots": self.on_roots,
            **extra,
        }


def fresh(dual: HttpPeer) -> HttpPeer:
    dual.control({"action": "reset"})
    return dual


def tool_calls(dual: HttpPeer) -> list[tuple[int | None, dict[str, Any] | None]]:
    return [(entry["status"], entry["input"]) for entry in dual.log() if entry["jsonrpc_method"] == "tools/call"]


ROUND_TRIP: Final = [
    (
        "ask-name",
        {},
        "Hello, Ada!",
        {"action": "accept", "content": {"name": "Ada"}},
        [("elicitation", "What is your name?")],
    ),
    (
        "ask-model",
        {},
        GREETING,
        {"text": GREETING, "model": "stub-model"},
        [("sampling", "Write a haiku about state machines.")],
    ),
    ("list-roots", {}, "file:///work/project", {"roots": ["file:///work/project"]}, [("roots", "")]),
    ("ask-url", {}, "accept", {"action": "accept"}, [("elicitation", "Sign in to continue.")]),
]


@pytest.mark.parametrize("protocol", [MODERN, LEGACY])
@pytest.mark.parametrize(
    ("tool", "arguments", "text", "structured", "asked"), ROUND_TRIP, ids=[r[0] for r in ROUND_TRIP]
)
async def test_elicitation_sampling_roots_and_url_mode_in_both_eras(
    dual: HttpPeer,
    protocol: str,
    tool: str,
    arguments: dict[str, Any],
    text: str,
    structured: dict[str, Any],
    asked: list[tuple[str, str]],
) -> None:
    fresh(dual)
    user = User()

    async with mcpfsm.Client.http(
        dual.url, protocol=protocol, elicitation_modes=("form", "url"), **user.handlers()
    ) as client:
        handle = (await client.tools()).get(tool)
        assert handle is not None
        outcome = await handle.call(arguments)

    assert (outcome.text, outcome.structured_content, outcome.is_error) == (text, structured, False)
    assert user.asked == asked
    if protocol == MODERN:
        state = tool != "ask-model" and tool != "ask-url"  # those two send no requestState
        keys = {"ask-name": ["name"], "ask-model": ["haiku"], "list-roots": ["roots"], "ask-url": ["sign-in"]}[tool]
        assert tool_calls(dual) == [(200, None), (200, {"responses": keys, "state": state})]
    else:
        assert tool_calls(dual) == [(200, None)]


@pytest.mark.parametrize("protocol", [MODERN, LEGACY])
async def test_a_call_that_elicits_twice_and_samples_once_succeeds_with_the_handlers_answers(
    dual: HttpPeer, protocol: str
) -> None:
    fresh(dual)
    user = User()
    events: list[mcpfsm.CallEvent] = []

    async with mcpfsm.Client.http(dual.url, protocol=protocol, on_event=events.append, **user.handlers()) as client:
        interview = (await client.tools()).get("interview")
        assert interview is not None
        outcome = await interview.call({})

    assert (outcome.text, outcome.structured_content) == (
        GREETING,
        {"first": "Grace", "last": "Hopper", "greeting": GREETING},
    )
    assert sorted(user.asked[:2]) == [("elicitation", "First name?"), ("elicitation", "Last name?")]
    assert user.asked[2:] == [("sampling", "Greet Grace Hopper.")]
    if protocol == MODERN:
        assert [(e.state, e.round, e.input_requests) for e in events] == [
            ("resolving", 0, None),
            ("planning", 0, None),
            ("sending", 0, None),
            ("awaiting_input", 1, {"first": "elicitation/create", "last": "elicitation/create"}),
            ("resending", 1, None),
            ("awaiting_input", 2, {"greeting": "sampling/createMessage"}),
            ("resending", 2, None),
            ("succeeded", 2, None),
        ]
        assert tool_calls(dual) == [
            (200, None),
            (200, {"responses": ["first", "last"], "state": True}),
            (200, {"responses": ["greeting"], "state": True}),
        ]
    else:
        # Legacy: the server's requests are answered while the call stays in `sending`; each answer is
        # audited as an InputEvent naming the waiting tool (the requests came on the call's own stream).
        states = [(e.machine, e.state) for e in events]
        assert [state for machine, state in states if machine == "tool-call"] == [
            "resolving", "planning", "sending", "succeeded",
        ]
        # Each request arrives (awaiting_input) while the call is in `sending`: the server needs its answer to
        # go on. The event of an answer's delivery (`succeeded`) may trail the call's own end: the server can
        # finish the call's stream before its 202 for the last answer reaches the client.
        ended = states.index(("tool-call", "succeeded"))
        arrived = [i for i, (machine, state) in enumerate(states) if (machine, state) == ("input", "awaiting_input")]
        assert len(arrived) == 3
        assert all(states.index(("tool-call", "sending")) < i < ended for i in arrived)
        assert len(states) == 4 + 6
        runs: dict[str, list[tuple[Any, ...]]] = {}
        for e in events:
            if isinstance(e, mcpfsm.InputEvent):
                step = (e.state, e.previous, e.trigger, e.tool, e.request, e.input_requests, e.input_responses, e.error)
                runs.setdefault(e.target, []).append(step)

        def answered(method: str, key: str) -> list[tuple[Any, ...]]:
            return [
                ("awaiting_input", None, None, "interview", method, {key: method}, None, None),
                ("succeeded", "awaiting_input", "answered", "interview", method, None, None, None),
            ]

        assert sorted(runs.items()) == [
            ("1", answered("elicitation/create", "1")),
            ("2", answered("elicitation/create", "2")),
            ("3", answered("sampling/createMessage", "3")),
        ]
        answers = [e for e in dual.log() if e["http_method"] == "POST" and e["jsonrpc_method"] is None]
        assert [e["status"] for e in answers] == [202, 202, 202]


async def test_state_only_rounds_and_a_verbatim_request_state(dual: HttpPeer) -> None:
    fresh(dual)
    async with mcpfsm.Client.http(dual.url, protocol=MODERN, **User().handlers()) as client:
        tools = await client.tools()
        state_only, echo = tools.get("state-only"), tools.get("echo-state")
        assert state_only is not None and echo is not None
        assert (await state_only.call({"rounds": 2})).structured_content == {"rounds": 2}
        state = '{"nonce": "ä b\\n", "n": 1}'
        echoed = await echo.call({"state": state})
        absent = await echo.call({})

    confirmed = {"confirm": {"action": "accept", "content": {}}}
    assert echoed.structured_content == {"requestState": state, "inputResponses": confirmed}
    assert absent.structured_content == {"requestState": "absent", "inputResponses": confirmed}


async def test_a_legacy_server_request_on_the_standalone_stream_only(dual: HttpPeer) -> None:
    fresh(dual)

    async def accept_defaults(params: dict[str, Any]) -> dict[str, Any]:
        return {"action": "accept", "content": {}}

    async with mcpfsm.Client.http(dual.url, protocol=LEGACY, on_elicitation=accept_defaults) as client:
        with trio.fail_after(20):
            outcome = await client.call_tool("elicit-defaults")
        by_get = await client.call_tool("ask-name", {"stream": "get"})

    assert outcome.structured_content == {
        "action": "accept",
        "content": {"name": "John Doe", "age": 30, "score": 95.5, "status": "active", "verified": True},
    }
    assert by_get.structured_content == {"action": "accept", "content": {"name": "Ada"}}
    gets = [e for e in dual.log() if e["http_method"] == "GET"]
    assert [(e["status"], e["headers"]["accept"]) for e in gets] == [(200, "text/event-stream")]


async def test_without_handlers_modern_input_fails_cleanly_and_legacy_requests_get_minus_32601(dual: HttpPeer) -> None:
    fresh(dual)
    async with mcpfsm.Client.http(dual.url, protocol=MODERN) as client:
        message = "input request 'name': no on_elicitation handler: the client did not declare 'elicitation/create'"
        with pytest.raises(mcpfsm.ProtocolError, match=f"^{message}$"):
            await client.call_tool("ask-name")
        assert (await client.call_tool("echo", {"text": "still usable"})).text == "still usable"

    async with mcpfsm.Client.http(dual.url, protocol=LEGACY) as client:
        # The SDK turns the -32601 answer into a JSON-RPC error of the call.
        with pytest.raises(mcpfsm.RpcError, match=r"no on_elicitation handler"):
            await client.call_tool("ask-name")


STDIO: Final = [sys.executable, "-m", "tests.support.peer.server", "--stdio"]


@pytest.mark.parametrize("protocol", [MODERN, LEGACY])
async def test_over_stdio_a_handler_waiting_for_its_user_does_not_block_other_responses(protocol: str) -> None:
    user = User()
    release = trio.Event()
    waiting = trio.Event()

    async def slow_user(params: dict[str, Any]) -> dict[str, Any]:
        waiting.set()
        await release.wait()
        return await user.on_elicitation(params)

    client = mcpfsm.Client.stdio(
        STDIO, cwd=str(REPO_ROOT), protocol=protocol, **user.handlers(on_elicitation=slow_user)
    )
    with trio.fail_after(30):
        async with client, trio.open_nursery() as nursery:
            results: list[mcpfsm.ToolResult] = []

            async def interview() -> None:
                results.append(await client.call_tool("interview"))

            nursery.start_soon(interview)
            await waiting.wait()
            # While the user is being asked, the same pipe carries another call's response.
            assert (await client.call_tool("echo", {"text": "meanwhile"})).text == "meanwhile"
            release.set()

    assert [r.structured_content for r in results] == [{"first": "Grace", "last": "Hopper", "greeting": GREETING}]
