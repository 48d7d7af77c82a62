"""Attention sinks (claim C10) on the real model: the attention mass on the first token and on
the first s tokens, for every layer x head; with a gpt-oss sink logit b, also the mass that logit
absorbed. The text goes through the engine's KV cache CHUNK tokens per forward, so a long text can
be stopped between two forwards; memory stays bounded: a Recorder hook reduces each layer's
(B, H, T, S) probabilities to per-column sums the moment the layer hands them over, so only one
layer's probabilities exist at a time. `sink_verdict` is the claim's criterion: the tab's
sentence and the claims board both read it."""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Generator, Optional, Sequence

import numpy as np
import plotly.graph_objects as go
import torch

from explorer.attention import (Deadline, Progress, check_deadline, drain, long_ids, max_tokens,
                                model_title)
from explorer.inputs import whole_number
from explorer.locales import Term, text
from explorer.plotting import Fig
from explorer.prompts import token_text
from models.forward import Recorder, RunOptions

FIRST_QUERY = 8   # rows averaged in the sink grid start here (row 0 can only look at token 0)
MAX_SINKS = 64
CHUNK = 128       # tokens per forward: the grid is measured chunk by chunk through a KV cache

# Claim C10's criterion on the grid: a head is a sink head when its mean mass on token 0 is at
# least SINK_FACTOR times what uniform attention over the visible keys would give it; the sink
# is there when at least SINK_SHARE of the heads of the later half of the layers are sink heads.
SINK_FACTOR = 10.0
SINK_SHARE = 0.5


def sink_recorder(first_query: int, start: int) -> Recorder:
    """Per layer, from a forward of the tokens at positions start, start + 1, ...: the attention
    mass of the query rows at positions >= first_query summed over those rows, per head and key
    column, (H, S); the row count; and the key positions of the columns. One layer's (H, T, S)
    probabilities exist at a time."""
    def column_mass(probs, layer):
        rows = probs[0, :, max(0, first_query - start):].float()        # (H, T', S)
        return {"mass": rows.sum(1), "rows": rows.shape[1]}             # (H, S)

    return Recorder(["attn_probs"], hooks={"attn_probs": column_mass,
                                           "kv_pos": lambda pos, layer: pos})


@dataclass(frozen=True)
class SinkGrid:
    first: np.ndarray          # (L, H) mean mass on key 0
    first_s: np.ndarray        # (L, H) mean mass on keys [0, s)
    absorbed: np.ndarray       # (L, H) mean 1 - row sum (0 without a sink logit)
    n_tokens: int
    n_sinks: int
    sink_logit: Optional[float]
    first_query: int
    seconds: float             # the forwards' wall time
    uniform: np.ndarray        # (L,) mass on key 0 that uniform attention over the visible keys gives


def uniform_first_mass(model, n_tokens: int, first_query: int) -> np.ndarray:
    """Per layer, the mean over rows q >= first_query of the share uniform attention over the
    keys that layer's mask lets q see would put on key 0: 1 / (visible keys) while key 0 is
    visible, 0 once a sliding window has passed it."""
    q = np.arange(first_query, n_tokens, dtype=np.float64)
    out = []
    for mask in model.layer_masks():
        if mask.window is None:
            share = 1.0 / (q + 1)
        else:
            share = np.where(q < mask.window, 1.0 / np.minimum(q + 1, mask.window), 0.0)
        out.append(share.mean())
    return np.array(out)


def sink_forwards(n_tokens: int) -> int:
    return math.ceil(n_tokens / CHUNK)


@torch.inference_mode()
def sink_steps(model, ids: Sequence[int], n_sinks: int = 4, sink_logit: Optional[float] = None,
               impl: str = "eager", deadline: Optional[Deadline] = None
               ) -> Generator[Progress, None, SinkGrid]:
    """The grid, CHUNK tokens per forward through the engine's full KV cache (what a forward of
    the whole text computes, row block by row block); yields a Progress after every forward,
    checks `deadline` before each."""
    ids = list(ids)
    n = len(ids)
    first_query = min(FIRST_QUERY, max(1, n - 1))
    n_layers, n_heads = model.config.n_layers, model.config.n_heads
    options = RunOptions(attn_impl=impl, sink_logit=sink_logit, last_logits_only=True)
    x = torch.tensor([ids], dtype=torch.long, device=model.embed.weight.device)
    cache = model.new_cache(n, options=options)
    sums = {name: np.zeros((n_layers, n_heads)) for name in ("first", "first_s", "absorbed")}
    rows = 0
    total = sink_forwards(n)
    seconds = 0.0
    yield Progress(0, total)
    for index, start in enumerate(range(0, n, CHUNK)):
        check_deadline(deadline, index, total)
        recorder = sink_recorder(first_query, start)
        begin = time.perf_counter()
        model(x[:, start:start + CHUNK], cache=cache, recorder=recorder, options=options)
        seconds += time.perf_counter() - begin
        for layer in range(n_layers):
            kept = recorder.get("attn_probs", layer)
            mass, kv_pos = kept["mass"].double(), recorder.get("kv_pos", layer)
            sums["first"][layer] += mass[:, kv_pos == 0].sum(-1).numpy()
            sums["first_s"][layer] += mass[:, (kv_pos >= 0) & (kv_pos < n_sinks)].sum(-1).numpy()
            sums["absorbed"][layer] += (kept["rows"] - mass.sum(-1)).numpy()
        rows += recorder.get("attn_probs", 0)["rows"]
        yield Progress(index + 1, total)
    grid = {name: (value / max(rows, 1)).astype(np.float32) for name, value in sums.items()}
    return SinkGrid(first=grid["first"], first_s=grid["first_s"], absorbed=grid["absorbed"],
                    n_tokens=n, n_sinks=n_sinks, sink_logit=sink_logit, first_query=first_query,
                    seconds=seconds, uniform=uniform_first_mass(model, n, first_query))


