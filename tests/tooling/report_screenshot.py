"""The manual's screenshot of a report (docs/img/report.png), made by the commands it shows.

Regenerate it from the repository root with ``python -m tests.tooling.report_screenshot`` (needs the demo extra,
Graphviz, and Debian's ``chromium`` and ``chromium-driver``). It runs ``mcpfsm demo --html`` (the demo's two calls
against the embedded official-SDK server), opens the report in headless Chromium through Selenium at
``#run=2`` (the second call: the -32020 recovery), waits until the page says it is ready, and saves the
1400x1000 viewport as PNG. tests/tooling/test_report_screenshot.py runs the same function into a temporary
folder, so the script is known to work and to show what the caption says.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Final

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.support.ui import WebDriverWait

from tests.support.peer.fixtures import REPO_ROOT

CHROMEDRIVER: Final = "/usr/bin/chromedriver"
CHROMIUM: Final = "/usr/bin/chromium"
SIZE: Final = (1400, 1000)
TARGET: Final = REPO_ROOT / "docs" / "img" / "report.png"
FRAGMENT: Final = "#run=2"

_SHOWN: Final = """
const svg = document.querySelector('#figures .figure:not([hidden]) svg');
return {
    machine: svg.dataset.machine,
    tool: document.getElementById('run-title').textContent,
    current: [...svg.querySelectorAll('g.node.current')].map((node) => node.dataset.state),
    visited: [...svg.querySelectorAll('g.node.visited')].map((node) => node.dataset.state).sort(),
    width: window.innerWidth,
    height: window.innerHeight,
};
"""


def browser() -> webdriver.Chrome:
    """Headless Debian Chromium through /usr/bin/chromedriver, its viewport :data:`SIZE`."""
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--hide-scrollbars", f"--window-size={SIZE[0]},{SIZE[1]}"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    # --window-size is the window's; the viewport is what the screenshot takes.
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": SIZE[0], "height": SIZE[1], "deviceScaleFactor": 1, "mobile": False},
    )
    return driver


def screenshot(out: Path) -> dict[str, Any]:
    """Write the screenshot of ``mcpfsm demo --html``'s report to ``out``; return what the page showed.

    Raises:
        RuntimeError: the demo failed (its stderr in the message).
    """
    with tempfile.TemporaryDirectory() as folder:
        page = Path(folder) / "demo-report.html"
        done = subprocess.run(
            [sys.executable, "-m", "mcpfsm", "demo", "--html", str(page)],
            cwd=REPO_ROOT, capture_output=True, text=True, timeout=300, check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"mcpfsm demo --html failed ({done.returncode}): {done.stderr}")
        driver = browser()
        try:
            driver.get(page.as_uri() + FRAGMENT)
            WebDriverWait(driver, 30).until(lambda d: d.execute_script("return document.body.dataset.ready === '1'"))
            shown: dict[str, Any] = driver.execute_script(_SHOWN)
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(driver.get_screenshot_as_png())
        finally:
            driver.quit()
    return shown


if __name__ == "__main__":
    print(f"wrote {TARGET}: {screenshot(TARGET)}")
