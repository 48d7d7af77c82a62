"""The precision section in a real browser (Debian Chromium), in both languages: Measure draws
the speed chart (measured and roofline bars per precision) and the price chart, and the summary
names the rule's pick and the server's precision; the language switch redraws them in Chinese.
Screenshots: artifacts/screenshots/precision-<lang>.png."""
from __future__ import annotations

import re

import pytest

from tests.conftest import SCREENSHOTS
from tests.helpers import switch_language

pytestmark = pytest.mark.browser

BARS = """() => Array.from(document.querySelectorAll('#gen-precision-speed .barlayer .trace'),
                          t => t.querySelectorAll('path').length)"""


WORDS = {"en": ("picks", "near ties"), "zh": ("选出", "近似平局")}


def _check_summary(page, lang: str) -> None:
    """The charts and the summary of the measure on the page, in `lang`."""
    picks, ties = WORDS[lang]
    page.locator("#gen-precision-summary", has_text=picks).wait_for(timeout=180_000)
    # four precisions (gguf: the converted checkpoint keeps its codes), each a measured and a
    # roofline bar (the roof is measured on the press)
    page.wait_for_function(f"() => ({BARS})().length === 2 && ({BARS})().every(n => n === 4)",
                           timeout=60_000)
    price = page.locator("#gen-precision-price .scatterlayer .point")
    assert price.count() == 4
    summary = page.locator("#gen-precision-summary").inner_text()
    for weights in ("fp32", "bf16", "int8", "gguf"):
        assert weights in summary
    # the differing positions and the near ties among them, as a rendered table column
    assert ties in summary
    assert page.locator("#gen-precision-summary table").first.locator("th").count() == 9
    # headings break between words only ("perplexity" was split as "perplexi ty")
    wrap = page.locator("#gen-precision-summary th").first.evaluate(
        "th => [getComputedStyle(th).overflowWrap, getComputedStyle(th).wordBreak]")
    assert wrap == ["normal", "normal"], wrap
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.locator("#section-generate-precision").screenshot(path=str(SCREENSHOTS / f"precision-{lang}.png"))


def test_measure_draws_speed_price_and_the_pick(new_page, app_url):
    """Measured once on an English page, then the page's language switched: the same
    measurement is redrawn in Chinese (charts, summary, table), without measuring again."""
    page = new_page("en-US", width=1280, height=1400)
    page.set_default_timeout(120_000)
    page.goto(app_url)     # the browser's locale picks the language
    page.locator("#model-status").get_by_text(re.compile("is loaded|已加载")).wait_for(timeout=180_000)
    page.locator("#tab-generate-button").click()
    page.locator("#section-generate-precision-button").click()
    page.locator("#gen-precision-measure").click()
    _check_summary(page, "en")
    switch_language(page, "zh")
    _check_summary(page, "zh")
