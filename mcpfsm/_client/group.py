"""Many servers, one agent: :class:`ClientGroup` opens every server of a configuration (docs/groups.md).

The members are ordinary :class:`~mcpfsm.Client` values, one per enabled server, connected concurrently in
one nursery and closed concurrently in another; a member that cannot connect is ``"failed"`` and the group
goes on without it. Listings are aggregated: a tool or prompt is renamed ``{server}{separator}{name}`` (or
``{prefix}{separator}{name}``, or left alone with ``prefix: ""``), kept to the characters MCP 2025-11-25
"Tools" recommends (SEP-986), filtered by the server's ``include_tools`` and ``exclude_tools``; a name that
two servers would still share is a :class:`~mcpfsm.ConfigError`, never an overwrite. A call goes to its
member's own client, so it carries that member's mirrored headers (SEP-2243), recovers from -32020 there, and
its events say which server they come from (``CallEvent.server``).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterator, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import replace
from fnmatch import fnmatchcase
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, Literal, Unpack

import trio

from .._core.catalog import Exclusion
from .._core.config import TOOL_NAME, Config, ServerConfig, load_config
from .._core.errors import ConfigError, McpError, ProtocolError, RpcError, TransportError
from .._core.events import CallEvent
from .._core.oauth.redaction import Secrets
from .._core.results import ToolResult
from .._core.surface import Prompt, PromptResult, Resource, ResourceResult
from .._drivers.audit import AuditBus
from .._log import logger
from .assembly import HttpServer, StdioServer, Wrap
from .client import Client
from .options import ClientKeywords, ClientOptions
from .tools import CallTool, Tool, ToolList

if TYPE_CHECKING:
    from .._transports.tls import VerifyTypes

__all__ = ["ClientGroup", "GroupTool", "Status", "member_client"]

Status = Literal["connected", "failed", "disabled"]
"""What :attr:`ClientGroup.status` says of a member."""

_CONNECT_TIMEOUT: Final = 30.0
_INVALID: Final = re.compile(r"[^A-Za-z0-9_.\-]")


class GroupTool(Tool):
    """A tool of a :class:`ClientGroup`'s aggregated listing: a member's tool under its aggregated name.

    :attr:`name` is the aggregated name (``github_search``); :attr:`server` the member, :attr:`member_tool`
    the member's own handle (whose ``name`` is the server's). ``call()`` goes to the member's client with
    that member's headers and -32020 recovery.
    """

    __slots__ = ("_member", "_public", "_server")

    def __init__(self, member: Tool, public: str, server: str, call: CallTool) -> None:
        """Wrap ``member``; users get these from :meth:`ClientGroup.tools`."""
        super().__init__(member.definition, member._catalog, call)
        self._member = member
        self._public = public
        self._server = server

    @property
    def name(self) -> str:
        """The aggregated name, unique in the group's listing."""
        return self._public

    @property
    def server(self) -> str:
        """The name of the member that listed the tool."""
        return self._server

    @property
    def member_tool(self) -> Tool:
        """The member's own handle (its ``name`` is the server's name for the tool)."""
        return self._member

    @property
    def mirrored(self) -> dict[tuple[str, ...], str]:
        """Argument path -> ``Mcp-Param-*`` header name, as the member mirrors them (SEP-2243)."""
        return self._member.mirrored

    def __repr__(self) -> str:
        """Show the aggregated name, the member and the server's name."""
        return f"GroupTool({self._public!r}, server={self._server!r}, tool={self._member.name!r})"


class _GroupBus(AuditBus):
    # The group's fan-out: the members' buses already logged each event, so this one only delivers.
    __slots__ = ()

    def log(self, *args: Any, **kwargs: Any) -> None:
        return


class _Member:
    __slots__ = ("client", "config", "error", "status")

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.client: Client | None = None
        self.error: BaseException | None = None
        self.status: Status = "disabled" if not config.enabled else "failed"


