"""The Attention tab's analysis functions on the real checkpoints (short inputs, SmolLM2 where
possible): maps, masks, sink logit, sink grid, StreamingLLM NLL, receptive field."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from explorer.attention import costs, groups
from explorer.attention import maps as am
from explorer.attention import receptive_field as rf
from explorer.attention import sinks as grid_mod
from explorer.attention import streaming as sinks
from explorer.inputs import InputError
from explorer.masks import POLICIES, choose, describe
from explorer.prompts import token_labels
from explorer.texts import long_text
from models.attention import MaskSpec
from models.forward import Recorder, RunOptions
from tests.figure_checks import assert_same_numbers, english_left

SMOL = "smollm2-135m-instruct"
GEMMA = "gemma-3-270m"


@pytest.fixture(scope="module")
def text_ids(smol):
    return [int(i) for i in smol.tokenizer(long_text()).input_ids]


# ----------------------------------------------------------------------------- inputs


@pytest.mark.parametrize("kind, w, s, b, message", [
    ("window", 0, 0, None, "window w must be at least 1"),
    ("window", float("nan"), 0, None, "whole number"),
    ("window", 2.5, 0, None, "whole number"),
    ("sinks", 4, 4, None, "smaller than the window"),
    ("sinks", 4, 0, None, "at least one sink"),
    ("sink_logit", None, 0, float("nan"), "finite"),
    ("sink_logit", None, 0, "x", "must be a number"),
    ("sink_logit", None, 0, 1e9, "between -50 and 50"),
    ("bogus", None, 0, None, "must be one of"),
])
def test_bad_mask_inputs_raise_plain_messages(kind, w, s, b, message):
    with pytest.raises(InputError, match=message):
        am.mask_choice(kind, w, s, b)


def test_mask_choice_builds_the_engine_objects():
    assert am.mask_choice("causal").spec is None
    assert am.mask_choice("window", 8).spec == MaskSpec(window=8)
    assert am.mask_choice("sinks", 8, 2).spec == MaskSpec(window=8, sinks=2)
    choice = am.mask_choice("sink_logit", sink_logit=1.5)
    assert choice.options("eager").sink_logit == 1.5 and choice.spec is None


def test_prompt_is_capped_before_the_tokenizer_runs(smol):
    class NoTokenizer:
        def __call__(self, text):
            raise AssertionError("the tokenizer saw an over-long prompt")

    loaded = type("Loaded", (), {"tokenizer": NoTokenizer(), "config": smol.config, "device": "cpu",
                                 "name": SMOL, "model": smol.model, "spec": smol.spec})()
    with pytest.raises(InputError, match="characters long"):
        am.run(loaded, "word " * 5000, 1, "all", "causal", 8, 2, 1.0, "eager", 0)
    with pytest.raises(InputError, match="is empty"):
        am.run(smol, "   ", 1, "all", "causal", 8, 2, 1.0, "eager", 0)
    with pytest.raises(InputError, match="limit here is 512"):
        am.run(smol, "word " * 600, 1, "all", "causal", 8, 2, 1.0, "eager", 0)


# ----------------------------------------------------------------------------- maps


@pytest.mark.parametrize("kind, w, s", [("causal", None, 0), ("window", 5, 0), ("sinks", 6, 2)])
@pytest.mark.parametrize("impl", ["eager", "tiled"])
def test_map_rows_sum_to_one_masked_entries_zero_and_mask_is_the_models(smol, text_ids, kind, w, s, impl):
    ids = text_ids[:24]
    choice = am.mask_choice(kind, w, s)
    layer_map = am.layer_attention(smol.model, ids, 4, choice, impl)
    probs = layer_map.probs
    assert probs.shape == (9, 24, 24)
    torch.testing.assert_close(probs.sum(-1), torch.ones(9, 24), atol=1e-5, rtol=0)
    assert float(probs[:, ~layer_map.visible].abs().max()) == 0.0           # exactly zero
    assert bool((probs[:, layer_map.visible] > 0).all())                      # and only there
    # The drawn mask is the predicate of the spec the model used: recompute it independently.
    expected = (choice.spec or MaskSpec()).visible(torch.arange(24), torch.arange(24))
    assert torch.equal(layer_map.visible, expected)
    assert layer_map.layer_mask == (choice.spec or MaskSpec())


def test_gemma_local_layer_mask_is_its_own_window_restricted(runtime):
    gemma = runtime.get(GEMMA)
    ids = gemma.tokenizer("The quick brown fox jumps over the lazy dog again and again").input_ids
    layer_map = am.layer_attention(gemma.model, ids, 0, am.mask_choice("window", 4))
    assert layer_map.layer_mask == MaskSpec(window=4)          # min(512, 4)
    global_layer = [i for i, k in enumerate(gemma.config.layer_types) if k == "full_attention"][0]
    own = am.layer_attention(gemma.model, ids, global_layer)
    assert own.layer_mask == MaskSpec() and own.probs.shape[0] == gemma.config.n_heads


def test_sink_logit_equals_an_extra_zero_value_key_on_the_real_model(smol, text_ids):
    """Recompute layer 2's probabilities by hand from the recorded q, k with an extra column
    holding b, and compare with what the forward recorded; rows sum to 1 - absorbed."""
    ids, layer, b = text_ids[:16], 2, 1.5
    rec = Recorder(["q", "k", "attn_probs"], layers=[layer])
    x = torch.tensor([ids])
    with torch.inference_mode():
        smol.model(x, recorder=rec, options=RunOptions(attn_impl="eager", sink_logit=b))
    q, k = rec.get("q", layer)[0], rec.get("k", layer)[0]                # (H,T,D), (Hkv,T,D)
    k = k.repeat_interleave(smol.config.n_rep, dim=0)
    scores = (q @ k.transpose(-1, -2)) * smol.config.attn_scale
    scores = scores.masked_fill(~MaskSpec().visible(torch.arange(16), torch.arange(16)), float("-inf"))
    extra = torch.full((*scores.shape[:-1], 1), b)
    by_hand = torch.softmax(torch.cat([scores, extra], -1), -1)[..., :-1]
    recorded = rec.get("attn_probs", layer)[0]
    torch.testing.assert_close(recorded, by_hand, atol=1e-5, rtol=1e-4)
    absorbed = 1 - recorded.sum(-1)
    assert float(absorbed.min()) > 0 and float(absorbed.max()) < 1
    # and the explorer's map reports the same absorbed mass
    layer_map = am.layer_attention(smol.model, ids, layer, am.mask_choice("sink_logit", sink_logit=b))
    torch.testing.assert_close(layer_map.sink_mass, absorbed, atol=1e-5, rtol=1e-4)


def test_next_token_table_and_kl(smol, text_ids):
    ids = text_ids[:32]
    base = am.last_logits(smol.model, ids)
    same = am.layer_attention(smol.model, ids, 0).last_logits
    assert am.kl_divergence(base, same) < 1e-6                               # eager == sdpa
    windowed = am.layer_attention(smol.model, ids, 0, am.mask_choice("window", 2)).last_logits
    nxt = am.next_tokens(base, windowed)
    assert nxt.kl > 0.01 and math.isclose(nxt.kl, am.kl_divergence(base, windowed))
    p = torch.softmax(windowed.double(), -1)
    assert nxt.p_mask == tuple(float(p[i]) for i in nxt.ids) and nxt.new_top == int(windowed.argmax())


def test_head_groups_match_the_recorded_tensors(smol, runtime):
    result = groups.run(smol)
    assert result.groups == ((0, 1, 2), (3, 4, 5), (6, 7, 8))
    shapes = result.shapes
    assert shapes["q"][1] == 9 and shapes["k"][1] == 3 and shapes["v"][1] == 3
    # bytes per element from the recorded tensors (fp32 on the CPU), the cache read from its tensors
    assert result.element_bytes == smol.model.embed.weight.element_size()
    elem = result.element_bytes
    assert result.variant_bytes("gqa") * 3 == result.variant_bytes("mha") == 2 * 30 * 9 * 64 * elem
    assert result.variant_bytes("mqa") == 2 * 30 * 1 * 64 * elem
    assert result.measured_per_token == result.variant_bytes("gqa")
    assert groups.cache_follows_kv_heads(result)
    gemma = runtime.get(GEMMA)
    assert groups.head_groups(gemma.config) == [[0, 1, 2, 3]]


def test_gqa_verdict_follows_the_measured_cache(smol):
    """The sentence and C5's criterion read the measured numbers: a cache sized by the query
    heads, or a k recorded with the query heads, fails it, and the text says so."""
    import dataclasses

    result = groups.run(smol)
    assert "query heads (9) do not appear" in groups.summary(result, "en")
    assert "查询头（9 个）不出现在其中" in groups.summary(result, "zh")
    mha_sized = dataclasses.replace(result, cache_used=result.variant_bytes("mha") * result.tokens)
    assert not groups.cache_follows_kv_heads(mha_sized)
    assert "Does not hold here" in groups.summary(mha_sized, "en")
    assert "138,240 B per token" in groups.summary(mha_sized, "en")
    q_shaped = dataclasses.replace(result, shapes={**result.shapes, "k": result.shapes["q"]})
    assert not groups.cache_follows_kv_heads(q_shaped)
    # the element size is the model's, not a constant: bf16 halves every figure
    half = dataclasses.replace(result, element_bytes=2,
                               variants=tuple((n, h, b // 2) for n, h, b in result.variants),
                               cache_used=result.cache_used // 2)
    assert groups.cache_follows_kv_heads(half) and "\\times 2$ B = **23,040 B per token**" in groups.summary(half)


def test_local_global_costs_count_from_the_real_masks(runtime):
    gemma = runtime.get(GEMMA)
    rows = costs.data(costs.run(gemma.model, GEMMA, "Gemma", [256, 1024, 2048]))["rows"]
    h, w = gemma.config.n_heads, gemma.config.sliding_window
    assert [r["local layers"] for r in rows] == [15] * 3 and rows[0]["global layers"] == 3
    for r in rows:
        n = r["n"]
        assert r["scores per global layer"] == h * n * (n + 1) // 2
        # local: w(w+1)/2 for the first w rows, then w per row
        local = min(n, w) * (min(n, w) + 1) // 2 + max(0, n - w) * w
        assert r["scores per local layer"] == h * local
    # the local cache is capped at w slots, the global one grows with n
    assert rows[1]["cache bytes per local layer"] == rows[2]["cache bytes per local layer"]
    assert rows[2]["cache bytes per global layer"] == 2 * rows[1]["cache bytes per global layer"]
    # the engine's own cache for n tokens allocates exactly these bytes per layer
    from models.kv_cache import KVCache
    for r, n in zip(rows, (256, 1024, 2048)):
        allocated = KVCache.for_model(gemma.config, gemma.model.layer_masks(), n, 1,
                                      gemma.model.embed.weight.dtype, "meta").allocated_bytes()
        assert r["cache bytes, all layers"] == sum(allocated)


@pytest.mark.parametrize("mask", [MaskSpec(), MaskSpec(window=1), MaskSpec(window=7), MaskSpec(window=7, sinks=3),
                                  MaskSpec(window=300, sinks=1), MaskSpec(causal=False),
                                  MaskSpec(causal=False, window=5)])
@pytest.mark.parametrize("n", [1, 6, 257, 600])
def test_visible_pairs_counted_without_a_matrix_equal_the_mask(mask, n):
    pos = torch.arange(n)
    expected = int(mask.visible(pos, pos).expand(n, n).sum())
    assert costs.visible_pairs(mask, n) == expected
    assert costs.visible_pairs_by_rows(mask, n, block=64) == expected


def test_local_global_costs_are_computed_once_under_a_lock(runtime, monkeypatch):
    import threading

    gemma = runtime.get(GEMMA)
    calls = []
    real_run = costs.run

    def counted_run(*args, **kwargs):
        calls.append(1)
        return real_run(*args, **kwargs)

    monkeypatch.setattr(costs, "run", counted_run)
    monkeypatch.setattr(costs, "_RESULTS", {})
    results = []
    threads = [threading.Thread(target=lambda: results.append(costs.run_once(gemma.model, GEMMA, "G")))
               for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(calls) == 1 and len(results) == 4 and all(r is results[0] for r in results)
    assert results[0].rows[-1].n == 8192


# ----------------------------------------------------------------------------- sinks


def test_sink_grid_matches_full_probabilities_and_sink_logit_mass(smol, text_ids):
    ids = text_ids[:48]
    grid = grid_mod.sink_grid(smol.model, ids, n_sinks=3)
    assert grid.first.shape == (30, 9)
    assert np.all(grid.first <= grid.first_s + 1e-7) and np.abs(grid.absorbed).max() < 1e-5
    for layer in (0, 17):
        probs = am.layer_attention(smol.model, ids, layer).probs[:, grid.first_query:]
        np.testing.assert_allclose(grid.first[layer], probs[..., 0].mean(-1).numpy(), atol=1e-5)
        np.testing.assert_allclose(grid.first_s[layer], probs[..., :3].sum(-1).mean(-1).numpy(), atol=1e-5)
    with_b = grid_mod.sink_grid(smol.model, ids, n_sinks=3, sink_logit=3.0)
    assert with_b.absorbed.min() > 0 and with_b.absorbed.max() < 1
    # the sink logit takes mass from the real tokens: row sums are 1 - absorbed
    lm = am.layer_attention(smol.model, ids, 5, am.mask_choice("sink_logit", sink_logit=3.0))
    np.testing.assert_allclose(with_b.absorbed[5], lm.sink_mass[:, grid.first_query:].mean(-1).numpy(), atol=1e-5)


def test_streaming_nll_chunked_cache_equals_one_masked_forward(smol, text_ids):
    """The chunked pass through the eviction cache gives the NLL of one teacher-forced forward
    under the same mask (and the full policy that of the plain forward)."""
    ids = text_ids[:80]
    x = torch.tensor([ids])
    for policy in sinks.POLICIES:
        mask = choose(policy, 16, 2, kinds=POLICIES)
        with torch.inference_mode():
            logits = smol.model(x, options=RunOptions(mask=mask))[0]
        reference = torch.nn.functional.cross_entropy(logits[:-1], x[0, 1:], reduction="none")
        curve = sinks.streaming_nll(smol.model, ids, policy, window=16, sinks=2, chunk=24)
        np.testing.assert_allclose(curve, reference.double().numpy(), atol=2e-4, rtol=1e-4)


def test_sinks_in_global_layers_only_is_one_engine_mask_per_layer(smol, runtime):
    gemma = runtime.get(GEMMA)
    gids = [int(i) for i in gemma.tokenizer(long_text()).input_ids[:40]]
    assert sinks.policies_for(gemma.config)[-1] == sinks.SINKS_GLOBAL
    assert sinks.policies_for(smol.config) == sinks.POLICIES
    # the per-layer masks the engine uses for the policy (each layer's own mask, restricted)
    masks = gemma.model.layer_masks(sinks.policy_mask_option(gemma.model, sinks.SINKS_GLOBAL, 12, 2))
    for kind, mask in zip(gemma.config.layer_types, masks):
        assert mask == (MaskSpec(window=12) if kind == "sliding_attention" else MaskSpec(window=12, sinks=2))
    # the chunked eviction cache under per-layer masks == one forward under the same masks
    option = sinks.policy_mask_option(gemma.model, sinks.SINKS_GLOBAL, 12, 2)
    x = torch.tensor([gids])
    with torch.inference_mode():
        logits = gemma.model(x, options=RunOptions(mask=option))[0]
    reference = torch.nn.functional.cross_entropy(logits[:-1], x[0, 1:], reduction="none")
    cached = sinks.streaming_nll(gemma.model, gids, sinks.SINKS_GLOBAL, 12, 2, chunk=16)
    np.testing.assert_allclose(cached, reference.double().numpy(), atol=2e-4, rtol=1e-4)
    # and differs from sinks in every layer
    every = sinks.streaming_nll(gemma.model, gids, "sinks", 12, 2, chunk=16)
    assert np.abs(every - cached).max() > 1e-3


def test_streaming_cache_reuses_and_summarises(smol, text_ids):
    cache = sinks.StreamingCache()
    calls = []
    ids = text_ids[:64]
    first = sinks.run_streaming("smol", smol.model, ids, 16, 2, chunk=32, cache=cache,
                                progress=lambda f, m: calls.append(f))
    assert calls and calls[-1] == pytest.approx(1.0)
    calls.clear()
    again = sinks.run_streaming("smol", smol.model, ids, 16, 2, chunk=32, cache=cache,
                                progress=lambda f, m: calls.append(f))
    assert not calls and all(np.array_equal(first.nll[p], again.nll[p]) for p in sinks.POLICIES)
    (stored,) = cache.results(64, 16, 2)
    assert stored.model == "smol" and set(stored.nll) == set(sinks.POLICIES)
    assert cache.results(64, 17, 2) == []
    summary = sinks.streaming_summary(first)
    assert summary["ratio"]["full"] == pytest.approx(1.0)
    verdict = sinks.streaming_verdict(summary)
    expected = ("collapses" if summary["ratio"]["window"] >= 5 else
                "degrades" if summary["ratio"]["window"] >= 1.25 else "unchanged")
    assert verdict["window_effect"] == expected


def test_streaming_verdict_comes_from_the_numbers():
    def verdict(window, sinks_):
        return sinks.streaming_verdict({"ratio": {"full": 1.0, "window": window, "sinks": sinks_}})

    assert verdict(40.0, 1.1)["window_effect"] == "collapses"
    v = verdict(1.86, 1.14)
    assert v["window_effect"] == "degrades" and v["gap_closed"] == pytest.approx(0.72 / 0.86)
    assert verdict(1.05, 1.0)["window_effect"] == "unchanged"


def test_rolling_mean():
    np.testing.assert_allclose(sinks.rolling_mean(np.array([1.0, 3.0, 5.0, 7.0]), 2), [1, 2, 4, 6])


# ----------------------------------------------------------------------------- receptive field


def test_reach_formula_reproduces_mistral():
    assert rf.theoretical_reach(32, 4096) == 131_041
    table = rf.reach_table()
    assert table["reach L(w-1)+1 (tokens)"][0] == 131_041
    assert list(rf.reach_table(lang="zh").iloc[0])[1:] == list(table.iloc[0])[1:]
    assert rf.first_layer_reached(7, [8, 8, 8]) == 0
    assert rf.first_layer_reached(8, [8, 8, 8]) == 1
    assert rf.first_layer_reached(21, [8, 8, 8]) == 2
    assert rf.first_layer_reached(22, [8, 8, 8]) is None       # 3 (w-1) + 1 = 22 tokens incl. itself
    assert rf.first_layer_reached(500, [8, None, 8]) == 1


def test_receptive_field_follows_the_rule_exactly_and_is_reproducible(smol, text_ids):
    ids = text_ids[:40]
    distances = rf.default_distances(40, 4)
    result = rf.probe(smol.model, ids, distances, MaskSpec(window=4), seed=3)
    assert result.agrees, (result.predicted, result.measured)
    # once reached, it stays changed; before, bit-for-bit equal
    for row, first in zip(result.changed, result.measured):
        assert not row[:first].any() and row[first:].all()
    again = rf.probe(smol.model, ids, distances, MaskSpec(window=4), seed=3)
    assert again.replacement == result.replacement and np.array_equal(again.delta, result.delta)
    other = rf.probe(smol.model, ids, distances, MaskSpec(window=4), seed=4)
    assert other.replacement != result.replacement


def test_receptive_field_on_an_moe_model_ignores_expert_grouping_rounding():
    """Our shipped MoE model (4 layers): the perturbed token's routing regroups the experts'
    matrix products, which moves unreached positions by rounding only; the probe still finds
    the rule's reach L(w - 1) + 1 = 5 tokens exactly, and a reached position moves far more."""
    from explorer.checkpoints.shipped import folder as shipped_folder

    from models.loading import load_model
    from transformers import AutoTokenizer

    folder = shipped_folder("explorer-moe-aux")
    model = load_model(folder, torch.device("cpu"), torch.float32)
    ids = AutoTokenizer.from_pretrained(folder)(long_text()[:400])["input_ids"][:13]
    result = rf.probe(model, ids, [1, 2, 4, 5, 7, 8, 9, 10, 12], MaskSpec(window=2), seed=0)
    assert result.agrees, (result.predicted, result.measured)
    reached = result.delta[result.changed]
    unreached = result.delta[~result.changed]
    assert reached.min() > 100 * max(unreached.max(), 1e-12)

