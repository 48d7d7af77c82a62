"""The precision section in a real browser (Debian Chromium), in both languages: Measure draws
the speed chart (measured and roofline bars per precision) and the price chart, and the summary
names the rule's pick and the server's precision.
Screenshots: artifacts/screenshots/precision-<lang>.png."""
from __future__ import annotations

import re

import pytest

from tests.conftest import SCREENSHOTS

pytestmark = pytest.mark.browser

BARS = """() => Array.from(document.querySelectorAll('#gen-precision-speed .barlayer .trace'),
                          t => t.querySelectorAll('path').length)"""


@pytest.mark.parametrize("lang, locale, picks, ties", [("en", "en-US", "picks", "near ties"),
                                                       ("zh", "zh-CN", "选出", "近似平局")])
def test_measure_draws_speed_price_and_the_pick(new_page, app_url, lang, locale, picks, ties):
    page = new_page(locale, width=1280, height=1400)
    page.set_default_timeout(120_000)
    page.goto(app_url)     # the browser's locale picks the language
    page.locator("#model-status").get_by_text(re.compile("is loaded|已加载")).wait_for(timeout=180_000)
    page.locator("#tab-generate-button").click()
    page.locator("#section-generate-precision-button").click()
    page.locator("#gen-precision-measure").click()
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
