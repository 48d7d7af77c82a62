"""Grouped-query attention: which query heads read which KV head, shown on the real q, k, v
tensors of layer 0, with the KV-cache bytes per token this saves over multi-head attention
(ModelConfig.kv_bytes_per_token, the engine's formula)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import plotly.graph_objects as go
import torch

from explorer.attention import model_title
from explorer.locales import text
from explorer.plotting import Fig
from models.forward import Recorder, RunOptions

PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000"]


def head_groups(config) -> list[list[int]]:
    """Query heads reading each KV head: the engine repeats KV head j for query heads
    j*n_rep ... j*n_rep + n_rep - 1 (models.attention._expand_kv)."""
    return [list(range(j * config.n_rep, (j + 1) * config.n_rep)) for j in range(config.n_kv_heads)]


@torch.inference_mode()
def recorded_head_shapes(model, ids: Sequence[int] = (1, 2, 3)) -> dict[str, tuple]:
    """Shapes of the real q and k tensors of layer 0 for a tiny input: the KV side has
    n_kv_heads heads, the query side n_heads."""
    x = torch.tensor([list(ids)], dtype=torch.long, device=model.embed.weight.device)
    recorder = Recorder(["q", "k", "v"], layers=[0])
    model(x, recorder=recorder, options=RunOptions(last_logits_only=True))
    return {name: tuple(recorder.get(name, 0).shape) for name in ("q", "k", "v")}


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
    cache_bytes_fp32: int            # KV cache per token, this model, fp32
    mha_bytes_fp32: int              # the same with one KV head per query head

    @property
    def n_rep(self) -> int:
        return self.n_heads // self.n_kv_heads


def run(loaded: Any) -> GroupsResult:
    config = loaded.config
    return GroupsResult(
        model=loaded.name, title=model_title(loaded), n_heads=config.n_heads,
        n_kv_heads=config.n_kv_heads, n_layers=config.n_layers, head_dim=config.head_dim,
        groups=tuple(tuple(g) for g in head_groups(config)),
        shapes=recorded_head_shapes(loaded.model),
        cache_bytes_fp32=config.kv_bytes_per_token(4),
        mha_bytes_fp32=config.kv_bytes_per_token(4, n_kv_heads=config.n_heads))


def data(result: GroupsResult) -> dict:
    return {"model": result.model, "title": result.title, "n_heads": result.n_heads,
            "n_kv_heads": result.n_kv_heads, "n_rep": result.n_rep,
            "groups": [list(g) for g in result.groups],
            "shapes": {k: list(v) for k, v in result.shapes.items()},
            "layers": result.n_layers, "head_dim": result.head_dim,
            "cache_bytes_per_token_fp32": result.cache_bytes_fp32,
            "mha_bytes_per_token_fp32": result.mha_bytes_fp32}


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
                            n_kv=n_kv, plural="s" if n_kv > 1 else "").strip(), height=370),)


def summary(result: GroupsResult, lang: str = "en") -> str:
    s = result.shapes
    return text("attention.gqa_summary", lang, title=result.title, n_heads=result.n_heads,
                n_kv=result.n_kv_heads, n_rep=result.n_rep, q_shape=tuple(s["q"]),
                k_shape=tuple(s["k"]), v_shape=tuple(s["v"]), layers=result.n_layers,
                head_dim=result.head_dim, cache=result.cache_bytes_fp32, mha=result.mha_bytes_fp32)
