"""Five lessons without a browser: RoPE, mixture of experts, FlashAttention, the modern block and
the claims board (explorer/lessons/{rope,moe,flash,modern_block,claims_tour}.py). Every step's
view exists in the built app and takes the step's settings; every text exists in both languages
and formats with the fields read from a real result; each result is computed by the section's
own handler with the step's settings on the loaded model, and the fields equal what the claims'
criteria say of it; a result of another shape is never read. Each step's said text quotes, in
both languages, what the browser's walk (one language per lesson) checks on the page."""
from __future__ import annotations

import math
import re

import pytest

from explorer.lessons import LESSONS, reading
from explorer.lessons import claims_tour, flash as flash_lesson, modern_block, moe as moe_lesson
from explorer.lessons import rope as rope_lesson
from explorer.locales import LANGUAGES, template, text
from explorer.ui.page import lessons as panel

MINE = ("rope", "moe", "flash", "modern-block", "claims-tour")
MARK = {True: "✓", False: "✗"}


def _step(key: str, index: int):
    return LESSONS[key].steps[index]


def _said(key: str, index: int, fields: dict, lang: str, guess=None) -> str:
    state = {"lesson": key, "step": index, "guess": guess, "fields": fields}
    return panel.said_text(state, lang)


def _check_texts(key: str, index: int, fields: dict) -> None:
    """The step's said text (and its why, after a guess) formats in both languages with the
    reading's fields."""
    step = _step(key, index)
    for lang in LANGUAGES:
        guess = 1.0 if step.predict else None
        said = _said(key, index, fields, lang, guess)
        assert said and "{" not in said, said
        if step.predict:
            assert text(step.predict.why, lang, **fields).split("{")[0][:6] in said


def _quoted(key: str, index: int, fields: dict, guess=None) -> dict:
    """The step's said text in each language, with Chinese characters in Chinese only. The
    browser walks each lesson in one language (tests/browser/test_browser_lessons_b.py); these
    are the quotes of the other, from the same reading and the same panel function."""
    said = {lang: _said(key, index, fields, lang, guess) for lang in LANGUAGES}
    for lang, line in said.items():
        assert bool(re.search(r"[\u4e00-\u9fff]", line)) == (lang == "zh"), line
    return said


@pytest.fixture(scope="module")
def loaded(runtime):
    return runtime.get(runtime.default_name)


# ----------------------------------------------------------------------------- every step


def test_the_lessons_are_listed_in_the_notes_order():
    keys = list(LESSONS)
    assert [k for k in keys if k in MINE] == list(MINE)
    assert [LESSONS[k].order for k in MINE] == [50, 60, 70, 80, 90]
    for key in MINE:
        lesson = LESSONS[key]
        assert 2 <= len(lesson.steps) <= 4
        if key in ("rope", "moe", "flash"):
            assert any(step.predict for step in lesson.steps), key


def test_every_step_opens_a_view_that_takes_its_settings(full_page, loaded):
    registry = full_page.views
    for key in MINE:
        for step in LESSONS[key].steps:
            view = registry.get(step.view)
            assert view is not None, (key, step.view)
            assert step.run and view.run_id, (key, step.view)   # the page presses its button
            controls = {c.name: c for c in view.controls}
            for name, value in step.settings.items():
                assert name in controls, (key, step.view, name)
                raw = controls[name].write(value)
                assert raw is not None, (key, name, value)
                assert controls[name].parse(raw, loaded.config) == value, (key, name, value)


def test_every_text_exists_in_both_languages():
    for key in MINE:
        lesson = LESSONS[key]
        for index, step in enumerate(lesson.steps):
            for lang in LANGUAGES:
                state = {"lesson": key, "step": index, "guess": None, "fields": None}
                progress, look, asks, label = panel.step_texts(state, lang)
                assert look and "{" not in look
                if step.predict:
                    assert asks and label and "{" not in label
                    assert text(step.predict.question, lang, **step.fields)
    zh = text("lesson.flash.s1.why", "zh", qb=1, kb=1, tiles=1, bk=1, bq=1, per_block="1", answer=1,
              partial=0)
    assert any("\u4e00" <= ch <= "\u9fff" for ch in zh)


