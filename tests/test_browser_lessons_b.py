"""Five lessons walked in a real browser (Debian Chromium), first step to last, alternating
languages: RoPE (en), mixture of experts (zh), FlashAttention (en), the modern block (zh), the
claims board (en). Each predict step gets a guess; each quoted number is checked against the
section on the page or against a reading computed in-process with the step's deterministic
settings (the same handlers, the same model). The claims board's real run takes minutes on a
shared CPU, so its lesson is walked on an app serving the fast fake board
(tests/test_claims_fakes.py, as tests/test_browser_claims.py does); its counts are checked
against the board the served process kept (board.CACHE) and the board's summary on the page.
Screenshots: artifacts/screenshots/lesson-<key>-<lang>.png."""
from __future__ import annotations

import math
import re

import pytest

from explorer.lessons import LESSONS, reading
from explorer.locales import template, text
from tests.conftest import SCREENSHOTS
from tests.lesson_walk import walk

pytestmark = pytest.mark.browser


def _shot(page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), timeout=120_000)


def _page(new_page, lang: str):
    return new_page("en-US" if lang == "en" else "zh-CN", width=1400, height=1000)


def _step(key: str, index: int):
    return LESSONS[key].steps[index]


def _has_chinese(said: str) -> bool:
    return bool(re.search(r"[\u4e00-\u9fff]", said))


def test_rope_lesson_en(new_page, app_url, runtime):
    from explorer.ui import rope as rope_tab

    loaded = runtime.get(runtime.default_name)
    page = _page(new_page, "en")
    walked = walk(page, app_url, "rope", "en", guesses={1: 400000})
    assert len(walked) == 3
    # step 1: the slowest pair's wavelength at the model's base (2π · base^((d−2)/d)), beside the guess
    d, base = loaded.config.head_dim, float(loaded.config.rope_theta)
    wavelength = 2 * math.pi * base ** ((d - 2) / d)
    first = walked[0].said
    assert f"{wavelength:,.0f} tokens" in first, first
    assert "400,000 tokens" in first and template("lesson.rope.s1.why", "en")[:4] in first
    # ... and the section's own summary on the page says the same for the model's base
    assert f"{wavelength:,.0f} tokens" in page.locator("#rope-freq-text").inner_text()
    # step 2: the Toeplitz verdicts of the capture the page ran, and the page's own summary
    second = walked[1].said
    assert second.count("✓") == 4, second
    s = _step("rope", 1).settings
    result = rope_tab.capture_and_toeplitz(runtime, loaded.name, "en", s["text"], s["layer"], s["head"],
                                           s["q"], s["k"], s["positions"], s["tokens"], progress=None)[-2]
    fields = reading(_step("rope", 1), result)
    assert f"{fields['one']:.3f}" in second
    assert page.locator("#rope-qk-result").inner_text().strip()
    # step 3: the sweep's perplexity as trained, computed in-process with the same settings
    s = _step("rope", 2).settings
    *_, last = rope_tab.sweep(runtime, loaded.name, "en", s["bases"], s["apply"], s["tokens"], progress=None)
    fields = reading(_step("rope", 2), last[3])
    third = walked[2].said
    assert f"{fields['ppl0']:.2f}" in third and fields["verdict"] in third, third
    assert text("lesson.done", "en")[:3] in third
    _shot(page, "lesson-rope-en")


def test_moe_lesson_zh(new_page, app_url, runtime):
    from explorer.ui import moe as moe_tab

    page = _page(new_page, "zh")
    walked = walk(page, app_url, "moe", "zh", guesses={2: 20})
    assert len(walked) == 3 and all(_has_chinese(w.said) for w in walked)
    s = _step("moe", 0).settings
    state = moe_tab.route(runtime, s["moe_model"], moe_tab.DEFAULT_TEXT, s["layer"], "zh")[-1]
    fields = reading(_step("moe", 0), state)
    assert f"{fields['share']:.1f}%" in walked[0].said and "✓" in walked[0].said
    # the predict step: the guess beside the busiest expert's share, and the why
    result = moe_tab.compare(runtime, moe_tab.DEFAULT_TEXT, _step("moe", 1).settings["layer"], "zh")[-1]
    fields = reading(_step("moe", 1), result)
    second = walked[1].said
    assert "20 %" in second and f"{fields['answer']:.1f}%" in second, second
    assert f"{fields['none']:.2f}" in second and fields["verdict"] in second
    assert template("lesson.moe.s2.why", "zh")[:3] in second
    s = _step("moe", 2).settings
    result = moe_tab.what_if(runtime, s["moe_model"], moe_tab.DEFAULT_TEXT, s["k"], s["bias"], "zh")[-1]
    fields = reading(_step("moe", 2), result)
    assert f"{fields['loss1']:.3f}" in walked[2].said
    _shot(page, "lesson-moe-zh")


