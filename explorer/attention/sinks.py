"""Attention sinks (claim C10) on the real model: the attention mass on the first token and on
the first s tokens, for every layer x head, from one eager forward; with a gpt-oss sink logit b,
also the mass that logit absorbed. Memory stays bounded: a Recorder subclass reduces each
layer's (B, H, T, S) probabilities to a few (H,) vectors the moment the layer hands them over,
so only one layer's probabilities exist at a time."""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Optional, Sequence

import numpy as np
import plotly.graph_objects as go
import torch

from explorer.attention import long_ids, max_tokens, model_title
from explorer.inputs import whole_number
from explorer.locales import Term, text
from explorer.plotting import Fig
from explorer.prompts import token_text
from models.forward import Recorder, RunOptions

FIRST_QUERY = 8   # rows averaged in the sink grid start here (row 0 can only look at token 0)
MAX_SINKS = 64


class SinkMassRecorder(Recorder):
    """Records, per layer, the mean over query rows q >= first_query of the attention mass on
    key 0, on keys [0, sinks), and 1 - row sum (what a sink logit absorbed), each (H,).
    Discards the probabilities themselves."""

    def __init__(self, n_sinks: int = 4, first_query: int = FIRST_QUERY):
        super().__init__(["attn_probs"])
        self.n_sinks = n_sinks
        self.first_query = first_query

    def save(self, point, layer, value):
        if point == "kv_pos":
            return
        if point != "attn_probs":
            return super().save(point, layer, value)
        probs = value.detach()[0, :, self.first_query:].float()       # (H, T', S)
        self.records[("first", layer)] = probs[..., 0].mean(-1).cpu()
        self.records[("first_s", layer)] = probs[..., :self.n_sinks].sum(-1).mean(-1).cpu()
        self.records[("absorbed", layer)] = (1.0 - probs.sum(-1)).mean(-1).cpu()


@dataclass(frozen=True)
class SinkGrid:
    first: np.ndarray          # (L, H) mean mass on key 0
    first_s: np.ndarray        # (L, H) mean mass on keys [0, s)
    absorbed: np.ndarray       # (L, H) mean 1 - row sum (0 without a sink logit)
    n_tokens: int
    n_sinks: int
    sink_logit: Optional[float]
    first_query: int
    seconds: float


@torch.inference_mode()
def sink_grid(model, ids: Sequence[int], n_sinks: int = 4, sink_logit: Optional[float] = None,
              impl: str = "eager") -> SinkGrid:
    ids = list(ids)
    first_query = min(FIRST_QUERY, max(1, len(ids) - 1))
    recorder = SinkMassRecorder(n_sinks, first_query)
    x = torch.tensor([ids], dtype=torch.long, device=model.embed.weight.device)
    start = time.perf_counter()
    model(x, recorder=recorder, options=RunOptions(attn_impl=impl, sink_logit=sink_logit,
                                                   last_logits_only=True))
    seconds = time.perf_counter() - start
    n_layers = model.config.n_layers

    def grid(name):
        return torch.stack([recorder.records[(name, i)] for i in range(n_layers)]).numpy()

    return SinkGrid(first=grid("first"), first_s=grid("first_s"), absorbed=grid("absorbed"),
                    n_tokens=len(ids), n_sinks=n_sinks, sink_logit=sink_logit,
                    first_query=first_query, seconds=seconds)


@dataclass(frozen=True)
class SinkResult:
    model: str
    title: str
    token0: str                # the first token of the text, as text
    grid: SinkGrid


def run(loaded: Any, n_tokens: Any, n_sinks: Any, use_logit: bool, sink_logit: Any) -> SinkResult:
    """The sink grid of the first `n_tokens` tokens of the long text. Inputs checked first."""
    from explorer.attention.maps import check_sink_logit

    n_tokens = whole_number(n_tokens, Term("attention.name.tokens"), 16, max_tokens(loaded.device))
    n_sinks = whole_number(n_sinks, Term("attention.name.sinks"), 1, MAX_SINKS)
    b = check_sink_logit(sink_logit) if use_logit else None
    ids = long_ids(loaded.tokenizer, n_tokens)
    grid = sink_grid(loaded.model, ids, n_sinks, b)
    return SinkResult(model=loaded.name, title=model_title(loaded),
                      token0=token_text(loaded.tokenizer, ids[0]), grid=grid)


def data(result: SinkResult) -> dict:
    g = result.grid
    return {"model": result.model, "title": result.title, "n_tokens": g.n_tokens,
            "n_sinks": g.n_sinks, "sink_logit": g.sink_logit, "token0": result.token0,
            "seconds": g.seconds, "first_query": g.first_query,
            "first": g.first.round(5).tolist(), "first_s": g.first_s.round(5).tolist(),
            "absorbed": g.absorbed.round(5).tolist()}


def grid_figure(values: np.ndarray, what: str, title: str = "", lang: str = "en") -> go.Figure:
    """One (L, H) grid of masses; `what` and `title` come in `lang` already."""
    n_layers, n_heads = values.shape
    fig = Fig()
    fig.add_heatmap(
        z=np.round(values, 4), x=list(range(n_heads)), y=list(range(n_layers)),
        colorscale="Viridis", zmin=0, zmax=1, colorbar=dict(title=dict(text=text("attention.fig.sink.mass", lang))),
        hovertemplate=text("attention.fig.sink.hover", lang, what=what) + "<extra></extra>")
    fig.update_xaxes(title_text=text("attention.fig.sink.head", lang), dtick=1)
    fig.update_yaxes(title_text=text("attention.fig.sink.layer", lang), autorange="reversed")
    return fig.finish(title, height=max(360, 16 * n_layers + 160))


def figures(result: SinkResult, lang: str = "en") -> tuple:
    """(mass on token 0, mass on tokens 0..s-1, mass absorbed by the sink logit or None without
    one)."""
    g, title = result.grid, result.title
    first = grid_figure(g.first, text("attention.fig.sink.first", lang),
                        text("attention.fig.sink.first_title", lang, title=title), lang)
    first_s = grid_figure(g.first_s, text("attention.fig.sink.first_s", lang, last=g.n_sinks - 1),
                          text("attention.fig.sink.first_s_title", lang, title=title, n=g.n_sinks), lang)
    if g.sink_logit is None:
        return first, first_s, None
    return first, first_s, grid_figure(g.absorbed, text("attention.fig.sink.absorbed", lang),
                                       text("attention.fig.sink.absorbed_title", lang, title=title,
                                            b=g.sink_logit), lang)


def summary(result: SinkResult, lang: str = "en") -> str:
    g = result.grid
    absorbed = ""
    if g.sink_logit is not None:
        absorbed = text("attention.sink_absorbed", lang, b=g.sink_logit, mean=float(g.absorbed.mean()),
                        min=float(g.absorbed.min()), max=float(g.absorbed.max()))
    return text("attention.sink_summary", lang, n_tokens=g.n_tokens, seconds=g.seconds,
                token0=result.token0, first_mean=float(g.first.mean()),
                n_over_half=int((g.first > 0.5).sum()), n_cells=g.first.size, s=g.n_sinks,
                first_s_mean=float(g.first_s.mean()), absorbed=absorbed)
