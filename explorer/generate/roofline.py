"""The decode roofline of the loaded model, measured (claim C2).

Two halves, drawn on one chart:
- the model: bytes read and FLOPs of one decode step of B sequences at context t, counted from
  the loaded model's own tensors (their element size, so fp32 on a CPU and bf16 on a GPU) and
  its config (each layer's cache read is the tokens it holds: min(t, window) for a
  sliding-window layer), for B = 1, 2, 4, ... 1024; its intensity (FLOP/byte) placed on the roof
  of THIS device, measured by explorer/generate/device_roof.py;
- the engine: the measured time of a decode step of models.decoders.batched.BatchedDecoder at
  B = 1, 2, 4, 8, 16 (B runs prefilled with the same t-token text, then stepped together),
  hence tokens/s and FLOP/s achieved, beside what the roof allows.

The knee, where batching stops paying (decode turns compute-bound or overhead-bound), is read
from the measured tokens/s: the batch after which no doubling of B gains √2× any more (half of
linear growth on a log scale; `knee`). The model's own knee is where its intensity crosses the
measured ridge point (`crossing_batch`).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable, Iterator, Optional, Sequence

import plotly.graph_objects as go
import torch

from explorer.generate import device_roof
from explorer.generate.device_roof import DeviceRoof
from explorer.inputs import InputError, whole_number
from explorer.locales import Term, text
from explorer.plotting import Fig, colors
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
# one. Linear would be 8x, no sharing of the weight read at most 1x. The engine measured
# 3.4-4.2x for SmolLM2 and 3.7x for Gemma at t = 16-78 on the 2-core development CPU under
# load (one intra-op thread; docs/BENCHMARKS.md); 2.5x leaves room for a noisier machine and
# still fails a curve that does not grow.
C2_BATCH = 8
C2_MIN_SPEEDUP = 2.5
EVIDENCE_CONTEXT = 16
EVIDENCE_BATCHES = (1, 2, 4, 8)
EVIDENCE_STEPS = 3


# ----------------------------------------------------------------------------- the model's count
@dataclass(frozen=True)
class StepShape:
    """What one decode step touches, counted from a model's tensors and config."""
    n_layers: int
    n_heads: int
    head_dim: int
    kv_bytes_per_slot: int        # one layer's K and V for one token (2 x kv heads x d_head x element)
    capacities: tuple             # per layer: the tokens its cache holds at most (None: all)
    element_bytes: int            # of the model's dtype (weights and cache)
    dense_weight_bytes: int       # read once per step whatever B (all but routed experts and
                                  # an untied input embedding, of which a step reads B rows)
    dense_matmul_weights: int     # weights each token multiplies (2-D tensors, LM head included)
    expert_weight_bytes: int = 0  # every routed expert of every MoE layer
    expert_matmul_weights: int = 0
    n_experts: int = 0
    experts_per_token: int = 0
    embed_row_bytes: int = 0      # one row of an untied input embedding (0: tied, the head reads it)

    def held(self, context: int) -> list[int]:
        """Per layer, the keys a step at context t reads: min(t, window) on a windowed layer."""
        return [context if cap is None else min(context, cap) for cap in self.capacities]

    def experts_touched(self, batch: float) -> float:
        """Expected routed experts a step of `batch` tokens reads per MoE layer, if the router
        picked k of N uniformly: N·(1 − (1 − k/N)^B). Exactly k at B = 1."""
        if not self.n_experts:
            return 0.0
        return self.n_experts * (1.0 - (1.0 - self.experts_per_token / self.n_experts) ** batch)

    def cost(self, context: int, batch: float) -> tuple[float, float]:
        """(bytes read, FLOPs) of one decode step of `batch` sequences at `context` tokens each:
        weights once for the batch, each sequence its own cache and embedding row; 2 FLOPs per
        weight multiplied per token, plus q·k and p·v: 4 x heads x d_head x keys per layer."""
        held = self.held(context)
        cache = self.kv_bytes_per_slot * sum(held)
        experts = (self.expert_weight_bytes * self.experts_touched(batch) / self.n_experts
                   if self.n_experts else 0.0)
        bytes_read = self.dense_weight_bytes + experts + batch * (cache + self.embed_row_bytes)
        active = self.dense_matmul_weights + (self.expert_matmul_weights * self.experts_per_token
                                              / self.n_experts if self.n_experts else 0.0)
        flops = batch * (2.0 * active + 4.0 * self.n_heads * self.head_dim * sum(held))
        return bytes_read, flops