# ----------------------------------------------------------------------------- RoPE


def test_rope_frequencies_read_the_models_base_and_c13(loaded):
    from explorer.rope import frequencies
    from explorer.ui.tabs import rope as rope_tab

    config = loaded.config
    settings = _step("rope", 0).settings
    bases = frequencies.model_bases(config, loaded.spec.title)
    result = rope_tab.frequencies("en", settings["bases"], config.head_dim, settings["context"], bases)[-1]
    fields = reading(_step("rope", 0), result)
    base = float(config.rope_theta)
    d = config.head_dim
    # the slowest pair's wavelength by the formula, independently: 2π · base^((d − 2)/d)
    assert fields["answer"] == pytest.approx(2 * math.pi * base ** ((d - 2) / d), rel=1e-6)   # θ in float32
    assert fields["verdict"] == MARK[frequencies.larger_base_slows(result)] == "✓"
    assert fields["full"] + fields["never"] == d // 2
    # the section's table shows the same wavelength (rounded) on the model's base's row
    table = frequencies.table(result, "en")
    row = table[table.iloc[:, 0] == frequencies.base_label(base)]
    assert round(fields["answer"]) == int(row.iloc[0, -1])
    _check_texts("rope", 0, fields)
    said = _said("rope", 0, fields, "en")
    assert f"{fields['answer']:,.0f} tokens" in said
    for lang, said in _quoted("rope", 0, fields, guess=400000).items():
        unit = text("lesson.rope.unit", lang)
        assert f"{fields['answer']:,.0f}" in said and f"400,000 {unit}" in said, said
        assert template("lesson.rope.s1.why", lang)[:4] in said
    # 2π/θ is a formula of the run's θ: the guess is compared with a computed value
    for lang, words in (("en", "computed from your run"), ("zh", "由你的运行计算得到")):
        guessed = _said("rope", 0, fields, lang, guess=1000)
        assert words in guessed and ("measured" not in guessed and "测得" not in guessed), guessed
    # a run without the model's base is not read
    other = rope_tab.frequencies("en", "12345", d, 8192, bases)[-1]
    assert reading(_step("rope", 0), other) is None
    assert reading(_step("rope", 0), "no probe yet") is None


def test_rope_toeplitz_reads_c11_and_c12(runtime, loaded):
    from explorer.rope import toeplitz
    from explorer.ui.tabs import rope as rope_tab

    s = _step("rope", 1).settings
    out = rope_tab.capture_and_toeplitz(runtime, loaded.name, "en", s["text"], s["layer"], s["head"],
                                        s["q"], s["k"], s["positions"], s["tokens"], progress=None)
    result = out[-2]
    fields = reading(_step("rope", 1), result)
    assert fields["toeplitz"] == MARK[toeplitz.toeplitz_holds(result)] == "✓"
    assert fields["identity_ok"] == MARK[toeplitz.identity_holds(result)] == "✓"
    assert fields["reproduces"] == MARK[toeplitz.reproduces(result)] == "✓"
    assert fields["absolute"] == MARK[toeplitz.absolute_position_remains(result)] == "✓"
    assert (fields["q_token"], fields["k_token"], fields["n"]) == (s["q"], s["k"], s["positions"])
    _check_texts("rope", 1, fields)
    for said in _quoted("rope", 1, fields).values():
        assert said.count("✓") == 4 and f"{fields['one']:.3f}" in said, said
    # the pair section's result (the capture's second output) is not this step's
    assert reading(_step("rope", 1), out[-1]) is None


