"""Start-up: what ``import mcpfsm`` and ``mcpfsm --help`` load, and logging with loguru imported lazily (mcpfsm._log).

No timing here (bench/startup.py measures it): each test runs a fresh interpreter and asserts on the modules
it loaded or the loguru records it saw.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

AVOIDED = ("anyio", "cryptography", "httpx", "jsonschema_rs", "jwt", "loguru", "mcp", "opentelemetry")


def fresh_python(code: str, *arguments: str) -> Any:
    """Run ``code`` in a fresh interpreter from the repository root; the JSON it prints."""
    done = subprocess.run(
        [sys.executable, "-c", code, *arguments],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


LOADED = """
import json, sys
{code}
print(json.dumps(sorted({{m.split(".")[0] for m in sys.modules}} & set(json.loads(sys.argv[1])))))
"""


def loaded_after(code: str) -> list[str]:
    found: list[str] = fresh_python(LOADED.format(code=code), json.dumps(AVOIDED))
    return found


def test_import_mcpfsm_loads_none_of_the_optional_or_heavy_libraries() -> None:
    assert loaded_after("import mcpfsm") == []


def test_every_public_name_resolves_without_them() -> None:
    assert loaded_after("import mcpfsm\nfor name in mcpfsm.__all__: getattr(mcpfsm, name)") == []


def test_mcpfsm_help_loads_none_of_them() -> None:
    code = "from mcpfsm._tooling.cli import build_parser\nbuild_parser().format_help()"
    assert loaded_after(code) == []


def test_an_http_client_needs_httpx_only_to_parse_its_url() -> None:
    assert loaded_after("import mcpfsm\nmcpfsm.Client.http('http://127.0.0.1:1/mcp')") == ["httpx"]


@pytest.mark.parametrize("library", ["httpx", "loguru", "jsonschema_rs"])
def test_the_probe_sees_a_library_that_was_imported(library: str) -> None:
    assert loaded_after(f"import mcpfsm, {library}") == [library]


LOGS = """
import json, sys
{first}
from loguru import logger
from mcpfsm._core.events import CallEvent
from mcpfsm._drivers.audit import AuditBus

logger.remove()
seen = []
logger.add(lambda m: seen.append([m.record["name"], m.record["function"], m.record["message"]]), level="WARNING")
{enable}

def failing(event):
    raise RuntimeError("the auditor's bug")

