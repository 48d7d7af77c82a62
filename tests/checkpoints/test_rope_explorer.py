"""explorer/rope: our RoPE against transformers' for both real checkpoints' settings, the
extension recipes against transformers', the Toeplitz property (C11) and its failure with one-sided
rotation (C12) on the real models' q and k, the unmodified base reproducing the model's logits,
and the perplexity sweep (C13)."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from explorer.inputs import InputError
from explorer.rope import capture as rope_capture, distance, pair, scaling, sweep as rope_sweep, toeplitz
from models.forward import RunOptions
from models.layers import apply_rope, rope_cos_sin, rope_inv_freq
from tests.unit.test_rope_figures import synthetic_capture

SMOL = "smollm2-135m-instruct"
GEMMA = "gemma-3-270m"


@pytest.fixture(scope="module")
def loaded():
    """name -> (model, tokenizer, hf_config); loaded once per module, on the CPU in fp32."""
    from transformers import AutoConfig, AutoTokenizer

    from explorer.checkpoints import prepare_embedded
    from models.loading import load_model

    cache = {}

    def get(name):
        if name not in cache:
            folder = prepare_embedded(name)
            cache[name] = (load_model(folder, device=torch.device("cpu"), dtype=torch.float32),
                           AutoTokenizer.from_pretrained(str(folder)),
                           AutoConfig.from_pretrained(str(folder)))
        return cache[name]

    return get


def text() -> str:
    from explorer.texts import long_text

    return long_text()


def prose() -> str:
    """The long text cut to what a visitor may send to a capture (its largest: 512 tokens)."""
    return text()[:8000]


# ----------------------------------------------------------------------------- parity with transformers

def test_rope_equals_transformers_llama_rotary_for_smollm2(loaded):
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding, apply_rotary_pos_emb

    model, _, hf_config = loaded(SMOL)
    config = model.config
    assert config.rope_theta == 100_000.0 and config.head_dim == 64
    positions = torch.arange(0, 8192)
    torch.manual_seed(0)
    q = torch.randn(1, config.n_heads, len(positions), config.head_dim)
    k = torch.randn(1, config.n_kv_heads, len(positions), config.head_dim)
    hf_cos, hf_sin = LlamaRotaryEmbedding(hf_config)(q, positions[None])        # (1, T, D)
    cos, sin = rope_cos_sin(positions, rope_inv_freq(config.head_dim, config.rope_theta), torch.float32)
    torch.testing.assert_close(cos, hf_cos[0], rtol=0, atol=0)
    torch.testing.assert_close(sin, hf_sin[0], rtol=0, atol=0)
    hf_q, hf_k = apply_rotary_pos_emb(q, k, hf_cos, hf_sin)
    torch.testing.assert_close(apply_rope(q, cos, sin), hf_q, rtol=0, atol=0)
    torch.testing.assert_close(apply_rope(k, cos, sin), hf_k, rtol=0, atol=0)


@pytest.mark.slow
def test_rope_equals_transformers_gemma3_rotary_for_both_layer_types(loaded):
    from transformers.models.gemma3.modeling_gemma3 import Gemma3RotaryEmbedding, apply_rotary_pos_emb

    model, _, hf_config = loaded(GEMMA)
    config = model.config
    rotary = Gemma3RotaryEmbedding(hf_config)
    positions = torch.arange(0, 4096)
    torch.manual_seed(1)
    q = torch.randn(1, config.n_heads, len(positions), config.head_dim)
    k = torch.randn(1, config.n_kv_heads, len(positions), config.head_dim)
    seen = set()
    for layer in (0, 5):  # sliding (10k) and global (1M)
        kind = config.layer_types[layer]
        seen.add((kind, config.layer_rope_theta(layer)))
        hf_cos, hf_sin = rotary(q, positions[None], kind)
        cos, sin = rope_cos_sin(positions, rope_inv_freq(config.head_dim, config.layer_rope_theta(layer)),
                                torch.float32)
        torch.testing.assert_close(cos, hf_cos[0], rtol=0, atol=0)
        torch.testing.assert_close(sin, hf_sin[0], rtol=0, atol=0)
        hf_q, hf_k = apply_rotary_pos_emb(q, k, hf_cos, hf_sin)
        torch.testing.assert_close(apply_rope(q, cos, sin), hf_q, rtol=0, atol=0)
        torch.testing.assert_close(apply_rope(k, cos, sin), hf_k, rtol=0, atol=0)
    assert seen == {("sliding_attention", 10_000.0), ("full_attention", 1_000_000.0)}


def test_yarn_and_linear_frequencies_equal_transformers():
    from transformers import LlamaConfig
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    for factor, context in ((4.0, 8192), (16.0, 2048)):
        cfg = LlamaConfig(hidden_size=576, num_attention_heads=9, head_dim=64,
                          max_position_embeddings=int(context * factor),
                          rope_parameters={"rope_type": "yarn", "rope_theta": 100000.0, "factor": factor,
                                           "original_max_position_embeddings": context})
        expected, _ = ROPE_INIT_FUNCTIONS["yarn"](cfg, "cpu")
        torch.testing.assert_close(scaling.yarn_inv_freq(64, 100000.0, factor, context), expected,
                                   rtol=1e-6, atol=0)
    result = scaling.run(64, 100000.0, 4.0, 8192)
    assert abs(result.ratio[scaling.METHODS.index("linear")] - 0.25).max() < 1e-6
    ntk = result.ratio[scaling.METHODS.index("ntk")]
    assert ntk[0] == pytest.approx(1.0) and ntk[-1] == pytest.approx(0.25, rel=1e-5)


# ----------------------------------------------------------------------------- C11, C12 on the real models

@pytest.mark.parametrize("name, layer", [(SMOL, 3), (SMOL, 17), (GEMMA, 3), (GEMMA, 5)])
def test_toeplitz_on_real_q_and_k(loaded, name, layer):
    model, tokenizer, _ = loaded(name)
    capture = rope_capture.capture_qk(model, tokenizer, prose(), layer, max_tokens=160)
    assert capture.q_pre.shape == (model.config.n_heads, 160, model.config.head_dim)
    assert capture.theta_base == model.config.layer_rope_theta(layer)
    # our rotation of the captured pre-RoPE vectors is exactly what the model applied
    assert rope_capture.rope_reproduction_error(capture) < 1e-5
    head = model.config.n_heads - 1
    result = toeplitz.toeplitz(capture, head, q_token=120, k_token=40, n_positions=128)
    # both rotated: constant along every diagonal (float64 rounding only)
    assert result.spread_both.spread < 1e-4, result.spread_both
    assert result.spread_both.relative < 1e-10, result.spread_both
    assert result.identity_error < 1e-4
    # only q rotated: the absolute position is back, diagonals clearly not constant
    assert result.spread_query.relative > 1e-2, result.spread_query
    assert result.spread_query.spread > 1000 * result.spread_both.spread
    # the criteria the summary and the claims board read their verdicts from
    assert toeplitz.toeplitz_holds(result) and toeplitz.identity_holds(result) and toeplitz.reproduces(result)
    assert toeplitz.absolute_position_remains(result)
    summary = toeplitz.summary(result, "en")
    assert "**Both rotated: constant along every diagonal.**" in summary
    assert "**Only q rotated: the absolute position remains.**" in summary
    assert f"largest spread is {result.spread_both.relative:.1g} of the largest score" in summary
    assert "reproduces the q and k the model used" in summary


def test_toeplitz_verdicts_fail_on_broken_inputs(loaded):
    """Each verdict follows its number: RoPE applied to one side only where both sides are
    expected is not Toeplitz; both sides rotated where one side is expected leaves no trace of
    m; a capture whose q was rotated at shuffled positions is not reproduced."""
    import dataclasses

    model, tokenizer, _ = loaded(SMOL)
    capture = rope_capture.capture_qk(model, tokenizer, prose(), 3, max_tokens=64)
    good = toeplitz.toeplitz(capture, 0, q_token=60, k_token=20, n_positions=64)
    one_side_as_both = dataclasses.replace(good, both=good.query_only, spread_both=good.spread_query)
    assert not toeplitz.toeplitz_holds(one_side_as_both)
    assert "**Both rotated: not constant along the diagonals.**" in toeplitz.summary(one_side_as_both, "en")
    assert "对角线不是常数" in toeplitz.summary(one_side_as_both, "zh")
    both_as_one_side = dataclasses.replace(good, query_only=good.both, spread_query=good.spread_both)
    assert not toeplitz.absolute_position_remains(both_as_one_side)
    assert both_as_one_side.one_side_ratio == pytest.approx(1.0)
    assert "no clear trace of the absolute position" in toeplitz.summary(both_as_one_side, "en")
    # the model's q as if it had been rotated at shuffled positions
    order = torch.randperm(capture.q.shape[1], generator=torch.Generator().manual_seed(0))
    cos, sin = rope_cos_sin(order, capture.inv_freq(), torch.float32)
    shuffled = dataclasses.replace(capture, q=apply_rope(capture.q_pre, cos, sin))
    bad = toeplitz.toeplitz(shuffled, 0, q_token=60, k_token=20, n_positions=64)
    assert not toeplitz.reproduces(bad) and bad.reproduction_relative > 1e-2
    assert "does **not** reproduce" in toeplitz.summary(bad, "en")
    # a broken identity: the offset scores taken one position off
    assert not toeplitz.identity_holds(dataclasses.replace(good, identity_error=1e-3))
    assert "does **not** hold" in toeplitz.summary(dataclasses.replace(good, identity_error=1e-3), "en")


def test_capture_stops_early_and_matches_a_full_forward(loaded):
    from models.forward import Recorder

    model, tokenizer, _ = loaded(SMOL)
    capture = rope_capture.capture_qk(model, tokenizer, prose(), 2, max_tokens=48)
    ids = rope_capture.capped_ids(tokenizer, text(), 48)
    rec = Recorder(["q_pre_rope", "k"], layers=[2])
    with torch.inference_mode():
        model(torch.tensor([ids]), recorder=rec)
    torch.testing.assert_close(capture.q_pre, rec.get("q_pre_rope", 2)[0], rtol=0, atol=0)
    torch.testing.assert_close(capture.k, rec.get("k", 2)[0], rtol=0, atol=0)


def test_pair_rotation_keeps_its_length_and_hits_the_models_own_q(loaded):
    model, tokenizer, _ = loaded(GEMMA)
    capture = rope_capture.capture_qk(model, tokenizer, prose(), 5, max_tokens=64)
    result = pair.run(toeplitz.toeplitz(capture, head=2, q_token=50, k_token=0, n_positions=16), pair=1,
                      position=300)
    (fig,) = pair.figures(result, "en")
    assert result.own_error < 1e-5
    points = pair.pair_trajectory(capture.q_pre[2, 50], 1, capture.inv_freq(), torch.arange(301))
    radii = (points ** 2).sum(-1) ** 0.5
    assert radii.max() - radii.min() < 1e-4 * max(radii.max(), 1e-6)
    assert result.angle == pytest.approx(300 * result.theta)
    assert len(fig.data) == 5
    assert pair.length_kept(result) and pair.hits_own_q(result)
    summary = pair.summary(result, "en")
    assert "lies where our rotation puts it" in summary and f"Its length stays {result.radius:.4g}" in summary


def test_pair_verdicts_follow_the_numbers():
    """The synthetic capture's q is random, not the rotation of its q_pre: the summary says the
    model's q is not where the rotation puts it; a stretched trajectory is not length-kept."""
    import dataclasses

    rotation = pair.run(toeplitz.toeplitz(synthetic_capture(), 1, 5, 3, 16), 2, 40)
    assert pair.length_kept(rotation) and not pair.hits_own_q(rotation)
    assert "is **not** where our rotation puts it" in pair.summary(rotation, "en")
    assert "**不在**" in pair.summary(rotation, "zh")
    stretched = dataclasses.replace(rotation, points=rotation.points * np.linspace(1, 1.1, len(rotation.points))[:, None])
    assert not pair.length_kept(stretched) and "is **not** constant" in pair.summary(stretched, "en")


