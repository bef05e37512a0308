"""Multi round-trip requests (SEP-2322) rule by rule, against a scripted MockTransport server (modern era).

Each test scripts the server's answers to ``tools/call`` (or ``prompts/get``, ``resources/read``) and checks
the whole wire: which requests went out, with which ids, params and headers, and what the call's events say.
"""

from __future__ import annotations

import itertools
import json
import re
from typing import Any, Final

import pytest
import trio

import mcpfsm
from mcpfsm._core.constants import CLIENT_CAPABILITIES_KEY
from tests.support.fakeserver import (
    FRESH_SQL,
    SENT_FRESH,
    SENT_STALE,
    SQL_ARGS,
    STALE_SQL,
    Answer,
    FakeServer,
    result,
    rpc_error,
)

NAME_FORM: Final = {
    "type": "object",
    "properties": {"name": {"type": "string", "default": "Ada"}, "age": {"type": "integer"}},
    "required": ["name"],
}
ELICIT: Final = {"method": "elicitation/create", "params": {"message": "Name?", "requestedSchema": NAME_FORM}}
SAMPLE: Final = {
    "method": "sampling/createMessage",
    "params": {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 5},
}
ROOTS: Final = {"method": "roots/list"}
DONE: Final = {"content": [{"type": "text", "text": "done"}], "resultType": "complete"}
SAMPLED: Final = {"role": "assistant", "content": {"type": "text", "text": "hello"}, "model": "m"}
ROOT_LIST: Final = {"roots": [{"uri": "file:///work", "name": "work"}]}
ECHO_PLAN: Final = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "echo"}
MRTR_KEYS: Final = ("inputResponses", "requestState")
_ABSENT: Final = object()


def asks(requests: dict[str, Any] | None = None, state: Any = _ABSENT) -> Answer:
    """An ``input_required`` result with these ``inputRequests`` and ``requestState`` (each left out when not given)."""
    value: dict[str, Any] = {"resultType": "input_required"}
    if requests is not None:
        value["inputRequests"] = requests
    if state is not _ABSENT:
        value["requestState"] = state
    return result(value)


class User:
    """Handlers that record what they were asked and answer from a script."""

    def __init__(self, elicit: dict[str, Any] | None = None) -> None:
        self.asked: list[tuple[str, dict[str, Any]]] = []
        self.elicit = elicit if elicit is not None else {"action": "accept", "content": {"name": "Grace"}}

    async def on_elicitation(self, params: dict[str, Any]) -> dict[str, Any]:
        self.asked.append(("elicitation", params))
        return self.elicit

    async def on_sampling(self, params: dict[str, Any]) -> dict[str, Any]:
        self.asked.append(("sampling", params))
        return SAMPLED

    async def on_roots(self, params: dict[str, Any]) -> dict[str, Any]:
        self.asked.append(("roots", params))
        return ROOT_LIST

    def handlers(self) -> dict[str, Any]:
        return {"on_elicitation": self.on_elicitation, "on_sampling": self.on_sampling, "on_roots": self.on_roots}


def calls(fake: FakeServer, method: str = "tools/call") -> list[dict[str, Any]]:
    """The params of every request of ``method``, without ``_meta``."""
    return [
        {k: v for k, v in seen.params.items() if k != "_meta"} for seen in fake.requests if seen.rpc_method == method
    ]


def states(events: list[mcpfsm.CallEvent]) -> list[tuple[str, str | None, int]]:
    return [(e.state, e.trigger, e.round) for e in events]


HELLO: Final = {"name": "echo", "arguments": {"text": "hi"}}


# --- the resend ------------------------------------------------------------------------------------------------


async def test_an_input_round_resends_with_the_answers_the_echoed_state_and_a_new_id(fake: FakeServer) -> None:
    user = User()
    fake.queue("tools/call", asks({"who": ELICIT}, "opaque-1"), result(DONE))

    async with fake.client(**user.handlers()) as client:
        outcome = await client.call_tool("echo", {"text": "hi"})

    assert outcome.text == "done"
    assert user.asked == [("elicitation", ELICIT["params"])]
    answer = {"action": "accept", "content": {"name": "Grace"}}
    assert calls(fake) == [HELLO, {**HELLO, "inputResponses": {"who": answer}, "requestState": "opaque-1"}]
    sent = [seen for seen in fake.requests if seen.rpc_method == "tools/call"]
    assert [seen.id for seen in fake.requests] == [1, 2, 3]
    # The resend is the same request again: same headers, re-stamped _meta.
    assert [seen.mcp for seen in sent] == [ECHO_PLAN, ECHO_PLAN]
    assert sent[0].params["_meta"] == sent[1].params["_meta"]


