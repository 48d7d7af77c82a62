"""Compute follows k, parameters follow N (claim C14), measured on a loaded MoE model: the time
of one forward over the same tokens when every token is routed to k = 1, 2, 4, ... experts
(explorer.moe.routing.routing_view: the same weights, another k), beside the expert
multiply-adds per token that k implies and the parameter count, which k does not change."""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Optional, Sequence

import plotly.graph_objects as go
import torch

from explorer.locales import text
from explorer.plotting import Fig, colors
from explorer.moe.routing import moe_modules, moe_shape, routing_view


@dataclass(frozen=True)
class KTiming:
    k: int
    ms_per_token: float          # the fastest of `repeats` forwards (others' load only adds time)
    spread: tuple[float, float]  # min, max ms per token
    expert_macs_per_token: int   # multiply-adds of the experts one token runs through, all layers
    active_params: int           # parameters one token uses at this k
    total_params: int            # every parameter (does not depend on k)


@dataclass(frozen=True)
class CostResult:
    n_tokens: int
    trained_k: int
    n_experts: int
    rows: tuple[KTiming, ...]


def expert_params(model) -> tuple[int, int]:
    """(parameters of one routed expert, summed over MoE layers; all other parameters)."""
    modules = moe_modules(model)
    per_expert = sum(sum(p.numel() for p in ff.experts.parameters()) // ff.cfg.n_experts
                     for ff in modules.values())
    routed = sum(sum(p.numel() for p in ff.experts.parameters()) for ff in modules.values())
    return per_expert, sum(p.numel() for p in model.parameters()) - routed


MIN_TOKENS = 256  # a shorter text is repeated up to this many tokens: timings of a few dozen
                  # tokens are all per-op overhead, whatever k
# The settings the tab and the claims board time with: the k the figure shows, and the fastest
# of REPEATS forwards per k (another process's load only adds time)
KS = (1, 2, 4, 8)
REPEATS = 7


@torch.no_grad()
def run_cost(model, ids: Sequence[int], ks: Sequence[int] = KS, repeats: int = REPEATS) -> CostResult:
    n_experts, trained_k, _ = moe_shape(model)
    ks = [k for k in ks if 1 <= k <= n_experts]
    if not ks:
        raise ValueError(f"no k between 1 and {n_experts}")
    device = next(model.parameters()).device
    ids = list(ids)
    ids = (ids * -(-MIN_TOKENS // len(ids)))[:max(MIN_TOKENS, len(ids))]
    x = torch.as_tensor(ids, dtype=torch.long, device=device)[None]                  # (1, T)
    per_expert, others = expert_params(model)
    total = others + per_expert * n_experts
    views = {k: routing_view(model, top_k=k) for k in ks}
    times = {k: [] for k in ks}
    for view in views.values():  # warm-up: allocator and kernels settle before timing
        view(x)
    for _ in range(repeats):     # k interleaved, so a slow moment of the machine hits them all
        for k, view in views.items():
            if device.type == "cuda":
                torch.cuda.synchronize()
            start = time.perf_counter()
            view(x)
            if device.type == "cuda":
                torch.cuda.synchronize()
            times[k].append((time.perf_counter() - start) * 1e3 / x.shape[1])
    rows = []
    for k in ks:
        macs = k * per_expert  # a gated MLP's weights are each used once per token: MACs = params
        rows.append(KTiming(k, min(times[k]), (min(times[k]), max(times[k])), macs,
                            others + k * per_expert, total))
    return CostResult(x.shape[1], trained_k, n_experts, tuple(rows))


# C14's cost criterion: the fastest time per token at the largest k is at least this multiple of
# the time at the smallest k (the expert work grows k_max / k_min times; attention and embedding
# do not grow, so the time grows by less). Beside it, a consistency check: the parameter count is
# the same at every k (one model, k only changes how many experts a token uses), which no sound
# run can break.
TIME_GROWTH_MIN = 1.2


def time_ratio(result: CostResult) -> float:
    """ms per token at the largest k over the smallest k's."""
    return result.rows[-1].ms_per_token / result.rows[0].ms_per_token


def time_grows(result: CostResult, threshold: float = TIME_GROWTH_MIN) -> bool:
    """The measured half: time ratio >= threshold over at least two k."""
    return bool(len(result.rows) >= 2 and time_ratio(result) >= threshold)


def same_total(result: CostResult) -> bool:
    """Consistency: one parameter total at every k."""
    return len({r.total_params for r in result.rows}) == 1


def time_grows_with_k(result: CostResult, threshold: float = TIME_GROWTH_MIN) -> bool:
    """Compute follows k, parameters do not: time ratio >= threshold, one total at every k."""
    return time_grows(result, threshold) and same_total(result)


def figures(result: CostResult, lang: Optional[str]) -> tuple[go.Figure]:
    """Left: measured time per token against k. Right: total and active parameters against k."""
    ks = [r.k for r in result.rows]
    fig = Fig(panels=(text("moe.fig.cost.left", lang), text("moe.fig.cost.right", lang)))
    fig.add_scatter(x=ks, y=[r.ms_per_token for r in result.rows], mode="lines+markers",  # fastest, bar up to slowest
                    name=text("moe.fig.cost.time", lang),
                    error_y=dict(type="data", symmetric=False,
                                 array=[r.spread[1] - r.ms_per_token for r in result.rows],
                                 arrayminus=[r.ms_per_token - r.spread[0] for r in result.rows]),
                    hovertemplate=text("moe.fig.cost.time_hover", lang) + "<extra></extra>")
    c = colors(2)
    fig.add_scatter(x=ks, y=[r.total_params / 1e6 for r in result.rows], mode="lines+markers",
                    name=text("moe.fig.cost.total", lang), xaxis="x2", yaxis="y2", line=dict(color=c[1]),
                    hovertemplate=text("moe.fig.cost.params_hover", lang) + "<extra></extra>")
    fig.add_scatter(x=ks, y=[r.active_params / 1e6 for r in result.rows], mode="lines+markers",
                    name=text("moe.fig.cost.active", lang), xaxis="x2", yaxis="y2",
                    line=dict(color=c[0], dash="dash"),
                    hovertemplate=text("moe.fig.cost.params_hover", lang) + "<extra></extra>")
    for axis in (1, 2):
        fig.update_xaxes(axis, title_text=text("moe.fig.cost.x", lang), tickmode="array", tickvals=ks)
    fig.update_yaxes(1, title_text=text("moe.fig.cost.y", lang), rangemode="tozero")
    fig.update_yaxes(2, title_text=text("moe.fig.cost.y2", lang), rangemode="tozero")
    fig.update_layout(legend=dict(y=-0.22, yanchor="top"))  # under the plots: the panel titles sit on top
    return (fig.finish(text("moe.fig.cost.title", lang, n=result.n_tokens, e=result.n_experts), height=430,
                       lang=lang),)


def summary(result: CostResult, lang: Optional[str]) -> str:
    first, last = result.rows[0], result.rows[-1]
    return text("moe.cost.summary", lang, k0=first.k, k1=last.k, t0=first.ms_per_token,
                t1=last.ms_per_token, ratio=last.ms_per_token / first.ms_per_token,
                macs=last.expert_macs_per_token / first.expert_macs_per_token,
                total=first.total_params / 1e6) + " " + \
        text("moe.cost.verdict.grows" if time_grows_with_k(result) else "moe.cost.verdict.flat", lang,
             ratio=time_ratio(result), threshold=TIME_GROWTH_MIN, k0=first.k, k1=last.k)
