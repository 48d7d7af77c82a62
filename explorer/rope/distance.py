"""Attention against distance on the real model: per layer, the mean attention weight a query
gives the key m − n tokens back (averaged over heads and over the queries that reach that far),
and how much of it is the weight on token 0 (at distance d only query d reaches token 0, so its
share is exact). Each layer's (H, T, T) probabilities are reduced to (2, T) as they are recorded
(a Recorder hook), and the forward stops before the LM head."""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Optional

import numpy as np
import plotly.graph_objects as go
import torch

from explorer.inputs import whole_number
from explorer.locales import Term, template, text
from explorer.plotting import Fig
from explorer.rope.capture import MAX_CAPTURE_TOKENS, MIN_CAPTURE_TOKENS, token_ids
from models.config import SLIDING
from models.forward import Recorder, RunOptions

FAR = 64   # the summary's "at distances of FAR tokens or more"
# At distance d, token 0's share of the mean weight above which the hover calls token 0 the
# place that weight goes (a sink): more than half of it comes from that one key.
FIRST_KEY_MOST = 0.5
# The mean weight on token 0 counts as a sink when it is this many times what a uniform
# causal attention would give it (1/(m+1) for query m).
SINK_FACTOR = 2.0


def mean_weight_by_distance(probs: torch.Tensor) -> torch.Tensor:
    """(B, H, T, T) attention probabilities -> (T,) float64: entry d is the mean over heads and
    over queries m ≥ d of p[m, m − d]."""
    p = probs[0].double().mean(0)                                     # (T, T) mean over heads
    t = p.shape[0]
    distance = torch.arange(t)[:, None] - torch.arange(t)[None, :]    # (T, T) m − n
    seen = distance >= 0
    sums = torch.bincount(distance[seen], weights=p[seen], minlength=t)
    return sums / torch.arange(t, 0, -1, dtype=torch.float64)         # T − d queries reach d


def first_key_by_distance(probs: torch.Tensor) -> torch.Tensor:
    """(B, H, T, T) -> (T,) float64: entry d is the part of mean_weight_by_distance's entry d
    that is query d's weight on token 0 (mean over heads), i.e. p[d, 0] / (T − d)."""
    p0 = probs[0, :, :, 0].double().mean(0)                           # (T,) query m -> token 0
    t = p0.shape[0]
    return p0 / torch.arange(t, 0, -1, dtype=torch.float64)


def reduce_probs(probs: torch.Tensor, layer) -> torch.Tensor:
    """The recording hook: (B, H, T, T) -> (2, T): the mean by distance, token 0's part of it."""
    return torch.stack([mean_weight_by_distance(probs), first_key_by_distance(probs)])


@dataclass(frozen=True)
class DistanceProfile:
    profile: np.ndarray            # (L, T) mean weight per layer and distance
    layer_types: tuple[str, ...]
    seconds: float
    first_key: Optional[np.ndarray] = None   # (L, T) the part of `profile` on token 0

    @property
    def n_tokens(self) -> int:
        return self.profile.shape[1]

    def first_key_share(self) -> np.ndarray:
        """(L, T) share of the mean weight at distance d that goes to token 0 (0 at d = 0)."""
        if self.first_key is None:
            return np.zeros_like(self.profile)
        share = self.first_key / np.clip(self.profile, 1e-300, None)
        share[:, 0] = 0.0          # at distance 0, token 0 is the query itself
        return share

    def sink_mass(self) -> np.ndarray:
        """(L,) mean over heads and queries m ≥ 1 of the weight on token 0."""
        t = self.n_tokens
        if self.first_key is None or t < 2:
            return np.zeros(self.profile.shape[0])
        reach = np.arange(t, 0, -1)                                  # T − d
        return (self.first_key[:, 1:] * reach[1:]).sum(axis=1) / (t - 1)

    def uniform_sink_mass(self) -> float:
        """What a uniform causal attention would give token 0: mean over m ≥ 1 of 1/(m+1)."""
        t = self.n_tokens
        return float(np.mean(1.0 / np.arange(2, t + 1))) if t >= 2 else 1.0


