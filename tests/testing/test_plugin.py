"""The pytest plugin, run as a user runs it: pytest in a subprocess (pytester) on a test file of its own. Its tests
record against a real server once (HTTP, and a stdio server as a real subprocess), then pass with the server gone;
a missing cassette fails its test naming the path; a failed re-recording keeps the old cassette; faults apply to
the replay; and the plugin, loaded by its entry point, imports nothing of mcpfsm for a test that does not use it."""

from __future__ import annotations

import importlib.metadata
import json
import sys
from pathlib import Path
from typing import Final

import pytest

from mcpfsm._tooling.server_process import run_peer
from tests.support.peer.fixtures import REPO_ROOT

INI: Final = "[pytest]\ntrio_mode = true\n"
AGENT: Final = f"""
import os
import sys

import mcpfsm
from mcpfsm.testing import mismatch_once

URL = os.environ.get("PEER_URL", "http://127.0.0.1:9/mcp")
STDIO = [sys.executable, "-m", os.environ.get("PEER_MODULE", "no.such.module"), "--stdio"]
SQL = {{"query": "select 1", "database": "analytics"}}


async def test_the_agent_over_http(mcp_cassette):
    async with mcp_cassette.client(URL, headers={{"X-Tenant": "acme"}}) as client:
        sql = (await client.tools()).get("execute-sql")
        result = await sql.call(SQL)
    assert result.structured_content == SQL


async def test_the_agent_over_stdio(mcp_cassette):
    async with mcp_cassette.client(STDIO, cwd={str(REPO_ROOT)!r}, protocol="2025-11-25") as client:
        result = await client.call_tool("echo", {{"text": "over stdio"}})
        assert client.protocol_version == "2025-11-25"
    assert result.content[0]["text"] == "over stdio"


async def test_the_retry_path_on_purpose(mcp_cassette):
    cassette = mcp_cassette.parent / "test_the_agent_over_http.jsonl"
    events = []
    async with mcpfsm.Client(mcpfsm.testing.replay(cassette, faults=[mismatch_once("execute-sql")]),
                             on_event=events.append) as client:
        sql = (await client.tools()).get("execute-sql")
        assert (await sql.call(SQL)).structured_content == SQL
    assert [event.state for event in events][-4:] == ["relisting", "comparing", "retrying", "succeeded"]
"""


def cassette(pytester: pytest.Pytester, test: str) -> Path:
    return pytester.path / "cassettes" / "test_agent" / f"{test}.jsonl"


def test_a_test_records_once_then_passes_with_the_server_gone(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeini(INI)
    pytester.makepyfile(test_agent=AGENT)
    monkeypatch.setenv("PYTHONPATH", str(REPO_ROOT))
    # Nothing recorded yet: replaying (the default) fails each test, naming the cassette to record.
    done = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-k", "over_")
    done.assert_outcomes(failed=2)
    done.stdout.fnmatch_lines([f"*no cassette at {cassette(pytester, 'test_the_agent_over_http')}: record it once*"])
    with run_peer() as peer:
        monkeypatch.setenv("PEER_URL", peer.url)
        monkeypatch.setenv("PEER_MODULE", "tests.support.peer.server")
        done = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--mcp-record=once")
        done.assert_outcomes(passed=3)
        assert len(peer.log()) > 0
    for name in ("test_the_agent_over_http", "test_the_agent_over_stdio"):
        header = json.loads(cassette(pytester, name).read_text().splitlines()[0])
        assert header["mcpfsm_cassette"] == 1
    assert not list(pytester.path.rglob("*.part"))
    # The servers are gone (the peer stopped, no stdio module to run): the tests replay their cassettes.
    monkeypatch.delenv("PEER_MODULE")
    done = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    done.assert_outcomes(passed=3)
    # Recording again with the server gone fails, and keeps the cassettes recorded before.
    before = cassette(pytester, "test_the_agent_over_http").read_bytes()
    done = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--mcp-record=all", "-k", "over_http")
    done.assert_outcomes(failed=1)
    assert cassette(pytester, "test_the_agent_over_http").read_bytes() == before
    assert not list(pytester.path.rglob("*.part"))


def test_a_parametrized_test_gets_a_cassette_of_its_own(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeini(INI)
    pytester.makepyfile(
        test_names="""
import pytest

@pytest.mark.parametrize("where", ["a/b", "c d"])
def test_where(mcp_cassette, where):
    print("CASSETTE", mcp_cassette, mcp_cassette.recording)
"""
    )
    monkeypatch.setenv("PYTHONPATH", str(REPO_ROOT))
    done = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-s", "--mcp-record=once")
    done.assert_outcomes(passed=2)
    where = pytester.path / "cassettes" / "test_names"
    done.stdout.fnmatch_lines(
        [f"*CASSETTE {where / 'test_where_a_b_.jsonl'} True", f"*CASSETTE {where / 'test_where_c_d_.jsonl'} True"]
    )


def test_the_plugin_loads_nothing_of_mcpfsm_for_a_test_that_does_not_use_it(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    entry = [e for e in importlib.metadata.entry_points(group="pytest11") if e.name == "mcpfsm"]
    assert [(e.name, e.value) for e in entry] == [("mcpfsm", "pytest_mcpfsm")]
    pytester.makepyfile(
        test_plain="""
import sys

def test_nothing_heavy_was_imported():
    assert "pytest_mcpfsm" in sys.modules
    loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("mcpfsm", "httpx", "h11", "httpcore", "loguru"))
    assert loaded == []
"""
    )
    # -W error: the plugin adds no warning to a run that does not use it.
    done = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:trio", "-W", "error")
    done.assert_outcomes(passed=1)
    help_text = pytester.runpytest_subprocess("--help").stdout.str()
    assert "--mcp-record={none,once,all}" in help_text


def test_the_fixture_refuses_faults_while_recording_and_a_second_recording_client(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeini(INI)
    pytester.makepyfile(
        test_misuse="""
from mcpfsm.testing import mismatch_once

def test_faults_while_recording(mcp_cassette):
    mcp_cassette.client("http://127.0.0.1:9/mcp", faults=[mismatch_once("x")])

def test_two_recordings(mcp_cassette):
    mcp_cassette.client("http://127.0.0.1:9/mcp")
    mcp_cassette.client("http://127.0.0.1:9/mcp")
"""
    )
    monkeypatch.setenv("PYTHONPATH", str(REPO_ROOT))
    done = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--mcp-record=all")
    done.assert_outcomes(failed=2)
    done.stdout.fnmatch_lines(["*faults apply to a replay, and * is being recorded*", "*already records a client*"])


def test_the_plugin_module_is_shipped_beside_the_package() -> None:
    import pytest_mcpfsm

    assert Path(pytest_mcpfsm.__file__).parent == Path(sys.modules["mcpfsm"].__file__ or "").parent.parent
