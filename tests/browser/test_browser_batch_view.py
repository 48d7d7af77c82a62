"""The class as one batch in a real browser (Debian Chromium): three pages (three sessions)
start a generation each, open the Generate tab's batch section, and each sees the loop's runs
(three, or two once one has ended), exactly one of them highlighted as its own, and a different
one on each page.
Screenshots: artifacts/screenshots/batch-view-*.png."""
from __future__ import annotations

import re

import pytest

from tests.conftest import SCREENSHOTS
from tests.helpers import open_generate_tab, start_run, type_number

pytestmark = pytest.mark.browser

LOAD_TIMEOUT = 180_000
VIEW_TIMEOUT = 120_000
PAGES = 3


# the summary and the row chart's labels, read in one frame (each refresh redraws the chart)
READ_VIEW = """() => ({summary: (document.querySelector('#gen-batch-summary') || {}).innerText || '',
                       labels: Array.from(document.querySelectorAll('#gen-batch-rows .ytick text'),
                                          x => x.textContent.trim())})"""


# a prompt SmolLM2 answers greedily to the tab's most, 256 new tokens (the default prompt's answer
# ends after 51: on a busy machine the runs could end before every page's view refreshed)
LONG_PROMPT = "Write a long story, at least forty sentences, about a dragon who learns to count."


# where the step chart draws the knee: its line's and its label's left edge against the pixel the
# x axis gives the knee's B (null when the knee is past the chart's B)
KNEE_PLACED = """() => {
  const gd = document.querySelector('#gen-batch-steps .js-plotly-plot');
  if (!gd || !gd.layout.shapes || !gd.layout.shapes.length) return null;
  const xa = gd._fullLayout.xaxis, root = gd.querySelector('.main-svg').getBoundingClientRect();
  const line = gd.querySelector('.shapelayer path').getBoundingClientRect();
  const label = gd.querySelector('.annotation').getBoundingClientRect();
  return {want: xa._offset + xa.d2p(gd.layout.shapes[0].x0),
          line: line.x - root.x + line.width / 2, label: label.x - root.x};
}"""


def _shoot_section(page, name: str) -> None:
    """The batch section as it stands: its box clipped from the page, not an element screenshot,
    which waits for the element to hold still, and a view redrawn each second while runs stream
    never does on a loaded machine."""
    box = page.locator("#section-generate-batch").bounding_box()   # from the viewport's corner
    scroll = page.evaluate("() => [window.scrollX, window.scrollY]")
    box = {**box, "x": box["x"] + scroll[0], "y": box["y"] + scroll[1]}
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), clip=box, full_page=True,
                    timeout=120_000)


def _start_together(pages, open_view: bool) -> None:
    """The three Start presses at once (a click dispatched, not waited for: on a busy machine
    Playwright's checks before a click can take seconds, and the first run would be half done
    before the last starts), a page that dropped its press pressed again (tests/helpers.py,
    start_run), then each page opens the batch view (the first time)."""
    status = "() => document.querySelector('#gen-status').textContent"
    before = [page.evaluate(status) for page in pages]
    for page in pages:
        page.evaluate("() => document.querySelector('#gen-start').click()")
    for page, said in zip(pages, before):
        try:   # the page took the press: its status left the last run's word
            page.wait_for_function("(b) => document.querySelector('#gen-status').textContent !== b",
                                   arg=said, timeout=10_000)
        except Exception:   # dropped while the page still counted the last run as running
            start_run(page, "#gen-start", "#gen-status")
    if open_view:
        for page in pages:
            page.evaluate("() => document.querySelector('#section-generate-batch-button').click()")


def _read_until_seen_or_ended(pages) -> dict:
    """page index -> its view read while it showed the loop's runs (three, or two once one has
    ended: as many rows as the summary counts, this page's among them), for every page that
    showed them before all the runs ended on the server (each page's status says Done)."""
    seen: dict = {}
    while len(seen) < PAGES:
        for i, page in enumerate(pages):
            if i in seen:
                continue
            read = page.evaluate(READ_VIEW)
            decoding = re.search(r"(\d+) decoding", read["summary"])
            if decoding and int(decoding.group(1)) >= 2 and len(read["labels"]) == int(decoding.group(1)) \
                    and sum(label.startswith("you") for label in read["labels"]) == 1:
                seen[i] = read
        if all(page.evaluate(RUN_OVER) for page in pages):
            break
        pages[0].wait_for_timeout(200)   # a poll, not a bound: the loop ends on the pages' state
    return seen


