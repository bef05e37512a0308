#!/usr/bin/env python3
"""The client under test for the official MCP conformance suite: mcpfsm, driven through its public API only.

The suite (``@modelcontextprotocol/conformance``, pinned in ``package.json`` next to this file) starts a
mock server per scenario, then runs ``<command> <server-url>`` and judges what the client sent. It names
the scenario in environment variables:

* ``MCP_CONFORMANCE_SCENARIO``: the scenario name (always set);
* ``MCP_CONFORMANCE_PROTOCOL_VERSION``: the wire version of the run (``2025-11-25`` or ``2026-07-28``);
* ``MCP_CONFORMANCE_CONTEXT``: JSON with scenario data (tool calls to make, credentials), for a few.

What the adapter does per scenario is the table :data:`SCENARIOS` at the end of this file: the steps
to run once connected, the extra keyword arguments for :meth:`mcpfsm.Client.http` (where an
elicitation handler or OAuth credentials will go), and an optional time bound. A scenario not in the
table gets :func:`generic`: list the tools and call each one. Nothing here implements a protocol feature
mcpfsm lacks; where mcpfsm lacks one, the scenario fails and ``expected-failures.yaml`` says why.

Every step is reported on stderr and one JSON summary line goes to stdout (the suite keeps both with
``-o``). Exit status: 0 when every step succeeded, 1 when a step raised, 2 on a usage error. Set
``MCPFSM_ADAPTER_LOG=DEBUG`` to see mcpfsm's own log.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

import httpx
import trio
from loguru import logger

import mcpfsm

REQUEST_TIMEOUT_S = 30.0
"""The ``timeout=`` given to every client (seconds without progress on one request)."""
OVERALL_BOUND_S = 90.0
"""No scenario run takes longer than this, whatever its own bound; the suite's ``--timeout`` is larger."""


class Run:
    """One scenario run: the connected client, the scenario's context and the steps taken so far."""

    def __init__(self, client: mcpfsm.Client, scenario: str, context: Mapping[str, Any]) -> None:
        self.client = client
        self.scenario = scenario
        self.context = context
        self.steps: list[dict[str, Any]] = []

    async def step(self, label: str, action: Callable[[], Awaitable[Any]]) -> Any:
        """Run one action and record its outcome; an :class:`mcpfsm.McpError` is recorded, not raised.

        Any other exception is a bug in mcpfsm or here, and propagates with its traceback.
        """
        try:
            value = await action()
        except mcpfsm.McpError as exc:
            self.note(label, ok=False, detail=f"{type(exc).__name__}: {exc}")
            return None
        self.note(label, ok=True, detail=describe(value))
        return value

    def note(self, label: str, *, ok: bool, detail: str) -> None:
        """Record a step and report it on stderr."""
        self.steps.append({"step": label, "ok": ok, "detail": detail[:300]})
        print(f"[adapter] {'ok  ' if ok else 'FAIL'} {label}: {detail[:300]}", file=sys.stderr)

    @property
    def failed(self) -> bool:
        """True when any step failed."""
        return any(not step["ok"] for step in self.steps)


def describe(value: Any) -> str:
    """A short, log-safe description of a step's result."""
    if isinstance(value, mcpfsm.ToolResult):
        return f"is_error={value.is_error} text={value.text!r}"
    if isinstance(value, mcpfsm.ToolList):
        return f"tools={value.names} excluded={[exclusion.name for exclusion in value.excluded]}"
    if isinstance(value, dict):
        return json.dumps(value, default=str)
    return repr(value)


def plain(value: Any) -> Any:
    """A JSON-ready copy of a (possibly read-only) tree of mappings and sequences."""
    if isinstance(value, Mapping):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    return value


