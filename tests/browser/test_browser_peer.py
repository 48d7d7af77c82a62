"""Peer instruction and pacing in a live class, in real browsers (Debian Chromium): a teacher
(English) and three students (Ada, English; Mei, Chinese; Bo, English on a 390 px phone) at the
KV-cache lesson's predict step. Round 1: each votes alone, the teacher's bar counts the votes
and nobody sees a histogram; the teacher closes the vote ("discuss with your neighbour" on every
student's bar, the answer box gone); round 2: each votes again (their first answer shown to
them only); the teacher's run measures the value and the reveal draws both rounds side by side
on every page. Then the teacher pauses the class: a student's Next and Explore are disabled and
a press does not move her; the teacher releases it and they work again. Last, a transfer
question: the teacher sets the section's cache policy to a sliding window and asks the same
question there; every page follows, votes from the bar, and the reveal names it the transfer of
the first question, beside the window run's value. Screenshots:
artifacts/screenshots/peer-*.png."""
from __future__ import annotations

import re
import time

import pytest

from explorer.lessons import LESSONS
from explorer.locales import text
from tests.class_pages import class_code, invite_link, start_class
from tests.conftest import SCREENSHOTS
from tests.lesson_walk import wait_for_reading

pytestmark = [pytest.mark.browser, pytest.mark.timeout(1500)]   # four pages and their runs

LOAD = 180_000


def _shot(page, name):
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), timeout=120_000)


def _at_step(page, n):
    page.wait_for_function(f"() => /[?&]lesson=kv-cache&step={n}(&|$)/.test(location.search) && "
                           "!!document.getElementById('lesson-panel')", timeout=LOAD)


def _join(page, app_url, link, nickname, tap=False):
    page.goto(f"{app_url}{link}")
    code = re.search(r"room=([A-Z2-9]{6})", link).group(1)
    page.wait_for_function(f"() => {{ const e = document.querySelector('#class-code input, #class-code textarea');"
                           f" return e && e.value === '{code}'; }}", timeout=LOAD)
    page.locator("#class-nickname input, #class-nickname textarea").first.fill(nickname)
    (page.locator("#class-join").tap if tap else page.locator("#class-join").click)()
    page.locator("#class-bar").get_by_text(code).wait_for(timeout=60_000)


def _open_bar(phone):
    """A phone's bar is one line until tapped: open it (its buttons and answer box)."""
    if phone.locator("#class-status").get_attribute("aria-expanded") != "true":
        phone.locator("#class-status").tap()
        phone.wait_for_function("() => document.getElementById('class-bar').classList.contains('open')")


def _send(page, value, phone=False):
    """An answer from the class bar's box."""
    if phone:
        _open_bar(page)
    page.locator("#class-guess input").first.fill(str(value))
    (page.locator("#class-send").tap if phone else page.locator("#class-send").click)()
    page.locator("#class-status", has_text=f"{value:g}").wait_for(timeout=60_000)


def _boxes(page) -> dict:
    """What the class bar's answer box and the lesson panel's guess box show."""
    return page.evaluate("() => ({bar: document.querySelector('#class-guess input').value,"
                         " lesson: document.querySelector('#lesson-guess input').value})")


def _bars(page):
    return page.evaluate("() => { const g = document.querySelector('#class-hist .js-plotly-plot');"
                         " return g ? g.data.filter(t => t.type === 'bar').map(t => [t.x, t.y, t.xaxis || 'x']) : null; }")


def test_vote_discuss_revote_reveal_and_pause(new_page, app_url, browser):
    teacher = new_page("en-US", 1400, 1000)
    ada = new_page("en-US", 1200, 900)
    mei = new_page("zh-CN", 1200, 900)
    phone_context = browser.new_context(locale="en-US", viewport={"width": 390, "height": 844},
                                        is_mobile=True, has_touch=True, device_scale_factor=2)
    phone_context.set_default_timeout(60_000)
    bo = phone_context.new_page()
    try:
        _run(teacher, ada, mei, bo, app_url)
    finally:
        phone_context.close()


