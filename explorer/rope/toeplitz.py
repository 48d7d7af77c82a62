"""Only the distance counts (claims C11, C12): one real pre-RoPE q and one real pre-RoPE k of the
captured layer placed at every pair of positions (m, n). With both rotated the scores
⟨R_m q, R_n k⟩ = ⟨q, R_(n−m) k⟩ are constant along every diagonal (a Toeplitz matrix); with only
q rotated the absolute position comes back. Beside them, the layer's actual scores on the text."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np
import plotly.graph_objects as go
import torch

from explorer.inputs import whole_number
from explorer.locales import Term, template, text
from explorer.masks import describe
from explorer.plotting import Fig
from explorer.rope.capture import MAX_CAPTURE_TOKENS, QKCapture, capture_qk, real_scores, \
    reproduction_scale, rope_reproduction_error, rounding_tolerance, shown
from explorer.rope.frequencies import base_label
from models.layers import apply_rope, rope_cos_sin

MIN_TOEPLITZ_POSITIONS = 16   # the tab's slider: 16 .. 256 positions
MAX_TOEPLITZ_POSITIONS = 256

# The criteria the summary and the claims board (explorer/rope/evidence.py) read a verdict from.
# Scores are computed in float64, whose rounding leaves ~1e-15 of the largest score along a
# diagonal; a rotation that were not a pure function of n − m leaves a spread of the order of
# the scores themselves (only q rotated: 1e-3 .. 1 on the real models).
TOEPLITZ_TOL = 1e-9           # both rotated: largest diagonal spread / largest score
IDENTITY_TOL = 1e-9           # |<R_m q, R_n k> − <q, R_(n−m) k>| / largest score
ONE_SIDE_MIN_RELATIVE = 1e-3  # only q rotated: the spread must be at least this ...
ONE_SIDE_MIN_RATIO = 1e3      # ... and this many times the both-rotated spread
FLOAT64_EPS = float(np.finfo(np.float64).eps)   # floor of a spread in a ratio (no 0 / 0)


def placed_scores(q_vec: torch.Tensor, k_vec: torch.Tensor, inv_freq: torch.Tensor,
                  n_positions: int, rotate: str = "both") -> torch.Tensor:
    """S[m, n] = <R_m q, R_n k> (rotate="both") or <R_m q, k> (rotate="query"): one fixed q and
    one fixed k placed at every position 0..n_positions-1. (N, N), computed in float64: in
    fp32 the angles m·θ alone round to ~1e-5 rad, which at scores of ~100 hides the exact
    Toeplitz structure behind ~1e-4 noise. The vectors are the model's own."""
    if rotate not in ("both", "query"):
        raise ValueError(rotate)
    d = q_vec.shape[-1]
    cos, sin = rope_cos_sin(torch.arange(n_positions), inv_freq.double(), torch.float64)
    q_rot = apply_rope(q_vec.double().expand(n_positions, d), cos, sin)        # (N, D) R_m q
    if rotate == "both":
        k_side = apply_rope(k_vec.double().expand(n_positions, d), cos, sin)   # (N, D) R_n k
    else:
        k_side = k_vec.double().expand(n_positions, d)                         # (N, D) k, unrotated
    return q_rot @ k_side.T                                                    # (N, N)


@dataclass(frozen=True)
class Spread:
    """How far a score matrix is from Toeplitz: per diagonal n − m = δ the spread max − min."""
    per_offset: np.ndarray        # (2N − 1,) offsets −(N−1) .. N−1
    scale: float                  # the largest |score|

    @property
    def spread(self) -> float:
        return float(self.per_offset.max())

    @property
    def relative(self) -> float:
        return self.spread / max(self.scale, 1e-30)


def diagonal_spread(scores: torch.Tensor) -> Spread:
    n = scores.shape[0]
    per_offset = np.array([float(torch.diagonal(scores, offset).max() - torch.diagonal(scores, offset).min())
                           for offset in range(-(n - 1), n)])
    return Spread(per_offset=per_offset, scale=float(scores.abs().max()))


def relative_identity_error(q_vec, k_vec, inv_freq, n_positions: int) -> float:
    """max over m, n of |<R_m q, R_n k> − <q, R_{n−m} k>|, relative to the largest score: the
    identity behind C11/C12, checked with the rotations the model uses (negative offsets too)."""
    both = placed_scores(q_vec, k_vec, inv_freq, n_positions, "both")
    offsets = torch.arange(-(n_positions - 1), n_positions)
    cos, sin = rope_cos_sin(offsets, inv_freq.double(), torch.float64)
    d = k_vec.shape[-1]
    by_offset = apply_rope(k_vec.double().expand(len(offsets), d), cos, sin) @ q_vec.double()  # (2N-1,)
    m = torch.arange(n_positions)[:, None]
    n = torch.arange(n_positions)[None, :]
    expected = by_offset[(n - m) + n_positions - 1]
    return float((both - expected).abs().max() / max(float(both.abs().max()), 1e-30))


