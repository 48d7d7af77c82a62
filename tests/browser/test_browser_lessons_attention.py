"""The GQA / MLA, sliding-window and sink lessons walked in a real browser (Debian Chromium),
first step to last, each in one language (GQA / MLA and sinks in English, the sliding window in
Chinese, moved with the → key): each quoted number is the page's (the section's own summary
shows it) or the in-process reading of the same deterministic run; each prediction is shown
beside the measured value. A step's run and its reading are the same in either language; the
quotes of each step in both languages, from the same readings, are checked in
tests/checkpoints/test_lessons_attention.py. Screenshots:
artifacts/screenshots/lesson-<key>-<lang>.png."""
from __future__ import annotations

import re

import pytest

from explorer.attention import receptive_field as rf
from explorer.lessons import LESSONS, reading
from explorer.locales import template, text
from tests.conftest import SCREENSHOTS
from tests.lesson_walk import walk

pytestmark = pytest.mark.browser


def _shot(page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), timeout=120_000)


def _page(new_page, lang):
    return new_page("en-US" if lang == "en" else "zh-CN", width=1400, height=1000)


def _in_language(walked, lang: str) -> bool:
    return all(bool(re.search(r"[\u4e00-\u9fff]", w.said)) == (lang == "zh") for w in walked)


def _walked_in(lang: str):
    return pytest.mark.parametrize("lang", [lang])


@_walked_in("en")
def test_gqa_mla_lesson(new_page, app_url, runtime, lang):
    page = _page(new_page, lang)
    walked = walk(page, app_url, "gqa-mla", lang, guesses={2: 2})
    assert len(walked) == 4 and _in_language(walked, lang)
    config = runtime.get("smollm2-135m-instruct").config
    per_token = 2 * config.n_layers * config.n_kv_heads * config.head_dim * 4
    # step 1: the page's groups summary and the panel quote the same cache bytes
    assert f"{per_token:,}" in walked[0].said and "✓" in walked[0].said
    # step 2: the guess beside the ratio computed from the run (MHA's formula over the
    # measured bytes), and the why
    ratio = config.n_heads // config.n_kv_heads
    assert "**" not in walked[1].said     # markdown rendered
    computed = {"en": f"computed from your run: {ratio} ×", "zh": f"由你的运行计算得到 {ratio} ×"}[lang]
    assert computed in walked[1].said, walked[1].said
    assert template("lesson.gqa.s2.why", lang)[:4] in walked[1].said
    # step 3: the calculator on the page shows the variants the panel quotes
    variants = page.locator("#gen-variants").inner_text()
    assert "0.500 MiB" in variants          # the MHA row (the table draws its first rows)
    assert "0.500 MiB" in walked[2].said and "0.125 MiB" in walked[2].said
    # step 4: the MLA section's summary shows the cache bytes the panel quotes
    summary = page.locator("#arch-mla-text").inner_text()
    assert "6,912" in walked[3].said and "6912" in summary.replace(",", "")
    assert "4.5" in walked[3].said and "2.25" in walked[3].said and "✓" in walked[3].said
    _shot(page, f"lesson-gqa-mla-{lang}")


@_walked_in("zh")
def test_windows_depth_lesson(new_page, app_url, runtime, lang):
    words = {"en": dict(reach="{} tokens", after="after {} layers", guess="You guessed 2 L", local="15 local",
                        counted="Computed from each layer's mask"),
             "zh": dict(reach="{} 个词元", after="经过 {} 层", guess="你猜的是 2 L", local="15 个局部层",
                        counted="由每一层的掩码")}[lang]
    page = _page(new_page, lang)
    # moved with the → key in Chinese, with the Next button in English
    walked = walk(page, app_url, "windows-depth", lang, guesses={2: 2}, keys=(lang == "zh"))
    assert len(walked) == 3 and _in_language(walked, lang)
    # step 1: the rf summary on the page states the same reach as the panel
    loaded = runtime.get("smollm2-135m-instruct")
    rule = rf.theoretical_reach(loaded.config.n_layers, 2)
    assert words["reach"].format(rule) in walked[0].said and "✓" in walked[0].said
    # step 2: the in-process reading of the same deterministic probe
    step = LESSONS["windows-depth"].steps[1]
    s = step.settings
    fields = reading(step, rf.run(loaded, s["mode"], s["window"], s["tokens"], s["seed"]))
    assert words["after"].format(fields["answer"]) in walked[1].said, walked[1].said
    assert words["guess"] in walked[1].said and f"{fields['quotient']:.2f}" in walked[1].said
    # the page's rf summary table lists the probed distances, token 0's among them
    assert str(fields["distance"]) in page.locator("#rf-summary").inner_text()
    # step 3: Gemma's layer kinds, from the page's local/global summary; counted from the
    # masks, no forward: no mark on it
    assert words["local"] in walked[2].said and "512" in walked[2].said
    assert "✓" not in walked[2].said and words["counted"] in walked[2].said
    _shot(page, f"lesson-windows-depth-{lang}")


@_walked_in("en")
def test_sinks_streaming_lesson(new_page, app_url, lang):
    en = lang == "en"
    page = _page(new_page, lang)
    walked = walk(page, app_url, "sinks-streaming", lang, guesses={1: 10})
    assert len(walked) == 3 and _in_language(walked, lang)
    # step 1: the prediction compared; the sink summary on the page has the same verdict
    first = walked[0].said
    assert ("You guessed 10 %" if en else "你猜的是 10 %") in first and "✓" in first
    measured = float(re.search(r"put ([\d.]+)% of their attention" if en else r"把 ([\d.]+)% 的注意力",
                               first).group(1))
    assert measured > 10
    sink_summary = page.locator("#sink-summary").inner_text()
    if en:
        k, n = re.search(r"(\d+) of (\d+) heads", first).groups()
    else:
        n, k = re.search(r"(\d+) 个头中有 (\d+) 个", first).groups()
    assert int(k) <= int(n) and k in sink_summary and n in sink_summary
    # step 2: the map under the sinks mask
    assert ("exactly 0" if en else "恰好是 0") in walked[1].said and "✓" in walked[1].said
    # step 3: the page's StreamingLLM table shows the perplexities the panel quotes
    table = page.locator("#stream-summary").inner_text()
    worse = re.search(r"(\d+\.\d)× worse" if en else r"差了 (\d+\.\d) 倍", walked[2].said).group(1)
    kept = re.search(r"(\d+\.\d\d)× the full cache" if en else r"是完整缓存的 (\d+\.\d\d) 倍",
                     walked[2].said).group(1)
    assert (f"{worse}×" if en else f"{worse} 倍") in table and f"{kept}×" in table, table
    assert text("lesson.done", lang)[:10] in walked[2].said
    _shot(page, f"lesson-sinks-streaming-{lang}")