# whether the page's own run is over: its status line says Done (or Stopped) and its run's event
# is not pending. The status's text holds Gradio's progress tracker beside the line itself, and
# from a press until the new run's first message the line still says the last run's Done while
# the tracker says "processing": read whole, the status called a run just pressed over.
RUN_OVER = """() => {
  const status = document.querySelector('#gen-status');
  const line = status && status.querySelector('[data-testid=markdown]');
  if (!line) return false;
  const tracker = status.querySelector('[data-testid=status-tracker]');
  const pending = tracker && !tracker.classList.contains('hide') && tracker.textContent.trim();
  return !pending && /Done|Stopped/.test(line.textContent);
}"""


def test_three_pages_see_three_runs_each_its_own_highlighted(new_page, app_url):
    pages = [new_page("en-US", width=1280, height=1000) for _ in range(PAGES)]
    for page in pages:
        # three pages redraw streaming text at once on a busy 2-core machine: a click can wait
        page.set_default_timeout(120_000)
        open_generate_tab(page, app_url, LOAD_TIMEOUT)
        type_number(page, "gen-max-new", 256)   # the tab's most: the runs overlap for long
        page.locator("#gen-prompt textarea").fill(LONG_PROMPT)
    # every page looked at in turn, each read the moment it shows the runs (looked at one page
    # after another with long waits, the runs could end before the last page is read). How long
    # the runs last is not assumed: on a loaded machine three pages drawing streams can fall
    # behind the server until the runs end unseen. Then, once every page says its run is over,
    # all three run again and every page is read afresh (reads of one round only: a row keeps
    # its place number only while its run is in the loop), up to three rounds. A view the page
    # draws after its run is over cannot be of that run: the view's answers come in the page's
    # one stream of the queue's messages, in order, so every view asked while the run was in the
    # loop was drawn before the run's last message.
    seen: dict = {}
    rounds = []
    for round_ in range(3):
        _start_together(pages, open_view=round_ == 0)
        seen = _read_until_seen_or_ended(pages)
        rounds.append({i: seen[i]["labels"] for i in seen})
        if len(seen) == PAGES and any(len(read["labels"]) >= PAGES for read in seen.values()):
            break
        for page in pages:   # every run over, as each page's status says, before the next round
            page.wait_for_function(RUN_OVER, timeout=VIEW_TIMEOUT)   # (its section is hidden)
    assert len(seen) == PAGES, rounds
    own = []
    for i in range(PAGES):
        labels, summary = seen[i]["labels"], seen[i]["summary"]
        mine = [label for label in labels if label.startswith("you")]
        assert len(mine) == 1, labels
        assert all(re.fullmatch(r"run \d+", l) for l in labels if l not in mine), labels
        own.append(mine[0])
        assert f"Your runs: row {mine[0].split('· ')[1]} (highlighted)." in summary
    # each page's own run is a different row of the same loop (a row keeps its place number while
    # its run is in the loop), and one page at least saw all three runs decoding together
    assert len(set(own)) == PAGES, (own, [seen[i]["labels"] for i in range(PAGES)])
    assert any(len(seen[i]["labels"]) >= PAGES for i in range(PAGES)), seen
    # the section only, after every check: on a busy 2-core machine Chromium can take a minute
    # to shoot a page while three runs stream, and the runs would end meanwhile
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for i, page in enumerate(pages):
        _shoot_section(page, f"batch-view-{i + 1}")
    # the step chart: the loop's measured steps and their median per B, beside the roofline's
    # prediction once this device's roof is measured (in the background, a few seconds)
    first = pages[0]
    first.locator("#gen-batch-summary", has_text="Measured: B = ").wait_for(timeout=VIEW_TIMEOUT)
    first.locator("#gen-batch-summary", has_text="The roofline").wait_for(timeout=VIEW_TIMEOUT)
    first.wait_for_function(
        "() => document.querySelectorAll('#gen-batch-steps .scatterlayer .trace').length >= 3",
        timeout=VIEW_TIMEOUT)
    # the knee's dashed line stands where the axis puts its B (a log axis: plotly.js takes a
    # shape's x as the value and an annotation's as its log10; a log10 shape stood at B = 1.4)
    placed = first.evaluate(KNEE_PLACED)
    if placed is not None:
        assert abs(placed["line"] - placed["want"]) < 3, placed
        assert abs(placed["label"] - placed["want"]) < 3, placed
    _shoot_section(first, "batch-view-steps")
