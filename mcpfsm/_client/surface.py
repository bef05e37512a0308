"""Resources, prompts and completion for one client: a request each, its result read by a typed value.

The rest of the request surface besides tools (MCP 2026-07-28 "Resources", "Prompts", "Completion"), one
delegate of :class:`~mcpfsm.Client` (fastmcp composes the same methods from mixins): listings go through the
catalog (every page, one cursor guard, the response cache), ``prompts/get`` and ``resources/read`` through the
input loop of :func:`~mcpfsm._drivers.input_machine.request_with_input` (SEP-2322), and each result is checked by
its type in :mod:`mcpfsm._core.surface`. The client's assembly makes the delegate with the first such request, so
that a client that only calls tools never imports this module nor builds those types (bench/startup.py).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from typing import Any, Protocol, TypeVar

from .._core.surface import Completion, Prompt, PromptResult, Resource, ResourceResult, ResourceTemplate
from .._drivers.audit import AuditBus
from .._drivers.input_machine import request_with_input
from .catalog import Catalog
from .session import Session

__all__ = ["Surface"]

E = TypeVar("E", covariant=True)


class _Entry(Protocol[E]):
    # A listing entry's type: Resource, ResourceTemplate or Prompt.
    def from_entry(self, entry: object, index: int = 0) -> E: ...


class Surface:
    """Resources, prompts and completion of one client; the client's public methods say what each does.

    Args:
        session: the client's session.
        catalog: its catalog (every listing goes through it).
        audit: its audit bus (the input machine's events).
        connect: connects the client first (its single-flight handshake).
    """

    __slots__ = ("_audit", "_catalog", "_connect", "_session")

    def __init__(
        self, session: Session, catalog: Catalog, audit: AuditBus, connect: Callable[[], Awaitable[None]]
    ) -> None:
        """Serve the client these parts belong to."""
        self._session = session
        self._catalog = catalog
        self._audit = audit
        self._connect = connect

    async def listing(self, method: str, key: str, kind: _Entry[E], *, fresh: bool) -> list[E]:
        """Every page of ``method`` (the entries under ``key``), each entry read by ``kind``."""
        await self._connect()
        entries = await self._catalog.list_all(method, key, fresh=fresh)
        return [kind.from_entry(entry, index) for index, entry in enumerate(entries)]

    async def resources(self, *, fresh: bool) -> list[Resource]:
        """``resources/list``."""
        return await self.listing("resources/list", "resources", Resource, fresh=fresh)

    async def resource_templates(self, *, fresh: bool) -> list[ResourceTemplate]:
        """``resources/templates/list``."""
        return await self.listing("resources/templates/list", "resourceTemplates", ResourceTemplate, fresh=fresh)

    async def prompts(self, *, fresh: bool) -> list[Prompt]:
        """``prompts/list``."""
        return await self.listing("prompts/list", "prompts", Prompt, fresh=fresh)

    async def read_resource(self, uri: str | Resource, *, fresh: bool) -> ResourceResult:
        """``resources/read``; ``TypeError`` for a ``uri`` that is neither a string nor a :class:`Resource`."""
        if isinstance(uri, Resource):
            uri = uri.uri
        if not isinstance(uri, str):
            raise TypeError(f"uri must be a str or a Resource, got {type(uri).__name__}")
        return ResourceResult.from_result(await self.input_request("resources/read", {"uri": uri}, fresh=fresh))

    async def get_prompt(self, name: str | Prompt, arguments: Mapping[str, str] | None) -> PromptResult:
        """``prompts/get``; ``TypeError`` for a wrong ``name`` or an argument that is not a string."""
        if isinstance(name, Prompt):
            name = name.name
        if not isinstance(name, str):
            raise TypeError(f"name must be a str or a Prompt, got {type(name).__name__}")
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = _strings("arguments", arguments)
        return PromptResult.from_result(await self.input_request("prompts/get", params))

    async def complete(
        self,
        ref: Prompt | ResourceTemplate | Mapping[str, Any],
        argument: tuple[str, str] | Mapping[str, str],
        context: Mapping[str, str] | None,
    ) -> Completion:
        """``completion/complete``; ``TypeError`` for a ``ref``, ``argument`` or ``context`` of the wrong shape."""
        params: dict[str, Any] = {"ref": _completion_ref(ref), "argument": _completion_argument(argument)}
        if context is not None:
            params["context"] = {"arguments": _strings("context", context)}
        await self._connect()
        return Completion.from_result(await self._session.request("completion/complete", params))

    async def input_request(self, method: str, params: Mapping[str, Any], *, fresh: bool = False) -> dict[str, Any]:
        """``method`` through the input loop with the client's handlers, for a request that is not a tool call.

        Its first round may come from the response cache; a round carrying ``inputResponses`` or
        ``requestState`` never does (SEP-2549), and an ``input_required`` answer is never stored.
        """
        await self._connect()
        send = partial(self._session.request, fresh=fresh)
        return await request_with_input(send, self._session.inputs, method, params, audit=self._audit)


def _strings(what: str, values: Mapping[str, str]) -> dict[str, str]:
    if not isinstance(values, Mapping) or not all(
        isinstance(key, str) and isinstance(value, str) for key, value in values.items()
    ):
        raise TypeError(f"{what} must map names to string values")
    return dict(values)


def _completion_ref(ref: Prompt | ResourceTemplate | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(ref, Prompt):
        return {"type": "ref/prompt", "name": ref.name}
    if isinstance(ref, ResourceTemplate):
        return {"type": "ref/resource", "uri": ref.uri_template}
    if isinstance(ref, Mapping):
        kind = ref.get("type")
        if kind == "ref/prompt" and isinstance(ref.get("name"), str):
            return dict(ref)
        if kind == "ref/resource" and isinstance(ref.get("uri"), str):
            return dict(ref)
    raise TypeError(
        "ref must be a Prompt, a ResourceTemplate, {'type': 'ref/prompt', 'name': ...}"
        " or {'type': 'ref/resource', 'uri': ...}"
    )


def _completion_argument(argument: tuple[str, str] | Mapping[str, str]) -> dict[str, str]:
    if isinstance(argument, tuple) and len(argument) == 2 and all(isinstance(part, str) for part in argument):
        return {"name": argument[0], "value": argument[1]}
    if isinstance(argument, Mapping):
        name, value = argument.get("name"), argument.get("value")
        if isinstance(name, str) and isinstance(value, str):
            return {"name": name, "value": value}
    raise TypeError("argument must be (name, value) or {'name': ..., 'value': ...} with string name and value")
