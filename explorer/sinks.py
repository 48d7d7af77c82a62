"""Attention sinks (claim C10) on the real model.

- `sink_grid`: attention mass on the first token and on the first s tokens, for every layer x
  head, from one eager forward. Memory stays bounded: a Recorder subclass reduces each layer's
  (B, H, T, S) probabilities to a few (H,) vectors the moment the layer hands them over, so
  only one layer's probabilities exist at a time.
- `streaming_nll`: per-token negative log-likelihood along a long text for full cache, window
  only (first tokens evicted) and sinks + window (StreamingLLM). It feeds the text in chunks
  through the engine's own KV cache built for that mask (`model.new_cache(n, RunOptions(mask))`:
  a ring buffer, or sinks + ring), which is what a server with that eviction policy would do;
  the engine's tests prove cached == full forward under the same mask.
"""
from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

import numpy as np
import torch
import torch.nn.functional as F

from explorer.locales import text as locale_text
from models.attention import MaskSpec
from models.config import SLIDING
from models.forward import Recorder, RunOptions

FIRST_QUERY = 8   # rows averaged in the sink grid start here (row 0 can only look at token 0)



def _text(key: str, lang: Optional[str], **fields) -> str:
    return locale_text(key, lang, **fields)


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


@dataclass
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


def sink_grid_figure(values: np.ndarray, what: str, title: str = "", lang: str = "en"):
    """One (L, H) grid of masses; `what` and `title` come in `lang` already (sink_figures)."""
    import plotly.graph_objects as go

    n_layers, n_heads = values.shape
    fig = go.Figure(go.Heatmap(
        z=np.round(values, 4), x=list(range(n_heads)), y=list(range(n_layers)),
        colorscale="Viridis", zmin=0, zmax=1, colorbar=dict(title=_text("attention.fig.sink.mass", lang)),
        hovertemplate=_text("attention.fig.sink.hover", lang, what=what) + "<extra></extra>"))
    fig.update_layout(title=title, height=max(320, 16 * n_layers + 120),
                      margin=dict(l=10, r=10, t=50, b=10))
    fig.update_xaxes(title=_text("attention.fig.sink.head", lang), dtick=1)
    fig.update_yaxes(title=_text("attention.fig.sink.layer", lang), autorange="reversed")
    return fig


def sink_figures(first, first_s, absorbed, n_sinks: int, sink_logit: Optional[float], title: str,
                 lang: str = "en"):
    """(mass on token 0, mass on tokens 0..s-1, mass absorbed by the sink logit or None without
    one) grids of a sink measurement, titled for model `title`, in `lang`."""
    figures = [
        sink_grid_figure(np.asarray(first), _text("attention.fig.sink.first", lang),
                         _text("attention.fig.sink.first_title", lang, title=title), lang),
        sink_grid_figure(np.asarray(first_s), _text("attention.fig.sink.first_s", lang, last=n_sinks - 1),
                         _text("attention.fig.sink.first_s_title", lang, title=title, n=n_sinks), lang)]
    if sink_logit is None:
        return (*figures, None)
    return (*figures, sink_grid_figure(np.asarray(absorbed), _text("attention.fig.sink.absorbed", lang),
                                       _text("attention.fig.sink.absorbed_title", lang, title=title,
                                             b=sink_logit), lang))


# ----------------------------------------------------------------------------- StreamingLLM

POLICIES = ("full", "window", "sinks")
# Models with sliding-window layers (Gemma 3) get a fourth policy: sinks kept in the global
# layers only, the local layers keep just the window (as in the checkpoint, whose local layers
# never see a token more than their window back).
SINKS_GLOBAL = "sinks_global"


def policies_for(config) -> tuple[str, ...]:
    return POLICIES + ((SINKS_GLOBAL,) if SLIDING in config.layer_types else ())


def policy_mask(policy: str, window: int, sinks: int) -> Optional[MaskSpec]:
    if policy == "full":
        return None
    if policy == "window":
        return MaskSpec(window=window)
    if policy == "sinks":
        return MaskSpec(window=window, sinks=sinks)
    raise ValueError(f"unknown policy {policy!r}; choose from {POLICIES}")


def policy_label(policy: str, window: int, sinks: int, lang: str = "en") -> str:
    return _text(f"attention.fig.policy.{policy}", lang, w=window, s=sinks)


def policy_mask_option(model, policy: str, window: int, sinks: int):
    """RunOptions.mask for a policy: one MaskSpec for all layers, or, for SINKS_GLOBAL, one per
    layer (sinks only where the layer is global; sliding layers get the window alone)."""
    if policy != SINKS_GLOBAL:
        return policy_mask(policy, window, sinks)
    return tuple(MaskSpec(window=window) if kind == SLIDING else MaskSpec(window=window, sinks=sinks)
                 for kind in model.config.layer_types)