def test_real_scores_follow_the_models_mask(loaded):
    model, tokenizer, _ = loaded(GEMMA)
    capture = rope_capture.capture_qk(model, tokenizer, prose(), 0, max_tokens=32)
    scores = rope_capture.real_scores(capture, 1)
    assert torch.isnan(scores.triu(1)[scores.triu(1) != 0]).all()     # future keys hidden
    assert torch.isfinite(torch.diagonal(scores)).all()


def test_capture_input_errors(loaded):
    model, tokenizer, _ = loaded(SMOL)
    with pytest.raises(InputError, match="layer must be between 0 and 29"):
        rope_capture.capture_qk(model, tokenizer, "hello", 30)
    with pytest.raises(InputError, match="empty"):
        rope_capture.capture_qk(model, tokenizer, "   ", 0)
    capture = rope_capture.capture_qk(model, tokenizer, "One two three four five six.", 0)
    with pytest.raises(InputError, match="head must be between 0 and 8"):
        toeplitz.toeplitz(capture, 9, 0, 0, 16)


def test_distance_profile_accounts_for_every_attention_weight(loaded):
    model, tokenizer, _ = loaded(GEMMA)
    t = 96
    result = distance.run(model, tokenizer, prose(), t)
    profile = result.profile
    assert profile.shape == (model.config.n_layers, t) and result.n_tokens == t
    # each query's weights sum to 1 and are spread over distances 0..m; mean × count = T
    counts = torch.arange(t, 0, -1).double().numpy()
    totals = (profile * counts).sum(axis=1)
    assert abs(totals - t).max() < 1e-3


