"""``HeaderGate``: ASGI middleware that checks that each request's MCP headers tell the truth (docs/gate.md).

Pure ASGI (the shape of Starlette's ``middleware/``): it wraps an app, reads each HTTP request before the app does,
and either calls the app or answers itself; it names no event loop, so it runs under asyncio (uvicorn) and trio
(Hypercorn's trio worker) alike. What it does with one request, in order:

1. the caps, before anything is decoded: more than 64 ``mcp-`` header fields, or one longer than 8,192 bytes,
   is answered 431; a body longer than ``max_body`` 413 (read no further than the cap);
2. hop-by-hop fields are dropped (RFC 9110 §7.6.1): the app never sees them, and neither does the verifier;
3. the era: a request whose ``MCP-Protocol-Version`` is not 2026-07-28 is legacy: it is not verified and, with
   ``legacy="strip"``, goes on without its ``Mcp-Param-*`` fields (``"pass"``: as it came; ``"reject"``: 400);
4. the schema of the tool a ``tools/call`` names, from the book (:mod:`.book`); unknown, ``on_unknown`` says:
   ``"fetch"`` one ``tools/list`` from the wrapped app with the caller's ``Authorization`` (a fetch that fails:
   the call goes on with its standard headers checked and without its ``Mcp-Param-*`` fields), ``"pass"`` go on
   with the standard headers checked only, ``"reject"`` 400;
5. the verdict (``mcpfsm.gate.verify``): a mismatch is answered 400 with JSON-RPC -32020 naming the header
   (``mode="report"`` forwards it and counts it); then ``policy`` sees the verified call and may refuse it with
   :class:`~mcpfsm.gate.GateRefusal`;
6. the app answers; a ``tools/list`` answer is learned before it is passed on, an upstream -32020 or a
   ``notifications/tools/list_changed`` forgets the server's listings (:mod:`.listing`).

Each POST is one run of the gate machine (``mcpfsm._machines.gate``), driven by ``mcpfsm._drivers.gate`` through a
port of this module's (:class:`_Port`); steps 1 and 3 to 5 are the run's, 2 and 6 the port's. A request the gate
refuses never reaches the app. Requests other than POST carry no message: they get the caps,
the hop-by-hop rule and the legacy rule (a legacy stream's ``Mcp-Param-*`` fields are stripped; ``"reject"``
refuses one that names a legacy version or a legacy session) and go on.
"""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final

from .._core.constants import INVALID_REQUEST
from .._core.events.gate import GateEvent
from .._core.gate import (
    DEFAULT_MAX_BODY,
    HOP_BY_HOP,
    GateSettings,
    Legacy,
    Listing,
    McpHeaders,
    Mode,
    OnUnknown,
    ParsedRequest,
    Policy,
    Refusal,
    ToolSchema,
    Verdict,
    end_to_end,
    listing_from_body,
    parse_request,
    read_schemas,
    without_params,
)
from .._core.gate_edge import field, fingerprint, identity_of
from .._drivers.gate import GateRun
from .._machines.gate import State
from .asgi import App, BodyTooLarge, ClientGone, Message, Receive, Scope, Send, answer, read_body, replayed
from .book import SchemaBook
from .listing import MAX_LEARNED, watched

if TYPE_CHECKING:
    from .otel import GateTelemetry

__all__ = ["HeaderGate"]

_JSON: Final = ((b"content-type", b"application/json"),)
_MAX_PAGES: Final = 100
_META_PREFIX: Final = "io.modelcontextprotocol/"
_UNLISTED: Final = "the server does not list this tool"
_HOP_BY_HOP: Final = frozenset(name.encode("ascii") for name in HOP_BY_HOP) | {b"connection"}


