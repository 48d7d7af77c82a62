"""Lesson: attention sinks and StreamingLLM (the notes' fourth section; claim C10).

Every number the steps quote is read from the visitor's own runs: the sink grid
(explorer/attention/sinks.py) judged by sink_verdict, the attention map under the sinks mask
(explorer/attention/maps.py: its masked probabilities exactly 0, mask_matches_nonzero), and the
StreamingLLM perplexities (explorer/attention/streaming.py) judged by streaming_verdict and
eviction_hurts: the claims board's C10 criterion, with the board's own settings."""
from __future__ import annotations

from typing import Optional

from explorer.attention import maps, sinks, streaming
from explorer.attention.evidence import C10_SINK_TOKENS, C10_SINKS, C10_STREAM_TOKENS, C10_WINDOW
from explorer.lessons import Lesson, Predict, Step

SMOLLM2 = "smollm2-135m-instruct"
# the map: a later layer of SmolLM2, where most heads are sink heads, under a small window
MAP_LAYER, MAP_WINDOW, MAP_SINKS = 20, 8, 2


def mark(ok: bool) -> str:
    return "✓" if ok else "✗"


def read_sinks(result: sinks.SinkResult) -> Optional[dict]:
    """The later layers' mean attention on token 0 (`answer`, in %) against what uniform
    attention over the visible keys would give, judged by C10's sink criterion (sink_verdict)."""
    if not isinstance(result, sinks.SinkResult):
        return None
    grid = result.grid
    verdict = sinks.sink_verdict(grid)
    return {"n_tokens": grid.n_tokens, "later": verdict.later_from, "layers": grid.first.shape[0],
            "last": grid.first.shape[0] - 1, "k": verdict.n_sink_heads, "n": verdict.n_heads, "share": 100 * verdict.share,
            "need": 100 * verdict.need, "factor": verdict.factor,
            "answer": 100 * verdict.mean_first, "uniform": 100 * verdict.uniform,
            "ratio": verdict.mean_first / verdict.uniform if verdict.uniform else 0.0,
            "first_query": grid.first_query, "verdict": mark(verdict.holds)}


def read_map(result: maps.MapResult) -> Optional[dict]:
    """Rows past the window under a sinks mask: the attention on token 0 (kept as a sink) against
    uniform attention over the keys each row sees; the mask's check (hidden keys exactly 0)."""
    if not isinstance(result, maps.MapResult):
        return None
    m = result.layer_map
    mask = m.layer_mask
    if mask.window is None or not mask.sinks:
        return None          # not a sinks mask: not this step's run
    rows = m.q_pos >= mask.window                       # token 0 is out of these rows' window
    if not bool(rows.any()):
        return None
    probs = m.probs[:, rows]                            # (H, R, S)
    on_first = probs[..., m.kv_pos == 0].sum(-1)        # (H, R)
    visible = m.visible[rows].sum(-1).float()           # (R,) keys each row sees
    return {"layer": m.layer, "window": mask.window, "sinks": mask.sinks,
            "n_tokens": result.n_tokens, "rows": int(rows.sum()),
            "first": 100 * float(on_first.mean()), "uniform": 100 * float((1 / visible).mean()),
            "masked_max": result.masked_max,
            "verdict": mark(result.masked_max == 0 and result.mask_matches_nonzero)}


def read_stream(result: streaming.StreamingRun) -> Optional[dict]:
    """Perplexity past the window under each policy, judged by streaming_verdict and
    eviction_hurts (C10's StreamingLLM criterion: evicting hurts, the sinks help), and whether
    the sinks bring it back: streaming_verdict's sinks_recover, within DEGRADE_RATIO of the full
    cache, the same bound that counts the window alone as degraded."""
    if not isinstance(result, streaming.StreamingRun):
        return None
    numbers = result.numbers
    ppl = numbers["perplexity"]
    closed = numbers["gap_closed"]
    return {"n_tokens": result.this.n_tokens, "window": result.this.window,
            "sinks": result.this.sinks, "past": numbers["past_window_from"],
            "full": ppl["full"], "window_ppl": ppl["window"], "sinks_ppl": ppl["sinks"],
            "window_ratio": numbers["window_ratio"], "sinks_ratio": numbers["sinks_ratio"],
            "collapse": streaming.COLLAPSE_RATIO, "collapses": mark(numbers["window_collapses"]),
            "closed": 100 * closed if closed == closed else 0.0,
            "degrade": streaming.DEGRADE_RATIO, "recovers": mark(numbers["sinks_recover"]),
            "verdict": mark(streaming.eviction_hurts(numbers))}


LESSON = Lesson(
    key="sinks-streaming", title="lesson.sinks.title", summary="lesson.sinks.summary", order=40,
    steps=(
        Step(view="attention.sinks", look="lesson.sinks.s1.look", said="lesson.sinks.s1.said",
             read=read_sinks, model=SMOLLM2,
             settings={"tokens": C10_SINK_TOKENS, "sinks": C10_SINKS, "use_logit": False},
             fields={"tokens": C10_SINK_TOKENS},
             predict=Predict(question="lesson.sinks.s1.ask", answer="answer", unit="%",
                             why="lesson.sinks.s1.why", low=0, high=100)),
        Step(view="attention.map", look="lesson.sinks.s2.look", said="lesson.sinks.s2.said",
             read=read_map, model=SMOLLM2,
             settings={"layer": MAP_LAYER, "head": "all", "mask": "sinks", "window": MAP_WINDOW,
                       "sinks": MAP_SINKS},
             fields={"window": MAP_WINDOW, "sinks": MAP_SINKS, "layer": MAP_LAYER}),
        Step(view="attention.stream", look="lesson.sinks.s3.look", said="lesson.sinks.s3.said",
             read=read_stream, model=SMOLLM2,
             settings={"tokens": C10_STREAM_TOKENS, "window": C10_WINDOW, "sinks": C10_SINKS},
             fields={"tokens": C10_STREAM_TOKENS, "window": C10_WINDOW, "sinks": C10_SINKS}),
    ),
)
