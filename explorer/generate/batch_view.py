"""The class as one batch: what a visitor sees of the shared decode loop (issue 29).

`view(loaded, session)` reads the loop's snapshot (Scheduler.snapshot: lengths and counts, the
recent decode steps) and turns it into a BatchView, the only thing the Generate tab's section
draws (explorer/generate/batch_figures.py):
- one row per run in the loop, in the order of its place number (RunState.seat: kept while
  the run is in the loop, so a run leaving renumbers no other row); `own` marks the viewer's runs (the
  scheduler matched them on the viewer's session; no session or run id reaches the view);
- per row its cache: tokens held, the width its buffers have in the pooled store (or its own
  buffers' capacity outside it), and what a paged layout of BLOCK-token blocks (vLLM's
  PagedAttention) would hold for the same lengths: per layer ceil(held / BLOCK) blocks; bytes
  through ModelConfig.kv_layer_bytes (the formula of claim C3) at the model's element size;
- the prompt tokens prefix reuse saved the viewer's own runs (Scheduler.snapshot's count for
  the viewer's session): never a sum over visitors, which would rise by what another visitor's
  prompt shares with the app's kept prompts (issue 40);
- the recent decode steps (runs in the step, wall time) beside the roofline's prediction for a
  step of B runs at their context (explorer/generate/step_cost.py: the bytes of the weights the
  loop's steps read, in the served precision, on this device's measured roof with the peak of
  the product they run, explorer/generate/device_roof.py) and the roofline's knee, the batch where the step
  turns compute-bound (step_cost.crossing_batch).

A view costs O(runs x layers) plus the prediction line (cached per model and context): the
section's timer asks for one every few seconds per open page.
"""
from __future__ import annotations

import functools
import math
import statistics
import threading
import weakref
from dataclasses import dataclass
from typing import Optional

BLOCK = 16                 # tokens per block of the paged layout compared with the pooled rows
MAX_ROWS = 64              # rows a view shows at most (the loop holds MAX_BATCH + MAX_WAITING)
MAX_STEPS = 120            # recent decode steps a view plots
DEFAULT_CONTEXT = 64       # the prediction's context before any step was recorded


@dataclass(frozen=True)
class RowView:
    number: int            # the run's place number in the loop (RunState.seat)
    own: bool              # the viewer's own run
    state: str             # "waiting" | "prefilling" | "decoding"
    prompt: int
    generated: int
    used: int              # tokens the run's longest layer holds
    allocated: int         # slots of its widest layer's buffers (the pooled row's width)
    paged: int             # slots a paged layout gives the same longest layer: whole blocks
    blocks: int            # blocks of BLOCK tokens a paged layout needs, every layer
    used_bytes: int
    allocated_bytes: int
    paged_bytes: int
    pooled: bool


@dataclass(frozen=True)
class BatchView:
    model: str
    rows: tuple            # RowView, at most MAX_ROWS
    hidden: int            # rows past MAX_ROWS, counted only
    shared_tokens: int     # prompt tokens prefix reuse saved the viewer's own runs
    steps: tuple           # (runs, seconds) of the recent decode steps, oldest first
    context: float         # mean tokens per run of those steps (the prediction's context)
    predicted: tuple       # (batch, seconds) the roofline predicts, batch 1 ... max_batch
    knee: Optional[float]  # batch where the roofline's step turns compute-bound; None: past any
    roof: bool             # the device's roof was measured (else no prediction yet)
    max_batch: int

    def count(self, state: str) -> int:
        return sum(row.state == state for row in self.rows)

    @property
    def totals(self) -> tuple[int, int, int]:
        """(used, allocated, paged) bytes of every row's cache."""
        return (sum(r.used_bytes for r in self.rows), sum(r.allocated_bytes for r in self.rows),
                sum(r.paged_bytes for r in self.rows))