@dataclass(frozen=True)
class ToeplitzResult:
    capture: QKCapture
    head: int
    q_token: int                  # token indices used (clamped to the text's last token)
    k_token: int
    clamped: bool                 # True when a requested index was past the text's end
    both: torch.Tensor            # (N, N) ⟨R_m q, R_n k⟩, float64
    query_only: torch.Tensor      # (N, N) ⟨R_m q, k⟩
    spread_both: Spread
    spread_query: Spread
    identity_error: float
    reproduction_error: float     # our rotation of the captured q_pre, k_pre vs the model's q, k
    real: torch.Tensor            # (T, T) the layer's scaled scores on the text, NaN where masked
    reproduction_scale: float = 1.0   # the largest |entry| of the model's q, k

    @property
    def n_positions(self) -> int:
        return self.both.shape[0]

    @property
    def reproduction_relative(self) -> float:
        return self.reproduction_error / max(self.reproduction_scale, 1e-30)

    @property
    def one_side_ratio(self) -> float:
        """Only-q spread ÷ both-rotated spread (relative spreads, the latter floored at float64's
        epsilon)."""
        return self.spread_query.relative / max(self.spread_both.relative, FLOAT64_EPS)


# ============================================================================ criteria

def toeplitz_holds(result: ToeplitzResult) -> bool:
    """C11: both rotated, every diagonal is constant up to TOEPLITZ_TOL of the largest score."""
    return bool(result.spread_both.relative <= TOEPLITZ_TOL)


def identity_holds(result: ToeplitzResult) -> bool:
    """<R_m q, R_n k> = <q, R_(n−m) k> to IDENTITY_TOL of the largest score."""
    return bool(result.identity_error <= IDENTITY_TOL)


def reproduces(result: ToeplitzResult) -> bool:
    """Our rotation of the captured pre-RoPE q, k gives the q, k the model used, to a few units
    of the model dtype's rounding (capture.rounding_tolerance)."""
    return bool(result.reproduction_relative <= rounding_tolerance(result.capture.dtype))


def absolute_position_remains(result: ToeplitzResult) -> bool:
    """C12: only q rotated, the diagonals spread by at least ONE_SIDE_MIN_RELATIVE of the largest
    score and ONE_SIDE_MIN_RATIO times the both-rotated spread."""
    return bool(result.spread_query.relative >= ONE_SIDE_MIN_RELATIVE
                and result.one_side_ratio >= ONE_SIDE_MIN_RATIO)


def toeplitz(capture: QKCapture, head, q_token, k_token, n_positions) -> ToeplitzResult:
    """The Toeplitz test on a capture: token indices past the text's end are clamped to its last
    token (and say so)."""
    head = capture.check_head(head)
    last = len(capture.tokens) - 1
    q_asked = whole_number(q_token, Term("rope.name.q_token"), 0, MAX_CAPTURE_TOKENS)
    k_asked = whole_number(k_token, Term("rope.name.k_token"), 0, MAX_CAPTURE_TOKENS)
    n_positions = whole_number(n_positions, Term("rope.name.positions"), MIN_TOEPLITZ_POSITIONS,
                               MAX_TOEPLITZ_POSITIONS)
    q_index, k_index = min(q_asked, last), min(k_asked, last)
    q_vec = capture.q_pre[head, q_index]
    k_vec = capture.k_pre[capture.kv_head(head), k_index]
    inv_freq = capture.inv_freq()
    both = placed_scores(q_vec, k_vec, inv_freq, n_positions, "both")
    one = placed_scores(q_vec, k_vec, inv_freq, n_positions, "query")
    return ToeplitzResult(
        capture=capture, head=head, q_token=q_index, k_token=k_index,
        clamped=(q_index, k_index) != (q_asked, k_asked), both=both, query_only=one,
        spread_both=diagonal_spread(both), spread_query=diagonal_spread(one),
        identity_error=relative_identity_error(q_vec, k_vec, inv_freq, n_positions),
        reproduction_error=rope_reproduction_error(capture), real=real_scores(capture, head),
        reproduction_scale=reproduction_scale(capture))


def run(model, tokenizer, text_in, layer, head, q_token, k_token, n_positions, max_tokens) -> ToeplitzResult:
    """Capture q and k of `layer` on the text, then the Toeplitz test with one q and one k. The
    inputs that do not need the model are checked first."""
    whole_number(n_positions, Term("rope.name.positions"), MIN_TOEPLITZ_POSITIONS,
                               MAX_TOEPLITZ_POSITIONS)
    whole_number(head, Term("rope.name.head"), 0, model.config.n_heads - 1)
    whole_number(q_token, Term("rope.name.q_token"), 0, MAX_CAPTURE_TOKENS)
    whole_number(k_token, Term("rope.name.k_token"), 0, MAX_CAPTURE_TOKENS)
    capture = capture_qk(model, tokenizer, text_in, layer, max_tokens)
    return toeplitz(capture, head, q_token, k_token, n_positions)