event = CallEvent(
    call_id="c", seq=0, tool="t", state="resolving", previous=None, trigger=None, attempt=1, at="", elapsed=0.0
)
AuditBus(failing).publish(event)
print(json.dumps(seen))
"""

WARNING = [
    "mcpfsm._drivers.audit",
    "publish",
    'on_event callback raised RuntimeError("the auditor\'s bug"); the call goes on',
]


def records(first: str, enable: str) -> list[list[str]]:
    seen: list[list[str]] = fresh_python(LOGS.format(first=first, enable=enable))
    return seen


@pytest.mark.parametrize(
    "first",
    ["import mcpfsm", "import loguru\nimport mcpfsm"],
    ids=["mcpfsm-before-loguru", "loguru-before-mcpfsm"],
)
def test_the_library_logs_nothing_until_enabled(first: str) -> None:
    assert records(first, "") == []


@pytest.mark.parametrize(
    "first",
    ["import mcpfsm", "import loguru\nimport mcpfsm"],
    ids=["mcpfsm-before-loguru", "loguru-before-mcpfsm"],
)
def test_enabled_records_name_the_mcpfsm_module_and_function(first: str) -> None:
    assert records(first, 'logger.enable("mcpfsm")') == [WARNING]


def test_enabling_one_module_selects_it_as_before() -> None:
    assert records("import mcpfsm", 'logger.enable("mcpfsm._drivers")') == [WARNING]
    assert records("import mcpfsm", 'logger.enable("mcpfsm._transports")') == []


@pytest.mark.parametrize(
    ("enable", "seen"),
    [
        ('logger.enable("mcpfsm")\nlogger.disable("mcpfsm._drivers")', False),
        ('logger.enable("mcpfsm._drivers")\nlogger.disable("mcpfsm._drivers.audit")', False),
        ('logger.enable("mcpfsm._drivers.audit")', True),
        ('logger.disable("")\nlogger.enable("mcpfsm")', True),
        ('logger.enable("mcpfsm")\nlogger.disable("")', False),
        ('logger.enable("mcp")', False),
    ],
)
@pytest.mark.parametrize("first", ["import mcpfsm", "import loguru\nimport mcpfsm"])
def test_what_the_application_says_after_import_mcpfsm_stands_whenever_loguru_came(
    first: str, enable: str, seen: bool
) -> None:
    # loguru's way for a library: disable("mcpfsm") at import, the application's enable/disable calls after it.
    # With loguru imported after mcpfsm, the disable is made at the first record, with the same outcome.
    assert records(first, enable) == ([WARNING] if seen else [])


def test_import_mcpfsm_adds_no_import_hook() -> None:
    # (six, which a dependency imports, adds a finder of its own.)
    code = "import json, sys\nimport mcpfsm\nprint(json.dumps([type(f).__module__ for f in sys.meta_path]))"
    assert [module for module in fresh_python(code) if module.startswith("mcpfsm")] == []


MACHINE_MODULES = """
import json, sys
{code}
print(json.dumps(sorted(m for m in sys.modules if m.startswith("mcpfsm._machines."))))
"""


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("import mcpfsm", ["mcpfsm._machines.definition", "mcpfsm._machines.input_loop", "mcpfsm._machines.tool_call"]),
        (
            "import mcpfsm\nfrom mcpfsm._drivers import input_machine",
            [
                "mcpfsm._machines.definition",
                "mcpfsm._machines.input",
                "mcpfsm._machines.input_loop",
                "mcpfsm._machines.tool_call",
            ],
        ),
        (
            "from mcpfsm._machines.registry import MACHINES\n"
            "assert list(MACHINES) == ['tool-call', 'authorization', 'gate', 'group', 'input', 'task']",
            [
                "mcpfsm._machines.authorization",
                "mcpfsm._machines.definition",
                "mcpfsm._machines.gate",
                "mcpfsm._machines.group",
                "mcpfsm._machines.input",
                "mcpfsm._machines.input_loop",
                "mcpfsm._machines.registry",
                "mcpfsm._machines.task",
                "mcpfsm._machines.tool_call",
            ],
        ),
    ],
    ids=["import-mcpfsm", "input-runs", "MACHINES"],
)
def test_the_authorization_and_input_machines_are_compiled_on_first_use(code: str, expected: list[str]) -> None:
    result = fresh_python(MACHINE_MODULES.format(code=code))
    assert result == expected


INPUT_MODULES = ("mcpfsm._core.input_rounds", "mcpfsm._drivers.input_rounds", "mcpfsm._drivers.input_machine")

INPUT_ROUND = """
import json, sys
import trio
import mcpfsm
from tests.support.fakeserver import FakeServer, result

def loaded():
    return sorted(name for name in json.loads(sys.argv[1]) if name in sys.modules)

async def main():
    seen = {"import mcpfsm": loaded()}
    fake = FakeServer()
    asked = []

    async def on_elicitation(params):
        asked.append(params["message"])
        return {"action": "accept", "content": {"name": "Ada"}}

    async with fake.client(on_elicitation=on_elicitation) as client:
        plain = await client.call_tool("echo", {})
        seen["a plain call"] = loaded()
        form = {"type": "object", "properties": {"name": {"type": "string"}}}
        ask = {"method": "elicitation/create", "params": {"message": "Name?", "requestedSchema": form}}
        fake.queue(
            "tools/call",
            result({"resultType": "input_required", "inputRequests": {"who": ask}, "requestState": "s1"}),
            result({"content": [{"type": "text", "text": "hello Ada"}]}),
        )
        answered = await client.call_tool("echo", {})
        seen["an input round"] = loaded()
    sent = [{k: v for k, v in r.params.items() if k != "_meta"} for r in fake.requests if r.rpc_method == "tools/call"]
    print(json.dumps({"seen": seen, "texts": [plain.text, answered.text], "asked": asked, "sent": sent}))

