"""Claim C20 on the loaded model: decoding many runs together raises throughput nearly in
proportion while the step stays memory-bound, until it turns compute-bound.

The measurement drives the shared decode loop's own decoder (engine.batched.
BatchedDecoder as explorer/serving/scheduler.py makes it: a run alone on the fused step, runs
together in one batched step, the matrices in the served decode precision), without the loop's
scheduling: MAX_RUNS runs are prefilled with the same EVIDENCE_CONTEXT-token text in one
forward, then rounds step B of them for each B of BATCHES in turn (batch 1 a run of its own, as
the loop's run alone; interleaved: a burst of other work on the shared machine slows one round
of every size, not every step of one size); each size's best timed step counts. Tokens/s at
B = B / step time; efficiency(B) = tokens/s(B) / (B x tokens/s(1)): 1.0 is in proportion.

The roofline's side is explorer/generate/step_cost.py's count of that step (the bytes of the
weights it reads in the served precision, its FLOPs) on this device's measured roof with the
peak of the product it runs (explorer/generate/device_roof.py): its knee is the batch where
the step's intensity reaches the ridge (step_cost.crossing_batch).

The criterion (c20_holds), read from the measured tokens/s:
- nearly in proportion well below the knee: efficiency >= MIN_EFFICIENCY at B = 2, and at
  B = 4 where 4 <= the roofline's knee / KNEE_MARGIN (there a run's work is at most about
  half the weight read, see KNEE_MARGIN);
- still gaining past a pair: the best tokens/s at B >= 4 at least PAST_PAIR_GAIN x that at
  B = 2, or K/2 x where the roofline's knee K is under 3 (past its knee the roofline's
  tokens/s is K/2 x B = 2's: the step turns to its compute roof rather than stopping at a
  pair's rate);
- a knee where the roofline puts one: the measured knee (`measured_knee`, the roofline
  section's: the end of the last doubling that gained at least √2, half of linear on a log
  scale) lies within a factor
  KNEE_FACTOR of the roofline's knee; where the roofline's knee lies past the batches measured,
  tokens/s grows at every doubling up to a batch within that factor of it.
A step that does not share its weight read (one run at a time: efficiency 1/B), one whose
tokens/s drops at B = 2 and one whose tokens/s is flat fail the first; one that shares its
read only in pairs (flat from B = 2) the second; a step still in proportion far past the
roofline's knee, or one that stops gaining far before it, the third (tests/checkpoints/test_c20.py).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Optional, Sequence

import torch

from models.device import intra_op_threads

if TYPE_CHECKING:
    from explorer.claims.evidence import Evidence

BATCHES = (1, 2, 4, 8, 16, 32)
EVIDENCE_CONTEXT = 16      # prompt tokens of every run (the shipped English text)
WARMUP_ROUNDS = 1
MIN_ROUNDS = 2             # timed rounds at least ...
MAX_ROUNDS = 6             # ... and at most, as many as fit in TIME_BUDGET_S
TIME_BUDGET_S = 12.0       # the timed rounds stop starting after this (bounded: ~20 s in all)
PROPORTIONAL = (2, 4)
# "Nearly in proportion": a step that does not share its weight read between two runs gives
# at most 0.5 at B = 2 (one run at a time: 1/B), a drop at B = 2 less. The real step is below
# 1 by the work that grows with B: a step of B runs costs about read + B x run. Where the runs'
# work is at most half the read, efficiency(B) = (read + run) / (read + B x run) >= 2/3; 0.6
# leaves the rest to noise between the rounds.
MIN_EFFICIENCY = 0.6
# ... and where is a run's work at most half the read? The roofline's knee K puts B x the
# products' arithmetic at its peak equal to the read, so K/2 would do if a run cost only that.
# It costs about twice that: its attention over its own cache, its mask and its sampling, and
# products of a few rows below the peak of the roof's large one. Measured on this repo's
# 2-core CPU (2026-12-08, gguf, `tests/checkpoints/test_c20.py -m slow`): SmolLM2 and Gemma 3
# both turn at a measured knee of 4 where the roofline's is 7.2-7.3, and their efficiency at
# B = 4 = K/1.8 was 0.59-0.63, at the bound. So B = 4 is read where 4 <= K / KNEE_MARGIN, where
# a run's work is at most about half the read (a GPU's knee lies in the hundreds: read there).
KNEE_MARGIN = 4.0
# Past a pair: the roofline gives K/2 x B = 2's tokens/s past its knee K; a step that shares
# its read only in pairs stays at 1x. Measured 1.7-2.1x (SmolLM2 and Gemma 3 on gguf, K ~4.5).
PAST_PAIR_GAIN = 1.5
# A doubling of B that multiplies tokens/s by less than this ends the growth: √2 is half of
# the doubling on a log scale (2x = linear, 1x = flat).
KNEE_GROWTH = math.sqrt(2.0)
# The measured knee is known only to a power of two (the batches measured double), and the
# roofline's knee assumes every product at its measured peak: they agree within one doubling
# and a half of it either way.
KNEE_FACTOR = 3.0


@dataclass(frozen=True)
class BatchScaling:
    model: str
    batches: tuple              # measured batch sizes (1 first)
    step_seconds: tuple         # per batch: the best timed step
    context: int                # prompt tokens per run
    knee: Optional[float]       # the roofline's batch where the step turns compute-bound
    predicted_seconds: tuple    # per batch: max(bytes / bandwidth, FLOPs / peak) of its step
    bandwidth: float            # the roof's bytes/s
    peak_flops: float           # the roof's FLOP/s
    rounds: int                 # timed rounds
    seconds: float              # wall time of the measurement
    weights: str = "fp32"       # the precision the step's matrices were read in
    paths: tuple = ()           # per batch: the step's path (step_cost.step_path)

    @property
    def tokens_per_s(self) -> tuple:
        return tuple(b / s for b, s in zip(self.batches, self.step_seconds))

    def efficiency(self, batch: int) -> float:
        """tokens/s at `batch` over `batch` x tokens/s at 1 (1.0: in proportion)."""
        rates = dict(zip(self.batches, self.tokens_per_s))
        return rates[batch] / (batch * rates[self.batches[0]])

    def gain(self, low: int, high: int) -> float:
        """tokens/s at `high` over tokens/s at `low`."""
        rates = dict(zip(self.batches, self.tokens_per_s))
        return rates[high] / rates[low]


def proportional_batches(result: BatchScaling) -> tuple:
    """The batches of PROPORTIONAL the criterion reads: B = 2, and the others at most the
    roofline's knee / KNEE_MARGIN."""
    return tuple(b for b in PROPORTIONAL if b in result.batches
                 and (b == 2 or result.knee is None or b <= result.knee / KNEE_MARGIN))


