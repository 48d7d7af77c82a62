"""The class as one batch in the visitor's language (explorer/generate/batch_view.py's BatchView):
the runs in the loop, each a row (cache held, its pooled row's width, a paged layout's whole
blocks), the decode steps' time against their runs beside the roofline's prediction, and the
summary in words.

    rows_fig, steps_fig = figures(view, lang); summary(view, lang)"""
from __future__ import annotations

import math

import plotly.graph_objects as go

from explorer.locales import text
from explorer.plotting import MUTED, OKABE_ITO, Fig, empty_figure
from explorer.generate.batch_view import BLOCK, BatchView, log2_ticks, measured_by_batch

OWN = OKABE_ITO["orange"]
OTHERS = OKABE_ITO["blue"]
ALLOCATED = "#d9d9d9"


def row_label(row, lang: str) -> str:
    label = text("serving.you" if row.own else "serving.run", lang, n=row.number)
    if row.state != "decoding":
        label += f" ({text('serving.state.' + row.state, lang)})"
    return label


def rows_figure(view: BatchView, lang: str) -> go.Figure:
    """One horizontal row per run: its pooled row's width (grey), a paged layout's whole blocks
    (outline) and the tokens held (blue; the viewer's own in orange)."""
    title = text("serving.fig.rows", lang)
    if not view.rows:
        return empty_figure(text("serving.fig.no_runs", lang), title, height=300)
    rows = list(reversed(view.rows))            # row 1 on top
    labels = [row_label(row, lang) for row in rows]
    hover = text("serving.fig.hover", lang)
    fig = Fig()
    fig.add_bar(y=labels, x=[row.allocated for row in rows], orientation="h",
                name=text("serving.fig.allocated", lang), marker=dict(color=ALLOCATED),
                hovertemplate=hover)
    fig.add_bar(y=labels, x=[row.paged for row in rows], orientation="h", width=0.6,
                name=text("serving.fig.paged", lang, block=BLOCK),
                marker=dict(color="rgba(0,0,0,0)", line=dict(color=OKABE_ITO["green"], width=2)),
                hovertemplate=hover)
    for own in (False, True):
        mine = [row for row in rows if row.own == own]
        if not mine:
            continue
        fig.add_bar(y=[row_label(row, lang) for row in mine], x=[row.used for row in mine],
                    orientation="h", width=0.4,
                    name=text("serving.fig.used_own" if own else "serving.fig.used", lang),
                    marker=dict(color=OWN if own else OTHERS), hovertemplate=hover)
    fig.update_layout(barmode="overlay", bargap=0.25)
    fig.update_xaxes(title_text=text("serving.fig.tokens", lang), rangemode="tozero")
    fig.update_yaxes(categoryorder="array", categoryarray=labels, automargin=True,
                     tickfont=dict(color=MUTED))
    height = max(300, min(1200, 120 + 26 * len(rows)))
    return fig.finish(title, height=height, lang=lang)


def steps_figure(view: BatchView, lang: str) -> go.Figure:
    """Every recent decode step (runs in it, milliseconds), their median per B, the roofline's
    predicted step time for B = 1 ... max_batch, and its knee."""
    title = text("serving.fig.steps", lang)
    if not view.steps and not view.predicted:
        return empty_figure(text("serving.fig.no_steps", lang), title, height=340)
    hover = text("serving.fig.step_hover", lang)
    fig = Fig()
    if view.predicted:
        fig.add_scatter(x=[b for b, _ in view.predicted], y=[1000 * s for _, s in view.predicted],
                        mode="lines", line=dict(color="#000", dash="dot"),
                        name=text("serving.fig.predicted", lang, t=round(view.context)),
                        hovertemplate=hover)
    if view.steps:
        fig.add_scatter(x=[b for b, _ in view.steps], y=[1000 * s for _, s in view.steps],
                        mode="markers", marker=dict(size=6, color=OTHERS, opacity=0.35),
                        name=text("serving.fig.measured", lang), hovertemplate=hover)
        medians = measured_by_batch(view.steps)
        fig.add_scatter(x=list(medians), y=[1000 * s for s in medians.values()],
                        mode="lines+markers", line=dict(color=OWN), marker=dict(size=9, color=OWN),
                        name=text("serving.fig.median", lang), hovertemplate=hover)
    if view.knee is not None and view.knee <= view.max_batch:
        # on a log axis plotly.js places a shape at the data value but an annotation at log10
        # of it (plotly.js#6194; seen in the browser: a shape at log10(24) stood at B = 1.4)
        at = math.log10(view.knee)
        fig.add_shape(type="line", x0=view.knee, x1=view.knee, y0=0, y1=1, yref="paper",
                      line=dict(color=OKABE_ITO["green"], dash="dash"))
        fig.add_annotation(text=text("serving.fig.knee", lang, b=view.knee), x=at, y=1.0,
                           yref="paper", showarrow=False, xanchor="left", yanchor="top",
                           font=dict(color=OKABE_ITO["green"]))
    fig.update_xaxes(title_text=text("serving.fig.runs_axis", lang), type="log",
                     tickvals=log2_ticks(view.max_batch),
                     range=[math.log10(0.8), math.log10(view.max_batch * 1.25)])
    fig.update_yaxes(title_text=text("serving.fig.ms_axis", lang), rangemode="tozero")
    return fig.finish(title, height=340, lang=lang)


def figures(view: BatchView, lang: str = "en") -> tuple[go.Figure, go.Figure]:
    return rows_figure(view, lang), steps_figure(view, lang)


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 1e5 else f"{n / 1e3:.1f} kB"


def summary(view: BatchView, lang: str = "en") -> str:
    used, allocated, paged = view.totals
    parts = [text("serving.summary", lang, decoding=view.count("decoding"),
                  prefilling=view.count("prefilling"), waiting=view.count("waiting"),
                  max_batch=view.max_batch, used=_mb(used), allocated=_mb(allocated),
                  paged=_mb(paged), block=BLOCK, blocks=sum(r.blocks for r in view.rows),
                  shared=view.shared_tokens)]
    own = [str(row.number) for row in view.rows if row.own]
    if view.rows:
        parts.append(text("serving.summary.own", lang, rows=", ".join(own)) if own
                     else text("serving.summary.no_own", lang))
    if view.hidden:
        parts.append(text("serving.summary.hidden", lang, n=view.hidden))
    if not view.roof:
        if view.rows or view.steps:   # a loop at work: its roof is measured on the first look
            parts.append(text("serving.summary.no_roof", lang))
    elif view.knee is not None and view.knee <= view.max_batch:
        parts.append(text("serving.summary.knee", lang, model=view.model, t=round(view.context),
                          knee=view.knee))
    else:
        parts.append(text("serving.summary.no_knee", lang, model=view.model, t=round(view.context)))
    medians = measured_by_batch(view.steps)
    if medians:
        rows = "; ".join(text("serving.summary.step_row", lang, b=b, ms=1000 * s, tps=b / s)
                         for b, s in medians.items())
        parts.append(text("serving.summary.steps", lang, rows=rows))
    return " ".join(parts)
