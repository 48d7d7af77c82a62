"""Lesson: sliding windows and depth (the notes' third section; claims C8, C9).

Every number the steps quote is read from the visitor's own runs: the receptive-field probe
(explorer/attention/receptive_field.py) judged by c8_holds, C8's criterion on the claims board,
and the rule's first reached layer against the measured one; and the local / global layers of
Gemma 3 (explorer/attention/costs.py): counted from the layers' own masks and the engine's cache
formula, no forward, so that step quotes them as computed and puts no mark on them."""
from __future__ import annotations

import math
from typing import Optional

from explorer.attention import costs, receptive_field as rf
from explorer.attention.evidence import MISTRAL_LAYERS, MISTRAL_WINDOW, c8_holds
from explorer.lessons import Lesson, Predict, Step

SMOLLM2 = "smollm2-135m-instruct"
GEMMA = "gemma-3-270m"
MIB = 2**20

# Step 1: a window of 2 moves information one position per layer; 40 tokens reach past the
# 30 layers' L(w - 1) + 1 = 31 (the claims board's C8 run, on a text the slider can hold).
SMALL_WINDOW, SMALL_TOKENS = 2, 40
# Step 2: with a window of 64 the text's first token sits (w - 1) * 2 + 1 = 127 positions before
# the last of 128 tokens, a distance the probe measures (default_distances probes both sides
# of each multiple of w - 1), so the first layer it reaches is a measured value.
WINDOW, TOKENS = 64, 128


def mark(ok: bool) -> str:
    return "✓" if ok else "✗"


def _forced(result) -> Optional[rf.ReceptiveFieldResult]:
    """The probe of a run with one window forced on every layer (None for anything else)."""
    if not isinstance(result, rf.ProbeRun) or result.mode != "forced" or result.window is None:
        return None
    return result.probe


def read_reach(result: rf.ProbeRun) -> Optional[dict]:
    """The reach after all layers, measured on both sides of L(w - 1), judged by C8's criterion
    (the reach and the rule's first layer at every probed distance)."""
    probe = _forced(result)
    reach = rf.measured_reach(probe) if probe is not None else None
    if reach is None or reach.nearest_unchanged is None:
        return None          # the text ends before the reach: not this step's run
    mistral = rf.theoretical_reach(MISTRAL_LAYERS, MISTRAL_WINDOW)
    return {"window": result.window, "step": result.window - 1, "layers": result.n_layers,
            "rule": reach.rule, "farthest": reach.farthest_changed, "nearest": reach.nearest_unchanged,
            "agree": sum(a == b for a, b in zip(probe.predicted, probe.measured)),
            "total": len(probe.distances), "n_tokens": probe.n_tokens,
            "mistral_layers": MISTRAL_LAYERS, "mistral_window": MISTRAL_WINDOW, "mistral": mistral,
            "verdict": mark(c8_holds(probe, mistral))}


def read_first_token(result: rf.ProbeRun) -> Optional[dict]:
    """The layer at which the text's first token (distance n - 1) first changes the last
    position: `answer` counts layers (block index + 1), against the rule ceil(d / (w - 1))."""
    probe = _forced(result)
    if probe is None:
        return None
    distance = probe.n_tokens - 1
    if distance not in probe.distances:
        return None          # the probe did not measure token 0
    index = probe.distances.index(distance)
    measured, predicted = probe.measured[index], probe.predicted[index]
    if measured is None:
        return None          # token 0 never reached the last position: nothing to compare with
    step = result.window - 1
    return {"window": result.window, "step": step, "distance": distance, "n_tokens": probe.n_tokens,
            "answer": measured + 1, "block": measured,
            "rule_layers": math.ceil(distance / step), "quotient": distance / step,
            "short": (math.ceil(distance / step) - 1) * step,
            "verdict": mark(measured == predicted),
            "agree": sum(a == b for a, b in zip(probe.predicted, probe.measured)),
            "total": len(probe.distances)}


def read_local_global(result: costs.CostResult) -> Optional[dict]:
    """Local and global layers of a model with sliding windows, as the section counts them: the
    cache by the engine's formula with each layer's mask capacity, the score entries each
    layer's mask needs (the eager path computes all t x s and masks them). No forward runs, so
    no cache is read back and nothing here gets a mark: the local layer's tokens are its bytes
    over one token's bytes in one layer."""
    if not isinstance(result, costs.CostResult) or not result.n_local:
        return None
    last = result.rows[-1]
    per_token = result.rows[0].cache_global / result.rows[0].n     # one token, one layer
    full = last.cache_global * len(result.kinds)
    return {"title": result.title, "n_local": result.n_local, "n_global": result.n_global,
            "layers": len(result.kinds), "window": result.window, "n": last.n,
            "local_tokens": round(last.cache_local / per_token),
            "local_mib": last.cache_local / MIB, "global_mib": last.cache_global / MIB,
            "cache_mib": last.cache_all / MIB, "full_mib": full / MIB,
            "cache_share": 100 * last.cache_all / full,
            "scores_share": 100 * last.scores_all / last.scores_all_global}


LESSON = Lesson(
    key="windows-depth", title="lesson.win.title", summary="lesson.win.summary", order=30,
    steps=(
        Step(view="attention.rf", look="lesson.win.s1.look", said="lesson.win.s1.said",
             read=read_reach, model=SMOLLM2,
             settings={"mode": "forced", "window": SMALL_WINDOW, "tokens": SMALL_TOKENS, "seed": 0},
             fields={"window": SMALL_WINDOW}),
        Step(view="attention.rf", look="lesson.win.s2.look", said="lesson.win.s2.said",
             read=read_first_token, model=SMOLLM2,
             settings={"mode": "forced", "window": WINDOW, "tokens": TOKENS, "seed": 0},
             fields={"window": WINDOW, "tokens": TOKENS},
             predict=Predict(question="lesson.win.s2.ask", answer="answer", unit="L",
                             why="lesson.win.s2.why", low=1, high=1000)),
        Step(view="attention.lg", look="lesson.win.s3.look", said="lesson.win.s3.said",
             read=read_local_global, model=GEMMA),
    ),
)
