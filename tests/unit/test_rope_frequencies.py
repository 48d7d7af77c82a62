"""explorer/rope/frequencies.py: θ per pair against the formula and a hand count of full turns,
the bases parser (suffixes, bad input in plain words, linear time on a megabyte), the figures
and table in both languages with the same numbers, and the tab's handler called directly."""
from __future__ import annotations

import math
import time

import numpy as np
import pytest

from explorer.inputs import InputError
from explorer.rope import frequencies as freq
from tests.figure_checks import assert_same_numbers, english_left


def test_theta_wavelength_and_full_turns_against_the_formula():
    bases = (10_000.0, 100_000.0, 500_000.0, 1_000_000.0, 12_345.0)
    d, context = 64, 8192
    result = freq.run(bases, d, context)
    assert result.theta.shape == (5, 32) and result.bases == bases
    for row, base in enumerate(bases):
        expected = np.array([base ** (-2 * i / d) for i in range(d // 2)])
        np.testing.assert_allclose(result.theta[row], expected, rtol=1e-6)
        # full turns by hand: pair i turns at least once iff (context − 1)·θ_i ≥ 2π
        assert result.full_turn_counts[row] == sum((context - 1) * th >= 2 * math.pi for th in expected)
    np.testing.assert_array_equal(result.theta[:, 0], 1.0)                # θ_0 = 1 for every base
    np.testing.assert_allclose(result.wavelength, 2 * math.pi / result.theta, rtol=0)
    np.testing.assert_allclose(result.turns, (context - 1) * result.theta / (2 * math.pi), rtol=0)
    # hand-counted for d=64: with base 10k, pairs 0..24 wrap inside 8192 tokens (λ_24 ≈ 5,000, λ_25 ≈ 8,700)
    assert list(result.full_turn_counts[:4]) == [25, 20, 18, 17]
    assert list(result.never_counts[:4]) == [7, 12, 14, 15]
    ordered = np.argsort(bases)
    for low, high in zip(ordered, ordered[1:]):                            # a larger base slows every other pair
        assert (result.theta[high, 1:] < result.theta[low, 1:]).all()


def test_parse_bases_suffixes_order_and_repeats():
    assert freq.parse_bases("10000, 1e5 500k;1M, 100k") == (1e4, 1e5, 5e5, 1e6)
    assert freq.parse_bases("1_000_000") == (1e6,)
    assert freq.run(freq.parse_bases("1M, 10k, 1M"), 8, 10).bases == (1e6, 1e4)


@pytest.mark.parametrize("bad, key", [
    ("1", "rope.err.base_low"), ("0.5", "rope.err.base_low"), ("-3", "rope.err.base_low"),
    ("1e13", "rope.err.base_high"), ("nan", "inputs.not_finite"), ("inf", "inputs.not_finite"),
    ("ten", "rope.err.not_number"), ("", "rope.err.no_bases"), ("  ", "rope.err.no_bases"),
    (None, "rope.err.no_bases"), ("1k " * 9, "rope.err.too_many_bases"), ("9" * 500, "inputs.too_long"),
])
def test_bad_bases_are_refused_with_a_locale_key(bad, key):
    with pytest.raises(InputError) as caught:
        freq.parse_bases(bad)
    assert caught.value.key == key
    assert caught.value.message("zh") != caught.value.message("en")       # both languages have a text


@pytest.mark.parametrize("args, key", [
    (((1e4,), 63, 100), "rope.err.odd_head_dim"), (((1e4,), float("nan"), 100), "inputs.not_whole"),
    (((1e4,), 2048, 100), "inputs.between"), (((1e4,), 64, 0), "inputs.between"),
    (((), 64, 100), "rope.err.no_bases"), ((tuple(range(2, 11)), 64, 100), "rope.err.too_many_bases"),
    (((0.5,), 64, 100), "rope.err.base_low"),
])
def test_run_refuses_bad_inputs_before_any_work(args, key):
    with pytest.raises(InputError) as caught:
        freq.run(*args)
    assert caught.value.key == key


def test_parse_bases_is_linear_in_the_text():
    """A megabyte of bases is refused at once: the length is checked before anything is parsed."""
    for text in ("10000, " * 150_000, "1" * 1_000_000, ",".join(str(i) for i in range(2, 150_000))):
        start = time.perf_counter()
        with pytest.raises(InputError):
            freq.parse_bases(text)
        assert time.perf_counter() - start < 0.1
    start = time.perf_counter()
    for _ in range(1000):
        freq.parse_bases("10000, 100k, 500k, 1M, 2M, 3M, 4M, 5M")
    assert time.perf_counter() - start < 1.0


def test_both_languages_give_the_same_numbers():
    result = freq.run((1e4, 1e6), 64, 8192)
    (en,), (zh,) = freq.figures(result, "en"), freq.figures(result, "zh")
    assert not english_left(zh), english_left(zh)
    assert_same_numbers(en, zh)
    assert len(en.data) == 5                          # 2 bases × (θ, wavelength) + the context line
    np.testing.assert_allclose(en.data[0].y, result.theta[0])
    np.testing.assert_allclose(en.data[3].y, result.wavelength[1])
    assert [a.text for a in en.layout.annotations] == ["Frequency of each pair", "Wavelength of each pair"]
    assert [a.text for a in zh.layout.annotations] == ["各维度对的频率", "各维度对的波长"]
    assert zh.layout.yaxis.title.text == "θ（弧度/token，对数坐标）"
    assert en.data[-1].name == "context 8,192 tokens" and zh.data[-1].name == "上下文 8,192 个 token"
    en_table, zh_table = freq.table(result, "en"), freq.table(result, "zh")
    assert list(en_table.columns)[:2] == ["base", "who uses it"] and "谁在用" in zh_table.columns
    assert list(en_table["who uses it"]) == ["original RoPE (RoFormer paper)", "your choice"]
    assert list(zh_table["谁在用"]) == ["原始 RoPE（RoFormer 论文）", "你的选择"]
    np.testing.assert_array_equal(en_table.iloc[:, 2:].to_numpy(), zh_table.iloc[:, 2:].to_numpy())
    assert list(en_table.iloc[:, 3]) == [25, 17]


def test_summary_states_the_results_numbers():
    result = freq.run((1e4, 1e5, 5e5, 1e6), 64, 8192)
    en = freq.summary(result, "en")
    assert "base **10k**: 25 of 32 pairs complete a full turn inside 8,192 tokens, **7 never do**" in en
    ratio = result.theta[3, 1:] / result.theta[0, 1:]
    assert en.count("Computed from the formula") == 1 and "Measured" not in en    # θ is a formula value
    assert f"**31 of the 31 other pairs slow down** (by ×{ratio.max():.3g}" in en
    assert "7 → 15 pairs never complete a turn" in en
    zh = freq.summary(freq.run((1e4, 1e6), 256, 32768), "zh")
    assert "一圈也转不完" in zh and "其余 127 对中有 127 对变慢" in zh


def broken(result: freq.Frequencies, theta) -> freq.Frequencies:
    import dataclasses

    return dataclasses.replace(result, theta=np.asarray(theta, dtype=np.float64))


def test_the_slowing_verdict_follows_the_numbers():
    """larger_base_slows reads θ: true for the formula's θ, false when a pair does not slow or
    θ₀ moves, and the summary's sentence follows it in both languages."""
    result = freq.run((1e4, 1e6), 8, 100)
    assert freq.larger_base_slows(result)
    compared = freq.slowing(result)
    assert (compared.low, compared.high, compared.slowed, compared.theta0_ratio) == (1e4, 1e6, 3, 1.0)
    # a broken frequency table: the larger base's pair 2 as fast as the smaller base's
    theta = result.theta.copy()
    theta[1, 2] = theta[0, 2]
    stuck = broken(result, theta)
    assert not freq.larger_base_slows(stuck) and freq.slowing(stuck).slowed == 2
    assert "only **2 of the 3 other pairs slow down**" in freq.summary(stuck, "en")
    assert "只有 2 对变慢" in freq.summary(stuck, "zh") and "没有" in freq.summary(stuck, "zh")
    theta = result.theta.copy()
    theta[1, 0] = 1.01                                                     # θ₀ moved
    assert not freq.larger_base_slows(broken(result, theta))
    assert freq.slowing(freq.run((1e4,), 8, 100)) is None                  # one base: nothing compared
    assert not freq.larger_base_slows(freq.run((1e4,), 8, 100))


def test_who_uses_a_base_names_the_loaded_model_from_its_config():
    from types import SimpleNamespace

    config = SimpleNamespace(layer_types=["sliding_attention"] * 5 + ["full_attention"], head_dim=32,
                             layer_rope_theta=lambda layer: 1e6 if layer == 5 else 2e4)
    bases = freq.model_bases(config, "Tiny")
    assert bases.groups == (("sliding_attention", 5, 2e4), ("full_attention", 1, 1e6))
    assert freq.describe_bases(bases, "en") == (
        "**Tiny**, read from its config: head dimension 32; base 20k on its 5 sliding-window layers; "
        "base 1M on its 1 full-attention layers.")
    assert "5 个滑动窗口层用 base 20k" in freq.describe_bases(bases, "zh")
    table = freq.table(freq.run((2e4, 5e5, 1e6, 3e3), 32, 100, bases), "en")
    assert list(table["who uses it"]) == ["Tiny: sliding-window layers (its config)", "Llama 3 (published config)",
                                          "Tiny: full-attention layers (its config)", "your choice"]


def test_handler_returns_figure_summary_table_and_the_result():
    from explorer.ui.tabs.rope import draw_frequencies, frequencies

    plot, text, table, result = frequencies("zh", "10000, 1M", 64, 8192)
    assert isinstance(result, freq.Frequencies) and result.bases == (1e4, 1e6)
    assert "谁在用" in table.columns and "一圈也转不完" in text
    en_plot, en_text, en_table = draw_frequencies(result, "en")          # the language switch's redraw
    assert_same_numbers(plot, en_plot)
    assert "never do" in en_text and "who uses it" in en_table.columns
    import gradio as gr

    with pytest.raises(gr.Error, match="偶数"):
        frequencies("zh", "10000", 63, 8192)
