"""The claims board's evidence for the Architecture tab (C6, C7, C18, C19): each function passes on
SmolLM2, and its criterion fails on a deliberately broken input, in the board's verdict and in the
sentence the tab shows."""
from __future__ import annotations

import dataclasses

import pytest
import torch

from explorer.architecture import blocks, evidence, inventory, mla, norm_placement
from explorer.claims.evidence import Evidence
from tests.helpers import check_evidence, measure

SMOL = "smollm2-135m-instruct"
GEMMA = "gemma-3-270m"


def check_shape(found: Evidence, claim: str, section: str) -> None:
    check_evidence(found, claim, "architecture", section)


# ----------------------------------------------------------------------------- C6

def test_c6_passes(smol):
    found = evidence.evidence_c6(smol)
    check_shape(found, "C6", "section-arch-mla-heading")
    assert found.passed is True and found.model == ""
    assert measure(found, "claims.m.mla_latent_heads") == 4.5
    assert measure(found, "claims.m.mla_gqa_heads") == 2.25
    assert measure(found, "claims.m.mla_kv_error") <= mla.LATENT_TOL
    assert measure(found, "claims.m.mla_cache_bytes") == measure(found, "claims.m.mla_formula_bytes") > 0
    # the tiny cache's bytes come from its tensors' shapes and fill count, and say so
    from explorer.locales import text

    assert "shapes and fill count" in text("claims.m.mla_cache_bytes", "en")
    assert "shapes and fill count" in mla.cache_summary(mla.run_cache(), "en")
    assert "read from" not in text("claims.m.mla_cache_bytes", "en")


def test_c6_fails_on_a_latent_with_one_dimension_zeroed(smol, monkeypatch):
    from models.mla import LatentKVCache

    original = LatentKVCache.update

    def zeroing(self, layer, latent, rope_key):
        latent = latent.clone()
        latent[..., 0] = 0.0                  # one latent dimension lost on its way into the cache
        return original(self, layer, latent, rope_key)

    monkeypatch.setattr(LatentKVCache, "update", zeroing)
    found = evidence.evidence_c6(smol)
    assert found.passed is False
    assert measure(found, "claims.m.mla_kv_error") > 100 * mla.LATENT_TOL
    # the tab's summary reads the same criterion
    assert "does not reproduce" in mla.cache_summary(mla.run_cache(), "en")


def test_c6_criterion_needs_deepseeks_figures():
    import dataclasses

    result = mla.run_cache()
    assert mla.cache_claim_holds(result) and "reproduces the per-head K and V" in mla.cache_summary(result, "en")
    # a latent of another width is no longer 4.5 d_head
    wider = dataclasses.replace(result, kv_lora_rank=result.kv_lora_rank + 128)
    assert wider.latent_in_heads == 5.5 and not mla.cache_claim_holds(wider)


# ----------------------------------------------------------------------------- C7

def test_c7_passes(smol):
    found = evidence.evidence_c7(smol)
    check_shape(found, "C7", "section-arch-mla-heading")
    assert found.passed is True and found.model == ""
    assert measure(found, "claims.m.fold_residual") >= 100 * mla.FOLD_RESIDUAL_MIN
    assert measure(found, "claims.m.fold_residual_one") < 1e-6


def test_c7_fails_when_the_rotation_does_not_depend_on_position(smol, monkeypatch):
    """RoPE broken into the identity at every position: one W' fits every m, the residual is 0."""
    def no_rotation(positions, inv_freq, dtype):
        cos, sin = mla_rope_cos_sin(positions, inv_freq, dtype)
        return torch.ones_like(cos), torch.zeros_like(sin)

    mla_rope_cos_sin = mla.rope_cos_sin
    monkeypatch.setattr(mla, "rope_cos_sin", no_rotation)
    found = evidence.evidence_c7(smol)
    assert found.passed is False and measure(found, "claims.m.fold_residual") < 1e-6
    summary = mla.fold_summary(mla.run_fold(**evidence.FOLD), "en")
    assert "too little here" in summary and "no fixed" not in summary


def test_c7_fails_over_two_positions():
    """Two positions turn the fast pair by one radian and the rest barely: 13 % is left, not the
    claim's "cannot be folded"."""
    fold = mla.run_fold(**{**evidence.FOLD, "positions": 2})
    assert 0.1 < fold.residual < mla.FOLD_RESIDUAL_MIN and not mla.fold_leaves_residual(fold)
    assert "too little here" in mla.fold_summary(fold, "en")


