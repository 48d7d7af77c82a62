"""explorer/generate/: the evidence behind the Generate & KV-cache tab.

Tiny random models (tests/helpers.py) drive the engine for the per-step checks (cheap); one short
real SmolLM2 run and one real Gemma-3 run past its 512-token window check the same on the
checkpoints. The calculator reproduces the published figures exactly.
"""
from __future__ import annotations

import json
import time
import types

import pytest
import torch

from explorer.generate import checks, figures, request as req, session as sess, shapes, step_cost
from explorer.serving import transport
from explorer.generate.request import parse_request
from explorer.inputs import InputError
from models.attention import MaskSpec
from models.forward import RunOptions
from tests.helpers import measured_default, ours_from_hf, tiny_hf


class DigitTokenizer:
    """Just what stream_generation needs from a tokenizer: decode."""

    def decode(self, ids, skip_special_tokens=False):
        return " ".join(f"<{i}>" for i in ids)


@pytest.fixture(scope="module")
def tiny_llama():
    return ours_from_hf(tiny_hf("llama"))


@pytest.fixture(scope="module")
def tiny_gemma():
    return ours_from_hf(tiny_hf("gemma3"))  # 6 layers: 5 sliding (window 5) : 1 global


def run(model, ids, **fields):
    """(snapshots, final session); the stream yields one mutable Session, so each yield is
    recorded as (phase, tokens so far, replay points so far)."""
    request = req.Request(prompt="x", **fields)
    snapshots, session = [], None
    for session in sess.stream_generation(model, DigitTokenizer(), ids, request):
        snapshots.append((session.phase, len(session.records), len(session.replay)))
    return snapshots, session


# ----- bytes == formula, every step (C3) and the window cap (C9) ----------------------------
def test_bytes_equal_formula_per_layer_at_every_step(tiny_llama):
    snapshots, session = run(tiny_llama, [3, 4, 5], max_new_tokens=12, compare_no_cache=False,
                             check_full_forward=False)
    c = tiny_llama.config
    assert len(session.records) == 12 and session.stopped == "length"
    for record in session.records:
        per_layer = 2 * c.n_kv_heads * c.head_dim * 4 * record.context
        assert record.cache_bytes == [per_layer] * c.n_layers
        assert sum(record.cache_bytes) == c.kv_bytes_per_token(4) * record.context
    assert session.bytes_match_formula()
    # the stream yields once per token while decoding: the visitor sees every step
    assert [n for phase, n, _ in snapshots if phase == "decode"] == list(range(1, 13))


def test_bars_show_measured_bytes_and_formula_ticks(tiny_gemma):
    _, session = run(tiny_gemma, [1, 2, 3, 4], max_new_tokens=6, compare_no_cache=False,
                     check_full_forward=False)
    last = session.records[-1]
    fig = figures.layer_bytes_figure(session)
    bars = [trace for trace in fig.data if trace.type == "bar"]
    measured = {}
    for trace in bars:
        measured.update({x: y * 1024 for x, y in zip(trace.x, trace.y)})
    assert [measured[i] for i in range(6)] == last.cache_bytes
    ticks = next(trace for trace in fig.data if trace.type == "scatter")
    formula = sess.formula_layer_bytes(session.config, session.layouts, last.context, 4)
    assert [y * 1024 for y in ticks.y] == formula == last.cache_bytes
    names = sorted(trace.name for trace in bars)
    assert names == ["1 layers: full (global)", "5 layers: sliding window 5"]
    assert "layer %{x}" in bars[0].hovertemplate


def test_windowed_layers_cap_while_global_layers_grow(tiny_gemma):
    _, session = run(tiny_gemma, [1, 2, 3], max_new_tokens=10, compare_no_cache=False,
                     check_full_forward=False)
    kinds = [lay.kind for lay in session.layouts]
    assert kinds == ["window"] * 5 + ["full"]
    for record in session.records:
        assert record.cache_lengths[:5] == [min(record.context, 5)] * 5
        assert record.cache_lengths[5] == record.context
    assert session.bytes_match_formula()
    fig = figures.growth_figure(session)
    local = next(tr for tr in fig.data if tr.name == "5 layers: sliding window 5")
    glob = next(tr for tr in fig.data if tr.name == "1 layers: full (global)")
    late = [y for x, y in zip(local.x, local.y) if x >= 5]
    assert len(set(late)) == 1 and glob.y[-1] > glob.y[0]
    # the formula for the windowed layers, drawn from t = 0, bends flat at the window
    formula = [tr for tr in fig.data if tr.line.dash == "dot"]
    per_token_kib = 5 * 2 * 1 * 32 * 4 / 1024
    assert list(formula[0].x) == [0, 5, 12] and list(formula[0].y) == [0, 5 * per_token_kib, 5 * per_token_kib]


def test_cache_policy_changes_layout_and_bytes(tiny_llama):
    _, full = run(tiny_llama, [2, 3, 4, 5], max_new_tokens=10, compare_no_cache=False,
                  check_full_forward=False)
    _, sinks = run(tiny_llama, [2, 3, 4, 5], max_new_tokens=10, policy="sinks", window=4, sinks=2,
                   compare_no_cache=False, check_full_forward=True)
    assert {lay.kind for lay in sinks.layouts} == {"sinks+window"}
    assert all(n == 6 for n in sinks.records[-1].cache_lengths)
    assert sum(sinks.records[-1].cache_bytes) < sum(full.records[-1].cache_bytes)
    assert sinks.bytes_match_formula()
    # the ring buffer + sinks reproduce a full forward under the same mask (C4)
    assert sinks.max_logit_diff() <= checks.C4_TOLERANCE


