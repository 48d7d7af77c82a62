"""The GQA / MLA, sliding-window and sink lessons (explorer/lessons/gqa_mla.py, windows_depth.py,
sinks_streaming.py) without a browser: every step's view in the built app, with a run button the
page can press; every setting one its view's control takes; every text in both languages with
the fields a real reading gives; and each reading, from the section's own run function called
with the step's settings on the real model, equal to what the claims' criterion says; each
step's said text quoting, in both languages, what the browser's walk (one language per lesson)
checks on the page."""
from __future__ import annotations

import math
import re

import pytest

from explorer.architecture import mla
from explorer.attention import costs, groups, maps, model_title, receptive_field as rf, sinks, \
    streaming
from explorer.attention.evidence import MISTRAL_LAYERS, MISTRAL_WINDOW, c8_holds
from explorer.generate import shapes
from explorer.lessons import LESSONS, reading
from explorer.locales import LANGUAGES, template, text
from explorer.ui.page import lessons as panel
from explorer.ui.tabs.attention import NO_PROBE
from explorer.ui.tabs.attention_map import DEFAULT_PROMPT

KEYS = ("gqa-mla", "windows-depth", "sinks-streaming")


def test_the_lessons_follow_the_notes_order():
    orders = {key: LESSONS[key].order for key in KEYS}
    assert orders == {"gqa-mla": 20, "windows-depth": 30, "sinks-streaming": 40}
    assert list(LESSONS).index("kv-cache") < list(LESSONS).index("gqa-mla")
    for key in KEYS:
        lesson = LESSONS[key]
        assert 2 <= len(lesson.steps) <= 4
        assert any(step.predict is not None for step in lesson.steps), key


@pytest.mark.parametrize("key", KEYS)
def test_every_step_opens_a_view_of_the_app_and_presses_its_button(full_page, runtime, key):
    registry = full_page.views
    for index, step in enumerate(LESSONS[key].steps):
        view = registry.get(step.view)
        assert view is not None, step.view
        assert view.state is not None and view.run_id, step.view   # a result to read, a button
        # every setting is one the view's control takes and writes back unchanged
        for name, value in step.settings.items():
            control = view.control(name)
            raw = control.write(value)
            assert raw is not None, (step.view, name, value)
            config = runtime.get(step.model).config if step.model else None
            assert control.parse(raw, config) == value
        if step.model is not None:
            assert step.model in runtime.names()
        plan = panel.plan_of_step(LESSONS[key], index)
        command = panel.command_of(plan, registry, run=True)
        assert view.run_id in command and view.target in command


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize("lang", LANGUAGES)
def test_every_look_and_question_has_its_fields(key, lang):
    lesson = LESSONS[key]
    assert text(lesson.title, lang) and text(lesson.summary, lang)
    for index, step in enumerate(lesson.steps):
        state = {"lesson": key, "step": index, "guess": None, "fields": None}
        progress, look, asks, label = panel.step_texts(state, lang)
        assert "{" not in look and asks == (step.predict is not None)
        if lang == "zh":
            assert any("\u4e00" <= ch <= "\u9fff" for ch in look)


# ----------------------------------------------------------------------------- real runs


@pytest.fixture(scope="module")
def gemma(runtime):
    return runtime.get("gemma-3-270m")


def _said(key: str, index: int, fields: dict, lang: str, guess=None) -> str:
    state = {"lesson": key, "step": index, "guess": guess, "fields": fields}
    said = panel.said_text(state, lang)
    assert "{" not in said
    return said


def _plain(said: dict) -> dict:
    """The said texts without Markdown's marks, as the page shows them."""
    return {lang: re.sub(r"[*`]", "", line) for lang, line in said.items()}


def _all_languages(key: str, index: int, fields: dict, guess=None) -> dict:
    out = {lang: _said(key, index, fields, lang, guess) for lang in LANGUAGES}
    assert any("\u4e00" <= ch <= "\u9fff" for ch in out["zh"])
    return out


