"""Local vs global layers: the score entries one forward of n tokens needs in one local
(sliding-window) and one global layer, over all layers, and the KV-cache bytes per layer kind.

Counts come from each layer's own MaskSpec, counted arithmetically (O(n) per mask, no n x n
matrix): with keys at positions 0..n-1 and a causal mask of window w and s sinks, query q sees
min(q + 1, w) keys in its window plus the sinks behind it, max(0, min(s, q - w + 1)).
`visible_pairs_by_rows` evaluates the mask's own predicate row block by row block and gives the
same numbers (the tests compare them); it also covers a non-causal mask. Cache bytes come from
ModelConfig.kv_bytes_per_layer, the engine's formula. The result depends on the config only,
so it is computed once per model under a lock and shared.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np
import plotly.graph_objects as go
import torch

from explorer.locales import text
from explorer.plotting import MASK_COLORS, OKABE_ITO, Fig
from models.attention import MaskSpec
from models.config import SLIDING

LENGTHS = (128, 256, 512, 1024, 2048, 4096, 8192)
ROW_BLOCK = 256


def layer_kinds(config) -> list[str]:
    return ["local" if kind == SLIDING else "global" for kind in config.layer_types]


def visible_pairs(mask: MaskSpec, n: int) -> int:
    """Visible (query, key) pairs of `mask` over positions 0..n-1."""
    if not mask.causal:
        return visible_pairs_by_rows(mask, n)
    q = np.arange(n, dtype=np.int64)
    if mask.window is None:
        return int(n * (n + 1) // 2)
    in_window = np.minimum(q + 1, mask.window)
    sinks_behind = np.clip(np.minimum(mask.sinks, q - mask.window + 1), 0, None)
    return int((in_window + sinks_behind).sum())


def visible_pairs_by_rows(mask: MaskSpec, n: int, block: int = ROW_BLOCK) -> int:
    """The same count from mask.visible, `block` query rows at a time (block x n booleans)."""
    keys = torch.arange(n)
    total = 0
    for start in range(0, n, block):
        rows = torch.arange(start, min(start + block, n))
        # a predicate that ignores q (bidirectional, no window) gives a (1, n) row: broadcast it
        total += int(mask.visible(rows, keys).expand(len(rows), n).sum())
    return total


@dataclass(frozen=True)
class CostRow:
    n: int
    scores_local: int        # one local layer, all heads (0 without local layers)
    scores_global: int       # one global layer, all heads
    scores_all: int          # every layer, all heads
    scores_all_global: int   # every layer, were all of them global
    cache_local: int         # KV-cache bytes of one local layer after n tokens
    cache_global: int
    cache_all: int


@dataclass(frozen=True)
class CostResult:
    model: str
    title: str
    kinds: tuple[str, ...]   # per layer: "local" | "global"
    window: Optional[int]    # the local layers' window
    rows: tuple[CostRow, ...]

    @property
    def n_local(self) -> int:
        return self.kinds.count("local")

    @property
    def n_global(self) -> int:
        return self.kinds.count("global")


def run(model, name: str, title: str, lengths: Sequence[int] = LENGTHS) -> CostResult:
    """Counts and bytes of `model`'s own layer masks for each n in `lengths` (no forward)."""
    config = model.config
    masks = model.layer_masks()
    kinds = layer_kinds(config)
    element_bytes = model.element_size()
    capacities = [mask.window + mask.sinks if mask.window is not None else None for mask in masks]
    first = {kind: kinds.index(kind) for kind in ("local", "global") if kind in kinds}
    rows = []
    for n in lengths:
        counted: dict[MaskSpec, int] = {}
        for mask in masks:
            if mask not in counted:
                counted[mask] = visible_pairs(mask, n)
        per_layer = [counted[mask] for mask in masks]
        cache = config.kv_bytes_per_layer(n, element_bytes, capacities)
        heads = config.n_heads

        def of(kind, values):
            return values[first[kind]] if kind in first else 0

        rows.append(CostRow(n=n, scores_local=of("local", per_layer) * heads,
                            scores_global=of("global", per_layer) * heads,
                            scores_all=sum(per_layer) * heads,
                            scores_all_global=n * (n + 1) // 2 * heads * config.n_layers,
                            cache_local=of("local", cache), cache_global=of("global", cache),
                            cache_all=sum(cache)))
    return CostResult(model=name, title=title, kinds=tuple(kinds), window=config.sliding_window,
                      rows=tuple(rows))


_RESULTS: dict[str, CostResult] = {}
_LOCK = threading.Lock()