def test_c7_fails_on_a_rotation_with_tiny_angles(smol, monkeypatch):
    """Every pair's angle scaled by 1e-3: R_m is nearly the identity over 512 positions, one W'
    almost fits, and the board says so (the closed form agrees: the bar is what fails)."""
    real = mla.rope_inv_freq
    monkeypatch.setattr(mla, "rope_inv_freq", lambda d, base: real(d, base) * 1e-3)
    found = evidence.evidence_c7(smol)
    assert found.passed is False and measure(found, "claims.m.fold_residual") < 20
    fold = mla.run_fold(**evidence.FOLD)
    assert mla.fold_matches_expected(fold) and not mla.fold_leaves_residual(fold)


def test_c7_residual_matches_the_closed_form_over_seeds():
    """A random W's residual sits within FOLD_EXPECTED_TOL of the angles' closed form (77.0 %
    for the board's setting) for every seed tried, and a W with all its weight on the slowest
    pair does not (the comparison can fail)."""
    expected = mla.expected_residual(64, 512, 10000.0)
    assert expected == pytest.approx(0.7698, abs=1e-4)
    for seed in range(6):
        fold = mla.run_fold(**{**evidence.FOLD, "seed": seed})
        assert fold.expected == expected and mla.fold_leaves_residual(fold), (seed, fold.residual)
    weight = torch.zeros(64, 64, dtype=torch.float64)
    weight[31] = weight[63] = 1.0                         # the slowest pair only (rotate-half layout)
    stack = mla.rotated(weight, torch.arange(512), 10000.0)
    lopsided = dataclasses.replace(fold, residual=mla.relative_residual(stack, stack.mean(0)))
    assert lopsided.residual < 0.1 and not mla.fold_matches_expected(lopsided)
    assert "more than 3 points away" in mla.fold_summary(dataclasses.replace(fold, residual=0.9), "en")


# ----------------------------------------------------------------------------- C18

def test_c18_passes_on_smollm2(smol):
    found = evidence.evidence_c18(smol)
    check_shape(found, "C18", "section-arch-blocks-heading")
    assert found.passed is True and found.model == SMOL
    assert measure(found, "claims.m.arch_facts") == len(blocks.MODERN_FACTS) == found.fields["n"]
    assert measure(found, "claims.m.bias_tensors") == 0 and measure(found, "claims.m.encoder_layers") == 0
    assert (measure(found, "claims.m.q_heads"), measure(found, "claims.m.kv_heads")) == (9, 3)


def test_c18_fails_when_a_bias_tensor_is_present(smol, monkeypatch):
    real = inventory.checkpoint_inventory

    def with_bias(folder):
        tensors = real(folder)
        tensors["model.layers.0.self_attn.q_proj.bias"] = (tensors["model.layers.0.self_attn.q_proj.weight"][0],)
        return tensors

    monkeypatch.setattr(inventory, "checkpoint_inventory", with_bias)
    found = evidence.evidence_c18(smol)
    assert found.passed is False and measure(found, "claims.m.bias_tensors") == 1
    assert measure(found, "claims.m.arch_facts") == len(blocks.MODERN_FACTS) - 1


@pytest.mark.parametrize("extra, fact, component", [
    ({"model.encoder.layers.0.self_attn.q_proj.weight": (576, 576)}, "no_encoder", "encoder"),
    ({"model.layers.0.encoder_attn.q_proj.weight": (576, 576)}, "no_cross", "cross_attention"),
    ({"model.layers.0.cross_attn.k_proj.weight": (192, 576)}, "no_cross", "cross_attention"),
    ({"model.embed_positions.weight": (2048, 576)}, "rope", "position"),
])
def test_c18_a_foreign_tensor_fails_its_fact_not_the_read(smol, monkeypatch, extra, fact, component):
    """An encoder, a cross-attention or a position-embedding tensor in the checkpoint is a fact
    that fails (✗ on the tab, a failing row with its measures on the board), not an error."""
    real = inventory.checkpoint_inventory
    monkeypatch.setattr(inventory, "checkpoint_inventory", lambda folder: {**real(folder), **extra})
    found = evidence.evidence_c18(smol)
    assert found.passed is False
    assert measure(found, "claims.m.arch_facts") == len(blocks.MODERN_FACTS) - 1
    block = evidence.loaded_block(smol)
    assert [key for key, holds in blocks.modern_facts(block).items() if not holds] == [fact]
    assert block.params[component] == sum(n * m for n, m in extra.values())
    assert "✗ " + blocks.text(f"arch.blocks.fact.{fact}", "en") in blocks.facts_text(block, "en")
    if fact == "rope":
        assert measure(found, "claims.m.position_params") == 2048 * 576
        assert measure(found, "claims.m.arch_facts_code") == 2
    else:
        assert measure(found, "claims.m.arch_facts_tensors") == 4