def sample_arguments(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A simple value of the declared type for each required property of an ``inputSchema``."""
    samples: dict[str, Any] = {"string": "x", "integer": 1, "number": 1, "boolean": True, "object": {}, "array": []}
    properties = schema.get("properties")
    properties = properties if isinstance(properties, Mapping) else {}
    required = schema.get("required")
    arguments: dict[str, Any] = {}
    for name in required if isinstance(required, list) else []:
        declared = properties.get(name)
        kind = declared.get("type") if isinstance(declared, Mapping) else None
        arguments[str(name)] = samples.get(kind, "x") if isinstance(kind, str) else "x"
    return arguments


# --- steps, reused by the scenarios --------------------------------------------------------------


async def list_tools(run: Run) -> mcpfsm.ToolList | None:
    """Every page of ``tools/list``; ``None`` when listing failed."""
    tools = await run.step("tools/list", run.client.tools)
    return tools if isinstance(tools, mcpfsm.ToolList) else None


async def call(run: Run, tools: mcpfsm.ToolList | None, name: str, arguments: Mapping[str, Any]) -> Any:
    """Call through the listed :class:`mcpfsm.Tool` when there is one (it mirrors headers), else by name."""
    tool = tools.get(name) if tools is not None else None
    target: mcpfsm.Tool | str = tool if tool is not None else name
    return await run.step(f"tools/call {name}", partial(run.client.call_tool, target, arguments))


async def generic(run: Run) -> None:
    """List the tools and call each one with sample arguments for its required properties."""
    tools = await list_tools(run)
    for tool in tools or []:
        await call(run, tools, tool.name, sample_arguments(tool.input_schema))


async def listing_only(run: Run) -> None:
    """Connect and list the tools: what the scenario judges is how the client talks, not what it calls."""
    await list_tools(run)


async def add_numbers(run: Run) -> None:
    """``tools_call``: call ``add_numbers`` with two numbers."""
    tools = await list_tools(run)
    await call(run, tools, "add_numbers", {"a": 2, "b": 3})


async def calls_from_context(run: Run) -> None:
    """``http-custom-headers``: make exactly the calls the context names, through the listed tools."""
    tools = await list_tools(run)
    for entry in run.context.get("toolCalls", []):
        await call(run, tools, entry["name"], entry.get("arguments", {}))


async def every_request_type(run: Run) -> None:
    """``http-standard-headers``: call every tool, then list and read resources, list and get prompts."""
    await generic(run)
    request = run.client.request
    resources = await run.step("resources/list", partial(request, "resources/list"))
    for resource in (resources or {}).get("resources", []):
        uri = resource.get("uri")
        await run.step(f"resources/read {uri}", partial(request, "resources/read", {"uri": uri}))
    prompts = await run.step("prompts/list", partial(request, "prompts/list"))
    for prompt in (prompts or {}).get("prompts", []):
        name = prompt.get("name")
        await run.step(f"prompts/get {name}", partial(request, "prompts/get", {"name": name}))


async def echo_listed_schema(run: Run) -> None:
    """``json-schema-2020-12-preservation``: send back the focal tool's ``inputSchema`` as mcpfsm holds it."""
    tools = await list_tools(run)
    focal = tools.get("json_schema_2020_12_tool") if tools is not None else None
    if focal is None:
        run.note("find json_schema_2020_12_tool", ok=False, detail="not in the listing")
        return
    await call(run, tools, "json_schema_echo", {"schema": plain(focal.input_schema)})


async def input_required_tools(run: Run) -> None:
    """``sep-2322-client-request-state``: each of the four tools once; the retries are mcpfsm's job."""
    tools = await list_tools(run)
    for name in ("test_mrtr_echo_state", "test_mrtr_unrelated", "test_mrtr_no_state", "test_mrtr_no_result_type"):
        await call(run, tools, name, {})


async def list_skills(run: Run) -> list[mcpfsm.Skill]:
    """``skills/list`` (SEP-2640); an empty list when listing failed."""
    skills = await run.step("skills/list", run.client.skills)
    return skills if isinstance(skills, list) else []


async def skills_listed(run: Run) -> None:
    """``sep-2640-client-no-prefetch``: list the skills and load none; listing must read no skill file."""
    await list_skills(run)


async def refuse_tampered_skills(check: str, run: Run) -> None:
    """``sep-2640-client-verify-*``: load each listed skill; mcpfsm must refuse it with the ``check`` named.

    A skill that loads all the same has its supporting files read, as a host acting on it would: the suite
    sees those reads and fails the scenario.
    """
    for skill in await list_skills(run):
        try:
            loaded = await skill.load()
        except mcpfsm.SkillVerificationError as exc:
            run.note(f"load {skill.uri}", ok=exc.check == check, detail=f"refused ({exc.check}): {exc}")
            continue
        run.note(f"load {skill.uri}", ok=False, detail=f"loaded although its {check} check should fail")
        for listed in skill.files or ():
            await run.step(f"read {listed.uri}", partial(loaded.read, listed.uri))


# --- the table -----------------------------------------------------------------------------------


def no_options(context: Mapping[str, Any]) -> dict[str, Any]:
    """No keyword arguments for :meth:`mcpfsm.Client.http` beyond the protocol and the timeout."""
    return {}


async def confirm(params: dict[str, Any]) -> dict[str, Any]:
    """The user confirms: the ``test_mrtr_*`` tools ask for ``{"confirmed": boolean}``."""
    return {"action": "accept", "content": {"confirmed": True}}


async def accept_as_offered(params: dict[str, Any]) -> dict[str, Any]:
    """The user accepts the form without typing anything; mcpfsm fills in every default (SEP-1034)."""
    return {"action": "accept", "content": {}}


def confirming(context: Mapping[str, Any]) -> dict[str, Any]:
    """An elicitation handler that confirms (``sep-2322-client-request-state``)."""
    return {"on_elicitation": confirm}


def accepting_as_offered(context: Mapping[str, Any]) -> dict[str, Any]:
    """An elicitation handler that accepts the form as offered (``elicitation-sep1034-client-defaults``)."""
    return {"on_elicitation": accept_as_offered}


# --- authorization (the auth/* scenarios) ---------------------------------------------------------------

REDIRECT_URI = "http://localhost:3000/callback"
"""The redirect URI the suite's mock authorization servers expect; nothing listens there."""
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"
"""The Client ID Metadata Document URL ``auth/basic-cimd`` checks for exactly; nobody serves it."""


async def headless_authorize(url: str) -> str:
    """The user agent of the auth scenarios: GET the authorization URL without following redirects.

    The suite's mock authorization servers auto-approve with a ``302`` to the redirect URI carrying ``code``,
    ``state`` and ``iss``; its ``Location`` is what a browser would have been sent back to.

    Raises:
        mcpfsm.AuthorizationError: the authorization endpoint did not redirect.
    """
    async with httpx.AsyncClient(follow_redirects=False, timeout=REQUEST_TIMEOUT_S) as client:
        answer = await client.get(url)
    location = answer.headers.get("location")
    if not answer.is_redirect or location is None:
        raise mcpfsm.AuthorizationError(
            f"the authorization endpoint answered HTTP {answer.status_code}, not a redirect", state="authorizing"
        )
    return location


def oauth(context: Mapping[str, Any], **options: Any) -> dict[str, Any]:
    """The authorization code flow with the headless user agent (every auth scenario without its own entry)."""
    auth = mcpfsm.OAuth(
        redirect_uri=REDIRECT_URI, authorize=headless_authorize, client_metadata_url=CLIENT_METADATA_URL, **options
    )
    return {"auth": auth}


def pre_registered(context: Mapping[str, Any]) -> dict[str, Any]:
    """``auth/pre-registration``: the credentials from the context, bound to the issuer it names."""
    return oauth(
        context,
        client_id=context["client_id"],
        client_secret=context["client_secret"],
        client_issuer=context["issuer"],
    )


def dpop(context: Mapping[str, Any]) -> dict[str, Any]:
    """``auth/dpop`` and ``auth/dpop-nonce``: DPoP-bound tokens (SEP-1932)."""
    return oauth(context, dpop=True)


def client_secret(context: Mapping[str, Any]) -> dict[str, Any]:
    """``auth/client-credentials-basic``: client credentials with a secret (client_secret_basic)."""
    return {"auth": mcpfsm.ClientCredentials(context["client_id"], client_secret=context["client_secret"])}


def client_key(context: Mapping[str, Any]) -> dict[str, Any]:
    """``auth/client-credentials-jwt``: client credentials with a private key (private_key_jwt)."""
    key = mcpfsm.ClientCredentials(
        context["client_id"],
        private_key_pem=context["private_key_pem"],
        signing_algorithm=context.get("signing_algorithm", "ES256"),
    )
    return {"auth": key}


def enterprise(context: Mapping[str, Any]) -> dict[str, Any]:
    """``auth/enterprise-managed-authorization``: the IdP's ID token exchanged for an ID-JAG (SEP-990)."""
    auth = mcpfsm.EnterpriseManaged(
        context["client_id"],
        context["client_secret"],
        context["idp_client_id"],
        context["idp_id_token"],
        context["idp_token_endpoint"],
    )
    return {"auth": auth}


def workload(context: Mapping[str, Any]) -> dict[str, Any]:
    """``auth/wif-jwt-bearer``: the workload's JWT with the jwt-bearer grant."""
    return {"auth": mcpfsm.JwtBearer(context["client_id"], context["valid_jwt"])}


@dataclass(frozen=True)
class Scenario:
    """How the adapter runs one scenario.

    Attributes:
        steps: what to do once connected.
        options: extra keyword arguments for :meth:`mcpfsm.Client.http`, from the scenario's context
            (an elicitation handler, OAuth client credentials).
        bound: seconds after which the run gives up (at most :data:`OVERALL_BOUND_S`).
    """

    steps: Callable[[Run], Awaitable[None]] = generic
    options: Callable[[Mapping[str, Any]], dict[str, Any]] = no_options
    bound: float = OVERALL_BOUND_S


SCENARIOS: dict[str, Scenario] = {
    "initialize": Scenario(listing_only),
    "tools_call": Scenario(add_numbers),
    "request-metadata": Scenario(listing_only),
    "json-schema-ref-no-deref": Scenario(listing_only),
    "http-custom-headers": Scenario(calls_from_context),
    "http-standard-headers": Scenario(every_request_type),
    "json-schema-2020-12-preservation": Scenario(echo_listed_schema),
    "sep-2322-client-request-state": Scenario(input_required_tools, options=confirming),
    "elicitation-sep1034-client-defaults": Scenario(generic, options=accepting_as_offered),
    "auth/pre-registration": Scenario(options=pre_registered),
    "auth/client-credentials-basic": Scenario(options=client_secret),
    "auth/client-credentials-jwt": Scenario(options=client_key),
    "auth/enterprise-managed-authorization": Scenario(options=enterprise),
    "auth/wif-jwt-bearer": Scenario(options=workload),
    "auth/dpop": Scenario(options=dpop),
    "auth/dpop-nonce": Scenario(options=dpop),
    "sep-2640-client-no-prefetch": Scenario(skills_listed),
    "sep-2640-client-verify-digest": Scenario(partial(refuse_tampered_skills, "digest")),
    "sep-2640-client-verify-size": Scenario(partial(refuse_tampered_skills, "size")),
    "sep-2640-client-verify-frontmatter": Scenario(partial(refuse_tampered_skills, "frontmatter")),
    # sse-retry, http-invalid-tool-headers and everything else: generic; any other auth/* scenario: generic
    # with the OAuth flow (the calls draw the step-up 403 and the post-migration 401).
}
"""Per-scenario behaviour; a scenario missing here runs ``Scenario()`` (generic steps, no options), or
``Scenario(options=oauth)`` for an ``auth/*`` scenario."""


async def main(url: str) -> int:
    """Run the scenario that the environment names against ``url``; returns the exit status."""
    name = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    protocol = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION") or "auto"
    try:
        context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    except json.JSONDecodeError as exc:
        print(f"[adapter] MCP_CONFORMANCE_CONTEXT is not JSON: {exc}", file=sys.stderr)
        return 2
    scenario = SCENARIOS.get(name) or (Scenario(options=oauth) if name.startswith("auth/") else Scenario())
    try:
        client = mcpfsm.Client.http(url, protocol=protocol, timeout=REQUEST_TIMEOUT_S, **scenario.options(context))
    except ValueError as exc:  # a wire version mcpfsm does not speak: say so, then let it negotiate
        print(f"[adapter] {exc}; negotiating instead", file=sys.stderr)
        protocol = "auto"
        client = mcpfsm.Client.http(url, protocol=protocol, timeout=REQUEST_TIMEOUT_S, **scenario.options(context))
    print(f"[adapter] scenario={name!r} protocol={protocol} url={url}", file=sys.stderr)
    run = Run(client, name, context)
    bound = min(scenario.bound, OVERALL_BOUND_S)
    with trio.move_on_after(bound) as scope:
        try:
            async with client:
                print(f"[adapter] negotiated {client.protocol_version}", file=sys.stderr)
                await scenario.steps(run)
        except mcpfsm.McpError as exc:
            run.note("connect", ok=False, detail=f"{type(exc).__name__}: {exc}")
    if scope.cancelled_caught:
        run.note("bound", ok=False, detail=f"gave up after {bound:g} s")
    print(json.dumps({"scenario": name, "protocol": protocol, "failed": run.failed, "steps": run.steps}))
    return 1 if run.failed else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: adapter.py SERVER_URL  (the MCP conformance suite runs it)", file=sys.stderr)
        sys.exit(2)
    level = os.environ.get("MCPFSM_ADAPTER_LOG")
    if level:
        logger.remove()
        logger.add(sys.stderr, level=level)
        logger.enable("mcpfsm")
    sys.exit(trio.run(main, sys.argv[1]))
