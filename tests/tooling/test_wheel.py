"""What ships is what users run: the wheel, built from a copy of the checkout and listed.

In it: the package with ``py.typed``, the command line (``mcpfsm._tooling.cli``), ``mcpfsm demo`` and its server
(``mcpfsm._tooling.demo_server``, which the manual's try-outs also run), the diagrams of ``mcpfsm diagram``, the
testing kit (``mcpfsm.testing``, ``mcpfsm replay``) and its pytest plugin. Not in it: the test oracles and the
generators of the checkout's ``tooling/`` (the authorization server with its reuse counters, the tasks and skills
servers, the walkthroughs, the manual's recorded reports), ``tests/``, ``bench/``, ``docs/``. And the demo runs
from the wheel alone, with no checkout on ``sys.path``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Final

import pytest

ROOT: Final = Path(__file__).resolve().parents[2]

# Names the checkout gives its test-only code (tooling/, tests/support/peer/): none of them may ship.
TEST_ONLY_STEMS: Final = ("peer", "walkthrough", "authserver", "recorded")
TEST_ONLY_FOLDERS: Final = ("tooling", "tests", "bench", "docs", "specs", "diagrams")

USERS_RUN: Final = (
    "mcpfsm/py.typed",
    "mcpfsm/__main__.py",
    "mcpfsm/_tooling/cli/__init__.py",
    "mcpfsm/_tooling/cli/demo.py",
    "mcpfsm/_tooling/cli/login.py",
    "mcpfsm/_tooling/cli/replay.py",
    "mcpfsm/_tooling/cli/diagram.py",
    "mcpfsm/_tooling/demo_server.py",
    "mcpfsm/_tooling/demo_input.py",
    "mcpfsm/_tooling/demo_surface.py",
    "mcpfsm/_tooling/server_process.py",
    "mcpfsm/_tooling/diagram.py",
    "mcpfsm/_tooling/render.py",
    "mcpfsm/testing/__init__.py",
    "pytest_mcpfsm.py",
)
"""What a documented command or import needs: the CLI, the demo and its server, the diagrams, the testing kit."""

_NOT_COPIED: Final = shutil.ignore_patterns(
    ".git", ".venv*", "build", "dist", "site", "*.egg-info", "__pycache__", ".*_cache", ".hypothesis", "node_modules"
)


def is_test_only(name: str) -> bool:
    """Whether a path in the wheel is test-only by its name (a folder of the checkout, or a test-only module)."""
    path = PurePosixPath(name)
    if path.parts[0] in TEST_ONLY_FOLDERS:
        return True
    return any(part.removesuffix(".py").startswith(TEST_ONLY_STEMS) for part in path.parts)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    # A copy of the checkout, so that the build's own files (build/, *.egg-info) stay out of the working tree.
    work = tmp_path_factory.mktemp("wheel")
    source = work / "source"
    shutil.copytree(ROOT, source, ignore=_NOT_COPIED)
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(work / "dist"), str(source)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    (found,) = (work / "dist").glob("mcpfsm-*.whl")
    yield found


@pytest.fixture(scope="module")
def names(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        return archive.namelist()


def test_the_name_rule_sees_every_test_only_name() -> None:
    for name in (
        "tooling/authserver/__init__.py",
        "mcpfsm/_tooling/authserver/issuer.py",
        "mcpfsm/_tooling/peer.py",
        "mcpfsm/_tooling/peer_tasks.py",
        "mcpfsm/_tooling/walkthrough_auth.py",
        "mcpfsm/_tooling/recorded.py",
        "tests/support/peer/server.py",
        "bench/call.py",
    ):
        assert is_test_only(name), name
    assert [name for name in USERS_RUN if is_test_only(name)] == []


def test_nothing_under_a_test_only_name_ships(names: list[str]) -> None:
    assert [name for name in names if is_test_only(name)] == []


def test_what_users_run_ships(names: list[str]) -> None:
    assert [name for name in USERS_RUN if name not in names] == []


def test_every_module_of_the_package_ships_and_nothing_else(names: list[str]) -> None:
    package = sorted(str(path.relative_to(ROOT)) for path in (ROOT / "mcpfsm").rglob("*.py"))
    shipped = sorted(name for name in names if name.endswith(".py"))
    assert shipped == sorted([*package, "pytest_mcpfsm.py"])


def test_the_command_is_the_cli(names: list[str], wheel: Path) -> None:
    (entry_points,) = (name for name in names if name.endswith(".dist-info/entry_points.txt"))
    with zipfile.ZipFile(wheel) as archive:
        text = archive.read(entry_points).decode()
    assert "mcpfsm = mcpfsm._tooling.cli:main" in text.splitlines()


def test_the_demo_runs_from_the_wheel_alone(wheel: Path, tmp_path: Path) -> None:
    pytest.importorskip("mcp", reason="the demo needs the demo extra (the test extra has it)")
    unpacked = tmp_path / "site"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(unpacked)
    # The wheel's copy first on sys.path (also for the demo's server, a subprocess), the checkout nowhere: the
    # working directory is elsewhere, so neither tooling/ nor tests/ can be imported.
    env = {**os.environ, "PYTHONPATH": str(unpacked)}
    where = subprocess.run(
        [sys.executable, "-c", "import mcpfsm, importlib.util as u; print(mcpfsm.__file__, u.find_spec('tooling'))"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=True,
    )
    assert where.stdout == f"{unpacked / 'mcpfsm' / '__init__.py'} None\n"
    demo = subprocess.run(
        [sys.executable, "-m", "mcpfsm", "demo"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180, check=False,
    )
    assert demo.returncode == 0, demo.stdout + demo.stderr
    assert "recovered in " in demo.stdout
