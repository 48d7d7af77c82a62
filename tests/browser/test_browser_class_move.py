"""A teacher's move reaches pages that are busy decoding (issue 43, "a move waits for nothing"):
a teacher and two students in Chromium (one context each). The class is at the KV-cache
lesson's prediction step; each student answers, and the step's run decodes 200 tokens on her
page. While those runs stream, the teacher presses Next: each student's page shows step 3 while
its step-2 run had not finished (the status line at that moment is not that run's "Done ... 200
tokens": the move did not wait for it), within a generous bound, and the new step's own run
then starts and ends on her page (the old one was stopped, so the new press was not dropped).
bench/class_move.py measures the same with three students. Screenshots:
artifacts/screenshots/class-move-*."""
from __future__ import annotations

import re
import time

import pytest

from explorer.lessons import LESSONS
from explorer.locales import text
from tests.class_pages import invite_link, start_class
from tests.conftest import SCREENSHOTS

pytestmark = pytest.mark.browser

# generous: this shared 2-core host runs three pages and their decode (bench/class_move.py
# measures the figure, docs/BENCHMARKS.md); the proof is that the step-2 runs had not ended
MOVE_LIMIT_S = 10.0

AT_STEP = ("(n) => new RegExp('[?&]lesson=kv-cache&step=' + n + '(&|$)').test(location.search) && "
           "!!document.getElementById('lesson-panel') && "
           "document.getElementById('lesson-panel').getClientRects().length > 0")
# in the page: the moment its address names step 3, and its Generate status line then
WATCH = """() => { window.__moved = null; const started = performance.now();
  const timer = setInterval(() => {
    if (/[?&]lesson=kv-cache&step=3(&|$)/.test(location.search)) {
      const s = document.querySelector('#gen-status');
      window.__moved = {after: (performance.now() - started) / 1000, status: s ? s.innerText : ''};
      clearInterval(timer);
    }
  }, 20); }"""
TOKENS = ("() => { const s = document.querySelector('#gen-status'); const t = s ? s.innerText : '';"
          " const m = t.match(/(?:Generating|生成中)\\D*(\\d+)\\s*\\/\\s*(\\d+)/);"
          " return m ? [+m[1], +m[2]] : null; }")


def _shot(page, name):
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), timeout=120_000)


def _box(page, elem_id):
    return page.locator(f"#{elem_id} input, #{elem_id} textarea").first


def _join(page, app_url, link, name):
    code = re.search(r"room=([A-Z2-9]{6})", link).group(1)
    page.goto(f"{app_url}{link}")
    page.wait_for_function(
        "(code) => { const e = document.querySelector('#class-code input, #class-code textarea');"
        " return e && e.value === code; }", arg=code, timeout=180_000)
    _box(page, "class-nickname").fill(name)
    page.click("#class-join")
    page.locator("#class-bar").get_by_text(code).wait_for(timeout=60_000)


def _decoding(pages, at_least=3, timeout_s=240.0):
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        seen = [page.evaluate(TOKENS) for page in pages]
        if all(s is not None and s[1] == 200 and s[0] >= at_least for s in seen):
            return seen
        time.sleep(0.05)
    raise AssertionError(f"the step-2 runs did not stream: {[p.inner_text('#gen-status') for p in pages]}")


def test_a_move_reaches_pages_whose_runs_still_decode(new_page, app_url):
    teacher = new_page("en-US", 1400, 1000)
    students = [new_page("en-US", 1200, 900), new_page("zh-CN", 390, 844)]
    for page in (teacher, *students):
        page.context.set_default_timeout(180_000)   # three pages and their decode on a shared host
    teacher.goto(app_url)
    link = invite_link(start_class(teacher))
    for k, page in enumerate(students):
        _join(page, app_url, link, f"s{k}")

    teacher.click("#lesson-pick input")
    teacher.get_by_role("option", name=text(LESSONS["kv-cache"].title, "en")).click()
    for page in students:
        page.wait_for_function(AT_STEP, arg=1, timeout=120_000)
    teacher.click("#lesson-next")
    for k, page in enumerate(students):       # the prediction: each answer starts her run
        page.wait_for_function(AT_STEP, arg=2, timeout=120_000)
        page.locator("#lesson-guess input").wait_for(state="visible", timeout=60_000)
        _box(page, "lesson-guess").fill(str(2000 + k))
    for page in students:                     # pressed together: their runs overlap
        page.click("#lesson-check")
    before = _decoding(students, at_least=1)
    for page in students:
        page.evaluate(WATCH)
    pressed = time.monotonic()
    teacher.click("#lesson-next")
    moved = []
    for page in students:
        page.wait_for_function("() => window.__moved !== null", timeout=180_000, polling=50)
        moved.append(page.evaluate("() => window.__moved"))
    took = time.monotonic() - pressed
    print(f"step-2 runs at the press: {before}; at step 3: {moved}; all within {took:.2f} s")
    for shown in moved:
        # the step-2 run had not run to its end when the page showed step 3
        assert not re.search(r"(Done|完成).*\b200\b", shown["status"]), shown
    assert took < MOVE_LIMIT_S, (took, moved)
    _shot(students[0], "class-move-student-en")
    _shot(students[1], "class-move-student-zh-phone")
    # the new step's own run starts and ends on each page (48 tokens, the window policy)
    for page in students:
        page.wait_for_function("() => { const s = document.querySelector('#gen-status');"
                               " return s && /(Done|完成)/.test(s.innerText) && /\\b48\\b/.test(s.innerText); }",
                               timeout=240_000)