def proportional(result: BatchScaling) -> bool:
    """At every batch of proportional_batches: tokens/s >= MIN_EFFICIENCY x B x tokens/s(1)."""
    return all(result.efficiency(b) >= MIN_EFFICIENCY for b in proportional_batches(result))


def past_pair(result: BatchScaling) -> float:
    """The best tokens/s at B >= 4 over tokens/s at B = 2."""
    rates = dict(zip(result.batches, result.tokens_per_s))
    return max(r for b, r in rates.items() if b >= 4) / rates[2]


def past_pair_needed(result: BatchScaling) -> float:
    """The gain past a pair the criterion asks: PAST_PAIR_GAIN, or K/2 where the roofline's
    knee K allows less than that (K < 3; below K = 2 a pair is already past the knee)."""
    if result.knee is None:
        return PAST_PAIR_GAIN
    return min(PAST_PAIR_GAIN, result.knee / 2)


def gains_past_pair(result: BatchScaling) -> bool:
    """past_pair >= past_pair_needed: the step keeps gaining past a pair."""
    return past_pair(result) >= past_pair_needed(result)


def measured_knee(result: BatchScaling) -> Optional[int]:
    """The knee read from the measured tokens/s, as the roofline section reads it
    (explorer/generate/roofline.knee: the end of the last doubling that gained at least √2,
    read from the end so that one noisy small batch does not end the growth early); None when
    the last doubling still gained that much."""
    from explorer.generate.roofline import knee

    return knee(result.batches, result.tokens_per_s, KNEE_GROWTH)


def knee_agrees(result: BatchScaling) -> bool:
    """The measured knee within KNEE_FACTOR of the roofline's knee; where the roofline's knee
    lies past the batches measured (or there is none), growth up to at least that knee /
    KNEE_FACTOR (or to the largest batch)."""
    found, predicted, last = measured_knee(result), result.knee, result.batches[-1]
    if predicted is None or predicted > last:
        floor = last if predicted is None else min(last, predicted / KNEE_FACTOR)
        return found is None or found >= floor
    if found is None:
        return last <= predicted * KNEE_FACTOR
    return predicted / KNEE_FACTOR <= found <= predicted * KNEE_FACTOR


def c20_holds(result: BatchScaling) -> bool:
    """Nearly in proportion below the knee, still gaining past a pair, and a knee where the
    roofline puts one."""
    return proportional(result) and gains_past_pair(result) and knee_agrees(result)


def batched_step(decoder) -> Callable:
    """The engine's step: what the scheduler's loop calls (the fused step for a run alone, one
    forward for several)."""
    return decoder.step_many


