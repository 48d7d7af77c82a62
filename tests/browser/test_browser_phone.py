"""A student's page on a phone (390 x 844, issue 43), in a real browser (Debian Chromium, a
mobile context with touch): a teacher (desktop) runs the KV-cache lesson for two phones, one
English, one Chinese. On each phone the class bar is one line until tapped (a tap opens its
buttons and the revealed histogram, another closes it), the lesson panel is a compact sheet at
the bottom (at most 40% of the screen, its text whole and wrapping, folded and unfolded by a tap
on its progress line), the step's charts are drawn at the page's width (every bar of the
30-layer chart in sight), and the page never scrolls sideways. Screenshots:
artifacts/screenshots/phone-*.png; look at them after a change to the layout."""
from __future__ import annotations


import pytest

from explorer.lessons import LESSONS
from explorer.locales import text
from tests.class_pages import class_code, start_class
from tests.conftest import SCREENSHOTS
from tests.lesson_walk import wait_for_reading

pytestmark = pytest.mark.browser

WIDTH, HEIGHT = 390, 844
LOAD_TIMEOUT = 180_000
BAR_LINE_PX = 60          # the class bar, closed: one line
PANEL_SHARE = 0.40        # the lesson panel's most of the screen's height
OPEN_BAR_SHARE = 0.80     # the class bar's, opened (static/classroom.css)

# What the test measures on a page: boxes of the bar and the panel, whether the panel's texts
# fit their boxes (neither cut sideways nor squeezed in height), the charts of the open section
# (their drawing and, for the KV cache per layer chart, the right edge of its last bar), and the
# page's own width.
FACTS = """() => {
  const box = (sel) => {
    const e = document.querySelector(sel);
    if (!e || !e.getClientRects().length) return null;
    const b = e.getBoundingClientRect();
    return {top: b.top, bottom: b.bottom, height: b.height, width: b.width,
            sw: e.scrollWidth, cw: e.clientWidth, sh: e.scrollHeight, ch: e.clientHeight};
  };
  const texts = {};
  for (const id of ["lesson-progress", "lesson-look", "lesson-said"]) {
    const e = document.querySelector("#" + id);
    const prose = e && e.querySelector(".prose");
    if (e && e.getClientRects().length) texts[id] = {sw: e.scrollWidth, cw: e.clientWidth,
      sh: e.scrollHeight, ch: e.clientHeight, psw: prose ? prose.scrollWidth : 0,
      pcw: prose ? prose.clientWidth : 0};
  }
  const charts = [...document.querySelectorAll(".js-plotly-plot")]
    .filter((c) => c.offsetParent !== null && c.querySelector("svg.main-svg"))
    .map((c) => {
      const svg = c.querySelector("svg.main-svg").getBoundingClientRect();
      const points = [...c.querySelectorAll(".barlayer .point")].map((p) => p.getBoundingClientRect().right);
      return {id: (c.closest("[id]") || {}).id, left: svg.left, right: svg.right, width: svg.width,
              bars: points.length, barsRight: points.length ? Math.max(...points) : 0};
    });
  return {page: document.documentElement.scrollWidth, bar: box("#class-bar"),
          panel: box("#lesson-panel"), texts, charts};
}"""


# The revealed chart in the open bar: the bar's visible box (its client area, on the screen) and
# the boxes of the chart's parts (its title and subtitle, the panels' titles, the plot areas,
# the SVG), how many panels and measured lines were drawn.
CHART = """() => {
  const bar = document.getElementById("class-bar");
  const b = bar.getBoundingClientRect();
  const box = (e) => { const r = e.getBoundingClientRect();
    return {top: r.top, bottom: r.bottom, left: r.left, right: r.right}; };
  const hist = document.getElementById("class-hist");
  const parts = {};
  hist.querySelectorAll(".gtitle, .gtitle-subtitle").forEach((e, i) => { parts["title" + i] = box(e); });
  hist.querySelectorAll(".annotation-text").forEach((e, i) => { parts["panel title " + i] = box(e); });
  hist.querySelectorAll(".nsewdrag").forEach((e, i) => { parts["plot " + i] = box(e); });
  const svg = hist.querySelector("svg.main-svg");
  if (svg) parts.svg = box(svg);
  return {bar: {top: b.top + bar.clientTop, bottom: b.top + bar.clientTop + bar.clientHeight},
          svg: svg ? box(svg) : null,
          scrolled: bar.scrollTop, parts, panels: hist.querySelectorAll(".nsewdrag").length,
          lines: hist.querySelectorAll(".scatterlayer .trace").length};
}"""


def _toggle(page, open_: bool) -> None:
    """A tap on the bar's line opens or closes it."""
    if (page.locator("#class-status").get_attribute("aria-expanded") == "true") != open_:
        page.locator("#class-status").tap()
    page.wait_for_function(f"() => document.getElementById('class-bar').classList.contains('open') === {str(open_).lower()}")


def _shot(page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), timeout=120_000)


