"""The Next token tab in a real browser (Debian Chromium), on both real checkpoints, in English and
Chinese: the distribution opened by a link, the sampling controls moved on the page and the kept
set and renormalised probabilities read off its table against `keep` computed here on the same
model (the served app shares this process's runtime); the logit lens with its last-layer check;
the lesson walked (in Chinese); a phone-width page whose charts fit, in English and,
the language switched, in Chinese. Screenshots: artifacts/screenshots/next-*.png; look at them."""
from __future__ import annotations

import re

import pytest

from explorer.lessons import LESSONS
from explorer.locales import text
from explorer.nexttoken import distribution as dist
from explorer.nexttoken import figures, runs
from explorer.ui.tabs.next_token import DEFAULT_PROMPT
from tests.helpers import switch_language, type_number
from tests.lesson_walk import walk

pytestmark = pytest.mark.browser

RUN_TIMEOUT = 180_000     # ms: forwards on a busy 2-core CPU
CHECK = {"en": "max |difference| = 0 ✓", "zh": "最大 |差| = 0 ✓"}


def _table(page) -> list[tuple[str, str, str]]:
    """(token, model, sampler) of each drawn row of the page's table."""
    rows = page.locator("#next-dist-table tbody tr")
    out = []
    for i in range(rows.count()):
        cells = [c.inner_text().strip() for c in rows.nth(i).locator("td").all()]
        if cells[0]:
            out.append((cells[1], cells[2], cells[3]))
    return out


def _expected(runtime, model: str, t: float, k: int, p: float, lang: str) -> tuple[list[str], int]:
    """The sampler column as `keep` computes it on the same model's logits, formatted as the
    table formats it, and how many tokens it keeps in all."""
    loaded = runtime.get(model)
    result = runs.distribution(loaded, DEFAULT_PROMPT, 1.0, 0, 1.0)
    kept = dist.keep(result.prediction.logits, dist.sampling(t, k, p))
    cut = text("next.fig.cut", lang)
    column = [figures._pct(float(kept.probs[row.token])) if kept.probs[row.token] > 0 else cut
              for row in result.rows]
    return column, kept.n_kept


def _wait_table(page, kept_text: str) -> None:
    page.locator("#next-dist-summary", has_text=kept_text).wait_for(timeout=RUN_TIMEOUT)


@pytest.mark.parametrize("model, lang", [("smollm2-135m-instruct", "en"), ("gemma-3-270m", "zh")])
def test_the_view_follows_the_sampler_and_shows_the_lens_check(new_page, app_url, runtime, screenshot,
                                                               model, lang):
    page = new_page("en-US" if lang == "en" else "zh-CN", width=1280, height=1000)
    page.goto(f"{app_url}?view=next.dist&model={model}&lang={lang}")
    page.locator("#next-dist-table tbody tr").first.wait_for(timeout=RUN_TIMEOUT)
    vocab = runtime.get(model).config.vocab_size
    all_kept = f"{vocab:,}"
    _wait_table(page, all_kept)
    before = _table(page)
    assert [row[2] for row in before] == [row[1] for row in before]      # T = 1, no cut: the model's own
    # move the controls: top-k 3, then temperature 0.6, then top-p 0.5: each a cut of the same logits
    for elem_id, value, (t, k, p) in (("next-top-k", 3, (1.0, 3, 1.0)), ("next-temperature", 0.6, (0.6, 3, 1.0)),
                                      ("next-top-p", 0.5, (0.6, 3, 0.5))):
        expected, n_kept = _expected(runtime, model, t, k, p, lang)
        type_number(page, elem_id, value)
        page.wait_for_function(
            "([want]) => { const rows = [...document.querySelectorAll('#next-dist-table tbody tr')]"
            ".filter(r => r.cells[0].innerText.trim()); return rows.length && rows.map(r => "
            "r.cells[3].innerText.trim()).join('|') === want; }", arg=["|".join(expected)], timeout=RUN_TIMEOUT)
        shown = _table(page)
        assert [row[2] for row in shown] == expected
        assert [row[1] for row in shown] == [row[1] for row in before]     # the model's column stays
        assert f"{n_kept:,}" in page.locator("#next-dist-summary").inner_text()
    screenshot(page, f"next-dist-{model}-{lang}")
    # the lens: its section, its run, the last-layer check on the page
    page.get_by_role("tab", name="Logit lens").click()
    page.locator("#next-lens-run").click()
    page.locator("#next-lens-summary", has_text=CHECK[lang]).wait_for(timeout=RUN_TIMEOUT)
    page.locator("#next-lens-heatmap .js-plotly-plot").wait_for(timeout=RUN_TIMEOUT)
    page.locator("#next-lens-ranks .js-plotly-plot").wait_for(timeout=RUN_TIMEOUT)
    # a wide page shows the widest cut of each token its cells hold (static/charts.js), not
    # the phone's, and every text still within its cell
    page.wait_for_function("() => (" + FITTED + ")().fitted", timeout=RUN_TIMEOUT)
    fitted = page.evaluate(FITTED)
    assert fitted["pick"] > 0, fitted
    assert fitted["afterplot"] == 1, fitted      # one hook runs both jobs (label, fit)
    assert fitted["label"] and fitted["role"] == "img", fitted
    heat = page.evaluate(HEATMAP)
    assert heat["texts"] == heat["cells"] > 0 and heat["widest"] <= heat["cellWidth"] + 0.5, heat
    screenshot(page, f"next-lens-{model}-{lang}")


