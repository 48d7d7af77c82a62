"""Attention against distance on the real model: per layer, the mean attention weight a query
gives the key m − n tokens back (averaged over heads and over the queries that reach that far).
Each layer's (H, T, T) probabilities are reduced to (T,) as they are recorded (a Recorder hook),
and the forward stops before the LM head."""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go
import torch

from explorer.inputs import whole_number
from explorer.locales import Term, template, text
from explorer.plotting import Fig
from explorer.rope.capture import MAX_CAPTURE_TOKENS, MIN_CAPTURE_TOKENS, token_ids
from models.config import SLIDING
from models.forward import Recorder, RunOptions

FAR = 64   # "beyond 64 tokens" in the summary


def mean_weight_by_distance(probs: torch.Tensor) -> torch.Tensor:
    """(B, H, T, T) attention probabilities -> (T,) float64: entry d is the mean over heads and
    over queries m ≥ d of p[m, m − d]."""
    p = probs[0].double().mean(0)                                     # (T, T) mean over heads
    t = p.shape[0]
    distance = torch.arange(t)[:, None] - torch.arange(t)[None, :]    # (T, T) m − n
    seen = distance >= 0
    sums = torch.bincount(distance[seen], weights=p[seen], minlength=t)
    return sums / torch.arange(t, 0, -1, dtype=torch.float64)         # T − d queries reach d


@dataclass(frozen=True)
class DistanceProfile:
    profile: np.ndarray            # (L, T) mean weight per layer and distance
    layer_types: tuple[str, ...]
    seconds: float

    @property
    def n_tokens(self) -> int:
        return self.profile.shape[1]


@torch.inference_mode()
def run(model, tokenizer, text_in, max_tokens) -> DistanceProfile:
    max_tokens = whole_number(max_tokens, Term("rope.name.tokens"), MIN_CAPTURE_TOKENS, MAX_CAPTURE_TOKENS)
    ids = token_ids(tokenizer, text_in, max_tokens)
    config = model.config
    rec = Recorder(["attn_probs"], hooks={"attn_probs": lambda p, layer: mean_weight_by_distance(p),
                                          "kv_pos": lambda positions, layer: None})
    start = time.perf_counter()
    model(torch.tensor([ids], device=model.embed.weight.device), recorder=rec,
          options=RunOptions(attn_impl="eager"), stop_at_layer=config.n_layers)
    seconds = time.perf_counter() - start
    profile = np.stack([rec.get("attn_probs", layer).numpy() for layer in range(config.n_layers)])
    return DistanceProfile(profile=profile, layer_types=tuple(config.layer_types), seconds=seconds)


def figures(result: DistanceProfile, lang: str) -> tuple[go.Figure]:
    """log10 mean attention weight, layer x distance."""
    profile = result.profile
    n_layers, t = profile.shape
    z = np.log10(np.clip(profile, 1e-6, None))
    kinds = [text("rope.fig.kind.sliding" if kind == SLIDING else "rope.fig.kind.full", lang)
             for kind in result.layer_types]
    cell, far = template("rope.fig.dist_hover", lang), text("rope.fig.dist_far", lang)
    hover = [[cell.format(layer=layer, kind=kinds[layer], distance=d, weight=profile[layer, d])
              + (far if d > t // 2 else "")
              for d in range(t)] for layer in range(n_layers)]
    fig = Fig()
    fig.add_heatmap(
        z=z, x=list(range(t)),
        y=[text("rope.fig.dist_layer", lang, layer=layer, kind=kinds[layer]) for layer in range(n_layers)],
        colorscale="Viridis", zmin=-4, zmax=0, text=hover, hovertemplate="%{text}<extra></extra>",
        colorbar=dict(title=dict(text=text("rope.fig.mean_weight", lang)), thickness=12))
    fig.update_xaxes(title_text=text("rope.fig.distance_axis", lang))
    fig.update_yaxes(title_text=text("rope.fig.layer", lang), autorange="reversed")
    return (fig.finish("", height=max(360, 16 * n_layers + 120)),)


def summary(result: DistanceProfile, lang: str) -> str:
    profile = result.profile
    far = profile[:, FAR + 1:] if profile.shape[1] > FAR + 1 else profile[:, -1:]
    second = profile[:, 1] if profile.shape[1] > 1 else profile[:, 0]
    return text("rope.dist.result", lang, layers=profile.shape[0], tokens=result.n_tokens,
                seconds=result.seconds, self_weight=float(np.nanmean(profile[:, 0])),
                prev_weight=float(np.nanmean(second)), far_weight=float(np.nanmean(far)),
                prev_layer=int(np.nanargmax(second)))