# ----------------------------------------------------------------------------- the base on the real model

@pytest.mark.parametrize("name", [SMOL, GEMMA])
def test_unmodified_base_reproduces_the_models_logits(loaded, name):
    model, tokenizer, _ = loaded(name)
    config = model.config
    ids = torch.tensor([rope_capture.capped_ids(tokenizer, text(), 40)])
    with torch.inference_mode():
        default = model(ids)
        same = model(ids, options=RunOptions(rope_theta=config.rope_theta,
                                             rope_local_theta=config.rope_local_theta))
        via_helper = model(ids, options=rope_sweep.base_options(config, rope_sweep.trained_base(config, "full"), "full"))
        changed = model(ids, options=rope_sweep.base_options(config, 10 * config.rope_theta, "all"))
    torch.testing.assert_close(same, default, rtol=0, atol=0)
    torch.testing.assert_close(via_helper, default, rtol=0, atol=0)
    assert (changed - default).abs().max() > 1e-2


def test_perplexity_sweep_includes_the_trained_base_and_matches_a_plain_forward(loaded, monkeypatch):
    import torch.nn.functional as F

    model, tokenizer, _ = loaded(SMOL)
    # blocks of 50 rows of logits (the real bound is 64 MB: 341 rows of SmolLM2's 49,152 logits)
    monkeypatch.setattr(rope_sweep, "LOGIT_BLOCK_BYTES", 50 * 4 * model.config.vocab_size)
    steps = []
    heads = []
    head = model.head
    model.head = lambda x: heads.append(x.shape[0]) or head(x)     # rows per block of logits
    try:
        sweep = rope_sweep.run(model, tokenizer, text(), [1e4, 1e6], "full", 128,
                               progress=lambda done, total, key: steps.append((done, total, key)))
    finally:
        del model.head
    assert sweep.bases == (1e5, 1e4, 1e6) and sweep.trained == 1e5
    assert steps == [(0, 3, 1e5), (1, 3, 1e4), (2, 3, 1e6), (3, 3, 1e6)]
    # at most one (rows, V) fp32 block of logits at a time
    assert heads == [50, 50, 27] * 3                                # 127 predicted positions per forward
    ids = torch.tensor([rope_capture.capped_ids(tokenizer, text(), 128)])
    with torch.inference_mode():
        logits = model(ids)[0]
    expected = F.cross_entropy(logits[:-1], ids[0, 1:], reduction="none")
    torch.testing.assert_close(sweep.nll[1e5], expected, rtol=1e-5, atol=1e-5)
    table = rope_sweep.table(sweep, "en")
    assert table["base"].iloc[0] == "100k (trained)"
    assert table["mean NLL − trained (nats)"].iloc[0] == 0.0
    assert table["perplexity"].iloc[1] == pytest.approx(math.exp(float(sweep.nll[1e4].mean())), abs=1e-4)
    with pytest.raises(InputError, match="no sliding-window layers"):
        rope_sweep.run(model, tokenizer, text(), [1e4], "sliding", 128)
    with pytest.raises(InputError, match="between 128 and 2048"):               # the slider's limits
        rope_sweep.run(model, tokenizer, text(), [1e4], "full", 4096)


