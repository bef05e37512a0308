"""The manual's screenshot of a report (docs/img/report.png) is made by a script that works and shows what the
caption in docs/trail-viewer.md says: the demo's second call, its -32020 recovery lit on the tool-call machine."""

from __future__ import annotations

import struct
from pathlib import Path

from tests.tooling.report_screenshot import SIZE, TARGET, screenshot


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR", "not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_the_screenshot_script_shows_the_recovery_of_the_demos_second_call(tmp_path: Path) -> None:
    out = tmp_path / "report.png"
    shown = screenshot(out)
    assert png_size(out.read_bytes()) == SIZE
    assert (shown["machine"], shown["current"]) == ("tool-call", ["succeeded"])
    assert shown["tool"] == "execute-sql — succeeded"
    assert shown["visited"] == sorted(
        ["resolving", "planning", "sending", "relisting", "comparing", "retrying", "succeeded"]
    )
    # The committed picture is one this script made (same viewport), and the manual shows it.
    assert png_size(TARGET.read_bytes()) == SIZE
    page = (TARGET.parents[1] / "trail-viewer.md").read_text(encoding="utf-8")
    assert "](img/report.png)" in page and "python -m tests.tooling.report_screenshot" in page