class ClientGroup:
    """Every enabled server of a configuration as one agent's toolbox (docs/groups.md).

    ``async with ClientGroup(config, on_event=...) as group:`` connects the members concurrently; one that
    fails to connect is ``"failed"`` (:attr:`errors` says why) and does not fail the group. Leaving the block
    closes every member concurrently, each bounded (a stdio child is terminated, then killed; a legacy HTTP
    session's ``DELETE`` gets 5 s).

    Args:
        config: a :class:`~mcpfsm.Config`, the configuration as a dict, or the path of a JSON file
            (read with :func:`~mcpfsm.load_config`).
        separator: between a server's name (or ``prefix``) and a tool's or prompt's name (default ``_``).
        connect_timeout: seconds a member may take to connect before it is ``"failed"``.
        environ: the variables the configuration's ``${env:NAME}`` read (default ``os.environ``).
        options: the options of every member (:class:`~mcpfsm.ClientOptions`), as one value.
        **keywords: the same options as keywords (they replace those of ``options``): input handlers,
            ``cache``, ``validate_output``, ...; ``on_event`` is called with every event of every member
            (``event.server`` names it); ``store=`` gives every member one store (docs/stores.md), each member
            bounding it on its own; a ``protocol`` other than ``"auto"`` pins every member, which otherwise
            speaks the ``protocol`` its server's configuration names. ``server`` is each member's name.

    Raises:
        ConfigError: the configuration is malformed, or ``separator`` is not made of ``A-Z a-z 0-9 _ - .``.
        ValueError, TypeError: an option as :class:`~mcpfsm.ClientOptions` says.
    """

    def __init__(
        self,
        config: Config | Mapping[str, Any] | str | os.PathLike[str],
        *,
        separator: str = "_",
        connect_timeout: float = _CONNECT_TIMEOUT,
        environ: Mapping[str, str] | None = None,
        options: ClientOptions | None = None,
        **keywords: Unpack[ClientKeywords],
    ) -> None:
        """Read the configuration; nothing connects until the group is entered."""
        if not isinstance(separator, str) or _INVALID.search(separator):
            raise ConfigError("separator must be made of A-Z a-z 0-9 _ - . (SEP-986)", path=None)
        chosen = ClientOptions.of(options, keywords)
        self._config = load_config(config, environ=environ)
        self._separator = separator
        self._connect_timeout = connect_timeout
        self._bus = _GroupBus(chosen.on_event)
        self._options = replace(chosen, on_event=self._bus.publish)
        self._members = {name: _Member(server) for name, server in self._config.servers.items()}
        self._tools: dict[str, GroupTool] = {}
        self._prompts: dict[str, tuple[str, str]] = {}
        self._resources: dict[str, list[str]] = {}
        self._closed = False

    # --- lifecycle ----------------------------------------------------------------------------------

    async def __aenter__(self) -> ClientGroup:
        """Connect every enabled member concurrently."""
        try:
            async with trio.open_nursery() as nursery:
                for name, member in self._members.items():
                    if member.config.enabled:
                        nursery.start_soon(self._connect, name)
        except BaseException:
            await self.aclose()
            raise
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        """Close every member."""
        await self.aclose()

    async def aclose(self) -> None:
        """Close every member concurrently (stdio children reaped, legacy sessions deleted). Idempotent."""
        if self._closed:
            return
        self._closed = True
        with trio.CancelScope(shield=True):
            async with trio.open_nursery() as nursery:
                for member in self._members.values():
                    client, member.client = member.client, None
                    if client is not None:
                        nursery.start_soon(client.aclose)

    async def reconnect(self, name: str) -> Status:
        """Close member ``name`` if it is open and connect it again; returns its new status.

        A failure to connect is not raised: the status is ``"failed"`` and :attr:`errors` holds why.

        Raises:
            KeyError: no server has that name.
            ConfigError: the server is disabled in the configuration.
            McpError: the group is closed.
        """
        member = self._members[name]
        if not member.config.enabled:
            raise ConfigError(f"server {name!r} is disabled in the configuration", path=None)
        if self._closed:
            raise McpError("the client group is closed")
        client, member.client = member.client, None
        if client is not None:
            await client.aclose()
        await self._connect(name)
        return member.status

    async def _connect(self, name: str) -> None:
        member = self._members[name]
        error: BaseException | None = None
        client: Client | None = None
        try:
            client = self._client(member.config)
            with trio.fail_after(self._connect_timeout):
                await client.connect()
        except trio.TooSlowError:
            error = TransportError(f"server {name!r} did not connect within {self._connect_timeout:g} s")
        except Exception as exc:  # whatever one member raises fails that member, never the group
            error = exc
        if error is None:
            member.client, member.status, member.error = client, "connected", None
            return
        if client is not None:
            await client.aclose()
        self._hide(name, error)
        member.client, member.status, member.error = None, "failed", error
        logger.warning("server {!r} of the group failed to connect: {}", name, error)

    def _hide(self, name: str, error: BaseException) -> None:
        # The values the configuration's variables were replaced by (an API key in the URL's query, a token in
        # args, a working directory) never reach `errors`, a log line or the caller: taken out in place, along
        # the error's causes (an OSError's file name included).
        secrets = self._members[name].config.secrets
        if secrets:
            Secrets(secrets).scrub(error)

    def _client(self, server: ServerConfig) -> Client:
        return member_client(server, self._options)

    # --- members ------------------------------------------------------------------------------------

    @property
    def config(self) -> Config:
        """The configuration the group was made from."""
        return self._config

    @property
    def status(self) -> dict[str, Status]:
        """Each server's status by name, in the configuration's order: connected, failed or disabled."""
        return {name: member.status for name, member in self._members.items()}

    @property
    def errors(self) -> dict[str, BaseException]:
        """The last error of each member whose status is ``"failed"``."""
        return {
            name: member.error
            for name, member in self._members.items()
            if member.status == "failed" and member.error is not None
        }

    def __getitem__(self, name: str) -> Client:
        """The connected member ``name``'s :class:`Client`.

        Raises:
            KeyError: no server has that name.
            McpError: the member is not connected (failed or disabled), or the group is closed.
        """
        member = self._members[name]
        if self._closed:
            raise McpError("the client group is closed")
        if member.client is None:
            reason = f": {member.error}" if member.error is not None else ""
            raise McpError(f"server {name!r} is {member.status}{reason}")
        return member.client

    def __contains__(self, name: object) -> bool:
        """``name in group``: a server of the configuration, whatever its status."""
        return name in self._members

    def __iter__(self) -> Iterator[str]:
        """The server names, in the configuration's order."""
        return iter(self._members)

    def _connected(self) -> list[tuple[str, Client]]:
        return [(name, member.client) for name, member in self._members.items() if member.client is not None]

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
        prefix = self._members[server].config.prefix
        if prefix is None:
            prefix = server
        public = f"{prefix}{self._separator}{name}" if prefix else name
        if TOOL_NAME.fullmatch(public):
            return public
        cleaned = _INVALID.sub("_", public) or "_"
        if len(cleaned) > 128:
            cleaned = cleaned[:119] + "_" + hashlib.sha256(public.encode()).hexdigest()[:8]
        return cleaned

    async def _gather(self, what: str, list_one: Any) -> dict[str, Any]:
        # One listing per connected member, concurrently. A member that answers a JSON-RPC error or a malformed
        # listing is left out of this listing; one whose connection broke is "failed" (and closed): the group
        # goes on without it.
        results: dict[str, Any] = {}

        async def one(name: str, client: Client) -> None:
            try:
                results[name] = await list_one(client)
            except (RpcError, ProtocolError) as exc:
                self._hide(name, exc)
                logger.warning("server {!r} could not list {}: {}", name, what, exc)
            except TransportError as exc:
                self._hide(name, exc)
                logger.warning("server {!r} failed while listing {}: {}", name, what, exc)
                member = self._members[name]
                if member.client is client:
                    member.client, member.status, member.error = None, "failed", exc
                    await client.aclose()

        async with trio.open_nursery() as nursery:
            for name, client in self._connected():
                nursery.start_soon(one, name, client)
        return {name: results[name] for name in self._members if name in results}

    async def tools(self, *, fresh: bool = False) -> ToolList:
        """Every connected member's tools under their aggregated names, in the configuration's order.

        Each member's ``include_tools`` keeps the tools whose listed name equals one of its entries or
        matches it as an ``fnmatch`` pattern; then ``exclude_tools`` removes those matching one of its.

        Raises:
            ConfigError: two tools would have the same aggregated name (it names both servers).
        """
        listings = await self._gather("tools", lambda client: client.tools(fresh=fresh))
        tools: list[GroupTool] = []
        owners: dict[str, tuple[str, str]] = {}
        excluded: list[Exclusion] = []
        for server, listing in listings.items():
            config = self._members[server].config
            for tool in listing:
                if not _selected(tool.name, config):
                    continue
                public = self.aggregated_name(server, tool.name)
                _claim(owners, public, server, tool.name, "tool")
                tools.append(GroupTool(tool, public, server, self._call_group_tool))
            excluded.extend(listing.excluded)
        self._tools = {tool.name: tool for tool in tools}
        return ToolList(tools, excluded)

    async def _call_group_tool(self, tool: Tool, arguments: Mapping[str, Any] | None) -> ToolResult:
        assert isinstance(tool, GroupTool)
        return await self.call_tool(tool, arguments)

    async def call_tool(self, tool: GroupTool | str, arguments: Mapping[str, Any] | None = None) -> ToolResult:
        """Call a tool of the aggregated listing on its member, as ``tool.call(arguments)`` does.

        A name is looked up in the last listing, and the group lists first when the name is not in it; the
        member's listed handle is used, so its annotated arguments are mirrored (SEP-2243).

        Raises:
            McpError: no member lists a tool of that name, or its member is not connected.
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
        return await self[target.server].call_tool(target.member_tool, arguments)

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
                _claim(owners, public, server, prompt.name, "prompt")
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
                return await self[name.server].get_prompt(str(name.raw.get("name", name.name)), arguments)
            name = name.name
        owner = self._prompts.get(name)
        if owner is None:
            await self.prompts()
            owner = self._prompts.get(name)
            if owner is None:
                raise McpError(f"no server of the group lists a prompt named {name!r}")
        server, own = owner
        return await self[server].get_prompt(own, arguments)

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
        return await self[server].read_resource(uri, fresh=fresh)


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


def _selected(name: str, config: ServerConfig) -> bool:
    # Filters match the names the server lists: include first, then exclude (exact names or fnmatch patterns).
    if config.include_tools is not None and not any(_matches(name, rule) for rule in config.include_tools):
        return False
    return not any(_matches(name, rule) for rule in config.exclude_tools)


def _matches(name: str, rule: str) -> bool:
    return name == rule or fnmatchcase(name, rule)


def _claim(owners: dict[str, tuple[str, str]], public: str, server: str, own: str, what: str) -> None:
    previous = owners.get(public)
    if previous is not None:
        raise ConfigError(
            f"{what} name {public!r} collides: server {previous[0]!r} lists {what} {previous[1]!r} and server"
            f" {server!r} lists {what} {own!r} under it; set a prefix or exclude_tools for one of them",
            path=None,
        )
    owners[public] = (server, own)