@pytest.mark.parametrize(
    "state",
    [
        pytest.param('{"nonce": "a b", "originalId": 7}', id="json-text"),
        pytest.param("", id="empty-string"),
        pytest.param("  padded \t", id="whitespace"),
        pytest.param("snow ☃ \u2028 line \\n not a newline", id="unicode-and-escapes"),
        pytest.param("v1." + "A" * 4096, id="long"),
    ],
)
async def test_request_state_is_echoed_exactly(fake: FakeServer, state: str) -> None:
    fake.queue("tools/call", asks({"who": ELICIT}, state), result(DONE))

    async with fake.client(**User().handlers()) as client:
        await client.call_tool("echo", {"text": "hi"})

    resent = calls(fake)[1]
    assert type(resent["requestState"]) is str
    assert resent["requestState"] == state


async def test_without_request_state_the_resend_carries_none(fake: FakeServer) -> None:
    fake.queue("tools/call", asks({"who": ELICIT}), result(DONE))

    async with fake.client(**User().handlers()) as client:
        await client.call_tool("echo", {"text": "hi"})

    assert calls(fake)[1] == {**HELLO, "inputResponses": {"who": {"action": "accept", "content": {"name": "Grace"}}}}


async def test_each_resend_answers_only_the_latest_round(fake: FakeServer) -> None:
    user = User()
    fake.queue(
        "tools/call",
        asks({"who": ELICIT, "llm": SAMPLE}, "s1"),
        asks({"dirs": ROOTS}, "s2"),
        result(DONE),
    )
    events: list[mcpfsm.CallEvent] = []

    async with fake.client(on_event=events.append, **user.handlers()) as client:
        await client.call_tool("echo", {"text": "hi"})

    first_answers = {"who": {"action": "accept", "content": {"name": "Grace"}}, "llm": SAMPLED}
    assert calls(fake) == [
        HELLO,
        {**HELLO, "inputResponses": first_answers, "requestState": "s1"},
        {**HELLO, "inputResponses": {"dirs": ROOT_LIST}, "requestState": "s2"},
    ]
    assert sorted(kind for kind, _ in user.asked) == ["elicitation", "roots", "sampling"]
    assert states(events) == [
        ("resolving", None, 0),
        ("planning", "resolved", 0),
        ("sending", "planned", 0),
        ("awaiting_input", "input_required", 1),
        ("resending", "gathered", 1),
        ("awaiting_input", "input_required", 2),
        ("resending", "gathered", 2),
        ("succeeded", "answered", 2),
    ]
    assert [e.input_requests for e in events] == [
        None,
        None,
        None,
        {"who": "elicitation/create", "llm": "sampling/createMessage"},
        None,
        {"dirs": "roots/list"},
        None,
        None,
    ]


async def test_a_state_only_round_is_resent_after_a_backoff_without_input_responses(
    fake: FakeServer, autojump_clock: trio.abc.Clock
) -> None:
    sent_at: list[float] = []

    def timed(answer: Answer) -> Answer:
        async def wrapped(seen: Any) -> Any:
            sent_at.append(trio.current_time())
            return await answer(seen)

        return wrapped

    fake.queue(
        "tools/call",
        *(timed(asks(state=f"busy-{n}")) for n in range(4)),
        timed(result(DONE)),
    )
    events: list[mcpfsm.CallEvent] = []

    async with fake.client(on_event=events.append) as client:
        assert (await client.call_tool("echo", {"text": "hi"})).text == "done"

    assert calls(fake) == [HELLO, *({**HELLO, "requestState": f"busy-{n}"} for n in range(4))]
    gaps = [round(later - earlier, 6) for earlier, later in itertools.pairwise(sent_at)]
    # 50 ms, doubling, at most 250 ms (on the trio clock).
    assert gaps == [0.05, 0.1, 0.2, 0.25]
    assert [e.input_requests for e in events if e.state == "awaiting_input"] == [{}, {}, {}, {}]


