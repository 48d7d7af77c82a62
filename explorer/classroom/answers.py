"""The class's answers to a question, drawn: a histogram of counts per round (no names, no
single answer picked out) with the value the teacher's run measured marked beside it. Two
rounds (a vote, a discussion, a vote again) are drawn side by side on the same bins and the
same axes, so that the shift between them is what the eye compares."""
from __future__ import annotations

from typing import Optional, Sequence, Union

import plotly.graph_objects as go

from explorer.classroom.histogram import Histogram, axis_range
from explorer.locales import text
from explorer.plotting import OKABE_ITO, Fig, empty_figure

Drawn = Union[Histogram, Sequence[Histogram], None]


def figure(hists: Drawn, lang: str, height: int = 300, parent: Optional[str] = None) -> go.Figure:
    """One panel per round in `hists` (a Histogram, or one per round on the same bins);
    `parent`: the id of the question this one is the transfer of."""
    rounds = [hists] if isinstance(hists, Histogram) else [h for h in (hists or ()) if h is not None]
    if not rounds or sum(h.n for h in rounds) == 0:
        return empty_figure(text("classroom.fig.none", lang), height=height)
    two = len(rounds) > 1
    fig = Fig(panels=[text("classroom.fig.round", lang, round=k + 1, n=h.n)
                      for k, h in enumerate(rounds)] if two else None)
    top = max(max(h.counts) for h in rounds) or 1
    for k, hist in enumerate(rounds, start=1):
        axes = Fig.panel(k) if two else {}
        centres = [a / 2 + b / 2 for a, b in zip(hist.edges, hist.edges[1:])]   # no overflow
        width = hist.edges[1] / 2 - hist.edges[0] / 2        # half a bin: a bar is 95 % of two
        fig.add_bar(x=centres, y=list(hist.counts), width=[width * 1.9] * len(centres),
                    marker=dict(color=OKABE_ITO["blue" if k == 1 else "green"]),
                    name=text("classroom.fig.round", lang, round=k, n=hist.n) if two
                    else text("classroom.fig.answers", lang), showlegend=not two,
                    hovertemplate=text("classroom.fig.hover", lang) + "<extra></extra>",
                    customdata=[[a, b] for a, b in zip(hist.edges, hist.edges[1:])], **axes)
        if hist.measured is not None:
            fig.add_scatter(x=[hist.measured, hist.measured], y=[0, top * 1.1], mode="lines",
                            line=dict(color=OKABE_ITO["orange"], width=4, dash="dash"),
                            name=text("classroom.fig.measured", lang, value=f"{hist.measured:g}"),
                            showlegend=not two, **axes)
        # half a bin of margin: an answer or a measured value on the last edge stays in sight;
        # both panels share the bins, the x range and the y range
        fig.update_xaxes(k, title_text=text("classroom.fig.x", lang), range=list(axis_range(hist)))
        fig.update_yaxes(k, title_text=text("classroom.fig.y", lang) if k == 1 else None,
                         range=[0, top * 1.15])
        if top <= 8:
            fig.update_yaxes(k, dtick=1)               # whole students, no 0.5 tick
    alts = [_alt(h, lang) for h in rounds]
    subtitle = ""
    if two:
        # the panels' titles name the rounds; the subtitle names the dashed line (no legend band
        # over the panels' titles; two short lines fit a phone's width). A subtitle, not a
        # second line after <br>: Plotly lifts a top-anchored title's first line by the others'
        # height, out of the figure.
        title = text("classroom.fig.title_rounds", lang)
        if rounds[0].measured is not None:
            subtitle = text("classroom.fig.run_suffix", lang, value=f"{rounds[0].measured:g}")
        alt = text("classroom.fig.alt_rounds", lang, first=alts[0], second=alts[1])
    else:
        title, alt = text("classroom.fig.title", lang, n=rounds[0].n), alts[0]
    if parent:
        title = text("classroom.fig.title_transfer", lang, parent=parent, n=rounds[-1].n)
    drawn = fig.finish(title, height=height, alt=alt)
    if subtitle:
        drawn.update_layout(title_subtitle=dict(text=subtitle, font=dict(size=13)))
    return drawn


def _alt(hist: Histogram, lang: str) -> str:
    measured = text("classroom.fig.alt_measured", lang, value=f"{hist.measured:g}") \
        if hist.measured is not None else ""
    return text("classroom.fig.alt", lang, n=hist.n, top=max(hist.counts),
                low=f"{hist.edges[0]:g}", high=f"{hist.edges[-1]:g}", measured=measured)
