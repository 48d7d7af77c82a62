"""Attention maps of the loaded model, the mask drawn from the same predicate the model used,
the grouped-query layout, the next-token shift a mask causes, and the cost of local vs global
layers. Plain functions returning data, plus Plotly figure builders; no Gradio here.

Every map comes from a real forward of our modules with a Recorder on one layer (eager or tiled
path, the only ones that return probabilities). The mask next to it is
`ctx.layer_masks[layer].visible(positions, kv_pos)`: the MaskSpec object that forward used for
that layer, evaluated on the key positions it recorded.

Sinks and the StreamingLLM experiment live in explorer/sinks.py, the receptive-field probe in
explorer/receptive_field.py.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Optional, Sequence

import numpy as np
import torch
import torch.nn.functional as F

from explorer.locales import text as locale_text
from explorer.inputs import InputError, finite_number, whole_number
from models.attention import MaskSpec
from models.config import SLIDING
from models.forward import Recorder, RunOptions
from models.kv_cache import KVCache

MAX_TOKENS_CPU = 512        # prompt + generated tokens on a CPU (one map stays ~1 s)
MAX_TOKENS_GPU = 2048
MAX_GENERATED = 32
GRID_CELLS = 128            # all-heads grid: maps larger than this are pooled for display
MASK_KINDS = ("causal", "window", "sinks", "sink_logit")
IMPLS = ("eager", "tiled")


@dataclass(frozen=True)
class MaskChoice:
    """What the visitor picked: causal, sliding window w, s sinks + window w, or a causal mask
    with a gpt-oss sink logit b."""
    kind: str = "causal"
    window: Optional[int] = None
    sinks: int = 0
    sink_logit: Optional[float] = None

    @property
    def spec(self) -> Optional[MaskSpec]:
        """The override handed to RunOptions(mask=...) (None: the checkpoint's own masks)."""
        if self.kind == "window":
            return MaskSpec(window=self.window)
        if self.kind == "sinks":
            return MaskSpec(window=self.window, sinks=self.sinks)
        return None

    def options(self, impl: str = "eager", **extra) -> RunOptions:
        return RunOptions(attn_impl=impl, mask=self.spec, sink_logit=self.sink_logit, **extra)

    @property
    def is_default(self) -> bool:
        return self.kind == "causal"

    def describe(self) -> str:
        if self.kind == "sink_logit":
            return f"causal + sink logit b = {self.sink_logit:g}"
        return self.spec.describe() if self.spec is not None else "the checkpoint's own masks"


def mask_choice(kind: Any, window: Any = None, sinks: Any = 0, sink_logit: Any = None) -> MaskChoice:
    """Validate the mask controls. Raises InputError (w < 1, s >= w, NaN, ...)."""
    if kind not in MASK_KINDS:
        raise InputError(f"Unknown mask {kind!r}; choose one of {', '.join(MASK_KINDS)}.")
    if kind == "causal":
        return MaskChoice()
    if kind == "sink_logit":
        b = finite_number(sink_logit, "The sink logit b")
        if abs(b) > 50:
            raise InputError(f"The sink logit b must be between -50 and 50, got {b:g}.")
        return MaskChoice(kind="sink_logit", sink_logit=b)
    w = whole_number(window, "The window w", 1)
    if kind == "window":
        return MaskChoice(kind="window", window=w)
    s = whole_number(sinks, "The number of sinks s", 0)
    if s >= w:
        raise InputError(f"The number of sinks s ({s}) must be smaller than the window w ({w}).")
    if s == 0:
        raise InputError("Sinks + window needs at least one sink (s ≥ 1); "
                                  "for none, choose the sliding window.")
    return MaskChoice(kind="sinks", window=w, sinks=s)


def max_tokens(device: torch.device | str) -> int:
    return MAX_TOKENS_GPU if torch.device(device).type == "cuda" else MAX_TOKENS_CPU


def encode_prompt(tokenizer, text: Any, limit: int) -> list[int]:
    """Token ids of the prompt (with the tokenizer's BOS, if it adds one). Raises on an empty
    or too long prompt."""
    if not isinstance(text, str) or not text.strip():
        raise InputError("Type a prompt first.")
    ids = tokenizer(text).input_ids
    if len(ids) > limit:
        raise InputError(f"The prompt is {len(ids)} tokens; the limit here is {limit}. "
                                  "Shorten it.")
    return [int(i) for i in ids]


def token_text(tokenizer, token_id: int) -> str:
    text = tokenizer.decode([int(token_id)])
    return text.replace("\n", "↵").replace("\t", "⇥") or "∅"


def visible_token(tokenizer, token_id: int) -> str:
    """A token with its whitespace made visible and its id, for tables (HTML collapses runs of
    spaces, so "  " and " " would look the same)."""
    text = tokenizer.decode([int(token_id)])
    shown = text.replace(" ", "␣").replace("\n", "↵").replace("\t", "⇥") or "∅"
    return f"{shown} (id {int(token_id)})"


def token_labels(tokenizer, ids: Sequence[int]) -> list[str]:
    """Axis labels "position: token", unique so a categorical axis keeps every token."""
    return [f"{i}: {token_text(tokenizer, t)}" for i, t in enumerate(ids)]


# ----------------------------------------------------------------------------- maps


@dataclass
class LayerMap:
    layer: int
    probs: torch.Tensor          # (H, T, S) fp32: rows sum to 1 - sink mass
    q_pos: torch.Tensor          # (T,) absolute query positions
    kv_pos: torch.Tensor         # (S,) absolute key positions (as recorded)
    layer_mask: MaskSpec         # the MaskSpec the forward used for this layer
    visible: torch.Tensor        # (T, S) bool: layer_mask.visible(q_pos, kv_pos)
    last_logits: torch.Tensor    # (V,) fp32: next-token logits under this mask
    choice: MaskChoice
    impl: str

    @property
    def row_sums(self) -> torch.Tensor:
        return self.probs.sum(-1)                       # (H, T)

    @property
    def sink_mass(self) -> torch.Tensor:
        """Mass the sink logit absorbed, per head and query row: 1 - row sum."""
        return 1.0 - self.row_sums


@torch.inference_mode()
def layer_attention(model, ids: Sequence[int], layer: int, choice: MaskChoice = MaskChoice(),
                    impl: str = "eager") -> LayerMap:
    """One real forward with a Recorder on `layer` only; returns that layer's probabilities,
    the mask it used and the next-token logits of the same forward."""
    n_layers = model.config.n_layers
    layer = whole_number(layer, "The layer", 0, n_layers - 1)
    if impl not in IMPLS:
        raise InputError(f"Unknown attention path {impl!r}; choose eager or tiled.")
    x = torch.tensor([list(ids)], dtype=torch.long, device=model.embed.weight.device)
    recorder = Recorder(["attn_probs"], layers=[layer])
    # "eager": the recorded layer runs the eager path (a Recorder asking for attn_probs makes
    # it), the other layers the fused SDPA path; "tiled" runs the tiled path in every layer.
    run_impl = "sdpa" if impl == "eager" else impl
    logits, ctx = model(x, options=choice.options(run_impl, last_logits_only=True),
                        recorder=recorder, return_context=True)
    kv_pos = recorder.get("kv_pos", layer).cpu()
    q_pos = ctx.positions.cpu()
    layer_mask = ctx.layer_masks[layer]
    return LayerMap(layer=layer, probs=recorder.get("attn_probs", layer)[0].float(), q_pos=q_pos,
                    kv_pos=kv_pos, layer_mask=layer_mask, visible=layer_mask.visible(q_pos, kv_pos),
                    last_logits=logits[0, -1].float().cpu(), choice=choice, impl=impl)


@torch.inference_mode()
def last_logits(model, ids: Sequence[int], options: Optional[RunOptions] = None) -> torch.Tensor:
    x = torch.tensor([list(ids)], dtype=torch.long, device=model.embed.weight.device)
    options = dataclasses.replace(options or RunOptions(), last_logits_only=True)
    return model(x, options=options)[0, -1].float().cpu()


@torch.inference_mode()
def greedy_continuation(model, ids: Sequence[int], n_new: int, choice: MaskChoice) -> list[int]:
    """`n_new` greedy tokens under the chosen mask, through the engine's cached generator."""
    from models.generate import SamplingParams, generate

    if n_new <= 0:
        return []
    steps = generate(model, ids, SamplingParams(max_new_tokens=n_new),
                     options=choice.options("sdpa"), eos_ids=[])
    return [step.token_id for step in steps]


def kl_divergence(p_logits: torch.Tensor, q_logits: torch.Tensor) -> float:
    """KL(P || Q) in nats between the softmaxes of two logit vectors."""
    log_p = F.log_softmax(p_logits.double(), -1)
    log_q = F.log_softmax(q_logits.double(), -1)
    return float((log_p.exp() * (log_p - log_q)).sum())


def next_token_table(tokenizer, base_logits: torch.Tensor, new_logits: torch.Tensor, k: int = 8):
    """Top tokens of the unmodified and the masked model, side by side (a pandas DataFrame),
    and KL(unmodified || masked)."""
    import pandas as pd

    p = torch.softmax(base_logits.double(), -1)
    q = torch.softmax(new_logits.double(), -1)
    top = list(dict.fromkeys(torch.topk(p, k).indices.tolist() + torch.topk(q, k).indices.tolist()))
    top.sort(key=lambda i: -float(p[i] + q[i]))
    frame = pd.DataFrame({
        "token": [visible_token(tokenizer, i) for i in top],
        "p unmodified": [round(float(p[i]), 4) for i in top],
        "p with this mask": [round(float(q[i]), 4) for i in top],
    })
    return frame, kl_divergence(base_logits, new_logits)


# ----------------------------------------------------------------------------- grouped-query view


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


# ----------------------------------------------------------------------------- local vs global


def layer_kinds(config) -> list[str]:
    return ["local" if kind == SLIDING else "global" for kind in config.layer_types]


@torch.inference_mode()
def local_global_costs(model, lengths: Sequence[int]) -> list[dict]:
    """Per sequence length n: score entries a forward of n tokens needs in one local and one
    global layer (counted from the model's own masks: visible (query, key) pairs), summed over
    all layers, and the KV-cache bytes each layer kind allocates (from model.new_cache(n))."""
    config = model.config
    masks = model.layer_masks()
    kinds = layer_kinds(config)
    rows = []
    for n in lengths:
        pos = torch.arange(n)
        counted: dict[MaskSpec, int] = {}
        per_layer = []
        for mask in masks:
            if mask not in counted:
                counted[mask] = int(mask.visible(pos, pos).sum())
            per_layer.append(counted[mask])
        # the engine's own cache layout for n tokens, on the meta device: sizes without memory
        cache = KVCache.for_model(config, masks, n, 1, model.embed.weight.dtype, "meta")
        cache_bytes = cache.allocated_bytes()
        row = {"n": n}
        for kind in ("local", "global"):
            idx = [i for i, k in enumerate(kinds) if k == kind]
            row[f"{kind} layers"] = len(idx)
            row[f"scores per {kind} layer"] = per_layer[idx[0]] * config.n_heads if idx else 0
            row[f"cache bytes per {kind} layer"] = cache_bytes[idx[0]] if idx else 0
        row["scores, all layers"] = sum(per_layer) * config.n_heads
        row["scores if all global"] = n * (n + 1) // 2 * config.n_heads * config.n_layers
        row["cache bytes, all layers"] = sum(cache_bytes)
        rows.append(row)
    return rows


# ----------------------------------------------------------------------------- figures

COLORSCALE = "Viridis"
MASK_COLORS = [[0.0, "#00204c"], [0.5, "#00204c"], [0.5, "#ffe945"], [1.0, "#ffe945"]]  # cividis ends




def _text(key: str, lang: Optional[str], **fields) -> str:
    return locale_text(key, lang, **fields)


def mask_text(mask: MaskSpec, lang: Optional[str] = "en") -> str:
    """The mask in `lang` (explorer.masks.describe)."""
    from explorer.masks import describe
    return describe(mask, lang)


def _pool(matrix: np.ndarray, cells: int) -> tuple[np.ndarray, int]:
    """Mean-pool a (T, S) matrix into at most cells x cells blocks; returns (pooled, factor)."""
    t, s = matrix.shape
    factor = max(1, math.ceil(max(t, s) / cells))
    if factor == 1:
        return matrix, 1
    tp, sp = math.ceil(t / factor) * factor, math.ceil(s / factor) * factor
    padded = np.full((tp, sp), np.nan, dtype=np.float64)
    padded[:t, :s] = matrix
    blocks = padded.reshape(tp // factor, factor, sp // factor, factor)
    return np.nanmean(blocks, axis=(1, 3)), factor


def attention_figure(layer_map: LayerMap, labels: Sequence[str], head: Optional[int],
                     n_prompt: Optional[int] = None, model_title: str = "",
                     n_kv_heads: Optional[int] = None, lang: str = "en"):
    """One head at full resolution, or all heads in a grid (pooled above GRID_CELLS tokens).
    Hover names the query token, key token, layer and head. Text in `lang`."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    probs = layer_map.probs.numpy()
    n_heads = probs.shape[0]
    q_labels = [labels[int(p)] for p in layer_map.q_pos]
    k_labels = [labels[int(p)] for p in layer_map.kv_pos]
    layer = layer_map.layer
    if head is not None:
        fig = go.Figure(go.Heatmap(
            z=np.round(probs[head], 5), x=k_labels, y=q_labels, colorscale=COLORSCALE, zmin=0,
            colorbar=dict(title=_text("attention.fig.probability", lang)),
            hovertemplate=_text("attention.fig.hover_one", lang, layer=layer, head=head) + "<extra></extra>"))
        fig.update_layout(title=_text("attention.fig.title_one", lang, model=model_title, layer=layer,
                                      head=head).strip())
        fig.update_xaxes(title=_text("attention.fig.key_axis", lang), type="category", tickangle=-60)
        fig.update_yaxes(title=_text("attention.fig.query_axis", lang), type="category", autorange="reversed")
        if n_prompt is not None and n_prompt < len(q_labels):
            fig.add_hline(y=n_prompt - 0.5, line=dict(color="white", dash="dash", width=1))
        fig.update_layout(height=640, margin=dict(l=10, r=10, t=50, b=10))
        return fig
    cols = 3 if n_heads > 4 else 2
    rows = math.ceil(n_heads / cols)
    n_rep = max(1, n_heads // max(1, n_kv_heads or n_heads))
    fig = make_subplots(rows=rows, cols=cols,
                        subplot_titles=[_text("attention.fig.head_title", lang, h=h, kv=h // n_rep)
                                        for h in range(n_heads)],
                        horizontal_spacing=0.04, vertical_spacing=0.06)
    pooled_heads = [_pool(probs[h], GRID_CELLS) for h in range(n_heads)]
    factor = pooled_heads[0][1]
    # block means are small: one shared scale up to the largest mean keeps heads comparable
    zmax = 1.0 if factor == 1 else float(max(np.nanmax(p) for p, _ in pooled_heads))
    for h in range(n_heads):
        pooled, factor = pooled_heads[h]
        t_idx = np.arange(pooled.shape[0]) * factor
        s_idx = np.arange(pooled.shape[1]) * factor
        if factor == 1:
            xs, ys = [k_labels[i] for i in s_idx], [q_labels[i] for i in t_idx]
            hover = _text("attention.fig.hover_one", lang, layer=layer, head=h) + "<extra></extra>"
        else:
            xs = [f"{k_labels[i]} … +{factor - 1}" for i in s_idx]
            ys = [f"{q_labels[i]} … +{factor - 1}" for i in t_idx]
            hover = _text("attention.fig.hover_block", lang, layer=layer, head=h, f=factor) + "<extra></extra>"
        fig.add_trace(go.Heatmap(z=np.round(pooled, 5), x=xs, y=ys, colorscale=COLORSCALE, zmin=0,
                                 zmax=zmax, showscale=h == 0,
                                 colorbar=dict(title=_text("attention.fig.probability" if factor == 1
                                                           else "attention.fig.block_mean", lang)),
                                 hovertemplate=hover),
                      row=h // cols + 1, col=h % cols + 1)
    fig.update_xaxes(showticklabels=False, type="category")
    fig.update_yaxes(showticklabels=False, type="category", autorange="reversed")
    for c in range(1, cols + 1):
        fig.update_xaxes(title_text=_text("attention.fig.key_arrow", lang), row=rows, col=c)
    for r in range(1, rows + 1):
        fig.update_yaxes(title_text=_text("attention.fig.query_arrow", lang), row=r, col=1)
    pooled_note = _text("attention.fig.pooled", lang, f=factor) if factor > 1 else ""
    fig.update_layout(title=_text("attention.fig.title_all", lang, model=model_title, layer=layer,
                                  n=n_heads, pooled=pooled_note).strip(),
                      height=300 * rows + 60, margin=dict(l=10, r=10, t=70, b=10))
    return fig


def mask_figure(layer_map: LayerMap, labels: Sequence[str], lang: str = "en"):
    """The (T, S) mask of this layer, from the same MaskSpec the forward used. Text in `lang`."""
    import plotly.graph_objects as go

    visible = layer_map.visible.numpy().astype(np.int8)
    q_labels = [labels[int(p)] for p in layer_map.q_pos]
    k_labels = [labels[int(p)] for p in layer_map.kv_pos]
    fig = go.Figure(go.Heatmap(
        z=visible, x=k_labels, y=q_labels, colorscale=MASK_COLORS, zmin=0, zmax=1, showscale=False,
        hovertemplate=_text("attention.fig.mask_hover", lang, layer=layer_map.layer) + "<extra></extra>"))
    fig.update_layout(title=_text("attention.fig.mask_title", lang, layer=layer_map.layer,
                                  mask=mask_text(layer_map.layer_mask, lang)),
                      height=640, margin=dict(l=10, r=10, t=50, b=10))
    fig.update_xaxes(title=_text("attention.fig.key_token", lang), type="category", showticklabels=False)
    fig.update_yaxes(title=_text("attention.fig.query_token", lang), type="category", autorange="reversed",
                     showticklabels=False)
    return fig


def head_groups_figure(config, title: str = "", lang: str = "en"):
    """Query heads (top) joined to the KV head they read (bottom). Text in `lang`."""
    import plotly.graph_objects as go

    groups = head_groups(config)
    n_q, n_kv = config.n_heads, config.n_kv_heads
    palette = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000"]
    fig = go.Figure()
    xq = np.linspace(0, 1, n_q) if n_q > 1 else np.array([0.5])
    xkv = np.array([np.mean([xq[h] for h in group]) for group in groups])
    for j, group in enumerate(groups):
        color = palette[j % len(palette)]
        for h in group:
            fig.add_trace(go.Scatter(x=[xq[h], xkv[j]], y=[1, 0], mode="lines",
                                     line=dict(color=color, width=2), hoverinfo="skip",
                                     showlegend=False))
        fig.add_trace(go.Scatter(
            x=[xq[h] for h in group], y=[1] * len(group), mode="markers+text",
            marker=dict(size=26, color=color, symbol="circle"),
            text=[f"q{h}" for h in group], textposition="top center",
            name=_text("attention.fig.kv_group", lang, j=j, first=group[0], last=group[-1]),
            hovertemplate=[_text("attention.fig.reads", lang, h=h, j=j) + "<extra></extra>" for h in group]))
        fig.add_trace(go.Scatter(x=[xkv[j]], y=[0], mode="markers+text",
                                 marker=dict(size=34, color=color, symbol="square"),
                                 text=[f"kv{j}"], textposition="bottom center", showlegend=False,
                                 hovertemplate=_text("attention.fig.shared", lang, j=j, n=len(group))
                                 + "<extra></extra>"))
    fig.update_layout(title=_text("attention.fig.groups_title", lang, title=title, n_q=n_q, n_kv=n_kv,
                                  plural="s" if n_kv > 1 else "").strip(),
                      height=330, margin=dict(l=10, r=10, t=50, b=10),
                      legend=dict(orientation="h", y=-0.15))
    fig.update_xaxes(visible=False, range=[-0.08, 1.08])
    fig.update_yaxes(visible=False, range=[-0.45, 1.45])
    return fig


def layer_strip_figure(config, title: str = "", lang: str = "en"):
    """One cell per layer: local (sliding window) or global. Text in `lang`."""
    import plotly.graph_objects as go

    kinds = layer_kinds(config)
    z = [[1 if k == "global" else 0 for k in kinds]]
    text = [[(_text("attention.fig.global_cell", lang) if k == "global"
              else _text("attention.fig.local_cell", lang, w=config.sliding_window)) for k in kinds]]
    fig = go.Figure(go.Heatmap(
        z=z, x=list(range(len(kinds))), y=[_text("attention.fig.layer_type", lang)], colorscale=MASK_COLORS,
        zmin=0, zmax=1, showscale=False, customdata=text, xgap=2,
        hovertemplate=_text("attention.fig.strip_hover", lang) + "<extra></extra>"))
    n_global = kinds.count("global")
    fig.update_layout(title=_text("attention.fig.strip_title", lang, title=title,
                                  n_local=len(kinds) - n_global, n_global=n_global).strip(),
                      height=170, margin=dict(l=10, r=10, t=50, b=40))
    fig.update_xaxes(title=_text("attention.fig.layer", lang), dtick=1)
    return fig


def local_global_figure(rows: Sequence[dict], lang: str = "en"):
    """Score entries per layer vs n, local and global, on log axes. Text in `lang`."""
    import plotly.graph_objects as go

    ns = [r["n"] for r in rows]
    fig = go.Figure()
    for kind, color in (("global", "#E69F00"), ("local", "#0072B2")):
        if rows and rows[0][f"{kind} layers"]:
            name = _text(f"attention.fig.one_{kind}", lang)
            fig.add_trace(go.Scatter(x=ns, y=[r[f"scores per {kind} layer"] for r in rows],
                                     mode="lines+markers", name=name, line=dict(color=color),
                                     hovertemplate=_text("attention.fig.cost_hover", lang, kind=name)
                                     + "<extra></extra>"))
    fig.update_layout(title=_text("attention.fig.cost_title", lang),
                      height=380, margin=dict(l=10, r=10, t=50, b=10))
    fig.update_xaxes(title=_text("attention.fig.cost_x", lang), type="log")
    fig.update_yaxes(title=_text("attention.fig.cost_y", lang), type="log")
    return fig
