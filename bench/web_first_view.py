"""How fast the web client's first view is usable: a real `famulus serve`, Debian's
Chromium, the sign-in link opened, until the chat view's input box is shown.

    PYTHONPATH=.:src .venv/bin/python bench/web_first_view.py [--runs 5]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from tests.support.browser import chromium, wait_for
from tests.support.live import ServerProcess

KEY = "bench-key-0123456789abcdefghijklmnopqrstuvwxyz"


def main(runs: int) -> None:
    home = Path(tempfile.mkdtemp()) / "home"
    server = ServerProcess(home, env={"FAMULUS_API_KEY": KEY}).start()
    driver = chromium(1280, 800)
    try:
        times = []
        for _ in range(runs):
            driver.get("about:blank")
            start = time.perf_counter()
            driver.get(f"{server.base_url}/#key={KEY}")
            wait_for(driver, "textarea")
            times.append((time.perf_counter() - start) * 1000)
        paint = driver.execute_script(
            "return performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd"
        )
        print(
            f"sign-in link -> chat input shown: p50 {statistics.median(times):.0f} ms, "
            f"max {max(times):.0f} ms over {runs} loads (DOMContentLoaded {paint:.0f} ms)"
        )
    finally:
        driver.quit()
        server.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    main(parser.parse_args().runs)
