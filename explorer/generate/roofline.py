"""The decode roofline (C2): bytes read and FLOPs of one decode step of the loaded model, for
batches of 1 to 64 sequences, against the machine's bandwidth and peak. Weights are read once
for the whole batch, each sequence reads its own cache (ModelConfig's KV bytes per token)."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import plotly.graph_objects as go

from explorer.inputs import whole_number
from explorer.locales import Term, text
from explorer.plotting import Fig

# The roof: the design figures of a 2-core CPU host, measured on an idle machine
# (a 512 MB fp32 GEMV for the bandwidth, sgemm for the peak); not measured at request time.
DESIGN_BANDWIDTH = 30e9         # bytes/s
DESIGN_PEAK_FLOPS = 146e9       # FLOP/s
BATCHES = (1, 2, 4, 8, 16, 32, 64)
MAX_ROOF_CONTEXT = 10_000_000


def decode_step_cost(config, n_params: int, element_bytes: int, context: int, batch: int) -> tuple[float, float]:
    """(bytes read, FLOPs) of one decode step for `batch` sequences at `context` tokens:
    weights are read once for the whole batch, each sequence reads its own cache;
    2 FLOPs per weight per token, plus q·k and p·v over the cache (4·H·d·t per layer)."""
    weight_bytes = n_params * element_bytes
    cache_bytes = config.kv_bytes_per_token(element_bytes) * context
    flops = batch * (2.0 * n_params + 4.0 * config.n_layers * config.n_heads * config.head_dim * context)
    return weight_bytes + batch * cache_bytes, flops


def check(element_bytes, context) -> tuple[int, int]:
    return (whole_number(element_bytes, Term("generate.name.calc_bytes"), 1, 8),
            whole_number(context, Term("generate.name.roof_context"), 1, MAX_ROOF_CONTEXT))


@dataclass(frozen=True)
class RooflineResult:
    context: int
    batches: tuple
    bytes_read: tuple          # per batch size, bytes one decode step reads
    flops: tuple               # per batch size, FLOPs of one decode step
    bandwidth: float           # bytes/s of the roof
    peak: float                # FLOP/s of the roof

    @property
    def intensity(self) -> tuple:
        return tuple(f / b for b, f in zip(self.bytes_read, self.flops))


def run(config, n_params: int, element_bytes, context, batches: Sequence[int] = BATCHES,
        bandwidth: float = DESIGN_BANDWIDTH, peak: float = DESIGN_PEAK_FLOPS) -> RooflineResult:
    """The roofline points of the model at `context` tokens (capped at the model's context)."""
    element_bytes, context = check(element_bytes, context)
    context = min(context, config.max_position_embeddings)
    points = [decode_step_cost(config, n_params, element_bytes, context, b) for b in batches]
    return RooflineResult(context, tuple(batches), tuple(p[0] for p in points),
                          tuple(p[1] for p in points), bandwidth, peak)


def figures(result: RooflineResult, lang: str = "en") -> tuple[go.Figure]:
    bandwidth, peak, batches = result.bandwidth, result.peak, result.batches
    intensity = list(result.intensity)
    ridge = peak / bandwidth
    xs = [min(intensity + [ridge]) / 2, ridge, max(intensity + [ridge]) * 4]
    fig = Fig()
    fig.add_scatter(x=xs, y=[min(peak, x * bandwidth) / 1e9 for x in xs], mode="lines",
                    line=dict(color="#000", width=2), name=text("generate.fig.roof", lang),
                    hovertemplate="%{x:.2f} FLOP/B → %{y:.0f} GFLOP/s<extra></extra>")
    fig.add_scatter(x=intensity, y=[min(peak, x * bandwidth) / 1e9 for x in intensity],
                    mode="markers+text", textposition="top left",
                    text=[f"B={b}" if i % 3 == 0 or i == len(batches) - 1 else "" for i, b in enumerate(batches)],
                    marker=dict(size=10, color=list(range(len(batches))), colorscale="Viridis"),
                    name=text("generate.fig.batch", lang, b=f"{batches[0]}…{batches[-1]}"),
                    customdata=[[b, by / 1e6, f / 1e9] for b, by, f in zip(batches, result.bytes_read, result.flops)],
                    hovertemplate=(text("generate.fig.roof_hover", lang) + "<extra></extra>"))
    fig.update_xaxes(type="log", dtick="D2", title_text=text("generate.fig.intensity", lang))
    lowest = min(min(peak, x * bandwidth) for x in xs) / 1e9
    fig.update_yaxes(type="log", dtick="D2", title_text=text("generate.fig.gflops", lang),
                     range=[math.log10(lowest) - 0.1, math.log10(peak / 1e9) + 0.35])  # room for labels
    return (fig.finish(text("generate.fig.roofline_title", lang, t=result.context)),)