def _run(teacher, ada, mei, bo, app_url):
    for page in (teacher, ada, mei):
        page.set_default_timeout(60_000)
    teacher.goto(app_url)
    info = start_class(teacher)
    code, link = class_code(info), invite_link(info)
    _join(ada, app_url, link, "Ada")
    _join(mei, app_url, link, "梅")
    _join(bo, app_url, link, "Bo", tap=True)
    teacher.locator("#class-status").get_by_text("3 students joined").wait_for(timeout=60_000)
    teacher.locator("#class-status").get_by_text("3 following · 0 exploring · 0 gone").wait_for(timeout=30_000)

    # the teacher opens the KV-cache lesson and moves to its predict step: every page follows
    teacher.click("#lesson-pick input")
    teacher.get_by_role("option", name=text(LESSONS["kv-cache"].title, "en")).click()
    for page in (ada, mei, bo):
        _at_step(page, 1)
    wait_for_reading(teacher, "", "en")      # the teacher's step-1 run ends before it moves on
    # (a page whose step is running on this shared machine may take a while to take a press)
    teacher.click("#lesson-next", timeout=LOAD)
    for page in (ada, mei, bo):
        _at_step(page, 2)

    # an unanswered question: both answer boxes empty, in English and in Chinese (not "0")
    for page in (ada, mei):
        page.locator("#class-guess input").first.wait_for(timeout=60_000)
        page.locator("#lesson-guess input").first.wait_for(timeout=60_000)
        assert _boxes(page) == {"bar": "", "lesson": ""}, _boxes(page)
    _shot(mei, "peer-student-zh-question")
    # Send on the empty box answers nothing (the store refuses it: tests/unit/test_classroom_peer.py)
    teacher.locator("#class-status").get_by_text("0 of 3 answered").wait_for(timeout=30_000)
    mei.click("#class-send")
    time.sleep(3)                           # a few polls: an answer would have been counted by now
    assert "0 of 3 answered" in teacher.inner_text("#class-status")

    # round 1: Ada from the lesson panel (her page runs the step), Mei and Bo from the bar
    ada.locator("#lesson-guess input").first.fill("3000")
    ada.click("#lesson-check")
    _send(mei, 9000)
    _send(bo, 6000, phone=True)
    teacher.locator("#class-status").get_by_text("3 of 3 answered").wait_for(timeout=60_000)
    for page in (teacher, ada, mei, bo):            # nobody sees a histogram before the reveal
        assert not page.locator("#class-hist").is_visible()
    assert "9000" not in ada.inner_text("#class-bar") and "3000" not in mei.inner_text("#class-bar")
    _shot(teacher, "peer-teacher-round1")

    # the teacher closes the vote: every student's bar says to discuss, answering is closed
    teacher.click("#class-close")
    mei.locator("#class-status", has_text=text("classroom.bar.discuss", "zh")).wait_for(timeout=30_000)
    ada.locator("#class-status", has_text=text("classroom.bar.discuss", "en")).wait_for(timeout=30_000)
    bo.locator("#class-status", has_text=text("classroom.bar.discuss", "en")).wait_for(timeout=30_000)
    assert not mei.locator("#class-send").is_visible()
    teacher.locator("#class-revote").wait_for(timeout=30_000)
    _shot(mei, "peer-student-zh-discuss")

    # round 2: each votes again; their first answer is theirs to see
    teacher.click("#class-revote")
    mei.locator("#class-status", has_text=text("classroom.bar.mine_first", "zh", mine="9000")).wait_for(timeout=30_000)
    _send(ada, 4000)
    _send(mei, 6000)
    _send(bo, 5500, phone=True)
    teacher.locator("#class-status").get_by_text("round 2: 3 of 3 answered").wait_for(timeout=60_000)
    assert "3000" not in mei.inner_text("#class-bar")

    # the teacher's own run measures the value; the reveal draws both rounds side by side
    before = teacher.locator("#lesson-said").inner_text()
    teacher.locator("#lesson-guess input").first.fill("5000")
    teacher.click("#lesson-check")
    said = wait_for_reading(teacher, before, "en", guessed=True)
    teacher.click("#class-reveal")
    teacher.locator("#class-hist .js-plotly-plot").wait_for(timeout=60_000)
    bars = _bars(teacher)
    assert len(bars) == 2 and [sum(b[1]) for b in bars] == [3, 3], bars
    assert bars[0][0] == bars[1][0] and bars[1][2] == "x2"          # the same bins, two panels
    teacher.locator("#class-status", has_text="moved toward").wait_for(timeout=30_000)
    measured = teacher.evaluate("() => document.querySelector('#class-hist .js-plotly-plot').data"
                                ".filter(t => t.type === 'scatter')[0].x[0]")
    quoted = [float(n.replace(",", "")) for n in re.findall(r"\d[\d,]*\.?\d*", said)]
    assert any(abs(q - measured) <= 0.01 * measured + 0.5 for q in quoted), (measured, said)
    for page in (ada, mei):
        page.locator("#class-hist .js-plotly-plot").wait_for(timeout=60_000)
        assert len(_bars(page)) == 2
    _shot(teacher, "peer-teacher-reveal")
    _shot(mei, "peer-student-zh-reveal")
    _open_bar(bo)
    bo.locator("#class-hist .js-plotly-plot").wait_for(timeout=60_000)
    bo.wait_for_function("() => document.querySelector('#class-hist svg.main-svg')"
                         ".getBoundingClientRect().right <= 391", timeout=10_000)
    _shot(bo, "peer-phone-en-reveal")

    # the teacher pauses the class: Next and Explore are disabled, a press moves no one
    teacher.click("#class-pause")
    teacher.locator("#class-release").wait_for(timeout=30_000)
    ada.locator("#class-status", has_text=text("classroom.bar.paused", "en")).wait_for(timeout=30_000)
    mei.locator("#class-status", has_text=text("classroom.bar.paused", "zh")).wait_for(timeout=30_000)
    ada.wait_for_function("() => document.getElementById('lesson-next').disabled && "
                          "document.getElementById('class-explore').disabled", timeout=30_000)
    ada.evaluate("() => document.getElementById('lesson-next').click()")
    ada.keyboard.press("ArrowRight")
    time.sleep(3)
    assert re.search(r"step=2(&|$)", ada.evaluate("location.search")), ada.url
    assert "3 following" in teacher.inner_text("#class-status")
    _shot(ada, "peer-student-en-paused")
    _shot(mei, "peer-student-zh-paused")
    _open_bar(bo)
    _shot(bo, "peer-phone-en-paused")

    # released: Next and Explore work again; Ada explores, the teacher's count says so
    teacher.click("#class-release")
    ada.wait_for_function("() => !document.getElementById('lesson-next').disabled && "
                          "!document.getElementById('class-explore').disabled", timeout=30_000)
    ada.click("#class-explore")
    teacher.locator("#class-status").get_by_text("2 following · 1 exploring").wait_for(timeout=30_000)
    _shot(teacher, "peer-teacher-released")
    ada.click("#class-back")
    teacher.locator("#class-status").get_by_text("3 following · 0 exploring").wait_for(timeout=30_000)

    # a transfer question: the same question with a sliding window (the section's cache policy
    # changed on the teacher's page); every page follows the section's link and runs it
    teacher.locator("#gen-policy").get_by_text(text("generate.policy.window", "en")).click()
    teacher.click("#class-transfer")
    window = text("generate.policy.window", "en")
    checked = ("(label) => { const i = [...document.querySelectorAll('#gen-policy input')].find(i => i.checked);"
               " return !!i && i.closest('label').innerText.includes(label); }")
    for page, lang in ((ada, "en"), (mei, "zh"), (bo, "en")):
        page.locator("#class-status", has_text=text("classroom.bar.transfer", lang, parent="q1")).wait_for(timeout=60_000)
        page.wait_for_function(checked, arg=text("generate.policy.window", lang), timeout=LOAD)
    assert window
    _send(ada, 3000)
    _send(mei, 1000)
    _send(bo, 2000, phone=True)
    teacher.locator("#class-status").get_by_text("3 of 3 answered").wait_for(timeout=60_000)
    assert not teacher.locator("#class-hist").is_visible()
    # the teacher's page ran the transfer link too: its run is the measured value
    teacher.wait_for_function("() => [...document.querySelectorAll('.explorer-link input, .explorer-link textarea')]"
                              ".some(e => /view=generate/.test(e.value) && /policy=window/.test(e.value))",
                              timeout=LOAD * 2)
    teacher.click("#class-reveal")
    teacher.locator("#class-hist .js-plotly-plot").wait_for(timeout=60_000)
    bars = _bars(teacher)
    assert len(bars) == 1 and sum(bars[0][1]) == 3, bars
    window_value = teacher.evaluate("() => document.querySelector('#class-hist .js-plotly-plot').data"
                                    ".filter(t => t.type === 'scatter')[0].x[0]")
    assert 0 < window_value < measured, (window_value, measured)    # the window caps the cache
    title = teacher.evaluate("() => document.querySelector('#class-hist .js-plotly-plot').layout.title.text")
    assert "Transfer of q1" in title, title
    mei.locator("#class-hist .js-plotly-plot").wait_for(timeout=60_000)
    _shot(teacher, "peer-teacher-transfer")
    _shot(mei, "peer-student-zh-transfer")
