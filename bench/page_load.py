"""How long a visitor's page takes to open: the app's page in Chromium, from the request until
the model picker says the model is loaded (what a visitor waits for before a first press), and
the page's own main-thread work meanwhile (Chromium's ScriptDuration and TaskDuration, CDP
Performance metrics: the JavaScript and the tasks of the page's renderer).

    python bench/page_load.py --url http://127.0.0.1:7860/                    # one server
    python bench/page_load.py --url http://127.0.0.1:7861/ --url http://127.0.0.1:7862/

Each round opens every URL once, in turn, each in a fresh browser context (its own storage, as a
new visitor), so a burst of other work on the host slows a round of every side alike; prints each
load, then the median of each side and its ratio to the first URL's. An A/B serves the two trees
side by side (`GRADIO_SERVER_PORT=7861 python app.py` in each worktree) and names both.
A phone is slower than this host's core: --throttle N slows the page's CPU N times (CDP).
"""
from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
from bench import chromium  # noqa: E402 (ROOT first)

LOADED = re.compile("is loaded|已加载")


def load_once(browser, url: str, throttle: float, width: int, timeout_ms: int) -> dict:
    """One visitor's load of `url`: seconds until the picker says loaded, and the renderer's
    script and task seconds by then."""
    context = browser.new_context(viewport={"width": width, "height": 900})
    try:
        page = context.new_page()
        cdp = context.new_cdp_session(page)
        cdp.send("Performance.enable")
        if throttle > 1:
            cdp.send("Emulation.setCPUThrottlingRate", {"rate": throttle})
        started = time.perf_counter()
        page.goto(url)
        page.locator("#model-status").get_by_text(LOADED).wait_for(timeout=timeout_ms)
        seconds = time.perf_counter() - started
        metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
        return {"loaded_s": seconds, "script_s": metrics["ScriptDuration"],
                "task_s": metrics["TaskDuration"]}
    finally:
        context.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", action="append", required=True, help="a served app (repeat for A/B)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--throttle", type=float, default=1.0, help="CPU slowdown of the page (CDP)")
    parser.add_argument("--width", type=int, default=1280, help="viewport width (390: a phone)")
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds one load may take")
    args = parser.parse_args()

    from playwright.sync_api import sync_playwright

    found: dict[str, list[dict]] = {url: [] for url in args.url}
    with sync_playwright() as playwright:
        browser = chromium.launch(playwright)
        try:
            for url in args.url:        # a first load each, not counted: caches, lazy imports
                load_once(browser, url, args.throttle, args.width, int(args.timeout * 1000))
            for round_ in range(args.rounds):
                for url in args.url:
                    one = load_once(browser, url, args.throttle, args.width, int(args.timeout * 1000))
                    found[url].append(one)
                    print(f"round {round_ + 1} {url}: loaded {one['loaded_s']:.2f} s, "
                          f"script {one['script_s']:.2f} s, tasks {one['task_s']:.2f} s", flush=True)
        finally:
            browser.close()
    first = None
    for url, loads in found.items():
        medians = {key: statistics.median(one[key] for one in loads) for key in loads[0]}
        first = first or medians
        ratio = ", ".join(f"{key} {medians[key] / first[key]:.2f}x" for key in medians)
        print(f"{url}: median loaded {medians['loaded_s']:.2f} s, script {medians['script_s']:.2f} s, "
              f"tasks {medians['task_s']:.2f} s ({ratio} the first URL's)")


if __name__ == "__main__":
    main()
