"""The decode roofline in the visitor's language (claim C2): the chart of the measured roof,
the model's line and the measured steps; tokens/s against the batch; the measured roof in words;
and the summary, sentences chosen from the measured numbers (explorer/generate/roofline.py).

    roofline_fig, rates_fig = figures(result, lang)
    device_line(result.roof, lang), summary(result, lang)"""
from __future__ import annotations

import math
import time

import plotly.graph_objects as go

from explorer.generate.device_roof import PRODUCT_ROWS, REFRESH_INTERVAL_S, DeviceRoof
from explorer.generate.roofline import (C2_BATCH, C2_MIN_BANDWIDTH_SHARE, C2_MIN_SPEEDUP,
                                        RooflineResult, bandwidth_share, c2_holds, knee,
                                        memory_bound_at_one, over_roof, speedup)
from explorer.generate.step_cost import crossing_batch
from explorer.locales import text
from explorer.plotting import Fig, colors


def figures(result: RooflineResult, lang: str = "en") -> tuple[go.Figure, go.Figure]:
    """(the roofline: measured roof, the model's line, the measured steps; tokens/s against B)."""
    roof = result.roof
    ridge = roof.ridge
    line_x = list(result.line_intensity)
    every_x = line_x + list(result.intensity) + [ridge]
    xs = [min(every_x) / 2, ridge, max(every_x) * 2]
    palette = colors(3)
    fig = Fig()
    fig.add_scatter(x=xs, y=[min(roof.flops, x * roof.bandwidth) / 1e9 for x in xs], mode="lines",
                    line=dict(color="#000", width=2), name=text("generate.roof.fig.roof", lang),
                    hovertemplate="%{x:.2f} FLOP/B → %{y:.1f} GFLOP/s<extra></extra>")
    fig.add_scatter(x=line_x, y=[result.attainable(x) / 1e9 for x in line_x], mode="lines+markers+text",
                    line=dict(color=palette[1], dash="dot"), marker=dict(size=7, color=palette[1]),
                    text=[f"B={b}" if i % 2 == 0 else "" for i, b in enumerate(result.line_batches)],
                    textposition="top left", name=text("generate.roof.fig.model", lang, t=result.context,
                                                         weights=result.shape.weights),
                    customdata=[[b, by / 1e6, f / 1e9] for b, by, f in
                                zip(result.line_batches, result.line_bytes, result.line_flops)],
                    hovertemplate=text("generate.roof.fig.model_hover", lang) + "<extra></extra>")
    fig.add_scatter(x=list(result.intensity), y=[f / 1e9 for f in result.achieved_flops],
                    mode="lines+markers+text", marker=dict(size=11, color=palette[0], symbol="diamond"),
                    line=dict(color=palette[0]), textposition="bottom right",
                    text=[f"B={b}" for b in result.batches], name=text("generate.roof.fig.measured", lang),
                    customdata=[[b, s * 1e3, r] for b, s, r in
                                zip(result.batches, result.step_seconds, result.tokens_per_s)],
                    hovertemplate=text("generate.roof.fig.measured_hover", lang) + "<extra></extra>")
    fig.add_shape(type="line", x0=ridge, x1=ridge, y0=0, y1=1, yref="paper",
                  line=dict(color="#999", dash="dash", width=1))
    fig.add_annotation(x=math.log10(ridge), y=0.0, yref="paper", showarrow=False, yanchor="bottom",
                       xanchor="left", text=text("generate.roof.fig.ridge", lang, ridge=ridge),
                       font=dict(size=11))
    achieved = [f / 1e9 for f in result.achieved_flops]
    lowest = min(achieved + [min(roof.flops, xs[0] * roof.bandwidth) / 1e9])
    highest = max(achieved + [roof.flops / 1e9])   # a step on a busy machine can pass the roof
    fig.update_xaxes(type="log", dtick="D2", title_text=text("generate.roof.fig.intensity", lang))
    fig.update_yaxes(type="log", dtick="D2", title_text=text("generate.roof.fig.gflops", lang),
                     range=[math.log10(lowest) - 0.15, math.log10(highest) + 0.3])
    roofline = fig.finish(text("generate.roof.fig.title", lang, model=result.model, t=result.context),
                          height=420, lang=lang)

    rates = Fig()
    line = [(b, result.predicted_tokens_per_s(b, by, f)) for b, by, f in
            zip(result.line_batches, result.line_bytes, result.line_flops) if b <= 4 * max(result.batches)]
    rates.add_scatter(x=[b for b, _ in line], y=[r for _, r in line], mode="lines+markers",
                      line=dict(color=palette[1], dash="dot"), name=text("generate.roof.fig.predicted", lang),
                      hovertemplate="B = %{x}: %{y:.1f} tok/s<extra></extra>")
    rates.add_scatter(x=list(result.batches), y=list(result.tokens_per_s), mode="lines+markers",
                      marker=dict(size=11, color=palette[0], symbol="diamond"), line=dict(color=palette[0]),
                      name=text("generate.roof.fig.measured", lang),
                      hovertemplate="B = %{x}: %{y:.1f} tok/s<extra></extra>")
    found = knee(result.batches, result.tokens_per_s)
    if found is not None:
        rates.add_shape(type="line", x0=found, x1=found, y0=0, y1=1, yref="paper",
                        line=dict(color=palette[2], dash="dash", width=1))
        rates.add_annotation(x=math.log10(found), y=1.0, yref="paper", showarrow=False, yanchor="bottom",
                             text=text("generate.roof.fig.knee", lang, b=found), font=dict(size=11))
    rates.update_xaxes(type="log", tickvals=[b for b, _ in line], ticktext=[str(b) for b, _ in line],
                       title_text=text("generate.roof.fig.batch", lang))
    rates.update_yaxes(type="log", title_text=text("generate.roof.fig.tokens", lang))
    return roofline, rates.finish(text("generate.roof.fig.rates_title", lang), height=420, lang=lang)


