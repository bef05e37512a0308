"""The public surface: a sorted, explicit ``__all__`` that resolves, and documented names (STYLE)."""

from __future__ import annotations

import inspect
import subprocess
import sys
from typing import Any

import mcpfsm
from mcpfsm._client.options import ClientKeywords

SPEC_API = {
    "CallEvent",
    "Client",
    "Completion",
    "OutputValidationError",
    "Prompt",
    "PromptResult",
    "Resource",
    "ResourceResult",
    "ResourceTemplate",
    "StoreError",
    "StoreLockTimeout",
    "HeaderMismatchError",
    "McpError",
    "MirroringError",
    "ProtocolError",
    "RpcError",
    "Tool",
    "ToolList",
    "ToolResult",
    "Transport",
    "TransportError",
}


def test_all_is_sorted_and_unique() -> None:
    assert mcpfsm.__all__ == sorted(set(mcpfsm.__all__))


def test_every_exported_name_resolves() -> None:
    missing = [name for name in mcpfsm.__all__ if not hasattr(mcpfsm, name)]
    assert missing == []


def test_spec_section_8_names_are_exported() -> None:
    assert sorted(SPEC_API - set(mcpfsm.__all__)) == []


def test_public_classes_and_functions_have_docstrings() -> None:
    undocumented = [
        name
        for name in mcpfsm.__all__
        if (inspect.isclass(getattr(mcpfsm, name)) or inspect.isfunction(getattr(mcpfsm, name)))
        and not inspect.getdoc(getattr(mcpfsm, name))
    ]
    assert undocumented == []


def test_error_tree() -> None:
    assert issubclass(mcpfsm.HeaderMismatchError, mcpfsm.RpcError)
    for error in (mcpfsm.RpcError, mcpfsm.MirroringError, mcpfsm.TransportError, mcpfsm.ProtocolError):
        assert issubclass(error, mcpfsm.McpError)
    assert issubclass(mcpfsm.OutputValidationError, mcpfsm.ProtocolError)
    # docs/stores.md: a store's own bound on its lock.
    assert issubclass(mcpfsm.StoreLockTimeout, mcpfsm.StoreError)
    assert issubclass(mcpfsm.StoreError, mcpfsm.McpError)


def test_library_does_not_configure_logging() -> None:
    # loguru's "suitable for libraries" rule: mcpfsm stays silent until the application enables it.
    # A fresh interpreter, so that no other test's logger.enable() can leak in.
    probe = """
import sys
from loguru import logger
import mcpfsm
from mcpfsm._drivers.audit import AuditBus
from mcpfsm._core.events import CallEvent
messages = []
logger.add(messages.append, level="DEBUG")
def explode(event): raise RuntimeError("subscriber failed")
event = CallEvent(call_id="c", seq=0, tool="t", state="resolving", previous=None, trigger=None,
                  attempt=1, at="2026-01-01T00:00:00+00:00", elapsed=0.0)
AuditBus(explode).publish(event)
silent = len(messages)
logger.enable("mcpfsm")
AuditBus(explode).publish(event)
print(silent, len(messages))
"""
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    # Disabled by default: nothing; once enabled: the DEBUG event line and the WARNING about on_event.
    assert out.split() == ["0", "2"]


SPEC_KEYWORDS = {
    # The keywords the manual shows (docs/calls.md, docs/http.md, docs/tasks.md, docs/stores.md), one spelling
    # everywhere; ClientOptions documents each.
    "headers", "protocol", "on_event", "on_notification", "timeout", "http_transport",
    "verify", "cert", "proxy", "trust_env", "max_response_bytes",
    "on_elicitation", "on_sampling", "on_roots", "elicitation_modes", "max_input_rounds",
    "log_level", "cache", "validate_output", "auth", "tasks", "progress_timeout", "total_timeout", "store",
}  # fmt: skip
HTTP_ONLY = {"headers", "timeout", "http_transport", "verify", "cert", "proxy", "trust_env", "auth"}


def keywords(factory: Any) -> set[str]:
    """Every keyword ``factory`` accepts: its own and, through ``**keywords``, every field of ClientOptions."""
    parameters = inspect.signature(factory).parameters
    assert all(
        parameter.kind in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.VAR_KEYWORD)
        for name, parameter in parameters.items()
        if name not in ("url", "command", "transport", "config")
    )
    own = {name for name, parameter in parameters.items() if parameter.kind is inspect.Parameter.KEYWORD_ONLY}
    assert parameters["keywords"].kind is inspect.Parameter.VAR_KEYWORD
    return own | set(ClientKeywords.__annotations__)


def test_the_http_and_stdio_factories_take_the_documented_keywords() -> None:
    http, stdio = keywords(mcpfsm.Client.http), keywords(mcpfsm.Client.stdio)
    assert sorted(SPEC_KEYWORDS - http) == []
    assert sorted(SPEC_KEYWORDS - HTTP_ONLY - stdio) == []
    assert sorted(HTTP_ONLY & stdio) == []
    assert keywords(mcpfsm.Client) == stdio - {"env", "cwd", "max_response_bytes"}
    group = {"separator", "connect_timeout", "environ", "lazy", "known_ttl", "reconnect_backoff"}  # docs/groups.md
    assert keywords(mcpfsm.ClientGroup) == keywords(mcpfsm.Client) | group


def test_the_gate_package_exports_sorted_resolving_documented_names() -> None:
    import mcpfsm.gate

    names = mcpfsm.gate.__all__
    assert names == sorted(set(names))
    assert {"GateRefusal", "Verdict", "VerifiedCall", "verify"} <= set(names)
    assert [name for name in names if not inspect.getdoc(getattr(mcpfsm.gate, name))] == []
    assert "GateEvent" in mcpfsm.__all__ and inspect.getdoc(mcpfsm.GateEvent)
