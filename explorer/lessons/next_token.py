"""Lesson: what the model says next (the Next token tab; claims C21, C22).

Every number a step quotes is read from the visitor's own run of the tab's sections: the
distribution's top token, its probability and the entropies (explorer/nexttoken/runs.py
Distribution), what a temperature does to them (the sampler's renormalised distribution, the
Generate tab's sampling_probs), and the logit lens's lead layer of the final token, its ranks
through depth, the last-layer check (runs.last_layer_exact, C21) and the agreement by depth
(runs.thirds, C22's measure). The predict step asks for the lead layer before the lens runs."""
from __future__ import annotations

from typing import Optional

from explorer.lessons import Lesson, Predict, Step
from explorer.locales import Term
from explorer.nexttoken import runs

MARK = {True: "✓", False: "✗"}
PROMPT = "The capital of France is"
LENS_PROMPT = "The opposite of hot is"
COLD = 0.5        # the temperature step's T


def _pct(p: float) -> float:
    return round(100 * p, 2)


def _code(token: str) -> str:
    """A token inside the texts' code span (`...`: its leading space kept)."""
    return token.replace("`", "'")


def read_distribution(result: runs.Distribution) -> Optional[dict]:
    if not isinstance(result, runs.Distribution):
        return None
    top = result.rows[0]
    return {"model": result.title, "token": _code(result.labels[0]), "p": _pct(top.model_p),
            "second": _code(result.labels[1]), "p2": _pct(result.rows[1].model_p),
            "bits": result.model_entropy, "vocab": result.prediction.logits.numel(),
            "rest": _pct(result.rest_model), "rows": len(result.rows)}


def read_temperature(result: runs.Distribution) -> Optional[dict]:
    fields = read_distribution(result)
    params = result.kept.params if fields is not None else None
    if params is None or params.greedy or params.temperature == 1.0:
        return None          # a run at T = 1 (or greedy) is not this step's
    return {**fields, "t": params.temperature, "kept_p": _pct(result.rows[0].kept_p),
            "kept_p2": _pct(result.rows[1].kept_p), "kept_bits": result.kept.entropy_bits,
            "n_kept": result.kept.n_kept}


def read_lens(result: runs.Lens) -> Optional[dict]:
    if not isinstance(result, runs.Lens) or result.lead is None:
        return None
    i = result.chosen
    split = runs.thirds(result.agreement)
    return {"model": result.title, "token": _code(result.choices[i]), "answer": result.lead,
            "layers": result.n_layers, "rank0": int(result.ranks.rank[0, i]) + 1,
            "rank_mid": int(result.ranks.rank[result.n_layers // 2, i]) + 1, "mid": result.n_layers // 2,
            "p": _pct(float(result.ranks.prob[-1, i])), "diff": f"{result.max_difference:g}",
            "exact": MARK[runs.last_layer_exact(result)], "third": split.third,
            "first": round(100 * split.first), "last": round(100 * split.last)}


LESSON = Lesson(
    key="next-token", title="lesson.next.title", summary="lesson.next.summary", order=5,
    steps=(
        Step(view="next.dist", look="lesson.next.s1.look", said="lesson.next.s1.said", read=read_distribution,
             settings={"prompt": PROMPT, "temperature": 1.0, "top_k": 0, "top_p": 1.0}),
        Step(view="next.dist", look="lesson.next.s2.look", said="lesson.next.s2.said", read=read_temperature,
             settings={"prompt": PROMPT, "temperature": COLD, "top_k": 0, "top_p": 1.0}, fields={"t": COLD}),
        Step(view="next.lens", look="lesson.next.s3.look", said="lesson.next.s3.said", read=read_lens,
             settings={"prompt": LENS_PROMPT}, fields={"prompt": LENS_PROMPT},
             predict=Predict(question="lesson.next.s3.ask", answer="answer", unit=Term("lesson.next.unit"),
                             why="lesson.next.s3.why", low=0, high=100)),
    ),
)

# What a teacher's question may ask of these views (explorer/lessons/quantities.py): fields of
# the readers above, so a question quotes the same numbers as this lesson's steps.
from explorer.lessons.quantities import Quantity  # noqa: E402  (the registry collects this module)

BLOCKS = "lesson.next.unit"
QUANTITIES = (
    Quantity("next.dist/top_p", "lesson.qty.next_dist.top_p", "%", 0, 100, read_distribution, "p"),
    Quantity("next.dist/bits", "lesson.qty.next_dist.bits", "bit", 0, 64, read_distribution, "bits"),
    Quantity("next.dist/kept_p", "lesson.qty.next_dist.kept_p", "%", 0, 100, read_temperature, "kept_p"),
    Quantity("next.dist/n_kept", "lesson.qty.next_dist.n_kept", "lesson.qty.unit.tokens", 0, 1e7,
             read_temperature, "n_kept"),
    Quantity("next.lens/lead", "lesson.qty.next_lens.lead", BLOCKS, 0, 1000, read_lens, "answer"),
    Quantity("next.lens/last_third", "lesson.qty.next_lens.last_third", "%", 0, 100, read_lens, "last"),
)
