"""The layering: a pure core below, I/O above, tooling on top, and no import cycles.

- **Purity.** Every module under ``mcpfsm._core`` and ``mcpfsm._machines`` (found by prefix, not a
  hand-kept list) imports neither trio, httpx, loguru nor anyio, directly or indirectly. Each probe
  runs in a fresh interpreter with a stub ``mcpfsm`` package whose ``__path__`` is the real directory,
  so ``mcpfsm/__init__.py`` (which imports loguru) never runs.
- **Direction.** A layer imports only the layers below it: core ← machines ← drivers, transports ←
  client ← the package ← tooling; ``mcpfsm.gate`` (the edge half, imported on its own) sits beside the package.
  Nothing a library user imports reaches ``_tooling``.
- **Tooling outside.** No module of the package imports the checkout's ``tooling/`` folder (the test oracles
  and the walkthroughs, which do not ship; ``tests/tooling/test_wheel.py`` lists the wheel), and ``tooling/``
  imports nothing from ``tests/``.
- **No cycles.** The graph of runtime imports between mcpfsm modules (``TYPE_CHECKING`` blocks
  included, since a cycle there is a design smell too) is acyclic.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

import mcpfsm

PACKAGE_DIR = Path(mcpfsm.__file__).parent
FORBIDDEN = ("anyio", "httpx", "loguru", "trio")
PURE_PREFIXES = ("mcpfsm._core", "mcpfsm._machines")

# Which layers each layer may import (its own always allowed). "mcpfsm" is the package __init__.
ALLOWED = {
    "_core": set(),
    "_log": set(),
    "_machines": {"_core"},
    "_drivers": {"_core", "_machines", "_log"},
    "_transports": {"_core", "_log"},
    "_client": {"_core", "_machines", "_drivers", "_transports", "_log"},
    "_gate": {"_core", "_machines", "_drivers", "_transports", "_client", "_log"},
    "__init__": {"_core", "_machines", "_drivers", "_transports", "_client", "_log"},
    "gate": {"_core", "_machines", "_drivers", "_transports", "_client", "_gate", "__init__", "_log"},
    "__main__": {"_tooling"},
    # mcpfsm.testing (docs/testing.md): public, shipped, above the client; never reaching the tooling.
    "testing": {"_core", "_machines", "_drivers", "_transports", "_client", "__init__", "_log"},
    "_tooling": {
        "_core", "_machines", "_drivers", "_transports", "_client", "__init__", "_log", "gate", "_gate", "testing"
    },
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def all_modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE_DIR.rglob("*.py"))}


def imports_of(name: str, path: Path) -> set[str]:
    """The mcpfsm modules ``name`` imports, relative imports resolved."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    known = all_modules()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.split(".")[0] == "mcpfsm"}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "mcpfsm":
                continue
            for alias in node.names:
                # `from . import negotiation` names a module; `from .x import Name` names a value.
                candidate = f"{target}.{alias.name}"
                found.add(candidate if candidate in known else target)
    return {module for module in found if module in known and module != name}


def layer(name: str) -> str:
    parts = name.split(".")
    if len(parts) == 1:
        return "__init__"
    return parts[1]


def test_the_layers_are_the_declared_ones() -> None:
    assert sorted({layer(name) for name in all_modules()}) == sorted(ALLOWED)


@pytest.mark.parametrize("name", sorted(all_modules()))
def test_each_module_imports_only_from_the_layers_below(name: str) -> None:
    own = layer(name)
    foreign = {layer(target) for target in imports_of(name, all_modules()[name])} - {own}
    assert foreign <= ALLOWED[own], f"{name} imports from {sorted(foreign - ALLOWED[own])}"


TOOLING_DIR = PACKAGE_DIR.parent / "tooling"