class HeaderGate:
    """ASGI middleware that verifies each modern request's MCP headers against its body (docs/gate.md).

    Wrap the Starlette app of an MCP server (the official SDK's ``streamable_http_app()``, fastmcp's
    ``http_app()``) and serve the gate instead: ``uvicorn.run(HeaderGate(app))``. Each POST is one run of the gate
    machine (specs/gate.md), driven by ``mcpfsm._drivers.gate``; this class is its port to ASGI.

    Args:
        app: the ASGI app to protect.
        mode: ``"verify"`` refuses a mismatch (400, JSON-RPC -32020); ``"report"`` forwards it and counts it in
            :attr:`stats` (a rollout mode).
        on_unknown: what a call to a tool with no known schema gets: ``"fetch"`` (one ``tools/list`` from ``app``
            with the caller's own ``Authorization``, single flight per server and identity), ``"pass"`` (the
            standard headers are checked, the server must check the rest) or ``"reject"`` (400, -32020).
        schemas: the path of a JSON file holding a ``tools/list`` result (``{"tools": [...]}``) or a whole
            JSON-RPC response carrying one: the schemas known from the start.
        store: a shared store (``FileStore``, ``RedisStore``) through which a fleet of gates shares what it
            learns, so that the fleet fetches each listing once per TTL. Under asyncio its operations run in a trio
            event loop of the gate's own, on a worker thread (mcpfsm's stores are trio code).
        legacy: what happens to a legacy request (not 2026-07-28): ``"strip"`` its ``Mcp-Param-*`` headers
            removed, ``"pass"`` forwarded as is, ``"reject"`` 400 with JSON-RPC -32600.
        max_body: the largest request body accepted, in bytes (413 beyond).
        learn_ttl: seconds a learned listing without ``ttlMs`` is kept.
        policy: called (and awaited, when it returns an awaitable) with each verified modern call, a
            :class:`~mcpfsm.gate.VerifiedCall`; it may raise :class:`~mcpfsm.gate.GateRefusal` to answer the
            request itself.
        on_event: called with each :class:`~mcpfsm.GateEvent` (one per state of each request); an exception it
            raises is logged and ignored.

    Raises:
        ValueError: an option out of its range, or a ``schemas`` file without a ``tools/list`` result.
        OSError: the ``schemas`` file cannot be read.
    """

    def __init__(
        self,
        app: App,
        *,
        mode: Mode = "verify",
        on_unknown: OnUnknown = "fetch",
        schemas: str | os.PathLike[str] | None = None,
        store: Any = None,
        legacy: Legacy = "strip",
        max_body: int = DEFAULT_MAX_BODY,
        learn_ttl: float = 3600,
        policy: Policy | None = None,
        on_event: Callable[[GateEvent], object] | None = None,
    ) -> None:
        """Wrap ``app``; nothing is fetched or stored until the first request."""
        self.app = app
        self.settings = GateSettings(
            mode=mode, on_unknown=on_unknown, legacy=legacy, max_body=max_body, learn_ttl=learn_ttl, policy=policy
        )
        """The rules every request is judged by (checked once, here)."""
        preload = _preloaded(schemas) if schemas is not None else None
        self.book = SchemaBook(learn_ttl=float(learn_ttl), store=store, preload=preload)
        """The schemas this gate knows (learned, fetched, shared, preloaded)."""
        self.on_event = on_event
        self._telemetry: GateTelemetry | None = None
        self._sink: Callable[[GateEvent], object] | None = on_event
        self._probed = False
        self._counts: Counter[str] = Counter({"forwarded": 0, "rejected": 0, "reported": 0})
        self._stats = MappingProxyType(self._counts)
        # The proxy's upstream names itself: the book's key for a server is then the upstream's URL and the path.
        upstream = getattr(app, "upstream", None)
        self._origin = upstream if isinstance(upstream, str) else ""
        self._fetch_ids = 0

    def __repr__(self) -> str:
        settings = self.settings
        return (
            f"HeaderGate({self.app!r}, mode={settings.mode!r}, on_unknown={settings.on_unknown!r},"
            f" legacy={settings.legacy!r})"
        )

    @property
    def stats(self) -> Mapping[str, int]:
        """Counts since the gate was made: ``"forwarded"``, ``"rejected"``, ``"reported"`` and one key per reason.

        Every refusal counts as ``"rejected"`` and as ``"rejected:REASON"`` (``too_many_headers``,
        ``header_too_large``, ``body_too_large``, ``legacy``, ``malformed``, ``unknown_schema``, ``policy``, or
        ``mismatch:HEADER`` naming the header at fault); a mismatch forwarded in report mode counts as
        ``"reported"``, ``"reported:mismatch:HEADER"`` and ``"forwarded"``. Also ``"legacy"`` (legacy requests
        forwarded), ``"fetched"`` (``tools/list`` fetches), ``"learned"`` (listings learned in passing) and
        ``"forgotten"``. A read-only view that stays current.
        """
        return self._stats

    # --- ASGI ------------------------------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Judge one HTTP request (see the module's description); other scopes go to the app untouched."""
        if scope["type"] != "http" or scope["method"] != "POST":
            await self._other(scope, receive, send)
            return
        # A POST is judged here, not in a coroutine of its own (bench/gate.py): the fields as a dict (built in C)
        # say whether any is hop-by-hop, what the Content-Length and the Authorization are, and where the Mcp-*
        # fields are; the usual request has no hop-by-hop field, and goes on with the very list it came with.
        received = scope["headers"]
        fields = received
        headers: list[tuple[bytes, bytes]] | McpHeaders = received
        named = dict(received)
        if _HOP_BY_HOP.isdisjoint(named):
            quick = McpHeaders.of_fields(received, named)
            if quick is not None:
                headers = quick
        else:
            fields = end_to_end(received)
            if len(fields) != len(received):
                # A field Connection names is not forwarded, so it is not judged: the run reads what goes on. The
                # caps still count every field received.
                exceeded = McpHeaders.read(received).limit_exceeded()
                headers = received if exceeded is not None else McpHeaders.read(fields)
            named = dict(fields)
        if not self._probed:
            self._probe()
        port = _Port(self, scope, fields, named, headers, receive, send)
        run = port.run
        telemetry = self._telemetry
        try:
            state = await (run.run() if telemetry is None else telemetry.run(run.run_id, received, run.run))
        except ClientGone:
            self._counts["client_gone"] += 1
            return
        finally:
            # The port and its run refer to each other: unlinked here, the request's objects go when the request
            # does, not at the cyclic collector's next pass, which under a large app costs more than the gate's own
            # work (bench/gate.py --instructions).
            port.unlink()
        counts = self._counts
        if state == State.forwarded:
            counts["forwarded"] += 1
        else:
            self._count(run, state)

    async def _other(self, scope: Scope, receive: Receive, send: Send) -> None:
        # Anything but a POST: a stream or a DELETE (no message), the lifespan, another scope (untouched).
        kind = scope["type"]
        if kind == "http":
            await self._stream(scope, receive, send)
        elif kind == "lifespan":
            await self.app(scope, receive, self._lifespan_send(send))
        else:
            await self.app(scope, receive, send)

    def _lifespan_send(self, send: Send) -> Send:
        async def lifespan_send(message: Message) -> None:
            if message["type"] in ("lifespan.shutdown.complete", "lifespan.shutdown.failed"):
                self.book.loop.close()
            await send(message)

        return lifespan_send

    def _probe(self) -> None:
        # Once, at the first request (an application configures OpenTelemetry after building its app): telemetry
        # when a tracer or meter provider is set, else nothing is built per request and OpenTelemetry not imported.
        self._probed = True
        if sys.modules.get("opentelemetry.trace") is None and sys.modules.get("opentelemetry.metrics") is None:
            return
        try:
            from .otel import probe
        except ImportError:  # the otel extra is partly installed: behave as without it
            return
        self._telemetry = probe()
        if self._telemetry is not None:
            self._sink = self._telemetry.observe(self.on_event)

    def _count(self, run: GateRun, state: State) -> None:
        counts = self._counts
        if state == State.forwarded:
            counts["forwarded"] += 1
        elif state == State.reported:
            counts["forwarded"] += 1
            counts["reported"] += 1
            verdict = run.verdict
            counts[f"reported:mismatch:{verdict.header if verdict is not None else None}"] += 1
        elif state == State.rejected:
            counts["rejected"] += 1
            counts[f"rejected:{_reason(run)}"] += 1

    async def _stream(self, scope: Scope, receive: Receive, send: Send) -> None:
        # A request without a message (a GET stream, a DELETE): the caps, the hop-by-hop and legacy rules, the app.
        # It is no run of the gate machine: there is nothing to verify.
        received = scope["headers"]
        headers = McpHeaders.read(received)
        exceeded = headers.limit_exceeded()
        if exceeded is not None:
            refusal = Refusal(status=431, code=INVALID_REQUEST, message=f"Header fields too large: {exceeded}")
            self._counts["rejected"] += 1
            self._counts[f"rejected:{_cap_reason(headers)}"] += 1
            await answer(send, 431, refusal.body(), _JSON)
            return
        fields = end_to_end(received)
        if headers.legacy:
            version = headers.protocol_version
            legacy = self.settings.legacy
            if legacy == "reject" and (version is not None or field(fields, b"mcp-session-id") is not None):
                text = f"legacy requests are not accepted here ({version or 'a legacy session'})"
                self._counts["rejected"] += 1
                self._counts["rejected:legacy"] += 1
                await answer(send, 400, Refusal(status=400, code=INVALID_REQUEST, message=text).body(), _JSON)
                return
            if legacy == "strip":
                fields = without_params(fields)
        try:
            # A GET or DELETE carries no body, as a rule; whatever it carries is held to the same cap as a POST's.
            body = await read_body(receive, self.settings.max_body, field(fields, b"content-length"))
        except BodyTooLarge:
            message = f"the request body is longer than {self.settings.max_body} bytes"
            self._counts["rejected"] += 1
            self._counts["rejected:body_too_large"] += 1
            await answer(send, 413, Refusal(status=413, code=INVALID_REQUEST, message=message).body(), _JSON)
            return
        except ClientGone:
            return
        self._counts["forwarded"] += 1
        forget = self._forgetting(scope, identity_of(fields))
        await self.app(
            {**scope, "headers": fields},
            replayed(body, receive),
            watched(send, method=None, request_id=None, learn=_ignore, forget=forget),
        )

    def _forgetting(self, scope: Scope, identity: str | None) -> Callable[[], Awaitable[None]]:
        async def forget() -> None:
            await self.book.forget(self._server(scope), identity)
            self._counts["forgotten"] += 1

        return forget

    def _server(self, scope: Scope) -> str:
        return f"{self._origin}{scope.get('root_path', '')}{scope['path']}"

    # --- fetching a listing from the app ---------------------------------------------------------------------

    async def _fetch(
        self, scope: Scope, fields: list[tuple[bytes, bytes]], parsed: ParsedRequest | None
    ) -> Listing | None:
        # One tools/list (every page) from the wrapped app, as the caller; None when it did not answer with one.
        meta: dict[str, Any] = {}
        given = parsed.params.get("_meta") if parsed is not None else None
        if isinstance(given, Mapping):
            meta = {key: value for key, value in given.items() if isinstance(key, str) and key.startswith(_META_PREFIX)}
        base = [(name, value) for name, value in fields if name in _FETCH_FIELDS]
        base += [
            (b"content-type", b"application/json"),
            (b"accept", b"application/json, text/event-stream"),
            (b"mcp-method", b"tools/list"),
        ]
        tools: dict[str, ToolSchema] = {}
        first: Listing | None = None
        cursor: str | None = None
        for _ in range(_MAX_PAGES):
            self._fetch_ids += 1
            request_id = f"mcpfsm-gate-{self._fetch_ids}"
            params: dict[str, Any] = {"_meta": meta} if meta else {}
            if cursor is not None:
                params["cursor"] = cursor
            body = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/list", "params": params})
            status, kind, answered = await self._call_app(scope, base, body.encode())
            page = listing_from_body(answered, kind) if status == 200 else None
            if page is None:
                self._counts["fetch_failed"] += 1
                return None
            first = first or page
            tools.update(page.tools)
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
        assert first is not None
        self._counts["fetched"] += 1
        return Listing(tools=tools, ttl_ms=first.ttl_ms, cache_scope=first.cache_scope)

    async def _call_app(self, scope: Scope, fields: list[tuple[bytes, bytes]], body: bytes) -> tuple[int, str, bytes]:
        # One request to the wrapped app, in process: its status, Content-Type and body (at most MAX_LEARNED bytes).
        inner: dict[str, Any] = {key: scope[key] for key in _INNER_SCOPE if key in scope}
        inner.update(method="POST", query_string=b"", headers=[*fields, (b"content-length", str(len(body)).encode())])
        sent = False
        status = 500
        kind = ""
        pieces: list[bytes] = []
        size = 0

        async def receive() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            # Nothing more will come; an app that waits for the client to leave is ended with its answer.
            import anyio

            await anyio.sleep_forever()
            raise AssertionError("unreachable")

        async def send(message: Message) -> None:
            nonlocal status, kind, size
            if message["type"] == "http.response.start":
                status = int(message.get("status", 500))
                for name, value in message.get("headers", ()):
                    if name.lower() == b"content-type":
                        kind = value.decode("latin-1")
            elif message["type"] == "http.response.body":
                piece = message.get("body", b"")
                size += len(piece)
                if size <= MAX_LEARNED:
                    pieces.append(piece)

        await self.app(inner, receive, send)
        return status, kind, b"".join(pieces)