# ============================================================================ figures

def scores_heatmap(scores: torch.Tensor, *, x_title: str, y_title: str, hover_prefix: str, lang: str,
                   x_labels: Optional[list] = None, y_labels: Optional[list] = None,
                   colorbar: Optional[str] = None) -> go.Figure:
    """A score matrix as a heatmap; titles come translated, hover words in `lang`."""
    z = scores.numpy()
    n_rows, n_cols = z.shape
    x_labels = x_labels or [str(i) for i in range(n_cols)]
    y_labels = y_labels or [str(i) for i in range(n_rows)]
    cell = template("rope.fig.cell_hover", lang)   # up to 512 x 512 cells: look the text up once
    hover = [[cell.format(prefix=hover_prefix, query=y_labels[m], key=x_labels[n], offset=n - m)
              for n in range(n_cols)] for m in range(n_rows)]
    fig = Fig()
    fig.add_heatmap(z=z, colorscale="Cividis", text=hover,
                    colorbar=dict(title=dict(text=colorbar or text("rope.fig.score", lang)), thickness=12),
                    hovertemplate=text("rope.fig.score_hover", lang) + "<extra></extra>")
    fig.update_xaxes(title_text=x_title, constrain="domain")
    fig.update_yaxes(title_text=y_title, autorange="reversed", scaleanchor="x", constrain="domain")
    return fig.finish("", height=420, lang=lang)


def figures(result: ToeplitzResult, lang: str) -> tuple[go.Figure, go.Figure, go.Figure]:
    """(both rotated, only q rotated, the layer's real scores) in `lang`."""
    capture = result.capture
    prefix = text("rope.fig.qk_prefix", lang, q_token=result.q_token, q_word=shown(capture.tokens[result.q_token]),
                  k_token=result.k_token, k_word=shown(capture.tokens[result.k_token]), layer=capture.layer,
                  head=result.head, kv_head=capture.kv_head(result.head))
    query_title = text("rope.fig.query_position", lang)
    both = scores_heatmap(result.both, x_title=text("rope.fig.key_position", lang), y_title=query_title,
                          hover_prefix=text("rope.fig.both_rotated", lang, prefix=prefix), lang=lang)
    one = scores_heatmap(result.query_only, x_title=text("rope.fig.key_unrotated", lang), y_title=query_title,
                         hover_prefix=text("rope.fig.q_rotated", lang, prefix=prefix), lang=lang)
    labels = [f"{i} {shown(word)}" for i, word in enumerate(capture.tokens)]
    real = scores_heatmap(result.real, x_title=text("rope.fig.real_key", lang),
                          y_title=text("rope.fig.real_query", lang),
                          hover_prefix=text("rope.fig.real_prefix", lang, layer=capture.layer, head=result.head),
                          x_labels=labels, y_labels=labels, colorbar=text("rope.fig.scaled_score", lang), lang=lang)
    return both, one, real


def summary(result: ToeplitzResult, lang: str) -> str:
    capture = result.capture
    out = text("rope.qk.result", lang, layer=capture.layer, kind=describe(capture.mask, lang),
               base=base_label(capture.theta_base), head=result.head, kv_head=capture.kv_head(result.head),
               tokens=len(capture.tokens), seconds=capture.seconds, q_token=result.q_token,
               q_word=shown(capture.tokens[result.q_token]), k_token=result.k_token,
               k_word=shown(capture.tokens[result.k_token]), n=result.n_positions,
               both=result.spread_both.spread, both_rel=result.spread_both.relative,
               one=result.spread_query.spread, one_rel=result.spread_query.relative,
               scale=result.spread_both.scale)
    verdicts = [
        text("rope.qk.toeplitz.holds" if toeplitz_holds(result) else "rope.qk.toeplitz.fails", lang,
             rel=result.spread_both.relative, scale=result.spread_both.scale, tol=TOEPLITZ_TOL),
        text("rope.qk.one_side.remains" if absolute_position_remains(result) else "rope.qk.one_side.gone",
             lang, ratio=result.one_side_ratio, rel=result.spread_query.relative,
             min_rel=ONE_SIDE_MIN_RELATIVE, min_ratio=ONE_SIDE_MIN_RATIO),
        text("rope.qk.identity.holds" if identity_holds(result) else "rope.qk.identity.fails", lang,
             identity=result.identity_error, tol=IDENTITY_TOL),
        text("rope.qk.repro.holds" if reproduces(result) else "rope.qk.repro.fails", lang,
             repro=result.reproduction_error, rel=result.reproduction_relative,
             tol=rounding_tolerance(capture.dtype), dtype=capture.dtype),
    ]
    out += "\n\n" + "\n".join(f"- {line}" for line in verdicts)
    if result.clamped:
        last = len(capture.tokens) - 1
        out += "\n\n" + text("rope.qk.clamped", lang, tokens=last + 1, last=last)
    return out