def device_line(roof: DeviceRoof, lang: str = "en") -> str:
    """The measured roof in words: bandwidth, FLOP/s, ridge, when and how."""
    when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(roof.measured_at))
    threads = text("generate.roof.threads", lang, n=roof.threads) if roof.threads else ""
    rows = roof.settings.matmul_n if roof.weights == "fp32" else PRODUCT_ROWS
    line = text("generate.roof.device", lang, device=roof.device, dtype=roof.dtype, threads=threads,
                bandwidth=roof.bandwidth / 1e9, flops=roof.flops / 1e9, ridge=roof.ridge, when=when,
                mib=roof.settings.bandwidth_bytes >> 20, n=roof.settings.matmul_n, rows=rows,
                product=roof.product or roof.weights, mv=roof.tries[0], mm=roof.tries[1],
                seconds=roof.seconds)
    if roof.refresh_in_s > 0:   # a refresh asked too soon: the kept roof, and when one may run
        line += " " + text("generate.roof.refresh_kept", lang,
                           interval=round(REFRESH_INTERVAL_S / 60), n=math.ceil(roof.refresh_in_s / 60))
    return line


def summary(result: RooflineResult, lang: str = "en") -> str:
    """Sentences chosen from the measured numbers, each carrying its number."""
    roof, shape = result.roof, result.shape
    i1 = result.intensity[0]
    b1_bytes, b1_seconds = result.measured_bytes[0], result.step_seconds[0]
    paths = result.paths or ("batched",) * len(result.batches)
    later = next((p for b, p in zip(result.batches, paths) if b > 1), "batched")
    parts = [text("generate.roof.sum.step", lang, b=result.batches[0], mb=b1_bytes / 1e6,
                  gflop=result.measured_flops[0] / 1e9, bytes=shape.element_bytes,
                  t=round(result.measured_context[0]), weights=shape.weights,
                  bpw=shape.bytes_per_weight, matrix_mb=shape.matrix_bytes / 1e6,
                  path=text(f"generate.roof.path.{paths[0]}", lang),
                  batched=text(f"generate.roof.path.{later}", lang))]
    key = "generate.roof.sum.memory_bound" if memory_bound_at_one(result) else "generate.roof.sum.compute_bound"
    parts.append(text(key, lang, intensity=i1, ridge=roof.ridge, ratio=roof.ridge / i1))
    share = bandwidth_share(result)
    key = "generate.roof.sum.share" if share >= C2_MIN_BANDWIDTH_SHARE else "generate.roof.sum.share_low"
    parts.append(text(key, lang, ms=b1_seconds * 1e3, gbs=result.achieved_bandwidth[0] / 1e9,
                      share=100 * share, least=C2_MIN_BANDWIDTH_SHARE,
                      flop_share=100 * result.achieved_flops[0] / roof.flops))
    over = over_roof(result)
    if over is not None:
        parts.append(text("generate.roof.sum.over_roof", lang, b=over[0], share=100 * over[1]))
    crossing = crossing_batch(shape, result.context, roof.ridge)
    if crossing is None:
        parts.append(text("generate.roof.sum.model_no_knee", lang))
    else:
        parts.append(text("generate.roof.sum.model_knee", lang, b=crossing, ridge=roof.ridge))
    rates = result.tokens_per_s
    last = result.batches[-1]
    found = knee(result.batches, rates)
    gain = rates[-1] / rates[0]
    if found is None:
        parts.append(text("generate.roof.sum.no_knee", lang, b=last, gain=gain, r1=rates[0], rb=rates[-1]))
    else:
        at = result.batches.index(found)
        parts.append(text("generate.roof.sum.knee", lang, knee=found, gain_knee=rates[at] / rates[0],
                          after=rates[-1] / rates[at], b=last, gain=gain, r1=rates[0], rb=rates[-1]))
    if C2_BATCH in result.batches:
        key = "generate.roof.sum.c2_pass" if speedup(result) >= C2_MIN_SPEEDUP else "generate.roof.sum.c2_fail"
        parts.append(text(key, lang, b=C2_BATCH, gain=speedup(result), k=C2_MIN_SPEEDUP))
        parts.append(text("generate.roof.sum.c2_holds" if c2_holds(result) else "generate.roof.sum.c2_fails", lang))
    return " ".join(parts)
