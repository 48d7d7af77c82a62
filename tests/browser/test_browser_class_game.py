"""The class game "what will the model say next" in real browsers (Debian Chromium, one context
each), on the Generate and Class tabs served with the real SmolLM2: a teacher (English) and three
students who join by the class link: Ada (English), Mei (Chinese), Sam on a 390 px phone. They
wait on the Generate tab; the teacher's greedy round opens the Class tab on every student's
page with the prompt and a guess box (no distribution); each guesses (Sam a word of three
tokens, told so); the teacher sees "3 guesses so far" and reveals: every page draws the class's
counts over the model's probabilities (the bars' numbers are the round's own distribution) and
says where in depth the model would have agreed; nobody's page shows Sam's word. Then a sampled
round, its drawn token named. Screenshots: artifacts/screenshots/game-*."""
from __future__ import annotations

import re

import pytest

from explorer.classroom.game import GAMES
from tests.class_pages import class_code, invite_link, start_class
from tests.conftest import SCREENSHOTS

pytestmark = pytest.mark.browser
TABS = ("explorer.ui.tabs.generate", "explorer.ui.tabs.classroom")
SLOW = 240_000


@pytest.fixture(scope="module")
def game_url(serve):
    with serve(tabs=TABS) as served:
        yield served.url


def _shot(page, name):
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True, timeout=120_000)


def _box(page, elem_id):
    return page.locator(f"#{elem_id} input, #{elem_id} textarea").first


def _wait_text(page, selector, pattern, timeout=SLOW):
    page.wait_for_function(
        "([s, p]) => { const e = document.querySelector(s); return e && new RegExp(p).test(e.innerText); }",
        arg=[selector, pattern], timeout=timeout)


def _bars(page):
    return page.evaluate("() => { const p = document.querySelector('#game-tally .js-plotly-plot');"
                         " return p.data.map(t => ({x: t.x, y: t.y})); }")


def test_a_class_plays_what_will_the_model_say_next(new_page, game_url):
    teacher = new_page("en-US", 1400, 1000)
    ada, mei, sam = new_page("en-US", 1200, 900), new_page("zh-CN", 1200, 900), new_page("en-US", 390, 844)
    teacher.goto(game_url)
    info = start_class(teacher)
    code, link = class_code(info), invite_link(info)
    for page, nick in ((ada, "Ada"), (mei, "Mei"), (sam, "Sam")):
        page.goto(f"{game_url}{link}")
        page.wait_for_function(f"() => {{ const e = document.querySelector('#class-code input, #class-code textarea');"
                               f" return e && e.value === '{code}'; }}", timeout=SLOW)
        _box(page, "class-nickname").fill(nick)
        page.click("#class-join")
        page.locator("#class-bar").get_by_text(code).wait_for(timeout=60_000)
    teacher.locator("#class-status").get_by_text("3 students joined").wait_for(timeout=60_000)
    for page in (ada, mei, sam):         # each waits elsewhere: the round brings them back
        page.click("#tab-generate-button")
        assert not page.locator("#game-guess").is_visible()

    # a greedy round
    teacher.locator("#game-start").wait_for(timeout=60_000)
    _box(teacher, "game-prompt").fill("The capital of France is")
    teacher.click("#game-start")
    _wait_text(teacher, "#game-status", "Round 1.*0 guesses so far")
    for page in (ada, mei, sam):
        _box(page, "game-guess").wait_for(state="visible", timeout=60_000)
        assert "The capital of France is" in page.inner_text("#game-status")
        assert not page.locator("#game-tally").is_visible()     # no distribution before the reveal
    assert "第 1 轮" in mei.inner_text("#game-status")
    for page, word in ((ada, "Paris"), (mei, "Paris"), (sam, "Strasbourg")):
        _box(page, "game-guess").fill(word)
        page.click("#game-send")
    _wait_text(ada, "#game-mine", "Your guess: Paris.*“␣Paris”")
    _wait_text(mei, "#game-mine", "你的猜测：Paris")
    _wait_text(sam, "#game-mine", "3 tokens.*“␣St” \\+ “ras” \\+ “bourg”")
    _shot(sam, "game-phone-guess")
    _wait_text(teacher, "#game-status", "3 guesses so far", timeout=60_000)
    _shot(teacher, "game-teacher-round")
    teacher.click("#game-reveal")
    teacher.locator("#game-tally .js-plotly-plot").wait_for(timeout=SLOW)
    _wait_text(teacher, "#game-said", "Logit lens")
    said = teacher.inner_text("#game-said")
    assert "chosen by 2 of 3 students" in said and re.search(r"layer \d+ of 30|never agrees", said), said
    # the bars are the round's own distribution and count
    probs = GAMES._games[code].rounds[-1].probs
    bars = _bars(teacher)
    top = [round(100 * float(p), 4) for p in probs.topk(len(bars[0]["y"])).values][:3]
    assert [round(y, 4) for y in bars[0]["y"][:3]] == top
    assert dict(zip(bars[1]["x"], bars[1]["y"]))["␣Paris"] == 2
    for page, words in ((ada, "Logit lens"), (mei, "逻辑透镜"), (sam, "Logit lens")):
        _wait_text(page, "#game-said", words)
        page.locator("#game-lens .js-plotly-plot").wait_for(timeout=60_000)
    _wait_text(ada, "#game-mine", "The model gave your guess “␣Paris” a probability of \\d")
    for page in (ada, mei):
        assert "Strasbourg" not in page.inner_text("body") and "bourg" not in page.inner_text("#game")
    _shot(teacher, "game-teacher-reveal")
    _shot(ada, "game-ada-reveal")
    _shot(mei, "game-mei-reveal-zh")
    _shot(sam, "game-phone-reveal")

    # a sampled round: the drawn token and its probability beside the greedy one
    teacher.locator("#game-mode").get_by_text("Sampled").click()
    _box(teacher, "game-seed").fill("7")
    teacher.click("#game-start")
    _wait_text(teacher, "#game-status", "Round 2.*sampled at temperature 1 \\(seed 7\\)")
    _box(ada, "game-guess").wait_for(state="visible", timeout=60_000)
    _box(ada, "game-guess").fill("the")
    ada.click("#game-send")
    _wait_text(ada, "#game-mine", "Your guess: the")
    _wait_text(teacher, "#game-status", "1 guess so far", timeout=60_000)
    teacher.click("#game-reveal")
    _wait_text(teacher, "#game-said", "Drawn\\*?\\*? by the sampler at temperature 1 \\(seed 7\\)|Drawn by the sampler")
    _wait_text(mei, "#game-said", "采样器抽到")
    _shot(teacher, "game-teacher-sampled")
    _shot(mei, "game-mei-sampled-zh")
