"""RoPE, measured: per-pair frequencies for several bases, one pair of a real q vector rotating,
the relative-position (Toeplitz) property on the real model's q and k, attention against
distance, and perplexity when the trained base is changed (claims C11, C12, C13).

Plain functions returning data (tensors, DataFrames) plus Plotly figure builders; no Gradio.
Every rotation goes through models.layers (rope_inv_freq, rope_cos_sin, apply_rope): the same
code the model runs, never a second RoPE. Bad inputs raise InputError (a ValueError) with a
sentence a visitor can act on; the tab turns it into gr.Error.
"""
from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass
from typing import Callable, Optional, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import torch
import torch.nn.functional as F
from plotly.colors import sample_colorscale

from explorer.locales import template as locale_template, text as locale_text
from explorer.inputs import InputError, finite_number, whole_number
from models.config import SLIDING
from models.forward import Recorder, RunOptions
from explorer.rope.frequencies import (  # the bases, shared by every section
    MAX_BASES, MAX_CONTEXT, MAX_HEAD_DIM, base_label, check_base, check_head_dim, parse_bases)
from models.layers import apply_rope, rope_cos_sin, rope_inv_freq

MAX_CAPTURE_TOKENS = 512
MAX_TOEPLITZ_POSITIONS = 512
MAX_SWEEP_TOKENS = 4096
APPLY_TO = ("full", "sliding", "all")  # which layers a changed base applies to

Progress = Callable[[float, str], None]


# scaling_table's method names (data, English) -> their locale key for the legend
METHOD_KEYS = {"original": "rope.fig.method.original", "linear interpolation (PI)": "rope.fig.method.linear",
               "NTK-aware": "rope.fig.method.ntk", "YaRN": "rope.fig.method.yarn"}


def _text(key: str, lang: Optional[str], **fields) -> str:
    return locale_text(key, lang, **fields)


def _template(key: str, lang: Optional[str]) -> str:
    return locale_template(key, lang)


# ============================================================================ input checks

def check_text(text) -> str:
    if not isinstance(text, str) or not text.strip():
        raise InputError("The text is empty: type a sentence or two.")
    return text


_AXIS = dict(gridcolor="#e5e5e5", linecolor="#444", zerolinecolor="#cccccc", ticks="outside",
             showline=True, mirror=False)


def _figure(height: int, two_panels: Optional[tuple] = None, **layout) -> go.Figure:
    """A white figure without Plotly's template machinery (template=None): setting a template or
    calling make_subplots costs ~35-100 ms per figure, more than the data itself. two_panels =
    (left title, right title) lays out x/y and x2/y2 side by side."""
    base = dict(template=None, height=height, plot_bgcolor="white", paper_bgcolor="white",
                font=dict(family="Arial, sans-serif", size=12, color="#2a3f5f"),
                margin=dict(l=60, r=20, t=50 if two_panels else 30, b=50),
                xaxis=dict(_AXIS), yaxis=dict(_AXIS), hovermode="closest")
    if two_panels:
        base["xaxis"].update(domain=[0.0, 0.44], anchor="y")
        base["yaxis"].update(anchor="x")
        base["xaxis2"] = dict(_AXIS, domain=[0.56, 1.0], anchor="y2")
        base["yaxis2"] = dict(_AXIS, anchor="x2")
        base["annotations"] = [
            dict(text=title, x=x, y=1.0, xref="paper", yref="paper", xanchor="center",
                 yanchor="bottom", showarrow=False, font=dict(size=15))
            for title, x in zip(two_panels, (0.22, 0.78))]
    base.update(layout)
    return go.Figure(layout=base)


def _panel(col: int) -> dict:
    return {} if col == 1 else {"xaxis": "x2", "yaxis": "y2"}


def _colors(n: int, scale: str = "Viridis") -> list[str]:
    # stop before the pale yellow end of viridis, which vanishes on white
    return sample_colorscale(scale, [0.0] if n == 1 else list(np.linspace(0.0, 0.85, n)))


# ============================================================================ captures

def _show(token: str) -> str:
    """A token string for hover text: quoted, newlines visible."""
    return repr(token)

@dataclass
class QKCapture:
    """q and k of one layer of the real model for one text, before and after RoPE."""
    tokens: list                 # token strings, in order
    layer: int
    layer_kind: str              # "full_attention" | "sliding_attention"
    theta_base: float            # the RoPE base this layer uses
    window: Optional[int]        # sliding window of this layer, None for full layers
    n_heads: int
    n_kv_heads: int
    attn_scale: float
    q_pre: torch.Tensor          # (H, T, D) fp32, before RoPE (after Gemma's q-norm)
    k_pre: torch.Tensor          # (Hkv, T, D)
    q: torch.Tensor              # (H, T, D) after RoPE, as the model used them
    k: torch.Tensor              # (Hkv, T, D)
    seconds: float = 0.0

    @property
    def head_dim(self) -> int:
        return self.q_pre.shape[-1]

    def kv_head(self, head: int) -> int:
        return head // (self.n_heads // self.n_kv_heads)  # GQA: consecutive q heads share one

    def inv_freq(self) -> torch.Tensor:
        return rope_inv_freq(self.head_dim, self.theta_base)