@pytest.fixture
def phone(browser):
    """phone(locale) -> a page in a fresh mobile context, 390 x 844, touch."""
    contexts = []

    def make(locale: str):
        context = browser.new_context(locale=locale, viewport={"width": WIDTH, "height": HEIGHT},
                                      is_mobile=True, has_touch=True, device_scale_factor=2)
        context.set_default_timeout(30_000)
        contexts.append(context)
        return context.new_page()

    yield make
    for context in contexts:
        context.close()


def _facts(page) -> dict:
    return page.evaluate(FACTS)


def _check_page(facts: dict, where: str) -> None:
    """The page, the panel's texts and the open section's charts fit the phone's width."""
    assert facts["page"] <= WIDTH, f"{where}: the page is {facts['page']} px wide"
    for name, t in facts["texts"].items():
        assert t["sw"] <= t["cw"] and t["psw"] <= t["pcw"] + 1, f"{where}: {name} cut sideways {t}"
        assert t["sh"] <= t["ch"] + 2, f"{where}: {name} squeezed to {t['ch']} of {t['sh']} px"
    assert facts["charts"], f"{where}: no chart in the open section"
    for chart in facts["charts"]:
        assert chart["left"] >= -1 and chart["right"] <= WIDTH + 1, f"{where}: {chart}"
        assert chart["barsRight"] <= WIDTH, f"{where}: bars beyond the page's edge {chart}"


def _check_panel(facts: dict, where: str) -> None:
    panel = facts["panel"]
    assert panel is not None, f"{where}: no lesson panel"
    assert panel["height"] <= PANEL_SHARE * HEIGHT + 2, f"{where}: the panel is {panel['height']} px high"
    assert panel["bottom"] <= HEIGHT + 1 and panel["width"] <= WIDTH


def _join(page, app_url, code, nickname):
    page.goto(f"{app_url}?room={code}")
    page.wait_for_function(f"() => {{ const e = document.querySelector('#class-code input, #class-code textarea');"
                           f" return e && e.value === '{code}'; }}", timeout=LOAD_TIMEOUT)
    page.locator("#class-nickname input, #class-nickname textarea").first.fill(nickname)
    page.locator("#class-join").tap()
    page.locator("#class-bar").get_by_text(code).wait_for(timeout=60_000)


def _at_step(page, n):
    page.wait_for_function(f"() => /[?&]lesson=kv-cache&step={n}(&|$)/.test(location.search) && "
                           "!!document.getElementById('lesson-panel')", timeout=90_000)