def element_size(model: torch.nn.Module) -> int:
    """Bytes per element of the model's weights and KV cache (the cache takes the embedding's
    dtype: CausalLM.new_cache)."""
    return model.embed.weight.element_size()


def step_shape(model: torch.nn.Module) -> StepShape:
    """The StepShape of a loaded model (models.forward.CausalLM), from its tensors."""
    from models.moe import Experts

    config = model.config
    embed = model.embed.weight
    expert_ids, expert_bytes, expert_weights = set(), 0, 0
    for module in model.modules():
        if isinstance(module, Experts):
            for p in module.parameters():
                expert_ids.add(id(p))
                expert_bytes += p.numel() * p.element_size()
                expert_weights += p.numel() if p.dim() >= 2 else 0
    dense_bytes = dense_weights = 0
    tied = not hasattr(model, "lm_head")
    for p in model.parameters():          # each tensor once (a tied head is the embedding)
        if id(p) in expert_ids:
            continue
        if p is embed and not tied:
            continue                      # an untied embedding is looked up, not multiplied
        dense_bytes += p.numel() * p.element_size()
        dense_weights += p.numel() if p.dim() >= 2 else 0
    element = element_size(model)
    return StepShape(
        n_layers=config.n_layers, n_heads=config.n_heads, head_dim=config.head_dim,
        kv_bytes_per_slot=2 * config.n_kv_heads * config.head_dim * element,
        capacities=tuple(config.kv_layer_capacities()), element_bytes=element,
        dense_weight_bytes=dense_bytes, dense_matmul_weights=dense_weights,
        expert_weight_bytes=expert_bytes, expert_matmul_weights=expert_weights,
        n_experts=config.n_experts if expert_ids else 0,
        experts_per_token=config.n_experts_per_tok if expert_ids else 0,
        embed_row_bytes=0 if tied else embed.shape[1] * embed.element_size())


def crossing_batch(shape: StepShape, context: int, ridge: float, high: float = 1 << 20) -> Optional[float]:
    """The batch (a real number) where the step's intensity reaches `ridge` FLOP/byte, or None
    when it stays below up to `high` sequences. Intensity grows with B (weights are shared)."""
    def intensity(batch: float) -> float:
        bytes_read, flops = shape.cost(context, batch)
        return flops / bytes_read

    if intensity(1.0) >= ridge:
        return 1.0
    if intensity(high) < ridge:
        return None
    low = 1.0
    for _ in range(60):
        mid = math.sqrt(low * high)
        low, high = (mid, high) if intensity(mid) < ridge else (low, mid)
    return high


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

    The largest batch of runs is prefilled with `ids` once; batch B steps the first B of them,
    one step of each batch size per round, so a run's context grows by the steps it took, and
    the measured points are counted at the context they really had (mean over their steps).
    `threads`: torch's intra-op threads for the forwards (0: unchanged). Raises InputError
    past `time_limit_s`."""
    from models.decoders.batched import BatchedDecoder
    from models.forward import RunOptions

    started = time.perf_counter()
    context = len(ids)
    shape = step_shape(model)
    line = [shape.cost(context, b) for b in line_batches]
    steps_per_run = (WARMUP_STEPS + timed_steps) * len(batches)
    decoder = BatchedDecoder(model, solo=None)      # the same batched forward at every B
    device = model.embed.weight.device
    runs = []

    def out_of_time() -> None:
        if time.perf_counter() - started > time_limit_s:
            raise InputError("generate.roof.too_slow", limit=int(time_limit_s))

    for i in range(max(batches)):
        yield 0.4 * i / max(batches), f"prefill {i + 1}/{max(batches)}"
        out_of_time()
        with intra_op_threads(threads), torch.inference_mode():
            run_ = decoder.start(context + steps_per_run + 1, RunOptions())
            decoder.prefill(list(ids), run_)
        runs.append(run_)
    tokens = [int(ids[-1])] * len(runs)
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
            group = runs[:batch]
            with intra_op_threads(threads), torch.inference_mode():
                if device.type == "cuda":
                    torch.cuda.synchronize(device)
                t0 = time.perf_counter()
                logits = decoder.step_many(tokens[:batch], group)            # (B, 1, V)
                next_tokens = logits[:, -1].argmax(dim=-1).tolist()          # waits for the step
                elapsed = time.perf_counter() - t0
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
        seconds=time.perf_counter() - started, step_times=tuple(times))


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
    """At the smallest batch the step's intensity lies below the measured ridge point."""
    return result.intensity[0] < result.roof.ridge


