"""`.ci/run` on a fresh Debian machine: what the conformance suite needs is installed before it runs.

`.ci/need COMMAND PACKAGE...` installs Debian packages with apt-get unless the command is on the PATH. These tests
run it with a PATH that holds only a stub `apt-get` (which records its arguments and, on `install`, puts the
command in place) and a stub `sudo`, so they touch no package manager.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support.peer.fixtures import REPO_ROOT

NEED = REPO_ROOT / ".ci" / "need"
BASH = shutil.which("bash") or "/bin/bash"


def stub_path(tmp_path: Path, *, provides: bool = True, present: tuple[str, ...] = ()) -> Path:
    """A PATH directory with a recording `apt-get` (that installs `npm` when `provides`) and `present` commands."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "apt-get.log"
    install = f'[ "$1" = install ] && printf "#!{BASH}\\n" > {bin_dir}/npm && {shutil.which("chmod")} +x {bin_dir}/npm'
    apt_get = f'#!{BASH}\necho "$*" >> {log}\n' + (install + "\n" if provides else "") + "exit 0\n"
    (bin_dir / "apt-get").write_text(apt_get)
    (bin_dir / "apt-get").chmod(0o755)
    # As root .ci/need calls apt-get itself, otherwise through sudo: a sudo that just runs the command.
    (bin_dir / "sudo").write_text(f'#!{BASH}\nexec "$@"\n')
    (bin_dir / "sudo").chmod(0o755)
    for command in present:
        (bin_dir / command).write_text(f"#!{BASH}\n")
        (bin_dir / command).chmod(0o755)
    return bin_dir


def need(bin_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": str(bin_dir), "HOME": os.environ.get("HOME", "/tmp")}
    return subprocess.run([BASH, str(NEED), *args], env=env, capture_output=True, text=True, timeout=30, check=False)


def apt_calls(tmp_path: Path) -> list[str]:
    log = tmp_path / "apt-get.log"
    return log.read_text().splitlines() if log.exists() else []


def test_a_missing_npm_is_installed_with_apt_get(tmp_path: Path) -> None:
    bin_dir = stub_path(tmp_path)
    done = need(bin_dir, "npm", "npm")
    message = ".ci/need: npm is missing; installing npm with apt-get\n"
    assert (done.returncode, done.stdout, done.stderr) == (0, "", message)
    assert apt_calls(tmp_path) == ["update -qq", "install -y -qq --no-install-recommends npm"]


def test_a_present_command_installs_nothing(tmp_path: Path) -> None:
    bin_dir = stub_path(tmp_path, present=("npm",))
    done = need(bin_dir, "npm", "npm")
    assert (done.returncode, done.stdout, done.stderr, apt_calls(tmp_path)) == (0, "", "", [])


def test_a_package_that_does_not_provide_the_command_fails(tmp_path: Path) -> None:
    bin_dir = stub_path(tmp_path, provides=False)
    done = need(bin_dir, "npm", "npm")
    assert (done.returncode, done.stderr.splitlines()[-1]) == (1, ".ci/need: npm is still missing after installing npm")


def test_ci_provides_npm_before_the_conformance_suite_runs() -> None:
    lines = [line.strip() for line in (REPO_ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()]
    assert lines.index(".ci/need npm npm") < lines.index("tests/conformance/run")


def test_ci_provides_redis_server_to_the_test_command() -> None:
    # The shared stores' tests start a real redis-server (tests/support/redisserver.py); .ci/need installs it first.
    lines = (REPO_ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    command = next(line for line in lines if line.endswith(".venv/bin/python -m pytest"))
    assert command.index(".ci/need redis-server redis-server") < command.index("-m pytest")


def test_ci_provides_valgrind_to_the_per_call_guard() -> None:
    # bench/repeatable.py --check counts instructions under callgrind: .ci/need installs valgrind first.
    lines = [line.strip() for line in (REPO_ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()]
    assert ".ci/need valgrind valgrind && .venv/bin/python bench/repeatable.py --check" in lines


def _repeatable() -> object:
    import importlib.util

    spec = importlib.util.spec_from_file_location("repeatable", REPO_ROOT / "bench" / "repeatable.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_per_call_figure_keeps_the_target() -> None:
    # Issue 30: a tool call within 1.3x the raw floor in the repeatable count; the guard allows 2 % around it.
    import json

    figure = json.loads((REPO_ROOT / "bench" / "repeatable.json").read_text(encoding="utf-8"))
    assert figure["tolerance"] == 0.02
    assert figure["mcpfsm"] / figure["raw"] <= 1.3


@pytest.mark.parametrize(("mcpfsm", "fails"), [(364_000, False), (371_000, False), (372_000, True), (356_000, True)])
def test_the_guard_fails_beyond_its_tolerance_either_way(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, mcpfsm: int, fails: bool
) -> None:
    # What --check decides, given the counts (the counting itself needs valgrind and half a minute).
    import argparse
    import json

    module: Any = _repeatable()
    figure = tmp_path / "repeatable.json"
    committed = {"interpreter": module.interpreter(), "calls": 300, "warmup": 20, "tolerance": 0.02}
    figure.write_text(json.dumps({**committed, "raw": 280_000, "mcpfsm": 364_000}))
    monkeypatch.setattr(module, "FIGURE", figure)
    counts = {"raw": 280_000, "mcpfsm": mcpfsm}
    monkeypatch.setattr(
        module,
        "measure",
        lambda options: {name: {"per_call": counts[name], "peer_excluded": True} for name in counts},
    )
    if fails:
        with pytest.raises(SystemExit, match=r"^mcpfsm instructions per call moved [+-]\d+\.\d\d% from bench/"):
            module.check(argparse.Namespace())
    else:
        module.check(argparse.Namespace())
