"""The attention explorer's computations on tiny random models and hand-made inputs (on the real
SmolLM2: tests/checkpoints/test_attention_explorer.py)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from explorer.attention import costs
from explorer.attention import maps as am
from explorer.attention import receptive_field as rf
from explorer.attention import sinks as grid_mod
from explorer.attention import streaming as sinks
from explorer.inputs import InputError
from explorer.masks import describe
from explorer.texts import long_text
from models.attention import MaskSpec


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


@pytest.mark.parametrize("mask", [MaskSpec(), MaskSpec(window=1), MaskSpec(window=7), MaskSpec(window=7, sinks=3),
                                  MaskSpec(window=300, sinks=1), MaskSpec(causal=False),
                                  MaskSpec(causal=False, window=5)])
@pytest.mark.parametrize("n", [1, 6, 257, 600])
def test_visible_pairs_counted_without_a_matrix_equal_the_mask(mask, n):
    pos = torch.arange(n)
    expected = int(mask.visible(pos, pos).expand(n, n).sum())
    assert costs.visible_pairs(mask, n) == expected
    assert costs.visible_pairs_by_rows(mask, n, block=64) == expected


def test_streaming_verdict_comes_from_the_numbers():
    def verdict(window, sinks_):
        return sinks.streaming_verdict({"ratio": {"full": 1.0, "window": window, "sinks": sinks_}})

    assert verdict(40.0, 1.1)["window_effect"] == "collapses"
    v = verdict(1.86, 1.14)
    assert v["window_effect"] == "degrades" and v["gap_closed"] == pytest.approx(0.72 / 0.86)
    assert verdict(1.05, 1.0)["window_effect"] == "unchanged"


def test_rolling_mean():
    np.testing.assert_allclose(sinks.rolling_mean(np.array([1.0, 3.0, 5.0, 7.0]), 2), [1, 2, 4, 6])


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