def test_rope_sweep_reads_c13s_perplexity(runtime, loaded):
    from explorer.rope import sweep
    from explorer.ui.tabs import rope as rope_tab
    from explorer.ui.tabs import rope_context

    s = _step("rope", 2).settings
    *_, last = rope_context.sweep(runtime, loaded.name, "en", s["bases"], s["apply"], s["tokens"], progress=None)
    result = last[3]
    fields = reading(_step("rope", 2), result)
    assert fields["tokens"] == s["tokens"]
    assert fields["verdict"] == MARK[sweep.perplexity_rises(result)]
    assert fields["lowest"] == pytest.approx(min(sweep.perplexity_ratios(result).values()))
    assert fields["changed"].count("→") == 2
    assert fields["context"] == loaded.config.max_position_embeddings > fields["tokens"]
    _check_texts("rope", 2, fields)
    for lang, said in _quoted("rope", 2, fields).items():
        assert f"{fields['ppl0']:.2f}" in said and fields["verdict"] in said, said
        assert text("lesson.done", lang)[:3] in said
    assert reading(_step("rope", 2), None) is None


def test_rope_sweep_step_says_what_a_run_inside_the_context_shows():
    """The sweep reads 512 tokens, inside the model's context: the step says it tests another
    base in a trained model, not long context (no "the base alone is not long context")."""
    import torch

    from explorer.rope import sweep

    swept = sweep.Sweep(bases=(1e5, 1e6), trained=1e5, trained_pair=(1e5, 1e5), apply_to="full",
                        nll={1e5: torch.full((511,), 3.0), 1e6: torch.full((511,), 3.5)},
                        seconds={1e5: 1.0, 1e6: 1.0}, n_tokens=512, context=8192)
    step = _step("rope", 2)
    fields = reading(step, swept)
    assert (fields["tokens"], fields["context"]) == (512, 8192)
    en, zh = (_said("rope", 2, fields, lang) for lang in LANGUAGES)
    assert "fills 512 of the model's 8,192 positions" in en and "not whether a larger base" in en
    assert "The base alone is not long context" not in en
    assert "8,192 个位置中的 512 个" in zh and "只改 base 并不等于长上下文" not in zh
    # a sweep that does not say the model's context is not read
    import dataclasses
    assert reading(step, dataclasses.replace(swept, context=None)) is None


# ----------------------------------------------------------------------------- MoE


@pytest.fixture(scope="module")
def moe_tab():
    from explorer.ui.tabs import moe
    return moe


def test_moe_route_reads_routes_to_k(runtime, moe_tab):
    from explorer.moe import routing

    s = _step("moe", 0).settings
    state = moe_tab.route(runtime, s["moe_model"], moe_tab.DEFAULT_TEXT, s["layer"], "en")[-1]
    fields = reading(_step("moe", 0), state)
    result = state["result"]
    assert fields["verdict"] == MARK[routing.routes_to_k(result)] == "✓"
    assert fields["k"] == result.top_k and fields["experts"] == result.n_experts
    load = result.loads[result.layer_index(s["layer"])]
    assert fields["share"] == pytest.approx(100 * load.counts.max() / load.counts.sum())
    _check_texts("moe", 0, fields)
    for said in _quoted("moe", 0, fields).values():
        assert f"{fields['share']:.1f}%" in said and "✓" in said, said
    assert reading(_step("moe", 0), {"result": None, "layer": 3}) is None


def test_moe_load_predicts_the_busiest_expert_and_reads_c15(runtime, moe_tab):
    from explorer.moe import balance

    s = _step("moe", 1).settings
    result = moe_tab.compare(runtime, moe_tab.DEFAULT_TEXT, s["layer"], "en")[-1]
    fields = reading(_step("moe", 1), result)
    assert fields["verdict"] == MARK[balance.balancing_helps(result)]
    assert fields["margin"] == pytest.approx(balance.balancing_margin(result))
    none = next(r for r in result.routers if r.variant == "none")
    counts = next(l for l in none.text if l.layer == s["layer"]).counts
    assert fields["answer"] == pytest.approx(100 * counts.max() / counts.sum())
    assert fields["answer"] == pytest.approx(fields["times"] * fields["even"])
    _check_texts("moe", 1, fields)
    said = _said("moe", 1, fields, "en", guess=20)
    assert "You guessed **20 %**" in said and f"{fields['answer']:.1f}%" in said
    for lang, said in _quoted("moe", 1, fields, guess=20).items():
        assert "20 %" in said and f"{fields['answer']:.1f}%" in said, said
        assert f"{fields['none']:.2f}" in said and fields["verdict"] in said
        assert template("lesson.moe.s2.why", lang)[:3] in said
    # a comparison without the three shipped routers is not read
    partial = balance.BalanceResult(result.layer, tuple(r for r in result.routers if r.variant != "bias"))
    assert reading(_step("moe", 1), partial) is None