def sink_grid(model, ids: Sequence[int], n_sinks: int = 4, sink_logit: Optional[float] = None,
              impl: str = "eager") -> SinkGrid:
    """sink_steps drained to its grid."""
    return drain(sink_steps(model, ids, n_sinks, sink_logit, impl))


@dataclass(frozen=True)
class SinkVerdict:
    """Claim C10's criterion applied to a grid: how many heads of the later layers are sink
    heads (mass on token 0 >= SINK_FACTOR x the uniform share)."""
    later_from: int            # first layer of the later half
    n_sink_heads: int
    n_heads: int               # heads in the later layers
    mean_first: float          # mean mass on token 0 over those heads
    uniform: float             # mean uniform share over those layers
    factor: float = SINK_FACTOR
    need: float = SINK_SHARE

    @property
    def share(self) -> float:
        return self.n_sink_heads / self.n_heads if self.n_heads else 0.0

    @property
    def holds(self) -> bool:
        return self.n_heads > 0 and self.share >= self.need


def sink_verdict(grid: SinkGrid) -> SinkVerdict:
    n_layers = grid.first.shape[0]
    later = n_layers // 2
    first = np.asarray(grid.first[later:], dtype=np.float64)             # (L - later, H)
    uniform = np.asarray(grid.uniform[later:], dtype=np.float64)[:, None]
    # a layer whose window has passed token 0 for every row has uniform 0: no head there can be a
    # sink of token 0 (its mass there is 0 too), so it counts as not one
    sink = (first >= SINK_FACTOR * uniform) & (uniform > 0)
    return SinkVerdict(later_from=later, n_sink_heads=int(sink.sum()), n_heads=int(first.size),
                       mean_first=float(first.mean()), uniform=float(uniform.mean()))


@dataclass(frozen=True)
class SinkResult:
    model: str
    title: str
    token0: str                # the first token of the text, as text
    grid: SinkGrid


def steps(loaded: Any, n_tokens: Any, n_sinks: Any, use_logit: bool, sink_logit: Any,
          deadline: Optional[Deadline] = None) -> Generator[Progress, None, SinkResult]:
    """The sink grid of the first `n_tokens` tokens of the long text, one forward per step.
    Inputs checked before the first forward."""
    from explorer.attention.maps import check_sink_logit

    n_tokens = whole_number(n_tokens, Term("attention.name.tokens"), 16, max_tokens(loaded.device))
    n_sinks = whole_number(n_sinks, Term("attention.name.sinks"), 1, MAX_SINKS)
    b = check_sink_logit(sink_logit) if use_logit else None
    ids = long_ids(loaded.tokenizer, n_tokens)
    grid = yield from sink_steps(loaded.model, ids, n_sinks, b, deadline=deadline)
    return SinkResult(model=loaded.name, title=model_title(loaded),
                      token0=token_text(loaded.tokenizer, ids[0]), grid=grid)


def run(loaded: Any, n_tokens: Any, n_sinks: Any, use_logit: bool, sink_logit: Any,
        deadline: Optional[Deadline] = None) -> SinkResult:
    """steps(...) drained to its result."""
    return drain(steps(loaded, n_tokens, n_sinks, use_logit, sink_logit, deadline))


def data(result: SinkResult) -> dict:
    g = result.grid
    verdict = sink_verdict(g)
    return {"model": result.model, "title": result.title, "n_tokens": g.n_tokens,
            "n_sinks": g.n_sinks, "sink_logit": g.sink_logit, "token0": result.token0,
            "seconds": g.seconds, "first_query": g.first_query,
            "first": g.first.round(5).tolist(), "first_s": g.first_s.round(5).tolist(),
            "absorbed": g.absorbed.round(5).tolist(), "uniform": g.uniform.round(6).tolist(),
            "sink_heads_later": verdict.n_sink_heads, "heads_later": verdict.n_heads,
            "later_from": verdict.later_from, "sink_share": verdict.share, "sinks_hold": verdict.holds}


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
    return fig.finish(title, height=max(360, 16 * n_layers + 160), lang=lang)


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
    verdict = sink_verdict(g)
    out = text("attention.sink_summary", lang, n_tokens=g.n_tokens, seconds=g.seconds,
               token0=result.token0, first_mean=float(g.first.mean()),
               n_over_half=int((g.first > 0.5).sum()), n_cells=g.first.size, s=g.n_sinks,
               first_s_mean=float(g.first_s.mean()), absorbed=absorbed)
    return out + "  \n" + text("attention.sink_verdict_" + ("yes" if verdict.holds else "no"), lang,
                               later=verdict.later_from, k=verdict.n_sink_heads, n=verdict.n_heads,
                               share=verdict.share, factor=verdict.factor, uniform=verdict.uniform,
                               mean=verdict.mean_first, need=verdict.need)
