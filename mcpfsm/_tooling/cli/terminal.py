r"""What the ``mcpfsm`` command writes to the terminal: every line, with control characters made visible.

Much of what the command prints comes from the server: tool, parameter and enum names, descriptions, instructions,
JSON-RPC error messages, task status messages, prompts, resources, skills, server info, and the strings a trail
recorded. A terminal obeys control characters wherever they come from: an ESC or 8-bit CSI (0x9b) sequence can
clear the screen, move the cursor over what was printed, set the window title, or, in some terminals, write to the
clipboard or a file; a CR can overwrite a line; bidirectional overrides can display a name as another (CVE-2021-42574,
"Trojan Source"). So every write of the command to stdout or stderr goes through this module, and :func:`shown` —
the one escaping rule — writes each such character as ``\uXXXX``: C0 controls except line feed and tab (a CR only
when no line feed follows it), DEL, the C1 controls 0x80-0x9f, and the bidirectional embeddings, overrides and
isolates (U+202A-U+202E, U+2066-U+2069). ``\uXXXX`` is also JSON's own escape, so ``--json`` output stays valid
JSON with the same values (``json.dumps`` already escapes C0; DEL, C1 and the bidirectional controls it leaves as
they are). The command's own control sequences (the live status line's ``\r`` and erase-line) are added after the
text is escaped, by :func:`redraw` and :func:`erase`.
"""

from __future__ import annotations

import re
import sys
from typing import IO, Final

__all__ = ["erase", "log_sink", "out", "redraw", "shown", "write"]

_CONTROL: Final = re.compile("\r(?!\n)|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_ERASE_LINE: Final = "\x1b[K"


def shown(text: object) -> str:
    r"""``text`` (``str()`` of it) with every control character that could drive a terminal written as ``\uXXXX``.

    Line feeds and tabs stay, and so does a CR right before a line feed; see the module's text for the rest.
    """
    return _CONTROL.sub(lambda match: f"\\u{ord(match.group()):04x}", str(text))


def write(stream: IO[str], text: str, *, end: str = "\n") -> None:
    """Write ``text`` (escaped by :func:`shown`) and ``end`` to ``stream``, and flush it."""
    stream.write(shown(text) + end)
    stream.flush()


def out(text: str) -> None:
    """One line on stdout (escaped)."""
    write(sys.stdout, text)


def redraw(stream: IO[str], text: str, columns: int | None = None) -> None:
    """Draw ``text`` (escaped, then cut to ``columns - 1`` characters) over the current line of a terminal."""
    drawn = shown(text) if columns is None else shown(text)[: max(columns - 1, 1)]
    stream.write(f"\r{drawn}{_ERASE_LINE}")
    stream.flush()


def erase(stream: IO[str]) -> None:
    """Erase the current line of a terminal and return to its start."""
    stream.write("\r" + _ERASE_LINE)
    stream.flush()


def log_sink(message: str) -> None:
    """The command's loguru sink: each formatted record, escaped, on the current stderr."""
    write(sys.stderr, message, end="")
