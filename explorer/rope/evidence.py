"""The claims board's evidence for C11, C12 and C13 (explorer/claims/evidence.py), measured on the
loaded model by the RoPE tab's own experiments and judged by the criterion functions its
summaries use, so that the board and the tab cannot disagree:

    C11  toeplitz.toeplitz_holds, identity_holds, reproduces   (every head of one layer)
    C12  toeplitz.absolute_position_remains                      (every head of one layer)
    C13  frequencies.larger_base_slows and sweep.perplexity_rises

Each `evidence_cN(loaded)` runs the experiment with small fixed inputs (a capture of
CAPTURE_TOKENS tokens stopped after one layer; a sweep of two forwards over SWEEP_TOKENS
tokens) and hands the results to `cN_from(...)`, a pure function a test can feed a broken result.

C13's "base alone is not long context" is measured within the trained length: a base 10x the
trained one, untrained, over 1,024 tokens, judged over the whole text and over its last quarter
(the farthest positions, where a longer reach would help). Past the trained length (8,192
tokens for SmolLM2, 32,768 for Gemma 3) the forwards would take minutes each on a CPU, beyond
the board's time (explorer/claims/board.py), so the criterion says only what it measured.
"""
from __future__ import annotations

from typing import Sequence

from explorer.claims.evidence import Evidence, Measure
from explorer.rope import capture as rope_capture
from explorer.rope import frequencies, sweep, toeplitz
from explorer.rope.capture import rounding_tolerance
from explorer.rope.frequencies import base_label
from explorer.texts import long_text

TAB = "rope"
SECTION_QK = "section-rope-qk-title"        # ctx.section("rope.qk.title")
SECTION_BASE = "section-rope-base-title"    # ctx.section("rope.base.title")

LAYER = 3                  # the captured layer (the last one on a model with fewer layers)
CAPTURE_TOKENS = 64
Q_TOKEN, K_TOKEN = 60, 20  # the q and k placed at every (m, n)
POSITIONS = 64
BASE_FACTOR = 10.0         # the changed base: 10 × the full-attention layers' trained base
SWEEP_APPLY = "all"        # ... on every layer (Gemma's two bases both replaced)
SWEEP_TOKENS = 1024        # 2 forwards: 3 s (SmolLM2) and 12 s (Gemma 3) on an idle 2-core CPU


def toeplitz_per_head(loaded) -> list[toeplitz.ToeplitzResult]:
    """The Toeplitz test for every query head of one layer, on one capture."""
    config = loaded.config
    layer = min(LAYER, config.n_layers - 1)
    captured = rope_capture.capture_qk(loaded.model, loaded.tokenizer, rope_capture.default_text(), layer,
                                       CAPTURE_TOKENS)
    return [toeplitz.toeplitz(captured, head, Q_TOKEN, K_TOKEN, POSITIONS) for head in range(config.n_heads)]


# ============================================================================ C11

def c11_from(results: Sequence[toeplitz.ToeplitzResult], model: str = "") -> Evidence:
    """C11 passes when, in every head, the both-rotated scores are Toeplitz, the identity holds
    and our rotation reproduces the model's q and k."""
    first = results[0].capture
    passed = all(toeplitz.toeplitz_holds(r) and toeplitz.identity_holds(r) and toeplitz.reproduces(r)
                 for r in results)
    return Evidence(
        claim="C11", passed=bool(passed),
        measures=(Measure("claims.m.rope_both_spread", max(r.spread_both.relative for r in results), "", 2),
                  Measure("claims.m.rope_identity", max(r.identity_error for r in results), "", 2),
                  Measure("claims.m.rope_reproduction", max(r.reproduction_relative for r in results), "", 2)),
        criterion="claims.C11.criterion", tab=TAB, section=SECTION_QK,
        fields=dict(tol=toeplitz.TOEPLITZ_TOL, identity_tol=toeplitz.IDENTITY_TOL,
                    repro_tol=rounding_tolerance(first.dtype), layer=first.layer, heads=len(results),
                    n=results[0].n_positions),
        model=model)


