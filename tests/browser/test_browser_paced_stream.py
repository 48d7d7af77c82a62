"""A page's stream is paced by what it has drawn (explorer/serving/pacing.py, static/pace.js): a
page slowed to a slower device's speed (CDP CPU throttling, 2x) streams a 256-token Generate
run. It reports the messages it draws; the server sends a message only once the one before is
drawn; so the page is never a backlog behind: a read of the page answers promptly throughout
the run, and the page shows the run's end soon after the server sent it (docs/BENCHMARKS.md has
the probe's figures, paced and unpaced)."""
from __future__ import annotations

import re
import time

import pytest

pytestmark = pytest.mark.browser

TOKENS = 256      # the most a run may ask: the longest stream to read the page during
THROTTLE = 2        # Chromium's CPU throttling: a slower device than this host
READ_S = 6.0        # generous on a shared 2-core host; unpaced reads waited 20-105 s
END_S = 10.0        # the page shows the end this soon after the server's last message


def test_a_slow_page_is_sent_only_what_it_has_drawn(new_page, app_url, monkeypatch):
    from explorer.serving import pacing

    opened, closed = [], {}
    open_pace = pacing.PACES.open

    def watched_open(reports=False):
        pace = open_pace(reports)
        assert reports, "the page did not say that it reports (static/pace.js's cookie)"
        close = pace.close
        pace.close = lambda: (closed.setdefault(pace.token, time.monotonic()), close())
        opened.append(pace)
        return pace

    monkeypatch.setattr(pacing.PACES, "open", watched_open)
    page = new_page("en-US", 1280, 900)
    page.context.set_default_timeout(120_000)
    page.goto(app_url)
    page.click("#tab-generate-button", timeout=180_000)
    page.fill("#gen-prompt textarea", "Write a long story about a dragon who learns to cook.")
    page.fill("#gen-max-new input[type=number]", str(TOKENS))
    page.press("#gen-max-new input[type=number]", "Enter")
    cdp = page.context.new_cdp_session(page)
    cdp.send("Emulation.setCPUThrottlingRate", {"rate": THROTTLE})
    try:
        page.click("#gen-start")
        page.wait_for_function("() => /Generating/.test(document.querySelector('#gen-status').innerText)",
                               polling=100, timeout=240_000)
        reads, status = [], ""   # (seconds a read of the page took, the status it read)
        while not re.search(r"^(Done|Stopped)", status):
            asked = time.monotonic()
            status = page.evaluate("() => document.querySelector('#gen-status').innerText")
            reads.append((time.monotonic() - asked, status))
            time.sleep(0.05)
        shown = time.monotonic()
    finally:
        cdp.send("Emulation.setCPUThrottlingRate", {"rate": 1})
    assert re.search(rf"\b{TOKENS} tokens\b", status), status
    pace = opened[-1]
    # while tokens stream (the run's last message, every chart and the table at once, is one
    # long draw on a throttled page whatever the pacing)
    streaming = [took for took, read in reads if read.startswith("Generating")]
    print(f"reads while streaming {[round(took, 2) for took in streaming]} (of {len(reads)}); "
          f"messages {pace.sent}, drawn {pace.drawn}, sent unreported {pace.timeouts}")
    # the page reported what it drew (all but the last message, sent as the run closed), and
    # the server waited for it
    assert pace.heard and pace.drawn >= 5 and pace.drawn >= pace.sent - 2, (pace.sent, pace.drawn)
    assert pace.timeouts <= 2, pace.timeouts
    # ... so the page was never far behind: reads answered promptly, and the end came soon
    assert len(streaming) >= 3 and max(streaming) < READ_S, reads
    assert shown - closed[pace.token] < END_S
    # the mark is hidden: the status line reads as before
    assert "pace" not in status and page.locator("#gen-status span.pace").count() == 1
    assert not page.locator("#gen-status span.pace").is_visible()
