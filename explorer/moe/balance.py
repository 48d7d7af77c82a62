"""Load balance of the three routers the project trained (claim C15): the visitor's text through
each, beside each model's load over the held-out files from its model card (measured on the
stored weights by explorer/moe/train.py, re-checked by tests/unit/test_moe_train.py)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import plotly.graph_objects as go

from explorer.locales import text
from explorer.moe.routing import LayerLoad, layer_load, run_routing
from explorer.plotting import Fig, colors


@dataclass(frozen=True)
class RouterLoads:
    name: str                          # registry name
    variant: Optional[str]             # "none" | "aux" | "bias" for a shipped model, else None
    text: tuple[LayerLoad, ...]        # over the visitor's text, per MoE layer
    held_out: tuple[LayerLoad, ...]    # over the held-out files (model card); () without one
    text_loss: float                   # nats/token on the visitor's text
    held_out_loss: Optional[float]


@dataclass(frozen=True)
class BalanceResult:
    layer: int                         # the layer whose expert shares are drawn
    routers: tuple[RouterLoads, ...]


def run(models: Sequence[tuple[str, Optional[str], object, Sequence[int], Sequence[str], Optional[dict]]],
        layer: int) -> BalanceResult:
    """models: (name, variant, model, ids, token texts, card or None) per router."""
    routers = []
    for name, variant, model, ids, tokens, card in models:
        result = run_routing(model, ids, tokens)
        held = tuple(layer_load(l["layer"], l["counts"]) for l in card["held_out"]["layers"]) if card else ()
        routers.append(RouterLoads(name, variant, result.loads, held, result.loss,
                                   card["held_out"]["loss"] if card else None))
    return BalanceResult(layer, tuple(routers))


# C15's criterion: the imbalance of a router is the coefficient of variation (std / mean) of its
# expert load, averaged over the MoE layers; the router trained without balancing must be at least
# IMBALANCE_MARGIN times as imbalanced as each balanced one (auxiliary loss, selection bias).
IMBALANCE_MARGIN = 1.5
BALANCED = ("aux", "bias")


def imbalance(loads: Sequence[LayerLoad]) -> float:
    """Mean over the layers of the load's coefficient of variation (0: every expert equal)."""
    return sum(l.cv for l in loads) / len(loads)


def imbalances(result: BalanceResult, where: str = "text") -> dict[str, float]:
    """{variant: imbalance} of the shipped routers, over the text ("text") or the held-out files
    of their model cards ("held")."""
    out = {}
    for r in result.routers:
        loads = r.text if where == "text" else r.held_out
        if r.variant and loads:
            out[r.variant] = imbalance(loads)
    return out


def balancing_margin(result: BalanceResult, where: str = "text") -> Optional[float]:
    """The no-balancing router's imbalance over the larger of the balanced ones'; None unless
    all three routers are present."""
    found = imbalances(result, where)
    if "none" not in found or not all(v in found for v in BALANCED):
        return None
    worst_balanced = max(found[v] for v in BALANCED)
    return found["none"] / worst_balanced if worst_balanced > 0 else float("inf")


def balancing_helps(result: BalanceResult, where: str = "text", margin: float = IMBALANCE_MARGIN) -> bool:
    """C15: without balancing the load is at least `margin` times as uneven as with either fix."""
    ratio = balancing_margin(result, where)
    return bool(ratio is not None and ratio >= margin)


def verdict(result: BalanceResult, lang: Optional[str], where: str = "text") -> str:
    """The criterion's verdict in words, with the three imbalances it was read from."""
    found, ratio = imbalances(result, where), balancing_margin(result, where)
    if ratio is None:
        return text("moe.load.verdict.missing", lang)
    key = "moe.load.verdict.helps" if balancing_helps(result, where) else "moe.load.verdict.close"
    return text(key, lang, none=found["none"], aux=found["aux"], bias=found["bias"], ratio=ratio,
                margin=IMBALANCE_MARGIN)


def label(router: RouterLoads, lang: Optional[str]) -> str:
    return text(f"moe.variant.{router.variant}", lang) if router.variant else router.name