def measure(model: torch.nn.Module, ids: Sequence[int], roof, *, name: str = "",
            batches: Sequence[int] = BATCHES, threads: int = 0,
            step: Optional[Callable] = None, budget_s: float = TIME_BUDGET_S) -> BatchScaling:
    """Time decode steps of each of `batches` runs (see the module doc). `step(decoder)` makes
    the step function (tokens, runs) -> logits (B, 1, V) (default: batched_step); `roof`: a
    device_roof.DeviceRoof of the served precision's product. `threads`: torch's intra-op
    threads (0: unchanged)."""
    from explorer.generate.step_cost import crossing_batch, served_weights, step_path, step_shape
    from engine.batched import BatchedDecoder
    from models.forward import RunOptions

    started = time.perf_counter()
    context = len(ids)
    decoder = BatchedDecoder(model, weights=served_weights(model))   # the loop's decoder
    if getattr(roof, "weights", decoder.weights) != decoder.weights:
        raise ValueError(f"a roof of {roof.weights} products for steps on {decoder.weights} weights")
    forward = (step or batched_step)(decoder)
    device = model.embed.weight.device
    n = max(batches) + 1             # the last one is batch 1's: a run alone, as in the loop

    def group(b: int) -> slice:
        return slice(n - 1, n) if b == 1 else slice(0, b)

    capacity = context + (WARMUP_ROUNDS + MAX_ROUNDS) * len(batches) + 1
    with intra_op_threads(threads), torch.inference_mode():
        runs = [decoder.start(capacity, RunOptions()) for _ in range(n)]
        prompt = torch.tensor([list(ids)] * n, dtype=torch.long, device=device)
        decoder.forward_many(prompt, runs)        # every run's prompt in one forward
        tokens = [int(ids[-1])] * n
        timed: dict = {b: [] for b in batches}
        paths = tuple(step_path(decoder, runs[group(b)]) for b in batches)
        rounds = 0
        while rounds < WARMUP_ROUNDS + MAX_ROUNDS:
            if rounds >= WARMUP_ROUNDS + MIN_ROUNDS and time.perf_counter() - started > budget_s:
                break
            for b in batches:
                if device.type == "cuda":
                    torch.cuda.synchronize(device)
                t0 = time.perf_counter()
                logits = forward(tokens[group(b)], runs[group(b)])
                tokens[group(b)] = logits[:, -1].argmax(dim=-1).tolist()     # waits for the step
                if rounds >= WARMUP_ROUNDS:
                    timed[b].append(time.perf_counter() - t0)
            rounds += 1
    for run in runs:
        decoder.release(run)
    shape = step_shape(model, decoder.weights)
    held = context + rounds * len(batches) // 2       # about the keys a step attended to
    predicted = []
    for b in batches:
        bytes_read, flops = shape.cost(held, b)
        predicted.append(max(bytes_read / roof.bandwidth, flops / roof.flops))
    return BatchScaling(model=name, batches=tuple(batches),
                        step_seconds=tuple(min(timed[b]) for b in batches), context=context,
                        knee=crossing_batch(shape, held, roof.ridge),
                        predicted_seconds=tuple(predicted), bandwidth=roof.bandwidth,
                        peak_flops=roof.flops, rounds=rounds - WARMUP_ROUNDS,
                        seconds=time.perf_counter() - started, weights=shape.weights, paths=paths)


def evidence_c20(loaded) -> "Evidence":
    """C20 on the loaded model: measure() with one intra-op thread on a CPU (on the shared
    2-core machine two threads stall at every barrier while another process runs, which would
    measure the machine's load, not the batching: explorer/serving/thread_choice.py), against
    this device's roof with the same threads (the cached one, measured once when none is)."""
    from explorer.generate import device_roof
    from explorer.generate.roofline import prompt_ids

    from explorer.generate.step_cost import served_weights

    threads = 1
    roof = device_roof.measure(loaded.device, loaded.dtype, threads,
                               weights=served_weights(loaded.model))
    ids = prompt_ids(loaded.tokenizer, EVIDENCE_CONTEXT)
    result = measure(loaded.model, ids, roof, name=getattr(loaded.spec, "title", loaded.name),
                     threads=threads)
    return evidence_from(result, model=loaded.name)


def evidence_from(result: BatchScaling, model: str = "") -> "Evidence":
    """The board's row of C20 from a measurement (the criterion: c20_holds)."""
    from explorer.claims.evidence import Evidence, Measure

    rates = dict(zip(result.batches, result.tokens_per_s))
    measures = tuple(Measure(f"serving.m.tokens_b{b}", rates[b], "tok/s") for b in result.batches)
    last = result.batches[-1]
    measures += tuple(Measure(f"serving.m.efficiency_b{b}", 100 * result.efficiency(b), "%", digits=2)
                      for b in (*PROPORTIONAL, last))
    if result.knee is not None:
        measures += (Measure("serving.m.knee", result.knee, ""),)
    measures += (Measure("serving.m.past_pair", past_pair(result), "×"),)
    found = measured_knee(result)
    if found is not None:
        measures += (Measure("serving.m.measured_knee", float(found), ""),)
    return Evidence(claim="C20", passed=bool(c20_holds(result)), measures=measures,
                    criterion="serving.c20.criterion", tab="generate",
                    section="section-generate-batch",
                    fields={"k": MIN_EFFICIENCY, "f": KNEE_FACTOR, "last": last, "g": PAST_PAIR_GAIN,
                            "weights": result.weights},
                    model=model)
