"""The Attention tab in a real browser (Debian Chromium): run a map, change the mask, pick a head,
the tiled path measured against the eager one, measure sinks, probe the receptive field, stop a
long StreamingLLM run, a short one, Chinese. Screenshots go to
artifacts/screenshots/attention-*.png; look at them after a layout change."""
from __future__ import annotations

import re
import time

import pytest

from tests.conftest import SCREENSHOTS
from tests.helpers import switch_language, type_number

pytestmark = pytest.mark.browser

LOAD_TIMEOUT = 180_000   # ms; the first load may convert the checkpoint
RUN_TIMEOUT = 240_000    # ms; a forward on a busy 2-core machine
GRID_CELLS = 128         # explorer.attention.maps.GRID_CELLS


def _open_tab(page, app_url):
    page.goto(app_url)
    page.locator("#model-status").get_by_text(re.compile("is loaded|已加载")).wait_for(timeout=LOAD_TIMEOUT)
    page.locator("#explorer-tabs [role=tab]", has_text=re.compile("^(Attention|注意力)$")).click()
    page.locator("#attention-run").wait_for()
    # the model's controls (head groups, local/global) are filled on load
    _section(page, "groups")
    page.locator("#attention-groups-summary", has_text=re.compile("query heads|查询头")).wait_for(
        timeout=RUN_TIMEOUT)
    _section(page, "map")


SECTIONS = {"map": ("Maps and masks", "注意力图与掩码"), "groups": ("Head groups (GQA)", "头分组（GQA）"),
            "sinks": ("Attention sinks", "注意力汇"), "stream": ("StreamingLLM", "StreamingLLM"),
            "rf": ("Receptive field", "感受野"), "lg": ("Local vs global", "局部层与全局层")}


def _section(page, name):
    """Open one experiment's sub-tab of the Attention tab (either language)."""
    labels = "|".join(re.escape(label) for label in SECTIONS[name])
    page.locator("#explorer-tabs [role=tab]", has_text=re.compile(f"^({labels})$")).click()


def test_attention_tab_end_to_end(page, app_url, screenshot):
    _open_tab(page, app_url)
    page.locator("#attention-run").click()
    summary = page.locator("#attention-summary")
    summary.get_by_text("Row sums").wait_for(timeout=RUN_TIMEOUT)
    text = summary.inner_text()
    assert "Layer 3" in text and "outside the mask: 0" in text
    page.locator("#attention-map .js-plotly-plot").wait_for()
    page.locator("#attention-mask-plot .js-plotly-plot").wait_for()
    screenshot(page, "attention-causal-all-heads")

    # one head, sinks + window: the mask radio reruns the model by itself
    page.locator("#attention-head input").click()
    page.get_by_role("option", name="0", exact=True).click()
    # redrawn from the stored probabilities, no forward pass
    page.locator("#attention-map .gtitle", has_text="head 0: attention probabilities").wait_for(timeout=30_000)
    type_number(page, "attention-window", 6)
    type_number(page, "attention-sinks", 1)
    page.locator("#attention-mask").get_by_text("sinks s + window w").click()
    summary.get_by_text("1 sink + window 6").first.wait_for(timeout=RUN_TIMEOUT)
    text = summary.inner_text()
    assert "outside the mask: 0" in text and "non-zero: yes" in text
    assert float(re.search(r"KL\(unmodified ‖ masked\) = ([0-9.]+)", text).group(1)) > 0
    page.locator("#attention-next-tokens").get_by_text("p with this mask").wait_for()
    page.locator("#attention-map").scroll_into_view_if_needed()
    screenshot(page, "attention-sinks-window-head0")

    # the tiled path: its map is compared with the eager one on the same request
    page.locator("#attention-impl").get_by_text("tiled", exact=True).click()
    page.locator("#attention-run").click()
    summary.get_by_text("Tiled vs eager path").wait_for(timeout=RUN_TIMEOUT)
    text = summary.inner_text()
    assert "the same map" in text and re.search(r"\d\.\d\d s, the eager one \d\.\d\d s", text)
    page.locator("#attention-summary").scroll_into_view_if_needed()
    screenshot(page, "attention-tiled-vs-eager")

    # sinks grid with a sink logit
    _section(page, "sinks")
    type_number(page, "sink-tokens", 64)
    page.locator("#sink-use-logit input").check()
    page.locator("#sink-run").click()
    page.locator("#sink-summary").get_by_text("absorbs").wait_for(timeout=RUN_TIMEOUT)
    # the verdict on token 0 is chosen from the measured grid (with b = 2 the logit absorbs
    # what token 0 held)
    assert re.search(r"Sinks measured:|No clear sink here:", page.locator("#sink-summary").inner_text())
    page.locator("#sink-absorbed .js-plotly-plot").wait_for()
    page.locator("#sink-first").scroll_into_view_if_needed()
    screenshot(page, "attention-sinks-grid")

    # receptive field with a forced window
    _section(page, "rf")
    type_number(page, "rf-tokens", 40)
    type_number(page, "rf-window", 2)
    page.locator("#rf-run").click()
    page.locator("#rf-summary").get_by_text("distances agree").wait_for(timeout=RUN_TIMEOUT)
    rf_text = page.locator("#rf-summary").inner_text()
    agree = re.search(r"(\d+) of (\d+) distances agree", rf_text)
    assert agree and agree.group(1) == agree.group(2)
    assert "distance 31 does not: 31 tokens" in rf_text
    assert "131041" in page.locator("#rf-reach").inner_text().replace(",", "")
    page.locator("#rf-plot").scroll_into_view_if_needed()
    screenshot(page, "attention-receptive-field")

    # a short StreamingLLM run (the full one takes minutes)
    _section(page, "stream")
    type_number(page, "stream-tokens", 192)
    type_number(page, "stream-window", 48)
    type_number(page, "stream-sinks", 2)
    page.locator("#stream-run").click()
    page.locator("#stream-summary").get_by_text("Measured:").wait_for(timeout=RUN_TIMEOUT)
    assert "Python Software Foundation" in page.locator("#stream-source").inner_text()
    page.locator("#stream-plot").scroll_into_view_if_needed()
    screenshot(page, "attention-streaming-short")

    # the measured text follows the language switch
    switch_language(page, "zh")
    page.locator("#stream-summary", has_text="实测").wait_for(timeout=RUN_TIMEOUT)
    page.locator("#stream-plot .gtitle", has_text="沿文本的困惑度").wait_for(timeout=30_000)
    page.locator("#stream-plot").screenshot(path=str(SCREENSHOTS / "attention-zh-streaming.png"))
    # and so do the map and the mask, redrawn from the stored probabilities (head 0 still)
    _section(page, "map")
    page.locator("#attention-summary", has_text="行和").wait_for(timeout=RUN_TIMEOUT)
    page.locator("#attention-map .gtitle", has_text="第 0 个头：注意力概率").wait_for(timeout=30_000)
    page.locator("#attention-mask-plot .gtitle", has_text="的掩码").wait_for()
    page.locator("#attention-next-tokens").get_by_text("p（此掩码下）").wait_for()
    page.locator("#explorer-tabs").scroll_into_view_if_needed()
    screenshot(page, "attention-zh")
    page.locator("#attention-map").scroll_into_view_if_needed()
    screenshot(page, "attention-zh-map")
    _section(page, "groups")
    page.locator("#attention-groups .gtitle", has_text="个查询头共用").wait_for(timeout=30_000)
    screenshot(page, "attention-zh-groups")
    _section(page, "lg")
    page.locator("#lg-plot .gtitle", has_text="每层（所有头）的查询-键分数数").wait_for()
    screenshot(page, "attention-zh-local-global")
    # the measured charts too, redrawn from the stored sink masses, curves and probe
    _section(page, "sinks")
    page.locator("#sink-first .gtitle", has_text="第一个 token 上的质量").wait_for(timeout=30_000)
    page.locator("#sink-absorbed .gtitle", has_text="汇 logit b = 2 吸收的质量").wait_for()
    page.locator("#sink-first").screenshot(path=str(SCREENSHOTS / "attention-zh-sinks.png"))
    _section(page, "rf")
    page.locator("#rf-plot .gtitle", has_text="最后一个位置的隐藏状态的变化").wait_for()
    page.locator("#rf-plot").screenshot(path=str(SCREENSHOTS / "attention-zh-receptive-field.png"))


