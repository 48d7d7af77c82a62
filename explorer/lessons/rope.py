"""Lesson: RoPE (the notes' section on rotary positions; claims C11, C12, C13).

Every number a step quotes is read from the visitor's own run of a RoPE section through the
criteria the claims board uses (explorer/rope/evidence.py): frequencies.larger_base_slows and
slowing (C13, first half), toeplitz.toeplitz_holds, identity_holds, reproduces (C11) and
absolute_position_remains (C12), sweep.perplexity_ratios, far_ratios and perplexity_rises (C13,
second half). The predict step asks for the slowest pair's wavelength at the model's own base:
2π / θ of the last pair, computed from the run's θ table (a formula: the texts call it computed,
not measured). The sweep reads a text inside the model's context, so its step says what that
shows (another base in a trained model) and no more."""
from __future__ import annotations

from typing import Optional

from explorer.lessons import Lesson, Predict, Step
from explorer.locales import Term
from explorer.rope import frequencies, sweep, toeplitz
from explorer.rope.capture import default_text

MARK = {True: "✓", False: "✗"}
# the frequencies section's bases: SmolLM2's 100k and both of Gemma 3's (10k, 1M) are among them
FREQ_BASES = "10000, 100000, 500000, 1000000"
FREQ_CONTEXT = 8192
# the Toeplitz test as the board runs it (evidence.py): layer 3, token 60's q, token 20's k
QK = {"layer": 3, "head": 0, "tokens": 64, "q": 60, "k": 20, "positions": 64}
# the base sweep, short: 512 tokens, three forwards (a few seconds on SmolLM2)
SWEEP_BASES = "1000000, 10000000"
SWEEP_TOKENS = 512


def read_frequencies(result: frequencies.Frequencies) -> Optional[dict]:
    """The model's own base (its largest: Gemma's global layers) among the run's bases: its
    slowest pair's wavelength, the pairs that turn within the context, and C13's comparison of
    the smallest and largest base. None when the run lacks the model's base."""
    if not isinstance(result, frequencies.Frequencies) or result.model is None:
        return None
    base = max(result.model.bases)
    if base not in result.bases or result.pairs < 2:
        return None
    i = result.bases.index(base)
    compared = frequencies.slowing(result)
    last = result.pairs - 1
    answer = float(result.wavelength[i, last])
    return {"title": result.model.title, "base": frequencies.base_label(base),
            "head_dim": result.head_dim, "pairs": result.pairs, "last": last,
            "context": result.context, "full": int(result.full_turn_counts[i]),
            "never": int(result.never_counts[i]), "answer": answer,
            "exponent": 2 * last / result.head_dim, "theta": float(result.theta[i, last]),
            "times": answer / result.context,
            "low": frequencies.base_label(compared.low), "high": frequencies.base_label(compared.high),
            "theta0": compared.theta0_ratio, "slowed": compared.slowed, "n": len(compared.ratios),
            "verdict": MARK[frequencies.larger_base_slows(result)]}


def read_toeplitz(result: toeplitz.ToeplitzResult) -> Optional[dict]:
    if not isinstance(result, toeplitz.ToeplitzResult):
        return None
    return {"layer": result.capture.layer, "head": result.head, "q_token": result.q_token,
            "k_token": result.k_token, "n": result.n_positions,
            "both": result.spread_both.relative, "tol": toeplitz.TOEPLITZ_TOL,
            "toeplitz": MARK[toeplitz.toeplitz_holds(result)],
            "identity": result.identity_error, "identity_ok": MARK[toeplitz.identity_holds(result)],
            "reproduces": MARK[toeplitz.reproduces(result)],
            "one": result.spread_query.relative, "ratio": result.one_side_ratio,
            "absolute": MARK[toeplitz.absolute_position_remains(result)]}


def read_sweep(result: sweep.Sweep) -> Optional[dict]:
    """The model as trained against every changed base: perplexity over the whole text and the
    ratio over its last quarter (C13's second half), and the model's context the text sits in."""
    if not isinstance(result, sweep.Sweep) or result.context is None:
        return None
    ratios, far = sweep.perplexity_ratios(result), sweep.far_ratios(result)
    if not ratios:
        return None
    changed = "; ".join(f"{frequencies.base_label(key)} → {result.perplexity(key):.2f} "
                        f"({ratios[key]:.2f}×, {far[key]:.2f}×)" for key in ratios)
    return {"tokens": result.n_tokens, "ppl0": result.perplexity(result.reference),
            "changed": changed, "rise": 100 * sweep.PPL_RISE_MIN, "context": result.context,
            "lowest": min(ratios.values()), "verdict": MARK[sweep.perplexity_rises(result)]}


LESSON = Lesson(
    key="rope", title="lesson.rope.title", summary="lesson.rope.summary", order=50,
    steps=(
        Step(view="rope.freq", look="lesson.rope.s1.look", said="lesson.rope.s1.said",
             read=read_frequencies, settings={"bases": FREQ_BASES, "context": FREQ_CONTEXT},
             predict=Predict(question="lesson.rope.s1.ask", answer="answer", unit=Term("lesson.rope.unit"),
                             why="lesson.rope.s1.why", low=1, high=1e12, computed=True)),
        Step(view="rope.qk", look="lesson.rope.s2.look", said="lesson.rope.s2.said",
             read=read_toeplitz, settings={"text": default_text(), **QK}),
        Step(view="rope.base", look="lesson.rope.s3.look", said="lesson.rope.s3.said",
             read=read_sweep, settings={"bases": SWEEP_BASES, "tokens": SWEEP_TOKENS, "apply": "all"}),
    ),
)
