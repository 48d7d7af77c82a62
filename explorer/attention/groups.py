"""Grouped-query attention (claim C5): which query heads read which KV head, shown on the real q,
k, v tensors of layer 0, and the KV-cache bytes per token: read from the engine's cache tensors
after a forward, beside the formula (ModelConfig.kv_bytes_per_token) for the MHA, GQA and MQA
variants of the model's shape, at the element size of the model's own tensors.
`cache_follows_kv_heads` is the claim's criterion: the tab's sentence and the board read it."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import plotly.graph_objects as go
import torch

from explorer.attention import model_title
from explorer.locales import text
from explorer.plotting import OKABE_ITO, Fig
from models.forward import Recorder, RunOptions

PALETTE = tuple(OKABE_ITO.values())


def head_groups(config) -> list[list[int]]:
    """Query heads reading each KV head: the engine repeats KV head j for query heads
    j*n_rep ... j*n_rep + n_rep - 1 (models.attention._expand_kv)."""
    return [list(range(j * config.n_rep, (j + 1) * config.n_rep)) for j in range(config.n_kv_heads)]


@torch.inference_mode()
def record_heads(model, ids: Sequence[int] = (1, 2, 3)) -> tuple[dict[str, tuple], int, list[int]]:
    """One forward of `ids` through the engine's KV cache with q, k, v of layer 0 recorded:
    (shapes of q, k, v; bytes per element of the recorded k; the cache's used bytes per layer,
    read from its tensors)."""
    x = torch.tensor([list(ids)], dtype=torch.long, device=model.embed.weight.device)
    recorder = Recorder(["q", "k", "v"], layers=[0])
    cache = model.new_cache(len(ids))
    model(x, cache=cache, recorder=recorder, options=RunOptions(last_logits_only=True))
    shapes = {name: tuple(recorder.get(name, 0).shape) for name in ("q", "k", "v")}
    return shapes, recorder.get("k", 0).element_size(), list(cache.used_bytes())


LAYOUTS = ("mha", "gqa", "mqa")


def layout_kv_heads(layout: str, n_heads: int, n_kv_heads: int) -> int:
    """KV heads of the MHA / GQA (this model's) / MQA variant of a shape with n_heads query heads."""
    return {"mha": n_heads, "gqa": n_kv_heads, "mqa": 1}[layout]


@dataclass(frozen=True)
class GroupsResult:
    model: str
    title: str
    n_heads: int
    n_kv_heads: int
    n_layers: int
    head_dim: int
    groups: tuple[tuple[int, ...], ...]
    shapes: dict                     # "q" | "k" | "v" -> recorded (B, heads, T, head_dim)
    element_bytes: int               # bytes per element of the recorded k (the model's dtype)
    tokens: int                      # tokens of the recording forward
    cache_used: int                  # bytes the engine's KV cache holds after it, from its tensors
    variants: tuple                  # (layout, KV heads, bytes per token by the formula), MHA/GQA/MQA

    @property
    def n_rep(self) -> int:
        return self.n_heads // self.n_kv_heads

    @property
    def measured_per_token(self) -> float:
        return self.cache_used / self.tokens

    def variant_bytes(self, layout: str) -> int:
        return next(b for name, _, b in self.variants if name == layout)


def cache_follows_kv_heads(result: GroupsResult) -> bool:
    """Claim C5's criterion: the recorded k and v have n_kv_heads heads (q has n_heads); the
    cache the engine filled holds exactly 2 x L x n_kv x d_head x bytes per token (the formula
    with the KV heads, not the query heads, unless the two are equal); and the MHA / GQA / MQA
    variants' bytes are proportional to their KV heads."""
    return cache_holds_kv_heads(result) and variants_proportional(result)


def cache_holds_kv_heads(result: GroupsResult) -> bool:
    """The half that can fail on a run: the recorded heads, and the filled cache's bytes
    against the formula with the KV heads."""
    q_heads, k_heads, v_heads = result.shapes["q"][1], result.shapes["k"][1], result.shapes["v"][1]
    recorded = q_heads == result.n_heads and k_heads == v_heads == result.n_kv_heads
    return bool(recorded and result.measured_per_token == result.variant_bytes("gqa"))


def variants_proportional(result: GroupsResult) -> bool:
    """Consistency: the MHA / GQA / MQA bytes, all from one formula, are proportional to their
    KV heads (true by construction of the formula)."""
    return len({b / heads for _, heads, b in result.variants}) == 1


def run(loaded: Any) -> GroupsResult:
    config = loaded.config
    ids = (1, 2, 3)
    shapes, element_bytes, used = record_heads(loaded.model, ids)
    variants = tuple((layout, heads, config.kv_bytes_per_token(element_bytes, n_kv_heads=heads))
                     for layout in LAYOUTS
                     for heads in [layout_kv_heads(layout, config.n_heads, config.n_kv_heads)])
    return GroupsResult(
        model=loaded.name, title=model_title(loaded), n_heads=config.n_heads,
        n_kv_heads=config.n_kv_heads, n_layers=config.n_layers, head_dim=config.head_dim,
        groups=tuple(tuple(g) for g in head_groups(config)), shapes=shapes,
        element_bytes=element_bytes, tokens=len(ids), cache_used=sum(used), variants=variants)


def data(result: GroupsResult) -> dict:
    return {"model": result.model, "title": result.title, "n_heads": result.n_heads,
            "n_kv_heads": result.n_kv_heads, "n_rep": result.n_rep,
            "groups": [list(g) for g in result.groups],
            "shapes": {k: list(v) for k, v in result.shapes.items()},
            "layers": result.n_layers, "head_dim": result.head_dim,
            "element_bytes": result.element_bytes,
            "cache_bytes_per_token_measured": result.measured_per_token,
            "cache_bytes_per_token": {layout: b for layout, _, b in result.variants},
            "cache_follows_kv_heads": cache_follows_kv_heads(result)}


def figures(result: GroupsResult, lang: str = "en") -> tuple[go.Figure]:
    """Query heads (top) joined to the KV head they read (bottom)."""
    n_q, n_kv = result.n_heads, result.n_kv_heads
    fig = Fig()
    xq = np.linspace(0, 1, n_q) if n_q > 1 else np.array([0.5])
    xkv = np.array([np.mean([xq[h] for h in group]) for group in result.groups])
    for j, group in enumerate(result.groups):
        color = PALETTE[j % len(PALETTE)]
        for h in group:
            fig.add_scatter(x=[xq[h], xkv[j]], y=[1, 0], mode="lines",
                            line=dict(color=color, width=2), hoverinfo="skip", showlegend=False)
        fig.add_scatter(
            x=[xq[h] for h in group], y=[1] * len(group), mode="markers+text",
            marker=dict(size=26, color=color, symbol="circle"),
            text=[f"q{h}" for h in group], textposition="top center",
            name=text("attention.fig.kv_group", lang, j=j, first=group[0], last=group[-1]),
            hovertemplate=[text("attention.fig.reads", lang, h=h, j=j) + "<extra></extra>" for h in group])
        fig.add_scatter(x=[xkv[j]], y=[0], mode="markers+text",
                        marker=dict(size=34, color=color, symbol="square"),
                        text=[f"kv{j}"], textposition="bottom center", showlegend=False,
                        hovertemplate=text("attention.fig.shared", lang, j=j, n=len(group)) + "<extra></extra>")
    fig.update_xaxes(visible=False, range=[-0.08, 1.08])
    fig.update_yaxes(visible=False, range=[-0.45, 1.45])
    return (fig.finish(text("attention.fig.groups_title", lang, title=result.title + ":", n_q=n_q,
                            n_kv=n_kv).strip(), height=370, lang=lang),)


def summary(result: GroupsResult, lang: str = "en") -> str:
    s = result.shapes
    out = text("attention.gqa_summary", lang, title=result.title, n_heads=result.n_heads,
               n_kv=result.n_kv_heads, n_rep=result.n_rep, q_shape=tuple(s["q"]),
               k_shape=tuple(s["k"]), v_shape=tuple(s["v"]), layers=result.n_layers,
               head_dim=result.head_dim, elem=result.element_bytes,
               measured=result.measured_per_token, tokens=result.tokens,
               cache=result.variant_bytes("gqa"), mha=result.variant_bytes("mha"),
               mqa=result.variant_bytes("mqa"))
    key = "attention.gqa_kv_only" if cache_follows_kv_heads(result) else "attention.gqa_kv_not"
    return out + "  \n" + text(key, lang, n_kv=result.n_kv_heads, n_heads=result.n_heads,
                               k_heads=s["k"][1], measured=result.measured_per_token,
                               cache=result.variant_bytes("gqa"))
