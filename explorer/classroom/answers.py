"""The class's answers to a predict step, drawn: a histogram of counts (no names, no single
answer picked out) with the value the teacher's run measured marked beside it."""
from __future__ import annotations

import plotly.graph_objects as go

from explorer.classroom.histogram import Histogram, axis_range
from explorer.locales import text
from explorer.plotting import OKABE_ITO, Fig, empty_figure


def figure(hist: Histogram | None, lang: str, height: int = 300) -> go.Figure:
    if hist is None or hist.n == 0:
        return empty_figure(text("classroom.fig.none", lang), height=height)
    centres = [a / 2 + b / 2 for a, b in zip(hist.edges, hist.edges[1:])]   # no overflow
    width = hist.edges[1] / 2 - hist.edges[0] / 2            # half a bin: a bar is 95 % of two
    fig = Fig()
    fig.add_bar(x=centres, y=list(hist.counts), width=[width * 1.9] * len(centres),
                marker=dict(color=OKABE_ITO["blue"]), name=text("classroom.fig.answers", lang),
                hovertemplate=text("classroom.fig.hover", lang) + "<extra></extra>",
                customdata=[[a, b] for a, b in zip(hist.edges, hist.edges[1:])])
    if hist.measured is not None:
        top = max(hist.counts) or 1
        fig.add_scatter(x=[hist.measured, hist.measured], y=[0, top * 1.1], mode="lines",
                        line=dict(color=OKABE_ITO["orange"], width=4, dash="dash"),
                        name=text("classroom.fig.measured", lang, value=f"{hist.measured:g}"))
    # half a bin of margin: an answer or a measured value on the last edge stays in sight
    fig.update_xaxes(title_text=text("classroom.fig.x", lang), range=list(axis_range(hist)))
    fig.update_yaxes(title_text=text("classroom.fig.y", lang), rangemode="tozero")
    fig.integer_axis([0, max(hist.counts)], axis="y")     # whole students, no 0.5 tick
    measured = text("classroom.fig.alt_measured", lang, value=f"{hist.measured:g}") \
        if hist.measured is not None else ""
    alt = text("classroom.fig.alt", lang, n=hist.n, top=max(hist.counts),
               low=f"{hist.edges[0]:g}", high=f"{hist.edges[-1]:g}", measured=measured)
    return fig.finish(text("classroom.fig.title", lang, n=hist.n), height=height, alt=alt)