class _Port:
    """One request's I/O for its run (``mcpfsm._drivers.gate.GatePort``): the ASGI side of the gate."""

    __slots__ = (
        "_identity",
        "_pending",
        "_run",
        "_server",
        "body",
        "fields",
        "gate",
        "named",
        "receive",
        "scope",
        "send",
    )

    def __init__(
        self,
        gate: HeaderGate,
        scope: Scope,
        fields: list[tuple[bytes, bytes]],
        named: Mapping[bytes, bytes],
        headers: list[tuple[bytes, bytes]] | McpHeaders,
        receive: Receive,
        send: Send,
    ) -> None:
        self._run: GateRun | None = GateRun(self, headers, gate.settings, gate._sink)
        self.gate = gate
        self.scope = scope
        self.fields = fields
        self.named = named
        self.receive = receive
        self.send = send
        self.body = b""
        self._pending = True
        self._identity: str | bool | None = False
        self._server: str | None = None

    @property
    def run(self) -> GateRun:
        """The request's run of the gate machine, driven through this port."""
        assert self._run is not None
        return self._run

    def unlink(self) -> None:
        """Let go of the run (its end): nothing refers back to this port any more."""
        self._run = None

    @property
    def identity(self) -> str | None:
        """A fingerprint of the caller's ``Authorization`` (never the field), or ``None``."""
        known = self._identity
        if known is False:
            authorization = self.named.get(b"authorization")
            known = self._identity = None if authorization is None else fingerprint(authorization)
        return known  # type: ignore[return-value]

    @property
    def server(self) -> str:
        """The book's name of the server this request goes to."""
        server = self._server
        if server is None:
            server = self._server = self.gate._server(self.scope)
        return server

    async def read_body(self, limit: int) -> bytes | None:
        """The body, or ``None`` past ``limit`` bytes (413).

        Raises:
            ClientGone: the client left before the end of its body (the run ends there; nothing is answered).
        """
        try:
            self.body = await read_body(self.receive, limit, self.named.get(b"content-length"))
        except BodyTooLarge:
            return None
        return self.body

    async def schema(self, tool: str) -> ToolSchema | None:
        """The tool's schema from the book; a tool a complete listing leaves out has one that declares nothing."""
        known, schema = self.gate.book.lookup(self.server, self.identity, tool)
        if schema is not None or not known:
            return schema
        return ToolSchema(name=tool, reason=_UNLISTED)

    async def learn(self, tool: str) -> ToolSchema | None:
        """Fetch ``tools/list`` from the app (every page, as the caller, one fetch per server and identity)."""
        listing = await self.gate.book.fill(self.server, self.identity, self._fetch)
        if listing is None:
            return None
        known, schema = listing.schema(tool)
        if schema is not None or not known:
            return schema
        return ToolSchema(name=tool, reason=_UNLISTED)

    async def _fetch(self) -> Listing | None:
        return await self.gate._fetch(self.scope, self.fields, self._parsed())

    async def forward(self, *, strip_params: bool) -> None:
        """Call the app with the request (without ``Mcp-Param-*`` when ``strip_params``); read its answer on the way."""
        scope, fields = self.scope, self.fields
        if strip_params:
            fields = without_params(fields)
        if fields is not scope["headers"]:
            scope = {**scope, "headers": fields}
        run = self._run
        parsed = run.request if run is not None else None
        if type(parsed) is not ParsedRequest:  # a legacy request's body, which the run did not parse
            parsed = self._parsed()
        sender = self.send
        if parsed is not None:
            sender = watched(
                sender, method=parsed.method, request_id=parsed.id, learn=self._learned, forget=self._forget
            )
        # The port is the app's receive (its bound method), not a closure made per request (bench/gate.py).
        await self.gate.app(scope, self._replay, sender)

    async def _replay(self) -> Message:
        # The body read as the whole request, then whatever the client sends next (a disconnect).
        if self._pending:
            self._pending = False
            return {"type": "http.request", "body": self.body, "more_body": False}
        return await self.receive()

    async def _learned(self, listing: Listing) -> None:
        parsed = self._parsed()
        await self.gate.book.learn(
            self.server, self.identity, listing, first=parsed is None or parsed.params.get("cursor") is None
        )
        self.gate._counts["learned"] += 1

    async def _forget(self) -> None:
        await self.gate.book.forget(self.server, self.identity)
        self.gate._counts["forgotten"] += 1

    async def refuse(self, refusal: Refusal) -> None:
        """Answer the client: ``refusal.status`` and its JSON-RPC error."""
        await answer(self.send, refusal.status, refusal.body(), _JSON)

    def _parsed(self) -> ParsedRequest | None:
        # The body as the run parsed it (once); a legacy request's, which the run does not parse, here.
        run = self._run
        if run is None:
            return None
        request = run.request
        if request is None and run.headers.legacy:
            request = parse_request(self.body)
        return request if isinstance(request, ParsedRequest) else None