def c2_holds(result: RooflineResult) -> bool:
    """C2: memory-bound at B = 1 and batching rides on the same weight read (B = 8 gives at
    least C2_MIN_SPEEDUP x the tokens/s of B = 1)."""
    return memory_bound_at_one(result) and speedup(result) >= C2_MIN_SPEEDUP


# ----------------------------------------------------------------------------- figures, summary
def figures(result: RooflineResult, lang: str = "en") -> tuple[go.Figure, go.Figure]:
    """(the roofline: measured roof, the model's line, the measured steps; tokens/s against B)."""
    roof = result.roof
    ridge = roof.ridge
    line_x = list(result.line_intensity)
    every_x = line_x + list(result.intensity) + [ridge]
    xs = [min(every_x) / 2, ridge, max(every_x) * 2]
    palette = colors(3)
    fig = Fig()
    fig.add_scatter(x=xs, y=[min(roof.flops, x * roof.bandwidth) / 1e9 for x in xs], mode="lines",
                    line=dict(color="#000", width=2), name=text("generate.roof.fig.roof", lang),
                    hovertemplate="%{x:.2f} FLOP/B → %{y:.1f} GFLOP/s<extra></extra>")
    fig.add_scatter(x=line_x, y=[result.attainable(x) / 1e9 for x in line_x], mode="lines+markers+text",
                    line=dict(color=palette[1], dash="dot"), marker=dict(size=7, color=palette[1]),
                    text=[f"B={b}" if i % 2 == 0 else "" for i, b in enumerate(result.line_batches)],
                    textposition="top left", name=text("generate.roof.fig.model", lang, t=result.context),
                    customdata=[[b, by / 1e6, f / 1e9] for b, by, f in
                                zip(result.line_batches, result.line_bytes, result.line_flops)],
                    hovertemplate=text("generate.roof.fig.model_hover", lang) + "<extra></extra>")
    fig.add_scatter(x=list(result.intensity), y=[f / 1e9 for f in result.achieved_flops],
                    mode="lines+markers+text", marker=dict(size=11, color=palette[0], symbol="diamond"),
                    line=dict(color=palette[0]), textposition="bottom right",
                    text=[f"B={b}" for b in result.batches], name=text("generate.roof.fig.measured", lang),
                    customdata=[[b, s * 1e3, r] for b, s, r in
                                zip(result.batches, result.step_seconds, result.tokens_per_s)],
                    hovertemplate=text("generate.roof.fig.measured_hover", lang) + "<extra></extra>")
    fig.add_shape(type="line", x0=ridge, x1=ridge, y0=0, y1=1, yref="paper",
                  line=dict(color="#999", dash="dash", width=1))
    fig.add_annotation(x=math.log10(ridge), y=0.0, yref="paper", showarrow=False, yanchor="bottom",
                       xanchor="left", text=text("generate.roof.fig.ridge", lang, ridge=ridge),
                       font=dict(size=11))
    achieved = [f / 1e9 for f in result.achieved_flops]
    lowest = min(achieved + [min(roof.flops, xs[0] * roof.bandwidth) / 1e9])
    highest = max(achieved + [roof.flops / 1e9])   # a step on a busy machine can pass the roof
    fig.update_xaxes(type="log", dtick="D2", title_text=text("generate.roof.fig.intensity", lang))
    fig.update_yaxes(type="log", dtick="D2", title_text=text("generate.roof.fig.gflops", lang),
                     range=[math.log10(lowest) - 0.15, math.log10(highest) + 0.3])
    roofline = fig.finish(text("generate.roof.fig.title", lang, model=result.model, t=result.context),
                          height=420)

    rates = Fig()
    line = [(b, result.predicted_tokens_per_s(b, by, f)) for b, by, f in
            zip(result.line_batches, result.line_bytes, result.line_flops) if b <= 4 * max(result.batches)]
    rates.add_scatter(x=[b for b, _ in line], y=[r for _, r in line], mode="lines+markers",
                      line=dict(color=palette[1], dash="dot"), name=text("generate.roof.fig.predicted", lang),
                      hovertemplate="B = %{x}: %{y:.1f} tok/s<extra></extra>")
    rates.add_scatter(x=list(result.batches), y=list(result.tokens_per_s), mode="lines+markers",
                      marker=dict(size=11, color=palette[0], symbol="diamond"), line=dict(color=palette[0]),
                      name=text("generate.roof.fig.measured", lang),
                      hovertemplate="B = %{x}: %{y:.1f} tok/s<extra></extra>")
    found = knee(result.batches, result.tokens_per_s)
    if found is not None:
        rates.add_shape(type="line", x0=found, x1=found, y0=0, y1=1, yref="paper",
                        line=dict(color=palette[2], dash="dash", width=1))
        rates.add_annotation(x=math.log10(found), y=1.0, yref="paper", showarrow=False, yanchor="bottom",
                             text=text("generate.roof.fig.knee", lang, b=found), font=dict(size=11))
    rates.update_xaxes(type="log", tickvals=[b for b, _ in line], ticktext=[str(b) for b, _ in line],
                       title_text=text("generate.roof.fig.batch", lang))
    rates.update_yaxes(type="log", title_text=text("generate.roof.fig.tokens", lang))
    return roofline, rates.finish(text("generate.roof.fig.rates_title", lang), height=420)


