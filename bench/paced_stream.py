"""A slow page streaming a Generate run, paced by what it has drawn or not (explorer/serving/pacing.py).

    python bench/paced_stream.py                      # CPU throttled 2x and 4x, 2 rounds each
    python bench/paced_stream.py --throttle 4 --rounds 3 --tokens 200

One Chromium page, its CPU slowed by CDP's throttling (a slower device than this host), on the
app served in this process. Each round runs the same 200-token run paced (the page's reports
drive the stream, static/pace.js) and unpaced (the status line carries no mark and the run
expects no report: the stream as before pacing), interleaved. Measured per run: how late a read
of the page answers while tokens stream and at worst during the run (a page.evaluate: it waits
for every task the page has queued, so it is the delay any click, Stop or class move meets), the
page's main-thread busy seconds (CDP TaskDuration) and the messages sent.
Prints one line per run and `PACED_STREAM: throttle <x>: read max paced <s> / unpaced <s> ...`.
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
from bench import chromium  # noqa: E402 (ROOT first)

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

STATUS = "() => document.querySelector('#gen-status').innerText"


def one_run(page, cdp) -> dict:
    metric = lambda: {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}["TaskDuration"]
    busy0, start = metric(), time.monotonic()
    page.click("#gen-start")
    page.wait_for_function("() => /Generating/.test(document.querySelector('#gen-status').innerText)",
                           polling=100, timeout=300_000)
    reads, status = [], ""
    while not re.search(r"^(Done|Stopped)", status):
        asked = time.monotonic()
        status = page.evaluate(STATUS)
        reads.append((time.monotonic() - asked, status.startswith("Generating")))
        time.sleep(0.1)
    wall = time.monotonic() - start
    streaming = [took for took, decoding in reads if decoding] or [0.0]
    made = re.search(r"(\d+) (?:new )?tokens", status)
    return {"wall": wall, "busy": metric() - busy0, "read_max": max(took for took, _ in reads),
            "stream_p50": statistics.median(streaming), "stream_max": max(streaming),
            "tokens": made.group(1) if made else "?"}


def run(throttles: list[float], rounds: int, tokens: int) -> list[str]:
    from playwright.sync_api import sync_playwright

    import explorer.ui.tabs.generate as generate
    from bench.serve import served
    from explorer.runtime import Runtime

    paced_mark, paced_cookie, opened = generate.mark_html, generate.event_cookie, []
    open_pace = generate.PACES.open

    def counted_open(reports=False):
        opened.append(open_pace(reports))
        return opened[-1]

    generate.PACES.open = counted_open
    lines = []
    with served(Runtime()) as server, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium.CHROMIUM,
                                             args=["--headless", "--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.set_default_timeout(300_000)
        page.goto(server.url)
        page.click("#tab-generate-button")
        page.fill("#gen-prompt textarea", "Write a long story about a dragon who learns to cook.")
        page.fill("#gen-max-new input[type=number]", str(tokens))
        page.press("#gen-max-new input[type=number]", "Enter")
        cdp = page.context.new_cdp_session(page)
        cdp.send("Performance.enable")
        one_run(page, cdp)                 # warm: the first run builds and draws everything once
        for throttle in throttles:
            cdp.send("Emulation.setCPUThrottlingRate", {"rate": throttle})
            figures = {"paced": [], "unpaced": []}
            for _ in range(rounds):
                for kind in ("paced", "unpaced"):
                    generate.mark_html = paced_mark if kind == "paced" else (lambda pace, seq: "")
                    generate.event_cookie = paced_cookie if kind == "paced" else (lambda name: None)
                    result = {**one_run(page, cdp), "messages": opened[-1].sent}
                    figures[kind].append(result)
                    print(f"throttle {throttle:g} {kind:8s} wall {result['wall']:5.1f} s, busy "
                          f"{result['busy']:5.1f} s, messages {result['messages']:3d}; read while "
                          f"streaming p50 {result['stream_p50']:.2f} max {result['stream_max']:.2f} s, "
                          f"any read max {result['read_max']:.2f} s ({result['tokens']} tokens)", flush=True)
                    time.sleep(2)
            worst = {k: max(r["read_max"] for r in v) for k, v in figures.items()}
            streamed = {k: max(r["stream_max"] for r in v) for k, v in figures.items()}
            lines.append(f"PACED_STREAM: throttle {throttle:g}: read while streaming max paced "
                         f"{streamed['paced']:.2f} s / unpaced {streamed['unpaced']:.2f} s; any read max "
                         f"paced {worst['paced']:.2f} s / unpaced {worst['unpaced']:.2f} s ({rounds} rounds)")
        cdp.send("Emulation.setCPUThrottlingRate", {"rate": 1})
        browser.close()
    generate.mark_html, generate.event_cookie, generate.PACES.open = paced_mark, paced_cookie, open_pace
    return lines


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--throttle", type=float, action="append", default=None)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--tokens", type=int, default=200)
    args = parser.parse_args(argv)
    for line in run(args.throttle or [2.0, 4.0], args.rounds, args.tokens):
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