def top_level_imports(path: Path) -> set[str]:
    """The top-level names of every absolute import in ``path`` (relative imports stay in their package)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module.split(".")[0])
    return found


@pytest.mark.parametrize("name", sorted(all_modules()))
def test_no_module_of_the_package_imports_the_checkouts_tooling(name: str) -> None:
    assert "tooling" not in top_level_imports(all_modules()[name]), f"{name} imports tooling/, which does not ship"


def test_the_checkouts_tooling_imports_nothing_from_the_tests() -> None:
    modules = sorted(TOOLING_DIR.rglob("*.py"))
    assert TOOLING_DIR / "authserver" / "__init__.py" in modules
    assert {str(path.relative_to(TOOLING_DIR)) for path in modules if "tests" in top_level_imports(path)} == set()


def test_the_tooling_reader_sees_an_import_of_the_tooling(tmp_path: Path) -> None:
    module = tmp_path / "module.py"
    module.write_text("import json\nfrom .sibling import x\nfrom tooling.processes import run_authserver\n")
    assert top_level_imports(module) == {"json", "tooling"}


def test_the_import_graph_is_acyclic() -> None:
    graph = {name: imports_of(name, path) for name, path in all_modules().items()}
    try:
        TopologicalSorter(graph).prepare()
    except CycleError as exc:
        pytest.fail(f"import cycle: {' -> '.join(exc.args[1])}")


PROBE = r"""
import importlib, importlib.machinery, json, sys, types

package, directory, modules, forbidden = json.loads(sys.argv[1])
stub = types.ModuleType(package)
stub.__path__ = [directory]
stub.__spec__ = importlib.machinery.ModuleSpec(package, None, is_package=True)
stub.__spec__.submodule_search_locations = [directory]
sys.modules[package] = stub
for name in modules:
    importlib.import_module(name)
assert sys.modules[package] is stub, "the package __init__ ran"
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in forbidden)))
"""


def probe(package: str, directory: Path, modules: list[str]) -> subprocess.CompletedProcess[str]:
    """Import ``modules`` in a fresh interpreter without running ``package``'s ``__init__``."""
    argument = json.dumps([package, str(directory), modules, list(FORBIDDEN)])
    return subprocess.run(
        [sys.executable, "-I", "-c", PROBE, argument],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        # -I drops the current directory and user site from sys.path; the venv's site-packages remains.
        cwd=directory.parent,
    )


def forbidden_imports(package: str, directory: Path, modules: list[str]) -> list[str]:
    result = probe(package, directory, modules)
    assert result.returncode == 0, result.stderr
    imported: list[str] = json.loads(result.stdout)
    return imported


PURE = sorted(name for name in all_modules() if name.startswith(PURE_PREFIXES))


def test_the_pure_core_is_found_by_prefix() -> None:
    assert {"mcpfsm._core.codec", "mcpfsm._core.h1", "mcpfsm._machines.tool_call"} <= set(PURE)


def test_pure_modules_import_no_io_library() -> None:
    assert forbidden_imports("mcpfsm", PACKAGE_DIR, PURE) == []


# Self-checks: the same probe and the same graph reader must see what they look for.


@pytest.fixture
def fake_package(tmp_path: Path) -> Path:
    directory = tmp_path / "fakepkg"
    directory.mkdir()
    (directory / "__init__.py").write_text("raise RuntimeError('the package __init__ must not run')\n")
    (directory / "_pure.py").write_text("import json\n")
    for name in FORBIDDEN:
        (directory / f"_uses_{name}.py").write_text(f"import {name}\n")
    (directory / "_indirect.py").write_text("from . import _pure\nfrom ._uses_trio import *\n")
    return directory


def test_probe_passes_a_pure_module(fake_package: Path) -> None:
    assert forbidden_imports("fakepkg", fake_package, ["fakepkg._pure"]) == []


@pytest.mark.parametrize("name", FORBIDDEN)
def test_probe_detects_a_forbidden_import(fake_package: Path, name: str) -> None:
    imported = forbidden_imports("fakepkg", fake_package, ["fakepkg._pure", f"fakepkg._uses_{name}"])
    assert name in imported


def test_probe_detects_an_indirect_import(fake_package: Path) -> None:
    assert "trio" in forbidden_imports("fakepkg", fake_package, ["fakepkg._indirect"])


def test_the_graph_reader_resolves_relative_imports_of_modules_and_values() -> None:
    session = all_modules()["mcpfsm._client.session"]
    assert {"mcpfsm._client.negotiation", "mcpfsm._core.jsonrpc", "mcpfsm._transports.base"} <= imports_of(
        "mcpfsm._client.session", session
    )
