"""Claim C20 (explorer/generate/batch_evidence.py): decoding many runs together raises throughput nearly
in proportion while the step stays memory-bound, until it turns compute-bound. The criterion
holds on both real models on the loop's own steps in the served precision, measured (slow),
and fails on every broken step: one run at a time (each run its own weight read), batching
only in pairs, a drop at B = 2, a flat curve, a curve still in proportion far past the
roofline's knee and one that stalls far before it; as stated curves, and as steps measured on
a tiny model and on the real models."""
from __future__ import annotations

import time

import pytest
import torch

from explorer.claims.registry import CLAIMS, resolve
from explorer.generate.roofline import prompt_ids
from explorer.generate import batch_evidence as evidence
from explorer.generate.batch_evidence import (BatchScaling, c20_holds, gains_past_pair, knee_agrees,
                                       measured_knee, proportional)

REAL = ("smollm2-135m-instruct", "gemma-3-270m")


def one_run_at_a_time(decoder):
    """The broken step: every run gets its own forward (the weights read once per run)."""
    def step(tokens, runs):
        device = decoder.model.embed.weight.device
        return torch.cat([decoder.forward_many(torch.tensor([[int(t)]], device=device), [run])
                          for t, run in zip(tokens, runs)])
    return step


def pairs_only(decoder):
    """The broken step: runs batched two at a time (the weights read once per pair)."""
    def step(tokens, runs):
        return torch.cat([decoder.step_many(tokens[i:i + 2], runs[i:i + 2])
                          for i in range(0, len(runs), 2)])
    return step


def drop_at_two(decoder):
    """The broken step: the engine's step, but two runs together cost three lone steps more
    (a step whose tokens/s falls at B = 2)."""
    def step(tokens, runs):
        logits = decoder.step_many(tokens, runs)
        if len(runs) == 2:
            for _ in range(3):
                decoder.model.head(torch.zeros(1, 1, decoder.model.config.d_model))
                time.sleep(0.002)
        return logits
    return step


def scaling(seconds, knee=5.6) -> BatchScaling:
    return BatchScaling(model="m", batches=evidence.BATCHES, step_seconds=tuple(seconds), context=16,
                        knee=knee, predicted_seconds=(0.01,) * 6, bandwidth=1.0, peak_flops=1.0,
                        rounds=3, seconds=1.0)


def times_for(rates):
    """Step seconds of B = 1, 2, 4, ... 32 at these tokens/s."""
    return [b / r for b, r in zip(evidence.BATCHES, rates)]


GOOD = [0.007, 0.0075, 0.009, 0.014, 0.025, 0.048]      # a memory-bound step, knee at 4-8


def test_the_criterion_holds_on_a_step_that_shares_its_weight_read():
    good = scaling(GOOD)
    assert good.efficiency(2) > 0.9 and proportional(good) and gains_past_pair(good)
    assert measured_knee(good) == 4 and knee_agrees(good) and c20_holds(good)
    # SmolLM2 and Gemma 3 on gguf as measured under load (tokens/s at 1 ... 32, knee ~4.5):
    # proportional at 2, 4 near the knee, gaining past the pair
    for rates, knee in (([76.5, 149, 206, 259, 276, 317], 4.73), ([39.4, 66.4, 76.8, 95.8, 123, 113], 4.3)):
        assert c20_holds(scaling(times_for(rates), knee=knee))


@pytest.mark.parametrize("name, seconds, fails", [
    # each run its own weight read: time in proportion to B, tokens/s flat
    ("one run at a time", [0.007 * b for b in evidence.BATCHES], proportional),
    # two runs share a read, four take two reads: tokens/s flat from B = 2
    ("pairs only", [0.007, 0.007, 0.014, 0.028, 0.056, 0.112], gains_past_pair),
    # tokens/s at B = 2 is 0.72 of B = 1's, then grows
    ("a drop at B = 2", [0.007, 2 * 0.007 / 0.72, 0.009, 0.014, 0.025, 0.048], proportional),
    # tokens/s flat from the start, however the time is spent
    ("a flat curve", times_for([140.0] * 6), proportional),
])
def test_the_criterion_fails_on_a_step_that_does_not_batch(name, seconds, fails):
    broken = scaling(seconds)
    assert not fails(broken), name
    assert not c20_holds(broken), name


def test_the_knee_must_lie_near_the_roofline_knee():
    # in proportion up to 32 where the roofline puts the knee at 5.6: no knee where one must be
    linear = scaling([0.007] * 6)
    assert proportional(linear) and measured_knee(linear) is None
    assert not knee_agrees(linear) and not c20_holds(linear)
    # ... but with the roofline's knee past the batches measured, none is asked for
    assert c20_holds(scaling([0.007] * 6, knee=None)) and c20_holds(scaling([0.007] * 6, knee=300.0))
    # proportional at 2 and 4, gaining past the pair, then flat, where the roofline's knee is
    # at 40 (fp32-like): it stalls a factor 10 before the knee
    stalls = scaling([0.02, 0.021, 0.022, 0.044, 0.088, 0.176], knee=40.0)
    assert proportional(stalls) and gains_past_pair(stalls) and measured_knee(stalls) == 4
    assert not knee_agrees(stalls) and not c20_holds(stalls)
    # the same curve against a knee of 6: within the factor, holds
    assert c20_holds(scaling([0.02, 0.021, 0.022, 0.044, 0.088, 0.176], knee=6.0))


