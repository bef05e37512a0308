"""ClientGroup's own rules without a server: aggregated names, argument checks, the event's ``server`` stamp."""

from __future__ import annotations

from typing import Any

import pytest

import mcpfsm
from mcpfsm._drivers.audit import AuditBus


def group(**servers: dict[str, Any]) -> mcpfsm.ClientGroup:
    return mcpfsm.ClientGroup({"mcpServers": servers})


@pytest.mark.parametrize(
    ("entry", "tool", "expected"),
    [
        ({}, "search", "github_search"),
        ({"prefix": "gh"}, "search", "gh_search"),
        ({"prefix": ""}, "search", "search"),
        ({}, "search repos", "github_search_repos"),
        ({}, "ünïcode/tool", "github__n_code_tool"),
    ],
    ids=["server-name", "prefix", "no-prefix", "space", "non-ascii"],
)
def test_aggregated_names_keep_to_sep_986(entry: dict[str, Any], tool: str, expected: str) -> None:
    names = group(github={"url": "https://a.test/mcp", **entry})
    assert names.aggregated_name("github", tool) == expected


def test_a_server_name_outside_sep_986_and_a_name_too_long_are_made_valid() -> None:
    names = group(**{"my server": {"command": "x"}})
    assert names.aggregated_name("my server", "run") == "my_server_run"
    long = names.aggregated_name("my server", "t" * 200)
    assert len(long) == 128 and long.startswith("my_server_" + "t" * 100)
    assert long != names.aggregated_name("my server", "t" * 201)  # the hash tells them apart


def test_separator_is_checked() -> None:
    assert mcpfsm.ClientGroup({"mcpServers": {}}, separator="__").aggregated_name is not None
    with pytest.raises(mcpfsm.ConfigError, match=r"^separator must be made of A-Z a-z 0-9 _ - \. \(SEP-986\)$"):
        mcpfsm.ClientGroup({"mcpServers": {}}, separator="/")


async def test_disabled_members_and_unknown_names() -> None:
    async with group(off={"command": "never-run", "enabled": False}) as members:
        assert members.status == {"off": "disabled"}
        assert members.errors == {}
        assert list(members) == ["off"] and "off" in members and "on" not in members
        with pytest.raises(mcpfsm.ConfigError, match=r"^server 'off' is disabled in the configuration$"):
            await members.reconnect("off")
        with pytest.raises(KeyError):
            await members.reconnect("on")
        with pytest.raises(mcpfsm.McpError, match=r"^server 'off' is disabled$"):
            members["off"]
        assert (await members.tools()).names == []
        with pytest.raises(mcpfsm.McpError, match=r"^no server of the group lists a tool named 'off_x'$"):
            await members.call_tool("off_x")
        with pytest.raises(TypeError):
            await members.call_tool(3)  # type: ignore[arg-type]


def test_a_malformed_configuration_fails_before_anything_connects() -> None:
    with pytest.raises(mcpfsm.ConfigError, match=r"environment variable NOT_SET_ANYWHERE is not set$"):
        mcpfsm.ClientGroup({"mcpServers": {"a": {"command": "${NOT_SET_ANYWHERE}"}}}, environ={})


def test_a_members_bus_stamps_its_name_on_every_event() -> None:
    seen: list[mcpfsm.CallEvent] = []
    bus = AuditBus(seen.append, server="github")
    event = mcpfsm.CallEvent(
        call_id="c",
        seq=0,
        tool="search",
        state="resolving",
        previous=None,
        trigger=None,
        attempt=1,
        at="t",
        elapsed=0.0,
    )
    bus.publish(event)
    auth = mcpfsm.AuthEvent(
        call_id="a", seq=0, tool="", state="discovering_resource", previous=None, trigger=None, attempt=1, at="t",
        elapsed=0.0, scopes=("read",),
    )  # fmt: skip
    bus.publish(auth)
    assert [(type(e), e.server, e.to_dict()["server"]) for e in seen] == [
        (mcpfsm.CallEvent, "github", "github"),
        (mcpfsm.AuthEvent, "github", "github"),
    ]
    assert seen[1] == mcpfsm.AuthEvent(**{**auth.to_dict(), "scopes": ("read",), "server": "github"})
    assert event.server is None  # the event given is not changed
    AuditBus(seen.append).publish(event)
    assert seen[-1] is event
