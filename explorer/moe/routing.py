"""Routing on a text: which experts each token is sent to, with what weight, and how evenly the
load spreads, read through the engine's recording points (router_probs, expert_picks,
expert_weights of models/moe.py). Works on any model whose MoE layers are models.moe
MoEFeedForward modules: the project's own explorer-moe checkpoints and real MoE families alike.

    result = run_routing(model, ids, tokens)            # RoutingResult: every MoE layer
    view = routing_view(model, top_k=4, selection_bias=False)   # same weights, other routing
"""
from __future__ import annotations

import copy
import dataclasses
import math
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np
import plotly.graph_objects as go
import torch
import torch.nn as nn
import torch.nn.functional as F

from explorer.locales import text
from explorer.plotting import Fig
from models.forward import Recorder
from models.moe import MoEFeedForward


class NotMoEError(ValueError):
    """The model has no mixture-of-experts layer."""


def moe_layers(model: nn.Module) -> list[int]:
    """Indices of the blocks whose feed-forward is a MoEFeedForward."""
    return [i for i, block in enumerate(model.blocks)
            if any(isinstance(m, MoEFeedForward) for m in block.modules())]


def moe_modules(model: nn.Module) -> dict[int, MoEFeedForward]:
    out = {}
    for i, block in enumerate(model.blocks):
        for m in block.modules():
            if isinstance(m, MoEFeedForward):
                out[i] = m
                break
    return out


def moe_shape(model: nn.Module) -> tuple[int, int, bool]:
    """(n_experts, top_k, has a selection bias) of the model's MoE layers."""
    modules = moe_modules(model)
    if not modules:
        raise NotMoEError(f"{type(model).__name__} has no mixture-of-experts layer")
    cfg = next(iter(modules.values())).cfg
    return cfg.n_experts, cfg.top_k, cfg.selection_bias


def _shallow(module: nn.Module) -> nn.Module:
    """A copy of the module object whose submodule and parameter tables are its own, while the
    parameter tensors stay shared (no weight is copied)."""
    clone = copy.copy(module)
    clone._modules = dict(module._modules)
    clone._parameters = dict(module._parameters)
    return clone


def routing_view(model: nn.Module, top_k: Optional[int] = None,
                 selection_bias: bool = True) -> nn.Module:
    """The same model, routing each token to `top_k` experts (None: as trained) and, with
    selection_bias=False, choosing them without the selection bias (a DeepSeek-V3-style router
    then picks by its probabilities alone). The view shares every weight with `model`, which is
    left untouched (it is shared by every visitor)."""
    n_experts, trained_k, _ = moe_shape(model)
    if top_k is not None and not 1 <= top_k <= n_experts:
        raise ValueError(f"top_k must be between 1 and {n_experts}, got {top_k}")
    if top_k in (None, trained_k) and selection_bias:
        return model
    view = _shallow(model)
    view.blocks = _shallow(model.blocks)
    for i, ff in moe_modules(model).items():
        cfg = dataclasses.replace(ff.cfg, top_k=top_k or ff.cfg.top_k,
                                  selection_bias=ff.cfg.selection_bias and selection_bias)
        path, block = _path_to(model.blocks[i], ff), _shallow(model.blocks[i])
        parent = block
        for name in path[:-1]:  # copy every module on the way down to the MoE layer
            child = _shallow(parent._modules[name])
            parent._modules[name] = child
            parent = child
        new_ff = _shallow(ff)
        new_ff.cfg = cfg
        new_ff.router = _shallow(ff.router)
        new_ff.router.cfg = cfg
        if not cfg.selection_bias:
            new_ff.router._parameters["selection_bias"] = None
        new_ff.experts = _shallow(ff.experts)
        new_ff.experts.cfg = cfg
        parent._modules[path[-1]] = new_ff
        view.blocks._modules[str(i)] = block
    return view


def _path_to(root: nn.Module, target: nn.Module) -> list[str]:
    for name, module in root.named_modules():
        if module is target:
            return name.split(".")
    raise ValueError("module not found")


# ---------------------------------------------------------------------------------------------