def has_sink(result: DistanceProfile) -> bool:
    """Token 0 gets at least SINK_FACTOR times its uniform share, averaged over layers."""
    return bool(result.sink_mass().mean() >= SINK_FACTOR * result.uniform_sink_mass())


@torch.inference_mode()
def run(model, tokenizer, text_in, max_tokens) -> DistanceProfile:
    max_tokens = whole_number(max_tokens, Term("rope.name.tokens"), MIN_CAPTURE_TOKENS, MAX_CAPTURE_TOKENS)
    ids = token_ids(tokenizer, text_in, max_tokens)
    config = model.config
    rec = Recorder(["attn_probs"], hooks={"attn_probs": reduce_probs,
                                          "kv_pos": lambda positions, layer: None})
    start = time.perf_counter()
    model(torch.tensor([ids], device=model.embed.weight.device), recorder=rec,
          options=RunOptions(attn_impl="eager"), stop_at_layer=config.n_layers)
    seconds = time.perf_counter() - start
    reduced = np.stack([rec.get("attn_probs", layer).numpy() for layer in range(config.n_layers)])  # (L, 2, T)
    return DistanceProfile(profile=reduced[:, 0], layer_types=tuple(config.layer_types), seconds=seconds,
                           first_key=reduced[:, 1])


def figures(result: DistanceProfile, lang: str) -> tuple[go.Figure]:
    """log10 mean attention weight, layer x distance."""
    profile = result.profile
    n_layers, t = profile.shape
    z = np.log10(np.clip(profile, 1e-6, None))
    kinds = [text("rope.fig.kind.sliding" if kind == SLIDING else "rope.fig.kind.full", lang)
             for kind in result.layer_types]
    cell = template("rope.fig.dist_hover", lang)
    most, some = template("rope.fig.dist_first_most", lang), template("rope.fig.dist_first_some", lang)
    share = result.first_key_share()

    def first_key(layer: int, d: int) -> str:
        """Token 0's part of the weight at distance d, chosen by its measured share."""
        if d == 0 or result.first_key is None:
            return ""
        return (most if share[layer, d] >= FIRST_KEY_MOST else some).format(share=share[layer, d], query=d)

    hover = [[cell.format(layer=layer, kind=kinds[layer], distance=d, weight=profile[layer, d])
              + first_key(layer, d)
              for d in range(t)] for layer in range(n_layers)]
    fig = Fig()
    fig.add_heatmap(
        z=z, x=list(range(t)),
        y=[text("rope.fig.dist_layer", lang, layer=layer, kind=kinds[layer]) for layer in range(n_layers)],
        colorscale="Viridis", zmin=-4, zmax=0, text=hover, hovertemplate="%{text}<extra></extra>",
        colorbar=dict(title=dict(text=text("rope.fig.mean_weight", lang)), thickness=12))
    fig.update_xaxes(title_text=text("rope.fig.distance_axis", lang))
    fig.update_yaxes(title_text=text("rope.fig.layer", lang), autorange="reversed")
    return (fig.finish("", height=max(360, 16 * n_layers + 120), lang=lang),)


def summary(result: DistanceProfile, lang: str) -> str:
    profile = result.profile
    far_from = min(FAR, profile.shape[1] - 1)
    far = profile[:, far_from:]
    second = profile[:, 1] if profile.shape[1] > 1 else profile[:, 0]
    out = text("rope.dist.result", lang, layers=profile.shape[0], tokens=result.n_tokens,
               seconds=result.seconds, self_weight=float(np.nanmean(profile[:, 0])),
               prev_weight=float(np.nanmean(second)), far_weight=float(np.nanmean(far)), far=far_from,
               prev_layer=int(np.nanargmax(second)))
    if result.first_key is not None and result.n_tokens >= 2:
        mass = result.sink_mass()
        uniform = result.uniform_sink_mass()
        out += " " + text("rope.dist.sink" if has_sink(result) else "rope.dist.no_sink", lang,
                          mass=float(mass.mean()), uniform=uniform, ratio=float(mass.mean()) / uniform,
                          factor=SINK_FACTOR, layer=int(np.argmax(mass)), layer_mass=float(mass.max()))
    return out