async def test_more_rounds_than_max_input_rounds_is_a_protocol_error(fake: FakeServer) -> None:
    fake.queue("tools/call", *(asks({"who": ELICIT}, f"s{n}") for n in range(3)))
    events: list[mcpfsm.CallEvent] = []

    async with fake.client(on_event=events.append, max_input_rounds=2, **User().handlers()) as client:
        with pytest.raises(
            mcpfsm.ProtocolError, match=r"^tools/call 'echo' still asked for input after max_input_rounds=2 rounds$"
        ):
            await client.call_tool("echo", {"text": "hi"})
        # The client stays usable.
        assert (await client.call_tool("echo", {"text": "again"})).text == "ok"

    assert len(calls(fake)) == 4
    assert states(events)[3:8] == [
        ("awaiting_input", "input_required", 1),
        ("resending", "gathered", 1),
        ("awaiting_input", "input_required", 2),
        ("resending", "gathered", 2),
        ("failed", "rounds_exhausted", 3),
    ]
    assert events[7].error == {
        "type": "ProtocolError",
        "code": None,
        "message": "tools/call 'echo' still asked for input after max_input_rounds=2 rounds",
    }


# --- result types ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [{}, {"resultType": "complete"}], ids=["absent", "complete"])
async def test_a_complete_result_is_never_resent(fake: FakeServer, value: dict[str, Any]) -> None:
    fake.queue("tools/call", result({"content": [], **value}))

    async with fake.client(**User().handlers()) as client:
        await client.call_tool("echo", {"text": "hi"})

    assert calls(fake) == [HELLO]


@pytest.mark.parametrize("value", ["incomplete", None, 1, "INPUT_REQUIRED"])
async def test_an_unknown_result_type_is_a_protocol_error_and_not_resent(fake: FakeServer, value: Any) -> None:
    fake.queue("tools/call", result({"content": [], "resultType": value}))

    async with fake.client(**User().handlers()) as client:
        message = (
            f"tools/call answered an unknown resultType {value!r} (SEP-2322 knows 'complete' and 'input_required')"
        )
        with pytest.raises(mcpfsm.ProtocolError, match="^" + re.escape(message) + "$"):
            await client.call_tool("echo", {"text": "hi"})

    assert calls(fake) == [HELLO]


async def test_input_required_on_another_method_is_a_protocol_error(fake: FakeServer) -> None:
    fake.queue("tools/list", asks({"who": ELICIT}, "s"))

    async with fake.client(**User().handlers()) as client:
        message = (
            "tools/list answered resultType 'input_required', which only tools/call, prompts/get and resources/read "
            "may (SEP-2322)"
        )
        with pytest.raises(mcpfsm.ProtocolError, match="^" + re.escape(message) + "$"):
            await client.tools()

    assert fake.methods() == ["server/discover", "tools/list"]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        pytest.param({}, "carries neither inputRequests nor requestState", id="neither"),
        pytest.param({"inputRequests": {}}, "carries neither inputRequests nor requestState", id="empty-requests"),
        pytest.param({"inputRequests": []}, ': "inputRequests" is not an object', id="requests-list"),
        pytest.param({"inputRequests": {"k": "x"}}, ": input request 'k' is not an object", id="entry-text"),
        pytest.param(
            {"inputRequests": {"k": {"method": "tools/call"}}},
            ": input request 'k' asks for 'tools/call', which is not one of elicitation/create, "
            "sampling/createMessage, roots/list",
            id="unknown-method",
        ),
        pytest.param(
            {"inputRequests": {"k": {"method": "roots/list", "params": []}}},
            ": input request 'k' has non-object params",
            id="params-list",
        ),
        pytest.param({"requestState": 7}, ': "requestState" is not a string', id="state-number"),
    ],
)
async def test_a_malformed_input_required_result_is_a_protocol_error(
    fake: FakeServer, value: dict[str, Any], message: str
) -> None:
    fake.queue("tools/call", result({"resultType": "input_required", **value}))

    async with fake.client(**User().handlers()) as client:
        separator = " " if message[0] != ":" else ""
        expected = f"tools/call input_required result{separator}{message}"
        with pytest.raises(mcpfsm.ProtocolError, match="^" + re.escape(expected) + "$"):
            await client.call_tool("echo", {"text": "hi"})

    assert calls(fake) == [HELLO]