def load_stats(counts) -> dict:
    """Load figures of one layer from its (E,) pick counts: max/mean share, coefficient of
    variation (std/mean), entropy of the share in nats (ln E when level), smallest share."""
    counts = torch.as_tensor(counts)
    share = counts.double() / counts.sum()
    mean = share.mean()
    nz = share[share > 0]
    return {"max_over_mean": float(share.max() / mean), "cv": float(share.std(unbiased=False) / mean),
            "entropy": float(-(nz * nz.log()).sum()), "min_share": float(share.min()),
            "share": [round(float(s), 6) for s in share]}


@dataclass(frozen=True)
class LayerLoad:
    layer: int
    counts: np.ndarray       # (E,) picks per expert
    max_over_mean: float
    cv: float
    entropy: float           # nats; ln E when level
    min_share: float


def layer_load(layer: int, counts) -> LayerLoad:
    s = load_stats(counts)
    return LayerLoad(layer, np.asarray(counts, dtype=np.int64), s["max_over_mean"], s["cv"],
                     s["entropy"], s["min_share"])


@dataclass(frozen=True)
class RoutingResult:
    tokens: tuple[str, ...]           # (T,) token texts (explorer.prompts.token_text)
    ids: np.ndarray                   # (T,)
    layers: tuple[int, ...]           # MoE layer indices
    probs: np.ndarray                 # (L, T, E) router probabilities (or sigmoid scores)
    picks: np.ndarray                 # (L, T, k) chosen experts, best first
    weights: np.ndarray               # (L, T, k) weights applied to those experts' outputs
    loads: tuple[LayerLoad, ...]      # per MoE layer, over this text
    token_loss: np.ndarray            # (T-1,) next-token loss (nats) at each position
    n_experts: int
    top_k: int
    selection_bias: bool              # the routing used a selection bias

    @property
    def loss(self) -> float:
        return float(self.token_loss.mean()) if self.token_loss.size else float("nan")

    def layer_index(self, layer: int) -> int:
        if layer not in self.layers:
            raise ValueError(f"layer {layer} is not an MoE layer; MoE layers: {list(self.layers)}")
        return self.layers.index(layer)


@torch.no_grad()
def run_routing(model: nn.Module, ids: Sequence[int], tokens: Sequence[str],
                top_k: Optional[int] = None, selection_bias: bool = True) -> RoutingResult:
    """One forward over `ids` recording every MoE layer's routing, optionally with another
    top_k or without the selection bias (routing_view)."""
    n_experts, trained_k, has_bias = moe_shape(model)
    view = routing_view(model, top_k, selection_bias)
    layers = moe_layers(model)
    rec = Recorder(["router_probs", "expert_picks", "expert_weights"], layers=layers)
    device = next(model.parameters()).device
    x = torch.as_tensor(list(ids), dtype=torch.long, device=device)[None]    # (1, T)
    logits = view(x, recorder=rec)                                          # (1, T, V)
    token_loss = F.cross_entropy(logits[0, :-1].float(), x[0, 1:], reduction="none")
    probs = np.stack([rec.get("router_probs", i)[0].float().numpy() for i in layers])
    picks = np.stack([rec.get("expert_picks", i)[0].numpy() for i in layers])
    weights = np.stack([rec.get("expert_weights", i)[0].float().numpy() for i in layers])
    loads = tuple(layer_load(i, np.bincount(picks[j].reshape(-1), minlength=n_experts))
                  for j, i in enumerate(layers))
    return RoutingResult(tuple(tokens), np.asarray(ids), tuple(layers), probs, picks, weights,
                         loads, token_loss.cpu().numpy(), n_experts, top_k or trained_k,
                         has_bias and selection_bias)


def level_entropy(n_experts: int) -> float:
    return math.log(n_experts)


def experts_per_token(result: RoutingResult) -> np.ndarray:
    """(L, T): the distinct experts each token was sent to in each MoE layer, counted from the
    recorded picks."""
    picks = np.sort(result.picks, axis=-1)                                   # (L, T, k')
    return 1 + (np.diff(picks, axis=-1) != 0).sum(axis=-1)


