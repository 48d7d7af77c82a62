"""Five lessons walked in a real browser (Debian Chromium), first step to last: RoPE, mixture of
experts, FlashAttention, the modern block, the claims board. Each is walked in one language,
English and Chinese alternating (RoPE and FlashAttention in English, the others in Chinese):
a step's run and its reading are the same in either language, and the panel's text is
said_text of that reading in the page's language, whose quotes in both languages
tests/checkpoints/test_lessons_b.py checks on the same readings. Each predict step gets a guess;
each quoted number is checked against the section on the page or against a reading computed
in-process with the step's deterministic settings (the same handlers, the same model). The
claims tour runs the real board (every claim's evidence on the served model, about 20 s of
CPU); its counts are checked against the board the served process kept (board.CACHE) and the
board's summary on the page. Screenshots: artifacts/screenshots/lesson-<key>-<lang>.png."""
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


def _in_language(walked, lang: str) -> bool:
    """Every step's text is in the walk's language (Chinese characters in zh, none in en)."""
    return all(_has_chinese(w.said) == (lang == "zh") for w in walked)


def _walked_in(lang: str):
    return pytest.mark.parametrize("lang", [lang])


@_walked_in("en")
def test_rope_lesson(new_page, app_url, runtime, lang):
    from explorer.ui.tabs import rope as rope_tab
    from explorer.ui.tabs import rope_context

    loaded = runtime.get(runtime.default_name)
    page = _page(new_page, lang)
    walked = walk(page, app_url, "rope", lang, guesses={1: 400000})
    assert len(walked) == 3 and _in_language(walked, lang)
    unit = text("lesson.rope.unit", lang)
    # step 1: the slowest pair's wavelength at the model's base (2π · base^((d−2)/d)), beside the guess
    d, base = loaded.config.head_dim, float(loaded.config.rope_theta)
    wavelength = 2 * math.pi * base ** ((d - 2) / d)
    first = walked[0].said
    assert f"{wavelength:,.0f}" in first, first
    assert f"400,000 {unit}" in first and template("lesson.rope.s1.why", lang)[:4] in first
    # ... and the section's own summary on the page says the same for the model's base
    assert f"{wavelength:,.0f}" in page.locator("#rope-freq-text").inner_text()
    # step 2: the Toeplitz verdicts of the capture the page ran, and the page's own summary
    second = walked[1].said
    assert second.count("✓") == 4, second
    s = _step("rope", 1).settings
    result = rope_tab.capture_and_toeplitz(runtime, loaded.name, lang, s["text"], s["layer"], s["head"],
                                           s["q"], s["k"], s["positions"], s["tokens"], progress=None)[-2]
    fields = reading(_step("rope", 1), result)
    assert f"{fields['one']:.3f}" in second
    assert page.locator("#rope-qk-result").inner_text().strip()
    # step 3: the sweep's perplexity as trained, computed in-process with the same settings
    s = _step("rope", 2).settings
    *_, last = rope_context.sweep(runtime, loaded.name, lang, s["bases"], s["apply"], s["tokens"], progress=None)
    fields = reading(_step("rope", 2), last[3])
    third = walked[2].said
    assert f"{fields['ppl0']:.2f}" in third and fields["verdict"] in third, third
    assert text("lesson.done", lang)[:3] in third
    _shot(page, f"lesson-rope-{lang}")


@_walked_in("zh")
def test_moe_lesson(new_page, app_url, runtime, lang):
    from explorer.ui.tabs import moe as moe_tab

    page = _page(new_page, lang)
    walked = walk(page, app_url, "moe", lang, guesses={2: 20})
    assert len(walked) == 3 and _in_language(walked, lang)
    s = _step("moe", 0).settings
    state = moe_tab.route(runtime, s["moe_model"], moe_tab.DEFAULT_TEXT, s["layer"], lang)[-1]
    fields = reading(_step("moe", 0), state)
    assert f"{fields['share']:.1f}%" in walked[0].said and "✓" in walked[0].said
    # the predict step: the guess beside the busiest expert's share, and the why
    result = moe_tab.compare(runtime, moe_tab.DEFAULT_TEXT, _step("moe", 1).settings["layer"], lang)[-1]
    fields = reading(_step("moe", 1), result)
    second = walked[1].said
    assert "20 %" in second and f"{fields['answer']:.1f}%" in second, second
    assert f"{fields['none']:.2f}" in second and fields["verdict"] in second
    assert template("lesson.moe.s2.why", lang)[:3] in second
    s = _step("moe", 2).settings
    result = moe_tab.what_if(runtime, s["moe_model"], moe_tab.DEFAULT_TEXT, s["k"], s["bias"], lang)[-1]
    fields = reading(_step("moe", 2), result)
    assert f"{fields['loss1']:.3f}" in walked[2].said and fields["verdict"] == "✓" in walked[2].said
    _shot(page, f"lesson-moe-{lang}")