def test_gqa_steps_read_the_groups_through_c5(smol):
    lesson = LESSONS["gqa-mla"]
    result = groups.run(smol)
    fields = reading(lesson.steps[0], result)
    assert fields["verdict"] == ("✓" if groups.cache_holds_kv_heads(result) else "✗") == "✓"
    assert (fields["q_heads"], fields["k_heads"]) == (result.shapes["q"][1], result.shapes["k"][1])
    assert fields["measured"] == result.cache_used / result.tokens
    predicted = reading(lesson.steps[1], result)
    # the answer is the ratio of the formula's MHA bytes to the cache the engine filled
    assert predicted["answer"] == result.variant_bytes("mha") / result.measured_per_token
    assert predicted["answer"] == smol.config.n_heads / smol.config.n_kv_heads
    said = _all_languages("gqa-mla", 1, predicted, guess=2)
    assert f"{predicted['mha']:,}" in said["en"] and "1 × more" in said["en"]
    # the formula's MHA bytes over the measured ones: a computed ratio, never "measured"
    ratio = f"**{predicted['answer']:g} ×**"
    assert f"computed from your run: {ratio}" in said["en"] and "measured" not in said["en"]
    assert f"由你的运行计算得到 {ratio}" in said["zh"] and "运行测得" not in said["zh"]
    assert reading(lesson.steps[0], NO_PROBE) is None
    assert reading(lesson.steps[0], shapes.run(8, 2)) is None
    # what the browser's walk (one language, tests/browser/test_browser_lessons_attention.py)
    # reads on the page, quoted here in both languages from the same readings
    config = smol.config
    per_token = 2 * config.n_layers * config.n_kv_heads * config.head_dim * 4
    for line in _plain(_all_languages("gqa-mla", 0, fields)).values():
        assert f"{per_token:,}" in line and "✓" in line, line
    for lang, line in said.items():
        assert template("lesson.gqa.s2.why", lang)[:4] in line


def test_gqa_calculator_step_reads_the_published_figures():
    step = LESSONS["gqa-mla"].steps[2]
    result = shapes.run(step.settings["tokens"], step.settings["bytes"])
    fields = reading(step, result)
    assert fields["published"] == "✓" and fields["proportional"] == "✓"
    assert fields["mha"] / fields["gqa"] == fields["q_heads"] / fields["gqa_kv"]
    deepseek = next(s for s in result.shapes if s.name == "DeepSeek-V3")
    assert deepseek.latent and fields["mla_kib"] * 1024 == deepseek.bytes_per_token(2)
    # another length or element size is not the published figure: the mark says so
    assert reading(step, shapes.run(1000, 2))["published"] == "✗"
    assert reading(step, shapes.run(step.settings["tokens"], 4))["published"] == "✗"
    assert reading(step, mla.run_cache()) is None
    for said in _plain(_all_languages("gqa-mla", 2, fields)).values():
        assert "0.500 MiB" in said and "0.125 MiB" in said, said


def test_gqa_mla_step_reads_c6():
    step = LESSONS["gqa-mla"].steps[3]
    result = mla.run_cache()
    fields = reading(step, result)
    assert fields["verdict"] == ("✓" if mla.cache_claim_holds(result) else "✗") == "✓"
    assert (fields["in_heads"], fields["gqa_heads"]) == (4.5, 2.25)
    assert fields["cache_bytes"] == result.tiny_cache_bytes == fields["formula_bytes"]
    assert fields["error"] == mla.latent_error(result) <= mla.LATENT_TOL
    assert reading(step, "no result") is None
    for said in _plain(_all_languages("gqa-mla", 3, fields)).values():
        assert "6,912" in said and "4.5" in said and "2.25" in said and "✓" in said, said


WINDOW_WORDS = {"en": dict(reach="{} tokens", after="after {} layers", guess="You guessed 2 L",
                           local="15 local", counted="Computed from each layer's mask"),
                "zh": dict(reach="{} 个词元", after="经过 {} 层", guess="你猜的是 2 L",
                           local="15 个局部层", counted="由每一层的掩码")}


def _probe(loaded, step):
    s = step.settings
    return rf.run(loaded, s["mode"], s["window"], s["tokens"], s["seed"])


def test_window_reach_step_reads_c8(smol):
    lesson = LESSONS["windows-depth"]
    run = _probe(smol, lesson.steps[0])
    fields = reading(lesson.steps[0], run)
    mistral = rf.theoretical_reach(MISTRAL_LAYERS, MISTRAL_WINDOW)
    assert fields["verdict"] == ("✓" if c8_holds(run.probe, mistral) else "✗") == "✓"
    reach = rf.measured_reach(run.probe)
    assert (fields["rule"], fields["farthest"], fields["nearest"]) == \
        (reach.rule, reach.farthest_changed, reach.nearest_unchanged)
    assert fields["rule"] == smol.config.n_layers * (fields["window"] - 1) + 1
    rule = rf.theoretical_reach(smol.config.n_layers, 2)
    for lang, said in _plain(_all_languages("windows-depth", 0, fields)).items():
        assert WINDOW_WORDS[lang]["reach"].format(rule) in said and "✓" in said, said
    assert reading(lesson.steps[0], NO_PROBE) is None


@pytest.fixture(scope="module")
def window_probe(smol):
    return _probe(smol, LESSONS["windows-depth"].steps[1])


