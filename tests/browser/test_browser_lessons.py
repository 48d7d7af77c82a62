"""Lessons and links in a real browser (Debian Chromium): the KV-cache lesson walked from first
to last step in English, its numbers the ones of the run on the page (a step's run and its
reading are the same in either language; the quotes in both languages, from the same
readings: tests/checkpoints/test_lessons.py; a Chinese walk moved with the → key: the
sliding-window lesson, test_browser_lessons_attention.py); a prediction entered and compared;
a link restoring a view with its values, and a tampered link opening with the defaults and a
note; presenter mode and the keyboard. Screenshots: artifacts/screenshots/."""
from __future__ import annotations

import json
import re

import pytest

from explorer.lessons import LESSONS
from explorer.locales import text
from tests.conftest import SCREENSHOTS
from tests.lesson_walk import walk

pytestmark = pytest.mark.browser


def _shot(page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), timeout=120_000)


def _numbers(said: str) -> list[float]:
    return [float(x.replace(",", "")) for x in re.findall(r"\d[\d,]*\.?\d*", said)]


@pytest.mark.parametrize("lang", ["en"])
def test_kv_cache_lesson_quotes_the_run_on_the_page(new_page, app_url, lang):
    page = new_page("en-US" if lang == "en" else "zh-CN", width=1400, height=1000)
    walked = walk(page, app_url, "kv-cache", lang, guesses={2: 4000}, keys=(lang == "zh"))
    assert len(walked) == len(LESSONS["kv-cache"].steps)
    first = walked[0].said
    # step 1 quotes the run the page shows: its token count is the status line's context
    status = page.locator("#gen-status").inner_text()
    assert text("lesson.kv.s1.look", lang)[:12] in walked[0].look
    per_token = 2 * 30 * 3 * 64 * 4          # SmolLM2-135M: 30 layers, 3 KV heads, d 64, fp32
    assert str(per_token) in first, first
    # step 2: the guess beside the measured value, its difference and the why
    second = walked[1].said
    assert "4000" in second or "4,000" in second
    assert f"{200 * per_token / 1024:.1f}" in second, second
    assert ("Why:" if lang == "en" else "原因") in second
    # step 3: the windowed layers held 32 tokens (the run's own verdict mark)
    third = walked[2].said
    assert "32" in third and "✓" in third, third
    assert text("lesson.done", lang)[:3] in third
    if lang == "zh":
        assert re.search(r"[\u4e00-\u9fff]", third)
    _shot(page, f"lesson-kv-{lang}")
    assert status
    # the address bar follows the lesson: a link to the step on the screen
    assert "lesson=kv-cache&step=3" in page.url


def test_link_restores_a_view_and_runs_it(page, app_url):
    page.goto(f"{app_url}?view=attention.map&layer=5&head=2&mask=window&window=16")
    summary = page.locator("#attention-summary")
    summary.get_by_text(re.compile(r"\d")).first.wait_for(timeout=180_000)
    assert page.locator("#attention-layer input[type=number]").input_value() == "5"
    assert page.locator("#attention-window input").input_value() == "16"
    title = page.locator("#attention-map .gtitle").first.text_content()
    assert "layer 5" in title and "head 2" in title, title
    # the section's link box holds the run's link: the same settings
    box = page.locator("#link-section-attention-section-map textarea, "
                       "#link-section-attention-section-map input").first
    page.wait_for_function("""() => { const box = document.querySelector(
        '#link-section-attention-section-map textarea, #link-section-attention-section-map input');
        return box && box.value.includes('layer=5'); }""", timeout=60_000)
    assert "window=16" in box.input_value() and "mask=window" in box.input_value()
    assert not page.locator("#link-note").is_visible()


def test_tampered_link_opens_with_defaults_and_a_note(page, app_url):
    page.goto(f"{app_url}?view=attention.map&layer=999&head=zz&window=NaN&model=../../etc&x=1")
    note = page.locator("#link-note")
    note.wait_for(timeout=120_000)
    said = note.inner_text()
    for name in ("layer", "head", "window", "x"):
        assert name in said, said
    page.locator("#attention-summary").get_by_text(re.compile(r"\d")).first.wait_for(timeout=180_000)
    assert page.locator("#attention-layer input[type=number]").input_value() == "3"   # the default
    _shot(page, "link-tampered")


def test_a_chinese_visitors_link_note_is_in_chinese(new_page, app_url):
    """The link is read at page load, before the header's load sets the language radio (still
    "en" then): the note is written in the page's own language (lesson_script.with_page_language),
    the toast and the note box alike."""
    page = new_page("zh-CN", 390, 844)
    page.goto(f"{app_url}?view=attention.map&layer=999&x=1")
    note = page.locator("#link-note")
    note.wait_for(timeout=120_000)
    opening = text("link.note", "zh", notes="").split("：")[0]
    assert opening in note.inner_text() and "layer" in note.inner_text(), note.inner_text()
    page.locator("[data-testid=toast-body]").first.wait_for(timeout=60_000)
    assert opening in page.locator("[data-testid=toast-body]").first.inner_text()
    # the toast's head: Gradio writes its kind in English; the page's style says it in Chinese
    # (shell.toast_titles_css), and says it in English again after the switch
    head = ("() => { const t = document.querySelector('.toast-title');"
            " return [getComputedStyle(t, '::before').content, parseFloat(getComputedStyle(t).fontSize)]; }")
    assert page.evaluate(head) == [json.dumps(text("shell.toast.warning", "zh"), ensure_ascii=False), 0]
    _shot(page, "link-tampered-zh-phone")
    page.locator("#language-switch label", has_text="English").click()
    page.wait_for_function("() => document.documentElement.lang === 'en'", timeout=30_000)
    if page.locator(".toast-title").count():
        assert page.evaluate(head)[0] == "none" and page.evaluate(head)[1] > 0


def test_presenter_mode_from_the_link(page, app_url):
    page.goto(f"{app_url}?lesson=kv-cache&step=1&present=1")
    page.locator("#lesson-panel").wait_for(timeout=180_000)
    page.wait_for_function("document.body.classList.contains('explorer-present')", timeout=60_000)
    size = page.evaluate("parseFloat(getComputedStyle(document.body).fontSize)")
    assert size >= 20
    page.locator("#lesson-said").get_by_text(re.compile(r"\d")).first.wait_for(timeout=240_000)
    _shot(page, "lesson-presenter")
    # Escape leaves the lesson (the keyboard alone)
    page.evaluate("document.activeElement && document.activeElement.blur()")
    page.keyboard.press("Escape")
    page.locator("#lesson-panel").wait_for(state="hidden", timeout=30_000)
