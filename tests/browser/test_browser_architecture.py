"""The Architecture tab in a real browser (Debian Chromium), in English and in Chinese: the four
blocks read from tensors, pre/post-norm gradients and the cached training curves, MLA's cache and
the RoPE-folding residual, a bad input's error in each language, the language switch redrawing
the charts, and a run on the Chinese page written in Chinese (one page: the runs made in
English are redrawn in Chinese, not run again).
Screenshots go to artifacts/screenshots/architecture-*.png; look at them after a layout change."""
from __future__ import annotations

import re

import pytest

from tests.conftest import SCREENSHOTS
from tests.helpers import switch_language, type_number

pytestmark = pytest.mark.browser

LOAD_TIMEOUT = 180_000   # ms; the first load may convert a checkpoint
RUN_TIMEOUT = 240_000    # ms; both checkpoints loaded on a busy 2-core machine

SECTIONS = {"blocks": ("Blocks side by side (C18)", "模块并排对照（C18）"),
            "norm": ("Pre-norm vs post-norm (C19)", "前置归一化与后置归一化（C19）"),
            "mla": ("Latent attention (C6, C7)", "潜在注意力（C6、C7）")}


def _open_tab(page, app_url):
    page.goto(app_url)
    page.locator("#model-status").get_by_text(re.compile("is loaded|已加载")).wait_for(timeout=LOAD_TIMEOUT)
    page.locator("#explorer-tabs [role=tab]", has_text=re.compile("^(Architecture|架构)$")).click()
    page.locator("#arch-blocks-run").wait_for()


def _section(page, name):
    labels = "|".join(re.escape(label) for label in SECTIONS[name])
    page.locator("#explorer-tabs [role=tab]", has_text=re.compile(f"^({labels})$")).click()


def _shot(page, elem_id: str, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.locator(f"#{elem_id}").scroll_into_view_if_needed()
    page.locator(f"#{elem_id}").screenshot(path=str(SCREENSHOTS / f"{name}.png"))


def test_architecture_tab_in_english_then_in_chinese(new_page, app_url, screenshot):
    page = new_page("en-US", width=1400, height=1000)
    _open_tab(page, app_url)

    page.locator("#arch-blocks-run").click()
    summary = page.locator("#arch-blocks-text")
    summary.get_by_text("Gemma 3 270M (base)").wait_for(timeout=RUN_TIMEOUT)
    # each loaded model (SmolLM2, Gemma 3): its tensors' line and C18's verdict, all 8 facts held
    assert summary.inner_text().count("no bias tensor") == 4
    assert summary.inner_text().count("All 8 changes the claim lists hold") == 2
    page.locator("#arch-blocks-diagram .js-plotly-plot").wait_for()
    table = page.locator("#arch-blocks-table")
    table.get_by_text("4 + QK").first.wait_for()
    table.get_by_text("124,439,808").first.wait_for()
    _shot(page, "arch-blocks-diagram", "architecture-blocks-diagram")
    _shot(page, "arch-blocks-table", "architecture-blocks-table")
    _shot(page, "arch-blocks-params", "architecture-blocks-params")

    _section(page, "norm")
    page.locator("#arch-train-text").get_by_text("held-out loss").wait_for(timeout=RUN_TIMEOUT)
    page.locator("#arch-norm-run").click()
    page.locator("#arch-norm-text").get_by_text("48 layers").wait_for(timeout=RUN_TIMEOUT)
    assert page.locator("#tab-architecture .katex").count() > 0    # formulas typeset
    _shot(page, "arch-norm-plot", "architecture-norm-init")
    _shot(page, "arch-train-plot", "architecture-norm-training")

    # a bad depth: a clear error, then the section works again
    page.locator("#arch-norm-depths textarea, #arch-norm-depths input").first.fill("6, twelve")
    page.locator("#arch-norm-run").click()
    page.get_by_text(re.compile("not a whole number of layers")).first.wait_for()
    page.locator("#arch-norm-depths textarea, #arch-norm-depths input").first.fill("4, 8")
    page.locator("#arch-norm-run").click()
    page.locator("#arch-norm-text").get_by_text("8 layers").wait_for(timeout=RUN_TIMEOUT)

    _section(page, "mla")
    page.locator("#arch-mla-run").click()
    page.locator("#arch-mla-text").get_by_text("2.25 KV heads").wait_for(timeout=RUN_TIMEOUT)
    page.locator("#arch-fold-run").click()
    page.locator("#arch-fold-text").get_by_text(re.compile("leaves")).wait_for(timeout=RUN_TIMEOUT)
    _shot(page, "arch-mla-plot", "architecture-mla-cache")
    _shot(page, "arch-fold-plot", "architecture-mla-fold")
    screenshot(page, "architecture-mla-en")

    # the language switch redraws every stored result in Chinese, without a new run
    switch_language(page, "zh")
    page.locator("#tab-architecture").get_by_text("从 2017 年的 Transformer 到今天的模块").wait_for()
    page.locator("#arch-fold-text").get_by_text("最小二乘解").wait_for(timeout=30_000)
    page.locator("#arch-mla-plot .annotation-text", has_text="每个 token 每层缓存的数值个数").wait_for()
    # a bad input, answered in Chinese
    type_number(page, "arch-fold-d-k", 63)
    page.locator("#arch-fold-run").click()
    page.get_by_text(re.compile("键宽度必须是偶数")).first.wait_for()
    screenshot(page, "architecture-zh-mla")
    _section(page, "blocks")
    page.locator("#arch-blocks-table").get_by_text("每个模块的归一化数").wait_for(timeout=30_000)
    page.locator("#arch-blocks-diagram").get_by_text("从已加载的权重读出").first.wait_for()
    page.locator("#arch-blocks-text").get_by_text("没有任何偏置张量").first.wait_for()
    screenshot(page, "architecture-zh-blocks")
    _shot(page, "arch-blocks-diagram", "architecture-zh-blocks-diagram")
    _section(page, "norm")
    page.locator("#arch-norm-plot .annotation-text", has_text="前置归一化").first.wait_for(timeout=30_000)
    page.locator("#arch-train-text").get_by_text("验证损失").wait_for()
    # a run made on the Chinese page is written in Chinese
    page.locator("#arch-norm-depths textarea, #arch-norm-depths input").first.fill("6, 12")
    page.locator("#arch-norm-run").click()
    page.locator("#arch-norm-text").get_by_text("12 层").wait_for(timeout=RUN_TIMEOUT)
    screenshot(page, "architecture-zh-norm")

