"""The claims board's evidence for the Architecture tab (C6, C7, C18, C19): each function runs the
tab's own experiment with small fixed inputs and reads the verdict through the criterion the
tab's summary uses (explorer/claims/evidence.py describes the shape).

    evidence_c6(loaded)    DeepSeek-V3's latent cache = 4.5 d_head = GQA with 2.25 KV heads (its
                           published config); a tiny DeepSeek-V3-shaped module, loaded through the
                           checkpoint mapping tests/unit/test_mla.py checks against transformers:
                           its
                           up-projected cache = its per-head K and V (mla.py)
    evidence_c7(loaded)    the best fixed W' for R_m W over 512 positions leaves a residual (mla.py)
    evidence_c18(loaded)   the loaded checkpoint's block (inventory.py): five facts decided by its
                           tensors, three by its architecture's code (blocks.FACT_SOURCES)
    evidence_c19(loaded)   pre- vs post-norm gradients at initialisation, 24 layers (norm_placement.py)

C6, C7 and C19 do not depend on the loaded model (Evidence.model is ""): C6 and C7 compute from
DeepSeek-V3's published shape, C19 on small stacks built at initialisation. C18 reads the
loaded checkpoint: every fact holds for SmolLM2 (Llama architecture) and for Gemma 3, whose gated
MLP uses GELU (GeGLU) where Llama uses SiLU (SwiGLU): the measures say which.
"""
from __future__ import annotations

from explorer.architecture import blocks, inventory, mla, norm_placement
from explorer.claims.evidence import Evidence, Measure

TAB = "architecture"
MLA_SECTION = "section-arch-mla-heading"
BLOCKS_SECTION = "section-arch-blocks-heading"
NORM_SECTION = "section-arch-norm-heading"

# C7: the tab's defaults, DeepSeek-V3's 64-dim RoPE key over 512 positions at its base
FOLD = dict(d_in=64, d_k=64, positions=512, base=10000.0, seed=0)
# C19: one depth where the tab shows the separation, with its seed
NORM_DEPTH = 24


def evidence_c6(loaded) -> Evidence:
    result = mla.run_cache(seed=0, tokens=24)
    return Evidence(
        claim="C6", passed=mla.cache_claim_holds(result),
        measures=(Measure("claims.m.mla_latent_heads", result.latent_in_heads, "d_head"),
                  Measure("claims.m.mla_gqa_heads", result.equal_gqa_heads),
                  Measure("claims.m.mla_kv_error", mla.latent_error(result), digits=2),
                  Measure("claims.m.mla_cache_bytes", result.tiny_cache_bytes, "B", digits=6),
                  Measure("claims.m.mla_formula_bytes", result.tiny_formula_bytes, "B", digits=6)),
        criterion="claims.C6.criterion", tab=TAB, section=MLA_SECTION,
        fields={"in_heads": mla.CLAIMED_IN_HEADS, "gqa": mla.CLAIMED_GQA_HEADS, "tol": mla.LATENT_TOL})


def evidence_c7(loaded) -> Evidence:
    result = mla.run_fold(**FOLD)
    return Evidence(
        claim="C7", passed=mla.fold_leaves_residual(result),
        measures=(Measure("claims.m.fold_residual", 100 * result.residual, "%"),
                  Measure("claims.m.fold_expected", 100 * result.expected, "%"),
                  Measure("claims.m.fold_residual_one", 100 * result.residual_one, "%", digits=2),
                  Measure("claims.m.fold_fast_pair", 100 * float(result.pair_residual[0]), "%"),
                  Measure("claims.m.fold_slow_pair", 100 * float(result.pair_residual[-1]), "%")),
        criterion="claims.C7.criterion", tab=TAB, section=MLA_SECTION,
        fields={"positions": result.positions, "d_k": result.d_k,
                "threshold": 100 * mla.FOLD_RESIDUAL_MIN, "expected": 100 * result.expected,
                "tol": 100 * mla.FOLD_EXPECTED_TOL})


def loaded_block(loaded) -> inventory.Block:
    """The loaded checkpoint's block as the tab's run() reads it (after the two references)."""
    entry = inventory.checkpoint_entry(loaded.name, getattr(loaded.spec, "title", loaded.name),
                                       loaded.folder, loaded.model)
    return blocks.run([entry]).blocks[-1]


def evidence_c18(loaded) -> Evidence:
    block = loaded_block(loaded)
    facts = blocks.modern_facts(block)
    return Evidence(
        claim="C18", passed=blocks.is_llama_style(block),
        measures=(Measure("claims.m.arch_facts", sum(facts.values())),
                  Measure("claims.m.arch_facts_tensors", blocks.facts_held(block, "tensors")[0]),
                  Measure("claims.m.arch_facts_code", blocks.facts_held(block, "architecture")[0]),
                  Measure("claims.m.position_params", block.params["position"]),
                  Measure("claims.m.bias_tensors", len(block.bias_tensors)),
                  Measure("claims.m.norms_per_block", block.norms_per_block),
                  Measure("claims.m.q_heads", block.n_heads),
                  Measure("claims.m.kv_heads", block.n_kv_heads),
                  Measure("claims.m.encoder_layers", block.encoder_layers)),
        criterion="claims.C18.criterion", tab=TAB, section=BLOCKS_SECTION,
        fields={"n": len(facts)}, model=loaded.name)


def evidence_c19(loaded) -> Evidence:
    result = norm_placement.run_init((NORM_DEPTH,), seed=0)
    return Evidence(
        claim="C19", passed=norm_placement.placement_separates(result, NORM_DEPTH),
        measures=(Measure("claims.m.post_ratio", result.ratio("post", NORM_DEPTH), "×"),
                  Measure("claims.m.pre_ratio", result.ratio("pre", NORM_DEPTH), "×")),
        criterion="claims.C19.criterion", tab=TAB, section=NORM_SECTION,
        fields={"depth": NORM_DEPTH, "post_min": norm_placement.POST_GROWTH_MIN,
                "pre_max": norm_placement.PRE_GROWTH_MAX})
