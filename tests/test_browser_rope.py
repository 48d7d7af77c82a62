"""The RoPE tab in a real browser (Debian Chromium): frequencies, real q/k capture, the rotating
pair, attention vs distance, a small perplexity sweep, a continuation, the optional recipes, and
the Chinese text. Screenshots go to artifacts/screenshots/rope-*.png; look at them."""
from __future__ import annotations

import re

import pytest

from tests.conftest import SCREENSHOTS

pytestmark = pytest.mark.browser

LOAD_TIMEOUT = 180_000  # ms; the first load may convert the checkpoint
RUN_TIMEOUT = 240_000   # ms; forwards on a busy 2-core CPU


def _open_rope_tab(page, app_url):
    page.goto(app_url)
    page.locator("#model-status").get_by_text(re.compile("is loaded|已加载")).wait_for(timeout=LOAD_TIMEOUT)
    page.locator("#explorer-tabs [role=tab]", has_text="RoPE").click()
    page.locator("#rope-freq-plot .js-plotly-plot").wait_for(timeout=RUN_TIMEOUT)


def _set_slider(page, elem_id: str, value) -> None:
    box = page.locator(f"#{elem_id} input[type=number]")
    box.fill(str(value))
    box.press("Enter")


def _shot(page, elem_id: str, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.locator(f"#{elem_id}").screenshot(path=str(SCREENSHOTS / f"{name}.png"))


def test_rope_tab_click_through(page, app_url, screenshot):
    page.set_viewport_size({"width": 1400, "height": 1000})
    _open_rope_tab(page, app_url)
    freq_text = page.locator("#rope-freq-text")
    freq_text.get_by_text("never do").first.wait_for()
    assert "pair 0 keeps θ₀ = 1" in freq_text.inner_text()
    # formulas are typeset by KaTeX in the Markdown, not left as raw dollars
    assert page.locator("#tab-rope .katex").count() > 5
    _shot(page, "rope-freq-plot", "rope-frequencies")

    # a base typed by the user joins the plot
    page.locator("#rope-freq-bases textarea, #rope-freq-bases input").first.fill("10000, 100k, 1M, 3M")
    page.locator("#rope-freq-run").click()
    freq_text.get_by_text("base **3M**".replace("**", "")).wait_for()

    # real q and k: Toeplitz, one-sided, real scores, then the pair figure follows
    page.locator("#rope-qk-run").click()
    result = page.locator("#rope-qk-result")
    result.get_by_text("Layer 3").wait_for(timeout=RUN_TIMEOUT)
    assert "both rotated" in result.inner_text()
    page.locator("#rope-qk-both .js-plotly-plot").wait_for()
    page.locator("#rope-qk-real .js-plotly-plot").wait_for()
    page.locator("#rope-pair-text").get_by_text(re.compile(r"Pair \d+ \(dims")).wait_for(timeout=RUN_TIMEOUT)
    _set_slider(page, "rope-pair-index", 6)
    _set_slider(page, "rope-pair-position", 40)
    page.locator("#rope-pair-text").get_by_text("At position 40").wait_for(timeout=RUN_TIMEOUT)
    assert "Pair 6 (dims 6 and 38)" in page.locator("#rope-pair-text").inner_text()
    page.locator("#rope-qk-result").scroll_into_view_if_needed()
    screenshot(page, "rope-tab-en")
    _shot(page, "rope-qk-both", "rope-toeplitz-both")
    _shot(page, "rope-qk-one", "rope-toeplitz-one-side")
    _shot(page, "rope-qk-real", "rope-real-scores")
    _shot(page, "rope-pair-plot", "rope-pair")

    page.locator("#rope-dist-run").click()
    page.locator("#rope-dist-text").get_by_text("layers").wait_for(timeout=RUN_TIMEOUT)
    page.locator("#rope-dist-plot .js-plotly-plot").wait_for()
    _shot(page, "rope-dist-plot", "rope-distance")

    # a small sweep (2 bases + trained, 256 tokens) and a continuation
    page.locator("#rope-sweep-bases textarea, #rope-sweep-bases input").first.fill("10000, 10M")
    _set_slider(page, "rope-sweep-tokens", 256)
    page.locator("#rope-sweep-run").click()
    page.locator("#rope-sweep-text").get_by_text("(trained): perplexity").wait_for(timeout=RUN_TIMEOUT)
    page.locator("#rope-sweep-plot .js-plotly-plot").wait_for()
    _shot(page, "rope-sweep-plot", "rope-sweep")
    _set_slider(page, "rope-cont-new", 8)
    page.locator("#rope-cont-run").click()
    page.locator("#rope-cont-text").get_by_text("(trained)").wait_for(timeout=RUN_TIMEOUT)
    _shot(page, "rope-cont-text", "rope-continuation")

    page.locator("#rope-scale-accordion").get_by_text("Optional: context-extension recipes").first.click()
    page.locator("#rope-scale-run").click()
    page.locator("#rope-scale-plot .js-plotly-plot").wait_for(timeout=RUN_TIMEOUT)
    _shot(page, "rope-scale-plot", "rope-scaling")
    assert "(trained)" in page.locator("#rope-cont-text").inner_text()
    screenshot(page, "rope-tab-en-full")

    # bad input: a clear error toast, and the tab keeps working
    page.locator("#rope-freq-bases textarea, #rope-freq-bases input").first.fill("1")
    page.locator("#rope-freq-run").click()
    page.get_by_text(re.compile("greater than 1")).first.wait_for()
    page.locator("#rope-freq-bases textarea, #rope-freq-bases input").first.fill("10000")
    page.locator("#rope-freq-run").click()
    freq_text.get_by_text("10k").first.wait_for()

    # every chart follows the language switch, redrawn from what the tab stored (no new run)
    page.locator("#language-switch").get_by_text("中文").click()
    page.locator("#rope-freq-plot .annotation-text", has_text="各维度对的频率").wait_for(timeout=30_000)
    page.locator("#rope-qk-both .xtitle", has_text="键的位置 n").wait_for(timeout=30_000)
    page.locator("#rope-qk-real .xtitle", has_text="键 token 的位置 n").wait_for()
    page.locator("#rope-pair-plot .xtitle", has_text="（维度 6）").wait_for()
    page.locator("#rope-dist-plot .xtitle", has_text="距离 m − n").wait_for()
    page.locator("#rope-sweep-plot .legendtext", has_text="训练值").wait_for()
    page.locator("#rope-scale-plot .annotation-text", has_text="相对于原始值的频率").wait_for()
    page.locator("#rope-qk-both").scroll_into_view_if_needed()
    screenshot(page, "rope-charts-zh")
    _shot(page, "rope-pair-plot", "rope-pair-zh")
    _shot(page, "rope-sweep-plot", "rope-sweep-zh")


def test_rope_tab_in_chinese(page, app_url, screenshot):
    _open_rope_tab(page, app_url)
    page.locator("#language-switch").get_by_text("中文").click()
    page.locator("#tab-rope").get_by_text("旋转位置编码（RoPE）实测").wait_for()
    page.locator("#rope-freq-text").get_by_text("一圈也转不完").first.wait_for(timeout=RUN_TIMEOUT)
    screenshot(page, "rope-tab-zh")
    page.locator("#language-switch").get_by_text("English").click()
    page.locator("#tab-rope").get_by_text("Rotary position embedding, measured").wait_for()


def test_rope_tab_on_gemma_follows_the_model(page, app_url):
    page.set_viewport_size({"width": 1400, "height": 1000})
    _open_rope_tab(page, app_url)
    page.locator("#model-picker input").click()
    page.get_by_role("option", name="Gemma 3 270M (base)").click()
    page.locator("#model-status", has_text="18 layers").wait_for(timeout=LOAD_TIMEOUT)
    # the layer slider follows the model (18 layers: 0..17), head dim 256 in the frequency form
    page.locator("#rope-qk-layer").get_by_text("17").first.wait_for(timeout=RUN_TIMEOUT)
    assert page.locator("#rope-freq-dim input").input_value() == "256"
    _set_slider(page, "rope-qk-layer", 5)
    page.locator("#rope-qk-run").click()
    result = page.locator("#rope-qk-result")
    result.get_by_text("Layer 5 (full attention, base 1M)").wait_for(timeout=RUN_TIMEOUT)
    page.locator("#rope-pair-text").get_by_text(re.compile(r"Pair \d+ \(dims")).wait_for(timeout=RUN_TIMEOUT)
    _shot(page, "rope-qk-both", "rope-gemma-toeplitz-both")
    _shot(page, "rope-pair-plot", "rope-gemma-pair")
    _set_slider(page, "rope-qk-layer", 0)
    page.locator("#rope-qk-run").click()
    result.get_by_text("Layer 0 (sliding window 512, base 10k)").wait_for(timeout=RUN_TIMEOUT)
    _shot(page, "rope-qk-real", "rope-gemma-real-scores")
