"""The claims board's evidence for C11, C12, C13 (explorer/rope/evidence.py): each passes on the
real SmolLM2, its texts exist in both languages, it points at a section the RoPE tab has, and its
criterion FAILS on a deliberately broken input (RoPE on one side only where both are expected,
both sides where one is expected, a capture rotated at shuffled positions, a base change that
never reaches the model, a frequency table where a pair does not slow)."""
from __future__ import annotations

import dataclasses
import string
import time

import numpy as np
import pytest
import torch

from explorer.claims.evidence import Evidence
from explorer.locales import template, text
from explorer.rope import evidence, frequencies, sweep, toeplitz
from models.layers import apply_rope, rope_cos_sin

SMOL = "smollm2-135m-instruct"


@pytest.fixture(scope="module")
def per_head(smol):
    return evidence.toeplitz_per_head(smol)


def check_texts(result: Evidence) -> None:
    """The criterion and every measure's label read in both languages with the evidence's fields."""
    for lang in ("en", "zh"):
        criterion = text(result.criterion, lang, **result.fields)
        assert "{" not in criterion, criterion
        for measure in result.measures:
            assert text(measure.label, lang)
    fields = {name for _, name, _, _ in string.Formatter().parse(template(result.criterion, "en")) if name}
    assert fields <= set(result.fields), fields - set(result.fields)


def test_c11_and_c12_pass_on_smollm2(smol, per_head):
    start = time.perf_counter()
    c11, c12 = evidence.evidence_c11(smol), evidence.evidence_c12(smol)
    seconds = time.perf_counter() - start
    assert seconds < 30, seconds                     # a few seconds each on an idle 2-core CPU
    assert c11.passed and c12.passed
    assert (c11.claim, c12.claim, c11.tab, c11.section, c11.model) == ("C11", "C12", "rope", evidence.SECTION_QK, SMOL)
    assert c11.fields["heads"] == smol.config.n_heads and c11.fields["layer"] == evidence.LAYER
    values = {m.label: m.value for m in c11.measures}
    assert values["claims.m.rope_both_spread"] <= toeplitz.TOEPLITZ_TOL
    assert values["claims.m.rope_reproduction"] <= c11.fields["repro_tol"]
    ratios = {m.label: m.value for m in c12.measures}
    assert ratios["claims.m.rope_one_ratio"] >= toeplitz.ONE_SIDE_MIN_RATIO
    assert ratios["claims.m.rope_one_spread"] >= toeplitz.ONE_SIDE_MIN_RELATIVE
    # the board's verdict is the tab's: the same criterion functions on the same results
    assert all(toeplitz.toeplitz_holds(r) and toeplitz.absolute_position_remains(r) for r in per_head)
    check_texts(c11)
    check_texts(c12)


def test_c11_fails_with_rope_on_one_side_only(per_head):
    one_sided = [dataclasses.replace(r, both=r.query_only, spread_both=r.spread_query) for r in per_head]
    result = evidence.c11_from(one_sided, SMOL)
    assert not result.passed
    assert {m.label: m.value for m in result.measures}["claims.m.rope_both_spread"] > 1e-3


def test_c11_fails_on_a_capture_rotated_at_shuffled_positions(per_head):
    capture = per_head[0].capture
    order = torch.randperm(capture.q.shape[1], generator=torch.Generator().manual_seed(1))
    cos, sin = rope_cos_sin(order, capture.inv_freq(), torch.float32)
    shuffled = dataclasses.replace(capture, q=apply_rope(capture.q_pre, cos, sin), k=apply_rope(capture.k_pre, cos, sin))
    results = [toeplitz.toeplitz(shuffled, head, evidence.Q_TOKEN, evidence.K_TOKEN, evidence.POSITIONS)
               for head in range(len(per_head))]
    assert not evidence.c11_from(results).passed
    # the placed scores are still Toeplitz: it is the reproduction that catches the shuffle
    assert all(toeplitz.toeplitz_holds(r) for r in results)