trio.run(main)
"""


def test_the_input_round_records_are_loaded_with_the_first_input_required_result() -> None:
    # SEP-2322: most tool calls never receive input_required; what only a round needs (the parsed result, the
    # rules of answering, the rounds) is imported with the first, and then the round works as before.
    result = fresh_python(INPUT_ROUND, json.dumps(INPUT_MODULES))
    assert result == {
        "seen": {
            "import mcpfsm": [],
            "a plain call": [],
            "an input round": ["mcpfsm._core.input_rounds", "mcpfsm._drivers.input_rounds"],
        },
        "texts": ["ok", "hello Ada"],
        "asked": ["Name?"],
        "sent": [
            {"name": "echo", "arguments": {}},
            {"name": "echo", "arguments": {}},
            {
                "name": "echo",
                "arguments": {},
                "inputResponses": {"who": {"action": "accept", "content": {"name": "Ada"}}},
                "requestState": "s1",
            },
        ],
    }


ANNOTATIONS = """
import json, sys
import trio
import mcpfsm
from tests.support.fakeserver import FakeServer

async def main():
    seen = {"import mcpfsm": "mcpfsm._core.tool_annotations" in sys.modules}
    hinted = {"name": "t", "inputSchema": {"type": "object"}, "annotations": {"title": "T", "readOnlyHint": True}}
    fake = FakeServer([hinted])
    async with fake.client() as client:
        tool = (await client.tools()).get("t")
        seen["listed"] = "mcpfsm._core.tool_annotations" in sys.modules
        hints = tool.annotations
        seen["read"] = "mcpfsm._core.tool_annotations" in sys.modules
    print(json.dumps({"seen": seen, "hints": repr(hints), "public": mcpfsm.ToolAnnotations is type(hints)}))

trio.run(main)
"""


def test_the_tool_annotations_type_is_created_with_the_first_read_of_a_tools_hints() -> None:
    result = fresh_python(ANNOTATIONS)
    assert result == {
        "seen": {"import mcpfsm": False, "listed": False, "read": True},
        "hints": "ToolAnnotations(title='T', read_only_hint=True, destructive_hint=True, idempotent_hint=False, "
        "open_world_hint=True)",
        "public": True,
    }


ON_FIRST_USE = """
import json, sys
import mcpfsm
before = "mcpfsm._drivers.audit_log" in sys.modules
log = mcpfsm.AuditLog
print(json.dumps([before, "mcpfsm._drivers.audit_log" in sys.modules, log.__module__]))
"""


def test_the_audit_log_sink_is_imported_with_its_name() -> None:
    result = fresh_python(ON_FIRST_USE)
    assert result == [False, True, "mcpfsm._drivers.audit_log"]


@pytest.mark.parametrize(
    "code",
    ["import mcpfsm", "from mcpfsm._tooling.cli import build_parser\nbuild_parser().format_help()"],
    ids=["import-mcpfsm", "mcpfsm-help"],
)
def test_the_yaml_parser_comes_with_the_first_skill_only(code: str) -> None:
    # PyYAML parses a skill's frontmatter (SEP-2640): loaded by the skills module, which nothing imports before.
    found: list[str] = fresh_python(LOADED.format(code=code), json.dumps(["yaml"]))
    assert found == []
    assert fresh_python(LOADED.format(code="import mcpfsm\nmcpfsm.SkillVerificationError"), '["yaml"]') == ["yaml"]


STORE_SIDE = ("mcpfsm._core.oauth", "mcpfsm._core.credentials", "mcpfsm._client.store_guard", "mcpfsm._client.sharing")

SEEN_AFTER = """
import json, sys
{code}
print(json.dumps(sorted(name for name in json.loads(sys.argv[1]) if name in sys.modules)))
"""


def test_a_client_without_a_store_or_credentials_loads_neither_the_oauth_core_nor_the_store_side() -> None:
    # The OAuth core, the store guard and shared listings come with auth= or store=, not with import mcpfsm or a
    # plain HTTP client (bench/startup.py: they cost about 90 M instructions).
    code = "import mcpfsm\nmcpfsm.Client.http('http://127.0.0.1:1/mcp')"
    assert fresh_python(SEEN_AFTER.format(code=code), json.dumps(STORE_SIDE)) == []
    with_store = "import mcpfsm\nmcpfsm.Client.http('http://127.0.0.1:1/mcp', store=mcpfsm.MemoryStore())"
    assert "mcpfsm._client.sharing" in fresh_python(SEEN_AFTER.format(code=with_store), json.dumps(STORE_SIDE))