@_walked_in("en")
def test_flash_lesson(new_page, app_url, lang):
    from explorer.flash import exactness, io

    page = _page(new_page, lang)
    walked = walk(page, app_url, "flash", lang, guesses={1: 10})
    assert len(walked) == 3 and _in_language(walked, lang)
    unit = text("lesson.flash.unit", lang)
    skipped_words = {"en": "{} skipped", "zh": "{} 个被跳过"}[lang]
    cases_words = {"en": "{} cases", "zh": "{} 个用例"}[lang]
    s = _step("flash", 0).settings
    n, bq, bk = s["n"], s["block_q"], s["block_k"]
    skipped = sum(1 for i in range(n // bq) for j in range(n // bk) if j * bk > (i + 1) * bq - 1)
    first = walked[0].said
    assert skipped_words.format(skipped) in first and f"10 {unit}" in first, first
    assert f"{skipped - 10} {unit}" in first
    assert re.search(rf"\b{skipped}\b", page.locator("#flash-summary").inner_text())
    # exactness: the number of cases the section's table lists
    cases = len(exactness.NS) * len(exactness.BLOCKS) * len(exactness.MASKS)
    assert cases_words.format(cases) in walked[1].said, walked[1].said
    third = walked[2].said
    io_settings = _step("flash", 2).settings
    naive = io.naive(io_settings["max_n"], io_settings["max_n"], io_settings["d"]).total / 1e6
    assert f"n = {io_settings['max_n']}" in third and f"{naive:.2f} MB" in third, third
    assert f"{naive:.2f} MB" in page.locator("#flash-io-summary").inner_text()
    _shot(page, f"lesson-flash-{lang}")


@_walked_in("zh")
def test_modern_block_lesson(new_page, app_url, lang):
    from explorer.architecture import norm_placement
    from explorer.ui.tabs import architecture as arch_tab

    page = _page(new_page, lang)
    walked = walk(page, app_url, "modern-block", lang)
    assert len(walked) == 2 and _in_language(walked, lang)
    first = walked[0].said
    assert "SmolLM2" in first and "Gemma" in first and "8/8 ✓" in first, first
    grads = arch_tab.init_gradients(lang, _step("modern-block", 1).settings["depths"])[-1]
    second = walked[1].said
    assert f"{grads.ratio('post', 24):.2f}" in second and f"{grads.ratio('pre', 24):.2f}" in second
    assert ("✓" in second) == norm_placement.placement_separates(grads, 24)
    _shot(page, f"lesson-modern-block-{lang}")


@_walked_in("zh")
def test_claims_tour_lesson(new_page, app_url, runtime, lang):
    from explorer.claims import board

    page = _page(new_page, lang)
    walked = walk(page, app_url, "claims-tour", lang)
    assert _in_language(walked, lang)
    # the real board, as the served app ran it (kept for the model by the board's cache)
    kept = board.CACHE.cached(runtime.get(runtime.default_name))
    assert kept is not None and kept.complete
    first = walked[0].said
    passed, total, failed = kept.count("pass"), len(kept.rows), kept.count("fail")
    counts = {"en": f"{passed} of {total} pass", "zh": f"{total} 条中 {passed} 条通过"}[lang]
    fails = {"en": f"{failed} fail", "zh": f"{failed} 条未通过"}[lang]
    assert counts in first and fails in first, first
    summary = page.locator("#claims-summary").inner_text()
    assert re.search(rf"\b{kept.count('pass')}\b", summary), summary
    passed = ", ".join(row.claim for row in kept.rows if row.verdict == "pass")
    assert passed in walked[1].said
    _shot(page, f"lesson-claims-tour-{lang}")
