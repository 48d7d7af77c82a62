"""RoPE frequencies (claim C13): pair i of a head of dimension d turns θ_i = base^(−2i/d) radians
per token, so it completes a full turn every 2π/θ_i tokens; for several bases, which pairs turn
at least once inside a context and which never do.

    result = run(parse_bases("10k, 1M"), head_dim=64, context=8192)   # numbers only
    figures(result, lang), summary(result, lang), table(result, lang)   # in the visitor's language

θ comes from models.layers.rope_inv_freq, the function the model itself rotates with.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from explorer.inputs import InputError, check_text, finite_number, shown, whole_number
from explorer.locales import Term, template, text
from explorer.plotting import Fig, colors
from models.config import SLIDING
from models.layers import rope_inv_freq

MAX_BASES = 8
MAX_HEAD_DIM = 1024
MAX_CONTEXT = 10_000_000
MAX_BASE = 1e12
# Eight bases written out in full ("1000000000000.0, ...") fit in well under this many characters.
MAX_BASES_CHARS = 400

# Published bases of models that are not loaded here -> the locale key naming who uses them.
# The loaded models' bases are read from their configs (ModelBases), never written down.
PUBLISHED_BASES = {
    10_000.0: "rope.who.original",    # RoFormer (Su et al. 2021)
    500_000.0: "rope.who.llama3",     # Llama 3's config.json: rope_theta 500000
}

_SUFFIX = {"k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9}
_SEPARATORS = re.compile(r"[,;\s]+")


# ============================================================================ input checks

def check_base(base) -> float:
    """A RoPE base: finite, above 1 (else the frequencies do not fall from pair to pair), at most
    1e12 (past that every pair but the first is already frozen over any context)."""
    value = finite_number(base, Term("rope.name.base"))
    if value <= 1.0:
        raise InputError("rope.err.base_low", value=value)
    if value > MAX_BASE:
        raise InputError("rope.err.base_high", value=value)
    return value


def check_head_dim(head_dim) -> int:
    value = whole_number(head_dim, Term("rope.name.head_dim"), 2, MAX_HEAD_DIM)
    if value % 2:
        raise InputError("rope.err.odd_head_dim", value=value)
    return value


def check_context(context) -> int:
    return whole_number(context, Term("rope.name.context"), 1, MAX_CONTEXT)


def parse_bases(bases_text) -> tuple[float, ...]:
    """"10000, 1e5, 500k, 1M" -> (10000.0, 100000.0, 500000.0, 1000000.0): order kept, repeats
    dropped. Linear in the text: its length and the number of items are checked before any item
    is parsed, and repeats are found with a dict."""
    if not isinstance(bases_text, str) or not bases_text.strip():
        raise InputError("rope.err.no_bases")
    check_text(bases_text, Term("rope.name.bases"), max_chars=MAX_BASES_CHARS)
    items = [item for item in _SEPARATORS.split(bases_text.strip()) if item]
    if len(items) > MAX_BASES:
        raise InputError("rope.err.too_many_bases", limit=MAX_BASES, n=len(items))
    bases: dict[float, None] = {}
    for item in items:
        raw = item.replace("_", "").lower()
        scale = 1.0
        if raw[-1:] in _SUFFIX:
            raw, scale = raw[:-1], _SUFFIX[raw[-1]]
        try:
            number = float(raw) * scale
        except ValueError:
            raise InputError("rope.err.not_number", item=shown(item)) from None   # <= 40 characters
        bases.setdefault(check_base(number), None)
    return tuple(bases)


def base_label(base: float) -> str:
    """10000 -> "10k", 1e6 -> "1M", 12345 -> "12,345"."""
    for unit, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if base >= unit and abs(base / unit - round(base / unit, 2)) < 1e-9:
            return f"{base / unit:g}{suffix}"
    return f"{base:,.6g}"


# ============================================================================ the loaded model's bases

@dataclass(frozen=True)
class ModelBases:
    """The RoPE bases a loaded model was trained with, read from its config."""
    title: str
    head_dim: int
    groups: tuple[tuple[str, int, float], ...]   # (layer kind, number of layers, base), in layer order

    @property
    def bases(self) -> tuple[float, ...]:
        return tuple(dict.fromkeys(base for _, _, base in self.groups))

    def kinds_with(self, base: float) -> tuple[str, ...]:
        return tuple(kind for kind, _, group_base in self.groups if group_base == base)


def model_bases(config, title: str) -> ModelBases:
    """(kind, count, base) per layer kind of `config` (models.config.ModelConfig)."""
    counts: dict[tuple[str, float], int] = {}
    for layer, kind in enumerate(config.layer_types):
        key = (kind, float(config.layer_rope_theta(layer)))
        counts[key] = counts.get(key, 0) + 1
    groups = tuple((kind, n, base) for (kind, base), n in counts.items())
    return ModelBases(title=title, head_dim=int(config.head_dim), groups=groups)


def kind_name(kind: str, lang: str) -> str:
    return text("rope.model.kind.sliding" if kind == SLIDING else "rope.model.kind.full", lang)


def describe_bases(bases: ModelBases, lang: str) -> str:
    """"SmolLM2 (read from its config): head dimension 64; base 100k on its 30 full layers"."""
    if bases is None:
        return ""
    groups = text("rope.model.separator", lang).join(
        text("rope.model.group", lang, base=base_label(base), n=n, kind=kind_name(kind, lang))
        for kind, n, base in bases.groups)
    return text("rope.model.bases", lang, title=bases.title, head_dim=bases.head_dim, groups=groups)


# ============================================================================ the experiment

@dataclass(frozen=True)
class Frequencies:
    """θ per (base, pair) for one head dimension, against one context length."""
    head_dim: int
    context: int                   # positions 0 .. context-1
    bases: tuple[float, ...]
    theta: np.ndarray              # (n_bases, head_dim // 2) rad/token, float64
    model: Optional[ModelBases] = None   # the loaded model's bases, for "who uses it"

    @property
    def pairs(self) -> int:
        return self.head_dim // 2

    @property
    def wavelength(self) -> np.ndarray:
        """(n_bases, pairs): tokens per full turn, 2π/θ."""
        return 2 * math.pi / self.theta

    @property
    def turns(self) -> np.ndarray:
        """(n_bases, pairs): turns made over the context; the largest angle reached is
        (context − 1)·θ, at the last position."""
        return (self.context - 1) * self.theta / (2 * math.pi)

    @property
    def full_turn(self) -> np.ndarray:
        """(n_bases, pairs) bool: the pair completes at least one turn inside the context."""
        return self.turns >= 1.0

    @property
    def full_turn_counts(self) -> np.ndarray:
        """(n_bases,): pairs completing a full turn inside the context, per base."""
        return self.full_turn.sum(axis=1)

    @property
    def never_counts(self) -> np.ndarray:
        """(n_bases,): pairs that never complete a turn inside the context, per base."""
        return self.pairs - self.full_turn_counts


def run(bases: Sequence[float], head_dim, context, model: Optional[ModelBases] = None) -> Frequencies:
    """θ_i = base^(−2i/d) for every base and pair, from the engine's rope_inv_freq. `model`:
    the loaded model's bases (only named in the table, never used in the computation)."""
    head_dim = check_head_dim(head_dim)
    context = check_context(context)
    if isinstance(bases, (str, bytes)) or not isinstance(bases, Sequence) or not bases:
        raise InputError("rope.err.no_bases")
    if len(bases) > MAX_BASES:
        raise InputError("rope.err.too_many_bases", limit=MAX_BASES, n=len(bases))
    checked = tuple(dict.fromkeys(check_base(base) for base in bases))
    theta = np.stack([rope_inv_freq(head_dim, base).double().numpy() for base in checked])  # (B, d/2)
    return Frequencies(head_dim=head_dim, context=context, bases=checked, theta=theta, model=model)


