"""Claim C20 (explorer/serving/evidence.py): decoding many runs together raises throughput nearly
in proportion while the step stays memory-bound, until it turns compute-bound. The criterion
holds on both real models, measured (slow), and fails on a broken step that reads the weights
once per run (each run decoded on its own inside the "batched" step), measured on the real
models too and on a tiny one."""
from __future__ import annotations

import pytest
import torch

from explorer.claims.registry import CLAIMS, resolve
from explorer.generate.roofline import prompt_ids
from explorer.serving import evidence
from explorer.serving.evidence import BatchScaling, c20_holds, flattens, proportional

REAL = ("smollm2-135m-instruct", "gemma-3-270m")


def one_run_at_a_time(decoder):
    """The broken step: every run gets its own forward (the weights read once per run)."""
    def step(tokens, runs):
        device = decoder.model.embed.weight.device
        return torch.cat([decoder.forward_many(torch.tensor([[int(t)]], device=device), [run])
                          for t, run in zip(tokens, runs)])
    return step


class Roof:
    bandwidth, flops = 20e9, 150e9

    @property
    def ridge(self):
        return self.flops / self.bandwidth


def scaling(seconds, knee=20.0) -> BatchScaling:
    return BatchScaling(model="m", batches=evidence.BATCHES, step_seconds=tuple(seconds), context=16,
                        knee=knee, predicted_seconds=(0.01,) * 6, bandwidth=1.0, peak_flops=1.0,
                        rounds=3, seconds=1.0)


def test_criterion_on_stated_curves():
    # memory-bound to ~8, then the step time grows with B: holds
    good = scaling([0.08, 0.095, 0.10, 0.11, 0.15, 0.30])
    assert proportional(good) and flattens(good) and c20_holds(good)
    # every run its own weight read: time grows in proportion to B; efficiency 1/B
    broken = scaling([0.08 * b for b in evidence.BATCHES])
    assert not proportional(broken) and not c20_holds(broken)
    # in proportion all the way to 32 although the knee is at 20: no flattening, fails
    flat_time = scaling([0.08] * 6)
    assert proportional(flat_time) and not flattens(flat_time) and not c20_holds(flat_time)
    # ... but when the roofline puts the knee past the batches measured, none is asked for
    assert c20_holds(scaling([0.08] * 6, knee=None)) and c20_holds(scaling([0.08] * 6, knee=300.0))


def test_registered_on_the_board():
    entry = {e.claim: e for e in CLAIMS}["C20"]
    assert entry.target == "explorer.serving.evidence:evidence_c20" and entry.places == ("generate",)
    assert resolve(entry) is evidence.evidence_c20


def test_measure_drives_the_step_it_is_given(tiny):
    """On a tiny model a step's time is overhead, whatever B: the engine's batched step keeps
    it about flat (in proportion), one forward per run makes it grow with B (1/B)."""
    model = tiny["llama"]
    ids = list(range(3, 3 + evidence.EVIDENCE_CONTEXT))
    good = evidence.measure(model, ids, Roof(), batches=(1, 2, 4, 8), threads=1, budget_s=2.0)
    bad = evidence.measure(model, ids, Roof(), batches=(1, 2, 4, 8), threads=1, budget_s=2.0,
                           step=one_run_at_a_time)
    assert good.rounds >= evidence.MIN_ROUNDS and len(good.step_seconds) == 4
    assert good.efficiency(4) > 0.5 and bad.efficiency(4) < evidence.MIN_EFFICIENCY
    assert not proportional(bad)


@pytest.fixture(scope="module", params=REAL)
def loaded(request, runtime):
    return runtime.get(request.param)


@pytest.mark.slow
def test_c20_holds_on_the_real_model(loaded):
    found = evidence.evidence_c20(loaded)
    assert found.claim == "C20" and found.model == loaded.name and found.consistent
    values = {m.label: m.value for m in found.measures}
    print(f"\n{loaded.name}: " + ", ".join(f"{k.split('.')[-1]}={v:.3g}" for k, v in values.items()))
    assert found.passed, values
    assert values["serving.m.tokens_b32"] > values["serving.m.tokens_b1"]


@pytest.mark.slow
def test_c20_fails_on_a_step_that_reads_the_weights_once_per_run(loaded):
    from explorer.generate import device_roof

    roof = device_roof.measure(loaded.device, loaded.dtype, 1)
    ids = prompt_ids(loaded.tokenizer, evidence.EVIDENCE_CONTEXT)
    broken = evidence.measure(loaded.model, ids, roof, batches=(1, 2, 4), threads=1,
                              step=one_run_at_a_time, budget_s=3.0)
    print(f"\n{loaded.name} broken: efficiency " +
          ", ".join(f"B={b}: {broken.efficiency(b):.2f}" for b in broken.batches))
    assert not proportional(broken)
    assert not c20_holds(broken)