def evidence_c11(loaded) -> Evidence:
    return c11_from(toeplitz_per_head(loaded), loaded.name)


# ============================================================================ C12

def c12_from(results: Sequence[toeplitz.ToeplitzResult], model: str = "") -> Evidence:
    """C12 passes when, in every head, rotating only q leaves diagonals that spread well above
    the both-rotated ones."""
    first = results[0].capture
    return Evidence(
        claim="C12", passed=all(toeplitz.absolute_position_remains(r) for r in results),
        measures=(Measure("claims.m.rope_one_spread", min(r.spread_query.relative for r in results), "", 2),
                  Measure("claims.m.rope_one_ratio", min(r.one_side_ratio for r in results), "×", 2),
                  Measure("claims.m.rope_both_spread", max(r.spread_both.relative for r in results), "", 2)),
        criterion="claims.C12.criterion", tab=TAB, section=SECTION_QK,
        fields=dict(min_rel=toeplitz.ONE_SIDE_MIN_RELATIVE, min_ratio=toeplitz.ONE_SIDE_MIN_RATIO,
                    layer=first.layer, heads=len(results)),
        model=model)


def evidence_c12(loaded) -> Evidence:
    return c12_from(toeplitz_per_head(loaded), loaded.name)


# ============================================================================ C13

def c13_from(freq: frequencies.Frequencies, swept: sweep.Sweep, model: str = "",
             trained_len: int = 0) -> Evidence:
    """C13 passes when the larger base slows every pair but the first (frequencies) and the real
    model's perplexity rises with the changed base (sweep)."""
    compared = frequencies.slowing(freq)
    ratios, far = sweep.perplexity_ratios(swept), sweep.far_ratios(swept)
    changed = max(ratios, key=ratios.get) if ratios else float("nan")
    measures = [Measure("claims.m.rope_theta0_ratio", compared.theta0_ratio if compared else float("nan"), "×", 4),
                Measure("claims.m.rope_pairs_slowed", compared.slowed if compared else 0, "", 3),
                Measure("claims.m.rope_fastest_ratio", compared.fastest_ratio if compared else float("nan"), "×", 3),
                Measure("claims.m.rope_ppl_trained", swept.perplexity(swept.reference), "", 4)]
    if ratios:
        measures += [Measure("claims.m.rope_ppl_changed", swept.perplexity(changed), "", 4),
                     Measure("claims.m.rope_ppl_ratio", min(ratios.values()), "×", 4),
                     Measure("claims.m.rope_ppl_far_ratio", min(far.values()), "×", 4)]
    edges = swept.bin_edges()
    return Evidence(
        claim="C13", passed=frequencies.larger_base_slows(freq) and sweep.perplexity_rises(swept),
        measures=tuple(measures), criterion="claims.C13.criterion", tab=TAB, section=SECTION_BASE,
        fields=dict(low=base_label(compared.low) if compared else "", high=base_label(compared.high) if compared else "",
                    others=freq.pairs - 1, rise=sweep.PPL_RISE_MIN, tokens=swept.n_tokens,
                    changed=", ".join(base_label(key) for key in ratios),
                    far_from=int(edges[-2]) + 1, far_to=int(edges[-1]), trained_len=trained_len),
        model=model)


def evidence_c13(loaded) -> Evidence:
    config = loaded.config
    changed = BASE_FACTOR * float(config.rope_theta)
    freq = frequencies.run((float(config.rope_theta), changed), config.head_dim, config.max_position_embeddings)
    swept = sweep.run(loaded.model, loaded.tokenizer, long_text(), [changed], SWEEP_APPLY, SWEEP_TOKENS)
    return c13_from(freq, swept, loaded.name, config.max_position_embeddings)
