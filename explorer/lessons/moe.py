"""Lesson: mixture of experts (the notes' section on MoE; claims C14, C15).

The steps run the MoE tab's sections on the three routers the project trained (no balancing,
an auxiliary loss, a selection bias: explorer/checkpoints/shipped.py), on the visitor's text. Every
number is read from the visitor's own run through the criteria the claims board uses
(explorer/moe/evidence.py): routing.routes_to_k (C14's bookkeeping), balance.imbalances,
balancing_margin and balancing_helps (C15). The predict step asks for the busiest expert's share
of the picks under the router trained without balancing."""
from __future__ import annotations

from typing import Optional

import numpy as np

from explorer.lessons import Lesson, Predict, Step
from explorer.checkpoints import shipped
from explorer.moe import balance, routing, whatif

MARK = {True: "✓", False: "✗"}
LAYER = 3            # the shipped models' last MoE layer (they have 4): the tab's default
WHATIF_K = 1         # routed with one expert where the model was trained with two


def _share(load: routing.LayerLoad) -> float:
    """The busiest expert's share of one layer's picks, in %."""
    return 100.0 * float(load.counts.max()) / float(load.counts.sum())


def read_route(state: dict) -> Optional[dict]:
    """The route section keeps {"result": RoutingResult, "layer": int}."""
    if not isinstance(state, dict) or not isinstance(state.get("result"), routing.RoutingResult):
        return None
    result, layer = state["result"], state["layer"]
    load = result.loads[result.layer_index(layer)]
    per_token = routing.experts_per_token(result)
    return {"tokens": len(result.tokens), "experts": result.n_experts, "k": result.top_k,
            "layers": len(result.layers), "layer": layer, "busiest": int(np.argmax(load.counts)),
            "share": _share(load), "even": 100.0 / result.n_experts, "max_mean": load.max_over_mean,
            "low": int(per_token.min()), "high": int(per_token.max()),
            "verdict": MARK[routing.routes_to_k(result)]}


def read_load(result: balance.BalanceResult) -> Optional[dict]:
    """The busiest expert's share at the drawn layer for each router, and C15's verdict over
    every MoE layer. None unless the three shipped routers are in the run."""
    if not isinstance(result, balance.BalanceResult):
        return None
    by_variant = {r.variant: r for r in result.routers if r.variant}
    if not all(v in by_variant for v in shipped.VARIANTS):
        return None
    at = {v: next(l for l in by_variant[v].text if l.layer == result.layer) for v in shipped.VARIANTS}
    none = at["none"]
    found = balance.imbalances(result)
    experts = len(none.counts)
    return {"layer": result.layer, "layers": len(by_variant["none"].text), "experts": experts,
            "picks": int(none.counts.sum()), "busiest": int(none.counts.max()),
            "answer": _share(none), "even": 100.0 / experts, "times": none.max_over_mean,
            "aux_share": _share(at["aux"]), "bias_share": _share(at["bias"]),
            "none": found["none"], "aux": found["aux"], "bias": found["bias"],
            "margin": balance.balancing_margin(result), "need": balance.IMBALANCE_MARGIN,
            "verdict": MARK[balance.balancing_helps(result)]}


def read_whatif(result: whatif.WhatIfResult) -> Optional[dict]:
    if not isinstance(result, whatif.WhatIfResult):
        return None
    base, alt = result.base, result.alt
    return {"k0": base.top_k, "k1": alt.top_k, "loss0": base.loss, "loss1": alt.loss,
            "delta": alt.loss - base.loss, "imb0": max(l.max_over_mean for l in base.loads),
            "imb1": max(l.max_over_mean for l in alt.loads), "layers": len(alt.layers),
            "verdict": MARK[routing.routes_to_k(alt)]}


LESSON = Lesson(
    key="moe", title="lesson.moe.title", summary="lesson.moe.summary", order=60,
    steps=(
        Step(view="moe.route", look="lesson.moe.s1.look", said="lesson.moe.s1.said", read=read_route,
             settings={"moe_model": shipped.NAMES["bias"], "layer": LAYER}),
        Step(view="moe.load", look="lesson.moe.s2.look", said="lesson.moe.s2.said", read=read_load,
             settings={"layer": LAYER}, fields={"layer": LAYER},
             predict=Predict(question="lesson.moe.s2.ask", answer="answer", unit="%",
                             why="lesson.moe.s2.why", low=0, high=100)),
        Step(view="moe.whatif", look="lesson.moe.s3.look", said="lesson.moe.s3.said", read=read_whatif,
             settings={"moe_model": shipped.NAMES["none"], "k": WHATIF_K, "bias": True},
             fields={"k": WHATIF_K}),
    ),
)