def blocks_for(tokens: int, block: int = BLOCK) -> int:
    """Blocks of `block` tokens that hold `tokens` tokens: ceil(tokens / block)."""
    return -(-int(tokens) // block)


def row_view(number: int, run, config, element: int) -> RowView:
    """One run of the snapshot (runs.RunState) as a row: bytes per layer by the C3 formula."""
    held, allocated = tuple(run.held), tuple(run.allocated)
    blocks = tuple(blocks_for(h) for h in held)
    nbytes = functools.partial(config.kv_layer_bytes, bytes_per_elem=element)
    return RowView(number=number, own=bool(run.own), state=run.state, prompt=run.prompt,
                   generated=run.generated, used=max(held, default=0),
                   allocated=max(allocated, default=0),
                   paged=BLOCK * blocks_for(max(held, default=0)), blocks=sum(blocks),
                   used_bytes=sum(nbytes(h) for h in held),
                   allocated_bytes=sum(nbytes(a) for a in allocated),
                   paged_bytes=sum(nbytes(BLOCK * b) for b in blocks), pooled=bool(run.pooled))


def build(snapshot, model, name: str, roof=None) -> BatchView:
    """The BatchView of a loop snapshot (runs.LoopSnapshot) of `model`; `roof` a measured
    device_roof.DeviceRoof, or None (no prediction)."""
    config = model.config
    element = model.element_size()
    runs = snapshot.runs
    seated = sorted(runs, key=lambda run: run.seat)[:MAX_ROWS]
    rows = tuple(row_view(run.seat, run, config, element) for run in seated)
    steps = tuple((s.runs, s.seconds) for s in snapshot.steps[-MAX_STEPS:])
    contexts = [s.context for s in snapshot.steps[-MAX_STEPS:]]
    context = statistics.median(contexts) if contexts else float(DEFAULT_CONTEXT)
    predicted, knee = (), None
    if roof is not None:
        predicted, knee = _prediction(model, roof.bandwidth, roof.flops, int(round(context)),
                                      snapshot.max_batch)
    return BatchView(model=name, rows=rows, hidden=max(0, len(runs) - MAX_ROWS),
                     shared_tokens=int(snapshot.shared_tokens), steps=steps, context=context,
                     predicted=predicted, knee=knee, roof=roof is not None,
                     max_batch=snapshot.max_batch)


_SHAPES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_SHAPES_LOCK = threading.Lock()


def _shape(model):
    with _SHAPES_LOCK:
        shape = _SHAPES.get(model)
    if shape is None:
        from explorer.generate.step_cost import step_shape
        shape = step_shape(model)
        with _SHAPES_LOCK:
            _SHAPES[model] = shape
    return shape


def _prediction(model, bandwidth: float, flops: float, context: int, max_batch: int):
    """((batch, seconds) for batch 1 ... max_batch, knee): the roofline's step time
    max(bytes / bandwidth, FLOPs / peak) of step_cost.StepShape.cost."""
    from explorer.generate.step_cost import crossing_batch

    shape = _shape(model)
    context = max(1, context)
    points = []
    for batch in range(1, max(1, max_batch) + 1):
        bytes_read, work = shape.cost(context, batch)
        points.append((batch, max(bytes_read / bandwidth, work / flops)))
    return tuple(points), crossing_batch(shape, context, flops / bandwidth)


# ----------------------------------------------------------------------------- the live side
_ROOF_LOCK = threading.Lock()
_ROOF_MEASURING: dict = {}   # (device, dtype, threads) -> Event set when the measurement ended


def roof_for(loaded) -> Optional[object]:
    """This device's measured roof for the loop's batched steps (device_roof's cache), or None;
    when none was measured, one measurement (a second or two) is started in the background,
    once per device and dtype, and a later view has it. While it runs no view waits for it."""
    from explorer.generate import device_roof
    from explorer.serving import batch_threads, start_worker

    from explorer.generate.step_cost import served_weights

    threads = batch_threads()
    weights = served_weights(loaded.model)     # the peak of the product the loop's steps run
    key = (str(loaded.device), str(loaded.dtype), threads, weights)
    with _ROOF_LOCK:
        measuring = _ROOF_MEASURING.get(key)
    if measuring is not None and not measuring.is_set():
        return None          # device_roof holds its lock while it measures: do not wait on it
    roof = device_roof.cached(loaded.device, loaded.dtype, threads, weights)
    if roof is not None:
        return roof
    with _ROOF_LOCK:
        if key in _ROOF_MEASURING:
            return None
        done = _ROOF_MEASURING[key] = threading.Event()

    def measure() -> None:
        try:
            device_roof.measure(loaded.device, loaded.dtype, threads, weights=weights)
        finally:
            done.set()

    start_worker(measure, "batch-view-roof")
    return None


def view(loaded, session: Optional[str]) -> BatchView:
    """The batch view of a loaded model's loop for the visitor of `session` (their runs marked
    own). A model without a loop yet shows an empty loop and no prediction; looking makes
    neither a loop nor the decode precision's weight copies that the prediction counts (a few
    hundred MB, made by the loop's decoder when it first steps)."""
    from explorer.serving import registry
    from explorer.serving.runs import LoopSnapshot
    from explorer.serving.limits import MAX_BATCH

    loop = registry.existing(loaded.model)
    snapshot = (loop.snapshot(session) if loop is not None
                else LoopSnapshot(runs=(), steps=(), shared_tokens=0, max_batch=MAX_BATCH))
    return build(snapshot, loaded.model, getattr(loaded.spec, "title", loaded.name),
                 roof_for(loaded) if loop is not None else None)


def measured_by_batch(steps) -> dict:
    """Median seconds of the recorded steps, per number of runs in the step."""
    by: dict = {}
    for runs, seconds in steps:
        by.setdefault(runs, []).append(seconds)
    return {runs: statistics.median(times) for runs, times in sorted(by.items())}


def log2_ticks(max_batch: int) -> list[int]:
    """1, 2, 4, ... up to max_batch (the step chart's ticks)."""
    return [2 ** i for i in range(int(math.log2(max(1, max_batch))) + 1)]
