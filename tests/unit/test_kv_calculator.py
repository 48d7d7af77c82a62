"""The KV-cache calculator of the Generate tab (explorer/generate/shapes.py): the published figures
reproduced exactly (C3, C5, C6, C9), GQA, MQA, windows and MLA, the roofline's direction with
the batch, its figures in both languages."""
from __future__ import annotations

from explorer.generate import figures, shapes, step_cost
from tests.helpers import run


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


def test_roofline_moves_toward_compute_bound_with_batch(tiny_llama):
    """The model's count from its own tensors (fp32 here); the measured roofline itself is
    tested in tests/browser/test_roofline.py."""
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