def policy_layer_masks(model, policy: str, window: int, sinks: int) -> list[MaskSpec]:
    """The per-layer masks the engine uses for a policy (each layer's own mask, restricted)."""
    return model.layer_masks(policy_mask_option(model, policy, window, sinks))


@torch.inference_mode()
def streaming_nll(model, ids: Sequence[int], policy: str, window: int = 256, sinks: int = 4,
                  chunk: int = 256, progress: Optional[Callable[[float], None]] = None) -> np.ndarray:
    """NLL (nats) of token t+1 given tokens <= t, for t = 0 .. n-2, under the eviction policy.
    Chunked prefill through the engine's cache for that mask keeps memory bounded by
    chunk x (window or n) scores per layer and chunk x vocab logits."""
    options = RunOptions(mask=policy_mask_option(model, policy, window, sinks))
    device = model.embed.weight.device
    x = torch.tensor(list(ids), dtype=torch.long, device=device)
    n = x.shape[0]
    cache = model.new_cache(n, options=options)
    nll = torch.empty(n - 1, dtype=torch.float64)
    for start in range(0, n - 1, chunk):
        stop = min(start + chunk, n - 1)
        logits = model(x[None, start:stop], cache=cache, options=options)[0]  # (T, V)
        targets = x[start + 1:stop + 1]
        nll[start:stop] = F.cross_entropy(logits.float(), targets, reduction="none").double().cpu()
        del logits
        if progress is not None:
            progress(stop / (n - 1))
    return nll.numpy()


@dataclass
class StreamingResult:
    model: str
    n_tokens: int
    window: int
    sinks: int
    nll: dict = field(default_factory=dict)       # policy -> (n-1,) nats
    seconds: dict = field(default_factory=dict)   # policy -> wall seconds

    def perplexity(self, policy: str, start: int = 0) -> float:
        return float(math.exp(np.mean(self.nll[policy][start:])))


class StreamingCache:
    """Bounded, thread-safe memo of measured NLL curves keyed by (model, n, policy, w, s).
    The values are deterministic functions of the key (same weights, same text), so sharing them
    between visitors leaks nothing a visitor typed."""

    def __init__(self, max_entries: int = 24):
        self._data: OrderedDict = OrderedDict()
        self._lock = threading.Lock()
        self.max_entries = max_entries

    def get(self, key):
        with self._lock:
            if key in self._data:
                self._data.move_to_end(key)
                return self._data[key]
            return None

    def put(self, key, value):
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self.max_entries:
                self._data.popitem(last=False)

    def models_with(self, n: int, window: int, sinks: int) -> list[str]:
        with self._lock:
            names = {k[0] for k in self._data if k[1] == n and k[3] == window and k[4] == sinks}
        return sorted(names)

    def results(self, n: int, window: int, sinks: int) -> list["StreamingResult"]:
        """Every model's curves already measured for this (n, w, s), as StreamingResults."""
        with self._lock:
            items = [(k, v) for k, v in self._data.items()
                     if k[1] == n and k[3] == window and k[4] == sinks]
        out: dict[str, StreamingResult] = {}
        for (model, _, policy, _, _), (curve, seconds) in items:
            result = out.setdefault(model, StreamingResult(model=model, n_tokens=n, window=window,
                                                           sinks=sinks))
            result.nll[policy], result.seconds[policy] = curve, seconds
        return [out[m] for m in sorted(out)]


def run_streaming(model_name: str, model, ids: Sequence[int], window: int, sinks: int,
                  cache: StreamingCache, policies: Optional[Sequence[str]] = None, chunk: int = 256,
                  progress: Optional[Callable[[float, str], None]] = None) -> StreamingResult:
    """All policies for one model; each curve measured once per key and then reused. The cache
    belongs to the app instance (made in the tab's build): the curves are deterministic for their
    key, so every visitor may share them, but no module-level state holds them."""
    result = StreamingResult(model=model_name, n_tokens=len(ids), window=window, sinks=sinks)
    if policies is None:
        policies = policies_for(model.config)
    for index, policy in enumerate(policies):
        key = (model_name, len(ids), policy, window, sinks)
        hit = cache.get(key)
        if hit is None:
            label = policy_label(policy, window, sinks)

            def report(fraction, index=index, label=label):
                if progress is not None:
                    progress((index + fraction) / len(policies), f"{label}: {fraction:.0%}")

            start = time.perf_counter()
            curve = streaming_nll(model, ids, policy, window, sinks, chunk, report)
            hit = (curve, time.perf_counter() - start)
            cache.put(key, hit)
        result.nll[policy], result.seconds[policy] = hit
    return result


