"""The Architecture tab's experiments, on numbers (claims C6, C7, C18, C19): each evidence function
run on real inputs, and fed a deliberately broken input to see it fail or report the break."""
from __future__ import annotations

import math
import re

import numpy as np
import pytest
import torch

from explorer.architecture import blocks, inventory, mla, norm_placement
from explorer.inputs import InputError
from models.config import config_from_hf
from models.loading import model_from_config
from models.safetensors_files import read_config_json
from tests.figure_checks import english_left

SMOL = "smollm2-135m-instruct"
GEMMA = "gemma-3-270m"
CJK = re.compile(r"[\u4e00-\u9fff]")


def folder_of(name):
    from explorer.checkpoints import prepare_embedded

    return prepare_embedded(name)


@pytest.fixture(scope="module")
def entries():
    return {name: inventory.checkpoint_entry(name, name, folder_of(name)) for name in (SMOL, GEMMA)}


@pytest.fixture(scope="module")
def result(entries):
    return blocks.run([entries[SMOL], entries[GEMMA]])


def by_key(result, key):
    return next(block for block in result.blocks if block.key == key)


def params_from_config(name) -> int:
    """Parameters of our module built (on the meta device) from the checkpoint's config.json."""
    config = config_from_hf(read_config_json(folder_of(name)))
    with torch.device("meta"):
        model = model_from_config(config)
    return sum(p.numel() for p in model.parameters())


# ============================================================================ C18: blocks

def test_smollm2_block_from_its_tensors(result):
    smol = by_key(result, SMOL)
    assert smol.bias_tensors == () and smol.linear_biases == ()
    assert smol.norm_kind == "rmsnorm" and smol.norm_places == ("pre_attn", "pre_mlp") and smol.pre_norm
    assert (smol.n_heads, smol.n_kv_heads, smol.head_dim, smol.attention_kind) == (9, 3, 64, "gqa")
    assert smol.position == "rope" and smol.activation == "swiglu" and smol.gated
    assert smol.tied_embeddings and not smol.cross_attention and smol.encoder_layers == 0
    assert (smol.n_layers, smol.d_model, smol.d_ff) == (30, 576, 1536)


def test_gemma_block_from_its_tensors(result):
    gemma = by_key(result, GEMMA)
    assert gemma.norms_per_block == 4
    assert gemma.norm_places == ("pre_attn", "post_attn", "pre_mlp", "post_mlp")
    assert gemma.qk_norm and gemma.norm_kind == "rmsnorm_unit" and gemma.bias_tensors == ()
    assert (gemma.n_heads, gemma.n_kv_heads, gemma.attention_kind) == (4, 1, "mqa")
    assert gemma.activation == "geglu" and gemma.rope_thetas == (10_000.0, 1_000_000.0)
    assert gemma.n_layers == 18 and gemma.tied_embeddings


@pytest.mark.parametrize("name", [SMOL, GEMMA])
def test_component_counts_sum_to_the_model_total(result, entries, name):
    block = by_key(result, name)
    assert sum(block.params.values()) == block.total_params
    assert block.total_params == sum(math.prod(shape) for shape in entries[name].inventory.values())
    # the same total from the config through our own module, built without memory
    assert block.total_params == params_from_config(name)
    assert block.params["attention"] > 0 and block.params["mlp"] > block.params["attention"]


def test_references_from_published_configs(result):
    original, gpt2 = by_key(result, "transformer"), by_key(result, "gpt2")
    assert not original.pre_norm and original.norm_kind == "layernorm" and original.norms_per_block == 3
    assert original.norm_places == ("post_attn_add", "post_cross_add", "post_mlp_add")
    assert original.cross_attention and original.encoder_layers == 6 and original.n_layers == 6
    assert original.position == "sinusoidal" and original.activation == "relu"
    assert (original.n_heads, original.n_kv_heads) == (8, 8) and original.linear_biases
    # the paper states 65 M; counted from PyTorch's layers with one shared embedding matrix
    assert abs(original.total_params / 1e6 - 65) / 65 < 0.05
    assert gpt2.pre_norm and gpt2.norm_kind == "layernorm" and gpt2.position == "learned"
    assert gpt2.activation == "gelu" and gpt2.attention_kind == "mha" and gpt2.n_heads == 12
    assert gpt2.total_params == 124_439_808          # GPT-2 small, tied output matrix counted once
    assert gpt2.params["position"] == 1024 * 768
    assert len(gpt2.linear_biases) == 12 * 4          # c_attn, c_proj, c_fc, mlp.c_proj per layer


def test_a_bias_tensor_added_is_reported(entries):
    entry = entries[SMOL]
    tensors = dict(entry.inventory, **{"model.layers.0.self_attn.q_proj.bias": (576,)})
    broken = inventory.describe(inventory.ModelEntry(**{**entry.__dict__, "inventory": tensors}))
    assert broken.bias_tensors == ("model.layers.0.self_attn.q_proj.bias",)
    assert broken.linear_biases == broken.bias_tensors
    assert broken.total_params == by_key(blocks.Blocks((inventory.describe(entry),)), SMOL).total_params + 576
    text = blocks.summary(blocks.Blocks((broken,)), "en")
    assert "1 bias tensors" in text and "q_proj.bias" in text


