"""StreamingLLM (claim C10) on the real model: per-token negative log-likelihood along a long
text for full cache, window only (first tokens evicted) and sinks + window. The text goes in
chunks through the engine's own KV cache built for that mask (`model.new_cache(n,
RunOptions(mask))`: a ring buffer, or sinks + ring), which is what a server with that eviction
policy would do; the engine's tests prove cached == full forward under the same mask.
"""
from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable, Generator, Optional, Sequence

import numpy as np
import torch
import torch.nn.functional as F

from explorer.attention import (LONG_TEXT_MAX, Deadline, Progress, check_deadline, drain, long_ids,
                                model_title)
from explorer import masks
from explorer.inputs import whole_number
from explorer.locales import Term, text
from explorer.masks import POLICIES
from explorer.plotting import OKABE_ITO, Fig
from models.config import SLIDING
from models.forward import RunOptions

# ----------------------------------------------------------------------------- StreamingLLM

# Models with sliding-window layers (Gemma 3) get a fourth policy: sinks kept in the global
# layers only, the local layers keep just the window (as in the checkpoint, whose local layers
# never see a token more than their window back).
SINKS_GLOBAL = "sinks_global"


def policies_for(config) -> tuple[str, ...]:
    return POLICIES + ((SINKS_GLOBAL,) if SLIDING in config.layer_types else ())


def policy_label(policy: str, window: int, sinks: int, lang: str = "en") -> str:
    return text(f"attention.fig.policy.{policy}", lang, w=window, s=sinks)


def policy_mask_option(model, policy: str, window: int, sinks: int):
    """RunOptions.mask for a policy: one MaskSpec for all layers, or, for SINKS_GLOBAL, one per
    layer (sinks only where the layer is global; sliding layers get the window alone)."""
    if policy != SINKS_GLOBAL:
        return masks.choose(policy, window, sinks, kinds=POLICIES)
    return tuple(masks.choose(masks.WINDOW if kind == SLIDING else masks.SINKS, window, sinks)
                 for kind in model.config.layer_types)


def chunk_count(n_tokens: int, chunk: int) -> int:
    """Forward passes streaming_nll makes over n_tokens tokens (the last token is only a target)."""
    return math.ceil((n_tokens - 1) / chunk)


@torch.inference_mode()    # torch wraps a generator: inference mode holds inside each step
def nll_steps(model, ids: Sequence[int], policy: str, window: int = 256, sinks: int = 4,
              chunk: int = 256) -> Generator[int, None, np.ndarray]:
    """streaming_nll one forward at a time: yields the tokens scored so far after each chunk's
    forward, returns the NLL curve. Stopping it between two yields stops the forwards."""
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
        yield stop
    return nll.numpy()


def streaming_nll(model, ids: Sequence[int], policy: str, window: int = 256, sinks: int = 4,
                  chunk: int = 256, progress: Optional[Callable[[float], None]] = None) -> np.ndarray:
    """NLL (nats) of token t+1 given tokens <= t, for t = 0 .. n-2, under the eviction policy.
    Chunked prefill through the engine's cache for that mask keeps memory bounded by
    chunk x (window or n) scores per layer and chunk x vocab logits."""
    report = None if progress is None else (lambda scored: progress(scored / (len(ids) - 1)))
    return drain(nll_steps(model, ids, policy, window, sinks, chunk), report)


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


def streaming_steps(model_name: str, model, ids: Sequence[int], window: int, sinks: int,
                    cache: StreamingCache, policies: Optional[Sequence[str]] = None,
                    chunk: int = 256, deadline: Optional[Deadline] = None
                    ) -> Generator[Progress, None, StreamingResult]:
    """All policies for one model, one forward per step: yields a Progress after every forward
    (stage = the policy), returns the StreamingResult. A curve already in `cache` costs no
    forward. `deadline` is checked before every forward. The cache belongs to the app instance
    (made in the tab's build): the curves are deterministic for their key, so every visitor may
    share them, but no module-level state holds them."""
    result = StreamingResult(model=model_name, n_tokens=len(ids), window=window, sinks=sinks)
    if policies is None:
        policies = policies_for(model.config)
    missing = [p for p in policies if cache.get((model_name, len(ids), p, window, sinks)) is None]
    per_policy = chunk_count(len(ids), chunk)
    total, done = per_policy * len(missing), 0
    if missing:
        yield Progress(0, total, missing[0])
    for policy in policies:
        key = (model_name, len(ids), policy, window, sinks)
        hit = cache.get(key)
        if hit is None:
            start = time.perf_counter()
            steps = nll_steps(model, ids, policy, window, sinks, chunk)
            for _ in range(per_policy):
                check_deadline(deadline, done, total)
                next(steps)
                done += 1
                yield Progress(done, total, policy)
            curve = drain(steps)
            hit = (curve, time.perf_counter() - start)
            cache.put(key, hit)
        result.nll[policy], result.seconds[policy] = hit
    return result