def rolling_mean(values: np.ndarray, width: int) -> np.ndarray:
    """Mean over the last `width` values at each position (shorter at the start)."""
    cumsum = np.concatenate([[0.0], np.cumsum(values)])
    idx = np.arange(1, len(values) + 1)
    lo = np.maximum(0, idx - width)
    return (cumsum[idx] - cumsum[lo]) / (idx - lo)


def streaming_figure(results: Sequence[StreamingResult], smooth: int = 64, lang: str = "en"):
    """Perplexity (exp of the rolling mean NLL) against position, one line per policy and model.
    Text in `lang`."""
    import plotly.graph_objects as go

    colors = {"full": "#000000", "window": "#D55E00", "sinks": "#0072B2", SINKS_GLOBAL: "#009E73"}
    dashes = ["solid", "dot", "dash"]
    fig = go.Figure()
    shown = []
    for m, result in enumerate(results):
        for policy, curve in result.nll.items():
            y = np.exp(rolling_mean(curve, smooth))
            shown.append(y[min(len(y) - 1, smooth // 2):])
            label = f"{result.model}: {policy_label(policy, result.window, result.sinks, lang)}"
            fig.add_trace(go.Scatter(
                x=np.arange(1, len(curve) + 1), y=np.round(y, 3), mode="lines", name=label,
                line=dict(color=colors[policy], dash=dashes[m % len(dashes)], width=1.6),
                hovertemplate=_text("attention.fig.stream.hover", lang, label=label, smooth=smooth)
                + "<extra></extra>"))
    if results:
        fig.add_vline(x=results[0].window, line=dict(color="grey", dash="dot"),
                      annotation_text="w", annotation_position="top")
    fig.update_layout(title=_text("attention.fig.stream.title", lang, smooth=smooth),
                      height=460, margin=dict(l=10, r=10, t=50, b=10),
                      legend=dict(orientation="h", y=-0.2))
    fig.update_xaxes(title=_text("attention.fig.stream.x", lang))
    # the first few positions have almost no context (perplexity in the thousands): keep the
    # y range on the rest, where the policies differ
    y_range = None
    if shown:
        values = np.concatenate(shown)
        y_range = [math.log10(values.min() * 0.8), math.log10(values.max() * 1.5)]
    fig.update_yaxes(title=_text("attention.fig.stream.y", lang), type="log", range=y_range)
    return fig


def streaming_summary(result: StreamingResult) -> dict:
    """Measured perplexities over the tokens past the window (where the policies differ)."""
    past = result.window + result.sinks
    ppl = {p: result.perplexity(p, past) for p in result.nll}
    out = {"past_window_from": past, "perplexity": ppl, "seconds": dict(result.seconds)}
    if "full" in ppl:
        out["ratio"] = {p: ppl[p] / ppl["full"] for p in ppl}
    return out


COLLAPSE_RATIO = 5.0    # "falls apart": perplexity past the window at least 5x the full cache
DEGRADE_RATIO = 1.25    # a clear degradation, short of falling apart


def streaming_verdict(summary: dict) -> dict:
    """Classify what the numbers say; the UI picks its sentence from this, never in advance.
    window-only: "collapses" (>= 5x full), "degrades" (>= 1.25x) or "unchanged"; and the share
    of that gap the sink tokens close."""
    ratio = summary.get("ratio", {})
    window_ratio = ratio.get("window", float("nan"))
    sinks_ratio = ratio.get("sinks", float("nan"))
    if window_ratio >= COLLAPSE_RATIO:
        window_effect = "collapses"
    elif window_ratio >= DEGRADE_RATIO:
        window_effect = "degrades"
    else:
        window_effect = "unchanged"
    gap = window_ratio - 1.0
    closed = (window_ratio - sinks_ratio) / gap if gap > 1e-9 else float("nan")
    out = {"window_effect": window_effect, "window_collapses": window_effect == "collapses",
           "sinks_help": bool(sinks_ratio < window_ratio),
           "sinks_recover": bool(sinks_ratio <= DEGRADE_RATIO),
           "gap_closed": closed, "window_ratio": window_ratio, "sinks_ratio": sinks_ratio}
    if SINKS_GLOBAL in ratio:
        global_ratio = ratio[SINKS_GLOBAL]
        out["sinks_global_ratio"] = global_ratio
        out["sinks_global_closed"] = (window_ratio - global_ratio) / gap if gap > 1e-9 else float("nan")
    return out