def over_roof(result: RooflineResult) -> Optional[tuple[int, float]]:
    """(batch, share of the roof) of the measured step furthest above the measured roof, or None
    when every step stayed under it. Above it means the roof was measured while the machine
    was busier than during the steps (the roof is a best case, so it should bound them)."""
    shares = [max(bw / result.roof.bandwidth, fl / result.roof.flops) for bw, fl in
              zip(result.achieved_bandwidth, result.achieved_flops)]
    worst = max(range(len(shares)), key=shares.__getitem__)
    return (result.batches[worst], shares[worst]) if shares[worst] > 1.0 else None


def device_line(roof: DeviceRoof, lang: str = "en") -> str:
    """The measured roof in words: bandwidth, FLOP/s, ridge, when and how."""
    when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(roof.measured_at))
    threads = text("generate.roof.threads", lang, n=roof.threads) if roof.threads else ""
    return text("generate.roof.device", lang, device=roof.device, dtype=roof.dtype, threads=threads,
                bandwidth=roof.bandwidth / 1e9, flops=roof.flops / 1e9, ridge=roof.ridge, when=when,
                mib=roof.settings.bandwidth_bytes >> 20, n=roof.settings.matmul_n,
                mv=roof.tries[0], mm=roof.tries[1], seconds=roof.seconds)


def summary(result: RooflineResult, lang: str = "en") -> str:
    """Sentences chosen from the measured numbers, each carrying its number."""
    roof, shape = result.roof, result.shape
    i1 = result.intensity[0]
    b1_bytes, b1_seconds = result.measured_bytes[0], result.step_seconds[0]
    parts = [text("generate.roof.sum.step", lang, b=result.batches[0], mb=b1_bytes / 1e6,
                  gflop=result.measured_flops[0] / 1e9, bytes=shape.element_bytes,
                  t=round(result.measured_context[0]))]
    key = "generate.roof.sum.memory_bound" if memory_bound_at_one(result) else "generate.roof.sum.compute_bound"
    parts.append(text(key, lang, intensity=i1, ridge=roof.ridge, ratio=roof.ridge / i1))
    parts.append(text("generate.roof.sum.share", lang, ms=b1_seconds * 1e3,
                      gbs=result.achieved_bandwidth[0] / 1e9, share=100 * result.achieved_bandwidth[0] / roof.bandwidth))
    over = over_roof(result)
    if over is not None:
        parts.append(text("generate.roof.sum.over_roof", lang, b=over[0], share=100 * over[1]))
    crossing = crossing_batch(shape, result.context, roof.ridge)
    if crossing is None:
        parts.append(text("generate.roof.sum.model_no_knee", lang))
    else:
        parts.append(text("generate.roof.sum.model_knee", lang, b=crossing, ridge=roof.ridge))
    rates = result.tokens_per_s
    last = result.batches[-1]
    found = knee(result.batches, rates)
    gain = rates[-1] / rates[0]
    if found is None:
        parts.append(text("generate.roof.sum.no_knee", lang, b=last, gain=gain, r1=rates[0], rb=rates[-1]))
    else:
        at = result.batches.index(found)
        parts.append(text("generate.roof.sum.knee", lang, knee=found, gain_knee=rates[at] / rates[0],
                          after=rates[-1] / rates[at], b=last, gain=gain, r1=rates[0], rb=rates[-1]))
    if C2_BATCH in result.batches:
        key = "generate.roof.sum.c2_pass" if c2_holds(result) else "generate.roof.sum.c2_fail"
        parts.append(text(key, lang, b=C2_BATCH, gain=speedup(result), k=C2_MIN_SPEEDUP))
    return " ".join(parts)


