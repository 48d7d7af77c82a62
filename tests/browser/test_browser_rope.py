"""The RoPE tab in a real browser (Debian Chromium): frequencies, real q/k capture, the rotating
pair, attention vs distance, a small perplexity sweep, a continuation, the optional recipes, and
the Chinese text. Screenshots go to artifacts/screenshots/rope-*.png; look at them."""
from __future__ import annotations

import re

import pytest

from tests.conftest import SCREENSHOTS
from tests.helpers import switch_language, type_number

pytestmark = pytest.mark.browser

LOAD_TIMEOUT = 180_000  # ms; the first load may convert the checkpoint
RUN_TIMEOUT = 240_000   # ms; forwards on a busy 2-core CPU


def _open_rope_tab(page, app_url):
    page.goto(app_url)
    page.locator("#model-status").get_by_text(re.compile("is loaded|已加载")).wait_for(timeout=LOAD_TIMEOUT)
    page.locator("#explorer-tabs [role=tab]", has_text="RoPE").click()
    page.locator("#rope-freq-plot .js-plotly-plot").wait_for(timeout=RUN_TIMEOUT)


# The tab's sections (sub-tabs), in order: English and Chinese titles, screenshot names.
SECTIONS = [("Frequencies", "频率", "freq"), ("Real q and k", "真实的 q 和 k", "qk"),
            ("One pair rotating", "一对维度的旋转", "pair"), ("Attention vs distance", "注意力与距离", "distance"),
            ("Changing the base", "改变 base", "base"), ("Continuation", "续写", "continuation"),
            ("Context extension", "上下文扩展", "scaling")]


def _section(page, title: str) -> None:
    """Open one section of the RoPE tab (a sub-tab; only the open one is rendered)."""
    page.locator("#tab-rope [role=tab]", has_text=title).first.click()