# ----- C1 replay and C4 check ---------------------------------------------------------------
def test_replay_without_cache_counts_quadratic_scores(tiny_llama):
    snapshots, session = run(tiny_llama, [7, 8, 9], max_new_tokens=8)
    c = tiny_llama.config
    heads = c.n_layers * c.n_heads
    decode = [r for r in session.records if r.phase == "decode"]
    assert [p.context for p in session.replay] == [r.context for r in decode]
    for record, point in zip(decode, session.replay):
        assert record.score_entries == heads * record.context           # one row of scores
        t = point.context
        assert point.score_entries == heads * t * (t + 1) // 2            # the causal triangle
        assert point.same_token
    phases = [phase for phase, _, _ in snapshots]
    assert phases.index("checking") < phases.index("replay") and phases[-1] == "done"
    assert [m for phase, _, m in snapshots if phase == "replay"] == list(range(1, 8))
    fig = figures.latency_figure(session)
    traces = {trace.name: trace for trace in fig.data}
    assert len(fig.data) == 7
    assert list(traces["no cache (recompute all): computed"].y) == [p.score_entries for p in session.replay]
    assert list(traces["with KV cache: needed by the mask"].y) == [r.visible_pairs for r in decode]
    assert all(y > 0 for y in traces["no cache (recompute all)"].y)