async def test_minus_32021_is_raised_without_a_resend(fake: FakeServer) -> None:
    data = {"requiredCapabilities": {"elicitation": {"form": {}}}}
    fake.queue("tools/call", rpc_error(-32021, "Missing required client capability", data=data))

    async with fake.client() as client:
        with pytest.raises(
            mcpfsm.RpcError, match=r"^JSON-RPC error -32021: Missing required client capability$"
        ) as caught:
            await client.call_tool("echo", {"text": "hi"})

    assert caught.value.data == data
    assert calls(fake) == [HELLO]


# --- what the client cannot or will not give -------------------------------------------------------------------

URL_ELICIT: Final = {
    "method": "elicitation/create",
    "params": {"mode": "url", "message": "Sign in", "url": "https://x.test/a?b=1"},
}


NO_SCHEMA: Final = {"method": "elicitation/create", "params": {"message": "no schema"}}
SAMPLE_WITH_TOOLS: Final = {"method": "sampling/createMessage", "params": {**SAMPLE["params"], "tools": []}}


@pytest.mark.parametrize(
    ("handlers", "fine", "bad", "message"),
    [
        pytest.param(
            {"on_roots"},
            ROOTS,
            ELICIT,
            "no on_elicitation handler: the client did not declare 'elicitation/create'",
            id="no-elicitation-handler",
        ),
        pytest.param({"on_elicitation"}, ELICIT, URL_ELICIT, "elicitation mode 'url' was not declared", id="url"),
        pytest.param(
            {"on_elicitation", "url-only"}, URL_ELICIT, ELICIT, "elicitation mode 'form' was not declared", id="form"
        ),
        pytest.param(
            {"on_elicitation"},
            ELICIT,
            NO_SCHEMA,
            'form elicitation without an object "requestedSchema"',
            id="no-schema",
        ),
        pytest.param(
            {"on_sampling"},
            SAMPLE,
            SAMPLE_WITH_TOOLS,
            "sampling with tools was not declared (no sampling.tools capability)",
            id="sampling-tools",
        ),
        pytest.param(
            {"on_elicitation"},
            ELICIT,
            ROOTS,
            "no on_roots handler: the client did not declare 'roots/list'",
            id="roots",
        ),
    ],
)
async def test_input_the_client_did_not_offer_fails_the_call_before_any_handler_runs(
    fake: FakeServer, handlers: set[str], fine: dict[str, Any], bad: dict[str, Any], message: str
) -> None:
    user = User()
    given: dict[str, Any] = {name: getattr(user, name) for name in handlers if name.startswith("on_")}
    if "url-only" in handlers:
        given["elicitation_modes"] = ("url",)
    # The other request of the round could be answered, but a round is never half-answered.
    fake.queue("tools/call", asks({"fine": fine, "bad": bad}, "s"))
    events: list[mcpfsm.CallEvent] = []

    async with fake.client(on_event=events.append, **given) as client:
        expected = f"input request 'bad': {message}"
        with pytest.raises(mcpfsm.ProtocolError, match="^" + re.escape(expected) + "$"):
            await client.call_tool("echo", {"text": "hi"})

    assert user.asked == []
    assert calls(fake) == [HELLO]
    assert states(events)[-1] == ("failed", "input_failed", 1)


async def test_a_handler_error_fails_the_call_with_that_error_and_nothing_is_resent(fake: FakeServer) -> None:
    class Refused(Exception):
        pass

    async def on_sampling(params: dict[str, Any]) -> dict[str, Any]:
        raise Refused("the user said no")

    fake.queue("tools/call", asks({"llm": SAMPLE}, "s"))
    events: list[mcpfsm.CallEvent] = []

    async with fake.client(on_event=events.append, on_sampling=on_sampling) as client:
        with pytest.raises(Refused, match=r"^the user said no$"):
            await client.call_tool("echo", {"text": "hi"})

    assert calls(fake) == [HELLO]
    assert (events[-1].state, events[-1].trigger, events[-1].error) == (
        "failed",
        "input_failed",
        # The exception is the caller's; the audit record keeps only its type (it may quote the user).
        {"type": "Refused", "code": None, "message": "an input handler raised Refused"},
    )


