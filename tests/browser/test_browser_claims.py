"""The Claims tab in a real browser (Debian Chromium): the board in English and Chinese, and its
links opening the right tab and section. The app is the whole app with the real SmolLM2 loaded,
its board made of fast fake evidence functions (tests/claims_fakes.py: 14 pass, 4 fail,
1 not available) so the test does not wait for the real board (bench/claims.py times that).

Screenshots: artifacts/screenshots/claims-en.png, claims-zh.png.
"""
from __future__ import annotations

import re

import pytest

from explorer.ui.tabs import claims as claims_tab
from tests.helpers import switch_language

pytestmark = pytest.mark.browser

LOAD_TIMEOUT = 180_000  # ms; the first load may convert the checkpoint


@pytest.fixture(scope="module")
def board_url(serve):
    with serve(env={claims_tab.REGISTRY_ENV: "tests.claims_fakes:FAST_REGISTRY"}) as served:
        yield served.url


def _open(page, url):
    page.goto(url)
    page.locator("#model-status").get_by_text(re.compile("is loaded|已加载")).wait_for(
        timeout=LOAD_TIMEOUT)


def _selected(page) -> list[str]:
    return page.evaluate("""() => Array.from(document.querySelectorAll(
        '[role=tab][aria-selected=true]')).filter(b => b.offsetParent !== null).map(b => b.id)""")


def _cell(page, row: int, column: int):
    return page.locator(f'#claims-board [data-testid="cell-{row}-{column}"]')


def _run_board(page):
    page.locator("#tab-claims-button").click()
    page.locator("#claims-run").click()
    page.locator("#claims-summary", has_text=re.compile("claims hold|个成立")).wait_for(
        timeout=LOAD_TIMEOUT)


def test_board_in_english_and_chinese(page, board_url, screenshot):
    _open(page, board_url)
    page.locator("#tab-claims-button").click()
    # before a run: every claim, linked, nothing measured
    assert _cell(page, 10, 4).inner_text() == "… not run" and _cell(page, 19, 0).inner_text() == "C20"
    _run_board(page)
    summary = page.locator("#claims-summary").inner_text()
    assert summary.startswith("17 of 22 claims hold on SmolLM2-135M-Instruct")
    assert [_cell(page, i, 0).inner_text() for i in range(22)] == [f"C{i}" for i in range(1, 23)]
    assert _cell(page, 10, 4).inner_text() == "✓ holds"          # C11
    assert _cell(page, 11, 4).inner_text() == "✗ fails"          # C12
    assert _cell(page, 13, 4).inner_text() == "– not available"  # C14
    assert "server log" in _cell(page, 12, 2).inner_text()       # C13 raised: no traceback
    assert "secret" not in page.locator("#claims-board").inner_text()
    screenshot(page, "claims-en")

    switch_language(page, "zh")
    page.locator("#claims-summary", has_text="22 个论断中有 17 个成立").wait_for()
    page.locator("#claims-board", has_text="证据（现场测得）").wait_for()
    assert _cell(page, 10, 4).inner_text() == "✓ 成立"
    assert _cell(page, 13, 4).inner_text() == "– 暂无"
    assert page.locator("#tab-claims-button").inner_text() == "论断核验"
    screenshot(page, "claims-zh")


def test_a_row_link_opens_its_tab_and_section(page, board_url):
    _open(page, board_url)
    _run_board(page)
    link = _cell(page, 11, 6).locator("a")                      # C12 -> RoPE, one pair rotating
    assert link.get_attribute("href") == "#open=rope/section-rope-pair-title"
    link.click()
    page.wait_for_function("""() => {
        const b = document.getElementById('section-rope-pair-title-button');
        return b && b.getAttribute('aria-selected') === 'true'; }""")
    assert "tab-rope-button" in _selected(page)
    assert page.locator("#section-rope-pair-title").is_visible()

    page.locator("#tab-claims-button").click()
    _cell(page, 0, 6).locator("a").click()                      # C1 -> Generate, the calculator
    page.wait_for_function("""() => {
        const b = document.getElementById('section-generate-section-calculator-button');
        return b && b.getAttribute('aria-selected') === 'true'; }""")
    assert "tab-generate-button" in _selected(page)


def test_about_points_to_the_board_and_an_address_opens_a_section(new_page, board_url):
    page = new_page("en-US")
    _open(page, board_url)
    page.locator("#tab-about-button").click()
    page.locator("#claims-pointer a").click()
    page.wait_for_function("""() => document.getElementById('tab-claims-button')
        .getAttribute('aria-selected') === 'true'""")
    # an address with the anchor opens the section once the page is drawn
    page.goto(board_url + "#open=rope/section-rope-pair-title")
    page.wait_for_function("""() => {
        const b = document.getElementById('section-rope-pair-title-button');
        return b && b.getAttribute('aria-selected') === 'true'; }""", timeout=60_000)


def test_a_tab_in_the_more_tabs_menu_is_found_by_its_place(new_page, board_url):
    page = new_page("en-US", width=560)
    _open(page, board_url)
    hidden = page.locator("#tab-about-button")
    assert hidden.count() == 0 or not hidden.is_visible()       # About sits in "More tabs"
    assert page.evaluate("() => window.explorerOpen('about/section-about-section-card')")
    page.locator("#section-about-section-card").wait_for()
    assert page.locator("#model-card").is_visible()


@pytest.fixture(scope="module")
def slow_board_url(serve):
    """The same app with a board of 22 claims of 0.4 s each: seen running, stopped midway."""
    with serve(("explorer.ui.tabs.rope", "explorer.ui.tabs.claims"),
               {claims_tab.REGISTRY_ENV: "tests.claims_fakes:SLOW_REGISTRY"}) as served:
        yield served.url


def test_the_board_fills_row_by_row_and_stop_ends_it(page, slow_board_url):
    _open(page, slow_board_url)
    page.locator("#tab-claims-button").click()
    page.locator("#claims-run").click()
    page.locator("#claims-summary", has_text=re.compile(r"Checking C11 \(([3-9]|1[0-2]) of 22\)")).wait_for()
    assert _cell(page, 0, 4).inner_text() == "✓ holds"        # measured rows appear as they come
    assert _cell(page, 18, 4).inner_text() == "… not run"
    page.locator("#claims-stop").click()
    page.locator("#claims-summary", has_text="Stopped.").wait_for()
    page.wait_for_timeout(1500)                                 # nothing more arrives after Stop
    assert page.locator("#claims-summary").inner_text() == "Stopped."
    assert _cell(page, 18, 4).inner_text() == "… not run"
    # the stopped board was not kept: Run measures again, to the end
    page.locator("#claims-run").click()
    page.locator("#claims-summary", has_text="22 of 22 claims hold").wait_for(timeout=60_000)
