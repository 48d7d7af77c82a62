"""explorer/rope's figures and sentences on synthetic captures, in both languages: every figure
drawn, the language check able to fail, what the layers mask hidden in the real scores, the
distance reduction by hand, the text capped before the tokenizer."""
from __future__ import annotations

import re

import pytest
import torch

from explorer.inputs import InputError
from explorer.rope import capture as rope_capture, distance, pair, scaling, sweep as rope_sweep, toeplitz
from tests.figure_checks import assert_same_numbers, english_left


# ----------------------------------------------------------------------------- figures in both languages

def synthetic_capture(window=None) -> rope_capture.QKCapture:
    """A capture with random q, k (the figures only draw it): no model needed."""
    from models.attention import MaskSpec

    generator = torch.Generator().manual_seed(0)
    h, t, d = 4, 24, 16

    def randn(*shape):
        return torch.randn(*shape, generator=generator)

    return rope_capture.QKCapture(
        tokens=tuple(str(i) for i in range(t)), layer=2, layer_kind="full_attention", theta_base=10_000.0,
        mask=MaskSpec(window=window), n_heads=h, n_kv_heads=2, attn_scale=0.25,
        q_pre=randn(h, t, d), k_pre=randn(2, t, d), q=randn(h, t, d), k=randn(2, t, d))


def test_every_rope_figure_in_both_languages():
    """Chinese text on the Chinese page, the same numbers in both languages."""
    import numpy as np

    capture = synthetic_capture()
    result = toeplitz.toeplitz(capture, 1, 5, 3, 16)
    sweep = rope_sweep.Sweep(bases=(0.0, 1e6), trained=None, apply_to="all", n_tokens=41,
                             trained_pair=(1e4, 1e6), nll={0.0: torch.rand(40), 1e6: torch.rand(40)},
                             seconds={0.0: 1.0, 1e6: 1.0})
    from models.config import SLIDING

    profile = distance.DistanceProfile(profile=torch.rand(3, 12).double().numpy(),
                                       layer_types=("full_attention", SLIDING, "full_attention"), seconds=1.0)
    scale = scaling.run(64, 1e5, 4, 8192)
    rotation = pair.run(result, 2, 40)

    def draw(lang):
        both, one, real = toeplitz.figures(result, lang)
        return {"both": both, "one": one, "real": real, "pair": pair.figures(rotation, lang)[0],
                "distance": distance.figures(profile, lang)[0], "sweep": rope_sweep.figures(sweep, lang)[0],
                "scaling": scaling.figures(scale, lang)[0]}

    en, zh = draw("en"), draw("zh")
    for name in en:
        assert not english_left(zh[name]), (name, english_left(zh[name]))
        assert_same_numbers(en[name], zh[name])
    assert en["both"].layout.xaxis.title.text == "key position n (token)"
    assert zh["both"].layout.xaxis.title.text == "键的位置 n（token）"
    assert "两侧都旋转" in zh["both"].data[0].text[0][0] and "只旋转 q" in zh["one"].data[0].text[0][0]
    assert zh["real"].data[0].colorbar.title.text == "分数 × 缩放系数"
    assert en["pair"].layout.xaxis.title.text == "q[2] (dimension 2)"
    assert zh["pair"].layout.xaxis.title.text == "q[2]（维度 2）"
    assert [t.name for t in zh["pair"].data[1:]] == ["旋转到位置 m 的 q", "位置 40", "RoPE 之前（m = 0）",
                                                     "模型自己在位置 5 的 q"]
    assert list(zh["distance"].data[0].y) == ["L0 全局", "L1 滑动窗口", "L2 全局"]
    assert list(en["distance"].data[0].y) == ["L0 full", "L1 sliding", "L2 full"]
    assert [t.name for t in en["sweep"].data] == ["base as trained (10k sliding / 1M full)", "base 1M"]
    assert zh["sweep"].data[0].name == "base 按训练设置（滑动窗口层 10k / 全局层 1M）"
    assert zh["sweep"].layout.yaxis.title.text == "NLL，最近 64 个 token 的平均值（nats）"
    assert {t.name for t in en["scaling"].data} >= {"original", "linear interpolation (PI)",
                                                   "extended context 32,768 tokens"}
    assert {t.name for t in zh["scaling"].data} >= {"原始", "线性插值（PI）", "扩展后的上下文 32,768 个 token"}
    # the sweep's table and the trained label follow the language too; the numbers do not
    zh_table, en_table = rope_sweep.table(sweep, "zh"), rope_sweep.table(sweep, "en")
    assert list(zh_table.iloc[:, 0]) == ["按训练设置（滑动窗口层 10k / 全局层 1M）", "1M"]
    np.testing.assert_array_equal(zh_table.iloc[:, 1:].to_numpy(), en_table.iloc[:, 1:].to_numpy())
    # the summaries state the same numbers in both languages
    for module, value in ((toeplitz, result), (pair, rotation), (distance, profile), (rope_sweep, sweep)):
        numbers = lambda s: sorted(re.findall(r"\d+\.\d+", s))  # noqa: E731
        assert numbers(module.summary(value, "en")) == numbers(module.summary(value, "zh")), module


def test_the_language_check_can_fail():
    """english_left sees an English figure (so the Chinese checks above mean something)."""
    capture = synthetic_capture()
    rotation = pair.run(toeplitz.toeplitz(capture, 1, 5, 3, 16), 2, 40)
    assert {"position", "dimension", "rotated"} <= english_left(pair.figures(rotation, "en")[0])


def test_real_scores_hide_what_the_layers_mask_hides():
    """A sliding window of 4 on the synthetic capture: keys further back than 3 are NaN."""
    scores = rope_capture.real_scores(synthetic_capture(window=4), 0)
    m, n = torch.meshgrid(torch.arange(24), torch.arange(24), indexing="ij")
    assert torch.isnan(scores[(n > m) | (m - n >= 4)]).all()
    assert torch.isfinite(scores[(n <= m) & (m - n < 4)]).all()


def test_distance_reduction_by_hand():
    """mean_weight_by_distance against a loop over diagonals."""
    probs = torch.rand(1, 3, 10, 10).tril()
    probs = probs / probs.sum(-1, keepdim=True)
    got = distance.mean_weight_by_distance(probs)
    mean = probs[0].double().mean(0)
    expected = [float(torch.diagonal(mean, -d).mean()) for d in range(10)]
    torch.testing.assert_close(got, torch.tensor(expected, dtype=torch.float64))


def test_text_is_capped_before_the_tokenizer_sees_it():
    """The tokenizer gets at most max_tokens × CHARS_PER_TOKEN_BOUND characters; a visitor's text
    longer than the largest capture could use is refused before it is tokenized."""
    from explorer.prompts import CHARS_PER_TOKEN_BOUND

    seen = []

    def tokenizer(text):
        seen.append(len(text))
        return {"input_ids": list(range(len(text.split())))}

    ids = rope_capture.capped_ids(tokenizer, "word " * 100_000, 10)
    assert ids == list(range(10)) and seen == [10 * CHARS_PER_TOKEN_BOUND]
    with pytest.raises(InputError) as caught:
        rope_capture.token_ids(tokenizer, "word " * 2_000, 10)            # 10,000 characters
    assert caught.value.key == "inputs.too_long" and len(seen) == 1
    assert rope_capture.token_ids(tokenizer, "word " * 1_000, 10) == list(range(10))
    assert seen[-1] == 10 * CHARS_PER_TOKEN_BOUND