async def test_the_first_failing_handler_cancels_the_others(fake: FakeServer) -> None:
    cancelled = trio.Event()

    async def on_elicitation(params: dict[str, Any]) -> dict[str, Any]:
        try:
            await trio.sleep_forever()
        finally:
            cancelled.set()
        raise AssertionError("unreachable")

    async def on_roots(params: dict[str, Any]) -> dict[str, Any]:
        await trio.lowlevel.checkpoint()
        raise ValueError("no roots today")

    fake.queue("tools/call", asks({"who": ELICIT, "dirs": ROOTS}))

    async with fake.client(on_elicitation=on_elicitation, on_roots=on_roots) as client:
        with pytest.raises(ValueError, match=r"^no roots today$"):
            await client.call_tool("echo", {"text": "hi"})

    assert cancelled.is_set()


@pytest.mark.parametrize(
    ("answer", "sent"),
    [
        pytest.param({"action": "decline", "content": {"name": "x"}}, {"action": "decline"}, id="decline"),
        pytest.param({"action": "cancel"}, {"action": "cancel"}, id="cancel"),
        pytest.param(
            {"action": "accept", "content": {"age": 41}},
            {"action": "accept", "content": {"age": 41, "name": "Ada"}},
            id="accept-defaults-filled",
        ),
        pytest.param(
            {"action": "accept", "content": {"name": "Grace"}},
            {"action": "accept", "content": {"name": "Grace"}},
            id="accept-value-kept",
        ),
        pytest.param({"action": "accept"}, {"action": "accept", "content": {"name": "Ada"}}, id="accept-no-content"),
    ],
)
async def test_elicitation_answers_go_back_as_given_with_sep_1034_defaults(
    fake: FakeServer, answer: dict[str, Any], sent: dict[str, Any]
) -> None:
    fake.queue("tools/call", asks({"who": ELICIT}, "s"), result(DONE))

    async with fake.client(**User(answer).handlers()) as client:
        await client.call_tool("echo", {"text": "hi"})

    assert calls(fake)[1]["inputResponses"] == {"who": sent}


async def test_a_url_elicitation_is_offered_only_when_declared_and_its_accept_carries_no_content(
    fake: FakeServer,
) -> None:
    user = User({"action": "accept", "content": {"ignored": True}})
    fake.queue("tools/call", asks({"sign-in": URL_ELICIT}), result(DONE))

    async with fake.client(on_elicitation=user.on_elicitation, elicitation_modes=("form", "url")) as client:
        await client.call_tool("echo", {"text": "hi"})

    assert user.asked == [("elicitation", URL_ELICIT["params"])]
    assert calls(fake)[1]["inputResponses"] == {"sign-in": {"action": "accept"}}


@pytest.mark.parametrize(
    ("kind", "answer", "error", "message"),
    [
        pytest.param(
            "on_elicitation",
            ["accept"],
            TypeError,
            "on_elicitation returned list, expected a dict (the elicitation/create result)",
            id="not-a-dict",
        ),
        pytest.param(
            "on_elicitation",
            {"action": "yes"},
            ValueError,
            "on_elicitation returned action 'yes'; expected 'accept', 'decline' or 'cancel'",
            id="action",
        ),
        pytest.param(
            "on_elicitation",
            {"action": "accept", "content": "Grace"},
            TypeError,
            "on_elicitation returned content of type str, expected a dict",
            id="content",
        ),
        pytest.param("on_roots", {"roots": "file:///"}, ValueError, 'on_roots returned no "roots" list', id="roots"),
    ],
)
async def test_a_malformed_handler_answer_is_a_type_or_value_error(
    fake: FakeServer, kind: str, answer: Any, error: type[Exception], message: str
) -> None:
    async def handler(params: dict[str, Any]) -> Any:
        return answer

    fake.queue("tools/call", asks({"k": ELICIT if kind == "on_elicitation" else ROOTS}))

    async with fake.client(**{kind: handler}) as client:
        with pytest.raises(error, match="^" + re.escape(message) + "$"):
            await client.call_tool("echo", {"text": "hi"})

    assert calls(fake) == [HELLO]


