"""The shell in a real browser (Debian Chromium): header, model picker, language switch.

Screenshots go to artifacts/screenshots/; look at them after a change to the layout.
"""
from __future__ import annotations

import re

import pytest

from tests.helpers import switch_language

pytestmark = pytest.mark.browser

LOAD_TIMEOUT = 180_000  # ms; the first load may convert the checkpoint


def _open(page, app_url):
    page.goto(app_url)
    page.locator("#model-picker").wait_for()
    # The header's status line is written by the server once the model is loaded.
    page.locator("#model-status").get_by_text(re.compile("is loaded|已加载")).wait_for(
        timeout=LOAD_TIMEOUT)


def _heading(page) -> str:
    return page.locator("#explorer-heading h1").inner_text()


def _expected_tab_titles(lang: str) -> list[str]:
    from explorer.ui import build_translator
    from explorer.ui.tabs import available_tabs

    tabs = available_tabs()
    t = build_translator(tabs)
    return [t.text(m.TITLE, lang) for m in tabs]


def _wait_tab_titles(page, lang: str) -> None:
    expected = _expected_tab_titles(lang)
    tabs = page.locator("#explorer-tabs [role=tab][id^=tab-]")
    for _ in range(50):
        if tabs.all_inner_texts() == expected:
            return
        page.wait_for_timeout(200)
    assert tabs.all_inner_texts() == expected


def test_header_and_model_picker(page, app_url, screenshot):
    _open(page, app_url)
    assert _heading(page) == "Transformer Explorer"
    picker = page.locator("#model-picker input")
    assert picker.input_value() == "SmolLM2-135M-Instruct"
    status = page.locator("#model-status").inner_text()
    assert "Runs on" in status and "30 layers" in status
    assert "dequantized to fp32" in page.locator("#weights-note").inner_text()
    assert "Apache" in page.locator("#model-notice").inner_text()
    _wait_tab_titles(page, "en")
    screenshot(page, "shell-en")


def test_language_switch_changes_visible_text_and_back(page, app_url, screenshot):
    _open(page, app_url)
    assert _heading(page) == "Transformer Explorer"
    switch = page.locator("#language-switch")

    switch.get_by_text("中文").click()
    page.locator("#explorer-heading h1", has_text="Transformer 探索器").wait_for()
    # Static text (translated in the browser) and server text (re-rendered in Chinese).
    assert page.locator("#model-picker").get_by_text("模型").is_visible()
    page.locator("#model-status", has_text="运行于").wait_for()
    assert "已加载" in page.locator("#model-status").inner_text()
    _wait_tab_titles(page, "zh")  # every tab, not only the selected one
    page.locator("#explorer-tabs [role=tab][id^=tab-]", has_text="关于").click()
    page.locator("#claims-table", has_text="演示位置").wait_for()
    # a section's title too, the one not selected included
    page.locator("#section-about-section-card-button", has_text="模型卡").wait_for(timeout=10_000)
    screenshot(page, "shell-zh")

    switch.get_by_text("English").click()
    page.locator("#explorer-heading h1", has_text="Transformer Explorer").wait_for()
    page.locator("#model-status", has_text="Runs on").wait_for()
    _wait_tab_titles(page, "en")


def test_chinese_browser_opens_in_chinese_and_remembers_the_switch(new_page, app_url, screenshot):
    page = new_page("zh-CN")
    _open(page, app_url)
    page.locator("#explorer-heading h1", has_text="Transformer 探索器").wait_for()
    assert page.locator("#language-switch input[value=zh]").is_checked()
    page.locator("#model-status", has_text="运行于").wait_for()
    screenshot(page, "shell-zh-browser")

    switch_language(page, "en")
    page.locator("#explorer-heading h1", has_text="Transformer Explorer").wait_for()
    page.reload()
    _open(page, app_url)
    page.locator("#explorer-heading h1", has_text="Transformer Explorer").wait_for()


def test_selecting_gemma_shows_its_notice_and_model_card(page, app_url, screenshot):
    _open(page, app_url)
    page.locator("#model-picker input").click()
    page.get_by_role("option", name="Gemma 3 270M (base)").click()
    page.locator("#model-status", has_text="18 layers").wait_for(timeout=LOAD_TIMEOUT)
    notice = page.locator("#model-notice")
    notice.get_by_text("Gemma Terms of Use").wait_for()
    assert "ai.google.dev/gemma/terms" in notice.inner_text()
    page.locator("#explorer-tabs [role=tab][id^=tab-]", has_text="About").click()
    page.locator("#section-about-section-card-button").click()  # the card's own sub-tab
    page.locator("#model-card", has_text="Gemma 3 270M").wait_for(timeout=LOAD_TIMEOUT)
    card = page.locator("#model-card").inner_text()
    assert "15 × sliding window of 512" in card and "3 × full (causal)" in card
    screenshot(page, "shell-gemma")
