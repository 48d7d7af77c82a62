"""A live class in real browsers (Debian Chromium, one context each): a teacher (English) and two
students, one English joining by the class link, one Chinese joining by typing the code (her page
reloads on ?room=CODE and rejoins from the browser's storage). The teacher's lesson steps reach
both students' pages, which run them; a student explores on her own (the class moves without
her) and comes back in one click; both answer the predict step, the teacher sees "2 of 2
answered", reveals the histogram beside the value measured on the teacher's page; a reload
rejoins the same member (her answer is still hers). Screenshots: artifacts/screenshots/class-*."""
from __future__ import annotations

import re
import time

import pytest

from explorer.lessons import LESSONS
from explorer.locales import text
from tests.class_pages import class_code, start_class
from tests.conftest import SCREENSHOTS
from tests.lesson_walk import wait_for_reading

pytestmark = pytest.mark.browser

# The goal is 1 s (p95, bench/class_follow.py measures it with 40 students); three pages and
# their runs on this shared 2-core machine add their own work: the test allows a margin and
# prints what it saw.
FOLLOW_LIMIT_S = 10.0


def _shot(page, name):
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), timeout=120_000)


def _at_step(page, n, timeout_ms):
    page.wait_for_function(f"() => /[?&]lesson=kv-cache&step={n}(&|$)/.test(location.search) && "
                           "document.getElementById('lesson-panel') && "   # fixed: no offsetParent
                           "document.getElementById('lesson-panel').getClientRects().length > 0",
                           timeout=timeout_ms)


def _follow_time(page, n):
    started = time.monotonic()
    _at_step(page, n, int(FOLLOW_LIMIT_S * 1000) + 30_000)
    return time.monotonic() - started


def _box(page, elem_id):
    return page.locator(f"#{elem_id} input, #{elem_id} textarea").first


def _probe_until_refused(app_url):
    """GET /class/revision for codes that do not exist until the address is refused (429)."""
    import httpx

    from explorer.classroom.rooms import MISSES_PER_ADDRESS
    with httpx.Client(timeout=10) as http:
        statuses = [http.get(f"{app_url}class/revision?room=ZZZZZ{c}").status_code
                    for c in "23456789ABCDEFGHJKMNPQRSTUVWXYZ"[:MISSES_PER_ADDRESS + 2]]
    assert statuses[-1] == 429, statuses


@pytest.fixture
def forget_misses():
    """This test's probes leave 127.0.0.1 refused for a minute: later tests start afresh."""
    from explorer.classroom.rooms import ROOMS
    yield
    with ROOMS._lock:
        ROOMS._misses._times.clear()


