"""One pair rotating: dimensions (i, i + d/2) of the captured real q, rotated by RoPE to every
position 0..m. The point keeps its length and turns θ_i radians per token; at the token's own
position it lands on the q the model used."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go
import torch

from explorer.inputs import InputError, whole_number
from explorer.locales import Term, text
from explorer.plotting import Fig
from explorer.rope.capture import QKCapture, rounding_tolerance, shown
from explorer.rope.toeplitz import ToeplitzResult
from models.layers import apply_rope, rope_cos_sin

MAX_POSITION = 512         # the tab's slider: positions 0 .. 512
MAX_DRAWN_POINTS = 2001    # positions past this are sampled evenly


def pair_trajectory(vector: torch.Tensor, pair: int, inv_freq: torch.Tensor, positions: torch.Tensor):
    """The 2-D point (x_i, x_{i+d/2}) of `vector` (D,) rotated to each position: (P, 2) array.
    Computed by apply_rope on the whole vector, then read at dims (i, i + d/2)."""
    d = vector.shape[-1]
    cos, sin = rope_cos_sin(positions, inv_freq, torch.float32)
    rotated = apply_rope(vector.float().expand(len(positions), d), cos, sin)   # (P, D)
    return torch.stack([rotated[:, pair], rotated[:, pair + d // 2]], dim=-1).numpy()


def pair_radii(capture: QKCapture, head: int, token: int) -> torch.Tensor:
    """(d/2,) length of every pair of the pre-RoPE q: what RoPE rotates and never changes."""
    vector = capture.q_pre[head, token]
    half = capture.head_dim // 2
    return (vector[:half] ** 2 + vector[half:] ** 2).sqrt()


def visible_pair(capture_result: ToeplitzResult, pair) -> int:
    """The chosen pair unless it is (nearly) zero in this q (Gemma's q-norm zeroes some
    dimensions): then the fastest pair whose radius is at least a fifth of the largest, so the
    rotation is both visible and large."""
    radii = pair_radii(capture_result.capture, capture_result.head, capture_result.q_token)
    try:
        pair = min(max(int(pair or 0), 0), len(radii) - 1)
    except (TypeError, ValueError):
        pair = 0
    if radii[pair] >= 0.05 * radii.max():
        return pair
    return int((radii >= 0.2 * radii.max()).nonzero()[0, 0])  # pairs run fast to slow


@dataclass(frozen=True)
class PairRotation:
    layer: int
    head: int
    token: int                    # the q's token index (its own position)
    word: str
    head_dim: int
    pair: int
    position: int
    steps: np.ndarray             # (P,) positions drawn
    points: np.ndarray            # (P, 2) the pair rotated to each of them
    theta: float                  # rad/token of this pair
    own: tuple[float, float]      # the model's post-RoPE q at the token's position, this pair
    own_error: float              # |our rotation to the token's position − the model's q|
    radii: np.ndarray             # (d/2,) length of every pair of this q
    vector_scale: float = 1.0     # the largest |entry| of the model's post-RoPE q of this token
    dtype: str = "float32"        # the model's compute dtype

    @property
    def radius_spread(self) -> float:
        """(largest − smallest) distance from the origin over the drawn points, relative to the
        radius: RoPE rotates, so this is rounding only."""
        lengths = np.hypot(self.points[:, 0], self.points[:, 1])
        return float((lengths.max() - lengths.min()) / max(self.radius, 1e-30))

    @property
    def own_relative(self) -> float:
        return self.own_error / max(self.vector_scale, 1e-30)

    @property
    def radius(self) -> float:
        return float(np.hypot(*self.points[0]))

    @property
    def angle(self) -> float:
        return self.position * self.theta

    @property
    def turns(self) -> float:
        return self.angle / (2 * math.pi)

    @property
    def wavelength(self) -> float:
        return 2 * math.pi / self.theta


# The rotated points are computed in float32: their length varies by a few float32 roundings.
LENGTH_TOL = 1e-5


def length_kept(result: PairRotation) -> bool:
    """The pair keeps its length at every drawn position, to LENGTH_TOL (relative)."""
    return bool(result.radius_spread <= LENGTH_TOL)


def hits_own_q(result: PairRotation) -> bool:
    """Our rotation to the token's own position lands on the q the model used, to a few units of
    the model dtype's rounding relative to that q's largest entry."""
    return bool(result.own_relative <= rounding_tolerance(result.dtype))


def check_position(position) -> int:
    return whole_number(position, Term("rope.name.position"), 0, MAX_POSITION)


def run(capture_result: ToeplitzResult, pair, position) -> PairRotation:
    """Pair `pair` of the captured q (the head and token of the Toeplitz run) at 0..position."""
    if capture_result is None:
        raise InputError("rope.need_capture")
    capture, head, token = capture_result.capture, capture_result.head, capture_result.q_token
    d = capture.head_dim
    pair = whole_number(pair, Term("rope.name.pair"), 0, d // 2 - 1)
    position = check_position(position)
    inv_freq = capture.inv_freq()
    vector = capture.q_pre[head, token]
    steps = (torch.arange(position + 1) if position < MAX_DRAWN_POINTS
             else torch.linspace(0, position, MAX_DRAWN_POINTS).round().long())
    real = capture.q[head, token]
    own = (float(real[pair]), float(real[pair + d // 2]))
    at_token = pair_trajectory(vector, pair, inv_freq, torch.tensor([token]))[0]
    return PairRotation(
        layer=capture.layer, head=head, token=token, word=capture.tokens[token], head_dim=d, pair=pair,
        position=position, steps=steps.numpy(), points=pair_trajectory(vector, pair, inv_freq, steps),
        theta=float(inv_freq[pair]), own=own, own_error=float(np.abs(at_token - np.array(own)).max()),
        radii=pair_radii(capture, head, token).numpy(), vector_scale=float(real.abs().max()),
        dtype=capture.dtype)


def figures(result: PairRotation, lang: str) -> tuple[go.Figure]:
    """The pair's circle, the rotated points coloured by position, the point at `position`, the
    pre-RoPE q (m = 0) and the model's own q at its position."""
    word = shown(result.word)
    radius, points, half = result.radius, result.points, result.head_dim // 2
    fig = Fig()
    circle = np.linspace(0, 2 * math.pi, 181)
    fig.add_scatter(x=radius * np.cos(circle), y=radius * np.sin(circle), mode="lines",
                    line=dict(color="lightgray", width=1), hoverinfo="skip", showlegend=False)
    fig.add_scatter(
        x=points[:, 0], y=points[:, 1], mode="markers", name=text("rope.fig.rotated", lang),
        marker=dict(size=5, color=result.steps, colorscale="Viridis", showscale=True,
                    colorbar=dict(title=dict(text=text("rope.fig.position_m", lang)), thickness=12)),
        hovertext=[text("rope.fig.rotated_hover", lang, token=result.token, word=word, layer=result.layer,
                        head=result.head, pair=result.pair, m=int(m), angle=int(m) * result.theta)
                   for m in result.steps], hoverinfo="text")
    fig.add_scatter(x=[0, points[-1, 0]], y=[0, points[-1, 1]], mode="lines+markers",
                    name=text("rope.fig.position", lang, position=result.position),
                    line=dict(color="#440154", width=3), marker=dict(size=[0, 12], color="#440154"),
                    hoverinfo="skip")
    fig.add_scatter(x=[points[0, 0]], y=[points[0, 1]], mode="markers", name=text("rope.fig.before", lang),
                    marker=dict(symbol="square", size=11, color="#21918c"),
                    hovertext=[text("rope.fig.before_hover", lang, word=word)], hoverinfo="text")
    fig.add_scatter(x=[result.own[0]], y=[result.own[1]], mode="markers",
                    name=text("rope.fig.own", lang, token=result.token),
                    marker=dict(symbol="star", size=15, color="#fde725", line=dict(color="black", width=1)),
                    hovertext=[text("rope.fig.own_hover", lang, word=word, token=result.token)],
                    hoverinfo="text")
    limit = 1.15 * max(radius, 1e-6)
    fig.update_xaxes(title_text=text("rope.fig.dim_axis", lang, dim=result.pair), range=[-limit, limit],
                     scaleanchor="y", zeroline=True, constrain="domain")
    fig.update_yaxes(title_text=text("rope.fig.dim_axis", lang, dim=result.pair + half),
                     range=[-limit, limit], zeroline=True)
    return (fig.finish("", height=460, lang=lang),)


def summary(result: PairRotation, lang: str) -> str:
    strongest = ", ".join(f"{int(i)} ({float(result.radii[i]):.2f})" for i in np.argsort(-result.radii)[:4])
    out = text("rope.pair.result", lang, pair=result.pair, partner=result.pair + result.head_dim // 2,
               theta=result.theta, wavelength=result.wavelength, radius=result.radius,
               position=result.position, angle=result.angle, turns=result.turns, strongest=strongest)
    verdicts = [
        text("rope.pair.length.kept" if length_kept(result) else "rope.pair.length.changed", lang,
             radius=result.radius, spread=result.radius_spread, tol=LENGTH_TOL, n=len(result.steps)),
        text("rope.pair.own.hits" if hits_own_q(result) else "rope.pair.own.misses", lang,
             token=result.token, error=result.own_error, rel=result.own_relative,
             tol=rounding_tolerance(result.dtype)),
    ]
    return out + "\n\n" + "\n".join(f"- {line}" for line in verdicts)