def test_a_class_on_a_phone_fits_its_width(new_page, phone, app_url):
    teacher = new_page("en-US", 1300, 900)
    teacher.goto(app_url)
    code = class_code(start_class(teacher))
    ada, mei = phone("en-US"), phone("zh-CN")
    _join(ada, app_url, code, "Ada")
    _join(mei, app_url, code, "梅")
    teacher.locator("#class-status").get_by_text("2 students joined").wait_for(timeout=30_000)

    # the teacher opens the lesson: both phones follow and run step 1
    teacher.click("#lesson-pick input")
    teacher.get_by_role("option", name=text(LESSONS["kv-cache"].title, "en")).click()
    for page, lang in ((ada, "en"), (mei, "zh")):
        _at_step(page, 1)
        wait_for_reading(page, "", lang)
        page.locator("#gen-bars .barlayer .point").first.wait_for(timeout=60_000)
        facts = _facts(page)
        print(lang, "step 1", facts)
        _check_page(facts, f"{lang} step 1")
        _check_panel(facts, f"{lang} step 1")
        assert facts["bar"]["height"] <= BAR_LINE_PX, facts["bar"]
        assert facts["bar"]["top"] <= 1            # at the top, the panel at the bottom
        assert facts["bar"]["bottom"] <= facts["panel"]["top"]
        # the 30-layer chart: all 30 bars of the cache drawn within the page
        bars = next(c for c in facts["charts"] if c["id"] == "gen-bars")
        assert bars["bars"] >= 30, bars
    _shot(mei, "phone-lesson-zh")
    ada.locator("#gen-bars").scroll_into_view_if_needed()
    _shot(ada, "phone-figure-en")

    # a tap on the panel's progress line folds it, another unfolds it
    ada.locator("#lesson-progress").tap()
    ada.wait_for_function("() => document.getElementById('lesson-panel').classList.contains('folded')")
    folded = _facts(ada)["panel"]["height"]
    assert not ada.locator("#lesson-look").is_visible() and ada.locator("#lesson-next").is_visible()
    assert folded <= 0.2 * HEIGHT, folded
    _shot(ada, "phone-lesson-folded-en")
    ada.locator("#lesson-progress").tap()
    ada.locator("#lesson-look").wait_for(timeout=10_000)

    # step 2 asks for a guess: both answer from the panel, the teacher reveals the histogram
    teacher.click("#lesson-next")
    for page, guess in ((ada, 3000), (mei, 9000)):
        _at_step(page, 2)
        page.locator("#lesson-guess input").first.fill(str(guess))
        page.locator("#lesson-check").tap()
    teacher.locator("#class-status").get_by_text("2 of 2 answered").wait_for(timeout=60_000)
    # peer instruction: the teacher closes the vote, then opens round 2; each phone answers again
    # from its bar (opened by a tap, closed again), and the teacher's run measures the value
    teacher.click("#class-close")
    teacher.locator("#class-revote").wait_for(timeout=30_000)
    teacher.click("#class-revote")
    for page, guess in ((ada, 4000), (mei, 6000)):
        page.locator("#class-guess input").first.wait_for(state="attached", timeout=30_000)
        _toggle(page, True)
        page.locator("#class-guess input").first.fill(str(guess))
        page.locator("#class-send").tap()
        page.locator("#class-status", has_text=str(guess)).wait_for(timeout=60_000)
        _toggle(page, False)
    teacher.locator("#class-status").get_by_text("round 2: 2 of 2 answered").wait_for(timeout=60_000)
    before = teacher.locator("#lesson-said").inner_text()
    teacher.locator("#lesson-guess input").first.fill("5000")
    teacher.click("#lesson-check")
    wait_for_reading(teacher, before, "en", guessed=True)
    teacher.click("#class-reveal")
    for page, lang in ((ada, "en"), (mei, "zh")):
        # closed, the bar stays one line; the chart mark says the answers are in it
        page.locator("#class-hist").wait_for(state="attached", timeout=60_000)
        page.locator("#class-status", has_text="4000" if page is ada else "6000").wait_for(timeout=60_000)
        closed = _facts(page)
        print(lang, "revealed, closed", closed)
        assert closed["bar"]["height"] <= BAR_LINE_PX, closed["bar"]
        _check_panel(closed, f"{lang} revealed")
        assert closed["page"] <= WIDTH
        assert not page.locator("#class-hist").is_visible()
        _shot(page, f"phone-class-{lang}")
        # a tap opens it: the histogram at the page's width; a tap on its line closes it
        page.locator("#class-status").tap()
        page.locator("#class-hist .js-plotly-plot").wait_for(timeout=30_000)
        # (drawn while the bar was closed, without a width: redrawn at the bar's on opening)
        page.wait_for_function(f"() => document.querySelector('#class-hist svg.main-svg')"
                               f".getBoundingClientRect().right <= {WIDTH}", timeout=10_000)
        opened = _facts(page)
        print(lang, "revealed, open", opened)
        assert opened["bar"]["height"] <= OPEN_BAR_SHARE * HEIGHT + 2, opened["bar"]
        hist = next(c for c in opened["charts"] if c["id"] == "class-hist")
        assert hist["right"] <= WIDTH + 1 and hist["left"] >= -1, hist
        assert page.locator("#class-status").get_attribute("aria-expanded") == "true"
        # the whole chart in the open bar's visible box, unscrolled: its title's lines, both
        # rounds' panels (their titles, bars and the measured line) and its bottom
        chart = page.evaluate(CHART)
        print(lang, "chart in the bar", chart)
        assert chart["panels"] == 2 and chart["lines"] == 2 and len(chart["parts"]) >= 6, chart
        for name, b in chart["parts"].items():
            assert b["top"] >= chart["svg"]["top"] - 1, (name, "above the chart's own box", chart)
            assert b["top"] >= chart["bar"]["top"] - 1 and b["bottom"] <= chart["bar"]["bottom"] + 1, (name, chart)
            assert b["left"] >= -1 and b["right"] <= WIDTH + 1, (name, chart)
        _shot(page, f"phone-class-{lang}-open")
        page.locator("#class-status").tap()
        page.locator("#class-hist").wait_for(state="hidden", timeout=10_000)
        assert _facts(page)["bar"]["height"] <= BAR_LINE_PX


def test_a_lesson_link_on_a_phone(phone, app_url):
    """Without a class: a step's link in Chinese, the panel a sheet at the bottom, the step's
    chart at the page's width; the page's end can be scrolled above the panel."""
    page = phone("zh-CN")
    page.goto(f"{app_url}?lesson=kv-cache&step=1")
    page.locator("#lesson-panel").wait_for(timeout=LOAD_TIMEOUT)
    wait_for_reading(page, "", "zh")
    page.locator("#gen-bars .barlayer .point").first.wait_for(timeout=60_000)
    facts = _facts(page)
    print("lesson zh", facts)
    _check_page(facts, "lesson zh")
    _check_panel(facts, "lesson zh")
    assert facts["bar"] is None
    # at the page's end, its last block stands above the panel (Gradio's footer below it may
    # stay under the panel: a tap on the progress line folds the panel)
    page.evaluate("window.scrollTo(0, document.documentElement.scrollHeight)")
    page.wait_for_function("() => window.scrollY + window.innerHeight"
                           " >= document.documentElement.scrollHeight - 1")
    last = page.evaluate("""() => { const blocks = [...document.querySelectorAll('.gradio-container .contain .block')]
        .filter((e) => e.getClientRects().length && !e.closest('#lesson-panel'));
        return Math.max(...blocks.map((e) => e.getBoundingClientRect().bottom)); }""")
    assert last <= facts["panel"]["top"] + 1, (last, facts["panel"])
    _shot(page, "phone-lesson-zh-end")
