"""The examples of docs/stores.md, each run as three workers in turn against the test authorization server (and a
real ``redis-server``): the first worker asks for a token, the others find it in the shared store."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcpfsm._tooling.peer_process import run_authserver
from tests.redisserver import RedisServer
from tests.tooling.test_docs import run_example

SCENARIO = {"client_credentials": {"client_id": "agent", "client_secret": "agent-secret"}}


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
