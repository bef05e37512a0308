"""One assembly, one options value: no part is wired after it is built, and every option is declared once.

The client's parts (``mcpfsm._client.assembly.Parts``) get what they need through their constructors. The scan
below reads every library module and refuses an assignment to an attribute of a part from outside it — the
shape of ``client._session.telemetry = ...``, ``layer.binding.store = ...`` or the command line's old
``session.transport = wire`` — unless the object is being made in that very function by a class of that module
(``flight = _Flight(); flight.catalog = ...``).
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import itertools
import textwrap
from pathlib import Path
from typing import Any, Final

import pytest

import mcpfsm
from mcpfsm._client.assembly import HttpServer, Parts, Port, StdioServer
from mcpfsm._client.authorization import AuthorizationLayer, StaticToken
from mcpfsm._client.catalog import Catalog
from mcpfsm._client.client import Client
from mcpfsm._client.lifecycle import Lifecycle
from mcpfsm._client.options import ClientKeywords, ClientOptions
from mcpfsm._client.session import Session
from mcpfsm._client.sharing import SharedListings
from mcpfsm._client.skills import Skills
from mcpfsm._client.store_guard import GuardedStore
from mcpfsm._client.surface import Surface
from mcpfsm._client.task import TaskSupport
from mcpfsm._core.cache import ResponseCache
from mcpfsm._core.oauth.tokens import TokenSet
from mcpfsm._drivers.audit import AuditBus
from mcpfsm._drivers.authorization_binding import Binding
from mcpfsm._drivers.input import InputHandlers
from mcpfsm._tooling.cli.wire import Wire
from mcpfsm._transports.http import HttpTransport
from mcpfsm._transports.stdio import StdioTransport

PACKAGE: Final = Path(mcpfsm.__file__).parent

PARTS: Final = (
    Parts,
    Port,
    Session,
    Catalog,
    AuditBus,
    TaskSupport,
    AuthorizationLayer,
    StaticToken,
    Binding,
    HttpTransport,
    StdioTransport,
    SharedListings,
    GuardedStore,
    InputHandlers,
    ResponseCache,
    Lifecycle,
    Surface,
    Skills,
    Client,
    Wire,
)
"""What the assembly builds (and the command line's wrapper of a transport): the parts of a client."""

ORACLES: Final = ("_tooling/demo_",)
"""The demo's server (an SDK server that `mcpfsm demo` runs; the test oracles live in tooling/): not a client part."""


def part_attributes() -> frozenset[str]:
    """Every attribute a part sets on itself (``self.name = ...``) or declares in ``__slots__``."""
    names: set[str] = set()
    for part in PARTS:
        tree = ast.parse(textwrap.dedent(inspect.getsource(part)))
        for node in ast.walk(tree):
            stored = isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
            if stored and isinstance(node.value, ast.Name) and node.value.id == "self":
                names.add(node.attr)
        names.update(getattr(part, "__slots__", ()))
    return frozenset(names)


def _made_here(function: ast.AST, local_classes: set[str]) -> set[str]:
    # Names the function binds to an object it makes with a class of its own module (or `cls(...)`).
    made: set[str] = set()
    for node in ast.walk(function):
        if not (isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(node.value, ast.Call)):
            continue
        call = node.value
        made_by = [call.func, *call.args[:1]]  # `_Flight()`, `cls(...)`, or `object.__new__(_Draft)`
        if any(isinstance(each, ast.Name) and each.id in local_classes | {"cls"} for each in made_by):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            made.update(target.id for target in targets if isinstance(target, ast.Name))
    return made


def wired_after_built(source: str, names: frozenset[str]) -> list[str]:
    """The assignments in ``source`` to an attribute in ``names`` of anything but ``self`` or an object made there."""
    tree = ast.parse(source)
    local_classes = {node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}
    found: list[str] = []
    functions = [node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)]
    scopes: list[ast.AST] = [tree, *functions]
    seen: set[int] = set()
    for scope in reversed(scopes):  # innermost functions first: each assignment is judged in its own function
        made = _made_here(scope, local_classes) if scope is not tree else set()
        for node in ast.walk(scope):
            if id(node) in seen or not isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
                continue
            seen.add(id(node))
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for store in ast.walk(target):
                    if not (isinstance(store, ast.Attribute) and isinstance(store.ctx, ast.Store)):
                        continue
                    base = store.value
                    if isinstance(base, ast.Name) and (base.id in ("self", "cls") or base.id in made):
                        continue
                    if store.attr in names:
                        found.append(f"{store.lineno}: {ast.unparse(store)}")
    return sorted(found, key=lambda line: int(line.split(":")[0]))