def test_c18_says_which_facts_the_tensors_decide(smol):
    """Five facts are decided by the tensors, three by the architecture's code; a stored RoPE
    buffer is read as such (not a parameter, not an unknown tensor)."""
    found = evidence.evidence_c18(smol)
    assert measure(found, "claims.m.arch_facts_tensors") == 5 and measure(found, "claims.m.arch_facts_code") == 3
    assert sorted(key for key, source in blocks.FACT_SOURCES.items() if source == "architecture") == [
        "pre_norm", "rmsnorm", "rope"]
    entry = inventory.checkpoint_entry(SMOL, "SmolLM2", smol.folder)
    tensors = {**entry.inventory, "model.rotary_emb.inv_freq": (32,)}
    block = inventory.describe(dataclasses.replace(entry, inventory=tensors))
    assert block.rotary_tensors == ("model.rotary_emb.inv_freq",) and blocks.is_llama_style(block)
    assert block.total_params == inventory.describe(entry).total_params
    for lang in ("en", "zh"):
        assert "5" in blocks.facts_text(block, lang) and "3" in blocks.facts_text(block, lang)


def test_c18_on_gemma_every_fact_with_a_geglu_mlp():
    """Gemma 3's block, read from its tensors: pre-norm RMSNorm, RoPE, one KV head for four query
    heads, no bias, no encoder, and a gated MLP whose gate uses GELU (GeGLU), which counts as the
    claim's gated MLP; a plain GELU MLP (GPT-2) does not."""
    from explorer.checkpoints import prepare_embedded

    block = blocks.run([inventory.checkpoint_entry(GEMMA, "Gemma", prepare_embedded(GEMMA))]).blocks[-1]
    facts = blocks.modern_facts(block)
    assert block.activation == "geglu" and all(facts.values()) and blocks.is_llama_style(block)
    plain = dataclasses.replace(block, activation="gelu")
    assert [key for key, holds in blocks.modern_facts(plain).items() if not holds] == ["gated_mlp"]
    assert "7 of the 8 changes" in blocks.facts_text(plain, "en") and "gated MLP" in blocks.facts_text(plain, "en")
    # the post-norm original Transformer fails most of them
    original = inventory.describe(inventory.original_transformer_entry())
    assert sum(blocks.modern_facts(original).values()) == 0



@pytest.mark.parametrize("name, experts", [("explorer-moe-aux", True), ("explorer-dense", False)])
def test_c18_on_our_shipped_models(runtime, name, experts):
    """Our MoE models keep the experts' stacked tensors (gate|up fused, (E, 2F, d)); their dense
    baseline has a Llama MLP under the same architecture name: both are read, both hold."""
    loaded = runtime.get(name)
    block = evidence.loaded_block(loaded)
    assert inventory.checkpoint_entry(name, name, loaded.folder).scheme == ("explorer_moe" if experts else "llama")
    assert block.activation == "swiglu" and block.n_heads == 6 and block.n_kv_heads == 2
    assert block.d_ff == (loaded.config.d_expert if experts else loaded.config.d_ff)
    assert evidence.evidence_c18(loaded).passed is True

# ----------------------------------------------------------------------------- C19

def test_c19_passes(smol):
    found = evidence.evidence_c19(smol)
    check_shape(found, "C19", "section-arch-norm-heading")
    assert found.passed is True and found.model == ""
    assert measure(found, "claims.m.post_ratio") >= norm_placement.POST_GROWTH_MIN
    assert measure(found, "claims.m.pre_ratio") <= norm_placement.PRE_GROWTH_MAX


def test_c19_fails_on_a_post_norm_stack_measured_as_pre_norm(smol, monkeypatch):
    original = norm_placement.Block.forward

    def always_pre(self, x, positions):
        self.placement = "pre"
        return original(self, x, positions)

    monkeypatch.setattr(norm_placement.Block, "forward", always_pre)
    found = evidence.evidence_c19(smol)
    assert found.passed is False and measure(found, "claims.m.post_ratio") < norm_placement.POST_GROWTH_MIN
    summary = norm_placement.init_summary(norm_placement.run_init((evidence.NORM_DEPTH,)), "en")
    assert "does not separate" in summary
