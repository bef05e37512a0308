"""Packaging as the ecosystem expects it: license, metadata, one version, the extras, the platform's config
directory for tokens, and the operating system's trust store as an option (``verify="system"``)."""

from __future__ import annotations

import importlib.metadata
import ssl
import sys
import tomllib
from pathlib import Path
from typing import Any, Final

import pytest

import mcpfsm
from mcpfsm._client.stores import default_token_path
from mcpfsm._transports.tls import system_trust
from tests.support.rawserver import HOST, Server, rpc, serving, tls_for

ROOT: Final = Path(__file__).resolve().parents[2]
PYPROJECT: Final = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_the_license_is_mit_in_the_file_and_the_metadata() -> None:
    assert (ROOT / "LICENSE").read_text(encoding="utf-8").startswith("MIT License\n")
    assert PYPROJECT["project"]["license"] == "MIT"
    metadata = importlib.metadata.metadata("mcpfsm")
    assert metadata["License-Expression"] == "MIT"
    classifiers = metadata.get_all("Classifier") or []
    assert "Framework :: Trio" in classifiers and "Typing :: Typed" in classifiers


def test_the_version_has_one_source() -> None:
    assert "version" not in PYPROJECT["project"]
    assert PYPROJECT["project"]["dynamic"] == ["version"]
    assert importlib.metadata.version("mcpfsm") == mcpfsm.__version__
    assert f"## {mcpfsm.__version__}" in (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")


def test_the_extras() -> None:
    extras = PYPROJECT["project"]["optional-dependencies"]
    assert "mcp>=2.3,<3" in extras["demo"]
    assert {"mypy>=1.10", "ruff>=0.5"} <= set(extras["dev"])
    assert {name.split(">")[0].split("[")[0] for name in extras["docs"]} == {
        "mkdocs",
        "mkdocs-material",
        "mkdocstrings",
    }
    assert [name.split(">")[0] for name in extras["system-trust"]] == ["truststore"]
    # RedisStore's client, also in the test extra so that the suite runs RedisStore against redis-server.
    assert extras["redis"] == ["coredis>=6.9"] and "coredis>=6.9" in extras["test"]
    assert "filelock>=4.3" in PYPROJECT["project"]["dependencies"]
    # The gate's proxy (mcpfsm gate) is served by Hypercorn; the test extra runs it too.
    assert extras["gate"] == ["hypercorn>=0.17"] and "hypercorn>=0.17" in extras["test"]


def test_the_token_file_is_in_the_platforms_config_directory(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from platformdirs import user_config_path

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert default_token_path() == user_config_path("mcpfsm", appauthor=False, roaming=True) / "tokens.json"
    if sys.platform.startswith("linux"):
        assert default_token_path() == tmp_path / "mcpfsm" / "tokens.json"


def test_verify_system_is_a_truststore_context() -> None:
    import truststore

    context = system_trust()
    assert isinstance(context, truststore.SSLContext)
    assert isinstance(context, ssl.SSLContext)


async def test_verify_system_refuses_a_ca_the_system_does_not_trust(ca: Any) -> None:
    # trustme's CA is in no system store: the system's trust refuses it where a CA file of it is trusted.
    async with serving(Server(default=rpc()), tls=tls_for(ca)) as server:
        url = f"https://{HOST}:{server.port}/mcp"
        with pytest.raises(mcpfsm.TransportError, match=r"CERTIFICATE_VERIFY_FAILED|certificate verify failed"):
            async with mcpfsm.Client.http(url, protocol="2026-07-28", verify="system") as client:
                await client.request("ping")
        assert server.seen == []


def test_verify_system_without_truststore_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "truststore", None)  # the import fails as if it were not installed
    with pytest.raises(ImportError, match=r"pip install 'mcpfsm\[system-trust\]'"):
        mcpfsm.Client.http("https://127.0.0.1:1/mcp", verify="system")