def test_moe_whatif_reads_the_changed_k(runtime, moe_tab):
    from explorer.moe import routing

    s = _step("moe", 2).settings
    result = moe_tab.what_if(runtime, s["moe_model"], moe_tab.DEFAULT_TEXT, s["k"], s["bias"], "en")[-1]
    fields = reading(_step("moe", 2), result)
    assert fields["k1"] == s["k"] != fields["k0"]
    assert fields["verdict"] == MARK[routing.routes_to_k(result.alt)] == "✓"
    assert fields["delta"] == pytest.approx(result.alt.loss - result.base.loss)
    _check_texts("moe", 2, fields)
    for said in _quoted("moe", 2, fields).values():
        assert f"{fields['loss1']:.3f}" in said and fields["verdict"] == "✓" in said, said
    assert reading(_step("moe", 2), result.base) is None


# ----------------------------------------------------------------------------- FlashAttention


def test_flash_schedule_counts_the_skipped_tiles(runtime, loaded):
    from explorer.flash import schedule
    from explorer.ui.tabs import flash as flash_tab

    s = _step("flash", 0).settings
    result = flash_tab.run_head(runtime, loaded.name, "en", s["prompt"], s["n"], s["layer"], s["head"],
                                s["mask"], 64, 4, s["block_q"], s["block_k"], s["row"], progress=None)[-1]
    fields = reading(_step("flash", 0), result)
    n, bq, bk = s["n"], s["block_q"], s["block_k"]
    # causal: tile (i, j) is empty when its first key j·bk comes after its last query (i+1)·bq − 1
    expected = sum(1 for i in range(n // bq) for j in range(n // bk) if j * bk > (i + 1) * bq - 1)
    assert fields["answer"] == expected == int((result.status == schedule.SKIPPED).sum())
    assert sum(int(c) for c in fields["per_block"].split(" + ")) == expected
    assert fields["match"] == MARK[result.skips_match_mask] == "✓"
    assert fields["exact"] == MARK[schedule.tiled_exact(result)] == "✓"
    assert fields["online"] == MARK[schedule.online_softmax_exact(result.row)]
    _check_texts("flash", 0, fields)
    for lang, said in _quoted("flash", 0, fields, guess=10).items():
        unit = text("lesson.flash.unit", lang)
        skipped = {"en": "{} skipped", "zh": "{} 个被跳过"}[lang].format(expected)
        assert skipped in said and f"10 {unit}" in said and f"{expected - 10} {unit}" in said, said
    assert _step("flash", 0).predict.high == fields["tiles"]


def test_flash_exact_and_io_read_their_criteria(runtime):
    from explorer.flash import io, schedule
    from explorer.ui.tabs import flash as flash_tab

    cases = flash_tab.run_exact("en")[-1]
    fields = reading(_step("flash", 1), cases)
    worst = max(max(c.tiled_vs_naive, c.tiled_vs_sdpa, c.naive_vs_sdpa) for c in cases)
    assert fields["verdict"] == MARK[worst <= schedule.TOLERANCE] == "✓"
    assert fields["cases"] == len(cases)
    _check_texts("flash", 1, fields)
    for lang, said in _quoted("flash", 1, fields).items():
        cases_words = {"en": "{} cases", "zh": "{} 个用例"}[lang]
        assert cases_words.format(len(cases)) in said, said
    assert reading(_step("flash", 1), []) is None

    s = _step("flash", 2).settings
    result = flash_tab.run_io(runtime, "en", s["mask"], 64, 4, s["block_q"], s["block_k"], s["d"],
                              s["sram"], s["max_n"])[-1]
    fields = reading(_step("flash", 2), result)
    found = io.scaling(result.counted, result.memory)
    assert fields["verdict"] == MARK[found.memory_holds]
    assert fields["n"] == s["max_n"] and fields["ratio"] > 1
    assert fields["mem_naive"] == pytest.approx(found.memory_naive)
    _check_texts("flash", 2, fields)
    naive = io.naive(s["max_n"], s["max_n"], s["d"]).total / 1e6
    for said in _quoted("flash", 2, fields).values():
        assert f"n = {s['max_n']}" in said and f"{naive:.2f} MB" in said, said
    assert reading(_step("flash", 2), cases) is None


# ----------------------------------------------------------------------------- the modern block


def test_modern_block_reads_c18_and_c19(runtime, loaded):
    from explorer.architecture import blocks, norm_placement
    from explorer.ui.tabs import architecture as arch_tab

    result = arch_tab.read_blocks(runtime, "en", loaded.name, progress=None)[-1]
    fields = reading(_step("modern-block", 0), result)
    read = [b for b in result.blocks if b.origin == "weights"]
    assert fields["verdict"] == MARK[all(blocks.is_llama_style(b) for b in read)] == "✓"
    assert fields["orig"] == sum(blocks.modern_facts(result.blocks[0]).values()) < fields["n"]
    assert all(b.title in fields["models"] for b in read)
    _check_texts("modern-block", 0, fields)
    for said in _quoted("modern-block", 0, fields).values():
        assert "SmolLM2" in said and "Gemma" in said and "8/8 ✓" in said, said

    depths = _step("modern-block", 1).settings["depths"]
    grads = arch_tab.init_gradients("en", depths)[-1]
    fields = reading(_step("modern-block", 1), grads)
    assert fields["depth"] == 24
    assert fields["verdict"] == MARK[norm_placement.placement_separates(grads, 24)] == "✓"
    assert fields["rows"].count("L = ") == len(grads.depths)
    _check_texts("modern-block", 1, fields)
    for said in _quoted("modern-block", 1, fields).values():
        assert f"{grads.ratio('post', 24):.2f}" in said and f"{grads.ratio('pre', 24):.2f}" in said
        assert ("✓" in said) == norm_placement.placement_separates(grads, 24), said
    assert reading(_step("modern-block", 1), result) is None


# ----------------------------------------------------------------------------- the claims board


def test_claims_tour_reads_the_boards_verdicts(loaded):
    from explorer.claims import board
    from tests import claims_fakes as fakes

    assert reading(_step("claims-tour", 0), board.pending(fakes.FAST_REGISTRY)) is None
    result = board.run(loaded, registry=fakes.FAST_REGISTRY)
    fields = reading(_step("claims-tour", 0), result)
    assert fields["passed"] == result.count("pass") and fields["failed"] == result.count("fail")
    assert fields["passed"] + fields["failed"] + fields["missing"] == fields["total"] == len(result.rows)
    passed = [row.claim for row in result.rows if row.passed]
    assert fields["pass_ids"] == ", ".join(passed)
    # the board's own summary line counts the same
    assert f"{fields['passed']}" in board.summary(result, "en")
    for index in (0, 1):
        _check_texts("claims-tour", index, fields)
    quoted = _quoted("claims-tour", 0, fields)
    total, failed = len(result.rows), result.count("fail")
    assert f"{fields['passed']} of {total} pass" in quoted["en"] and f"{failed} fail" in quoted["en"]
    assert f"{total} 条中 {fields['passed']} 条通过" in quoted["zh"] and f"{failed} 条未通过" in quoted["zh"]
    for said in _quoted("claims-tour", 1, fields).values():
        assert ", ".join(passed) in said, said
    stopped = board.BoardResult(**{**result.__dict__, "complete": False})
    assert reading(_step("claims-tour", 1), stopped) is None