def test_no_part_of_a_client_has_an_attribute_set_on_it_after_it_is_built() -> None:
    names = part_attributes()
    found = {
        str(path.relative_to(PACKAGE)): hits
        for path in sorted(PACKAGE.rglob("*.py"))
        if not str(path.relative_to(PACKAGE)).startswith(ORACLES)
        and (hits := wired_after_built(path.read_text(encoding="utf-8"), names))
    }
    assert found == {}


WIRED: Final = '''
class Client:
    def __init__(self, transport):
        self._session = Session(transport)
        self._session.telemetry = probe(transport)

    def _authorize_with(self, layer):
        layer.audit = self._audit
        layer.binding.store = guarded(self.store)

def wire_of(client):
    session = client._session
    session.transport = Wire(session.transport)

def made():
    transport = HttpTransport(url)
    transport.scrub = held.scrub
'''

BUILT: Final = '''
class _Flight:
    pass

class Run:
    @classmethod
    def created(cls):
        run = cls()
        run.state = "submitting"
        return run

def relist(self):
    flight = self._flight = _Flight()
    flight.catalog = None
    self.telemetry = None
'''


def test_the_scan_finds_a_part_wired_after_it_was_built() -> None:
    names = frozenset({"telemetry", "audit", "store", "transport", "scrub", "catalog", "state"})
    assert wired_after_built(WIRED, names) == [
        "5: self._session.telemetry",
        "8: layer.audit",
        "9: layer.binding.store",
        "13: session.transport",
        "17: transport.scrub",
    ]
    assert wired_after_built(BUILT, names) == []


# --- one options value -----------------------------------------------------------------------------------


def test_the_keywords_are_the_options_fields_with_the_same_types() -> None:
    fields = {field.name: field.type for field in dataclasses.fields(ClientOptions)}
    keywords = {name: ref.__forward_arg__ for name, ref in ClientKeywords.__annotations__.items()}
    assert keywords == fields


def test_every_option_is_documented_where_it_is_declared() -> None:
    source = inspect.getsource(ClientOptions)
    tree = ast.parse(textwrap.dedent(source))
    body = next(node for node in tree.body if isinstance(node, ast.ClassDef)).body
    documented = {
        field.target.id
        for field, after in itertools.pairwise(body)
        if isinstance(field, ast.AnnAssign)
        and isinstance(field.target, ast.Name)
        and isinstance(after, ast.Expr)
        and isinstance(after.value, ast.Constant)
        and isinstance(after.value.value, str)
    }
    assert documented == {field.name for field in dataclasses.fields(ClientOptions)}


async def on_elicitation(params: dict[str, Any]) -> dict[str, Any]:
    return {"action": "decline"}


def test_options_given_whole_and_keywords_beside_them_make_one_value() -> None:
    base = ClientOptions(protocol="2026-07-28", tasks=True, elicitation_modes=["form", "url", "form"])
    assert base.elicitation_modes == ("form", "url")
    assert ClientOptions.of(base, {}) is base
    assert ClientOptions.of(base, {"tasks": False}) == dataclasses.replace(base, tasks=False)
    client = mcpfsm.Client.http("http://127.0.0.1:9/mcp", options=base, on_elicitation=on_elicitation)
    assert client.options == dataclasses.replace(base, on_elicitation=on_elicitation)
    with pytest.raises(dataclasses.FrozenInstanceError):
        base.tasks = False  # type: ignore[misc]


