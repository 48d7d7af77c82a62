"""The MoE tab in a real browser (Debian Chromium), in English and Chinese: routing heatmap,
the three routers' load, expert preferences, the parameter calculator, time against k, the
what-if, a bad input, and the language switch. Served with the shipped explorer-moe models
only. Screenshots go to artifacts/screenshots/moe-*.png; look at them."""
from __future__ import annotations

import re

import pytest
import torch

from tests.conftest import SCREENSHOTS
from tests.helpers import switch_language, type_number

pytestmark = pytest.mark.browser

# ms; forwards on a busy 2-core CPU. Every wait for what a run draws has this bound, not the
# page's default 30 s: a plot's frame may be there before its run, its traces come with the run.
RUN_TIMEOUT = 120_000


@pytest.fixture(scope="module")
def moe_app_url(serve):
    from explorer.checkpoints import shipped
    from explorer.runtime import Runtime

    entries = shipped.shipped_entries()
    runtime = Runtime(device="cpu", dtype=torch.float32, registry=entries,
                      prepare=lambda name, progress=None: entries[name].prepare(progress))
    with serve(("explorer.ui.tabs.moe",), runtime=runtime) as served:
        yield served.url


def _shot(page, elem_id: str, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.locator(f"#{elem_id}").screenshot(path=str(SCREENSHOTS / f"{name}.png"))


def _section(page, title: str) -> None:
    page.get_by_role("tab", name=title).click()


def test_moe_tab_click_through(page, moe_app_url, screenshot):
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(moe_app_url)
    page.locator("#explorer-tabs [role=tab]", has_text="MoE routing").click()
    page.locator("#moe-route-run").click()
    summary = page.locator("#moe-route-summary")
    summary.get_by_text("nats/token").wait_for(timeout=RUN_TIMEOUT)
    assert re.search(r"\d+ tokens, next-token loss \d\.\d{3}", summary.inner_text())
    page.locator("#moe-heatmap .js-plotly-plot").wait_for(timeout=RUN_TIMEOUT)
    assert page.locator("#tab-moe .katex").count() > 0  # formulas typeset, not raw dollars
    _shot(page, "moe-heatmap", "moe-heatmap-en")

    _section(page, "Load balance (three routers)")
    page.locator("#moe-load-run").click()
    page.locator("#moe-load-plot .js-plotly-plot").wait_for(timeout=RUN_TIMEOUT)
    page.locator("#moe-load-plot .legendtext", has_text="no balancing, held-out files").wait_for(
        timeout=RUN_TIMEOUT)
    page.locator("#moe-share-plot .js-plotly-plot").wait_for(timeout=RUN_TIMEOUT)
    _shot(page, "moe-load-plot", "moe-load-en")
    _shot(page, "moe-share-plot", "moe-shares-en")

    _section(page, "What experts prefer")
    page.locator("#moe-pref-run").click()
    page.locator("#moe-kinds-plot .js-plotly-plot").wait_for(timeout=RUN_TIMEOUT)
    page.locator("#moe-pref-table").get_by_text("example in context").wait_for(timeout=RUN_TIMEOUT)
    _shot(page, "moe-kinds-plot", "moe-kinds-en")
    _shot(page, "moe-pref-table", "moe-preferences-en")

    _section(page, "Total vs active parameters")
    page.locator("#moe-params-table").get_by_text("Mixtral 8x7B").wait_for(timeout=RUN_TIMEOUT)
    assert "46.70 B" in page.locator("#moe-params-table").inner_text()
    _shot(page, "moe-params-plot", "moe-params-en")

    _section(page, "Time per token vs k")
    page.locator("#moe-cost-run").click()
    page.locator("#moe-cost-summary").get_by_text("ms per token").wait_for(timeout=RUN_TIMEOUT)
    _shot(page, "moe-cost-plot", "moe-cost-en")

    _section(page, "What-if: another k, no bias")
    # typed until the box holds it: the section's first mount can put the initial k back
    type_number(page, "moe-whatif-k", 4)
    page.locator("#moe-whatif-run").click()
    page.locator("#moe-whatif-summary").get_by_text("Changed (k = 4").wait_for(timeout=RUN_TIMEOUT)
    _shot(page, "moe-whatif-plot", "moe-whatif-en")
    screenshot(page, "moe-tab-en")

    # a bad input: a clear error, and the tab keeps working
    _section(page, "Routing heatmap")
    type_number(page, "moe-layer", 9)
    page.locator("#moe-route-run").click()
    page.get_by_text(re.compile("Layer must be between 0 and 3, got 9")).first.wait_for(timeout=RUN_TIMEOUT)

    # the language switch redraws the stored results in Chinese, no new run
    switch_language(page, "zh")
    page.locator("#moe-heatmap .gtitle", has_text="路由概率").wait_for(timeout=RUN_TIMEOUT)
    page.locator("#moe-route-summary").get_by_text("nats/词元").wait_for(timeout=RUN_TIMEOUT)
    _shot(page, "moe-heatmap", "moe-heatmap-zh")


def test_moe_tab_in_chinese(new_page, moe_app_url, screenshot):
    page = new_page("zh-CN", width=1400, height=1000)
    page.goto(moe_app_url)
    page.locator("#explorer-tabs [role=tab]", has_text="MoE 路由").click()
    page.locator("#tab-moe").get_by_text("混合专家模型（MoE），实时运行").wait_for(timeout=RUN_TIMEOUT)
    page.locator("#moe-route-run").click()
    page.locator("#moe-route-summary").get_by_text("nats/词元").wait_for(timeout=RUN_TIMEOUT)
    page.get_by_role("tab", name="负载均衡（三种路由器）").click()
    page.locator("#moe-load-run").click()
    page.locator("#moe-load-plot .legendtext", has_text="不做均衡，留出文件").wait_for(timeout=RUN_TIMEOUT)
    _shot(page, "moe-load-plot", "moe-load-zh")
    screenshot(page, "moe-tab-zh")