async def test_accepted_content_that_breaks_the_requested_schema_fails_the_call_and_is_never_sent(
    fake: FakeServer,
) -> None:
    # Refused locally, before anything is sent: the server asked for that shape (MCP "Elicitation").
    user = User({"action": "accept", "content": {"name": "Grace", "age": "SECRET-forty"}})
    events: list[mcpfsm.CallEvent] = []
    fake.queue("tools/call", asks({"who": ELICIT}, "s"), result(DONE))

    async with fake.client(on_event=events.append, **user.handlers()) as client:
        with pytest.raises(
            ValueError,
            match=r'^on_elicitation accepted content that does not match the requestedSchema: /age: the value is not'
            r' of type "integer"$',
        ):
            await client.call_tool("echo", {"text": "hi"})
        assert (await client.call_tool("echo", {"text": "hi"})).text == "done"

    assert [c.get("inputResponses") for c in calls(fake)] == [None, None]
    assert [e.state for e in events if e.state in mcpfsm.TERMINAL] == ["failed", "succeeded"]
    assert not any("SECRET" in event.to_json() for event in events)
    # mcpfsm's own refusal names properties and rules, never a value: the event keeps its message, as an input
    # run's event does (events.input_failure_summary serves both machines).
    failed = next(e for e in events if e.state == "failed")
    assert (failed.trigger, failed.error) == (
        "input_failed",
        {
            "type": "FormContentError",
            "code": None,
            "message": 'on_elicitation accepted content that does not match the requestedSchema: /age: the value is'
            ' not of type "integer"',
        },
    )


async def test_a_handler_that_is_not_async_is_a_type_error(fake: FakeServer) -> None:
    fake.queue("tools/call", asks({"dirs": ROOTS}))

    async with fake.client(on_roots=lambda params: ROOT_LIST) as client:
        with pytest.raises(TypeError, match=r"^the roots/list handler must be async \(it returned dict\)$"):
            await client.call_tool("echo", {"text": "hi"})


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        pytest.param(
            {"elicitation_modes": ()},
            ValueError,
            "elicitation_modes must name 'form' and/or 'url', got ()",
            id="no-modes",
        ),
        pytest.param(
            {"elicitation_modes": ("form", "sms")},
            ValueError,
            "elicitation_modes must name 'form' and/or 'url', got ('form', 'sms')",
            id="unknown-mode",
        ),
        pytest.param(
            {"elicitation_modes": "form"},
            TypeError,
            "elicitation_modes must be a tuple of modes, e.g. ('form', 'url'), not a str",
            id="str",
        ),
        pytest.param(
            {"max_input_rounds": 0}, ValueError, "max_input_rounds must be at least 1, got 0", id="zero-rounds"
        ),
        pytest.param(
            {"max_input_rounds": 2.5}, TypeError, "max_input_rounds must be an int, got float", id="float-rounds"
        ),
        pytest.param(
            {"on_sampling": "yes"}, TypeError, "on_sampling must be an async callable, got str", id="not-callable"
        ),
    ],
)
def test_bad_handler_options_are_refused_when_the_client_is_made(
    options: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match="^" + re.escape(message) + "$"):
        mcpfsm.Client.http("http://x.test/mcp", **options)


# --- capabilities ----------------------------------------------------------------------------------------------


async def answer(params: dict[str, Any]) -> dict[str, Any]:
    return {}


@pytest.mark.parametrize(
    ("options", "declared"),
    [
        pytest.param({}, {}, id="none"),
        pytest.param({"on_elicitation": answer}, {"elicitation": {"form": {}}}, id="form"),
        pytest.param(
            {"on_elicitation": answer, "elicitation_modes": ("form", "url")},
            {"elicitation": {"form": {}, "url": {}}},
            id="form-and-url",
        ),
        pytest.param({"on_elicitation": answer, "elicitation_modes": ("url",)}, {"elicitation": {"url": {}}}, id="url"),
        # Modes without a handler declare nothing.
        pytest.param({"elicitation_modes": ("url",)}, {}, id="modes-only"),
        pytest.param(
            {"on_sampling": answer, "on_roots": answer}, {"sampling": {}, "roots": {}}, id="sampling-and-roots"
        ),
    ],
)
async def test_capabilities_are_exactly_the_handlers_on_every_modern_request(
    fake: FakeServer, options: dict[str, Any], declared: dict[str, Any]
) -> None:
    fake.queue("tools/call", asks(state="again"), result(DONE))

    async with fake.client(**options) as client:
        await client.tools()
        await client.call_tool("echo", {"text": "hi"})

    assert fake.methods() == ["server/discover", "tools/list", "tools/call", "tools/call"]
    assert [seen.params["_meta"][CLIENT_CAPABILITIES_KEY] for seen in fake.requests] == [declared] * 4


# --- the -32020 recovery around the rounds ----------------------------------------------------------------------