def test_gemma_local_global_and_groups(page, app_url, screenshot):
    _open_tab(page, app_url)
    page.locator("#model-picker input").click()
    page.get_by_role("option", name=re.compile("Gemma")).click()
    _section(page, "groups")
    page.locator("#attention-groups-summary", has_text="4 query heads, 1 KV head").wait_for(
        timeout=LOAD_TIMEOUT)
    screenshot(page, "attention-gemma-groups")
    _section(page, "lg")
    page.locator("#lg-summary", has_text="15 local layers").wait_for(timeout=RUN_TIMEOUT)
    screenshot(page, "attention-gemma-local-global")
    _section(page, "map")

    # a long prompt: the all-heads grid is pooled for display, the summary checks the full map
    from explorer.texts import long_text

    page.locator("#attention-prompt textarea").fill(long_text()[:1400])
    page.locator("#attention-run").click()
    summary = page.locator("#attention-summary")
    summary.get_by_text("Row sums").wait_for(timeout=RUN_TIMEOUT)
    n_tokens = int(re.search(r"(\d+) tokens", summary.inner_text()).group(1))
    assert n_tokens > GRID_CELLS and "non-zero: yes" in summary.inner_text()
    page.locator("#attention-map .gtitle", has_text="shown as means of").wait_for()
    page.locator("#attention-map").scroll_into_view_if_needed()
    screenshot(page, "attention-gemma-long-prompt")


def test_a_long_streaming_run_stops_after_the_forward_under_way(page, app_url, screenshot):
    """Stop during a long StreamingLLM run: the progress line shows the forwards made, Stop
    replaces it with "Stopped." and no further progress arrives."""
    _open_tab(page, app_url)
    _section(page, "stream")
    type_number(page, "stream-tokens", 2048)
    page.locator("#stream-run").click()
    status = page.locator("#stream-status")
    status.get_by_text(re.compile(r"forward pass [1-9]\d* of \d+")).wait_for(timeout=RUN_TIMEOUT)
    total = int(re.search(r"of (\d+)", status.inner_text()).group(1))
    page.locator("#stream-stop").click()
    status.get_by_text("Stopped.").wait_for(timeout=30_000)
    time.sleep(5)
    assert "Stopped." in status.inner_text() and "Running" not in status.inner_text()
    assert total == 3 * 8                      # 3 policies x 2048 / 256 tokens per forward
    assert "Perplexity over positions" not in page.locator("#stream-summary").inner_text()
    status.scroll_into_view_if_needed()
    screenshot(page, "attention-streaming-stopped")