def test_gemma_all_layers_compares_against_the_model_as_trained(loaded):
    model, tokenizer, _ = loaded(GEMMA)
    config = model.config
    assert rope_sweep.trained_base(config, "all") is None          # 10k sliding, 1M full: no single base
    assert rope_sweep.trained_options(config, "all") == RunOptions()
    assert rope_sweep.trained_base(config, "sliding") == 10_000.0 and rope_sweep.trained_base(config, "full") == 1e6
    sweep = rope_sweep.run(model, tokenizer, text(), [1e6], "all", 128)
    assert sweep.bases == (rope_sweep.UNMODIFIED, 1e6)
    assert rope_sweep.table(sweep, "en")["base"].tolist() == ["as trained (10k sliding / 1M full)", "1M"]
    # 1M on every layer is *not* the trained model: its sliding layers were trained with 10k
    assert (sweep.nll[1e6] - sweep.nll[rope_sweep.UNMODIFIED]).abs().max() > 1e-3


# ----------------------------------------------------------------------------- distance: token 0's share, chosen

def test_first_key_share_by_hand_and_the_hover_chosen_from_it():
    """At distance d only query d reaches token 0: its share of the mean at d is exact, and the
    hover calls token 0 a sink only where that share is at least FIRST_KEY_MOST."""
    probs = torch.rand(1, 2, 8, 8).tril()
    probs = probs / probs.sum(-1, keepdim=True)
    first = distance.first_key_by_distance(probs)
    mean = probs[0].double().mean(0)
    for d in range(8):
        assert float(first[d]) == pytest.approx(float(mean[d, 0]) / (8 - d))
    # a profile where token 0 takes everything at distance 3 and nothing at distance 5
    t = 8
    profile = np.full((1, t), 0.1)
    first_key = np.zeros((1, t))
    first_key[0, 3] = 0.1                    # all of distance 3's mean weight is on token 0
    first_key[0, 5] = 0.01                   # a tenth of distance 5's
    result = distance.DistanceProfile(profile=profile, layer_types=("full_attention",), seconds=0.1,
                                      first_key=first_key)
    share = result.first_key_share()
    assert share[0, 3] == pytest.approx(1.0) and share[0, 5] == pytest.approx(0.1) and share[0, 0] == 0
    hover = distance.figures(result, "en")[0].data[0].text[0]
    assert "100% of it is query 3's weight on token 0" in hover[3] and "(a sink)" in hover[3]
    assert "query 5's weight on token 0: 10% of it" in hover[5] and "sink" not in hover[5]
    assert "sink" not in hover[7] or "0%" in hover[7]
    assert "注意力汇" in distance.figures(result, "zh")[0].data[0].text[0][3]


