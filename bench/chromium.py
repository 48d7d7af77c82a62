"""The Chromium the benchmarks drive: Debian's (CHROMIUM overrides the path), headless, with the
flags tests/conftest.py gives the browser tests. Imports nothing until launch() is called, and
sets nothing in the environment (a bench that lifts the server's per-address bounds does so
itself)."""
from __future__ import annotations

import os

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


def launch(playwright):
    """A headless Chromium of `playwright` (sync_playwright()'s) with CHROMIUM_ARGS."""
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