class _StopForward(Exception):
    pass


class _StopAfter(Recorder):
    """A Recorder that ends the forward once the last point it needs is saved: capturing layer
    3 of 30 then costs 4 layers, not 30 (the later layers cannot change what was recorded)."""

    def __init__(self, points, layer: int, last_point: str):
        super().__init__(points, layers=[layer])
        self._last = (last_point, layer)

    def save(self, point, layer, value):
        super().save(point, layer, value)
        if (point, layer) == self._last:
            raise _StopForward


def tokenize(tokenizer, text: str, max_tokens: int) -> list[int]:
    ids = tokenizer(text)["input_ids"][:max_tokens]
    if not ids:
        raise InputError("The text gives no tokens: type a sentence or two.")
    return [int(i) for i in ids]


def token_strings(tokenizer, ids: Sequence[int]) -> list[str]:
    return [tokenizer.decode([i]) for i in ids]


def _check_layer(config, layer) -> int:
    return whole_number(layer, "The layer", 0, config.n_layers - 1)


@torch.inference_mode()
def capture_qk(model, tokenizer, text, layer, max_tokens: int = 256) -> QKCapture:
    """Run the real model on `text` (truncated to max_tokens) up to `layer` and keep its q, k
    before and after RoPE."""
    import time

    config = model.config
    text = check_text(text)
    layer = _check_layer(config, layer)
    max_tokens = whole_number(max_tokens, "The number of tokens", 2, MAX_CAPTURE_TOKENS)
    ids = tokenize(tokenizer, text, max_tokens)
    device = model.embed.weight.device
    rec = _StopAfter(["q_pre_rope", "k_pre_rope", "q", "k"], layer, last_point="k")
    start = time.perf_counter()
    try:
        model(torch.tensor([ids], device=device), recorder=rec,
              options=RunOptions(last_logits_only=True))
    except _StopForward:
        pass
    seconds = time.perf_counter() - start
    get = lambda point: rec.get(point, layer)[0].float()  # noqa: E731  (B=1)
    kind = config.layer_types[layer]
    return QKCapture(
        tokens=token_strings(tokenizer, ids), layer=layer, layer_kind=kind,
        theta_base=float(config.layer_rope_theta(layer)),
        window=config.layer_window(layer), n_heads=config.n_heads, n_kv_heads=config.n_kv_heads,
        attn_scale=float(config.attn_scale), q_pre=get("q_pre_rope"), k_pre=get("k_pre_rope"),
        q=get("q"), k=get("k"), seconds=seconds)


def rope_reproduction_error(capture: QKCapture) -> float:
    """max |apply_rope(q_pre at its own position) − q the model used|, over heads and tokens:
    the rotation drawn here is the one the model applied."""
    t = capture.q_pre.shape[1]
    cos, sin = rope_cos_sin(torch.arange(t), capture.inv_freq(), torch.float32)
    q_err = (apply_rope(capture.q_pre, cos, sin) - capture.q).abs().max()
    k_err = (apply_rope(capture.k_pre, cos, sin) - capture.k).abs().max()
    return float(max(q_err, k_err))


# ============================================================================ one pair rotating