def test_broken_inventories_fail(entries):
    entry = entries[SMOL]

    def describe(**changes):
        tensors = {**entry.inventory, **changes}
        return inventory.describe(inventory.ModelEntry(**{**entry.__dict__, "inventory": tensors}))

    with pytest.raises(inventory.InventoryError, match="no component"):
        describe(**{"model.adapter.weight": (4, 4)})
    with pytest.raises(inventory.InventoryError, match="do not divide"):
        describe(**{"model.layers.0.self_attn.k_proj.weight": (100, 576)})
    # an output matrix of its own: no longer tied
    assert not describe(**{"lm_head.weight": (49152, 576)}).tied_embeddings
    # a LayerNorm bias on a norm: the norm kind follows the tensors
    assert describe(**{"model.layers.0.input_layernorm.bias": (576,)}).norm_kind == "layernorm"


def test_block_stages_and_figures_in_both_languages(result):
    gemma = by_key(result, GEMMA)
    kinds = [stage.kind for stage in blocks.stages(gemma, "en")]
    assert kinds == ["norm", "attn", "norm", "add", "norm", "mlp", "norm", "add"]
    original = [s.kind for s in blocks.stages(by_key(result, "transformer"), "en")]
    assert original == ["attn", "add", "norm", "cross", "add", "norm", "mlp", "add", "norm"]
    figures = {lang: blocks.figures(result, lang) for lang in ("en", "zh")}
    for lang, (diagram, params) in figures.items():
        # one box per stage of every block, plus the boxes around it
        n_stages = sum(len(blocks.stages(b, lang)) for b in result.blocks)
        assert len(diagram.layout.shapes) >= n_stages + len(result.blocks)
        # the stacked bars add up to each model's total
        totals = np.sum([np.asarray(trace.x, dtype=float) for trace in params.data], axis=0)
        np.testing.assert_allclose(totals, [b.total_params / 1e6 for b in result.blocks])
    zh_words = " ".join(a.text for a in figures["zh"][0].layout.annotations)
    assert CJK.search(zh_words)
    table_en, table_zh = blocks.table(result, "en"), blocks.table(result, "zh")
    assert table_en.shape == table_zh.shape == (15, 5)
    assert CJK.search(" ".join(table_zh.iloc[:, 0]))


# ============================================================================ C19: norm placement

@pytest.fixture(scope="module")
def init_result():
    return norm_placement.run_init((6, 24, 48))


def test_post_norm_gradients_grow_towards_the_output(init_result):
    for depth in (24, 48):
        # post-norm: the last block gets several times the first block's gradient
        assert init_result.ratio("post", depth) > 3.0
        # pre-norm: no block gets more than 1.5x the first's
        assert init_result.ratio("pre", depth) < 1.5
    assert init_result.ratio("post", 48) > 2 * init_result.ratio("post", 6)
    for key, norms in init_result.grad_norms.items():
        assert norms.shape == (key[1],) and np.all(np.isfinite(norms)) and np.all(norms > 0)
        assert abs(init_result.losses[key] - math.log(256)) < 1.5   # untrained: about uniform


def test_a_stack_that_ignores_its_placement_is_caught(monkeypatch):
    """Fed stacks whose 'post' blocks secretly run pre-norm, the evidence no longer separates
    the placements: the ratio the claim test requires (> 3) is not reached."""
    original = norm_placement.Block.forward

    def always_pre(self, x, positions):
        self.placement = "pre"
        return original(self, x, positions)

    monkeypatch.setattr(norm_placement.Block, "forward", always_pre)
    broken = norm_placement.run_init((24,))
    assert broken.ratio("post", 24) < 1.5


def test_init_figure_in_both_languages(init_result):
    en, zh = (norm_placement.init_figure(init_result, lang) for lang in ("en", "zh"))
    assert len(en.data) == 2 * 3
    for a, b in zip(en.data, zh.data):
        np.testing.assert_array_equal(np.asarray(a.y, dtype=float), np.asarray(b.y, dtype=float))
    assert not english_left(zh) - {"LN"}
    assert "48 layers" in norm_placement.init_summary(init_result, "en")
    assert CJK.search(norm_placement.init_summary(init_result, "zh"))


def test_bad_depths_are_refused():
    for bad, key in (("", "inputs.empty_text"), ("6, x", "arch.err.not_depth"), ("0", "inputs.between"),
                     ("65", "inputs.between"), ("1, 2, 3, 4, 5", "arch.err.too_many_depths"),
                     ("6" * 200, "inputs.too_long"), (None, "inputs.not_text")):
        with pytest.raises(InputError) as error:
            norm_placement.parse_depths(bad)
        assert error.value.key == key
    assert norm_placement.parse_depths("48 6,24 6") == (6, 24, 48)
    with pytest.raises(ValueError, match="placement"):
        norm_placement.Stack(norm_placement.StackConfig(), 2, "middle")


