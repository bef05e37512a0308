"""Citations a reader can open: code, tests and docs cite public clauses (RFCs, SEPs, MCP pages) or the project's own
documents, never the rule numbers or sections of a document outside the repository."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

import pytest

from tests.support.peer.fixtures import REPO_ROOT

# "(A6)", "A28:", "rediscovery (A9)": the numbered rules of a reference digest nobody outside can read; and the
# sections of a private specification.
PRIVATE: Final = re.compile(r"(?<![\w./%-])A(?:[1-9]|[1-4][0-9])(?![\w-])|SPEC §|/work/shared")
FILES: Final = sorted(
    [
        *REPO_ROOT.glob("mcpfsm/**/*.py"),
        *REPO_ROOT.glob("tests/**/*.py"),
        *REPO_ROOT.glob("bench/*.py"),
        *REPO_ROOT.glob("specs/*.md"),
        *REPO_ROOT.glob("docs/**/*.md"),
        *REPO_ROOT.glob("docs/**/*.py"),
        REPO_ROOT / "README.md",
        REPO_ROOT / "CHANGELOG.md",
    ]
)


def private_citations(text: str) -> list[str]:
    return [match.group(0) for match in PRIVATE.finditer(text)]


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("a third challenge ends in failed (A6);", ["A6"]),
        ("# A28: remembered for the connection", ["A28"]),
        ("rediscovery (A9) and a refresh (A40).", ["A9", "A40"]),
        ("see SPEC §5", ["SPEC §"]),
        ("RFC 9449 §9, SEP-2352, the bytes ED A0-BF, A100, PA6, 0xA6, mA6, st-%C3%A9", []),
    ],
)
def test_the_pattern(text: str, found: list[str]) -> None:
    assert private_citations(text) == found


def test_no_file_cites_a_private_document() -> None:
    this = Path(__file__)
    found = {
        str(path.relative_to(REPO_ROOT)): hits
        for path in FILES
        if path != this and (hits := private_citations(path.read_text(encoding="utf-8")))
    }
    assert found == {}
