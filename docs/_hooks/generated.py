"""MkDocs hook: the generated state diagrams and their explanations become part of the site.

``diagrams/*.svg`` and ``specs/*.md`` live at the repository root, where ``mcpfsm diagram`` writes them and the
drift test compares them; this hook adds them to the site under the same paths (``diagrams/tool-call.svg``,
``specs/tool-call.md``), so a page links to them as if they were in ``docs/`` and nothing is copied by hand. The
root ``CHANGELOG.md`` becomes ``changelog.md``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

_GENERATED = (("diagrams", "*.svg"), ("specs", "*.md"))


def on_files(files: Files, config: Any) -> Files:
    """Add each generated diagram and explanation to the site's files."""
    root = Path(config["config_file_path"]).parent
    for folder, pattern in _GENERATED:
        for path in sorted((root / folder).glob(pattern)):
            files.append(File.generated(config, f"{folder}/{path.name}", abs_src_path=str(path)))
    # The changelog stays at the root, where packaging tools and readers look for it.
    files.append(File.generated(config, "changelog.md", abs_src_path=str(root / "CHANGELOG.md")))
    return files