def run_once(model, name: str, title: str) -> CostResult:
    """run() for this model, computed once per process: the counts depend only on its config,
    and the lock makes concurrent first calls wait for the one computation."""
    with _LOCK:
        if name not in _RESULTS:
            _RESULTS[name] = run(model, name, title)
        return _RESULTS[name]


def data(result: CostResult) -> dict:
    """The numbers as plain data (the tab's "numbers as data" and its API)."""
    rows = []
    for r in result.rows:
        row = {"n": r.n}
        for kind, scores, cache in (("local", r.scores_local, r.cache_local),
                                    ("global", r.scores_global, r.cache_global)):
            row[f"{kind} layers"] = result.kinds.count(kind)
            row[f"scores per {kind} layer"] = scores
            row[f"cache bytes per {kind} layer"] = cache
        row.update({"scores, all layers": r.scores_all, "scores if all global": r.scores_all_global,
                    "cache bytes, all layers": r.cache_all})
        rows.append(row)
    return {"model": result.model, "title": result.title, "rows": rows, "n_local": result.n_local,
            "n_global": result.n_global, "window": result.window}


def strip_figure(result: CostResult, lang: str = "en") -> go.Figure:
    """One cell per layer: local (sliding window) or global."""
    kinds = result.kinds
    z = [[1 if k == "global" else 0 for k in kinds]]
    cells = [[(text("attention.fig.global_cell", lang) if k == "global"
               else text("attention.fig.local_cell", lang, w=result.window)) for k in kinds]]
    fig = Fig()
    fig.add_heatmap(
        z=z, x=list(range(len(kinds))), y=[text("attention.fig.layer_type", lang)], colorscale=MASK_COLORS,
        zmin=0, zmax=1, showscale=False, customdata=cells, xgap=2,
        hovertemplate=text("attention.fig.strip_hover", lang) + "<extra></extra>")
    fig.update_xaxes(title_text=text("attention.fig.layer", lang), dtick=1)
    return fig.finish(text("attention.fig.strip_title", lang, title=result.title + ":",
                           n_local=result.n_local, n_global=result.n_global).strip(), height=210, lang=lang)


def cost_figure(result: CostResult, lang: str = "en") -> go.Figure:
    """Score entries per layer vs n, local and global, on log axes."""
    ns = [r.n for r in result.rows]
    fig = Fig()
    for kind, color, count in (("global", OKABE_ITO["orange"], result.n_global),
                               ("local", OKABE_ITO["blue"], result.n_local)):
        if count:
            name = text(f"attention.fig.one_{kind}", lang)
            fig.add_scatter(x=ns, y=[getattr(r, f"scores_{kind}") for r in result.rows],
                            mode="lines+markers", name=name, line=dict(color=color),
                            hovertemplate=text("attention.fig.cost_hover", lang, kind=name) + "<extra></extra>")
    fig.update_xaxes(title_text=text("attention.fig.cost_x", lang), type="log")
    fig.update_yaxes(title_text=text("attention.fig.cost_y", lang), type="log")
    return fig.finish(text("attention.fig.cost_title", lang), height=380, lang=lang)


def figures(result: CostResult, lang: str = "en") -> tuple[go.Figure, go.Figure]:
    """(layer-type strip, score entries vs n)."""
    return strip_figure(result, lang), cost_figure(result, lang)


def summary(result: CostResult, lang: str = "en") -> str:
    if not result.n_local:
        return text("attention.lg_no_local", lang, title=result.title)
    last = result.rows[-1]
    full_cache = last.cache_global * len(result.kinds)
    return text("attention.lg_summary", lang, title=result.title, n_local=result.n_local,
                n_global=result.n_global, window=result.window, n=last.n,
                ratio=last.scores_all / last.scores_all_global, cache_ratio=last.cache_all / full_cache)


def table(result: CostResult, lang: str = "en"):
    """Per n: scores and cache bytes per layer kind, and all layers vs all-global; headers in
    `lang`."""
    import pandas as pd

    columns = {text("attention.col.n", lang): [r.n for r in result.rows]}
    for kind in ("local", "global"):
        if result.kinds.count(kind):
            columns[text(f"attention.col.scores_{kind}", lang)] = [getattr(r, f"scores_{kind}") for r in result.rows]
            columns[text(f"attention.col.cache_{kind}", lang)] = [getattr(r, f"cache_{kind}") for r in result.rows]
    columns[text("attention.col.vs_global", lang)] = [f"{r.scores_all / r.scores_all_global:.0%}"
                                                      for r in result.rows]
    return pd.DataFrame(columns)