@pytest.mark.parametrize(
    ("changes", "error", "message"),
    [
        ({"protocol": "2024-01-01"}, ValueError, "protocol must be 'auto' or one of "),
        ({"log_level": "loud"}, ValueError, "log_level must be None or one of "),
        ({"validate_output": "maybe"}, ValueError, "validate_output must be one of "),
        ({"total_timeout": 0}, ValueError, "total_timeout must be None or a number of seconds above 0, got 0"),
        ({"on_roots": "yes"}, TypeError, "on_roots must be an async callable, got str"),
    ],
    ids=["protocol", "log-level", "validate-output", "timeout", "handler"],
)
def test_a_bad_option_given_whole_or_as_a_keyword_to_any_factory_is_refused_the_same_way(
    changes: dict[str, Any], error: type[Exception], message: str
) -> None:
    for make in (
        lambda: ClientOptions(**changes),
        lambda: mcpfsm.Client.http("http://127.0.0.1:9/mcp", **changes),
        lambda: mcpfsm.Client.stdio(["true"], **changes),
        lambda: mcpfsm.ClientGroup({"mcpServers": {}}, **changes),
        lambda: mcpfsm.Client.http("http://127.0.0.1:9/mcp", options=ClientOptions(), **changes),
    ):
        with pytest.raises(error) as caught:
            make()
        assert str(caught.value).startswith(message)


# --- the parts, as built ---------------------------------------------------------------------------------


def test_each_part_holds_the_parts_it_was_given() -> None:
    store = mcpfsm.MemoryStore()
    parts = Parts(
        HttpServer(url="http://127.0.0.1:9/mcp", auth=mcpfsm.ClientCredentials("cid", client_secret="s3cret")),
        ClientOptions(server="one", store=store, tasks=True, progress_timeout=5.0),
    )
    session, layer = parts.session, parts.authorization
    assert isinstance(layer, AuthorizationLayer)
    assert (session.authorization, session.audit, session.cache) == (layer, parts.audit, parts.cache)
    assert (session.tasks, session.progress_tokens, session.shared is not None) == (True, True, True)
    assert (layer.audit, layer.telemetry, layer.binding.store) == (parts.audit, None, parts.shared_store())
    assert parts.cache is not None and layer.binding.on_change == (parts.cache.clear,)
    assert parts.audit.server == "one" and parts.audit.redact is not None
    assert parts.timed is parts.tasks() and parts.store() is store
    assert parts.audit.redact("it was s3cret") == "it was [redacted]"


def test_no_part_of_an_authorized_client_quotes_a_secret_in_its_repr() -> None:
    # The client's own repr, its events, log lines and errors are checked after real flows in
    # tests/integration/test_authorization.py; the parts behind it are checked here, built as the client builds them.
    secrets = ("client-secret-value", "access-token-value", "refresh-token-value")
    credential = mcpfsm.ClientCredentials("cid", client_secret=secrets[0])
    parts = Parts(HttpServer(url="http://127.0.0.1:9/mcp", auth=credential), ClientOptions())
    layer = parts.authorization
    assert isinstance(layer, AuthorizationLayer)
    tokens = TokenSet(access_token=secrets[1], refresh_token=secrets[2], issuer="http://127.0.0.1:9", resource=None)
    layer.binding.load(tokens)
    assert parts.audit.redact is not None and parts.audit.redact(" ".join(secrets)) == "[redacted] " * 2 + "[redacted]"
    text = repr(layer) + repr(layer.binding) + repr(layer.binding.tokens) + repr(parts.session)
    assert [secret for secret in secrets if secret in text] == []


def test_a_plain_transport_gets_no_secrets_and_no_shared_listings() -> None:
    parts = Parts(StdioServer(command=["true"]), ClientOptions(store=mcpfsm.MemoryStore()))
    assert isinstance(parts.transport, StdioTransport) and parts.session.transport is parts.transport
    assert (parts.authorization, parts.secrets, parts.audit.redact, parts.session.shared) == (None, None, None, None)
    assert parts.timed is None


def test_the_wrap_of_a_connection_stands_between_the_session_and_the_transport() -> None:
    wrapped: list[Any] = []

    def wrap(transport: Any) -> Any:
        wrapped.append(transport)
        return Wire(transport, verbosity=0)

    parts = Parts(HttpServer(url="http://127.0.0.1:9/mcp", wrap=wrap), ClientOptions())
    assert wrapped == [parts.transport] and isinstance(parts.transport, HttpTransport)
    assert isinstance(parts.session.transport, Wire)
