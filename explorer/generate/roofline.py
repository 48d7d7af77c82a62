"""The decode roofline of the loaded model, measured (claim C2).

Two halves, drawn on one chart (explorer/generate/roofline_figures.py):
- the model: bytes read and FLOPs of one decode step of B sequences at context t
  (explorer/generate/step_cost.py: counted from the loaded model's own tensors and config), for
  B = 1, 2, 4, ... 1024; its intensity (FLOP/byte) placed on the roof of THIS device, measured
  by explorer/generate/device_roof.py;
- the engine: the measured time of the decode step the shared loop runs
  (engine.batched.BatchedDecoder as explorer/serving/scheduler.py makes it: a run
  alone on the fused step, several together in one batched step, in the served decode
  precision) at B = 1, 2, 4, 8, 16 (B runs prefilled with the same t-token text, then stepped
  together), hence tokens/s and FLOP/s achieved, beside what the roof allows. The bytes and
  FLOPs are those of that step's own weights (step_cost.step_shape of the decoder's
  precision), and the roof's peak is the product that step runs (device_roof).

The knee, where batching stops paying (decode turns compute-bound or overhead-bound), is read
from the measured tokens/s: the batch after which no doubling of B gains √2× any more (half of
linear growth on a log scale; `knee`). The model's own knee is where its intensity crosses the
measured ridge point (step_cost.crossing_batch). The criteria below decide C2 for the tab's
summary and the claims board alike; bench/roofline.py runs the measurement from a shell.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable, Iterator, Optional, Sequence

import torch

from explorer.generate import device_roof
from explorer.generate.device_roof import DeviceRoof
from explorer.generate.step_cost import StepShape, served_weights, step_path, step_shape
from explorer.inputs import InputError, whole_number
from explorer.locales import Term
from models.device import intra_op_threads

BATCHES = (1, 2, 4, 8, 16)                       # measured
LINE_BATCHES = tuple(2 ** i for i in range(11))  # the model's line: 1 ... 1024
DEFAULT_CONTEXT = 64
MAX_CONTEXT = 512          # every measured run is prefilled with t tokens: 16 x 512 at most
WARMUP_STEPS = 1
TIMED_STEPS = 4            # per batch size, after a warm-up; the best one counts (a shared
                           # machine only ever slows a step down)
TIME_LIMIT_S = 120.0
# A doubling of B that multiplies tokens/s by less than this ends linear growth: √2 is half of
# the doubling on a log scale (2x = linear, 1x = flat).
KNEE_GROWTH_PER_DOUBLING = math.sqrt(2.0)
# C2's batching half: B = 8 sequences per step give at least this many times the tokens/s of
# one. Linear would be 8x, no sharing of the weight read at most 1x. The loop's steps (B = 1
# the fused step, B = 8 the fused batched step) measured 3.4x (gguf) and 4.6x (fp32) for
# SmolLM2, 2.9x and 4.3x for Gemma at t = 16 on the 2-core development CPU, idle, two threads
# (bench.step_account, docs/BENCHMARKS.md); 2.5x still fails a curve that does not grow.
C2_BATCH = 8
C2_MIN_SPEEDUP = 2.5
# C2's memory-bound half, measured: the B = 1 step (the loop's fused step) moves the bytes it
# reads (counted from the copies it reads) at no less than this share of the measured
# bandwidth (bytes per step / step time): reading them at the roof would take at least this
# share of the step, while its FLOPs at the measured peak take a few % of it (intensity
# 0.5-1.8 against a ridge of 6-12). A step whose time is set by something else (per-kernel
# framework overhead, as for a small model's eager step on a GPU; a weight read twice; other
# work on the machine) moves them far slower and fails. On the shared 2-core development CPU,
# idle, the fused step reached 0.65-0.74 of the roof in fp32 and 0.71-0.74 in gguf (both
# models; bench.step_account, docs/BENCHMARKS.md); under load the steps fall to ~0.2 of a roof
# that falls too. The roof moves with the load, so the board measures it afresh just before its
# steps.
C2_MIN_BANDWIDTH_SHARE = 0.15
# C2's consistency check: the B = 1 step cannot move its counted bytes faster than the roof. On
# an idle host it moves them at 0.65-0.74 of it (both models, fp32 and gguf). The roof and the
# step are each a best of a few tries, taken a few seconds (or, for a kept roof, minutes) apart
# on a machine whose load may change between them: up to 1.1 is read as that noise; a count
# of bytes the step does not read (fp32's for a gguf step gave 2.4-2.5) fails it.
C2_MAX_SHARE = 1.1
EVIDENCE_CONTEXT = 16
EVIDENCE_BATCHES = (1, 2, 4, 8)
EVIDENCE_STEPS = 3


# ----------------------------------------------------------------------------- the measurement
@dataclass(frozen=True)
class RooflineResult:
    model: str                  # the model's title
    roof: DeviceRoof            # this device, measured
    shape: StepShape
    context: int                # t of the model's line
    line_batches: tuple
    line_bytes: tuple           # per line batch: bytes one step reads
    line_flops: tuple           # per line batch: FLOPs of one step
    batches: tuple              # measured batch sizes
    step_seconds: tuple         # per measured batch: the best decode step's wall time
    measured_context: tuple     # per measured batch: mean keys its timed steps attended to
    measured_bytes: tuple       # per measured batch: the model's count at that context
    measured_flops: tuple
    threads: int                # intra-op threads of the steps (0 on a GPU)
    seconds: float              # wall time of the whole measurement
    step_times: tuple = field(default=(), repr=False)   # every timed step, per batch
    paths: tuple = ()           # per measured batch: the step's path (step_cost.step_path)

    @property
    def line_intensity(self) -> tuple:
        return tuple(f / b for b, f in zip(self.line_bytes, self.line_flops))

    @property
    def intensity(self) -> tuple:
        """FLOP/byte of each measured step, by the model's count."""
        return tuple(f / b for b, f in zip(self.measured_bytes, self.measured_flops))

    @property
    def tokens_per_s(self) -> tuple:
        return tuple(b / s for b, s in zip(self.batches, self.step_seconds))

    @property
    def achieved_flops(self) -> tuple:
        return tuple(f / s for f, s in zip(self.measured_flops, self.step_seconds))

    @property
    def achieved_bandwidth(self) -> tuple:
        return tuple(b / s for b, s in zip(self.measured_bytes, self.step_seconds))

    def attainable(self, intensity: float) -> float:
        """FLOP/s the measured roof allows at this intensity."""
        return min(self.roof.flops, intensity * self.roof.bandwidth)

    def predicted_tokens_per_s(self, batch: int, bytes_read: float, flops: float) -> float:
        """Tokens/s if a step took exactly what the roof allows: max(bytes/BW, FLOPs/peak)."""
        return batch / max(bytes_read / self.roof.bandwidth, flops / self.roof.flops)