def series(result: BalanceResult, lang: Optional[str]) -> list[tuple[str, tuple[LayerLoad, ...]]]:
    out = [(text("moe.load.held", lang, name=label(r, lang)), r.held_out) for r in result.routers if r.held_out]
    return out + [(text("moe.load.text", lang, name=label(r, lang)), r.text) for r in result.routers]


def figures(result: BalanceResult, lang: Optional[str]) -> tuple[go.Figure, go.Figure]:
    """(max/mean load per layer, each expert's share in the chosen layer), every router."""
    both = series(result, lang)
    shares = [(name, next(l for l in loads if l.layer == result.layer)) for name, loads in both]
    return load_figure(both, lang, subtitle=verdict(result, lang)), share_figure(shares, lang)


def table(result: BalanceResult, lang: Optional[str]) -> tuple[list[list], list[str]]:
    rows = []
    for r in result.routers:
        for where, loads in (("held", r.held_out), ("text", r.text)):
            for l in loads:
                rows.append([label(r, lang), text(f"moe.load.where.{where}", lang), l.layer,
                             round(l.max_over_mean, 2), round(l.cv, 2), round(l.entropy, 3),
                             round(100 * l.min_share, 2)])
    headers = [text(f"moe.load.col.{c}", lang) for c in ("model", "where", "layer", "max_mean", "cv", "entropy", "min")]
    return rows, headers


def load_figure(series: Sequence[tuple[str, Sequence[LayerLoad]]], lang: Optional[str],
                title_key: str = "moe.fig.load.title", subtitle: str = "") -> go.Figure:
    """max/mean load per layer, one bar group per (label, loads) series: the collapse of the
    unbalanced router stands out as tall bars. `subtitle`: a line under the title."""
    fig = Fig()
    palette = colors(len(series))
    for (label, loads), colour in zip(series, palette):
        fig.add_bar(x=[f"{text('moe.fig.load.layer', lang)} {l.layer}" for l in loads],
                    y=[l.max_over_mean for l in loads], name=label, marker=dict(color=colour),
                    customdata=[[l.cv, l.entropy, 100 * l.min_share] for l in loads],
                    hovertemplate=text("moe.fig.load.hover", lang, label=label) + "<extra></extra>")
    fig.add_shape(type="line", xref="paper", x0=0, x1=1, y0=1, y1=1, line=dict(dash="dot", color="#666"))
    fig.update_layout(barmode="group")
    fig.update_yaxes(title_text=text("moe.fig.load.y", lang), rangemode="tozero")
    title = text(title_key, lang)
    if not subtitle:
        return fig.finish(title, height=380, lang=lang)
    out = fig.finish(f"{title}<br><sub>{subtitle}</sub>", height=410, lang=lang)
    # a two-line title rises above its anchor: lower it, and leave room above the legend
    out.update_layout(title_y=0.93, margin=dict(t=122))
    return out


def share_figure(series: Sequence[tuple[str, LayerLoad]], lang: Optional[str]) -> go.Figure:
    """Each expert's share of the picks in one layer, one bar group per series."""
    fig = Fig()
    for (label, load), colour in zip(series, colors(len(series))):
        share = load.counts / max(1, load.counts.sum())
        fig.add_bar(x=list(range(len(share))), y=(100 * share).tolist(), name=label,
                    marker=dict(color=colour),
                    hovertemplate=text("moe.fig.share.hover", lang, label=label) + "<extra></extra>")
    if series:
        level = 100 / len(series[0][1].counts)
        fig.add_shape(type="line", xref="paper", x0=0, x1=1, y0=level, y1=level,
                      line=dict(dash="dot", color="#666"))
        layer = series[0][1].layer
    else:
        layer = 0
    fig.update_layout(barmode="group")
    fig.update_xaxes(title_text=text("moe.fig.share.x", lang), dtick=1)
    fig.update_yaxes(title_text=text("moe.fig.share.y", lang), rangemode="tozero")
    return fig.finish(text("moe.fig.share.title", lang, layer=layer), height=360, lang=lang)
