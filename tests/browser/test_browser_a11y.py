"""Accessibility in a real browser (Debian Chromium): charts carry their text alternative
(static/charts.js reads layout.meta.alt into role="img" and aria-label, again after the language
switch redraws them); a section is reached and run with the keyboard alone; and no tab
overflows sideways at phone width (390 px) or at 200% zoom (a 1280 px window at 200% is a
640 px page; static/a11y.css). Screenshots: artifacts/screenshots/a11y-*.png; look at them."""
from __future__ import annotations

import re

import pytest

from tests.conftest import SCREENSHOTS

pytestmark = pytest.mark.browser

LOAD_TIMEOUT = 180_000   # ms; the first load may convert the checkpoint
RUN_TIMEOUT = 120_000
TABS = ("generate", "next_token", "attention", "rope", "flash", "architecture", "moe", "claims", "about")
CJK = re.compile(r"[\u4e00-\u9fff]")
CHART = "#rope-freq-plot .js-plotly-plot"


def _open(page, app_url):
    page.goto(app_url)
    page.locator("#model-status").get_by_text(re.compile("is loaded|已加载")).wait_for(timeout=LOAD_TIMEOUT)


def _focused(page) -> str:
    return page.evaluate("() => document.activeElement.id || document.activeElement.closest('[id]')?.id || ''")


def _tab_to(page, target: str, limit: int = 80, key: str = "Tab") -> None:
    """Press Tab until the element `target` (an id, or the id of a block around it) has focus."""
    for _ in range(limit):
        page.keyboard.press(key)
        if _focused(page) == target:
            return
    raise AssertionError(f"{target} was not reached with {limit} presses of {key}")


# true once the tab's panel is shown and the page's width has stayed the same for 10 frames in
# a row (its charts drawn): the page's own state, however long a loaded machine takes to get there
SETTLED = """(tab) => {
  const panel = document.getElementById('tab-' + tab);
  if (!panel || !panel.getClientRects().length) return false;
  const width = document.scrollingElement.scrollWidth, s = window.__settle || {};
  window.__settle = s.width === width && s.tab === tab ? {...s, frames: s.frames + 1}
                                                     : {tab, width, frames: 0};
  return window.__settle.frames >= 10;
}"""


def _settled(page, tab: str) -> None:
    page.wait_for_function(SETTLED, arg=tab, polling="raf", timeout=RUN_TIMEOUT)


def _label(page) -> str:
    return page.locator(CHART).get_attribute("aria-label") or ""


def _wait_label(page, predicate, timeout_ms: int = RUN_TIMEOUT) -> str:
    for _ in range(timeout_ms // 250):
        label = _label(page) if page.locator(CHART).count() else ""
        if label and predicate(label):
            return label
        page.wait_for_timeout(250)
    raise AssertionError(f"the chart's label never matched: {_label(page)!r}")


def test_a_section_is_reached_run_and_read_with_the_keyboard_alone(page, app_url, screenshot):
    _open(page, app_url)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    # the tabs are buttons in the tab order: Tab to RoPE and open it with Enter
    _tab_to(page, "tab-rope-button")
    page.keyboard.press("Enter")
    page.locator(CHART).wait_for(timeout=RUN_TIMEOUT)
    # into the section: type two bases into its text box, Tab to its button, press Enter
    _tab_to(page, "rope-freq-bases")
    page.keyboard.press("Control+A")
    page.keyboard.type("20000, 3000000")
    _tab_to(page, "rope-freq-run")
    page.locator("#rope-freq-run").screenshot(path=str(SCREENSHOTS / "a11y-keyboard-focus.png"))
    page.keyboard.press("Enter")
    label = _wait_label(page, lambda text: "base 20k" in text and "base 10k" not in text)
    assert page.locator(CHART).get_attribute("role") == "img"
    assert re.search(r"\d", label.split(":", 1)[1]), label
    # back up to the language switch with Shift+Tab: its last choice, 中文, comes first
    _tab_to(page, "language-switch", limit=120, key="Shift+Tab")
    assert page.evaluate("() => document.activeElement.value") == "zh"
    page.keyboard.press("Space")
    zh = _wait_label(page, lambda text: bool(CJK.search(text)))
    assert "20k" in zh
    page.keyboard.press("Shift+Tab")    # back to English
    page.keyboard.press("Space")
    _wait_label(page, lambda text: not CJK.search(text))
    screenshot(page, "a11y-keyboard-rope")


@pytest.mark.parametrize("name, width, height", [("phone", 390, 844), ("zoom200", 640, 450)])
def test_no_tab_overflows_sideways_at_phone_width_or_200_percent_zoom(new_page, app_url, name, width,
                                                                      height):
    page = new_page(width=width, height=height)
    _open(page, app_url)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for tab in TABS:
        assert page.evaluate(f"window.explorerOpen({tab!r})"), tab
        _settled(page, tab)
        scroll_width, inner_width = page.evaluate(
            "() => [document.scrollingElement.scrollWidth, window.innerWidth]")
        assert scroll_width <= inner_width + 1, f"{tab} at {width} px: the page is {scroll_width} px wide"
        page.screenshot(path=str(SCREENSHOTS / f"a11y-{name}-{tab}.png"), full_page=True)
    # the header: language, model picker and its status line each fit the width
    for block in ("#language-switch", "#model-picker", "#model-status"):
        box = page.locator(block).bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= width + 1, block
    if width <= 480:   # the status line takes the whole row, not a squeezed column beside the picker
        assert page.locator("#model-status").bounding_box()["width"] > width / 2