def test_a_class_follows_the_teacher_and_answers_together(new_page, app_url, forget_misses):
    teacher = new_page("en-US", 1400, 1000)
    ada = new_page("en-US", 1200, 900)
    mei = new_page("zh-CN", 1200, 900)

    teacher.goto(app_url)
    code = class_code(start_class(teacher))
    assert teacher.locator("#class-qr svg").count() == 1
    assert f"room={code}" in teacher.url and "key=" not in teacher.url
    _shot(teacher, "class-teacher-start")

    # Mei (Chinese) types the code on the plain page: the page reloads on ?room=CODE, rejoined
    mei.goto(app_url)
    mei.click("#tab-classroom-button", timeout=180_000)
    _box(mei, "class-code").fill(code.lower())
    mei.click("#class-join")
    mei.wait_for_url(re.compile(f"room={code}"), timeout=60_000)
    mei.locator("#class-bar").get_by_text("课堂").wait_for(timeout=180_000)

    # a script of the same address (127.0.0.1: the class's, as behind one school NAT) guesses
    # codes until the address is refused: a typed code would be refused now, ...
    _probe_until_refused(app_url)
    # ... but Ada joins by the class link (its invite: the QR code's), with a nickname
    link = re.search(r"\?room=" + code + r"&invite=[\w-]+", teacher.inner_text("#class-info")).group(0)
    ada.goto(f"{app_url}{link}")
    _box(ada, "class-code").wait_for(timeout=180_000)
    ada.wait_for_function(f"() => {{ const e = document.querySelector('#class-code input, #class-code textarea');"
                          f" return e && e.value === '{code}'; }}", timeout=180_000)
    _box(ada, "class-nickname").fill("Ada")
    ada.click("#class-join")
    ada.locator("#class-bar").get_by_text(code).wait_for(timeout=30_000)
    assert any(c["name"] == "explorer_room" and c["value"] == code for c in ada.context.cookies())
    teacher.locator("#class-status").get_by_text("2 students joined").wait_for(timeout=30_000)

    # the teacher opens the KV-cache lesson: both pages follow and run step 1
    title = text(LESSONS["kv-cache"].title, "en")
    teacher.click("#lesson-pick input")
    teacher.get_by_role("option", name=title).click()
    first = [_follow_time(ada, 1), _follow_time(mei, 1)]
    assert "跟随" in mei.inner_text("#class-status")
    # Ada explores on her own: the class moves to step 2 without her
    ada.click("#class-explore")
    ada.locator("#class-back").wait_for(timeout=10_000)
    ada.click("#tab-rope-button")
    teacher.click("#lesson-next")
    second = _follow_time(mei, 2)
    time.sleep(3)
    assert re.search(r"step=1(&|$)", ada.evaluate("location.search")), ada.url
    # back to the class: one click, and she is at step 2
    ada.click("#class-back")
    back = _follow_time(ada, 2)
    print(f"follow times: step 1 {first}, step 2 {second:.2f}, back {back:.2f} s")
    assert max(first + [second, back]) < FOLLOW_LIMIT_S

    # both answer the predict step from the lesson panel; the teacher's bar counts them
    for page, guess in ((ada, 3000), (mei, 9000)):
        _box(page, "lesson-guess").fill(str(guess))
        page.click("#lesson-check")
    teacher.locator("#class-status").get_by_text("2 of 2 answered").wait_for(timeout=60_000)
    assert "9000" not in ada.inner_text("#class-bar") and "3000" not in mei.inner_text("#class-bar")
    # the teacher's own run measures the value the histogram stands beside
    before = teacher.locator("#lesson-said").inner_text()
    _box(teacher, "lesson-guess").fill("5000")
    teacher.click("#lesson-check")
    said = wait_for_reading(teacher, before, "en", guessed=True)
    teacher.click("#class-reveal")
    teacher.locator("#class-hist .js-plotly-plot").wait_for(timeout=30_000)
    measured = teacher.evaluate(
        "() => { const g = document.querySelector('#class-hist .js-plotly-plot');"
        " return g.data.map(t => [t.type, t.y, t.x]); }")
    bars = next(t for t in measured if t[0] == "bar")
    assert sum(bars[1]) == 2
    line = next(t for t in measured if t[0] == "scatter")
    value = line[2][0]          # the dashed line's x: the value the teacher's run measured
    quoted = [float(n.replace(",", "")) for n in re.findall(r"\d[\d,]*\.?\d*", said)]
    assert line[2][0] == line[2][1] and any(abs(q - value) <= 0.01 * value + 0.5 for q in quoted), (line, said)
    # the students see the revealed histogram too (counts only)
    for page in (ada, mei):
        page.locator("#class-hist .js-plotly-plot").wait_for(timeout=30_000)
    _shot(teacher, "class-teacher-reveal")
    _shot(mei, "class-student-zh-reveal")

    # a reload rejoins the same member: Mei's answer is still hers
    mei.reload()
    # (her answer in the bar's line; the revealed histogram's legend may show the same number)
    mei.locator("#class-status", has_text="9000").wait_for(timeout=180_000)
    _shot(ada, "class-student-en")


def test_the_teacher_key_stays_in_its_tab_and_the_class_ends(new_page, app_url):
    """The teacher's key is kept for the tab (sessionStorage), never in the browser's lasting
    storage: a reload of the tab is the teacher again, another tab of the same browser (a shared
    PC's next visitor) opening the class link is not; "End the class" drops the room and the
    tab forgets the key (issue 41)."""
    teacher = new_page("en-US", 1200, 900)
    teacher.goto(app_url)
    code = class_code(start_class(teacher))
    teacher.wait_for_function("() => !!sessionStorage.getItem('explorer-class-teacher')")
    secret = teacher.evaluate("() => JSON.parse(sessionStorage.getItem('explorer-class-teacher')).secret")
    assert len(secret) >= 20 and secret not in teacher.evaluate("() => JSON.stringify(localStorage)")
    teacher.reload()
    teacher.locator("#class-status").get_by_text("students joined").wait_for(timeout=180_000)
    # the next visitor of this browser: same localStorage and cookies, a tab of its own
    other = teacher.context.new_page()
    other.goto(f"{app_url}?room={code}")
    other.wait_for_function(f"() => {{ const e = document.querySelector('#class-code input, #class-code textarea');"
                            f" return e && e.value === '{code}'; }}", timeout=180_000)
    assert not other.locator("#class-end").is_visible()
    assert other.evaluate("() => sessionStorage.getItem('explorer-class-teacher')") is None
    other.close()
    teacher.click("#tab-classroom-button")
    teacher.click("#class-end")
    teacher.locator("#class-message").get_by_text("The class has ended").wait_for(timeout=30_000)
    teacher.wait_for_function("() => !sessionStorage.getItem('explorer-class-teacher') && "
                              "!new URLSearchParams(location.search).get('room')", timeout=30_000)
    _shot(teacher, "class-ended")
