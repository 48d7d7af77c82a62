"""Context-extension recipes, frequencies only: θ_i of a model trained on L tokens stretched s
times by linear position interpolation (PI), NTK-aware scaling and YaRN. None of them is applied
to the model."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go
import torch

from explorer.inputs import InputError, finite_number, whole_number
from explorer.locales import Term, template, text
from explorer.plotting import Fig, colors
from explorer.rope.frequencies import MAX_CONTEXT, check_base, check_head_dim
from models.layers import rope_inv_freq

MAX_FACTOR = 1000.0
METHODS = ("original", "linear", "ntk", "yarn")   # locale keys rope.fig.method.<name>


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


@dataclass(frozen=True)
class Scaling:
    head_dim: int
    base: float
    factor: float
    context: int                   # the trained context L
    theta: np.ndarray              # (len(METHODS), head_dim // 2) rad/token, float64

    @property
    def wavelength(self) -> np.ndarray:
        return 2 * math.pi / self.theta

    @property
    def ratio(self) -> np.ndarray:
        """θ under each recipe / the original θ."""
        return self.theta / self.theta[0]

    def of(self, method: str) -> np.ndarray:
        return self.theta[METHODS.index(method)]


def run(head_dim, base, factor, original_context) -> Scaling:
    head_dim = check_head_dim(head_dim)
    base = check_base(base)
    factor = finite_number(factor, Term("rope.name.factor"))
    if not 1.0 <= factor <= MAX_FACTOR:
        raise InputError("inputs.between", name=Term("rope.name.factor"), low=1, high=int(MAX_FACTOR),
                         value=f"{factor:g}")
    original_context = whole_number(original_context, Term("rope.name.original_context"), 16, MAX_CONTEXT)
    ntk_base = base * factor ** (head_dim / (head_dim - 2)) if head_dim > 2 else base
    curves = (rope_inv_freq(head_dim, base),
              rope_inv_freq(head_dim, base, {"rope_type": "linear", "factor": factor}),
              rope_inv_freq(head_dim, ntk_base),
              yarn_inv_freq(head_dim, base, factor, original_context))
    theta = np.stack([curve.double().numpy() for curve in curves])              # (4, d/2)
    return Scaling(head_dim=head_dim, base=base, factor=factor, context=original_context, theta=theta)


def figures(result: Scaling, lang: str) -> tuple[go.Figure]:
    """Wavelength (left) and θ / θ_original (right) per pair under each recipe, with the
    trained and extended contexts."""
    fig = Fig(panels=(text("rope.fig.wave_per_pair", lang), text("rope.fig.relative_freq", lang)))
    pairs = list(range(result.head_dim // 2))
    hover_text = template("rope.fig.scale_hover", lang)
    for color, dash, method, wavelength, ratio in zip(colors(len(METHODS)), ("solid", "dash", "dot", "dashdot"),
                                                     METHODS, result.wavelength, result.ratio):
        name = text(f"rope.fig.method.{method}", lang)
        hover = [hover_text.format(method=name, pair=p, wavelength=w, ratio=r)
                 for p, w, r in zip(pairs, wavelength, ratio)]
        for axes, values in (({}, wavelength), ({"xaxis": "x2", "yaxis": "y2"}, ratio)):
            fig.add_scatter(x=pairs, y=values.tolist(), name=name, legendgroup=method, showlegend=not axes,
                            mode="lines", line=dict(color=color, dash=dash, width=2.5), hovertext=hover,
                            hoverinfo="text", **axes)
    for value, key, dash in ((result.context, "rope.fig.trained_context", "dot"),
                             (result.context * result.factor, "rope.fig.extended_context", "dash")):
        label = text(key, lang)
        fig.add_scatter(x=[0, pairs[-1]], y=[value, value], mode="lines",
                        name=text("rope.fig.context_line", lang, label=label, value=value),
                        line=dict(color="gray", dash=dash, width=1.5),
                        hovertext=text("rope.fig.context_line_hover", lang, label=label, value=value),
                        hoverinfo="text")
    pair_title = text("rope.fig.pair_index", lang)
    fig.update_xaxes(title_text=pair_title)
    fig.update_xaxes(2, title_text=pair_title)
    fig.update_yaxes(type="log", title_text=text("rope.fig.wave_log", lang))
    fig.update_yaxes(2, type="log", title_text=text("rope.fig.ratio_log", lang))
    fig.update_layout(legend=dict(orientation="h", yanchor="top", y=-0.2))
    return (fig.finish("", height=420, lang=lang),)