@pytest.mark.slow     # a real run of more than 5 s (or Gemma's load)
def test_window_predict_step_reads_the_layer_token_0_reaches(window_probe):
    lesson = LESSONS["windows-depth"]
    step = lesson.steps[1]
    fields = reading(step, window_probe)
    probe = window_probe.probe
    distance = probe.n_tokens - 1
    assert distance in probe.distances            # the settings make the probe measure token 0
    measured = probe.measured[probe.distances.index(distance)]
    assert fields["answer"] == measured + 1 == math.ceil(distance / (step.settings["window"] - 1))
    assert fields["verdict"] == "✓" and fields["rule_layers"] == fields["answer"]
    said = _all_languages("windows-depth", 1, fields, guess=2)
    assert step.predict.why and "2.02" in said["en"]
    for lang, line in _plain(said).items():
        words = WINDOW_WORDS[lang]
        assert words["after"].format(fields["answer"]) in line and words["guess"] in line, line
        assert f"{fields['quotient']:.2f}" in line
    # the reach step reads nothing from this probe: the text ends before the reach
    assert reading(lesson.steps[0], window_probe) is None


def test_window_predict_step_refuses_a_probe_that_never_reaches_token_0(smol):
    run = rf.run(smol, "forced", 2, 40, 0)      # reach 31 tokens: token 0 is 39 back
    assert reading(LESSONS["windows-depth"].steps[1], run) is None


@pytest.mark.slow     # a real run of more than 5 s (or Gemma's load)
def test_local_global_step_reads_gemmas_layers(gemma, smol):
    step = LESSONS["windows-depth"].steps[2]
    assert step.model == gemma.name
    result = costs.run_once(gemma.model, gemma.name, model_title(gemma))
    fields = reading(step, result)
    kinds = costs.layer_kinds(gemma.config)
    assert (fields["n_local"], fields["n_global"]) == (kinds.count("local"), kinds.count("global"))
    assert fields["window"] == gemma.config.sliding_window == fields["local_tokens"]
    assert fields["cache_share"] < 100
    for lang, said in _plain(_all_languages("windows-depth", 2, fields)).items():
        words = WINDOW_WORDS[lang]
        assert words["local"] in said and "512" in said and words["counted"] in said, said
        assert "✓" not in said
    # a model without local layers is not this step's run
    assert reading(step, costs.run_once(smol.model, smol.name, model_title(smol))) is None


def _costs(window: int, n: int) -> costs.CostResult:
    """Two layers, one local (window `window`) and one global, counted at n tokens as
    costs.run counts them (4 bytes per token and layer, one head)."""
    local = min(n, window)
    scores_local = sum(min(q + 1, window) for q in range(n))
    row = costs.CostRow(n=n, scores_local=scores_local, scores_global=n * (n + 1) // 2,
                        scores_all=scores_local + n * (n + 1) // 2, scores_all_global=n * (n + 1),
                        cache_local=4 * local, cache_global=4 * n, cache_all=4 * (local + n))
    return costs.CostResult(model="m", title="M", kinds=("local", "global"), window=window, rows=(row,))


def test_local_global_step_says_computed_from_the_masks_and_puts_no_mark():
    """No forward runs in that section: the cache and the score entries are counted from the
    layers' masks and the cache formula. The step says so, quotes the entries the masks let
    need (not what the layers compute: the eager path computes all t × s), and puts no ✓ on
    a cap nothing measured."""
    step = LESSONS["windows-depth"].steps[2]
    fields = reading(step, _costs(window=8, n=64))
    assert fields["local_tokens"] == 8 and "capped" not in fields
    assert fields["scores_share"] == pytest.approx(100 * (sum(min(q + 1, 8) for q in range(64)) + 2080) / 4160)
    said = _all_languages("windows-depth", 2, fields)
    for lang, words in (("en", ("Computed from each layer's mask", "the masks need", "t × s")),
                        ("zh", ("由每一层的掩码", "掩码需要的", "t × s"))):
        assert "✓" not in said[lang] and "✗" not in said[lang]
        assert all(w in said[lang] for w in words), said[lang]
    assert "the layers compute" not in said["en"] and "计算的注意力分数条目" not in said["zh"]


def _stream(window_ratio: float, sinks_ratio: float) -> streaming.StreamingRun:
    """A StreamingRun whose perplexities past the window are full × the given ratios."""
    import numpy as np

    n, window, s = 128, 32, 4
    nll = {policy: np.full(n - 1, 1.0 + math.log(ratio))
           for policy, ratio in (("full", 1.0), ("window", window_ratio), ("sinks", sinks_ratio))}
    result = streaming.StreamingResult(model="m", n_tokens=n, window=window, sinks=s, nll=nll,
                                       seconds={p: 1.0 for p in nll})
    return streaming.StreamingRun(title="M", curves=(result,), own_window=None)