def test_sink_sentence_follows_the_measured_mass():
    t = 16
    uniform_mass = float(np.mean(1.0 / np.arange(2, t + 1)))
    reach = np.arange(t, 0, -1)
    for mass, sink in ((0.5, True), (uniform_mass, False)):
        first_key = np.zeros((2, t))
        first_key[:, 1:] = mass / reach[1:]          # every query m ≥ 1 puts `mass` on token 0
        result = distance.DistanceProfile(profile=np.full((2, t), 0.05), layer_types=("full_attention",) * 2,
                                          seconds=0.1, first_key=first_key)
        assert result.sink_mass() == pytest.approx([mass, mass])
        assert distance.has_sink(result) is sink
        en = distance.summary(result, "en")
        assert (f"Token 0 gets {mass:.3f}" in en) and (("only ×" in en) is not sink)


def test_distance_on_the_real_model_finds_its_sink(loaded):
    model, tokenizer, _ = loaded(SMOL)
    result = distance.run(model, tokenizer, prose(), 64)
    share = result.first_key_share()
    assert ((share >= 0) & (share <= 1 + 1e-9)).all()
    assert distance.has_sink(result), result.sink_mass()
    assert "×" in distance.summary(result, "en") and "at distances of 63 tokens or more" in distance.summary(result, "en")


# ----------------------------------------------------------------------------- the sweep's verdicts

def fake_sweep(nll: dict, trained=1e5, planned=None) -> rope_sweep.Sweep:
    return rope_sweep.Sweep(bases=tuple(nll), trained=trained, trained_pair=(trained, trained), apply_to="full",
                            nll={k: torch.full((40,), float(v)) for k, v in nll.items()},
                            seconds={k: 1.0 for k in nll}, n_tokens=41, model_title="M",
                            planned=tuple(planned or nll), time_limit_s=30.0)


