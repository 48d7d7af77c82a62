"""Lesson: the KV cache (the notes' first section; claims C1, C3, C9).

Every number the steps quote is read from the visitor's own Generate run (a Session) through
the criteria the claims board uses: session.c3_verdict (measured bytes == formula at every
step and layer) and session.c9_verdict (windowed layers hold their window and no more)."""
from __future__ import annotations

from typing import Optional

from explorer.generate.session import Session, c3_verdict, c9_verdict
from explorer.lessons import Lesson, Predict, Step

PREDICT_TOKENS = 200      # "how many KiB after 200 tokens": the run generates past it
KIB = 1024


def _per_token(session: Session) -> float:
    """Measured bytes per token: the last step's cache bytes over the tokens it holds (every
    layer holds every token without a window; C3 checks the bytes equal the formula)."""
    last = session.records[-1]
    return sum(last.cache_bytes) / last.context


def read_growth(session: Session) -> Optional[dict]:
    if not isinstance(session, Session) or not session.records:
        return None
    last = session.records[-1]
    config = session.config
    verdict = c3_verdict(session)
    return {"tokens": last.context, "kib": sum(last.cache_bytes) / KIB,
            "per_token": round(_per_token(session)), "layers": config.n_layers,
            # one layer's share of a token: K and V of every KV head (the formula's factors)
            "per_layer": 2 * config.n_kv_heads * config.head_dim * session.element_bytes,
            "kv_heads": config.n_kv_heads, "head_dim": config.head_dim,
            "bytes": session.element_bytes, "steps": verdict.steps,
            "formula": "✓" if verdict.used_equal else "✗"}


def read_at_200(session: Session) -> Optional[dict]:
    """The cache at t = 200 tokens: read at the step that held exactly 200 when the run passed
    it (measured); otherwise (the run ended earlier, or its prompt was longer) the measured
    bytes per token times 200 (computed: the step's texts say so), a product C3's check shows
    exact at every step the run did hold."""
    fields = read_growth(session)
    if fields is None:
        return None
    at = next((r for r in session.records if r.context == PREDICT_TOKENS), None)
    value = sum(at.cache_bytes) / KIB if at is not None else _per_token(session) * PREDICT_TOKENS / KIB
    return {**fields, "answer": value, "computed": at is None, "t": PREDICT_TOKENS}


def read_window(session: Session) -> Optional[dict]:
    fields = read_growth(session)
    if fields is None:
        return None
    verdict = c9_verdict(session)
    if verdict.cap is None:
        return None          # a run without a window: not this step's run
    full = session.config.kv_bytes_per_token(session.element_bytes) * verdict.tokens / KIB
    return {**fields, "cap": verdict.cap, "held": verdict.capped_held, "t_run": verdict.tokens,
            "full_kib": full, "saved": 100 * (1 - fields["kib"] / full) if full else 0.0,
            "verdict": "✓" if verdict.passed else "✗"}


LESSON = Lesson(
    key="kv-cache", title="lesson.kv.title", summary="lesson.kv.summary", order=10,
    steps=(
        Step(view="generate.run", look="lesson.kv.s1.look", said="lesson.kv.s1.said",
             # the C1 replay (compare) is another lesson's point: left out, the step stays short
             read=read_growth, settings={"max_new": 32, "policy": "full", "temperature": 0,
                                         "compare": False, "check": True}),
        Step(view="generate.run", look="lesson.kv.s2.look", said="lesson.kv.s2.said",
             said_computed="lesson.kv.s2.said_computed", read=read_at_200,
             settings={"max_new": PREDICT_TOKENS, "policy": "full", "temperature": 0,
                       "compare": False, "check": False,
                       "prompt": "Write a long, detailed story about a lighthouse keeper and a storm."},
             fields={"t": PREDICT_TOKENS},
             predict=Predict(question="lesson.kv.s2.ask", answer="answer", unit="KiB",
                             why="lesson.kv.s2.why", low=0, high=1e7)),
        Step(view="generate.run", look="lesson.kv.s3.look", said="lesson.kv.s3.said",
             read=read_window,
             # the check reads the engine's cache back: C9's slots come from that reading
             settings={"max_new": 48, "policy": "window", "window": 32, "temperature": 0,
                       "compare": False, "check": True}),
    ),
)
