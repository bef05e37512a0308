"""Many servers, one agent: :class:`ClientGroup` opens the servers of a configuration (docs/groups.md).

The members are ordinary :class:`~mcpfsm.Client` values, one per enabled server. An eager member connects when the
group opens (all of them concurrently); a lazy one (``lazy=True``, or ``"lazy": true`` in its entry) on its first
use. Each member follows the group machine (``mcpfsm._client.members``, specs/group.md): a member that cannot
connect, whose stdio child exits or whose server is gone is ``"failed"`` and the group goes on without it until a
use after its backoff window reconnects it; every change of status is a :class:`~mcpfsm.MemberEvent`.

Listings are aggregated: a tool or prompt is renamed ``{server}{separator}{name}`` (or ``{prefix}{separator}{name}``,
or left alone with ``prefix: ""``), kept to the characters MCP 2025-11-25 "Tools" recommends (SEP-986), filtered by
the server's ``include_tools`` and ``exclude_tools``; a name that two servers would still share is a
:class:`~mcpfsm.ConfigError`, never an overwrite. With ``store=``, an idle member's tools come from its known
listing while it is fresh (``mcpfsm._client.known``), so listing starts nothing. A call goes to its member's own
client, so it carries that member's mirrored headers (SEP-2243), recovers from -32020 there, and its events say
which server they come from (``CallEvent.server``).
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import replace
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, TypeVar, Unpack

import trio

from .._core.catalog import Exclusion
from .._core.config import Config, ServerConfig, load_config
from .._core.errors import ConfigError, McpError, ProtocolError, RpcError, TransportError
from .._core.events import CallEvent
from .._core.known_listings import DEFAULT_KNOWN_TTL, KnownListing
from .._core.oauth.redaction import Secrets
from .._core.results import ToolResult
from .._core.surface import Prompt, PromptResult, Resource, ResourceResult
from .._drivers.audit import AuditBus
from .._log import logger
from .._machines.group import Trigger
from .._transports.background import BackgroundTasks
from .aggregation import GroupTool, aggregated, claim, selected, valid_separator
from .assembly import HttpServer, StdioServer, Wrap
from .client import Client
from .known import KnownListings, known_definitions
from .members import DEFAULT_BACKOFF, Member, Status, member_event
from .options import ClientKeywords, ClientOptions
from .tools import NO_DEFINITIONS, Tool, ToolList

if TYPE_CHECKING:
    from .._transports.tls import VerifyTypes

__all__ = ["ClientGroup", "GroupTool", "Status", "member_client"]

T = TypeVar("T")

_CONNECT_TIMEOUT: Final = 30.0


class _GroupBus(AuditBus):
    # The group's fan-out: the members' buses already logged each event, so this one only delivers.
    __slots__ = ()

    def log(self, *args: Any, **kwargs: Any) -> None:
        return


class _Port:
    # What the members see of their group (members.GroupPort).
    __slots__ = ("_group", "connect_timeout", "reconnect_backoff", "tasks")

    def __init__(self, group: ClientGroup, connect_timeout: float, reconnect_backoff: float) -> None:
        self._group = group
        self.connect_timeout = connect_timeout
        self.reconnect_backoff = reconnect_backoff
        self.tasks = BackgroundTasks()

    @property
    def closed(self) -> bool:
        return self._group._closed

    def client_for(self, server: ServerConfig) -> Client:
        return self._group._client(server)

    def scrub(self, member: Member, error: BaseException) -> BaseException:
        return self._group._hide(member, error)

    def publish(self, member: Member, status: str, previous: str, trigger: str, error: BaseException | None) -> None:
        self._group._publish(member, status, previous, trigger, error)

    async def settled(self, member: Member, client: Client) -> None:
        await self._group._known.settle(member, client)


class ClientGroup:
    """The servers of a configuration as one agent's toolbox (docs/groups.md).

    ``async with ClientGroup(config, on_event=...) as group:`` connects the eager members concurrently; one that
    fails to connect is ``"failed"`` (:attr:`errors` says why) and does not fail the group. A lazy member stays
    ``"idle"`` until its first use: a call routed to it, ``await group.client(name)``, or a listing its known
    listing cannot answer. Leaving the block closes every member concurrently, each bounded (a stdio child is
    terminated, then killed; a legacy HTTP session's ``DELETE`` gets 5 s).

    Args:
        config: a :class:`~mcpfsm.Config`, the configuration as a dict, or the path of a JSON file
            (read with :func:`~mcpfsm.load_config`).
        separator: between a server's name (or ``prefix``) and a tool's or prompt's name (default ``_``).
        connect_timeout: seconds a member may take to connect before it is ``"failed"``.
        environ: the variables the configuration's ``${env:NAME}`` read (default ``os.environ``).
        lazy: connect every member on its first use instead of when the group opens; a server's own ``"lazy"``
            key wins.
        known_ttl: seconds a known listing stays fresh when its server gave no ``ttlMs`` (default one day).
        reconnect_backoff: seconds after a member failed before a use reconnects it (default 1); the window
            doubles after each failure that follows another, up to 60 s, and a success resets it. 0 reconnects at
            every use.
        options: the options of every member (:class:`~mcpfsm.ClientOptions`), as one value.
        **keywords: the same options as keywords (they replace those of ``options``): input handlers,
            ``cache``, ``validate_output``, ...; ``on_event`` is called with every event of every member
            (``event.server`` names it) and every :class:`~mcpfsm.MemberEvent`; ``store=`` gives every member one
            store (docs/stores.md), each member bounding it on its own, and keeps the members' known listings; a
            ``protocol`` other than ``"auto"`` pins every member, which otherwise speaks the ``protocol`` its
            server's configuration names. ``server`` is each member's name.

    Raises:
        ConfigError: the configuration is malformed, or ``separator`` is not made of ``A-Z a-z 0-9 _ - .``.
        ValueError, TypeError: an option as :class:`~mcpfsm.ClientOptions` says; ``record=`` (a cassette records
            one server: give it to a member's client); ``lazy`` is not a bool, ``known_ttl`` not a positive number
            of seconds, or ``reconnect_backoff`` not a number of seconds of at least 0.
    """

    def __init__(
        self,
        config: Config | Mapping[str, Any] | str | os.PathLike[str],
        *,
        separator: str = "_",
        connect_timeout: float = _CONNECT_TIMEOUT,
        environ: Mapping[str, str] | None = None,
        lazy: bool = False,
        known_ttl: float = DEFAULT_KNOWN_TTL,
        reconnect_backoff: float = DEFAULT_BACKOFF,
        options: ClientOptions | None = None,
        **keywords: Unpack[ClientKeywords],
    ) -> None:
        """Read the configuration; nothing connects until the group is entered."""
        if not isinstance(separator, str) or not valid_separator(separator):
            raise ConfigError("separator must be made of A-Z a-z 0-9 _ - . (SEP-986)", path=None)
        if not isinstance(lazy, bool):
            raise TypeError(f"lazy must be True or False, got {type(lazy).__name__}")
        if not _seconds(known_ttl) or not known_ttl > 0:
            raise ValueError(f"known_ttl must be a positive number of seconds, got {known_ttl!r}")
        if not _seconds(reconnect_backoff) or not reconnect_backoff >= 0:
            raise ValueError(f"reconnect_backoff must be a number of seconds of at least 0, got {reconnect_backoff!r}")
        chosen = ClientOptions.of(options, keywords)
        if chosen.record is not None:
            raise ValueError("record= records one server's session: give it to the member's Client, not to the group")
        self._environ = environ
        self._config = load_config(config, environ=environ)
        self._separator = separator
        self._lazy = lazy
        self._bus = _GroupBus(chosen.on_event)
        self._options = replace(chosen, on_event=self._bus.publish)
        self._port = _Port(self, connect_timeout, float(reconnect_backoff))
        self._known = KnownListings(chosen.store, known_ttl=float(known_ttl))
        self._members = {name: self._member(server) for name, server in self._config.servers.items()}
        self._tools: dict[str, GroupTool] = {}
        self._prompts: dict[str, tuple[str, str]] = {}
        self._resources: dict[str, list[str]] = {}
        self._opened_at: float | None = None
        self._seq = 0
        self._closed = False

    def _member(self, server: ServerConfig) -> Member:
        member = Member(server, lazy=self._lazy if server.lazy is None else server.lazy, group=self._port)
        self._known.key(member)  # its store key, once, with the member (not in the listing: bench/group.py)
        return member

    # --- lifecycle ----------------------------------------------------------------------------------

    async def __aenter__(self) -> ClientGroup:
        """Connect every enabled eager member concurrently; lazy members stay idle."""
        if self._opened_at is not None:
            raise McpError("a client group is entered once")
        self._opened_at = trio.current_time()
        try:
            await self._open(list(self._members.values()))
        except BaseException:
            await self.aclose()
            raise
        return self

    async def _open(self, members: list[Member]) -> None:
        eager = [member for member in members if member.status == "idle" and not member.lazy]
        for member in eager:
            member.start(Trigger.opened)
        for member in eager:
            await member.opened()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        """Close every member."""
        await self.aclose()

    async def aclose(self) -> None:
        """Close every member concurrently (stdio children reaped, legacy sessions deleted). Idempotent.

        A connected member's last listing is kept as its known listing first (with ``store=``, bounded).
        """
        if self._closed:
            return
        self._closed = True
        with trio.CancelScope(shield=True):
            await self._port.tasks.aclose()
            async with trio.open_nursery() as nursery:
                for member in self._members.values():
                    nursery.start_soon(self._close, member)

    async def _close(self, member: Member) -> None:
        client = member.client
        if client is not None:
            await self._known.remember(member, client)
        await member.close()

    async def reconnect(self, name: str) -> Status:
        """Close member ``name`` if it is open and connect it again now, whatever its backoff; returns its status.

        A failure to connect is not raised: the status is ``"failed"`` and :attr:`errors` holds why.

        Raises:
            KeyError: no server has that name.
            ConfigError: the server is disabled in the configuration.
            McpError: the group is closed or not entered.
        """
        member = self._members[name]
        if not member.config.enabled:
            raise ConfigError(f"server {name!r} is disabled in the configuration", path=None)
        self._check_open()
        await member.reconnect()
        return member.status

    async def reload(self, config: Config | Mapping[str, Any] | str | os.PathLike[str]) -> None:
        """Apply a new configuration: added members open (or stay idle), removed ones close, changed ones reopen.

        A member whose entry is unchanged keeps its client, its session and its listing; a changed one (any
        field) is closed and made anew, as an added one. Each removed or changed member emits one
        :class:`~mcpfsm.MemberEvent` with status ``"disabled"``. An identical configuration changes nothing.

        Raises:
            ConfigError: the new configuration is malformed (the group is left as it was).
            McpError: the group is closed or not entered.
        """
        self._check_open()
        new = load_config(config, environ=self._environ)
        old = self._members
        kept = {name: old[name] for name, server in new.servers.items() if name in old and old[name].config == server}
        gone = [member for name, member in old.items() if kept.get(name) is not member]
        if not gone and list(kept) == list(new.servers):
            self._config = new
            return
        self._members = {name: kept.get(name) or self._member(server) for name, server in new.servers.items()}
        self._config = new
        self._tools, self._prompts, self._resources = {}, {}, {}
        async with trio.open_nursery() as nursery:
            for member in gone:
                nursery.start_soon(_remove, member)
        await self._open([member for member in self._members.values() if member not in kept.values()])

    def _check_open(self) -> None:
        if self._closed:
            raise McpError("the client group is closed")
        if self._opened_at is None:
            raise McpError("the client group is not open: enter it with async with")

    @staticmethod
    def _hide(member: Member, error: BaseException) -> BaseException:
        # The values the configuration's variables were replaced by (an API key in the URL's query, a token in
        # args, a working directory) never reach `errors`, an event, a log line or the caller: taken out in place,
        # along the error's causes (an OSError's file name included).
        secrets = member.config.secrets
        if secrets:
            Secrets(secrets).scrub(error)
        return error

    def _client(self, server: ServerConfig) -> Client:
        return member_client(server, self._options)

    def _publish(self, member: Member, status: str, previous: str, trigger: str, error: BaseException | None) -> None:
        seq, self._seq = self._seq, self._seq + 1
        opened = self._opened_at
        elapsed = 0.0 if opened is None else trio.current_time() - opened
        self._bus.publish(member_event(member, seq, status, previous, trigger, error, elapsed))

    # --- members ------------------------------------------------------------------------------------

    @property
    def config(self) -> Config:
        """The configuration in effect (the last one :meth:`reload` applied)."""
        return self._config

    @property
    def status(self) -> dict[str, Status]:
        """Each server's status by name, in the configuration's order.

        ``"idle"`` (not connected yet: lazy, or the group is not open), ``"connecting"``, ``"connected"``,
        ``"failed"`` or ``"disabled"``.
        """
        return {name: member.status for name, member in self._members.items()}

    @property
    def errors(self) -> dict[str, BaseException]:
        """The last error of each member whose status is ``"failed"``."""
        return {
            name: member.error
            for name, member in self._members.items()
            if member.status == "failed" and member.error is not None
        }

    def backoff(self, name: str) -> float:
        """Seconds until a use may reconnect the failed member ``name`` (0 when it may now, or it is not failed).

        Raises:
            KeyError: no server has that name.
        """
        return self._members[name].backoff_left()

    def known_at(self, name: str) -> float | None:
        """When the known listing the group holds for member ``name`` was listed (UNIX seconds), or ``None``.

        Raises:
            KeyError: no server has that name.
        """
        known = self._members[name].known
        return None if known is None else known.listed_at

    def __getitem__(self, name: str) -> Client:
        """The connected member ``name``'s :class:`Client` (``await group.client(name)`` connects it first).

        Raises:
            KeyError: no server has that name.
            McpError: the member is not connected (idle, connecting, failed or disabled), or the group is closed.
        """
        member = self._members[name]
        if self._closed:
            raise McpError("the client group is closed")
        if member.client is None:
            reason = f": {member.error}" if member.status == "failed" and member.error is not None else ""
            if member.status == "idle":
                reason = f"; await group.client({name!r}) connects it"
            raise McpError(f"server {name!r} is {member.status}{reason}")
        return member.client

    async def client(self, name: str) -> Client:
        """Member ``name``'s :class:`Client`, connected: a use, which connects an idle member.

        A failed member is reconnected when its backoff window is over; inside it, its last error is raised.

        Raises:
            KeyError: no server has that name.
            McpError: the group is closed or not entered, or the member is disabled.
            Exception: what connecting the member raised, or its last error.
        """
        member = self._members[name]
        self._check_open()
        return await member.ready()

    def __contains__(self, name: object) -> bool:
        """``name in group``: a server of the configuration, whatever its status."""
        return name in self._members

    def __iter__(self) -> Iterator[str]:
        """The server names, in the configuration's order."""
        return iter(self._members)

    def events(self, buffer: int = 1024) -> AbstractAsyncContextManager[trio.MemoryReceiveChannel[CallEvent]]:
        """Subscribe to every event of every member (``async with group.events() as events``).

        A subscriber that falls ``buffer`` events behind loses events (with one WARNING), as a client's.
        """
        return self._bus.subscribe(buffer)

    # --- aggregation --------------------------------------------------------------------------------

    def aggregated_name(self, server: str, name: str) -> str:
        """The name a tool or prompt ``name`` of ``server`` has in the group's listings (SEP-986 characters).

        ``{server}{separator}{name}``, or ``{prefix}{separator}{name}`` with a ``prefix``, or ``name`` with
        ``prefix: ""``; any other character becomes ``_``, and a name over 128 characters keeps its first
        119 and a hash of the whole.

        Raises:
            KeyError: no server has that name.
        """
        return aggregated(self._members[server].config, name, self._separator)

    async def _listed(self, member: Member, what: str, list_one: Callable[[Client], Awaitable[Any]]) -> Any:
        # One member's listing: a use (connecting it if idle). A member in its backoff window, one that cannot
        # connect, or one that answers a JSON-RPC error or a malformed listing is left out of this listing (None);
        # one whose server is gone becomes "failed": the group goes on without it.
        if member.status == "disabled" or member.backoff_left() > 0:
            return None
        try:
            client = await member.ready()
        except Exception as exc:  # the member is failed; errors says why (its secrets taken out already)
            logger.info("server {!r} is left out of the {} listing: {}", member.name, what, exc)
            return None
        try:
            listing = await list_one(client)
        except (RpcError, ProtocolError) as exc:
            self._hide(member, exc)
            logger.warning("server {!r} could not list {}: {}", member.name, what, exc)
            return None
        except TransportError as exc:
            self._hide(member, exc)
            logger.warning("server {!r} failed while listing {}: {}", member.name, what, exc)
            await member.broke(client, exc)
            return None
        return listing

    async def _gather(self, what: str, list_one: Callable[[Client], Awaitable[Any]]) -> dict[str, Any]:
        # One listing per member, concurrently, in the configuration's order.
        self._check_open()
        results: dict[str, Any] = {}

        async def one(name: str, member: Member) -> None:
            listing = await self._listed(member, what, list_one)
            if listing is not None:
                results[name] = listing

        async with trio.open_nursery() as nursery:
            for name, member in self._members.items():
                nursery.start_soon(one, name, member)
        return {name: results[name] for name in self._members if name in results}

    async def tools(self, *, fresh: bool = False) -> ToolList:
        """Every member's tools under their aggregated names, in the configuration's order.

        An idle member with a fresh known listing (``store=``) is answered from it without connecting (its
        tools have :attr:`~mcpfsm.Tool.known_at`); any other idle member is connected and listed. ``fresh=True``
        lists every member live. Each member's ``include_tools`` keeps the tools whose listed name equals one of
        its entries or matches it as an ``fnmatch`` pattern; then ``exclude_tools`` removes those matching one of
        its. A complete live listing is kept as the member's known listing.

        Raises:
            ConfigError: two tools would have the same aggregated name (it names both servers).
            McpError: the group is closed or not entered.
        """
        self._check_open()
        listings: dict[str, tuple[list[Tool], tuple[Exclusion, ...]]] = {}

        async def one(name: str, member: Member) -> None:
            if not fresh and member.status == "idle" and self._known.kept:
                known = await self._known.fresh(member)
                if known is not None:
                    listings[name] = self._known_tools(member, known)
                    return

            async def live(client: Client) -> ToolList:
                listing = await client.tools(fresh=fresh)
                await self._known.remember(member, client)
                return listing

            listing = await self._listed(member, "tools", live)
            if listing is not None:
                listings[name] = (list(listing), listing.excluded)

        async with trio.open_nursery() as nursery:
            for name, member in self._members.items():
                nursery.start_soon(one, name, member)
        tools: list[GroupTool] = []
        owners: dict[str, tuple[str, str]] = {}
        excluded: list[Exclusion] = []
        for server in self._members:
            if server not in listings:
                continue
            listed, left_out = listings[server]
            config = self._members[server].config
            for tool in listed:
                if not selected(tool.name, config):
                    continue
                public = self.aggregated_name(server, tool.name)
                claim(owners, public, server, tool.name, "tool")
                tools.append(GroupTool(tool, public, server, self._call_group_tool))
            excluded.extend(left_out)
        self._tools = {tool.name: tool for tool in tools}
        return ToolList(tools, excluded)

    def _known_tools(self, member: Member, known: KnownListing) -> tuple[list[Tool], tuple[Exclusion, ...]]:
        # SEP-2243: annotations are checked as the member's connection would (HTTP, 2026-07-28: mirrored).
        definitions, excluded = known_definitions(known, mirroring=member.config.transport == "http" and known.modern)
        server = member.name

        async def call(tool: Tool, arguments: Mapping[str, Any] | None) -> ToolResult:
            return await self._route(server, tool, arguments)

        return [Tool(each, NO_DEFINITIONS, call, known_at=known.listed_at) for each in definitions], excluded

    async def search(self, query: str, *, limit: int = 10) -> ToolList:
        """The group's tools that match ``query`` best (:meth:`ToolList.search` over :meth:`tools`).

        Idle members with a fresh known listing are searched through it, without connecting them.

        Raises:
            ValueError: ``query`` is empty or only whitespace, or ``limit`` is not a positive integer (before
                anything is listed).
            ConfigError, McpError: as :meth:`tools`.
        """
        ToolList(()).search(query, limit=limit)
        return (await self.tools()).search(query, limit=limit)

    async def _call_group_tool(self, tool: Tool, arguments: Mapping[str, Any] | None) -> ToolResult:
        assert isinstance(tool, GroupTool)
        return await self.call_tool(tool, arguments)

    async def call_tool(self, tool: GroupTool | str, arguments: Mapping[str, Any] | None = None) -> ToolResult:
        """Call a tool of the aggregated listing on its member, as ``tool.call(arguments)`` does.

        A name is looked up in the last listing, and the group lists first when the name is not in it; the
        member's listed handle is used, so its annotated arguments are mirrored (SEP-2243). An idle member is
        connected first; a tool from a known listing is planned from that listing's schema (a server whose schema
        changed answers -32020, and the member's client relists and retries once). A tool the server no longer
        lists raises what calling an unknown tool raises on that member's client.

        Raises:
            McpError: no member lists a tool of that name, its member is disabled or failed (its last error,
                inside the backoff window), or the group is closed.
            ConfigError: listing found two tools of the same aggregated name.
            MirroringError, HeaderMismatchError, RpcError, TransportError, ProtocolError: as ``Client.call_tool``.
        """
        if isinstance(tool, GroupTool):
            target = tool
        elif isinstance(tool, str):
            found = self._tools.get(tool)
            if found is None:
                await self.tools()
                found = self._tools.get(tool)
                if found is None:
                    raise McpError(f"no server of the group lists a tool named {tool!r}")
            target = found
        else:
            raise TypeError(f"tool must be a GroupTool or an aggregated tool name, got {type(tool).__name__}")
        return await self._route(target.server, target.member_tool, arguments)

    async def _route(self, server: str, tool: Tool, arguments: Mapping[str, Any] | None) -> ToolResult:
        member = self._members.get(server)
        if member is None:
            raise McpError(f"server {server!r} is no longer in the group's configuration")
        client = member.client if member.status == "connected" else None
        if client is None:
            self._check_open()
            client = await member.ready()
        try:
            return await client.call_tool(tool, arguments)
        except TransportError as exc:
            await member.broke(client, exc)
            raise
        finally:
            # A -32020 recovery relisted: that complete listing is the member's known one now.
            if self._known.kept and client._catalog.listings != member.written:
                await self._known.remember(member, client)

    async def prompts(self, *, fresh: bool = False) -> list[Prompt]:
        """Every connected member's prompts, renamed as tools are; ``Prompt.server`` names the member.

        Raises:
            ConfigError: two prompts would have the same aggregated name (it names both servers).
        """
        listings = await self._gather("prompts", lambda client: client.prompts(fresh=fresh))
        prompts: list[Prompt] = []
        owners: dict[str, tuple[str, str]] = {}
        for server, listing in listings.items():
            for prompt in listing:
                public = self.aggregated_name(server, prompt.name)
                claim(owners, public, server, prompt.name, "prompt")
                prompts.append(replace(prompt, name=public, server=server))
        self._prompts = owners
        return prompts

    async def get_prompt(self, name: str | Prompt, arguments: Mapping[str, str] | None = None) -> PromptResult:
        """``prompts/get`` of an aggregated prompt on its member (the group lists first when needed).

        Raises:
            McpError: no member lists a prompt of that name, or its member is not connected.
            RpcError, TransportError, ProtocolError: as ``Client.get_prompt``.
        """
        if isinstance(name, Prompt):
            if name.server is not None:
                own = str(name.raw.get("name", name.name))
                return await self._use(name.server, lambda client: client.get_prompt(own, arguments))
            name = name.name
        owner = self._prompts.get(name)
        if owner is None:
            await self.prompts()
            owner = self._prompts.get(name)
            if owner is None:
                raise McpError(f"no server of the group lists a prompt named {name!r}")
        server, own = owner
        return await self._use(server, lambda client: client.get_prompt(own, arguments))

    async def resources(self, *, fresh: bool = False) -> list[Resource]:
        """Every connected member's resources, URIs unchanged; ``Resource.server`` names the member."""
        listings = await self._gather("resources", lambda client: client.resources(fresh=fresh))
        resources: list[Resource] = []
        owners: dict[str, list[str]] = {}
        for server, listing in listings.items():
            for resource in listing:
                resources.append(replace(resource, server=server))
                servers = owners.setdefault(resource.uri, [])
                if server not in servers:
                    servers.append(server)
        self._resources = owners
        return resources

    async def read_resource(
        self, uri: str | Resource, *, server: str | None = None, fresh: bool = False
    ) -> ResourceResult:
        """``resources/read`` on the member that listed ``uri`` (a listed :class:`Resource` knows it).

        ``server=`` names the member for a URI that no member lists (from a template) or that several do.

        Raises:
            McpError: no member lists the URI (and ``server`` is not given), or the member is not connected.
            ConfigError: several members list the URI (their names given): pass ``server=``.
            RpcError, TransportError, ProtocolError: as ``Client.read_resource``.
        """
        if isinstance(uri, Resource):
            server = server or uri.server
            uri = uri.uri
        if server is None:
            owners = self._resources.get(uri)
            if owners is None:
                await self.resources()
                owners = self._resources.get(uri)
            if not owners:
                raise McpError(f"no server of the group lists the resource {uri!r}: pass server=")
            if len(owners) > 1:
                raise ConfigError(
                    f"servers {', '.join(repr(owner) for owner in owners)} all list the resource {uri!r}: pass server=",
                    path=None,
                )
            server = owners[0]
        target = uri
        return await self._use(server, lambda client: client.read_resource(target, fresh=fresh))

    async def _use(self, server: str, request: Callable[[Client], Awaitable[T]]) -> T:
        # A request routed to a member: a use (an idle member connects); a gone server makes it failed.
        member = self._members.get(server)
        if member is None:
            raise McpError(f"server {server!r} is no longer in the group's configuration")
        self._check_open()
        client = await member.ready()
        try:
            return await request(client)
        except TransportError as exc:
            await member.broke(client, exc)
            raise


def member_client(
    server: ServerConfig,
    options: ClientOptions | None = None,
    *,
    verify: VerifyTypes = True,
    wrap: Wrap | None = None,
) -> Client:
    """The :class:`Client` for one server of a configuration, not yet connected; its events carry ``server.name``.

    ``options`` are the client's (its ``server`` is the server's name; its ``protocol``, unless it pins one, the
    configuration's). ``verify`` is the TLS trust of an HTTP server; ``wrap`` puts a layer between the client's
    session and its transport (the ``mcpfsm`` command's). The values the configuration's variables were replaced
    by are held secret like credentials: never in an error, an event or a log line.

    Raises:
        ValueError, TypeError, TransportError: as :meth:`Client.http` and :meth:`Client.stdio`.
    """
    options = options if options is not None else ClientOptions()
    protocol = options.protocol if options.protocol != "auto" else server.protocol
    options = replace(options, server=server.name, protocol=protocol)
    if server.transport == "stdio":
        connection: HttpServer | StdioServer = StdioServer(
            command=server.command, env=server.env, cwd=server.cwd, secrets=server.secrets, wrap=wrap
        )
    else:
        assert server.url is not None
        connection = HttpServer(
            url=server.url,
            headers=dict(server.headers),
            timeout=server.timeout,
            verify=verify,
            auth=server.auth,
            secrets=server.secrets,
            wrap=wrap,
        )
    return Client(connection, options=options)


async def _remove(member: Member) -> None:
    await member.close(removed=True)


def _seconds(value: object) -> bool:
    # A number of seconds: an int or a float, not a bool, not NaN.
    return isinstance(value, int | float) and not isinstance(value, bool) and value == value