def _shot(page, elem_id: str, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.locator(f"#{elem_id}").screenshot(path=str(SCREENSHOTS / f"{name}.png"))


def test_rope_tab_click_through(page, app_url, screenshot):
    page.set_viewport_size({"width": 1400, "height": 1000})
    _open_rope_tab(page, app_url)
    freq_text = page.locator("#rope-freq-text")
    freq_text.get_by_text("never do").first.wait_for()
    assert "Computed from the formula" in freq_text.inner_text()
    assert "other pairs slow down" in freq_text.inner_text()
    # the loaded model's bases come from its config, in the section and in the table
    page.locator("#rope-freq-model").get_by_text("read from its config").wait_for(timeout=RUN_TIMEOUT)
    assert "base 100k on its 30 full-attention layers" in page.locator("#rope-freq-model").inner_text()
    from playwright.sync_api import expect

    expect(page.locator("#rope-freq-table")).to_contain_text("SmolLM2-135M-Instruct: full-attention layers (its config)")
    # formulas are typeset by KaTeX in the Markdown, not left as raw dollars
    assert page.locator("#tab-rope .katex").count() > 5
    _shot(page, "rope-freq-plot", "rope-frequencies")

    # a base typed by the user joins the plot
    page.locator("#rope-freq-bases textarea, #rope-freq-bases input").first.fill("10000, 100k, 1M, 3M")
    page.locator("#rope-freq-run").click()
    freq_text.get_by_text("base **3M**".replace("**", "")).wait_for()

    screenshot(page, "rope-section-freq-en")

    # real q and k: Toeplitz, one-sided, real scores, then the pair figure follows
    _section(page, "Real q and k")
    page.locator("#rope-qk-run").click()
    result = page.locator("#rope-qk-result")
    result.get_by_text("Layer 3").wait_for(timeout=RUN_TIMEOUT)
    assert "both rotated" in result.inner_text()
    assert "Both rotated: constant along every diagonal." in result.inner_text()
    assert "Only q rotated: the absolute position remains." in result.inner_text()
    page.locator("#rope-qk-both .js-plotly-plot").wait_for()
    page.locator("#rope-qk-real .js-plotly-plot").wait_for()
    screenshot(page, "rope-section-qk-en")
    _shot(page, "rope-qk-both", "rope-toeplitz-both")
    _shot(page, "rope-qk-one", "rope-toeplitz-one-side")
    _shot(page, "rope-qk-real", "rope-real-scores")
    _section(page, "One pair rotating")
    page.locator("#rope-pair-text").get_by_text(re.compile(r"Pair \d+ \(dims")).wait_for(timeout=RUN_TIMEOUT)
    type_number(page, "rope-pair-index", 6)
    type_number(page, "rope-pair-position", 40)
    page.locator("#rope-pair-text").get_by_text("At position 40").wait_for(timeout=RUN_TIMEOUT)
    assert "Pair 6 (dims 6 and 38)" in page.locator("#rope-pair-text").inner_text()
    screenshot(page, "rope-section-pair-en")
    _shot(page, "rope-pair-plot", "rope-pair")

    _section(page, "Attention vs distance")
    page.locator("#rope-dist-run").click()
    page.locator("#rope-dist-text").get_by_text("layers").wait_for(timeout=RUN_TIMEOUT)
    page.locator("#rope-dist-plot .js-plotly-plot").wait_for()
    _shot(page, "rope-dist-plot", "rope-distance")
    screenshot(page, "rope-section-distance-en")
    _section(page, "Changing the base")
    assert "base 100k on its 30 full-attention layers" in page.locator("#rope-base-model").inner_text()

    # a small sweep (2 bases + trained, 256 tokens) and a continuation
    page.locator("#rope-sweep-bases textarea, #rope-sweep-bases input").first.fill("10000, 10M")
    type_number(page, "rope-sweep-tokens", 256)
    page.locator("#rope-sweep-run").click()
    page.locator("#rope-sweep-text").get_by_text("(trained): perplexity").wait_for(timeout=RUN_TIMEOUT)
    assert "raised the perplexity" in page.locator("#rope-sweep-text").inner_text()
    page.locator("#rope-sweep-plot .js-plotly-plot").wait_for()
    _shot(page, "rope-sweep-plot", "rope-sweep")
    screenshot(page, "rope-section-base-en")
    _section(page, "Continuation")
    type_number(page, "rope-cont-new", 8)
    page.locator("#rope-cont-run").click()
    page.locator("#rope-cont-text").get_by_text("The two continuations agree").wait_for(timeout=RUN_TIMEOUT)
    _shot(page, "rope-cont-text", "rope-continuation")
    assert "(trained)" in page.locator("#rope-cont-text").inner_text()
    screenshot(page, "rope-section-continuation-en")

    # Stop: a long sweep is cancelled between two forwards and says so (last of the model runs:
    # the forward under way when Stop is pressed still finishes on the server)
    _section(page, "Changing the base")
    page.locator("#rope-sweep-bases textarea, #rope-sweep-bases input").first.fill("1e4, 1e6, 1e7, 1e8, 1e9")
    page.locator("#rope-sweep-run").click()
    page.locator("#rope-sweep-text").get_by_text("forward 1 of 6").wait_for(timeout=RUN_TIMEOUT)
    page.locator("#rope-sweep-stop").click()
    page.locator("#rope-sweep-note").get_by_text("Stopped.").wait_for(timeout=RUN_TIMEOUT)
    screenshot(page, "rope-section-base-stopped-en")
    # the stopped sweep left no chart of the sweep before it (its first message cleared them)
    assert page.locator("#rope-sweep-plot .js-plotly-plot").count() == 0
    assert "perplexity" not in page.locator("#rope-sweep-text").inner_text()
    # a finished sweep again, for the language switch below
    page.locator("#rope-sweep-bases textarea, #rope-sweep-bases input").first.fill("10000, 10M")
    page.locator("#rope-sweep-run").click()
    page.locator("#rope-sweep-text").get_by_text("(trained): perplexity").wait_for(timeout=RUN_TIMEOUT)
    assert page.locator("#rope-sweep-note").inner_text().strip() == ""

    _section(page, "Context extension")
    page.locator("#rope-scale-run").click()
    page.locator("#rope-scale-plot .js-plotly-plot").wait_for(timeout=RUN_TIMEOUT)
    _shot(page, "rope-scale-plot", "rope-scaling")
    screenshot(page, "rope-section-scaling-en")

    # bad input: a clear error toast, and the tab keeps working
    _section(page, "Frequencies")
    page.locator("#rope-freq-bases textarea, #rope-freq-bases input").first.fill("1")
    page.locator("#rope-freq-run").click()
    page.get_by_text(re.compile("greater than 1")).first.wait_for()
    page.locator("#rope-freq-bases textarea, #rope-freq-bases input").first.fill("10000")
    page.locator("#rope-freq-run").click()
    freq_text.get_by_text("10k").first.wait_for()

    # every chart follows the language switch, redrawn from what the tab stored (no new run)
    switch_language(page, "zh")
    page.locator("#rope-freq-plot .annotation-text", has_text="各维度对的频率").wait_for(timeout=30_000)
    page.locator("#rope-freq-table").get_by_text("谁在用").first.wait_for()
    screenshot(page, "rope-section-freq-zh")
    checks = {
        "qk": [("#rope-qk-both .xtitle", "键的位置 n"), ("#rope-qk-real .xtitle", "键 token 的位置 n"),
               ("#rope-qk-result", "第 3 层"), ("#rope-qk-result", "每条对角线都是常数")],
        "pair": [("#rope-pair-plot .xtitle", "（维度 6）"), ("#rope-pair-text", "第 6 对")],
        "distance": [("#rope-dist-plot .xtitle", "距离 m − n")],
        "base": [("#rope-sweep-plot .legendtext", "训练值"), ("#rope-sweep-table", "困惑度"),
                 ("#rope-sweep-text", "困惑度上升"), ("#rope-base-model", "从其配置读出")],
        "continuation": [("#rope-cont-text", "贪心续写")],
        "scaling": [("#rope-scale-plot .annotation-text", "相对于原始值的频率")],
    }
    for _, chinese, name in SECTIONS[1:]:
        _section(page, chinese)
        for selector, words in checks[name]:
            page.locator(selector).get_by_text(words).first.wait_for(timeout=30_000)
        screenshot(page, f"rope-section-{name}-zh")
    _section(page, "一对维度的旋转")
    _shot(page, "rope-pair-plot", "rope-pair-zh")
    _section(page, "改变 base")
    _shot(page, "rope-sweep-plot", "rope-sweep-zh")
    # the switch redrew the stored sweep and dropped the English "Stopped." note
    assert page.locator("#rope-sweep-note").inner_text().strip() == ""


def test_rope_tab_in_chinese(page, app_url, screenshot):
    _open_rope_tab(page, app_url)
    switch_language(page, "zh")
    page.locator("#tab-rope").get_by_text("旋转位置编码（RoPE）实测").wait_for()
    page.locator("#rope-freq-text").get_by_text("一圈也转不完").first.wait_for(timeout=RUN_TIMEOUT)
    screenshot(page, "rope-tab-zh")
    switch_language(page, "en")
    page.locator("#tab-rope").get_by_text("Rotary position embedding, measured").wait_for()


def test_rope_tab_on_gemma_follows_the_model(page, app_url):
    page.set_viewport_size({"width": 1400, "height": 1000})
    _open_rope_tab(page, app_url)
    page.locator("#model-picker input").click()
    page.get_by_role("option", name="Gemma 3 270M (base)").click()
    page.locator("#model-status", has_text="18 layers").wait_for(timeout=LOAD_TIMEOUT)
    # the layer slider follows the model (18 layers: 0..17), head dim 256 in the frequency form
    from playwright.sync_api import expect

    expect(page.locator("#rope-freq-dim input")).to_have_value("256", timeout=RUN_TIMEOUT)
    _section(page, "Real q and k")
    page.locator("#rope-qk-layer").get_by_text("17").first.wait_for(timeout=RUN_TIMEOUT)
    type_number(page, "rope-qk-layer", 5)
    page.locator("#rope-qk-run").click()
    result = page.locator("#rope-qk-result")
    result.get_by_text("Layer 5 (causal, base 1M)").wait_for(timeout=RUN_TIMEOUT)
    _shot(page, "rope-qk-both", "rope-gemma-toeplitz-both")
    _section(page, "One pair rotating")
    page.locator("#rope-pair-text").get_by_text(re.compile(r"Pair \d+ \(dims")).wait_for(timeout=RUN_TIMEOUT)
    _shot(page, "rope-pair-plot", "rope-gemma-pair")
    _section(page, "Real q and k")
    type_number(page, "rope-qk-layer", 0)
    page.locator("#rope-qk-run").click()
    result.get_by_text("Layer 0 (sliding window 512, base 10k)").wait_for(timeout=RUN_TIMEOUT)
    _shot(page, "rope-qk-real", "rope-gemma-real-scores")