def test_perplexity_rise_verdict_follows_the_numbers():
    rises = fake_sweep({1e5: 3.0, 1e4: 3.2, 1e7: 3.1})
    assert rope_sweep.perplexity_rises(rises)
    assert rope_sweep.perplexity_ratios(rises)[1e4] == pytest.approx(math.exp(0.2))
    en = rope_sweep.summary(rises, "en")
    assert ("**Every changed base raised the perplexity** by at least 1%, over the whole text and "
            "over its last quarter: all 2 of them") in en
    assert f"×{math.exp(0.1):.3f} (10M)" in en
    assert "每个改动后的 base 都让困惑度上升" in rope_sweep.summary(rises, "zh")
    # a changed base that never reached the model: the same NLL as trained
    ignored = fake_sweep({1e5: 3.0, 1e7: 3.0})
    assert not rope_sweep.perplexity_rises(ignored)
    assert "1 of 1 did not (whole, last quarter): 10M (×1.000, ×1.000)" in rope_sweep.summary(ignored, "en")
    # worse over the whole text, but not over its last quarter (the farthest positions)
    near = fake_sweep({1e5: 3.0, 1e7: 3.0})
    near.nll[1e7][:30] = 3.4                  # predicted positions 1-30 of 40: the first three quarters
    assert rope_sweep.perplexity_ratios(near)[1e7] >= 1 + rope_sweep.PPL_RISE_MIN
    assert rope_sweep.far_ratios(near)[1e7] == pytest.approx(1.0)
    assert not rope_sweep.perplexity_rises(near)
    assert not rope_sweep.perplexity_rises(fake_sweep({1e5: 3.0}))      # nothing changed was measured
    cut = fake_sweep({1e5: 3.0, 1e4: 3.2}, planned=(1e5, 1e4, 1e7, 1e8))
    assert cut.timed_out
    assert "**Time limit of 30 s reached:** 2 of 4 forwards ran; not measured: 10M, 100M." in rope_sweep.summary(cut, "en")
    assert "10M, 100M" in rope_sweep.summary(cut, "zh")


def counting_forwards(monkeypatch, model) -> list:
    """Counts the model's forward calls from now on."""
    calls = []
    forward = model.forward

    def counted(*args, **kwargs):
        calls.append(1)
        return forward(*args, **kwargs)
    # in the instance's dict, so that undo removes it rather than leaving a bound forward behind
    monkeypatch.setitem(vars(model), "forward", counted)
    return calls


def test_a_sweep_closed_after_its_first_forward_runs_no_more(loaded, monkeypatch):
    model, tokenizer, _ = loaded(SMOL)
    calls = counting_forwards(monkeypatch, model)
    steps = rope_sweep.steps(model, tokenizer, text(), [1e4, 1e6, 1e7], "full", 128)
    assert next(steps) == rope_sweep.SweepStep(0, 4, 1e5) and calls == []     # checks only, no forward yet
    assert next(steps) == rope_sweep.SweepStep(1, 4, 1e4) and len(calls) == 1
    steps.close()                       # what Gradio does on Stop or a closed page, at the next yield
    assert len(calls) == 1


def test_the_time_limit_ends_a_sweep_with_what_it_measured(loaded):
    model, tokenizer, _ = loaded(SMOL)
    result = rope_sweep.run(model, tokenizer, text(), [1e4, 1e6], "full", 128, time_limit_s=0.0)
    assert result.bases == (1e5,) and result.planned == (1e5, 1e4, 1e6) and result.timed_out
    en = rope_sweep.summary(result, "en")
    assert "**Time limit of 0 s reached:** 1 of 3 forwards ran; not measured: 10k, 1M." in en


def test_the_tab_handlers_stop_between_forwards(runtime, monkeypatch):
    """The sweep and continuation handlers are generators that yield between forwards: closed
    after the first forward they run no more; with a zero time limit they end with the message."""
    from explorer.ui.tabs import rope_context

    fixed = lambda *args, **kwargs: None  # noqa: E731
    model = runtime.get(SMOL).model
    calls = counting_forwards(monkeypatch, model)
    handler = rope_context.sweep(runtime, SMOL, "en", "10000, 1M, 10M", "full", 128, progress=fixed)
    first = next(handler)
    assert first[1] == "forward 1 of 4: base 100k (trained), 128 tokens…" and first[4] == "" and calls == []
    assert next(handler)[1].startswith("forward 2 of 4") and len(calls) == 1
    handler.close()
    assert len(calls) == 1
    continuing = rope_context.continuation(runtime, SMOL, "en", 7, "full", 128, 8, progress=fixed)
    assert next(continuing)[0] == "decoding: 1 of 16 new tokens…" and len(calls) == 2
    continuing.close()
    assert len(calls) == 2
    monkeypatch.setattr(rope_context, "SWEEP_TIME_LIMIT_S", 0.0)
    *_, last = rope_context.sweep(runtime, SMOL, "zh", "10000, 1M", "full", 128, progress=fixed)
    assert "到达 0 秒的时间上限" in last[1] and last[3].timed_out and len(calls) == 3
    monkeypatch.setattr(rope_context, "CONTINUATION_TIME_LIMIT_S", 0.0)
    *_, last = rope_context.continuation(runtime, SMOL, "en", 7, "full", 128, 8, progress=fixed)
    assert "**Time limit of 0 s reached:** 0 of 16 new tokens were decoded." in last[0] and len(calls) == 3