def test_c12_fails_when_both_sides_are_rotated(per_head):
    both_sided = [dataclasses.replace(r, query_only=r.both, spread_query=r.spread_both) for r in per_head]
    result = evidence.c12_from(both_sided, SMOL)
    assert not result.passed
    assert {m.label: m.value for m in result.measures}["claims.m.rope_one_ratio"] == pytest.approx(1.0)
    # one broken head is enough
    assert not evidence.c12_from([*per_head[1:], both_sided[0]]).passed


def test_c13_passes_on_smollm2_and_points_at_the_base_section(smol):
    result = evidence.evidence_c13(smol)
    assert result.passed, result.measures
    values = {m.label: m.value for m in result.measures}
    assert values["claims.m.rope_theta0_ratio"] == 1.0
    assert values["claims.m.rope_pairs_slowed"] == smol.config.head_dim // 2 - 1
    assert values["claims.m.rope_ppl_ratio"] >= 1 + sweep.PPL_RISE_MIN
    assert values["claims.m.rope_ppl_far_ratio"] >= 1 + sweep.PPL_RISE_MIN
    assert (result.tab, result.section, result.fields["high"], result.fields["tokens"]) == \
        ("rope", evidence.SECTION_BASE, "1M", evidence.SWEEP_TOKENS) == ("rope", evidence.SECTION_BASE, "1M", 1024)
    # the last quarter lies past three quarters of the text, and the text says where it stops
    assert (result.fields["far_from"], result.fields["far_to"], result.fields["trained_len"]) == (768, 1023, 8192)
    assert "within the trained length (8,192 tokens)" in text(result.criterion, "en", **result.fields)
    check_texts(result)


def test_c13_fails_when_the_base_change_never_reaches_the_model(smol, monkeypatch):
    # a broken base switch: every "changed" base runs the model as trained
    from models.forward import RunOptions

    monkeypatch.setattr(sweep, "base_options", lambda config, base, apply_to: RunOptions())
    result = evidence.evidence_c13(smol)
    assert not result.passed
    assert {m.label: m.value for m in result.measures}["claims.m.rope_ppl_ratio"] == pytest.approx(1.0)


def test_c13_fails_when_a_pair_does_not_slow():
    freq = frequencies.run((1e5, 1e6), 64, 8192)
    theta = freq.theta.copy()
    theta[1, 5] = theta[0, 5] * 1.01                # pair 5 faster at the larger base
    swept = sweep.Sweep(bases=(1e5, 1e6), trained=1e5, trained_pair=(1e5, 1e5), apply_to="full",
                        nll={1e5: torch.full((10,), 3.0), 1e6: torch.full((10,), 3.5)},
                        seconds={1e5: 1.0, 1e6: 1.0}, n_tokens=11)
    assert evidence.c13_from(freq, swept).passed
    assert not evidence.c13_from(dataclasses.replace(freq, theta=np.asarray(theta)), swept).passed


def test_c13_fails_when_the_far_positions_do_not_get_worse():
    """A larger base that hurts the near positions only: over the whole text the perplexity
    rises, over its last quarter (where a longer reach would help) it does not."""
    freq = frequencies.run((1e5, 1e6), 64, 8192)
    changed = torch.full((100,), 3.0)
    changed[:70] = 3.5
    swept = sweep.Sweep(bases=(1e5, 1e6), trained=1e5, trained_pair=(1e5, 1e5), apply_to="full",
                        nll={1e5: torch.full((100,), 3.0), 1e6: changed},
                        seconds={1e5: 1.0, 1e6: 1.0}, n_tokens=101)
    result = evidence.c13_from(freq, swept)
    values = {m.label: m.value for m in result.measures}
    assert values["claims.m.rope_ppl_ratio"] >= 1 + sweep.PPL_RISE_MIN
    assert values["claims.m.rope_ppl_far_ratio"] == pytest.approx(1.0)
    assert not result.passed


def test_evidence_sections_exist_in_the_rope_tab(runtime):
    import app

    demo = app.build_app(runtime, ("explorer.ui.tabs.rope",))
    ids = {getattr(block, "elem_id", None) for block in demo.blocks.values()}
    assert {evidence.SECTION_QK, evidence.SECTION_BASE} <= ids
