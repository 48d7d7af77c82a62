"""What-if routing: the same text and weights, routed with another k or, on a model with a
selection bias, choosing experts without it; the loss and the load beside the routing the
model was trained with."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import plotly.graph_objects as go

from explorer.locales import text
from explorer.moe.balance import load_figure
from explorer.moe.routing import RoutingResult, run_routing


@dataclass(frozen=True)
class WhatIfResult:
    base: RoutingResult      # as trained
    alt: RoutingResult       # with top_k / without the selection bias


def run(model, ids: Sequence[int], tokens: Sequence[str], top_k: int, selection_bias: bool) -> WhatIfResult:
    return WhatIfResult(run_routing(model, ids, tokens),
                        run_routing(model, ids, tokens, top_k=top_k, selection_bias=selection_bias))


def _bias(result: RoutingResult, lang: Optional[str]) -> str:
    return text("moe.whatif.bias_on" if result.selection_bias else "moe.whatif.bias_off", lang)


def figures(result: WhatIfResult, lang: Optional[str]) -> tuple[go.Figure]:
    """max/mean load per layer, as trained and with the routing changed."""
    base, alt = result.base, result.alt
    return (load_figure([(text("moe.whatif.as_trained", lang, k=base.top_k), base.loads),
                         (text("moe.whatif.changed", lang, k=alt.top_k, bias=_bias(alt, lang)), alt.loads)],
                        lang, title_key="moe.fig.whatif.title"),)


def summary(result: WhatIfResult, lang: Optional[str]) -> str:
    base, alt = result.base, result.alt
    return text("moe.whatif.summary", lang, k0=base.top_k, k1=alt.top_k, loss0=base.loss,
                loss1=alt.loss, delta=alt.loss - base.loss,
                imb0=max(l.max_over_mean for l in base.loads),
                imb1=max(l.max_over_mean for l in alt.loads), bias=_bias(alt, lang))