def run_streaming(model_name: str, model, ids: Sequence[int], window: int, sinks: int,
                  cache: StreamingCache, policies: Optional[Sequence[str]] = None, chunk: int = 256,
                  progress: Optional[Callable[[float, str], None]] = None) -> StreamingResult:
    """streaming_steps drained; `progress(fraction, policy label)` after every forward."""
    report = None if progress is None else (
        lambda step: progress(step.fraction, policy_label(step.stage, window, sinks)))
    return drain(streaming_steps(model_name, model, ids, window, sinks, cache, policies, chunk), report)


def rolling_mean(values: np.ndarray, width: int) -> np.ndarray:
    """Mean over the last `width` values at each position (shorter at the start)."""
    cumsum = np.concatenate([[0.0], np.cumsum(values)])
    idx = np.arange(1, len(values) + 1)
    lo = np.maximum(0, idx - width)
    return (cumsum[idx] - cumsum[lo]) / (idx - lo)


def streaming_figure(results: Sequence[StreamingResult], smooth: int = 64, lang: str = "en"):
    """Perplexity (exp of the rolling mean NLL) against position, one line per policy and model.
    Text in `lang`."""
    colors = {"full": OKABE_ITO["black"], "window": OKABE_ITO["vermillion"], "sinks": OKABE_ITO["blue"],
              SINKS_GLOBAL: OKABE_ITO["green"]}
    dashes = ["solid", "dot", "dash"]
    fig = Fig()
    shown = []
    for m, result in enumerate(results):
        for policy, curve in result.nll.items():
            y = np.exp(rolling_mean(curve, smooth))
            shown.append(y[min(len(y) - 1, smooth // 2):])
            label = f"{result.model}: {policy_label(policy, result.window, result.sinks, lang)}"
            fig.add_scatter(
                x=np.arange(1, len(curve) + 1), y=np.round(y, 3), mode="lines", name=label,
                line=dict(color=colors[policy], dash=dashes[m % len(dashes)], width=1.6),
                hovertemplate=text("attention.fig.stream.hover", lang, label=label, smooth=smooth)
                + "<extra></extra>")
    if results:
        w = results[0].window
        fig.add_shape(type="line", x0=w, x1=w, xref="x", y0=0, y1=1, yref="paper",
                      line=dict(color="grey", dash="dot"))
        fig.add_annotation(text="w", x=w, xref="x", y=1, yref="paper", xanchor="center",
                           yanchor="bottom", showarrow=False)
    fig.update_xaxes(title_text=text("attention.fig.stream.x", lang))
    # the first few positions have almost no context (perplexity in the thousands): keep the
    # y range on the rest, where the policies differ
    y_range = None
    if shown:
        values = np.concatenate(shown)
        y_range = [math.log10(values.min() * 0.8), math.log10(values.max() * 1.5)]
    fig.update_yaxes(title_text=text("attention.fig.stream.y", lang), type="log")
    if y_range is not None:
        fig.update_yaxes(range=y_range)
    return fig.finish(text("attention.fig.stream.title", lang, smooth=smooth), height=480, lang=lang)


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
LAYER_KIND_MARGIN = 1.05  # sinks in every layer vs global layers only: a change beyond 5% counts


def local_sinks_effect(sinks_ratio: float, global_ratio: float) -> str:
    """What keeping the sinks in the sliding-window layers too does, read from the two measured
    policies that differ only there: "hurts", "helps" or "same" (within LAYER_KIND_MARGIN)."""
    if sinks_ratio > global_ratio * LAYER_KIND_MARGIN:
        return "hurts"
    if sinks_ratio * LAYER_KIND_MARGIN < global_ratio:
        return "helps"
    return "same"


def eviction_hurts(verdict: dict) -> bool:
    """Claim C10's StreamingLLM criterion: evicting the first tokens degrades (or collapses) the
    perplexity past the window, and keeping the sinks brings it down again."""
    return verdict["window_effect"] != "unchanged" and verdict["sinks_help"]


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
        out["local_sinks"] = local_sinks_effect(sinks_ratio, global_ratio)
    return out


# ----------------------------------------------------------------------------- the experiment


@dataclass(frozen=True)
class StreamingRun:
    """One model's curves for (n, w, s), then those of the other models this server already
    measured with the same settings (drawn on the same chart)."""
    title: str
    curves: tuple                    # StreamingResult, this model first
    own_window: Optional[int]        # the model's own sliding window (None: all global)

    @property
    def this(self) -> StreamingResult:
        return self.curves[0]

    @property
    def numbers(self) -> dict:
        """Perplexities and ratios past the window, and what they say (streaming_verdict)."""
        numbers = streaming_summary(self.this)
        return {**numbers, **streaming_verdict(numbers)}


def check_settings(n_tokens: Any, window: Any, sinks: Any) -> tuple[int, int, int]:
    n_tokens = whole_number(n_tokens, Term("attention.name.tokens"), 64, LONG_TEXT_MAX)
    window = whole_number(window, masks.WINDOW_NAME, 1, n_tokens - 1)
    sinks = whole_number(sinks, masks.SINKS_NAME, 1)
    masks.choose(masks.SINKS, window, sinks)   # the rule between them: s < w
    return n_tokens, window, sinks


def steps(loaded: Any, n_tokens: Any, window: Any, sinks: Any, cache: StreamingCache,
          deadline: Optional[Deadline] = None) -> Generator[Progress, None, StreamingRun]:
    """All policies for the loaded model on the first n tokens of the long text, one forward per
    step (each curve measured once per key in `cache`); returns the run, with the other models'
    curves for the same settings. Inputs are checked before the first forward."""
    n_tokens, window, sinks = check_settings(n_tokens, window, sinks)
    ids = long_ids(loaded.tokenizer, n_tokens)
    result = yield from streaming_steps(loaded.name, loaded.model, ids, window, sinks, cache,
                                        deadline=deadline)
    others = [r for r in cache.results(n_tokens, window, sinks)
              if r.model != loaded.name and len(r.nll) >= len(POLICIES)]
    return StreamingRun(title=model_title(loaded), curves=(result, *others),
                        own_window=loaded.config.sliding_window)


def run(loaded: Any, n_tokens: Any, window: Any, sinks: Any, cache: StreamingCache,
        deadline: Optional[Deadline] = None) -> StreamingRun:
    """steps(...) drained to its result."""
    return drain(steps(loaded, n_tokens, window, sinks, cache, deadline))


def data(run_: StreamingRun) -> dict:
    this = run_.this
    return {"model": this.model, "title": run_.title, "n_tokens": this.n_tokens,
            "window": this.window, "sinks": this.sinks, **run_.numbers, "own_window": run_.own_window,
            "other_models": [r.model for r in run_.curves[1:]]}


def figures(run_: StreamingRun, lang: str = "en") -> tuple:
    return (streaming_figure(run_.curves, lang=lang),)


def summary(run_: StreamingRun, lang: str = "en") -> str:
    return summary_text(data(run_), lang)


def summary_text(numbers: dict, lang: str = "en") -> str:
    """The table and the sentences under the chart, each chosen from the measured numbers."""
    rows = []
    for policy, ppl in numbers["perplexity"].items():
        rows.append(f"| {policy_label(policy, numbers['window'], numbers['sinks'], lang)} | {ppl:.2f} | "
                    f"{numbers['ratio'][policy]:.2f}× | {numbers['seconds'][policy]:.0f} s |")
    out = text("attention.stream_table", lang, past=numbers["past_window_from"],
               model=numbers["title"], n=numbers["n_tokens"], rows="\n".join(rows))
    out += "\n\n" + text("attention.stream_" + numbers["window_effect"], lang,
                         window_ratio=numbers["window_ratio"])
    closed = numbers["gap_closed"]
    if numbers["sinks_help"] and isinstance(closed, float) and math.isfinite(closed):
        out += text("attention.stream_sinks", lang, s=numbers["sinks"],
                    sinks_ratio=numbers["sinks_ratio"], closed=closed)
    elif not numbers["sinks_help"]:
        out += text("attention.stream_sinks_worse", lang, s=numbers["sinks"],
                    sinks_ratio=numbers["sinks_ratio"])
    if numbers.get("sinks_global_ratio") is not None:
        out += text("attention.stream_sinks_global", lang, global_ratio=numbers["sinks_global_ratio"])
        out += text("attention.stream_local_" + numbers["local_sinks"], lang,
                    global_ratio=numbers["sinks_global_ratio"], sinks_ratio=numbers["sinks_ratio"],
                    margin=LAYER_KIND_MARGIN - 1)
    if numbers.get("other_models"):
        out += "\n\n" + text("attention.stream_other", lang, models=", ".join(numbers["other_models"]))
    return out