# ----------------------------------------------------------------------------- claims board
def evidence_c2(loaded) -> "Evidence":
    """C2 on the loaded model: the tab's own measurement at t = 16, B = 1, 2, 4, 8 (three timed
    steps each, on the shared loop's intra-op threads), against this device's roof (the cached
    one when it was measured before)."""
    from explorer.serving import batch_threads

    threads = batch_threads()
    roof = device_roof.measure(loaded.device, loaded.dtype, threads)   # cached after the first
    ids = prompt_ids(loaded.tokenizer, EVIDENCE_CONTEXT)
    result = run(loaded.model, ids, roof, name=getattr(loaded.spec, "title", loaded.name),
                 batches=EVIDENCE_BATCHES, timed_steps=EVIDENCE_STEPS, threads=threads)
    return evidence_from(result, model=loaded.name)


def evidence_from(result: RooflineResult, model: str = "") -> "Evidence":
    """The board's row of C2 from a roofline result (the criterion: c2_holds)."""
    from explorer.claims.evidence import Evidence, Measure

    found = knee(result.batches, result.tokens_per_s)
    rates = dict(zip(result.batches, result.tokens_per_s))
    measures = (
        Measure("claims.m.intensity_b1", result.intensity[0], "FLOP/B"),
        Measure("claims.m.ridge", result.roof.ridge, "FLOP/B"),
        Measure("claims.m.bandwidth", result.roof.bandwidth / 1e9, "GB/s"),
        Measure("claims.m.peak_flops", result.roof.flops / 1e9, "GFLOP/s"),
        Measure("claims.m.tokens_b1", rates[result.batches[0]], "tok/s"),
        Measure("claims.m.tokens_b8", rates[C2_BATCH], "tok/s"),
        Measure("claims.m.batch_speedup", speedup(result), "×"),
    ) + ((Measure("claims.m.knee_batch", float(found), ""),) if found is not None else ())
    return Evidence(claim="C2", passed=bool(c2_holds(result)), measures=measures,
                    criterion="claims.C2.criterion", tab="generate",
                    section="section-generate-roofline",
                    fields={"b": C2_BATCH, "k": C2_MIN_SPEEDUP}, model=model)


# ----------------------------------------------------------------------------- command line
def main(argv: Optional[Sequence[str]] = None) -> None:
    """The section's measurement from a shell, as a Markdown table (docs/BENCHMARKS.md):
        python -m explorer.generate.roofline --model smollm2-135m-instruct --context 64"""
    import argparse
    import os

    from explorer.serving import batch_threads
    from explorer.runtime import Runtime

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--context", type=int, default=DEFAULT_CONTEXT)
    parser.add_argument("--steps", type=int, default=TIMED_STEPS)
    args = parser.parse_args(argv)
    loaded = Runtime().get(args.model)
    threads = batch_threads()
    roof = device_roof.measure(loaded.device, loaded.dtype, threads)
    result = run(loaded.model, prompt_ids(loaded.tokenizer, check_context(args.context)), roof,
                 name=args.model, timed_steps=args.steps, threads=threads)
    print(f"load average {os.getloadavg()[0]:.1f} (1 min), {result.threads} intra-op thread(s)")
    print(device_line(roof).replace("**", ""))
    print("\n| B | step ms (best) | tokens/s | intensity FLOP/B | GB/s achieved | GFLOP/s achieved |")
    print("|---|---|---|---|---|---|")
    for row in zip(result.batches, result.step_seconds, result.tokens_per_s, result.intensity,
                   result.achieved_bandwidth, result.achieved_flops):
        b, s, r, i, bw, fl = row
        print(f"| {b} | {s * 1e3:.1f} | {r:.1f} | {i:.2f} | {bw / 1e9:.1f} | {fl / 1e9:.1f} |")
    print()
    print(summary(result).replace("**", ""))


if __name__ == "__main__":
    main()
