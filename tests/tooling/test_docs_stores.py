"""The examples of docs/stores.md, each run by three workers against the test authorization server (and a real
``redis-server``): the first worker to ask gets a token, the others find it in the shared store.

``fleet-disk`` and ``fleet-redis`` run one worker after the other; ``fleet-redis-tasks`` (a ``RedisStore`` nobody
entered, shared by three clients in tasks of one process) and ``fleet-redis-client`` (``client=``) run three
processes at once, so that they also show the first grant's single flight; ``store-lock`` runs three processes
at once on one directory and counts what they wrote under the lock.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.redisserver import RedisServer
from tests.tooling.test_docs import example, run_example
from tooling.processes import run_authserver

SCENARIO = {"client_credentials": {"client_id": "agent", "client_secret": "agent-secret"}}


def at_once(name: str, tmp_path: Path, *args: str) -> list[tuple[int, str, str]]:
    """Run the example ``name`` as three processes at once; (returncode, stdout, stderr) of each."""
    _, code = example(name)
    script = tmp_path / f"{name}.py"
    script.write_text(code, encoding="utf-8")
    processes = [
        subprocess.Popen(
            [sys.executable, script.name, *args],
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    try:
        outputs = [process.communicate(timeout=120) for process in processes]
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()
    return [(process.returncode, out, err) for process, (out, err) in zip(processes, outputs, strict=True)]


@pytest.mark.parametrize("name", ["fleet-disk", "fleet-redis"])
def test_three_workers_on_one_store_send_one_token_request(
    name: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if name == "fleet-disk":
        where = str(tmp_path / "fleet")
    else:
        server: RedisServer = request.getfixturevalue("redis_server")
        where = server.url
    with run_authserver(SCENARIO) as authserver:
        runs = [run_example(name, tmp_path, authserver.mcp_url, authserver.base_url, where) for _ in range(3)]
        grants = [entry["form"]["grant_type"] for entry in authserver.log() if entry["path"] == "/token"]
    assert [(done.returncode, done.stdout, done.stderr) for done in runs] == [(0, "test-tool called\n", "")] * 3
    assert grants == ["client_credentials"]


@pytest.mark.parametrize(("name", "lines"), [("fleet-redis-tasks", 3), ("fleet-redis-client", 1)])
def test_three_processes_at_once_on_one_redis_send_one_token_request(
    name: str, lines: int, tmp_path: Path, redis_server: RedisServer
) -> None:
    with run_authserver(SCENARIO) as authserver:
        runs = at_once(name, tmp_path, authserver.mcp_url, authserver.base_url, redis_server.url)
        grants = [entry["form"]["grant_type"] for entry in authserver.log() if entry["path"] == "/token"]
    assert runs == [(0, "test-tool called\n" * lines, "")] * 3
    assert grants == ["client_credentials"]


def test_the_lock_example_lets_three_processes_write_in_turn(tmp_path: Path) -> None:
    runs = at_once("store-lock", tmp_path, str(tmp_path / "store"))
    # Each held the lock within its 2 s (the others wrote in well under that), and none lost another's run.
    assert runs == [(0, "wrote the report\n", "")] * 3
    [record] = [json.loads(path.read_text()) for path in (tmp_path / "store").glob("*.json")]
    assert record == {"key": "nightly report", "value": {"runs": 3}}
