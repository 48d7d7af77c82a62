"""The class as one batch in a real browser (Debian Chromium): three pages (three sessions)
start a generation each, open the Generate tab's batch section, and each sees the loop's three
runs, exactly one of them highlighted as its own, and a different one on each page.
Screenshots: artifacts/screenshots/batch-view-*.png."""
from __future__ import annotations


import pytest

from tests.conftest import SCREENSHOTS
from tests.helpers import open_generate_tab, type_number

pytestmark = pytest.mark.browser

LOAD_TIMEOUT = 180_000
VIEW_TIMEOUT = 120_000
PAGES = 3


def _labels(page, n: int) -> list[str]:
    """The row chart's labels once it shows n rows, read in the same frame (each refresh
    redraws the chart, its ticks removed and drawn again)."""
    labels = page.wait_for_function(
        """n => { const t = Array.from(document.querySelectorAll('#gen-batch-rows .ytick text'),
                                      x => x.textContent.trim());
                  return t.length === n ? t : null; }""", arg=n, timeout=VIEW_TIMEOUT)
    return labels.json_value()


def test_three_pages_see_three_runs_each_its_own_highlighted(new_page, app_url):
    pages = [new_page("en-US", width=1280, height=1000) for _ in range(PAGES)]
    for page in pages:
        # three pages redraw streaming text at once on a busy 2-core machine: a click can wait
        page.set_default_timeout(120_000)
        open_generate_tab(page, app_url, LOAD_TIMEOUT)
        type_number(page, "gen-max-new", 256)   # the tab's most: the runs overlap for long
    # the three Start presses at once (a click dispatched, not waited for: on a busy machine
    # Playwright's checks before a click can take seconds, and the first run would be half
    # done before the last starts), then each page opens the batch view
    for page in pages:
        page.evaluate("() => document.querySelector('#gen-start').click()")
    for page in pages:
        page.evaluate("() => document.querySelector('#section-generate-batch-button').click()")
    own = []
    for i, page in enumerate(pages):
        try:
            page.locator("#gen-batch-summary", has_text="3 decoding").wait_for(timeout=VIEW_TIMEOUT)
        except Exception:
            print(f"page {i + 1} shows:", page.locator("#gen-batch-summary").inner_text(timeout=5_000),
                  "| output:", len(page.locator("#gen-output textarea").input_value(timeout=5_000)))
            raise
        labels = _labels(page, 3)
        mine = [label for label in labels if label.startswith("you")]
        assert len(labels) == 3 and len(mine) == 1, labels
        assert sorted(l for l in labels if l.startswith("run")) == sorted(
            f"run {n}" for n in (1, 2, 3) if f"you · {n}" not in mine), labels
        own.append(mine[0])
        summary = page.locator("#gen-batch-summary").inner_text()
        assert f"Your runs: row {mine[0].split('· ')[1]} (highlighted)." in summary
    # each page's own run is a different row of the same loop
    assert sorted(own) == ["you · 1", "you · 2", "you · 3"], own
    # the section only, after every check: on a busy 2-core machine Chromium can take a minute
    # to shoot a page while three runs stream, and the runs would end meanwhile
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for i, page in enumerate(pages):
        page.locator("#section-generate-batch").screenshot(
            path=str(SCREENSHOTS / f"batch-view-{i + 1}.png"), timeout=120_000)
    # the step chart: the loop's measured steps and their median per B, beside the roofline's
    # prediction once this device's roof is measured (in the background, a few seconds)
    first = pages[0]
    first.locator("#gen-batch-summary", has_text="Measured: B = ").wait_for(timeout=VIEW_TIMEOUT)
    first.locator("#gen-batch-summary", has_text="The roofline").wait_for(timeout=VIEW_TIMEOUT)
    first.wait_for_function(
        "() => document.querySelectorAll('#gen-batch-steps .scatterlayer .trace').length >= 3",
        timeout=VIEW_TIMEOUT)
    first.locator("#section-generate-batch").screenshot(
        path=str(SCREENSHOTS / "batch-view-steps.png"), timeout=120_000)