def test_streaming_step_says_the_sinks_bring_it_back_only_when_they_do():
    """C10's criterion passes when the sinks help at all; "bring it back" is the module's own
    recovery criterion (sinks_recover: within DEGRADE_RATIO of the full cache)."""
    step = LESSONS["sinks-streaming"].steps[2]
    barely = reading(step, _stream(10.0, 9.9))          # closes ~1% of the gap
    assert barely["verdict"] == "✓" and barely["recovers"] == "✗" and round(barely["closed"]) == 1
    back = reading(step, _stream(10.0, 1.1))
    assert back["verdict"] == "✓" and back["recovers"] == "✓"
    for fields, mark in ((barely, "✗"), (back, "✓")):
        said = _all_languages("sinks-streaming", 2, fields)
        assert f"bring it back, to within {streaming.DEGRADE_RATIO:g}× of the full cache: {mark}" in said["en"]
        assert f"{streaming.DEGRADE_RATIO:g} 倍以内" in said["zh"]
        assert "bring it back: ✓" not in said["en"]


@pytest.mark.slow     # a real run of more than 5 s (or Gemma's load)
def test_sink_predict_step_reads_the_sink_verdict(smol):
    step = LESSONS["sinks-streaming"].steps[0]
    s = step.settings
    result = sinks.run(smol, s["tokens"], s["sinks"], s["use_logit"], 0.0)
    fields = reading(step, result)
    verdict = sinks.sink_verdict(result.grid)
    assert fields["verdict"] == ("✓" if verdict.holds else "✗") == "✓"
    assert fields["answer"] == pytest.approx(100 * verdict.mean_first)
    assert fields["answer"] > fields["uniform"] * verdict.factor > 0
    assert (fields["k"], fields["n"]) == (verdict.n_sink_heads, verdict.n_heads)
    said = _plain(_all_languages("sinks-streaming", 0, fields, guess=10))
    for lang, line in said.items():
        en = lang == "en"
        assert ("You guessed 10 %" if en else "你猜的是 10 %") in line and "✓" in line, line
        measured = float(re.search(r"put ([\d.]+)% of their attention" if en else r"把 ([\d.]+)% 的注意力",
                                   line).group(1))
        assert measured > 10
        if en:
            k, n = re.search(r"(\d+) of (\d+) heads", line).groups()
        else:
            n, k = re.search(r"(\d+) 个头中有 (\d+) 个", line).groups()
        assert (int(k), int(n)) == (fields["k"], fields["n"])


def test_sink_map_step_reads_the_mask_and_token_0(smol):
    step = LESSONS["sinks-streaming"].steps[1]
    s = step.settings
    result = maps.run(smol, DEFAULT_PROMPT, s["layer"], s["head"], s["mask"], s["window"],
                      s["sinks"], 1.0, "eager", 0)
    fields = reading(step, result)
    assert fields["verdict"] == "✓" and fields["masked_max"] == 0.0 and result.mask_matches_nonzero
    m = result.layer_map
    rows = m.q_pos >= s["window"]
    assert fields["rows"] == int(rows.sum()) > 0
    assert fields["first"] == pytest.approx(100 * float(m.probs[:, rows][..., 0].mean()))
    assert fields["first"] > fields["uniform"]
    for lang, said in _plain(_all_languages("sinks-streaming", 1, fields)).items():
        assert ("exactly 0" if lang == "en" else "恰好是 0") in said and "✓" in said, said
    causal = maps.run(smol, DEFAULT_PROMPT, s["layer"], "all", "causal", 8, 2, 1.0, "eager", 0)
    assert reading(step, causal) is None


@pytest.mark.slow     # a real run of more than 5 s (or Gemma's load)
def test_streaming_step_reads_eviction_hurts(smol):
    step = LESSONS["sinks-streaming"].steps[2]
    s = step.settings
    result = streaming.run(smol, s["tokens"], s["window"], s["sinks"], streaming.StreamingCache())
    fields = reading(step, result)
    numbers = result.numbers
    assert fields["verdict"] == ("✓" if streaming.eviction_hurts(numbers) else "✗") == "✓"
    assert fields["window_ppl"] == numbers["perplexity"]["window"] > fields["full"]
    assert fields["sinks_ppl"] < fields["window_ppl"]
    assert fields["collapses"] == ("✓" if numbers["window_collapses"] else "✗")
    assert fields["recovers"] == ("✓" if numbers["sinks_recover"] else "✗")
    for lang, said in _plain(_all_languages("sinks-streaming", 2, fields)).items():
        en = lang == "en"
        worse = re.search(r"(\d+\.\d)× worse" if en else r"差了 (\d+\.\d) 倍", said)
        kept = re.search(r"(\d+\.\d\d)× the full cache" if en else r"是完整缓存的 (\d+\.\d\d) 倍", said)
        assert worse and kept, said
        assert text("lesson.done", lang)[:10] in said
    assert reading(step, NO_PROBE) is None
