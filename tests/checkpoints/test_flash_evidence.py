"""The claims board's evidence for the FlashAttention tab (C16, C17): each function passes on a
real head of SmolLM2, and its criterion fails on a deliberately broken input: a tiled path that
skips a tile, memory that grows quadratically, an online softmax that forgets to rescale."""
from __future__ import annotations

import dataclasses
import inspect
import math

import pytest
import torch

import models.attention as attention
from explorer.claims.evidence import Evidence
from tests.helpers import check_evidence, measure
from explorer.flash import evidence, figures, io, schedule

SMOL = "smollm2-135m-instruct"


def check_shape(found: Evidence, claim: str) -> None:
    check_evidence(found, claim, "flash", "section-flash-sec-schedule", model=SMOL)


# ----------------------------------------------------------------------------- C16

def test_c16_passes(smol):
    found = evidence.evidence_c16(smol)
    check_shape(found, "C16")
    assert found.passed is True
    assert measure(found, "claims.m.flash_diff") <= schedule.TOLERANCE
    assert measure(found, "claims.m.written_tiled_exp") == pytest.approx(1.0)    # only the n×d output
    assert measure(found, "claims.m.written_naive_exp") >= io.QUADRATIC_MIN
    assert measure(found, "claims.m.memory_naive_exp") >= io.QUADRATIC_MIN
    assert measure(found, "claims.m.memory_tiled_exp") <= io.LINEAR_MAX
    assert measure(found, "claims.m.traffic_ratio") > 1
    # the verdict rests on the head's exactness and the measured memory; the bytes written are
    # fixed by construction (naive: the formula; tiled: counted) and shown apart
    assert [m.label for m in found.measures] == [
        "claims.m.flash_diff", "claims.m.memory_naive_exp", "claims.m.memory_tiled_exp"]
    assert [c.label for c in found.consistency] == ["claims.k.flash_written"] and found.consistent


class SkipsOneTile(attention.TileVisibility):
    """The mask of the tile of query rows 32..63 and key columns 0..31 reads as empty, so the
    tiled path skips a tile whose keys are visible."""

    def __getitem__(self, index):
        visible = super().__getitem__(index)
        if index[0].start == 32 and index[1].start == 0:
            return torch.zeros_like(visible)
        return visible


def test_c16_fails_when_the_tiled_path_skips_a_tile(smol, monkeypatch):
    monkeypatch.setattr(schedule, "TileVisibility", SkipsOneTile)
    found = evidence.evidence_c16(smol)
    assert found.passed is False and measure(found, "claims.m.flash_diff") > 1e-3
    head = evidence.head_schedule(smol, evidence.HEAD_N, evidence.HEAD_BLOCK)
    assert not schedule.tiled_exact(head) and "**Not exact (C16):**" in figures.summary(head, "en")


def test_c16_scaling_criterion_fails_on_quadratic_tiled_memory():
    from explorer.flash import memory
    from models.attention import MaskSpec

    ns = (128, 256, 512)
    traffic = io.sweep(ns, 32, 32, 32, MaskSpec())
    measured = memory.MemorySweep(ns=ns, d=32, block_q=32, block_k=32, mask=MaskSpec(), device="CPU",
                                  extra={"naive": tuple(8 * n * n for n in ns), "tiled": tuple(1000 + n for n in ns)},
                                  score_matrix=tuple(4 * n * n for n in ns))
    assert io.scaling(traffic, measured).holds
    assert io.growth_exponent((128, 512), (1.0, 16.0)) == pytest.approx(2.0)
    quadratic = dataclasses.replace(measured, extra={**measured.extra, "tiled": tuple(4 * n * n for n in ns)})
    found = io.scaling(traffic, quadratic)
    assert not found.holds and found.memory_tiled == pytest.approx(2.0)
    assert "Not the scaling C16 states" in figures.scaling_text(found, "en")
    one = dataclasses.replace(measured, ns=(128,), extra={"naive": (1,), "tiled": (1,)})
    assert math.isnan(io.scaling(traffic, one).memory_tiled) and not io.scaling(traffic, one).holds


def test_c16_verdict_rests_on_measured_memory_and_written_bytes_are_a_consistency_check():
    """Written bytes that grew quadratically for tiled would break the bookkeeping (a failed
    consistency check, and the tab's sentence), not the measured half of the verdict; memory
    that grew quadratically for tiled breaks the verdict itself."""
    from explorer.flash import memory
    from models.attention import MaskSpec

    ns = (128, 256, 512)
    traffic = io.sweep(ns, 32, 32, 32, MaskSpec())
    measured = memory.MemorySweep(ns=ns, d=32, block_q=32, block_k=32, mask=MaskSpec(), device="CPU",
                                  extra={"naive": tuple(8 * n * n for n in ns), "tiled": tuple(1000 + n for n in ns)},
                                  score_matrix=tuple(4 * n * n for n in ns))
    rewritten = dataclasses.replace(traffic, counted=traffic.naive)
    found = io.scaling(rewritten, measured)
    assert found.memory_holds and not found.written_consistent and not found.holds
    quadratic = dataclasses.replace(measured, extra={**measured.extra, "tiled": tuple(4 * n * n for n in ns)})
    found = io.scaling(traffic, quadratic)
    assert found.written_consistent and not found.memory_holds


# ----------------------------------------------------------------------------- C17

def test_c17_passes(smol):
    found = evidence.evidence_c17(smol)
    check_shape(found, "C17")
    assert found.passed is True
    assert measure(found, "claims.m.row_blocks") == evidence.ROW_N // evidence.ROW_BLOCK
    assert measure(found, "claims.m.row_rises") >= 1
    assert measure(found, "claims.m.row_out_diff") <= schedule.TOLERANCE


def forgetful_tiled_attention():
    """The engine's tiled_attention with the rescale left out: the normalizer and output
    accumulated so far are never multiplied by exp(m_old − m_new)."""
    source = inspect.getsource(attention.tiled_attention)
    line = "rescale = torch.exp(m - safe_m)"
    assert source.count(line) == 1
    namespace = dict(vars(attention))
    exec(compile(source.replace(line, "rescale = torch.ones_like(m)"), attention.__file__, "exec"), namespace)
    return namespace["tiled_attention"]


def test_c17_fails_on_an_online_softmax_that_forgets_to_rescale(smol, monkeypatch):
    monkeypatch.setattr(schedule, "tiled_attention", forgetful_tiled_attention())
    found = evidence.evidence_c17(smol)
    assert found.passed is False
    assert measure(found, "claims.m.row_norm_diff") > 1e-3 or measure(found, "claims.m.row_out_diff") > 1e-3
    row = evidence.head_schedule(smol, evidence.ROW_N, evidence.ROW_BLOCK)
    assert "does not match" in figures.summary(row, "en")


def test_exactness_summary_is_chosen_by_the_tolerance():
    from explorer.flash import exactness
    from models.attention import MaskSpec

    cases = exactness.random_cases(ns=(37,), blocks=((16, 16),), masks=(MaskSpec(),))
    assert "All within 1.0e-05." in figures.exact_summary(cases, "en")
    broken = [dataclasses.replace(cases[0], tiled_vs_naive=0.25)]
    summary = figures.exact_summary(broken, "en")
    assert "Cases differing by more than 1.0e-05: 1 (largest 2.5e-01)" in summary and "All within" not in summary
    assert "有 1 个用例相差超过" in figures.exact_summary(broken, "zh")
