"""Import boundary: the sans-I/O core never imports trio, httpx, loguru or anyio (STYLE.md, "Sans-I/O").

Each probe runs in a fresh interpreter. The package's ``__init__`` imports loguru (to disable the
library's logger), so the probe registers a stub ``mcpfsm`` package whose ``__path__`` is the real
package directory: submodules and their relative imports load from the real files while
``mcpfsm/__init__.py`` never runs. The probe then lists every forbidden module in ``sys.modules``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import mcpfsm

# The pure modules: values, codecs, the machine table, parsers. Extend this list when a pure module
# is added; a listed module that does not exist fails the test. The driver and the transports
# (_call, _client, _audit, _http, _stdio, _transport) may import trio, httpx and loguru.
PURE_MODULES = (
    "mcpfsm._catalog",
    "mcpfsm._codec",
    "mcpfsm._errors",
    "mcpfsm._events",
    "mcpfsm._h1",
    "mcpfsm._jsonrpc",
    "mcpfsm._machine",
    "mcpfsm._plan",
    "mcpfsm._schema",
    "mcpfsm._sse",
    "mcpfsm._trace",
)

FORBIDDEN = ("anyio", "httpx", "loguru", "trio")

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


def probe(package: str, directory: Path, modules: tuple[str, ...]) -> subprocess.CompletedProcess[str]:
    """Import ``modules`` in a fresh interpreter without running ``package``'s ``__init__``."""
    argument = json.dumps([package, str(directory), list(modules), list(FORBIDDEN)])
    return subprocess.run(
        [sys.executable, "-I", "-c", PROBE, argument],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        # -I drops the current directory and user site from sys.path; the venv's site-packages remains.
        cwd=directory.parent,
    )


def forbidden_imports(package: str, directory: Path, modules: tuple[str, ...]) -> list[str]:
    result = probe(package, directory, modules)
    assert result.returncode == 0, result.stderr
    imported: list[str] = json.loads(result.stdout)
    return imported


PACKAGE_DIR = Path(mcpfsm.__file__).parent


def test_pure_modules_import_no_io_library() -> None:
    assert forbidden_imports("mcpfsm", PACKAGE_DIR, PURE_MODULES) == []


@pytest.mark.parametrize("module", PURE_MODULES)
def test_each_pure_module_exists(module: str) -> None:
    assert (PACKAGE_DIR / (module.rpartition(".")[2] + ".py")).is_file()


# Self-checks: the same probe must see a forbidden import, direct or indirect, and must fail on a
# listed module that does not exist.


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
    assert forbidden_imports("fakepkg", fake_package, ("fakepkg._pure",)) == []


@pytest.mark.parametrize("name", FORBIDDEN)
def test_probe_detects_a_forbidden_import(fake_package: Path, name: str) -> None:
    imported = forbidden_imports("fakepkg", fake_package, ("fakepkg._pure", f"fakepkg._uses_{name}"))
    assert name in imported


def test_probe_detects_an_indirect_import(fake_package: Path) -> None:
    assert "trio" in forbidden_imports("fakepkg", fake_package, ("fakepkg._indirect",))


def test_probe_fails_on_a_missing_module(fake_package: Path) -> None:
    result = probe("fakepkg", fake_package, ("fakepkg._pure", "fakepkg._catalog"))
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.rstrip().endswith("ModuleNotFoundError: No module named 'fakepkg._catalog'")