def routes_to_k(result: RoutingResult) -> bool:
    """C14's routing criterion: in every MoE layer every token went to exactly top_k distinct
    experts (the model's k, not the width of whatever the router returned)."""
    counts = experts_per_token(result)
    return bool(result.picks.shape[-1] == result.top_k and counts.size and np.all(counts == result.top_k))


# ---------------------------------------------------------------------------------------------
# figures and summary, in the visitor's language

MAX_LABELS = 96  # token labels on an axis; beyond that every n-th token is labelled


def token_label(token: str) -> str:
    """A token as an axis label: newlines and tabs visible, spaces as a middle dot."""
    return (token.replace("\n", "↵").replace("\t", "⇥").replace(" ", "·")) or "∅"


def _token_axis(fig: Fig, tokens: Sequence[str]) -> None:
    step = max(1, math.ceil(len(tokens) / MAX_LABELS))
    ticks = list(range(0, len(tokens), step))
    fig.update_xaxes(tickmode="array", tickvals=ticks, ticktext=[token_label(tokens[i]) for i in ticks],
                     tickangle=-60, tickfont=dict(size=10 if len(tokens) > 48 else 12))


def figures(result: RoutingResult, layer: int, lang: Optional[str]) -> go.Figure:
    """Token × expert router probabilities of one MoE layer; the k picks ringed, their
    applied weights in the hover and the ring size."""
    j = result.layer_index(layer)
    probs, picks, weights = result.probs[j], result.picks[j], result.weights[j]   # (T,E) (T,k) (T,k)
    t, e = probs.shape
    labels = [token_label(s) for s in result.tokens]
    fig = Fig()
    fig.add_heatmap(
        z=probs.T.tolist(), x=list(range(t)), y=list(range(e)), colorscale="Viridis", zmin=0,
        zmax=float(max(probs.max(), 1e-6)),
        customdata=[labels] * e,                                                   # (E, T)
        colorbar=dict(title=text("moe.fig.heat.prob", lang)),
        hovertemplate=text("moe.fig.heat.hover", lang) + "<extra></extra>")
    xs, ys, size, hover = [], [], [], []
    for i in range(t):
        for rank in range(picks.shape[1]):
            xs.append(i)
            ys.append(int(picks[i, rank]))
            size.append(6 + 14 * float(weights[i, rank]))
            hover.append([labels[i], rank + 1, float(weights[i, rank]), float(probs[i, picks[i, rank]])])
    fig.add_scatter(x=xs, y=ys, mode="markers", customdata=hover,
                    name=text("moe.fig.heat.picked", lang, k=result.top_k),
                    marker=dict(symbol="circle-open", size=size, color="#ff4b4b", line=dict(width=2)),
                    hovertemplate=text("moe.fig.heat.pick_hover", lang) + "<extra></extra>")
    _token_axis(fig, result.tokens)
    fig.update_xaxes(title_text=text("moe.fig.heat.x", lang))
    fig.update_yaxes(title_text=text("moe.fig.heat.y", lang), tickmode="array",
                     tickvals=list(range(e)), ticktext=[str(i) for i in range(e)], autorange="reversed")
    title = text("moe.fig.heat.title", lang, layer=layer, k=result.top_k, n=t)
    return fig.finish(title, height=max(320, 120 + 26 * e), lang=lang)


def summary(result: RoutingResult, layer: int, lang: Optional[str]) -> str:
    load = result.loads[result.layer_index(layer)]
    counts = experts_per_token(result)
    verdict = "moe.route.verdict.k" if routes_to_k(result) else "moe.route.verdict.not_k"
    return text("moe.route.summary", lang, n=len(result.tokens), loss=result.loss, layer=layer,
                max_mean=load.max_over_mean, cv=load.cv, entropy=load.entropy,
                level=level_entropy(result.n_experts), k=result.top_k) + " " + \
        text(verdict, lang, k=result.top_k, layers=len(result.layers), low=int(counts.min()), high=int(counts.max()))