async def test_minus_32020_on_a_resend_relists_and_the_retry_resends_that_round(fake: FakeServer) -> None:
    fake.tools = [STALE_SQL]
    events: list[mcpfsm.CallEvent] = []
    async with fake.client(on_event=events.append, **User().handlers()) as client:
        tool = (await client.tools()).get("execute-sql")
        assert tool is not None
        fake.tools = [FRESH_SQL]
        fake.queue("tools/call", asks({"who": ELICIT}, "s1"), rpc_error(-32020, "Header mismatch"), result(DONE))
        assert (await tool.call(SQL_ARGS)).text == "done"

    answered = {"inputResponses": {"who": {"action": "accept", "content": {"name": "Grace"}}}, "requestState": "s1"}
    base = {"name": "execute-sql", "arguments": SQL_ARGS}
    assert calls(fake) == [base, {**base, **answered}, {**base, **answered}]
    sent = [seen for seen in fake.requests if seen.rpc_method in ("tools/call", "tools/list")]
    assert [(seen.rpc_method, seen.mcp) for seen in sent][1:] == [
        ("tools/call", SENT_STALE),
        ("tools/call", SENT_STALE),
        ("tools/list", {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"}),
        ("tools/call", SENT_FRESH),
    ]
    assert [(e.state, e.trigger, e.round, e.attempt) for e in events] == [
        ("resolving", None, 0, 1),
        ("planning", "resolved", 0, 1),
        ("sending", "planned", 0, 1),
        ("awaiting_input", "input_required", 1, 1),
        ("resending", "gathered", 1, 1),
        ("relisting", "mismatched", 1, 1),
        ("comparing", "relisted", 1, 1),
        ("retrying", "changed", 1, 2),
        ("succeeded", "answered", 1, 2),
    ]


async def test_minus_32020_on_a_resend_after_the_retry_fails_the_call(fake: FakeServer) -> None:
    fake.tools = [STALE_SQL]
    events: list[mcpfsm.CallEvent] = []
    async with fake.client(on_event=events.append, **User().handlers()) as client:
        tool = (await client.tools()).get("execute-sql")
        assert tool is not None
        fake.tools = [FRESH_SQL]
        fake.queue(
            "tools/call",
            rpc_error(-32020, "Header mismatch"),
            asks({"who": ELICIT}, "s1"),
            rpc_error(-32020, "Header mismatch again"),
        )
        with pytest.raises(mcpfsm.HeaderMismatchError, match=r"^JSON-RPC error -32020: Header mismatch again$"):
            await tool.call(SQL_ARGS)

    assert fake.methods().count("tools/list") == 2  # the listing, then the one relist
    assert [(e.state, e.trigger, e.round, e.attempt) for e in events][3:] == [
        ("relisting", "mismatched", 0, 1),
        ("comparing", "relisted", 0, 1),
        ("retrying", "changed", 0, 2),
        ("retry_awaiting_input", "input_required", 1, 2),
        ("retry_resending", "gathered", 1, 2),
        ("failed", "mismatched", 1, 2),
    ]


async def test_an_input_required_retry_after_the_last_allowed_round_fails(fake: FakeServer) -> None:
    fake.tools = [STALE_SQL]
    events: list[mcpfsm.CallEvent] = []
    async with fake.client(on_event=events.append, max_input_rounds=1, **User().handlers()) as client:
        tool = (await client.tools()).get("execute-sql")
        assert tool is not None
        fake.tools = [FRESH_SQL]
        fake.queue("tools/call", asks({"who": ELICIT}, "s1"), rpc_error(-32020, "Header mismatch"), asks(state="s2"))
        with pytest.raises(mcpfsm.ProtocolError, match=r"after max_input_rounds=1 rounds$"):
            await tool.call(SQL_ARGS)

    assert [(e.state, e.trigger, e.round) for e in events][-2:] == [
        ("retrying", "changed", 1),
        ("failed", "rounds_exhausted", 2),
    ]


# --- audit, isolation, other methods, cancellation ---------------------------------------------------------------


@pytest.mark.parametrize("audit", [False, True], ids=["answers-hidden", "answers-audited"])
async def test_events_name_the_input_requests_and_the_answers_only_when_asked(fake: FakeServer, audit: bool) -> None:
    fake.queue("tools/call", asks({"who": ELICIT, "llm": SAMPLE}, "s"), result(DONE))
    events: list[mcpfsm.CallEvent] = []

    async with fake.client(on_event=events.append, audit_answers=audit, **User().handlers()) as client:
        await client.call_tool("echo", {"text": "hi"})

    answers = {"who": {"action": "accept", "content": {"name": "Grace"}}, "llm": SAMPLED}
    assert [(e.state, e.round, e.input_requests, e.input_responses) for e in events][3:] == [
        ("awaiting_input", 1, {"who": "elicitation/create", "llm": "sampling/createMessage"}, None),
        ("resending", 1, None, answers if audit else None),
        ("succeeded", 1, None, None),
    ]
    record = json.loads(events[4].to_json())
    assert (record["round"], record["input_requests"], record["input_responses"]) == (
        1,
        None,
        answers if audit else None,
    )
    assert mcpfsm.CallEvent.from_dict(record) == events[4]
    assert ("Grace" in events[4].to_json()) is audit


async def test_no_mrtr_member_leaks_into_any_other_request_parallel_ones_included(fake: FakeServer) -> None:
    fake.queue("tools/call", asks({"who": ELICIT}, "s1"))
    client = fake.client(on_elicitation=lambda params: during(params))

    async def during(params: dict[str, Any]) -> dict[str, Any]:
        # While the round is open, the same client sends other requests.
        await client.call_tool("echo", {"text": "parallel"})
        await client.tools()
        await client.request("prompts/list")
        return {"action": "accept", "content": {"name": "Grace"}}

    fake.queue("prompts/list", result({"prompts": []}))
    fake.queue("tools/call", result(DONE), result(DONE))
    async with client:
        await client.call_tool("echo", {"text": "hi"})
        await client.call_tool("echo", {"text": "after"})

    carriers = [seen.params.get("arguments") for seen in fake.requests if any(k in seen.params for k in MRTR_KEYS)]
    assert carriers == [{"text": "hi"}]
    assert fake.methods() == [
        "server/discover",
        "tools/call",
        "tools/call",
        "tools/list",
        "prompts/list",
        "tools/call",
        "tools/call",
    ]


@pytest.mark.parametrize(
    ("method", "params"),
    [("prompts/get", {"name": "greet", "arguments": {"who": "x"}}), ("resources/read", {"uri": "file:///a b"})],
)
async def test_prompts_and_resources_run_the_same_rounds(fake: FakeServer, method: str, params: dict[str, Any]) -> None:
    final = {"messages": []} if method == "prompts/get" else {"contents": []}
    fake.queue(method, asks({"who": ELICIT}, "s1"), asks(state="s2"), result(final))

    async with fake.client(**User().handlers()) as client:
        assert await client.request(method, params) == final

    assert calls(fake, method) == [
        params,
        {**params, "inputResponses": {"who": {"action": "accept", "content": {"name": "Grace"}}}, "requestState": "s1"},
        {**params, "requestState": "s2"},
    ]
    assert len({seen.id for seen in fake.requests}) == len(fake.requests)


async def test_rounds_outside_the_machine_are_bounded_too(fake: FakeServer) -> None:
    fake.queue("resources/read", *(asks(state=str(n)) for n in range(4)))

    async with fake.client(max_input_rounds=3) as client:
        message = "resources/read 'file:///a' still asked for input after max_input_rounds=3 rounds"
        with pytest.raises(mcpfsm.ProtocolError, match="^" + re.escape(message) + "$"):
            await client.request("resources/read", {"uri": "file:///a"})

    assert len(calls(fake, "resources/read")) == 4


async def test_cancelled_while_awaiting_input_ends_the_call_cancelled_and_the_client_stays_usable(
    fake: FakeServer,
) -> None:
    fake.queue("tools/call", asks({"who": ELICIT}, "s1"))
    events: list[mcpfsm.CallEvent] = []
    scope = trio.CancelScope()

    async def on_elicitation(params: dict[str, Any]) -> dict[str, Any]:
        scope.cancel()  # the caller gives up while the user is being asked
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    async with fake.client(on_event=events.append, on_elicitation=on_elicitation) as client:
        with scope:
            await client.call_tool("echo", {"text": "hi"})
        assert scope.cancelled_caught
        assert (await client.call_tool("echo", {"text": "after"})).text == "ok"

    assert states(events)[3:5] == [("awaiting_input", "input_required", 1), ("cancelled", "cancelled", 1)]
    assert calls(fake) == [HELLO, {"name": "echo", "arguments": {"text": "after"}}]