def test_shipped_training_curves_are_this_computation():
    """The cached curves: their first steps re-run here give the same losses; pre-norm ends
    well below post-norm, which stays at the byte-frequency level."""
    shipped = norm_placement.load_training()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)   # as the training command ran
    try:
        for placement in norm_placement.PLACEMENTS:
            losses, _, _ = norm_placement.train_one(placement, shipped.n_layers, shipped.lr, 4, shipped.seed,
                                                    shipped.eval_every, shipped.config)
            np.testing.assert_allclose(losses, shipped.train_loss[placement][:4], atol=2e-3)
    finally:
        torch.set_num_threads(threads)
    assert shipped.final_eval("pre") < shipped.final_eval("post") - 0.3
    assert shipped.final_eval("post") > norm_placement.unigram_loss() - 0.1
    assert len(shipped.train_loss["post"]) == shipped.steps == len(shipped.train_loss["pre"])
    fig = norm_placement.training_figure(shipped, "zh")
    assert len(fig.data) == 5 and CJK.search(fig.data[0].name)


# ============================================================================ C6, C7: MLA

def test_cache_sizes_from_the_deepseek_config():
    result = mla.run_cache()
    assert result.latent_in_heads == 4.5 and result.equal_gqa_heads == 2.25
    assert result.latent_bytes_per_token == (512 + 64) * 61 * 2
    layouts = {layout.key: layout for layout in result.layouts}
    assert layouts["mha"].numbers == 2 * 128 * 128 and layouts["gqa_equal"].numbers == layouts["mla"].numbers
    assert layouts["mha"].numbers / layouts["mla"].numbers == pytest.approx(32768 / 576)
    # the live module: the latent cache up-projected is the uncached K and V
    assert result.tiny_k_error < 1e-5 and result.tiny_v_error < 1e-5
    assert result.tiny_cache_bytes == result.tiny_formula_bytes < result.tiny_expanded_bytes
    assert result.tiny_absorbed_error < 1e-5     # W_UK moved onto the query: the same scores
    text_en, text_zh = mla.cache_summary(result, "en"), mla.cache_summary(result, "zh")
    assert "**576 = 4.5 · d_head**" in text_en and "**2.25 KV heads**" in text_en
    assert CJK.search(text_zh) and "4.5" in text_zh
    (fig,) = mla.cache_figures(result, "en")
    assert list(fig.data[0].x) == [256.0, 16.0, 4.5, 2.0, 4.5]


def test_a_corrupted_latent_cache_is_caught(monkeypatch):
    """Fed a cache whose stored latent is not the one computed, the check reports a mismatch."""
    from models.mla import LatentKVCache

    original = LatentKVCache.update

    def corrupting(self, layer, latent, rope_key):
        return original(self, layer, latent * 1.01, rope_key)

    monkeypatch.setattr(LatentKVCache, "update", corrupting)
    result = mla.run_cache()
    assert result.tiny_k_error > 1e-3 or result.tiny_v_error > 1e-3


def test_rope_cannot_be_folded_into_one_projection():
    fold = mla.run_fold(d_in=32, d_k=64, positions=512)
    assert fold.residual > 0.1             # over a range of positions: a large residual
    assert fold.residual_one < 1e-12       # one position: exact
    assert fold.lstsq_vs_mean < 1e-10      # the least-squares W' is the mean of R_m W
    assert fold.pair_residual[0] > 0.9 and fold.pair_residual[-1] < 0.2   # fast pairs cannot fold
    assert fold.prefix_residual[0] == 0.0 and np.all(np.diff(fold.prefix_residual) >= -1e-12)
    # the residual matches the closed form: ‖R W − mean‖² / ‖R W‖² = 1 − ‖mean‖² / ‖W‖²
    weight = torch.randn(64, 32, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    mean = mla.rotated(weight, torch.arange(512), 10000.0).mean(0)
    assert fold.residual == pytest.approx(math.sqrt(1 - float(mean.norm() ** 2 / weight.norm() ** 2)), rel=1e-9)
    # a broken rotation (the identity at every position) would fold exactly: the test can fail
    same = mla.rotated(weight, torch.zeros(512, dtype=torch.long), 10000.0)
    assert mla.relative_residual(same, same.mean(0)) < 1e-12
    text = mla.fold_summary(fold, "en")
    assert f"**{100 * fold.residual:.1f} %**" in text
    (fig,) = mla.fold_figures(fold, "zh")
    assert CJK.search(fig.layout.annotations[0].text)


def test_bad_fold_inputs():
    for args, key in (((64, 63, 512, 1e4), "arch.err.odd_d_k"), ((64, 64, 0, 1e4), "inputs.between"),
                      ((64, 64, 512, 1.0), "arch.err.base"), ((256, 256, 8192, 1e4), "arch.err.fold_too_big"),
                      ((64, 64, 512, float("nan")), "inputs.not_finite"), ((1.5, 64, 512, 1e4), "inputs.not_whole"),
                      ((64, 64, "a lot", 1e4), "inputs.not_whole")):
        with pytest.raises(InputError) as error:
            mla.run_fold(*args)
        assert error.value.key == key