def who_uses(base: float, lang: str, model: Optional[ModelBases] = None) -> str:
    users = []
    if model is not None and base in model.bases:
        kinds = text("rope.model.separator", lang).join(kind_name(kind, lang) for kind in model.kinds_with(base))
        users.append(text("rope.who.model", lang, title=model.title, kinds=kinds))
    if base in PUBLISHED_BASES:
        users.append(text(PUBLISHED_BASES[base], lang))
    return text("rope.model.separator", lang).join(users) if users else text("rope.who.other", lang)


# ============================================================================ the criterion (C13, first half)

@dataclass(frozen=True)
class Slowing:
    """The smallest and the largest base of a result compared pair by pair."""
    low: float
    high: float
    theta0_ratio: float            # θ_0 at `high` ÷ θ_0 at `low`
    ratios: np.ndarray             # (pairs − 1,) θ_i at `high` ÷ θ_i at `low`, i ≥ 1
    never_low: int                 # pairs that never complete a turn inside the context
    never_high: int

    @property
    def slowed(self) -> int:
        return int((self.ratios < 1.0).sum())

    @property
    def fastest_ratio(self) -> float:
        """The ratio of the pair that slowed least (1.0 or more: some pair did not slow)."""
        return float(self.ratios.max())

    @property
    def slowest_ratio(self) -> float:
        return float(self.ratios.min())


# θ_0 = base^0 = 1 for every base: equal to the last bit in float64.
THETA0_TOL = 1e-12


def slowing(result: Frequencies) -> Optional[Slowing]:
    """The comparison of the smallest and the largest base; None with fewer than two bases or
    fewer than two pairs."""
    if len(result.bases) < 2 or result.pairs < 2:
        return None
    order = np.argsort(result.bases, kind="stable")
    low, high = int(order[0]), int(order[-1])
    return Slowing(low=result.bases[low], high=result.bases[high],
                   theta0_ratio=float(result.theta[high, 0] / result.theta[low, 0]),
                   ratios=result.theta[high, 1:] / result.theta[low, 1:],
                   never_low=int(result.never_counts[low]), never_high=int(result.never_counts[high]))