_FETCH_FIELDS: Final = frozenset({b"authorization", b"host", b"origin", b"mcp-protocol-version", b"user-agent"})
_INNER_SCOPE: Final = (
    "type",
    "asgi",
    "http_version",
    "scheme",
    "server",
    "client",
    "root_path",
    "path",
    "raw_path",
    "state",
    "extensions",
)


async def _ignore(listing: Listing) -> None:
    del listing


def _cap_reason(headers: McpHeaders) -> str:
    from .._core.gate import MAX_MCP_HEADERS

    return "too_many_headers" if headers.count > MAX_MCP_HEADERS else "header_too_large"


def _reason(run: GateRun) -> str:
    # The stats key of a refusal: what the run refused the request for, never a value.
    refusal = run.refusal
    if refusal is None:
        return "unknown"
    if refusal.header is not None:
        return f"mismatch:{refusal.header}"
    if refusal.status == 431:
        return _cap_reason(run.headers)
    if refusal.status == 413:
        return "body_too_large"
    if run.verdict is not None and run.verdict.ok:
        return "policy"
    if run.headers.legacy:
        return "legacy"
    if isinstance(run.request, Verdict):
        return "malformed"
    return "unknown_schema"


def _preloaded(path: str | os.PathLike[str]) -> Listing:
    # schemas=PATH: a tools/list result, or a JSON-RPC response carrying one.
    with open(path, "rb") as handle:
        content = handle.read()
    try:
        return read_schemas(content)
    except ValueError as exc:
        raise ValueError(f"the schemas file {os.fspath(path)!r}: {exc}") from None