def test_flash_lesson_en(new_page, app_url):
    from explorer.flash import exactness, io

    page = _page(new_page, "en")
    walked = walk(page, app_url, "flash", "en", guesses={1: 10})
    assert len(walked) == 3
    s = _step("flash", 0).settings
    n, bq, bk = s["n"], s["block_q"], s["block_k"]
    skipped = sum(1 for i in range(n // bq) for j in range(n // bk) if j * bk > (i + 1) * bq - 1)
    first = walked[0].said
    assert f"{skipped} skipped" in first and "You guessed 10 tiles" in first, first
    assert f"{skipped - 10} tiles more" in first
    assert re.search(rf"\b{skipped}\b", page.locator("#flash-summary").inner_text())
    # exactness: the number of cases the section's table lists
    cases = len(exactness.NS) * len(exactness.BLOCKS) * len(exactness.MASKS)
    assert f"{cases} cases" in walked[1].said, walked[1].said
    third = walked[2].said
    io_settings = _step("flash", 2).settings
    naive = io.naive(io_settings["max_n"], io_settings["max_n"], io_settings["d"]).total / 1e6
    assert f"n = {io_settings['max_n']}" in third and f"{naive:.2f} MB" in third, third
    assert f"{naive:.2f} MB" in page.locator("#flash-io-summary").inner_text()
    _shot(page, "lesson-flash-en")


def test_modern_block_lesson_zh(new_page, app_url):
    from explorer.architecture import norm_placement
    from explorer.ui import architecture as arch_tab

    page = _page(new_page, "zh")
    walked = walk(page, app_url, "modern-block", "zh")
    assert len(walked) == 2 and all(_has_chinese(w.said) for w in walked)
    first = walked[0].said
    assert "SmolLM2" in first and "Gemma" in first and "8/8 ✓" in first, first
    grads = arch_tab.init_gradients("zh", _step("modern-block", 1).settings["depths"])[-1]
    second = walked[1].said
    assert f"{grads.ratio('post', 24):.2f}" in second and f"{grads.ratio('pre', 24):.2f}" in second
    assert ("✓" in second) == norm_placement.placement_separates(grads, 24)
    _shot(page, "lesson-modern-block-zh")


@pytest.fixture(scope="module")
def fake_board_url(serve):
    from explorer.ui import claims as claims_tab

    with serve(env={claims_tab.REGISTRY_ENV: "tests.test_claims_fakes:FAST_REGISTRY"}) as served:
        yield served.url


def test_claims_tour_lesson_en(new_page, fake_board_url, runtime):
    from explorer.claims import board
    from tests import test_claims_fakes as fakes

    page = _page(new_page, "en")
    walked = walk(page, fake_board_url, "claims-tour", "en")
    kept = board.CACHE.cached(runtime.get(runtime.default_name), fakes.FAST_REGISTRY)
    assert kept is not None and kept.complete
    first = walked[0].said
    assert f"{kept.count('pass')} of {len(kept.rows)} pass" in first, first
    assert f"{kept.count('fail')} fail" in first
    summary = page.locator("#claims-summary").inner_text()
    assert re.search(rf"\b{kept.count('pass')}\b", summary), summary
    passed = ", ".join(row.claim for row in kept.rows if row.verdict == "pass")
    assert passed in walked[1].said
    _shot(page, "lesson-claims-tour-en")