def pair_trajectory(vector: torch.Tensor, pair: int, inv_freq: torch.Tensor, positions: torch.Tensor):
    """The 2-D point (x_i, x_{i+d/2}) of `vector` (D,) rotated to each position: (P, 2) array.
    Computed by apply_rope on the whole vector, then read at dims (i, i + d/2)."""
    d = vector.shape[-1]
    cos, sin = rope_cos_sin(positions, inv_freq, torch.float32)
    rotated = apply_rope(vector.float().expand(len(positions), d), cos, sin)   # (P, D)
    return torch.stack([rotated[:, pair], rotated[:, pair + d // 2]], dim=-1).numpy()


def pair_figure(capture: QKCapture, head: int, token: int, pair: int, position: int,
                lang: str = "en") -> tuple[go.Figure, dict]:
    """Pair `pair` of the real q of `token` (head `head`) at positions 0..position, the point at
    `position` highlighted, and the model's own post-RoPE q at the token's real position.
    Text in `lang`."""
    d = capture.head_dim
    head = whole_number(head, "The head", 0, capture.n_heads - 1)
    token = whole_number(token, "The query token", 0, len(capture.tokens) - 1)
    pair = whole_number(pair, "The pair", 0, d // 2 - 1)
    position = whole_number(position, "The position", 0, MAX_CONTEXT)
    inv_freq = capture.inv_freq()
    vector = capture.q_pre[head, token]
    steps = torch.arange(position + 1) if position <= 2000 else torch.linspace(0, position, 2001).round().long()
    points = pair_trajectory(vector, pair, inv_freq, steps)
    theta = float(inv_freq[pair])
    radius = float(np.hypot(*points[0]))
    word = _show(capture.tokens[token])
    fig = _figure(460, legend=dict(orientation="h", y=-0.18))
    circle = np.linspace(0, 2 * math.pi, 181)
    fig.add_trace(go.Scatter(x=radius * np.cos(circle), y=radius * np.sin(circle), mode="lines",
                             line=dict(color="lightgray", width=1), hoverinfo="skip", showlegend=False))
    fig.add_trace(go.Scatter(
        x=points[:, 0], y=points[:, 1], mode="markers", name=_text("rope.fig.rotated", lang),
        marker=dict(size=5, color=steps.numpy(), colorscale="Viridis", showscale=True,
                    colorbar=dict(title=_text("rope.fig.position_m", lang), thickness=12)),
        hovertext=[_text("rope.fig.rotated_hover", lang, token=token, word=word, layer=capture.layer,
                         head=head, pair=pair, m=int(m), angle=int(m) * theta)
                   for m in steps], hoverinfo="text"))
    fig.add_trace(go.Scatter(x=[0, points[-1, 0]], y=[0, points[-1, 1]], mode="lines+markers",
                             name=_text("rope.fig.position", lang, position=position),
                             line=dict(color="#440154", width=3),
                             marker=dict(size=[0, 12], color="#440154"), hoverinfo="skip"))
    fig.add_trace(go.Scatter(x=[points[0, 0]], y=[points[0, 1]], mode="markers",
                             name=_text("rope.fig.before", lang), marker=dict(symbol="square", size=11,
                                                                              color="#21918c"),
                             hovertext=[_text("rope.fig.before_hover", lang, word=word)], hoverinfo="text"))
    real = capture.q[head, token]
    fig.add_trace(go.Scatter(x=[float(real[pair])], y=[float(real[pair + d // 2])], mode="markers",
                             name=_text("rope.fig.own", lang, token=token),
                             marker=dict(symbol="star", size=15, color="#fde725",
                                         line=dict(color="black", width=1)),
                             hovertext=[_text("rope.fig.own_hover", lang, word=word, token=token)],
                             hoverinfo="text"))
    limit = 1.15 * max(radius, 1e-6)
    fig.update_xaxes(title_text=_text("rope.fig.dim_axis", lang, dim=pair), range=[-limit, limit],
                     scaleanchor="y", zeroline=True, constrain="domain")
    fig.update_yaxes(title_text=_text("rope.fig.dim_axis", lang, dim=pair + d // 2),
                     range=[-limit, limit], zeroline=True)
    own = pair_trajectory(vector, pair, inv_freq, torch.tensor([token]))[0]
    facts = {"theta": theta, "wavelength": 2 * math.pi / theta, "radius": radius,
             "angle": position * theta, "turns": position * theta / (2 * math.pi),
             "own_position_error": float(np.abs(own - np.array([float(real[pair]),
                                                               float(real[pair + d // 2])])).max())}
    return fig, facts


# ============================================================================ C11, C12: Toeplitz

def placed_scores(q_vec: torch.Tensor, k_vec: torch.Tensor, inv_freq: torch.Tensor,
                  n_positions: int, rotate: str = "both") -> torch.Tensor:
    """S[m, n] = <R_m q, R_n k> (rotate="both") or <R_m q, k> (rotate="query"): one fixed q and
    one fixed k placed at every position 0..n_positions-1. (N, N), computed in float64: in
    fp32 the angles m·θ alone round to ~1e-5 rad, which at scores of ~100 hides the exact
    Toeplitz structure behind ~1e-4 noise. The vectors are the model's own."""
    if rotate not in ("both", "query"):
        raise ValueError(rotate)
    n_positions = whole_number(n_positions, "The number of positions", 2, MAX_TOEPLITZ_POSITIONS)
    d = q_vec.shape[-1]
    cos, sin = rope_cos_sin(torch.arange(n_positions), inv_freq.double(), torch.float64)
    q_rot = apply_rope(q_vec.double().expand(n_positions, d), cos, sin)        # (N, D) R_m q
    if rotate == "both":
        k_side = apply_rope(k_vec.double().expand(n_positions, d), cos, sin)   # (N, D) R_n k
    else:
        k_side = k_vec.double().expand(n_positions, d)                         # (N, D) k, unrotated
    return q_rot @ k_side.T                                                    # (N, N)


def diagonal_spread(scores: torch.Tensor) -> dict:
    """How far `scores` is from Toeplitz: for every diagonal n − m = δ the spread max − min of
    its entries; reported as the largest spread, and relative to the largest |score|."""
    n = scores.shape[0]
    per_offset = np.array([float(torch.diagonal(scores, offset).max() - torch.diagonal(scores, offset).min())
                           for offset in range(-(n - 1), n)])
    scale = float(scores.abs().max())
    worst = int(np.argmax(per_offset))
    return {"spread": float(per_offset.max()), "relative": float(per_offset.max()) / max(scale, 1e-30),
            "scale": scale, "worst_offset": worst - (n - 1), "per_offset": per_offset}


def relative_identity_error(q_vec, k_vec, inv_freq, n_positions: int) -> float:
    """max over m, n of |<R_m q, R_n k> − <q, R_{n−m} k>|: the identity behind C11/C12, checked
    with the rotations the model uses (negative offsets included)."""
    both = placed_scores(q_vec, k_vec, inv_freq, n_positions, "both")
    offsets = torch.arange(-(n_positions - 1), n_positions)
    cos, sin = rope_cos_sin(offsets, inv_freq.double(), torch.float64)
    d = k_vec.shape[-1]
    by_offset = apply_rope(k_vec.double().expand(len(offsets), d), cos, sin) @ q_vec.double()  # (2N-1,)
    m = torch.arange(n_positions)[:, None]
    n = torch.arange(n_positions)[None, :]
    expected = by_offset[(n - m) + n_positions - 1]
    return float((both - expected).abs().max() / max(float(both.abs().max()), 1e-30))


def scores_heatmap(scores: torch.Tensor, *, x_title: str, y_title: str, hover_prefix: str,
                   x_labels: Optional[list] = None, y_labels: Optional[list] = None,
                   colorbar: Optional[str] = None, lang: str = "en") -> go.Figure:
    """A score matrix as a heatmap; the titles come translated, the hover words in `lang`."""
    z = scores.numpy()
    n_rows, n_cols = z.shape
    x_labels = x_labels or [str(i) for i in range(n_cols)]
    y_labels = y_labels or [str(i) for i in range(n_rows)]
    cell = _template("rope.fig.cell_hover", lang)   # up to 512 x 512 cells: look the text up once
    text = [[cell.format(prefix=hover_prefix, query=y_labels[m], key=x_labels[n], offset=n - m)
             for n in range(n_cols)] for m in range(n_rows)]
    fig = _figure(420)
    colorbar = colorbar if colorbar is not None else _text("rope.fig.score", lang)
    fig.add_trace(go.Heatmap(z=z, colorscale="Cividis", colorbar=dict(title=dict(text=colorbar), thickness=12),
                             text=text, hovertemplate=_text("rope.fig.score_hover", lang) + "<extra></extra>"))
    fig.update_xaxes(title_text=x_title, constrain="domain")
    fig.update_yaxes(title_text=y_title, autorange="reversed", scaleanchor="x", constrain="domain")
    return fig


@dataclass
class ToeplitzResult:
    both: torch.Tensor
    query_only: torch.Tensor
    spread_both: dict
    spread_query: dict
    identity_error: float


def toeplitz(capture: QKCapture, head: int, q_token: int, k_token: int, n_positions: int) -> ToeplitzResult:
    head = whole_number(head, "The head", 0, capture.n_heads - 1)
    t = len(capture.tokens)
    q_token = whole_number(q_token, "The query token", 0, t - 1)
    k_token = whole_number(k_token, "The key token", 0, t - 1)
    n_positions = whole_number(n_positions, "The number of positions", 2, MAX_TOEPLITZ_POSITIONS)
    q_vec = capture.q_pre[head, q_token]
    k_vec = capture.k_pre[capture.kv_head(head), k_token]
    inv_freq = capture.inv_freq()
    both = placed_scores(q_vec, k_vec, inv_freq, n_positions, "both")
    one = placed_scores(q_vec, k_vec, inv_freq, n_positions, "query")
    return ToeplitzResult(both=both, query_only=one, spread_both=diagonal_spread(both),
                          spread_query=diagonal_spread(one),
                          identity_error=relative_identity_error(q_vec, k_vec, inv_freq, n_positions))


def toeplitz_figures(capture: QKCapture, result: ToeplitzResult, head: int, q_token: int, k_token: int,
                     lang: str = "en"):
    """(both rotated, only q rotated) heatmaps of a ToeplitzResult. Text in `lang`."""
    prefix = _text("rope.fig.qk_prefix", lang, q_token=q_token, q_word=_show(capture.tokens[q_token]),
                   k_token=k_token, k_word=_show(capture.tokens[k_token]), layer=capture.layer,
                   head=head, kv_head=capture.kv_head(head))
    query_title = _text("rope.fig.query_position", lang)
    both = scores_heatmap(result.both, x_title=_text("rope.fig.key_position", lang), y_title=query_title,
                          hover_prefix=_text("rope.fig.both_rotated", lang, prefix=prefix), lang=lang)
    one = scores_heatmap(result.query_only, x_title=_text("rope.fig.key_unrotated", lang),
                         y_title=query_title, hover_prefix=_text("rope.fig.q_rotated", lang, prefix=prefix),
                         lang=lang)
    return both, one


def real_scores(capture: QKCapture, head: int) -> torch.Tensor:
    """The layer's actual pre-softmax scores for the real sequence: q_m · k_n × scale with the
    model's rotations, −inf where the mask hides the key (causal, and the sliding window)."""
    head = whole_number(head, "The head", 0, capture.n_heads - 1)
    q, k = capture.q[head], capture.k[capture.kv_head(head)]            # (T, D), (T, D)
    scores = (q @ k.T) * capture.attn_scale                             # (T, T)
    t = scores.shape[0]
    m = torch.arange(t)[:, None]
    n = torch.arange(t)[None, :]
    visible = n <= m
    if capture.window is not None:
        visible &= (m - n) < capture.window
    return scores.masked_fill(~visible, float("nan"))


def real_scores_figure(capture: QKCapture, head: int, lang: str = "en") -> go.Figure:
    """The layer's actual scores on the captured sequence. Text in `lang`."""
    scores = real_scores(capture, head)
    labels = [f"{i} {_show(word)}" for i, word in enumerate(capture.tokens)]
    fig = scores_heatmap(scores, x_title=_text("rope.fig.real_key", lang),
                         y_title=_text("rope.fig.real_query", lang),
                         hover_prefix=_text("rope.fig.real_prefix", lang, layer=capture.layer, head=head),
                         x_labels=labels, y_labels=labels, colorbar=_text("rope.fig.scaled_score", lang),
                         lang=lang)
    return fig


# ============================================================================ attention vs distance

@torch.inference_mode()
def distance_profile(model, tokenizer, text, max_tokens: int = 256) -> tuple[np.ndarray, list, float]:
    """Mean attention weight against distance m − n, per layer (averaged over heads and over
    the queries that can see that distance). (L, T) array, the tokens, seconds taken."""
    import time

    text = check_text(text)
    max_tokens = whole_number(max_tokens, "The number of tokens", 2, MAX_CAPTURE_TOKENS)
    ids = tokenize(tokenizer, text, max_tokens)
    config = model.config
    rec = _StopAfter(["attn_probs"], config.n_layers - 1, last_point="kv_pos")
    rec.layers = None  # every layer; still stop after the last one's probabilities
    start = time.perf_counter()
    try:
        model(torch.tensor([ids], device=model.embed.weight.device), recorder=rec,
              options=RunOptions(attn_impl="eager", last_logits_only=True))
    except _StopForward:
        pass
    t = len(ids)
    profile = np.full((config.n_layers, t), np.nan)
    for layer in range(config.n_layers):
        probs = rec.get("attn_probs", layer)[0].float().mean(0)        # (T, T) mean over heads
        for distance in range(t):
            diagonal = torch.diagonal(probs, -distance)                  # p[m, m - distance]
            profile[layer, distance] = float(diagonal.mean())
    return profile, token_strings(tokenizer, ids), time.perf_counter() - start


def distance_figure(profile: np.ndarray, layer_types: Sequence[str], lang: str = "en") -> go.Figure:
    """log10 mean attention weight, layer x distance. Text in `lang`."""
    n_layers, t = profile.shape
    z = np.log10(np.clip(profile, 1e-6, None))
    kinds = [_text("rope.fig.kind.sliding" if kind == SLIDING else "rope.fig.kind.full", lang)
             for kind in layer_types]
    cell, far = _template("rope.fig.dist_hover", lang), _text("rope.fig.dist_far", lang)
    text = [[cell.format(layer=layer, kind=kinds[layer], distance=d, weight=profile[layer, d])
             + (far if d > t // 2 else "")
             for d in range(t)] for layer in range(n_layers)]
    fig = _figure(max(360, 16 * n_layers + 120), margin=dict(l=90, r=20, t=30, b=50))
    fig.add_trace(go.Heatmap(
        z=z, x=list(range(t)),
        y=[_text("rope.fig.dist_layer", lang, layer=layer, kind=kinds[layer]) for layer in range(n_layers)],
        colorscale="Viridis", zmin=-4, zmax=0, text=text, hovertemplate="%{text}<extra></extra>",
        colorbar=dict(title=dict(text=_text("rope.fig.mean_weight", lang)), thickness=12)))
    fig.update_xaxes(title_text=_text("rope.fig.distance_axis", lang))
    fig.update_yaxes(title_text=_text("rope.fig.layer", lang), autorange="reversed")
    return fig


# ============================================================================ C13: base on the real model

def base_options(config, base: float, apply_to: str) -> RunOptions:
    """RunOptions that change the RoPE base of the chosen layers and leave the rest as trained."""
    base = check_base(base)
    if apply_to not in APPLY_TO:
        raise InputError(f"Apply the base to one of {', '.join(APPLY_TO)}, got {apply_to!r}.")
    has_sliding = SLIDING in config.layer_types
    if apply_to == "sliding" and not has_sliding:
        raise InputError("This model has no sliding-window layers: apply the base to all "
                             "(full-attention) layers instead.")
    if apply_to == "full":
        return RunOptions(rope_theta=base)
    if apply_to == "sliding":
        return RunOptions(rope_local_theta=base)
    return RunOptions(rope_theta=base, rope_local_theta=base if has_sliding else None)


def trained_base(config, apply_to: str) -> Optional[float]:
    """The base the chosen layers were trained with; None when they were trained with two
    (apply_to="all" on Gemma-3: 10k local, 1M global), where no single base reproduces them."""
    local = config.rope_local_theta or config.rope_theta
    if apply_to == "sliding":
        return float(local)
    if apply_to == "all" and SLIDING in config.layer_types and local != config.rope_theta:
        return None
    return float(config.rope_theta)


# Sweep key of the unmodified model when no single base is "the trained one" (never a valid base).
UNMODIFIED = 0.0


def trained_options(config, apply_to: str) -> RunOptions:
    trained = trained_base(config, apply_to)
    return RunOptions() if trained is None else base_options(config, trained, apply_to)


def trained_base_pair(config) -> tuple[float, float]:
    """(sliding-layer base, full-layer base) the model was trained with."""
    return float(config.rope_local_theta or config.rope_theta), float(config.rope_theta)


def _trained_text(trained: Optional[float], bases: tuple, lang: str = "en") -> str:
    if trained is None:
        return _text("rope.fig.as_trained", lang, local=base_label(bases[0]), full=base_label(bases[1]))
    return _text("rope.fig.trained", lang, base=base_label(trained))


def trained_label(config, apply_to: str, lang: str = "en") -> str:
    """"100k (trained)", or Gemma's two bases when no single one is the trained one; in `lang`."""
    return _trained_text(trained_base(config, apply_to), trained_base_pair(config), lang)


@torch.inference_mode()
def nll_per_position(model, ids: Sequence[int], options: Optional[RunOptions] = None,
                     chunk: int = 256) -> torch.Tensor:
    """Negative log-likelihood (nats) of token t+1 given tokens 0..t, for t = 0..T-2: (T-1,).
    One forward over the whole sequence; cross-entropy in chunks of rows to bound memory."""
    options = dataclasses.replace(options or RunOptions(), last_logits_only=False)
    x = torch.tensor([list(ids)], device=model.embed.weight.device)
    logits = model(x, options=options)[0, :-1]                             # (T-1, V)
    targets = x[0, 1:]                                                     # (T-1,)
    out = []
    for start in range(0, len(targets), chunk):
        rows = logits[start:start + chunk].float()
        out.append(F.cross_entropy(rows, targets[start:start + chunk], reduction="none"))
    return torch.cat(out).cpu()


@dataclass
class Sweep:
    bases: list                   # sweep keys: bases, or UNMODIFIED for the model as trained
    trained: Optional[float]      # the trained base of the chosen layers (None: two bases)
    apply_to: str
    nll: dict                     # key -> (T-1,) tensor
    seconds: dict                 # key -> forward seconds
    n_tokens: int
    trained_pair: tuple = (0.0, 0.0)   # (sliding, full) trained bases: labels the reference row

    @property
    def reference(self) -> float:
        return UNMODIFIED if self.trained is None else self.trained

    def label(self, key: float, lang: str = "en") -> str:
        # the label is derived, not stored, so that a chart can be redrawn in the other language
        return _trained_text(self.trained, self.trained_pair, lang) if key == self.reference else base_label(key)

    def summary(self, n_bins: int = 4, lang: str = "en") -> pd.DataFrame:
        t = self.n_tokens - 1
        edges = np.linspace(0, t, n_bins + 1).round().astype(int)
        rows = []
        reference = self.nll[self.reference]
        for key in self.bases:
            nll = self.nll[key]
            row = {"base": self.label(key, lang), "perplexity": float(torch.exp(nll.mean()))}
            for lo, hi in zip(edges[:-1], edges[1:]):
                row[f"ppl, tokens {lo + 1}–{hi}"] = float(torch.exp(nll[lo:hi].mean()))
            row["mean NLL − trained (nats)"] = float(nll.mean() - reference.mean())
            row["seconds"] = self.seconds[key]
            rows.append(row)
        return pd.DataFrame(rows)


def perplexity_sweep(model, tokenizer, text, bases: Sequence[float], apply_to: str = "full",
                     n_tokens: int = 1024, progress: Optional[Progress] = None) -> Sweep:
    """One forward of `n_tokens` tokens of `text` per base, NLL per position for each. The
    model as trained always comes first (the trained base, or both of Gemma's bases)."""
    import time

    config = model.config
    text = check_text(text)
    n_tokens = whole_number(n_tokens, "The number of tokens", 16, MAX_SWEEP_TOKENS)
    bases = [check_base(b) for b in bases]
    if not bases:
        raise InputError("Give at least one RoPE base.")
    for base in bases:
        base_options(config, base, apply_to)  # validate before the slow part
    trained = trained_base(config, apply_to)
    reference = UNMODIFIED if trained is None else trained
    keys = [reference] + [b for b in bases if b != reference]
    ids = tokenize(tokenizer, text, n_tokens)
    if len(ids) < 16:
        raise InputError(f"The text has only {len(ids)} tokens; perplexity needs at least 16.")
    sweep = Sweep(bases=keys, trained=trained, apply_to=apply_to, nll={}, seconds={},
                  n_tokens=len(ids), trained_pair=trained_base_pair(config))
    for index, key in enumerate(keys):
        if progress is not None:
            progress(index / len(keys), f"base {sweep.label(key)}: forward over {len(ids)} tokens")
        options = trained_options(config, apply_to) if key == reference else base_options(config, key, apply_to)
        start = time.perf_counter()
        sweep.nll[key] = nll_per_position(model, ids, options)
        sweep.seconds[key] = time.perf_counter() - start
    if progress is not None:
        progress(1.0, "done")
    return sweep


def moving_average(values: np.ndarray, window: int) -> np.ndarray:
    window = max(1, min(window, len(values)))
    cumulative = np.cumsum(np.insert(values, 0, 0.0))
    out = np.empty(len(values))
    for i in range(len(values)):  # trailing window, shorter at the start
        lo = max(0, i - window + 1)
        out[i] = (cumulative[i + 1] - cumulative[lo]) / (i + 1 - lo)
    return out


def sweep_figure(sweep: Sweep, window: int = 64, lang: str = "en") -> go.Figure:
    """NLL per position (trailing mean over `window` tokens), one line per base. Text in `lang`."""
    fig = _figure(420, legend=dict(orientation="h", y=-0.2))
    ordered = sorted(sweep.bases)
    colors = dict(zip(ordered, _colors(len(ordered))))
    for base in ordered:
        nll = sweep.nll[base].numpy()
        smooth = moving_average(nll, window)
        trained = base == sweep.reference
        name = _text("rope.fig.base", lang, base=sweep.label(base, lang))
        fig.add_trace(go.Scatter(
            x=np.arange(1, len(nll) + 1), y=smooth, mode="lines", name=name,
            line=dict(color="black" if trained else colors[base], width=3 if trained else 2,
                      dash="dash" if trained else "solid"),
            hovertemplate=_text("rope.fig.sweep_hover", lang, name=name, window=window) + "<extra></extra>"))
    fig.update_xaxes(title_text=_text("rope.fig.predicted_position", lang))
    fig.update_yaxes(title_text=_text("rope.fig.nll_axis", lang, window=window), type="log")
    return fig


@torch.inference_mode()
def greedy_continuation(model, tokenizer, ids: Sequence[int], options: RunOptions, n_new: int) -> str:
    from models.generate import SamplingParams, generate

    n_new = whole_number(n_new, "The number of new tokens", 1, 128)
    new = [step.token_id for step in generate(model, list(ids), SamplingParams(max_new_tokens=n_new),
                                              options=options)]
    return tokenizer.decode(new)


# ============================================================================ optional: context extension

def yarn_inv_freq(head_dim: int, base: float, factor: float, original_context: int,
                  beta_fast: float = 32.0, beta_slow: float = 1.0) -> torch.Tensor:
    """YaRN (Peng et al. 2023), frequencies only: pairs that turn more than beta_fast times in
    the original context keep their frequency, pairs that turn fewer than beta_slow times are
    interpolated (θ/factor), a linear ramp in between. Same recipe as transformers' "yarn"."""
    theta = rope_inv_freq(head_dim, base)

    def pair_with_turns(turns: float) -> float:   # the (fractional) pair index making `turns` turns
        return (head_dim * math.log(original_context / (turns * 2 * math.pi))) / (2 * math.log(base))

    low = max(math.floor(pair_with_turns(beta_fast)), 0)
    high = min(math.ceil(pair_with_turns(beta_slow)), head_dim - 1)
    if low == high:
        high += 0.001
    ramp = ((torch.arange(head_dim // 2, dtype=torch.float32) - low) / (high - low)).clamp(0, 1)
    keep = 1 - ramp                                        # 1: keep θ (fast pairs), 0: θ/factor
    return theta / factor * (1 - keep) + theta * keep


def scaling_table(head_dim, base, factor, original_context) -> pd.DataFrame:
    """θ_i under the context-extension recipes, for a model trained on `original_context`
    tokens stretched `factor` times: original, linear position interpolation, NTK-aware
    (base × factor^(d/(d−2))), YaRN."""
    head_dim = check_head_dim(head_dim)
    base = check_base(base)
    try:
        factor = float(factor)
    except (TypeError, ValueError):
        raise InputError(f"The extension factor must be a number, got {factor!r}.") from None
    if not math.isfinite(factor) or not 1.0 <= factor <= 1000.0:
        raise InputError(f"The extension factor must be between 1 and 1000, got {factor}.")
    original_context = whole_number(original_context, "The original context", 16, MAX_CONTEXT)
    curves = {
        "original": rope_inv_freq(head_dim, base),
        "linear interpolation (PI)": rope_inv_freq(head_dim, base, {"rope_type": "linear", "factor": factor}),
        "NTK-aware": rope_inv_freq(head_dim, base * factor ** (head_dim / (head_dim - 2))) if head_dim > 2
        else rope_inv_freq(head_dim, base),
        "YaRN": yarn_inv_freq(head_dim, base, factor, original_context),
    }
    rows = []
    for method, theta in curves.items():
        theta = theta.double()
        for i in range(head_dim // 2):
            rows.append({"method": method, "pair": i, "theta": float(theta[i]),
                         "wavelength": float(2 * math.pi / theta[i]),
                         "ratio": float(theta[i] / curves["original"][i].double())})
    return pd.DataFrame(rows)


def scaling_figure(table: pd.DataFrame, original_context: int, factor: float, lang: str = "en") -> go.Figure:
    """Wavelength and θ / θ_original per pair under each recipe. Text in `lang`."""
    fig = _figure(420, (_text("rope.fig.wave_per_pair", lang), _text("rope.fig.relative_freq", lang)),
                  legend=dict(orientation="h", y=-0.2))
    methods = list(dict.fromkeys(table["method"]))
    dashes = ["solid", "dash", "dot", "dashdot"]
    hover_text = _template("rope.fig.scale_hover", lang)
    for color, dash, method in zip(_colors(len(methods)), dashes, methods):
        group = table[table["method"] == method]
        name = _text(METHOD_KEYS[method], lang)
        hover = [hover_text.format(method=name, pair=p, wavelength=w, ratio=r)
                 for p, w, r in zip(group["pair"], group["wavelength"], group["ratio"])]
        for col, column in ((1, "wavelength"), (2, "ratio")):
            fig.add_trace(go.Scatter(x=group["pair"], y=group[column], name=name, legendgroup=method,
                                     showlegend=col == 1, mode="lines",
                                     line=dict(color=color, dash=dash, width=2.5),
                                     hovertext=hover, hoverinfo="text", **_panel(col)))
    last_pair = int(table["pair"].max())
    for value, key, dash in ((original_context, "rope.fig.trained_context", "dot"),
                             (original_context * factor, "rope.fig.extended_context", "dash")):
        label = _text(key, lang)
        fig.add_trace(go.Scatter(x=[0, last_pair], y=[value, value], mode="lines",
                                 name=_text("rope.fig.context_line", lang, label=label, value=value),
                                 line=dict(color="gray", dash=dash, width=1.5),
                                 hovertext=_text("rope.fig.context_line_hover", lang, label=label, value=value),
                                 hoverinfo="text"))
    pair_title = dict(text=_text("rope.fig.pair_index", lang))
    fig.update_layout(xaxis_title=pair_title, xaxis2_title=pair_title,
                      yaxis=dict(type="log", title=dict(text=_text("rope.fig.wave_log", lang))),
                      yaxis2=dict(type="log", title=dict(text=_text("rope.fig.ratio_log", lang))))
    return fig