def larger_base_slows(result: Frequencies) -> bool:
    """C13: the larger base leaves pair 0 as it is (θ_0 ratio 1 within THETA0_TOL) and slows
    every other pair (ratio < 1)."""
    compared = slowing(result)
    return bool(compared is not None and abs(compared.theta0_ratio - 1.0) <= THETA0_TOL
                and compared.slowed == len(compared.ratios))


def figures(result: Frequencies, lang: str) -> tuple[go.Figure]:
    """θ_i (left) and the wavelength (right) per pair, one line per base, with the context as a
    dashed line on the wavelength panel."""
    fig = Fig(panels=(text("rope.fig.freq_panel", lang), text("rope.fig.wave_panel", lang)))
    hover_text = template("rope.fig.freq_hover", lang)   # formatted per point below
    pairs = list(range(result.pairs))
    dims = [f"{i}, {i + result.pairs}" for i in pairs]
    for color, base, theta, wavelength, turns in zip(colors(len(result.bases)), result.bases, result.theta,
                                                     result.wavelength, result.turns):
        name = base_label(base)
        hover = [hover_text.format(base=name, pair=p, dims=d, theta=th, wavelength=w, turns=tu,
                                   context=result.context)
                 for p, d, th, w, tu in zip(pairs, dims, theta, wavelength, turns)]
        for axes, values in (({}, theta), ({"xaxis": "x2", "yaxis": "y2"}, wavelength)):
            fig.add_scatter(x=pairs, y=values.tolist(), mode="lines+markers",
                            name=text("rope.fig.base", lang, base=name), legendgroup=name,
                            showlegend=not axes, line=dict(color=color, width=2), marker=dict(size=4),
                            hovertext=hover, hoverinfo="text", **axes)
    fig.add_scatter(x=[0, result.pairs - 1], y=[result.context, result.context], mode="lines",
                    name=text("rope.fig.context", lang, context=result.context),
                    line=dict(color="black", dash="dash", width=1.5),
                    hovertext=text("rope.fig.context_hover", lang, context=result.context),
                    hoverinfo="text", xaxis="x2", yaxis="y2")
    pair_title = text("rope.fig.pair_axis", lang)
    fig.update_xaxes(title_text=pair_title)
    fig.update_xaxes(2, title_text=pair_title)
    fig.update_yaxes(type="log", title_text=text("rope.fig.theta_axis", lang))
    fig.update_yaxes(2, type="log", title_text=text("rope.fig.wave_axis", lang))
    # the legend goes under the panels: above them it would cover the panel titles
    fig.update_layout(legend=dict(orientation="h", yanchor="top", y=-0.2))
    return (fig.finish("", height=420, lang=lang),)


def summary(result: Frequencies, lang: str) -> str:
    """One Markdown line per base (full turns inside the context, θ₀, θ₁, slowest wavelength),
    then how much the largest base slows each pair against the smallest."""
    lines = [text("rope.freq.line", lang, base=base_label(base), full=int(full), pairs=result.pairs,
                  context=result.context, never=int(never), theta0=float(theta[0]),
                  theta1=float(theta[1]) if result.pairs > 1 else float("nan"),
                  longest=float(wavelength.max()))
             for base, full, never, theta, wavelength in zip(result.bases, result.full_turn_counts,
                                                             result.never_counts, result.theta,
                                                             result.wavelength)]
    compared = slowing(result)
    if compared is not None:
        key = "rope.freq.slower" if larger_base_slows(result) else "rope.freq.not_slower"
        lines.append("\n" + text(key, lang, low=base_label(compared.low), high=base_label(compared.high),
                                 theta0_ratio=compared.theta0_ratio, slowed=compared.slowed,
                                 n=len(compared.ratios), min_ratio=float(compared.ratios[0]),
                                 max_ratio=compared.slowest_ratio, fastest=compared.fastest_ratio,
                                 last=len(compared.ratios), never_low=compared.never_low,
                                 never_high=compared.never_high, context=result.context))
    return "\n".join(lines)


def table(result: Frequencies, lang: str) -> pd.DataFrame:
    """Per base: who uses it, full turns inside the context, pairs that never turn, θ of pairs
    0 and 1, the slowest wavelength; headers and the "who uses it" column in `lang`."""
    theta1 = result.theta[:, 1] if result.pairs > 1 else np.full(len(result.bases), np.nan)
    columns = {
        "rope.col.base": [base_label(base) for base in result.bases],
        "rope.col.who": [who_uses(base, lang, result.model) for base in result.bases],
        "rope.col.pairs": [result.pairs] * len(result.bases),
        "rope.col.full_turn": result.full_turn_counts.astype(int).tolist(),
        "rope.col.never": result.never_counts.astype(int).tolist(),
        "rope.col.theta0": result.theta[:, 0].round(6).tolist(),
        "rope.col.theta1": theta1.round(6).tolist(),
        "rope.col.longest": result.wavelength.max(axis=1).round(0).tolist(),
    }
    return pd.DataFrame({text(key, lang): values for key, values in columns.items()})