def test_figures_build(smol, text_ids):
    ids = text_ids[:20]
    labels = token_labels(smol.tokenizer, ids)
    assert len(set(labels)) == len(labels)
    lm = am.layer_attention(smol.model, ids, 1, am.mask_choice("sinks", 6, 1))
    one = am.attention_figure(lm, labels, 2, n_prompt=15)
    grid = am.attention_figure(lm, labels, None)
    assert "head 2" in one.data[0].hovertemplate and "layer 1" in one.data[0].hovertemplate
    assert len(grid.data) == 9
    mask = am.mask_figure(lm, labels)
    assert np.array_equal(np.array(mask.data[0].z, dtype=bool), lm.visible.numpy())
    smol_groups = groups.run(smol)
    smol_costs = costs.run(smol.model, SMOL, "SmolLM2", [8])
    # the same figures with Chinese text: titles, axes, hover and subplot titles
    one_zh = am.attention_figure(lm, labels, 2, n_prompt=15, title="SmolLM2", lang="zh")
    assert one_zh.layout.title.text == "SmolLM2 第 1 层，第 2 个头：注意力概率"
    assert one_zh.layout.xaxis.title.text == "键 token（位置：token）"
    assert "第 1 层，第 2 个头" in one_zh.data[0].hovertemplate
    grid_zh = am.attention_figure(lm, labels, None, lang="zh", n_kv_heads=3)
    assert grid_zh.layout.annotations[4].text == "头 4（KV 头 1）"
    mask_zh = am.mask_figure(lm, labels, lang="zh")
    assert mask_zh.layout.title.text.startswith("第 1 层的掩码：") and "黄色 = 可见" in mask_zh.layout.title.text
    assert mask.layout.title.text.startswith("mask of layer 1:")
    assert "1 sink + window 6" in mask.layout.title.text and "1 个汇 + 窗口 6" in mask_zh.layout.title.text
    (groups_zh,) = groups.figures(smol_groups, lang="zh")
    assert groups_zh.layout.title.text.endswith(": 9 个查询头共用 3 个 KV 头")
    assert groups.figures(smol_groups)[0].layout.title.text.endswith(": 9 query heads share 3 KV heads")
    strip_zh, cost_zh = costs.figures(smol_costs, lang="zh")
    assert strip_zh.layout.title.text == "SmolLM2: 0 个局部层（深色），30 个全局层（黄色）"
    assert cost_zh.data[0].name == "一个全局层" and cost_zh.layout.xaxis.title.text == "序列长度 n（token）"
    assert list(cost_zh.data[0].y) == [9 * 8 * 9 // 2]
    for spec in (MaskSpec(), MaskSpec(window=5), MaskSpec(window=5, sinks=2), MaskSpec(causal=False)):
        assert describe(spec) == spec.describe()                  # English: MaskSpec's own words


def test_sink_streaming_and_receptive_figures_in_both_languages(smol):
    """Chinese text on the Chinese page, the English figures as before, the same numbers (model
    names kept short, so that a leftover English word stands out)."""
    rng = np.random.default_rng(0)
    first, first_s, absorbed = (rng.random((4, 3)).round(5) for _ in range(3))

    def sink_result(b):
        grid = grid_mod.SinkGrid(first=first, first_s=first_s, absorbed=absorbed, n_tokens=20, n_sinks=4,
                                 sink_logit=b, first_query=8, seconds=0.1, uniform=np.full(4, 0.02))
        return grid_mod.SinkResult(model="m1", title="M1", token0="x", grid=grid)
    result = sinks.StreamingResult(model="m1", n_tokens=120, window=32, sinks=2)
    for i, policy in enumerate(sinks.POLICIES + (sinks.SINKS_GLOBAL,)):
        result.nll[policy] = rng.random(119) + i
    delta = rng.random((4, 5)) * (rng.random((4, 5)) > 0.4)
    probe = rf.ReceptiveFieldResult(distances=[1, 3, 7, 9], delta=delta, changed=delta > 0,
                                    predicted=[0, 1, 2, None], measured=[0, 1, 2, None],
                                    layer_windows=[4] * 5, n_tokens=20, seed=0, replacement=[5, 6, 7, 8])

    def draw(lang):
        return [*grid_mod.figures(sink_result(2.0), lang),
                sinks.streaming_figure([result], smooth=16, lang=lang),
                rf.receptive_figure(probe, "M1", lang)]

    en, zh = draw("en"), draw("zh")
    for english, chinese in zip(en, zh):
        assert not english_left(chinese), english_left(chinese)
        assert_same_numbers(english, chinese)
    assert english_left(en[0]) >= {"mass", "head", "layer"}             # the check sees English
    assert [f.layout.title.text for f in en[:3]] == [
        "M1: mass on the first token", "M1: mass on the first 4 tokens",
        "M1: mass absorbed by the sink logit b = 2"]
    assert [f.layout.title.text for f in zh[:3]] == [
        "M1：第一个 token 上的质量", "M1：前 4 个 token 上的质量",
        "M1：汇 logit b = 2 吸收的质量"]
    assert en[0].data[0].hovertemplate == "layer %{y}, head %{x}<br>mass on token 0: %{z:.3f}<extra></extra>"
    assert zh[1].layout.yaxis.title.text == "层" and zh[1].data[0].colorbar.title.text == "质量"
    assert grid_mod.figures(sink_result(None))[2] is None   # no sink logit
    assert [t.name for t in en[3].data] == [
        "m1: full cache", "m1: window only (w = 32, first tokens evicted)", "m1: 2 sinks + window (w = 32)",
        "m1: 2 sinks in global layers only + window (w = 32)"]
    assert zh[3].data[1].name == "m1: 只保留窗口（w = 32，最前面的 token 被驱逐）"
    assert zh[3].layout.title.text == "沿文本的困惑度（最近 16 个 token 的平均 NLL）"
    assert en[4].layout.title.text == "M1: change of the last position's hidden state (grey: none)"
    assert zh[4].layout.title.text == "M1: 最后一个位置的隐藏状态的变化（灰色：无变化）"
    assert set(zh[4].data[0].customdata.ravel()) == {"有变化", "逐位完全不变"}
    # a hover template without fields keeps single braces (figure_text always formats)
    assert costs.figures(costs.run(smol.model, SMOL, "S", [8]))[0].data[0].hovertemplate == \
        "layer %{x}: %{customdata}<extra></extra>"


def test_pooling_for_large_grids():
    pooled, factor = am._pool(np.ones((300, 300)), 128)
    assert factor == 3 and pooled.shape == (100, 100) and np.allclose(pooled, 1)


def test_one_mask_description_in_both_languages():
    assert describe(MaskSpec(window=8, sinks=2), "zh") == "2 个汇 + 窗口 8"
    assert describe(None, "en") == "the checkpoint's own masks"
    assert describe(None, "en", sink_logit=1.5) == "causal + sink logit b = 1.5"
    assert am.mask_choice("sink_logit", sink_logit=2).describe("zh") == "因果 + 汇 logit b = 2"
    from explorer.masks import describe_layers
    assert describe_layers([MaskSpec(window=512)] * 5 + [MaskSpec()], "en") == "5 × sliding window 512, 1 × causal"
    assert describe_layers([MaskSpec()] * 3, "zh") == "因果"


# ----------------------------------------------------------------------------- verdicts follow the numbers


def test_sink_grid_in_chunks_equals_one_forward(smol, text_ids, monkeypatch):
    """Through the KV cache, chunk by chunk, the grid is the one-forward grid."""
    ids = text_ids[:40]
    whole = grid_mod.sink_grid(smol.model, ids, n_sinks=3)
    monkeypatch.setattr(grid_mod, "CHUNK", 12)
    assert grid_mod.sink_forwards(40) == 4
    chunked = grid_mod.sink_grid(smol.model, ids, n_sinks=3)
    for name in ("first", "first_s", "absorbed"):
        np.testing.assert_allclose(getattr(chunked, name), getattr(whole, name), atol=2e-6)
    # uniform attention over q + 1 keys gives key 0 a share of 1 / (q + 1)
    expected = np.mean([1 / (q + 1) for q in range(whole.first_query, 40)])
    np.testing.assert_allclose(whole.uniform, expected)


def _grid(first: np.ndarray, uniform: float = 0.02):
    n_layers, n_heads = first.shape
    zeros = np.zeros_like(first)
    return grid_mod.SinkGrid(first=first, first_s=first, absorbed=zeros, n_tokens=64, n_sinks=4,
                             sink_logit=None, first_query=8, seconds=0.1,
                             uniform=np.full(n_layers, uniform))


def test_sink_verdict_and_sentence_follow_the_measured_mass():
    first = np.full((4, 5), 0.01)
    first[2:, :3] = 0.5                     # 6 of the 10 heads of layers 2-3 are sinks
    verdict = grid_mod.sink_verdict(_grid(first))
    assert verdict.later_from == 2 and (verdict.n_sink_heads, verdict.n_heads) == (6, 10)
    assert verdict.holds and verdict.share == pytest.approx(0.6)
    result = grid_mod.SinkResult(model="m", title="M", token0="x", grid=_grid(first))
    assert "**Sinks measured:** in layers 2 and up, 6 of 10 heads (60%)" in grid_mod.summary(result)
    assert "实测到注意力汇" in grid_mod.summary(result, "zh")
    first[2:, 2] = 0.19                     # just under 10 x uniform: 4 of 10, below the half
    verdict = grid_mod.sink_verdict(_grid(first))
    assert verdict.n_sink_heads == 4 and not verdict.holds
    result = grid_mod.SinkResult(model="m", title="M", token0="x", grid=_grid(first))
    assert "**No clear sink here:**" in grid_mod.summary(result) and "这里没有明显的注意力汇" in \
        grid_mod.summary(result, "zh")
    # sinks in the early layers only do not count
    early = np.full((4, 5), 0.01)
    early[:2] = 0.9
    assert not grid_mod.sink_verdict(_grid(early)).holds


def test_tiled_path_sentences_are_measured_on_the_request(smol):
    """The tiled map is compared with the eager one on the same request: both the agreement and
    the speed sentence are chosen from the measured numbers."""
    result = am.run(smol, "The cat sat on the mat.", 2, "all", "window", 4, 0, None, "tiled", 0)
    paths = result.paths
    assert paths is not None and paths.agree and paths.max_prob_diff <= am.PATH_TOLERANCE
    text = am.summary(result)
    assert f"largest probability difference **{paths.max_prob_diff:.1e}**" in text
    assert "the same map" in text and f"{paths.seconds_tiled:.2f} s" in text
    assert am.data(result)["tiled_vs_eager"]["ratio"] == pytest.approx(paths.ratio)
    assert am.run(smol, "The cat sat.", 2, "all", "causal", 4, 0, None, "eager", 0).paths is None
    cases = {(2e-3, 0.9, 0.3): ("**differ**", "3.0× slower"),
             (1e-7, 0.1, 0.3): ("the same map", "i.e. faster"),
             (1e-7, 0.31, 0.3): ("the same map", "about as fast")}
    for (diff, tiled, eager_s), (same, speed) in cases.items():
        fake = am.PathComparison(max_prob_diff=diff, max_logit_diff=diff, seconds_tiled=tiled,
                                 seconds_eager=eager_s)
        sentence = am.path_summary(fake, "en")
        assert same in sentence and speed in sentence, sentence
        assert am.path_summary(fake, "zh") != sentence


def test_reach_verdict_follows_the_probe():
    def probe(distances, final_changed, windows=(2, 2, 2), n_tokens=12):
        changed = np.array([[False, False, c] for c in final_changed])
        return rf.ReceptiveFieldResult(distances=distances, delta=changed * 1.0, changed=changed,
                                       predicted=[], measured=[], layer_windows=list(windows),
                                       n_tokens=n_tokens, seed=0, replacement=[])

    # 3 layers, w = 2: reach 4 tokens, distance 3 the farthest that can change
    assert rf.measured_reach(probe([1, 3, 4, 6], [True, True, False, False])).outcome == "matches"
    assert rf.measured_reach(probe([1, 3, 4, 6], [True, True, True, False])).outcome == "differs"
    assert rf.measured_reach(probe([1, 2, 5], [True, True, False])).outcome == "differs"   # not bracketed
    assert rf.measured_reach(probe([1, 2, 3], [True, True, True], n_tokens=4)).outcome == "short_text"
    assert rf.measured_reach(probe([1, 3], [True, True], windows=(2, None, 2))) is None


def test_receptive_summary_states_the_measured_reach(smol):
    run = rf.run(smol, "forced", 2, 36, 0)            # 30 layers, w = 2: reach 31 tokens
    assert {30, 31} <= set(run.probe.distances)
    assert run.probe.agrees and rf.measured_reach(run.probe).holds
    text = rf.summary(run)
    assert "distance 30 still changes the last position, distance 31 does not: 31 tokens" in text
    assert rf.data(run)["reach_outcome"] == "matches"
    short = rf.run(smol, "forced", 4, 40, 0)          # reach 91 > 40 tokens
    assert rf.measured_reach(short.probe).outcome == "short_text"
    assert "shorter than the reach" in rf.summary(short) and "短" in rf.summary(short, "zh")


def test_local_sinks_sentence_compares_the_two_measured_policies():
    from explorer.attention import streaming

    assert streaming.local_sinks_effect(9.16, 1.19) == "hurts"
    assert streaming.local_sinks_effect(1.10, 1.30) == "helps"
    assert streaming.local_sinks_effect(1.20, 1.19) == "same"

    def numbers(ratios):
        summary = {"past_window_from": 260, "perplexity": {p: 10 * r for p, r in ratios.items()},
                   "ratio": ratios, "seconds": {p: 60.0 for p in ratios}}
        return {"title": "M", "n_tokens": 2048, "window": 256, "sinks": 4, "own_window": 512,
                **summary, **streaming.streaming_verdict(summary)}

    helps = streaming.summary_text(numbers({"full": 1.0, "window": 1.8, "sinks": 1.1,
                                            "sinks_global": 1.4}))
    assert "the sinks help in those layers as well" in helps and "**1.10×** against **1.40×**" in helps
    same = streaming.summary_text(numbers({"full": 1.0, "window": 1.8, "sinks": 1.2,
                                           "sinks_global": 1.19}), "zh")
    assert "没有可测出的差别" in same