# walked in Chinese (the lessons alternate languages: tests/browser/test_browser_lessons*.py); its
# quotes in both languages, from the same readings: tests/checkpoints/test_next_token_real.py
@pytest.mark.parametrize("lang", ["zh"])
def test_the_lesson_walked(new_page, app_url, screenshot, lang):
    page = new_page("en-US" if lang == "en" else "zh-CN", width=1400, height=1000)
    walked = walk(page, app_url, "next-token", lang, guesses={3: 20})
    assert len(walked) == len(LESSONS["next-token"].steps)
    assert re.search(r"\d+\.\d+%", walked[0].said)
    lead = re.search(r"(?:layer|第) (\d+)", walked[2].said)
    assert lead is not None
    assert ("✓" in walked[2].said) and "20" in walked[2].said
    assert "**" not in walked[2].said and "**" not in walked[0].said     # the Markdown rendered
    screenshot(page, f"next-lesson-{lang}")


def test_a_phone_page_fits_its_charts(new_page, app_url, screenshot):
    """At 390 px, in English, then the page's language switched: the lens redrawn in Chinese
    fits the same (the titles' and cells' texts are of another width)."""
    page = new_page("en-US", width=390, height=844)
    page.goto(f"{app_url}?view=next.lens&model=gemma-3-270m&lang=en")
    _check_phone(page, "en", screenshot)
    switch_language(page, "zh")
    _check_phone(page, "zh", screenshot)


def _check_phone(page, lang, screenshot):
    page.locator("#next-lens-summary", has_text=CHECK[lang]).wait_for(timeout=RUN_TIMEOUT)
    for elem_id in ("next-lens-heatmap", "next-lens-ranks"):
        chart = page.locator(f"#{elem_id} .js-plotly-plot")
        chart.wait_for(timeout=RUN_TIMEOUT)
        box = chart.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390 + 1, box
    assert page.evaluate("document.documentElement.scrollWidth") <= 390 + 1
    # the heatmap's cells: every token written at a readable size, within its own cell (no
    # neighbour's text over it); the titles' lines within the chart and the screen
    page.wait_for_function("() => (" + FITTED + ")().fitted", timeout=RUN_TIMEOUT)
    if lang == "zh":     # the redraw's titles, not the English ones it replaces
        page.wait_for_function("() => /[\\u4e00-\\u9fff]/.test(document.querySelector("
                               "'#next-lens-heatmap .gtitle').textContent)", timeout=RUN_TIMEOUT)
    fitted = page.evaluate(FITTED)
    assert fitted["afterplot"] == 1 and fitted["role"] == "img", fitted
    heat = page.evaluate(HEATMAP)
    print(lang, heat)
    assert heat["texts"] == heat["cells"] > 0, heat
    assert heat["minFont"] >= MIN_CELL_FONT_PX, heat
    assert heat["widest"] <= heat["cellWidth"] + 0.5, heat
    assert len(heat["titles"]) >= 3, heat                  # the heatmap's title and subtitle, the ranks'
    for title in heat["titles"]:
        assert title["left"] >= 0 and title["right"] <= min(390, title["svgRight"]) + 1, heat
        assert title["top"] >= title["svgTop"] - 1, heat
    screenshot(page, f"next-lens-phone-{lang}")


MIN_CELL_FONT_PX = 11
# The logit-lens heatmap as drawn: its cell texts (how many, their smallest font, the widest
# one's width) against its cells (count, width), and the box of every title line of the tab's
# charts.
HEATMAP = """() => {
  const gd = document.querySelector("#next-lens-heatmap .js-plotly-plot");
  const texts = [...gd.querySelectorAll(".heatmaplayer text")].filter((t) => t.textContent);
  const plot = gd.querySelector(".nsewdrag").getBoundingClientRect();
  const trace = gd.data[0];
  const titles = [...document.querySelectorAll(".gtitle, .gtitle-subtitle")]
    .filter((t) => t.closest("#next-lens-heatmap, #next-lens-ranks"))
    .map((t) => { const r = t.getBoundingClientRect();
      const svg = t.closest(".js-plotly-plot").querySelector("svg.main-svg").getBoundingClientRect();
      return {text: t.textContent, left: r.left, right: r.right, top: r.top, svgTop: svg.top,
              svgRight: svg.right}; });
  return {texts: texts.length, cells: trace.z.length * trace.z[0].length,
          minFont: Math.min(...texts.map((t) => parseFloat(getComputedStyle(t).fontSize))),
          widest: Math.max(...texts.map((t) => t.getBoundingClientRect().width)),
          cellWidth: plot.width / trace.x.length, titles};
}"""

# Which of the heatmap's cuts (layout.meta.fit) its plot area holds, whether the trace shows it,
# its text alternative as static/charts.js set it, and how many plotly_afterplot listeners it has
# (Plotly's own are kept apart, in gd._internalEv).
FITTED = """() => {
  const gd = document.querySelector("#next-lens-heatmap .js-plotly-plot");
  const fit = gd && gd.layout.meta && gd.layout.meta.fit;
  if (!fit || !gd._fullLayout) return {fitted: false};
  let pick = 0;
  fit.px.forEach((px, i) => { if (px <= gd._fullLayout._size.w) pick = i; });
  return {pick, width: gd._fullLayout._size.w,
          fitted: JSON.stringify(gd.data[0].text) === JSON.stringify(fit.text[pick]),
          label: gd.getAttribute("aria-label"), role: gd.getAttribute("role"),
          afterplot: gd._ev ? gd._ev.listeners("plotly_afterplot").length : 0};
}"""