def test_b4_is_read_only_well_below_the_roofline_knee():
    # a knee at 4.5 (gguf): B = 4 lies past a quarter of it, only B = 2 must be in proportion
    curve = scaling([0.007, 0.0075, 0.02, 0.025, 0.04, 0.07], knee=4.5)
    assert evidence.proportional_batches(curve) == (2,)
    assert proportional(curve)
    # a knee at 7.3 (this host's gguf, where B = 4 measured 0.59-0.63): still only B = 2
    assert evidence.proportional_batches(scaling(GOOD, knee=7.3)) == (2,)
    # a knee at 16 or more (fp32 on a fast CPU, any GPU): B = 4 is read too, and 0.35 there fails
    assert evidence.proportional_batches(scaling(GOOD, knee=16.0)) == (2, 4)
    assert not proportional(scaling([0.007, 0.0075, 0.02, 0.025, 0.04, 0.07], knee=16.0))


def test_registered_on_the_board():
    entry = {e.claim: e for e in CLAIMS}["C20"]
    assert entry.target == "explorer.generate.batch_evidence:evidence_c20" and entry.places == ("generate",)
    assert resolve(entry) is evidence.evidence_c20


@pytest.fixture(scope="module")
def small_memory_bound():
    """A random Llama of 13M parameters (d 512, 4 layers): small enough for a quick test, big
    enough that a decode step reads its weights for most of its time, as C20's claim is about.
    On the 3-layer d-64 toy every step is host overhead (~160 us), where the fused batched
    step's per-run cost (each run's mask built from MaskSpec's predicate in Python, ~10 us: the
    price of keeping a mask kind in one place) alone decides the curve."""
    from tests.helpers import ours_from_hf, tiny_hf
    return ours_from_hf(tiny_hf("llama", hidden_size=512, intermediate_size=1536,
                                num_hidden_layers=4, head_dim=128))


def test_measure_drives_the_step_it_is_given(small_memory_bound):
    """The weights read once for every run: the loop's step keeps tokens/s in proportion to B
    up to the knee; one forward per run makes them flat (1/B per run), pairs only make B = 4
    cost two steps, and a step slowed at B = 2 drops there; each broken one fails."""
    from explorer.generate import device_roof

    model = small_memory_bound
    ids = list(range(3, 3 + evidence.EVIDENCE_CONTEXT))
    # this host's roof at the measurement's one thread, as the board takes it: the knee (8 here,
    # 2026-12-08) says whether B = 4 is read, and only the host's own roof says it truly
    roof = device_roof.measure("cpu", torch.float32, 1)
    kwargs = dict(batches=(1, 2, 4, 8), threads=1, budget_s=2.0)
    good = evidence.measure(model, ids, roof, **kwargs)
    assert good.rounds >= evidence.MIN_ROUNDS and len(good.step_seconds) == 4
    assert good.paths[0] == "fused" and proportional(good), (good.knee, good.tokens_per_s)
    for broken_step, fails in ((one_run_at_a_time, proportional), (pairs_only, gains_past_pair),
                               (drop_at_two, proportional)):
        bad = evidence.measure(model, ids, roof, step=broken_step, **kwargs)
        assert not fails(bad), (broken_step.__name__, bad.tokens_per_s)


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
@pytest.mark.parametrize("broken_step, fails", [(one_run_at_a_time, proportional),
                                                (pairs_only, gains_past_pair)])
def test_c20_fails_on_a_step_that_does_not_share_the_read(loaded, broken_step, fails):
    from explorer.generate import device_roof
    from explorer.generate.step_cost import served_weights

    roof = device_roof.measure(loaded.device, loaded.dtype, 1, weights=served_weights(loaded.model))
    ids = prompt_ids(loaded.tokenizer, evidence.EVIDENCE_CONTEXT)
    broken = evidence.measure(loaded.model, ids, roof, batches=(1, 2, 4, 8), threads=1,
                              step=broken_step, budget_s=8.0)   # up to MAX_ROUNDS: a best of 6
    print(f"\n{loaded.name} {broken_step.__name__}: efficiency " +
          ", ".join(f"B={b}: {broken.efficiency(b):.2f}" for b in broken.batches))
    assert not fails(broken)
    assert not c20_holds(broken)


def test_the_measured_knee_is_the_roofline_sections():
    """C20 and the roofline section read the knee from measured tokens/s the same way: a noisy
    B = 2 does not end the growth early in either."""
    from explorer.generate.roofline import knee

    noisy = scaling(times_for([100, 120, 240, 480, 500, 510]))
    assert measured_knee(noisy) == knee(noisy.batches, noisy.tokens_per_s) == 8


def test_pairs_only_fails_even_when_the_roofs_knee_is_small():
    """A roof measured low (a busy host) can put the knee under 3: the gain past a pair asked is
    then K/2, still above a pairs-only step's 1x, so that step fails on any roof with K > 2."""
    pairs = [0.007, 0.007, 0.014, 0.028, 0.056, 0.112]
    for knee in (2.2, 2.9, 4.5, 12.0):
        assert evidence.past_pair_needed(scaling(pairs, knee=knee)) > 1.0
        assert not c20_holds(scaling(pairs, knee=knee)), knee
    assert evidence.past_pair_needed(scaling(pairs, knee=None)) == evidence.PAST_PAIR_GAIN
