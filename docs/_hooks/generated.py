"""MkDocs hook: the generated state diagrams, their explanations and the recorded reports become part of the site.

``diagrams/*.svg`` and ``specs/*.md`` live at the repository root, where ``python -m tooling.diagram`` writes them
and the drift test compares them; this hook adds them to the site under the same paths (``diagrams/tool-call.svg``,
``specs/tool-call.md``), so a page links to them as if they were in ``docs/`` and nothing is copied by hand. The
root ``CHANGELOG.md`` becomes ``changelog.md``.

The reports the manual embeds (``reports/calls.html``, ``reports/input.html``, ``reports/authorization.html``)
are written here, at build time, by the trail viewer from the walkthroughs' recorded runs
(``tooling.recorded``, in the checkout's ``tooling/``, which is not installed: the repository root goes on
``sys.path`` for it, also when ``mkdocs`` runs as a script): nothing generated is committed, so a report cannot
drift from the recordings, whose drift test already keeps them honest. A page places its report with a line
``<!-- report: NAME -->``, which becomes an ``<iframe>`` with the path relative to that page. Writing a report
needs Graphviz's ``dot`` (the reports inline the machines' diagrams), as ``mcpfsm diagram`` does.
"""

from __future__ import annotations

import html
import posixpath
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

_ROOT = str(Path(__file__).resolve().parents[2])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from tooling.recorded import MANUAL_REPORTS, manual_reports  # noqa: E402

if TYPE_CHECKING:  # MkDocs is the docs extra: the tests import this hook with the test extra alone
    from mkdocs.structure.files import Files
    from mkdocs.structure.pages import Page

_GENERATED = (("diagrams", "*.svg"), ("specs", "*.md"))
_MARKER = re.compile(r"^<!-- report: ([a-z-]+) -->$", re.MULTILINE)


def on_files(files: Files, config: Any) -> Files:
    """Add each generated diagram and explanation, and the recorded reports, to the site's files."""
    from mkdocs.structure.files import File

    root = Path(config["config_file_path"]).parent
    for folder, pattern in _GENERATED:
        for path in sorted((root / folder).glob(pattern)):
            files.append(File.generated(config, f"{folder}/{path.name}", abs_src_path=str(path)))
    # The changelog stays at the root, where packaging tools and readers look for it.
    files.append(File.generated(config, "changelog.md", abs_src_path=str(root / "CHANGELOG.md")))
    for path, page in manual_reports(root).items():
        files.append(File.generated(config, path, content=page))
    return files


def report_frame(name: str, page_url: str) -> str:
    """The ``<iframe>`` that shows report ``NAME`` (``reports/NAME.html``) on the page served at ``page_url``."""
    report = next((report for report in MANUAL_REPORTS if report.path == f"reports/{name}.html"), None)
    if report is None:
        raise ValueError(f"<!-- report: {name} -->: no such report (known: {[r.path for r in MANUAL_REPORTS]})")
    folder = page_url if page_url.endswith("/") else posixpath.dirname(page_url)  # "calls/" or "calls.html"
    source = posixpath.relpath(report.path, folder.rstrip("/") or ".")
    title = html.escape(report.title)
    return (
        f'<iframe class="mcpfsm-report" src="{source}" title="{title}" loading="lazy"'
        ' style="width:100%;height:820px;border:1px solid #ccc"></iframe>\n\n'
        f'<p><a href="{source}">{title}</a>: the report on a page of its own.</p>'
    )


def on_page_markdown(markdown: str, page: Page, config: Any, files: Files) -> str:
    """Replace each ``<!-- report: NAME -->`` line with the report's frame."""
    return _MARKER.sub(lambda match: report_frame(match.group(1), page.url), markdown)
