"""The session hands each message to a transport with ``send_message`` as an ``OutgoingMessage``: its text with the
request id, the method and whether it is long-lived beside it; the HTTP transport matches the answer by that id
instead of reading it out of the JSON text again. A custom transport with ``send`` alone gets the text, a ``str``."""

from __future__ import annotations

import json
from collections.abc import Mapping

import httpx
import pytest

from mcpfsm._client.session import Session
from mcpfsm._transports.base import NO_HEADERS, InboundHandler, OutgoingMessage, Reply
from mcpfsm._transports.http import HttpTransport

URL = "http://mcp.test/mcp"


class Recording:
    """A custom transport without headers: keeps each message as handed over, answers requests with ``{}``."""

    carries_headers = False

    def __init__(self) -> None:
        self.sent: list[str] = []

    async def open(self, inbound: InboundHandler) -> None:
        pass

    async def open_stream(self, headers: Mapping[str, str]) -> bool:
        return False

    async def end_session(self, headers: Mapping[str, str]) -> None:
        pass

    async def send(self, message: str, headers: Mapping[str, str] = NO_HEADERS) -> Reply | None:
        self.sent.append(message)
        payload = json.loads(message)
        if "id" not in payload:
            return None
        return Reply(json.dumps({"jsonrpc": "2.0", "id": payload["id"], "result": {}}))

    async def aclose(self) -> None:
        pass


class RecordingMessages(Recording):
    """The same transport with ``send_message``: it is handed each message with its metadata."""

    def __init__(self) -> None:
        super().__init__()
        self.messages: list[OutgoingMessage] = []

    async def send_message(self, message: OutgoingMessage, headers: Mapping[str, str] = NO_HEADERS) -> Reply | None:
        self.messages.append(message)
        return await self.send(message.text, headers)


async def test_the_session_hands_over_what_it_knows_of_each_message() -> None:
    transport = RecordingMessages()
    session = Session(transport, client_info={"name": "test", "version": "1"})
    assert await session.exchange("ping", None) == {}
    await session.notify("notifications/initialized")
    assert transport.messages == [
        OutgoingMessage('{"jsonrpc":"2.0","id":1,"method":"ping"}', 1, "ping", False),
        OutgoingMessage('{"jsonrpc":"2.0","method":"notifications/initialized"}', None, "notifications/initialized"),
    ]
    assert [type(text) for text in transport.sent] == [str, str]


async def test_a_custom_transport_gets_the_text_of_each_message() -> None:
    transport = Recording()
    session = Session(transport, client_info={"name": "test", "version": "1"})
    assert await session.exchange("ping", None) == {}
    await session.notify("notifications/initialized")
    assert transport.sent == [
        '{"jsonrpc":"2.0","id":1,"method":"ping"}',
        '{"jsonrpc":"2.0","method":"notifications/initialized"}',
    ]
    assert [type(text) for text in transport.sent] == [str, str]


def test_the_session_keeps_the_transport_it_was_made_with() -> None:
    # How each message reaches the transport is settled with the session (mcpfsm/_client/assembly.py: no part is
    # wired after it is built); a wrapper such as the command line's Wire is passed in instead.
    transport = Recording()
    session = Session(transport, client_info={"name": "test", "version": "1"})
    assert session.transport is transport
    with pytest.raises(AttributeError):
        session.transport = RecordingMessages()  # type: ignore[misc]


def test_a_message_shows_its_metadata_never_its_text() -> None:
    message = OutgoingMessage(
        '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"secret":"s3"}}', 2, "tools/call"
    )
    assert repr(message) == "OutgoingMessage(request_id=2, method='tools/call', long_lived=False)"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"jsonrpc":"2.0","id":4,"method":"subscriptions/listen","params":{}}', (4, "subscriptions/listen", True)),
        ('{"jsonrpc":"2.0","id":"a","method":"tools/call"}', ("a", "tools/call", False)),
        ('{"jsonrpc":"2.0","method":"notifications/cancelled"}', (None, "notifications/cancelled", False)),
        ('{"jsonrpc":"2.0","id":3,"result":{}}', (None, None, False)),
    ],
    ids=["long-lived request", "request", "notification", "response of ours"],
)
def test_a_message_handed_over_directly_is_read_once(text: str, expected: tuple[object, object, bool]) -> None:
    message = OutgoingMessage.of(text)
    assert (message.text, message.request_id, message.method, message.long_lived) == (text, *expected)


async def test_the_http_transport_matches_the_answer_by_the_id_it_was_handed() -> None:
    # The text says id 7, the session says 8: the transport goes by what it was handed, and the stream's answer
    # to 7 is a stray one.
    stream = (
        'event: message\ndata: {"jsonrpc":"2.0","id":7,"result":{"stray":true}}\n\n'
        'event: message\ndata: {"jsonrpc":"2.0","id":8,"result":{}}\n\n'
    )

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"Content-Type": "text/event-stream"}, content=stream.encode())

    transport = HttpTransport(URL, transport=httpx.MockTransport(handler))
    message = OutgoingMessage('{"jsonrpc":"2.0","id":7,"method":"tools/call"}', 8, "tools/call")
    reply = await transport.send_message(message)
    await transport.aclose()
    assert reply is not None
    assert json.loads(reply.body) == {"jsonrpc": "2.0", "id": 8, "result": {}}