def check_context(context) -> int:
    return whole_number(context, Term("generate.roof.name.context"), 1, MAX_CONTEXT)


def prompt_ids(tokenizer, context: int) -> list[int]:
    """`context` token ids of the shipped English text (repeated if it were shorter)."""
    from explorer.prompts import encode
    from explorer.texts import long_text

    ids = encode(tokenizer, long_text()[:context * 8], context, truncate=True)
    return (ids * (context // len(ids) + 1))[:context]


def _no_progress(fraction: float, message: str) -> None:
    pass


def run(model: torch.nn.Module, ids: Sequence[int], roof: DeviceRoof, *,
        progress: Callable[[float, str], None] = _no_progress, **settings) -> RooflineResult:
    """The model's roofline at context t = len(ids) against the measured `roof`, and the
    engine's decode steps timed at each batch size: run_steps to the end (settings: its
    keyword arguments), `progress(fraction, message)` told on the way."""
    for item in run_steps(model, ids, roof, **settings):
        if isinstance(item, RooflineResult):
            return item
        progress(*item)
    raise RuntimeError("run_steps ended without a result")


def run_steps(model: torch.nn.Module, ids: Sequence[int], roof: DeviceRoof, *, name: str = "",
              batches: Sequence[int] = BATCHES, line_batches: Sequence[int] = LINE_BATCHES,
              timed_steps: int = TIMED_STEPS, threads: int = 0,
              time_limit_s: float = TIME_LIMIT_S) -> Iterator:
    """run() one forward at a time: yields (fraction done, message) between forwards, then the
    RooflineResult, so that a caller can stop it between any two forwards (close it).

    The largest batch of runs and one more are prefilled with `ids` once; batch B > 1 steps the
    first B of them, batch 1 the extra one (as the loop's run alone: the fused step), one step
    of each batch size per round, so a run's context grows by the steps it took, and
    the measured points are counted at the context they really had (mean over their steps).
    `threads`: torch's intra-op threads for the forwards (0: unchanged). Raises InputError
    past `time_limit_s`."""
    from engine.batched import BatchedDecoder
    from models.forward import RunOptions

    started = time.perf_counter()
    context = len(ids)
    # the shared loop's decoder: a run alone on the fused step, in the served precision
    decoder = BatchedDecoder(model, weights=served_weights(model))
    if getattr(roof, "weights", decoder.weights) != decoder.weights:
        raise ValueError(f"a roof of {roof.weights} products for steps on {decoder.weights} weights")
    shape = step_shape(model, decoder.weights)
    line = [shape.cost(context, b) for b in line_batches]
    steps_per_run = (WARMUP_STEPS + timed_steps) * len(batches)
    device = model.embed.weight.device
    runs = []

    def out_of_time() -> None:
        if time.perf_counter() - started > time_limit_s:
            raise InputError("generate.roof.too_slow", limit=int(time_limit_s))

    # batch 1 steps a run of its own: the fused step takes a run alone out of the pooled store
    # (a copy), which a run that also steps in the larger batches would pay at every round
    for i in range(max(batches) + 1):
        yield 0.4 * i / (max(batches) + 1), f"prefill {i + 1}/{max(batches) + 1}"
        out_of_time()
        with intra_op_threads(threads), torch.inference_mode():
            run_ = decoder.start(context + steps_per_run + 1, RunOptions())
            decoder.prefill(list(ids), run_)
        runs.append(run_)
    tokens = [int(ids[-1])] * len(runs)
    paths = tuple(step_path(decoder, runs[-1:] if b == 1 else runs[:b]) for b in batches)
    # Rounds, each timing one step of every batch size in turn: a burst of other work on a
    # shared machine then slows one round of all sizes, not every step of one size.
    timed = {batch: [] for batch in batches}
    keys = {batch: [] for batch in batches}
    rounds = WARMUP_STEPS + timed_steps
    for round_ in range(rounds):
        for n, batch in enumerate(batches):
            yield 0.4 + 0.6 * (round_ * len(batches) + n) / (rounds * len(batches)), \
                f"B = {batch} ({round_ + 1}/{rounds})"
            out_of_time()
            group = runs[-1:] if batch == 1 else runs[:batch]
            with intra_op_threads(threads), torch.inference_mode():
                if device.type == "cuda":
                    torch.cuda.synchronize(device)
                t0 = time.perf_counter()
                logits = decoder.step_many(tokens[-1:] if batch == 1 else tokens[:batch], group)
                next_tokens = logits[:, -1].argmax(dim=-1).tolist()          # waits for the step
                elapsed = time.perf_counter() - t0
            if batch == 1:
                tokens[-1] = next_tokens[0]
            else:
                tokens[:batch] = next_tokens
            if round_ >= WARMUP_STEPS:
                timed[batch].append(elapsed)
                keys[batch].append(sum(r.pos for r in group) / batch)        # keys attended to
    seconds = [min(timed[b]) for b in batches]
    contexts = [sum(keys[b]) / len(keys[b]) for b in batches]
    times = [tuple(timed[b]) for b in batches]
    measured = [shape.cost(round(c), b) for c, b in zip(contexts, batches)]
    yield RooflineResult(
        model=name, roof=roof, shape=shape, context=context, line_batches=tuple(line_batches),
        line_bytes=tuple(c[0] for c in line), line_flops=tuple(c[1] for c in line),
        batches=tuple(batches), step_seconds=tuple(seconds), measured_context=tuple(contexts),
        measured_bytes=tuple(m[0] for m in measured), measured_flops=tuple(m[1] for m in measured),
        threads=0 if device.type == "cuda" else (threads or torch.get_num_threads()),
        seconds=time.perf_counter() - started, step_times=tuple(times), paths=paths)


# ----------------------------------------------------------------------------- criteria
def knee(batches: Sequence[int], tokens_per_s: Sequence[float],
         growth: float = KNEE_GROWTH_PER_DOUBLING) -> Optional[int]:
    """The batch after which tokens/s no longer grows about linearly: the end of the last step
    B -> B' that gained at least growth^log2(B'/B) (√2 per doubling: half of linear on a log
    scale), when every later step gained less. Read from the end, so one noisy small batch does
    not end the growth early. The first batch when no step gained that much; None when the
    last step still did (no knee within the batches measured)."""
    fast = [r1 / r0 >= growth ** math.log2(b1 / b0)
            for b0, b1, r0, r1 in zip(batches, batches[1:], tokens_per_s, tokens_per_s[1:])]
    if not fast or fast[-1]:
        return None
    last_fast = max((i for i, ok in enumerate(fast) if ok), default=-1)
    return batches[last_fast + 1]


def speedup(result: RooflineResult, batch: int = C2_BATCH) -> float:
    """Measured tokens/s at `batch` over tokens/s at the smallest batch measured (B = 1)."""
    rates = dict(zip(result.batches, result.tokens_per_s))
    return rates[batch] / rates[result.batches[0]]


def memory_bound_at_one(result: RooflineResult) -> bool:
    """At the smallest batch the step's intensity (counted) lies below the measured ridge."""
    return result.intensity[0] < result.roof.ridge


def bandwidth_share(result: RooflineResult) -> float:
    """The smallest batch's bytes per step (counted) / its step time (measured), as a share of
    the measured bandwidth."""
    return result.achieved_bandwidth[0] / result.roof.bandwidth


def c2_holds(result: RooflineResult) -> bool:
    """C2: memory-bound at B = 1 (intensity below the ridge, and the step moving its bytes at
    C2_MIN_BANDWIDTH_SHARE of the measured bandwidth or more), and batching rides on the same
    weight read (B = 8 gives at least C2_MIN_SPEEDUP x the tokens/s of B = 1)."""
    return (memory_bound_at_one(result) and bandwidth_share(result) >= C2_MIN_BANDWIDTH_SHARE
            and speedup(result) >= C2_MIN_SPEEDUP)


def over_roof(result: RooflineResult) -> Optional[tuple[int, float]]:
    """(batch, share of the roof) of the measured step furthest above the measured roof, or None
    when every step stayed under it. Above it means the roof was measured while the machine
    was busier than during the steps (the roof is a best case, so it should bound them)."""
    shares = [max(bw / result.roof.bandwidth, fl / result.roof.flops) for bw, fl in
              zip(result.achieved_bandwidth, result.achieved_flops)]
    worst = max(range(len(shares)), key=shares.__getitem__)
    return (result.batches[worst], shares[worst]) if shares[worst] > 1.0 else None


# ----------------------------------------------------------------------------- claims board
def evidence_c2(loaded) -> "Evidence":
    """C2 on the loaded model: the tab's own measurement at t = 16, B = 1, 2, 4, 8 (three timed
    steps each, on the shared loop's intra-op threads), against this device's roof measured
    just before (a second or two; it replaces the cached one), so that the share of the
    bandwidth compares the step with the machine as it was at the time."""
    from explorer.serving import batch_threads

    threads = batch_threads()
    roof = device_roof.measure(loaded.device, loaded.dtype, threads, refresh=True,
                               weights=served_weights(loaded.model))
    ids = prompt_ids(loaded.tokenizer, EVIDENCE_CONTEXT)
    result = run(loaded.model, ids, roof, name=getattr(loaded.spec, "title", loaded.name),
                 batches=EVIDENCE_BATCHES, timed_steps=EVIDENCE_STEPS, threads=threads)
    return evidence_from(result, model=loaded.name)


def evidence_from(result: RooflineResult, model: str = "") -> "Evidence":
    """The board's row of C2 from a roofline result (the criterion: c2_holds)."""
    from explorer.claims.evidence import Consistency, Evidence, Measure

    found = knee(result.batches, result.tokens_per_s)
    rates = dict(zip(result.batches, result.tokens_per_s))
    measures = (
        Measure("claims.m.intensity_b1", result.intensity[0], "FLOP/B"),
        Measure("claims.m.ridge", result.roof.ridge, "FLOP/B"),
        Measure("claims.m.bandwidth", result.roof.bandwidth / 1e9, "GB/s"),
        Measure("claims.m.bandwidth_b1", result.achieved_bandwidth[0] / 1e9, "GB/s"),
        Measure("claims.m.bandwidth_share_b1", 100 * bandwidth_share(result), "%", digits=2),
        Measure("claims.m.peak_flops", result.roof.flops / 1e9, "GFLOP/s"),
        Measure("claims.m.tokens_b1", rates[result.batches[0]], "tok/s"),
        Measure("claims.m.tokens_b8", rates[C2_BATCH], "tok/s"),
        Measure("claims.m.batch_speedup", speedup(result), "×"),
    ) + ((Measure("claims.m.knee_batch", float(found), ""),) if found is not None else ())
    return Evidence(claim="C2", passed=bool(c2_holds(result)), measures=measures,
                    criterion="claims.C2.criterion", tab="generate",
                    section="section-generate-roofline",
                    fields={"b": C2_BATCH, "k": C2_MIN_SPEEDUP, "share": C2_MIN_BANDWIDTH_SHARE,
                            "weights": result.shape.weights},
                    model=model,
                    # bookkeeping: the step cannot move the bytes it reads faster than the roof
                    # (a count of bytes the step does not read, fp32's for a gguf step, could)
                    consistency=(Consistency("claims.C2.under_roof",
                                             bool(bandwidth_share(result) <= C2_MAX_SHARE)),))