def test_both_counts_computed_and_needed_under_a_causal_mask(tiny_llama):
    """C1: the causal SDPA path computes the t(t+1)/2 triangle without a cache and one row
    with it; the causal mask needs t(t+1)/2 pairs without a cache and the whole row of t with it."""
    _, session = run(tiny_llama, [7, 8, 9], max_new_tokens=8, check_full_forward=False)
    c = tiny_llama.config
    heads = c.n_layers * c.n_heads
    prefill = session.records[0]
    # the prompt's forward keeps only the last logits: its last layer scores the last row only,
    # the others the causal triangle of the 3 tokens
    assert prefill.score_entries == c.n_heads * (6 * (c.n_layers - 1) + 3)
    assert prefill.visible_pairs == heads * 6            # every fed query, every layer: 3·4/2
    for record in session.records[1:]:
        assert record.visible_pairs == heads * record.context
    for point in session.replay:
        t = point.context
        assert (point.score_entries, point.visible_pairs) == (heads * t * (t + 1) // 2,) * 2
        assert (point.cached_score_entries, point.cached_visible_pairs) == (heads * t, heads * t)
        assert point.cached_latency_s > 0 and point.latency_s > 0
    verdict = checks.c1_verdict(session.replay)
    ts = [p.context for p in session.replay]
    assert verdict.exponent_uncached == pytest.approx(checks.growth_exponent(ts, [t * (t + 1) for t in ts]))
    assert abs(verdict.exponent_uncached - 2.0) <= checks.C1_EXPONENT_SLACK
    assert verdict.exponent_cached == pytest.approx(1.0)
    assert verdict.t_max == session.records[-1].context


def test_counts_under_a_window_come_from_the_ring_buffers_slots(tiny_llama):
    """With a window w = 4 the cached step computes its row over the ring's 4 slots (eager
    path, every slot) and needs min(t, 4) of them; without a cache, the band, computed as the
    causal triangle while t <= 4 (the window hides nothing more) and past it as the whole
    square handed to SDPA with the band as its mask."""
    _, session = run(tiny_llama, [7, 8, 9], max_new_tokens=8, policy="window", window=4,
                     check_full_forward=False)
    c = tiny_llama.config
    heads = c.n_layers * c.n_heads
    for point in session.replay:
        t = point.context
        assert point.cached_score_entries == heads * 4
        assert point.cached_visible_pairs == heads * min(t, 4)
        assert point.visible_pairs == heads * sum(min(q + 1, 4) for q in range(t))
        assert point.score_entries == heads * (t * (t + 1) // 2 if t <= 4 else t * t)
    for record in session.records[1:]:
        assert record.visible_pairs == heads * min(record.context, 4)


def point(t, cached_scores, scores, cached_s=0.01, s=None):
    """A replayed step; by default the no-cache step takes t ms, so the ratio grows like t."""
    return checks.ReplayPoint(context=t, latency_s=0.001 * t if s is None else s,
                              score_entries=scores, visible_pairs=0, cached_latency_s=cached_s,
                              cached_score_entries=cached_scores, cached_visible_pairs=0,
                              same_token=True)


def test_c1_criterion_passes_on_t_and_t_squared_and_fails_otherwise():
    good = [point(t, 3 * t, 3 * t * t) for t in (20, 30, 40, 50)]
    verdict = checks.c1_verdict(good)
    assert verdict.passed and verdict.ratio_exponent == pytest.approx(1.0)
    assert (verdict.t_min, verdict.ratio_at_min, verdict.ratio_at_max) == (20, pytest.approx(2.0), pytest.approx(5.0))
    # the counts are right, but the measured time ratio does not grow with t (both paths
    # cost the same whatever t: a "no-cache" forward that is really cached, or the reverse)
    flat = [point(t, 3 * t, 3 * t * t, s=0.05) for t in (20, 30, 40, 50)]
    verdict = checks.c1_verdict(flat)
    assert not verdict.passed and verdict.ratio_exponent == pytest.approx(0.0, abs=1e-12)
    barely = [point(t, 3 * t, 3 * t * t, s=0.05 * (t / 20) ** 0.1) for t in (20, 30, 40, 50)]
    assert checks.c1_verdict(barely).ratio_exponent < checks.C1_MIN_RATIO_EXPONENT
    assert not checks.c1_verdict(barely).passed
    # a "cache" that recomputes every key each step: its counts grow like t^2 too
    recomputing = [point(t, 3 * t * t, 3 * t * t) for t in (20, 30, 40, 50)]
    verdict = checks.c1_verdict(recomputing)
    assert not verdict.passed and verdict.exponent_cached == pytest.approx(2.0)
    # the counts are right but the step without a cache was not slower at the largest t
    slower = good[:-1] + [point(50, 150, 7500, cached_s=0.06, s=0.05)]
    assert not checks.c1_verdict(slower).passed
    # too short a span of t to fit an exponent: no verdict of growth, so no pass
    short = [point(t, 3 * t, 3 * t * t) for t in (40, 41, 42)]
    assert checks.c1_verdict(short).exponent_cached is None and not checks.c1_verdict(short).passed
    assert checks.c1_verdict([]) is None


def test_c1_sentence_is_chosen_by_the_criterion(tiny_llama):
    """The summary's C1 verdict is c1_verdict's, and carries the fitted exponents."""
    import dataclasses

    _, session = run(tiny_llama, [7, 8, 9], max_new_tokens=12, check_full_forward=False)
    good = [dataclasses.replace(p, latency_s=0.001 * p.context, cached_latency_s=0.01)
            for p in session.replay]
    shown = dataclasses.replace(session.snapshot(), replay=good)
    verdict = checks.c1_verdict(good)
    assert verdict.passed
    assert (f"grow like t^1.00 with the cache and t^{verdict.exponent_uncached:.2f} without, and the "
            "measured time ratio without / with the cache grows like t^1.00") in figures.summary(shown)
    assert ") holds." in figures.summary(shown) and "成立" in figures.summary(shown, "zh")
    recomputing = [dataclasses.replace(p, cached_score_entries=p.score_entries) for p in good]
    broken = dataclasses.replace(session.snapshot(), replay=recomputing)
    assert f"t^{verdict.exponent_uncached:.2f} with the cache" in figures.summary(broken)
    assert ") does NOT hold." in figures.summary(broken) and "不成立" in figures.summary(broken, "zh")
    flat = [dataclasses.replace(p, latency_s=0.05, cached_latency_s=0.01) for p in session.replay]
    unmoved = dataclasses.replace(session.snapshot(), replay=flat)
    assert "grows like t^0.00" in figures.summary(unmoved)
    assert ") does NOT hold." in figures.summary(unmoved) and "不成立" in figures.summary(unmoved, "zh")


def test_replay_targets_are_bounded_and_spread():
    records = [sess.StepRecord(i, 0, "", 10 + i, "prefill" if i == 0 else "decode", 0.0, 1, 0,
                                  [], []) for i in range(200)]
    picks = checks.replay_targets(records, max_points=24)
    assert len(picks) == 24 and picks[0].index == 1 and picks[-1].index == 199


def test_replay_respects_its_budget(tiny_llama):
    _, session = run(tiny_llama, [1, 2], max_new_tokens=5, check_full_forward=False)
    records = session.records
    points = list(checks.replay_without_cache(tiny_llama, [1, 2] + session.generated_ids, records,
                                               RunOptions(), budget_end=time.perf_counter() - 1))
    assert points == []


def test_logit_check_per_position_on_tiny_models(tiny_llama, tiny_gemma):
    for model in (tiny_llama, tiny_gemma):
        _, session = run(model, [4, 5, 6, 7, 8, 9, 10], max_new_tokens=8, compare_no_cache=False)
        assert len(session.logit_diffs) == 8
        assert max(session.logit_diffs) <= checks.C4_TOLERANCE
        fig = figures.logit_diff_figure(session)
        assert list(fig.data[0].x) == [r.position for r in session.records]


@pytest.mark.parametrize("weights", ["fp32", "bf16", "int8", "gguf"])
def test_the_c4_chart_shows_its_tolerance_line_at_every_precision(tiny_llama, weights, monkeypatch):
    """The dashed tolerance line lies inside the log axis's range, whatever the served
    precision's tolerance (int8's 1.5 used to sit above a range ending at 1)."""
    import math

    _, session = run(tiny_llama, [4, 5, 6], max_new_tokens=3, compare_no_cache=False)
    session.weights = weights                      # the precision its steps read
    session.logit_diffs = [0.2, 0.3, 0.1]          # as a quantized run's differences can be
    fig = figures.logit_diff_figure(session)
    tol = checks.c4_tolerance(weights)
    assert list(fig.data[1].y) == [tol, tol]
    low, high = fig.layout.yaxis.range
    assert low < math.log10(tol) < high and math.log10(0.3) < high


def test_stop_and_deadline_end_within_one_step(tiny_llama):
    flag = {"stop": False}   # raised once the consumer has seen three tokens
    request = req.Request(prompt="x", max_new_tokens=50)
    for stopped in sess.stream_generation(tiny_llama, DigitTokenizer(), [1, 2], request,
                                          should_stop=lambda: flag["stop"]):
        flag["stop"] = len(stopped.records) >= 3
    assert len(stopped.records) == 3 and stopped.stopped == "stop"
    assert stopped.replay == [] and stopped.logit_diffs is None
    late = list(sess.stream_generation(tiny_llama, DigitTokenizer(), [1, 2], request,
                                          deadline=time.perf_counter() - 1))
    assert late[-1].stopped == "deadline" and late[-1].records == []


# ----- validation ---------------------------------------------------------------------------
@pytest.mark.parametrize("fields, message", [
    (dict(prompt="   "), "The prompt is empty"),
    (dict(prompt=None), "The prompt must be text"),
    (dict(prompt="x" * 20_000), "characters long"),
    (dict(max_new_tokens=0), "between 1 and 256"),
    (dict(max_new_tokens=2.5), "whole number"),
    (dict(max_new_tokens=float("nan")), "whole number"),
    (dict(temperature=float("inf")), "finite"),
    (dict(temperature=-0.1), "Temperature must be between"),
    (dict(temperature="hot"), "must be a number"),
    (dict(top_k=-1), "Top-k"),
    (dict(top_p=0.0), "Top-p"),
    (dict(top_p=1.5), "Top-p"),
    (dict(seed=-3), "Seed"),
    (dict(policy="lru"), "Cache policy must be one of full, window, sinks"),
    (dict(policy="window", window=0), "The window w must be between 1 and 4096"),
    (dict(policy="sinks", window=4, sinks=4), "smaller than the window"),
    (dict(policy="sinks", window=8, sinks=0), "at least one sink"),
    (dict(compare_no_cache="yes"), "true or false"),
])
def test_bad_inputs_are_refused_in_plain_words(fields, message):
    values = dict(prompt="hello", max_new_tokens=8, temperature=0.0, top_k=0, top_p=1.0, seed=0,
                  policy="full", window=64, sinks=4, compare_no_cache=True, check_full_forward=True)
    values.update(fields)
    with pytest.raises(InputError, match=message):
        parse_request(**values)


def test_good_inputs_parse_and_map_to_engine_objects():
    request = parse_request("hi", 16.0, 0.7, 40.0, 0.9, 7.0, "sinks", 64.0, 4.0, False, True)
    assert request.max_new_tokens == 16 and request.seed == 7 and request.top_k == 40
    assert request.mask() == MaskSpec(window=64, sinks=4)
    assert request.sampling().temperature == 0.7
    assert parse_request("hi", seed=None).seed is None
    assert parse_request("hi", policy="window", window=32).mask() == MaskSpec(window=32)
    with pytest.raises(InputError, match="exceeds the model's context"):
        req.check_context(100, request, 110)
    req.check_context(100, request, 116)


def test_bad_inputs_come_in_the_visitors_language():
    with pytest.raises(InputError) as error:
        parse_request("hi", policy="sinks", window=4, sinks=4)
    assert error.value.message("zh") == "汇的数量 s（4）必须小于窗口 w（4）。"
    with pytest.raises(InputError) as error:
        parse_request("hi", max_new_tokens=0)
    assert "最大新 token 数" in error.value.message("zh")


def test_tab_limit_is_below_the_engines():
    from models.generate import MAX_NEW_TOKENS

    assert req.TAB_MAX_NEW_TOKENS <= MAX_NEW_TOKENS


# ----- the calculator (C3, C5, C6, C9) ------------------------------------------------------
def shape(name):
    return next(s for s in shapes.SHAPES if s.name == name)


def test_llama2_7b_is_half_a_mib_per_token_and_16_gib_at_32k():
    llama2 = shape("Llama-2-7B")
    assert llama2.bytes_per_token(2) == 0.5 * shapes.MIB == 524_288
    assert llama2.bytes_at(32 * 1024, 2) == 16 * shapes.GIB
    result = shapes.run(32768, 2)
    i = result.shapes.index(llama2)
    assert result.per_token[i] == 524_288 and result.totals[i] == 16 * shapes.GIB
    table, _ = shapes.tables(result, "en")
    row = table.iloc[i]
    assert row["per token"] == "0.500 MiB" and row["at 32,768 tokens"] == "16.00 GiB"
    assert row["attention"] == "MHA"
    zh, _ = shapes.tables(result, "zh")
    assert list(zh.columns) != list(table.columns) and zh.iloc[i, -2] == "16.00 GiB"


def test_gqa_mqa_and_windows_in_the_calculator():
    assert shape("Llama 3 8B").bytes_per_token(2) == 128 * 1024  # 8 of 32 heads: a quarter
    variants = {kind: total for kind, _, _, total in shapes.run(1000, 2).variants}
    assert variants["MHA"] == 4 * variants["GQA"] == 32 * variants["MQA"]
    mistral = shape("Mistral 7B")
    assert mistral.bytes_at(32768, 2) == mistral.bytes_at(4096, 2) == 4096 * mistral.bytes_per_token(2)
    gemma27 = shape("Gemma 3 27B")
    per_layer = 2 * 16 * 128 * 2
    assert gemma27.bytes_at(32768, 2) == per_layer * (52 * 1024 + 10 * 32768)


def test_deepseek_mla_is_gqa_with_2_25_kv_heads():
    deepseek = shape("DeepSeek-V3")
    assert deepseek.elements_per_token_layer() == 576 == 4.5 * deepseek.head_dim
    from models.config import ModelConfig

    per_head = ModelConfig(family="llama", vocab_size=1, d_model=128 * 128, n_layers=61, n_heads=128,
                           n_kv_heads=128, d_ff=1)    # DeepSeek-V3's 61 layers of 128 heads of 128
    assert deepseek.n_kv_heads == 2.25
    assert deepseek.bytes_per_token(2) == per_head.kv_bytes_per_token(2, n_kv_heads=2.25) == 61 * 576 * 2
    assert deepseek.attention() == "MLA"


def test_loaded_model_rows_from_the_real_configs():
    from explorer.checkpoints import prepare_embedded
    from models.config import config_from_hf

    gemma = config_from_hf(json.loads((prepare_embedded("gemma-3-270m") / "config.json").read_text()))
    row = shapes.shape_from_config("Gemma 3 270M (loaded)", gemma)
    published = shape("Gemma 3 270M")
    assert (row.n_layers, row.n_kv_heads, row.head_dim, row.window, row.n_global) == \
        (published.n_layers, published.n_kv_heads, published.head_dim, published.window, published.n_global)
    assert row.bytes_at(2000, 4) == published.bytes_at(2000, 4)
    smol = config_from_hf(json.loads((prepare_embedded("smollm2-135m-instruct") / "config.json").read_text()))
    row = shapes.shape_from_config("SmolLM2", smol)
    assert row.window is None and row.bytes_per_token(4) == 2 * 30 * 3 * 64 * 4


def test_roofline_moves_toward_compute_bound_with_batch(tiny_llama):
    """The model's count from its own tensors (fp32 here); the measured roofline itself is
    tested in tests/test_roofline.py."""
    shape = step_cost.step_shape(tiny_llama)
    intensities = [f / b for b, f in (shape.cost(100, bs) for bs in (1, 8, 64))]
    assert intensities[0] < intensities[1] < intensities[2]
    c = tiny_llama.config
    weights = sum(p.numel() for p in tiny_llama.parameters()) - c.vocab_size * c.d_model  # untied
    assert shape.cost(100, 1)[0] == weights * 4 + c.kv_bytes_per_token(4) * 100 + c.d_model * 4


def test_figures_translate(tiny_gemma):
    _, session = run(tiny_gemma, [1, 2], max_new_tokens=3, compare_no_cache=False,
                     check_full_forward=False)
    fig = figures.layer_bytes_figure(session, "zh")
    assert fig.layout.xaxis.title.text == "层" and "滑动窗口" in "".join(t.name for t in fig.data)


# ----- the real checkpoints -----------------------------------------------------------------
@pytest.fixture(scope="module")
def runtime():
    from explorer.runtime import Runtime

    return Runtime(device="cpu", dtype=torch.float32)


@pytest.mark.parametrize("chosen", ["fp32", None])
def test_real_smollm2_stream_matches_engine_and_full_forward(runtime, monkeypatch, chosen):
    """The served stream against the engine: with fp32 chosen, the eager engine's own greedy
    tokens and C4 within the exact bound; with the served default (gguf for SmolLM2 where the
    CPU has AVX512_VNNI), the engine stepping with the same gguf products (like with like) and
    C4 within that precision's bound."""
    from explorer.serving import Scheduler
    from engine.quantized import WEIGHTS_ENV, weights_of
    from models.generate import SamplingParams, generate
    from models.layers import weight_provider

    if chosen:
        monkeypatch.setenv(WEIGHTS_ENV, chosen)
    else:
        monkeypatch.delenv(WEIGHTS_ENV, raising=False)
    loaded = runtime.get("smollm2-135m-instruct")
    ids, chat = req.encode_prompt(loaded.tokenizer, "Name a colour.")
    assert chat and loaded.tokenizer.decode(ids).endswith("<|im_start|>assistant\n")
    request = req.Request(prompt="Name a colour.", max_new_tokens=4, compare_no_cache=False)
    *_, session = sess.stream_generation(loaded.model, loaded.tokenizer, ids, request,
                                         scheduler=Scheduler(loaded.model))
    assert session.weights == (chosen or measured_default(loaded))
    table = weights_of(loaded.model, session.weights).table if session.weights != "fp32" else None
    with weight_provider(table):   # the engine's steps on the same products (fp32: its own)
        direct = [s.token_id for s in generate(loaded.model, ids, SamplingParams(max_new_tokens=4))]
    assert session.generated_ids == direct
    assert session.bytes_match_formula()
    assert session.records[-1].cache_bytes[0] == 2 * 3 * 64 * 4 * (len(ids) + 3)
    assert max(session.logit_diffs) <= checks.c4_tolerance(session.weights)
    if session.weights == "fp32":
        assert checks.c4_tolerance(session.weights) == checks.C4_TOLERANCE


def run_real(loaded, ids, request):
    *_, session = sess.stream_generation(loaded.model, loaded.tokenizer, ids, request)
    return None, session


@pytest.mark.slow
def test_real_gemma_local_layers_cap_at_512(runtime):
    """C9 on the checkpoint: a 520-token prompt, two tokens: 15 local layers hold 512, 3 global
    layers hold everything."""
    from explorer.texts import long_text

    loaded = runtime.get("gemma-3-270m")
    ids, chat = req.encode_prompt(loaded.tokenizer, long_text()[:4000])
    assert not chat and ids[0] == loaded.config.bos_token_id
    ids = ids[:520]
    request = req.Request(prompt="x", max_new_tokens=2, compare_no_cache=False,
                              check_full_forward=False)
    _, session = run_real(loaded, ids, request)
    last = session.records[-1]
    local = [i for i, lay in enumerate(session.layouts) if lay.kind == "window"]
    glob = [i for i, lay in enumerate(session.layouts) if lay.kind == "full"]
    assert len(local) == 15 and len(glob) == 3
    assert {last.cache_lengths[i] for i in local} == {512}
    assert {last.cache_lengths[i] for i in glob} == {521}
    assert session.bytes_match_formula()
    assert last.cache_bytes[glob[0]] == 2 * 1 * 256 * 4 * 521
    assert last.cache_bytes[local[0]] == 2 * 1 * 256 * 4 * 512


# ----- the worker thread behind the UI ------------------------------------------------------
def _background(model, request, idle_timeout_s=5.0, step_delay_s=0.0):
    """in_background over a run of `model`; step_delay_s slows each step, so that a tiny model's
    run outlasts a short idle timeout however fast the machine."""
    seen = []

    def make(should_stop):
        for session in sess.stream_generation(model, DigitTokenizer(), [1, 2], request,
                                                 should_stop=should_stop):
            seen.append(session)
            yield session
            time.sleep(step_delay_s)

    return transport.in_background(make, idle_timeout_s=idle_timeout_s), seen


def _wait_for_end(seen, timeout=10.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end and not (seen and seen[-1].phase == "done"):
        time.sleep(0.02)
    return seen[-1]


def test_background_stream_delivers_the_same_run(tiny_llama):
    request = req.Request(prompt="x", max_new_tokens=12)
    stream, _ = _background(tiny_llama, request)
    snapshots = list(stream)
    _, direct = run(tiny_llama, [1, 2], max_new_tokens=12)
    final = snapshots[-1]
    assert final.phase == "done" and final.generated_ids == direct.generated_ids
    assert max(final.logit_diffs) <= checks.C4_TOLERANCE and len(final.replay) == 11
    # snapshots are copies: what the consumer holds does not grow under it
    counts = [len(s.records) for s in snapshots]
    assert counts == sorted(counts) and counts[0] < 12


def test_background_stream_merges_decode_steps_within_the_interval(tiny_llama):
    """min_interval_s: the first step goes out at once, decode steps that arrive within the
    interval are merged into one snapshot, and the end of the run is never held back."""
    request = req.Request(prompt="x", max_new_tokens=16, compare_no_cache=False,
                              check_full_forward=False)

    def make(should_stop):
        for session in sess.stream_generation(tiny_llama, DigitTokenizer(), [1, 2], request,
                                                 should_stop=should_stop):
            time.sleep(0.02)   # ~50 steps a second
            yield session

    arrivals = []
    for snapshot in transport.in_background(make, min_interval_s=0.1):
        arrivals.append((time.monotonic(), snapshot))
    counts = [len(s.records) for _, s in arrivals]
    assert counts[0] == 1                                  # the first token alone
    assert arrivals[-1][1].phase == "done" and counts[-1] == 16
    decode = [(at, s) for at, s in arrivals if s.phase == "decode" and s.stopped is None]
    assert len(decode) < 10                                # 16 steps, merged
    gaps = [b[0] - a[0] for a, b in zip(decode, decode[1:])]
    assert all(gap >= 0.09 for gap in gaps)
    assert counts == sorted(counts)


def test_background_stream_interval_may_follow_the_snapshot(tiny_llama):
    """min_interval_s as a function of the last snapshot sent: its value holds back the next."""
    request = req.Request(prompt="x", max_new_tokens=12, compare_no_cache=False,
                          check_full_forward=False)

    def make(should_stop):
        for session in sess.stream_generation(tiny_llama, DigitTokenizer(), [1, 2], request,
                                              should_stop=should_stop):
            time.sleep(0.02)
            yield session

    asked = []

    def interval(snapshot):
        asked.append(len(snapshot.records))
        return 0.0 if len(snapshot.records) < 6 else 10.0   # hold everything after 6 tokens

    counts = [len(s.records) for s in transport.in_background(make, min_interval_s=interval)]
    assert counts[:6] == [1, 2, 3, 4, 5, 6]    # no interval: every step alone
    assert counts[6:] and counts[6] == 12      # then held until decoding ended: merged
    assert asked[:6] == [1, 2, 3, 4, 5, 6]


def test_generate_tab_spaces_text_by_the_visitors_sharing_a_step():
    from explorer.ui import generate as tab

    def session_with(batch):
        return types.SimpleNamespace(records=[types.SimpleNamespace(batch_size=batch)])

    assert tab.text_interval(types.SimpleNamespace(records=[])) == tab.TEXT_INTERVAL_S
    assert tab.text_interval(session_with(1)) == tab.TEXT_INTERVAL_S
    assert tab.text_interval(session_with(30)) == pytest.approx(30 / tab.MESSAGES_PER_S)


def test_closing_the_background_stream_stops_the_worker(tiny_llama):
    request = req.Request(prompt="x", max_new_tokens=4000 // 16, compare_no_cache=False)
    stream, seen = _background(tiny_llama, request)
    for _, snapshot in zip(range(3), stream):
        pass
    stream.close()   # what Gradio does on Stop, on a closed tab and at the end of an event
    final = _wait_for_end(seen)
    assert final.stopped == "stop" and len(final.records) < request.max_new_tokens


def test_an_abandoned_background_stream_stops_after_the_idle_timeout(tiny_llama):
    request = req.Request(prompt="x", max_new_tokens=250, compare_no_cache=False)
    # 250 steps of >= 10 ms: the run would last 2.5 s, far past the 0.2 s idle timeout
    stream, seen = _background(tiny_llama, request, idle_timeout_s=0.2, step_delay_s=0.01)
    next(stream)    # then never asked again, never closed
    final = _wait_for_end(seen)
    assert final.stopped == "stop" and len(final.records) < 250
    stream.close()


def test_a_consumer_waiting_through_a_long_first_step_is_not_idle(tiny_llama):
    """A prefill longer than the idle timeout (a long prompt on a busy CPU) must not stop the
    run: the consumer is waiting for it, not gone."""
    request = req.Request(prompt="x", max_new_tokens=4, compare_no_cache=False,
                          check_full_forward=False)

    def make(should_stop):
        time.sleep(0.4)   # the first step takes longer than idle_timeout_s
        yield from sess.stream_generation(tiny_llama, DigitTokenizer(), [1, 2], request,
                                          should_stop=should_stop)

    final = list(transport.in_background(make, idle_timeout_s=0.2))[-1]
    assert final.stopped == "length" and len(final.records) == 4


def test_background_stream_raises_the_workers_error():
    def make(should_stop):
        raise ValueError("prompt too long")
        yield

    with pytest.raises(ValueError, match="prompt too long"):
        list(transport.in_background(make))


def test_mask_is_drawn_over_the_caches_real_slots(tiny_gemma, tiny_llama):
    """C4's (T, S) mask: the last T tokens fed as one chunk into the engine's cache holding the
    tokens before them. A full layer's keys are positions 0..t-1 (S = cache.pos + T); a ring
    buffer's are its w slots in ring order (slot = position mod w) then the chunk's T keys."""
    _, session = run(tiny_gemma, [1, 2, 3, 4], max_new_tokens=7, compare_no_cache=False)
    t_end = session.records[-1].context          # 10 tokens fed
    reading = session.cache_reading
    assert reading.tokens == t_end
    window, full = reading.masks
    assert [session.layouts[b.layer].describe() for b in reading.masks] == ["sliding window 5", "full (global)"]
    for block in reading.masks:
        assert block.cache_pos == t_end - 8 and block.q_pos == tuple(range(t_end - 8, t_end))
    assert full.kv_pos == tuple(range(t_end)) and full.capacity == session.max_len
    # the ring held positions cache.pos-5 .. cache.pos-1 (all 5 slots filled at cache.pos = 2?
    # no: cache.pos = 2, so 2 slots filled, 3 empty), then the chunk's 8 keys
    ring, chunk = window.kv_pos[:5], window.kv_pos[5:]
    assert chunk == tuple(range(t_end - 8, t_end)) and window.capacity == 5
    assert sorted(p for p in ring if p >= 0) == list(range(max(0, t_end - 8 - 5), t_end - 8))
    assert all(p < 0 or p % 5 == slot for slot, p in enumerate(ring))
    for q, row in zip(window.q_pos, window.visible):
        seen = sorted(p for p, v in zip(window.kv_pos, row) if v)
        assert seen == list(range(max(0, q - 4), q + 1))          # the window, by position
    for q, row in zip(full.q_pos, full.visible):
        assert [k for k, v in enumerate(row) if v] == list(range(q + 1))
    # a run long enough that the ring wrapped before the chunk: every slot full, in ring order
    _, long = run(tiny_gemma, list(range(1, 13)), max_new_tokens=8, compare_no_cache=False)
    (window, _) = long.cache_reading.masks
    ring = window.kv_pos[:5]
    assert sorted(ring) == list(range(window.cache_pos - 5, window.cache_pos))
    assert [p % 5 for p in ring] == [0, 1, 2, 3, 4] and len(window.kv_pos) == 5 + 8
    _, sinks = run(tiny_llama, [1, 2, 3, 4, 5, 6], max_new_tokens=6, policy="sinks", window=3, sinks=2,
                   compare_no_cache=False)
    (block,) = sinks.cache_reading.masks
    assert block.capacity == 5 and block.kv_pos[:2] == (0, 1)   # the sinks stay in slots 0, 1
    q, row = block.q_pos[-1], block.visible[-1]
    assert sorted(p for p, v in zip(block.kv_pos, row) if v) == [0, 1, q - 2, q - 1, q]
    fig = figures.mask_figure(sinks)
    heat = fig.data[0]
    assert heat.type == "heatmap" and len(heat.z) == 8 and len(heat.z[0]) == 5 + 8
    assert [list(r) for r in heat.z] == [[int(v) for v in r] for r in block.visible]
    assert "13 keys (5 ring slots" in fig.layout.annotations[0].text


def test_allocated_and_used_bytes_are_read_from_the_tensors(tiny_gemma):
    """C3: allocated = the whole K and V buffers (a window's w slots, a full layer's
    prompt + max new tokens), used = the slots holding tokens, both read back from the
    engine's cache, equal to the formula and to what the run's own cache reported."""
    _, session = run(tiny_gemma, [1, 2, 3, 4], max_new_tokens=9, compare_no_cache=False)
    c = tiny_gemma.config
    row = 2 * c.n_kv_heads * c.head_dim * 4                   # K and V of one slot, fp32
    reading = session.cache_reading
    last = session.records[-1]
    assert reading.capacity == (5,) * 5 + (13,)
    assert reading.allocated_bytes == (5 * row,) * 5 + (13 * row,)
    assert reading.held == (5,) * 5 + (12,) and list(reading.used_bytes) == last.cache_bytes
    assert session.formula_allocated() == list(reading.allocated_bytes)
    verdict = sess.c3_verdict(session)
    assert verdict.passed and verdict.used_equal and verdict.allocated_equal and verdict.reading_equal
    fig = figures.layer_bytes_figure(session)
    allocated = next(trace for trace in fig.data if trace.name == "allocated (whole buffers)")
    assert [y * 1024 for y in allocated.y] == list(reading.allocated_bytes)
    assert fig.layout.barmode == "overlay"
    text = figures.summary(session)
    assert f"take **{sum(reading.allocated_bytes):,} B**" in text and "the same as the run's own" in text


def test_c3_criterion_fails_on_a_cache_that_dropped_a_token(tiny_gemma):
    import dataclasses

    _, session = run(tiny_gemma, [1, 2, 3, 4], max_new_tokens=9, compare_no_cache=False)
    c = tiny_gemma.config
    row = 2 * c.n_kv_heads * c.head_dim * 4
    dropped = session.snapshot()
    last = dropped.records[-1]
    dropped.records[-1] = dataclasses.replace(last, cache_bytes=[b - row for b in last.cache_bytes],
                                              cache_lengths=[n - 1 for n in last.cache_lengths])
    verdict = sess.c3_verdict(dropped)
    assert not verdict.passed and not verdict.used_equal and verdict.reading_equal is False
    reading = session.cache_reading
    short = dataclasses.replace(session.snapshot(), cache_reading=dataclasses.replace(
        reading, allocated_bytes=(reading.allocated_bytes[0] - row,) + reading.allocated_bytes[1:]))
    assert not sess.c3_verdict(short).passed and sess.c3_verdict(short).allocated_equal is False
    unread = dataclasses.replace(session.snapshot(), cache_reading=None)
    assert not sess.c3_verdict(unread).passed       # no pass without the tensors read back


def test_c9_criterion_on_windowed_layers(tiny_gemma):
    import dataclasses

    _, session = run(tiny_gemma, [1, 2, 3], max_new_tokens=10, compare_no_cache=False)
    verdict = sess.c9_verdict(session)
    assert verdict.passed and (verdict.cap, verdict.capped_held, verdict.capped_slots) == (5, 5, 5)
    assert verdict.full_held == verdict.tokens == 12
    # a windowed layer that kept growing past its window fails
    broken = session.snapshot()
    last = broken.records[-1]
    broken.records[-1] = dataclasses.replace(last, cache_lengths=[6] + last.cache_lengths[1:])
    assert not sess.c9_verdict(broken).passed
    # before the window is passed there is nothing to show yet
    _, early = run(tiny_gemma, [1, 2], max_new_tokens=2, compare_no_cache=False)
    assert not sess.c9_verdict(early).passed


def test_c4_check_projects_only_the_compared_rows(tiny_gemma, monkeypatch):
    """The full forward runs every block over all tokens, but the LM head only over the rows
    that are compared (for Gemma's 262k vocabulary the whole (T, V) would be ~1 GiB)."""
    from models.generate import full_forward_logits

    ids = [4, 5, 6, 7, 8, 9, 10, 11, 12, 13]   # 7 prompt tokens + 3 generated
    zeros = [torch.zeros(tiny_gemma.config.vocab_size) for _ in range(4)]
    shapes_seen = []
    head = tiny_gemma.head

    def recording_head(x):
        shapes_seen.append(tuple(x.shape))
        return head(x)

    monkeypatch.setattr(tiny_gemma, "head", recording_head)
    diffs = checks.logit_differences(tiny_gemma, ids, 7, zeros, RunOptions())
    assert shapes_seen == [(1, 4, tiny_gemma.config.d_model)]
    monkeypatch.undo()
    full = full_forward_logits(tiny_gemma, ids[:10], RunOptions())[6:10]   # rows 6..9 predict 7..10
    # the same numbers (to fp32 rounding: a matmul over fewer rows may block differently)
    torch.testing.assert_close(torch.tensor(diffs), full.abs().amax(dim=-1), rtol=1e-6, atol=1e-6)


def test_a_run_that_copied_its_prompt_says_so_in_both_languages(tiny_llama):
    """Two runs of one session on one 20-token prompt in one loop: the second copies 19
    tokens' keys and values; its record and its evidence say how many, and C3 still holds for
    it (its cache holds every token)."""
    from explorer.serving import Scheduler, Visitor
    from tests.helpers import run_together

    request = req.Request(prompt="x", max_new_tokens=4, compare_no_cache=False,
                          check_full_forward=False)
    ids = list(range(3, 23))
    loop = Scheduler(tiny_llama)
    finals = []

    def visit():
        *_, last = sess.stream_generation(tiny_llama, DigitTokenizer(), ids, request, scheduler=loop,
                                          eos_ids=[], visitor=Visitor(session="one"))
        finals.append(last)

    run_together(visit, visit)
    copied = [s for s in finals if s.records[0].shared_prefix]
    assert len(finals) == 2 and len(copied) == 1
    session = copied[0]
    assert session.records[0].shared_prefix == 19 and session.records[0].tokens_processed == 1
    assert session.bytes_match_formula()
    en, zh = figures.summary(session, "en"), figures.summary(session, "zh")
    assert "first 19 of 20 tokens" in en and "only the last 1" in en
    assert "前 19 个" in zh and "前缀复用" in zh
    other = next(s for s in finals if s is not session)
    assert "prefix reuse" not in figures.summary(other, "en")
