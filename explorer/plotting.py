"""One plot style for every figure of the app, and a fast way to build figures.

    fig = Fig()                                   # traces and layout as plain dicts
    fig.add_scatter(x=..., y=..., name=..., hovertemplate=...)
    fig.update_xaxes(title_text=...)
    return fig.finish(title, height=360)          # -> plotly go.Figure in the house style

`Fig.finish` builds the go.Figure with `_validate=False`: Plotly's per-property validation (and
its template machinery, and make_subplots) costs 20-300 ms a figure on a CPU, more than a decode
step, while this path costs a few milliseconds, which matters while tokens stream. Every key
set here is a documented Plotly attribute; the figure tests read the figures back.

Each figure carries Plotly's default template cut down to the parts that can apply to it
(`template_for`): the defaults of its own trace types and the layout less the kinds of subplot
it has none of. Plotly copies the template into every figure and writes it into every figure's
JSON; whole, it is 7 KB, most of it for trace types and subplots (3-D, maps, polar) no figure
here has, and copying and writing it took half of a figure's cost.

Colours: sequential data uses Viridis (or Cividis), categories take `colors(n)`, a series with
a meaning of its own (a rule, a policy) takes a named colour of OKABE_ITO, a visible/hidden mask
MASK_COLORS: all colour-blind safe. Formulas go in gr.Markdown, never in figure text (no MathJax
offline).
"""
from __future__ import annotations

import functools
from typing import Optional, Sequence

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
from plotly.colors import sample_colorscale

FONT = dict(family="system-ui, -apple-system, Segoe UI, Roboto, sans-serif", size=13, color="#2a3f5f")
GRID = "#e5ecf6"
# ticklabeloverflow "allow": Plotly's default ("hide past div") measures every tick label's box on
# every draw to hide those past the chart's edge, a page layout per label: a third of a streaming
# page's chart work on a phone-speed CPU, for labels automargin keeps inside anyway
AXIS = dict(gridcolor=GRID, zerolinecolor=GRID, linecolor=GRID, automargin=True, title=dict(standoff=8),
            ticklabeloverflow="allow")
SEQUENTIAL = "Viridis"
MUTED = "#666666"
# Okabe & Ito's colour-blind-safe palette, in their order (a cycle of categories takes them so).
OKABE_ITO = {"blue": "#0072B2", "orange": "#E69F00", "green": "#009E73", "purple": "#CC79A7",
             "sky": "#56B4E9", "vermillion": "#D55E00", "yellow": "#F0E442", "black": "#000000"}
# A mask's two values, hidden (0) and visible (1), as Cividis's two ends.
MASK_COLORS = [[0.0, "#00204c"], [0.5, "#00204c"], [0.5, "#ffe945"], [1.0, "#ffe945"]]


def colors(n: int, scale: str = SEQUENTIAL) -> list[str]:
    """n distinct colours along `scale`, stopping before viridis's pale yellow end, which
    vanishes on white. Past 6 colours the range reaches a little further (0.9), so that any two
    stay apart under protanopia, deuteranopia and tritanopia too
    (tests/unit/test_a11y_colours.py)."""
    end = 0.85 if n <= 6 else 0.9
    return sample_colorscale(scale, [0.0] if n <= 1 else list(np.linspace(0.0, end, n)))


# The layout keys of Plotly's template that style a kind of subplot other than x/y axes: they
# apply only to a figure that has such a subplot (a key of that name, e.g. polar2).
SUBPLOT_KINDS = ("polar", "ternary", "geo", "mapbox", "map", "scene", "smith")


@functools.lru_cache(maxsize=64)
def _cut_template(name: str, traces: frozenset, subplots: frozenset) -> dict:
    whole = pio.templates[name].to_plotly_json()
    layout = {key: value for key, value in whole.get("layout", {}).items()
              if key not in SUBPLOT_KINDS or key in subplots}
    data = {kind: value for kind, value in whole.get("data", {}).items() if kind in traces}
    return {"data": data, "layout": layout}


def template_for(data: Sequence[dict], layout: dict) -> dict:
    """Plotly's default template as it applies to a figure of these traces and this layout:
    the defaults of its trace types only (a template's data entries apply to traces of their
    type) and the layout less the subplot kinds the figure has none of (a template's polar
    entry, say, styles polar subplots only). A figure drawn with it looks as with the whole."""
    traces = frozenset(trace.get("type", "scatter") for trace in data)
    subplots = frozenset(kind for kind in SUBPLOT_KINDS
                         if any(key.rstrip("0123456789") == kind for key in layout))
    return _cut_template(pio.templates.default, traces, subplots)


class Fig:
    """Traces and layout collected as plain dicts; `finish` makes the styled go.Figure."""

    def __init__(self, panels: Optional[Sequence[str]] = None):
        """panels = (left title, right title): two side-by-side panels, x/y and x2/y2."""
        self.data: list[dict] = []
        self.layout: dict = {}
        if panels:
            left, right = panels
            self.layout.update(
                xaxis=dict(domain=[0.0, 0.44], anchor="y"), yaxis=dict(anchor="x"),
                xaxis2=dict(domain=[0.56, 1.0], anchor="y2"), yaxis2=dict(anchor="x2"),
                annotations=[dict(text=text, x=x, y=1.0, xref="paper", yref="paper", xanchor="center",
                                  yanchor="bottom", showarrow=False, font=dict(size=14))
                             for text, x in ((left, 0.22), (right, 0.78))])

    def grid(self, rows: int, cols: int, titles: Sequence[str] = (), n: Optional[int] = None,
             horizontal_spacing: float = 0.04, vertical_spacing: float = 0.06) -> None:
        """A rows x cols grid of panels (make_subplots' layout as plain dicts): panel k = 1, 2,
        ... row by row from the top, axes x/y, x2/y2, ...; `n` panels (default all), each
        titled by `titles[k - 1]` above it. Put a trace in panel k with **Fig.panel(k)."""
        n = rows * cols if n is None else n
        width = (1.0 - horizontal_spacing * (cols - 1)) / cols
        height = (1.0 - vertical_spacing * (rows - 1)) / rows
        for k in range(1, n + 1):
            r, c = divmod(k - 1, cols)
            x0 = c * (width + horizontal_spacing)
            y1 = 1.0 - r * (height + vertical_spacing)
            suffix = "" if k == 1 else str(k)
            self._axis(f"xaxis{suffix}", dict(domain=[x0, x0 + width], anchor=f"y{suffix}"))
            self._axis(f"yaxis{suffix}", dict(domain=[y1 - height, y1], anchor=f"x{suffix}"))
            if k <= len(titles):
                self.add_annotation(text=titles[k - 1], x=x0 + width / 2, y=y1, xref="paper", yref="paper",
                                    xanchor="center", yanchor="bottom", showarrow=False, font=dict(size=14))

    @staticmethod
    def panel(k: int) -> dict:
        """The axis keys of a trace in panel k of `grid` (or of `panels`)."""
        return dict(xaxis="x" if k == 1 else f"x{k}", yaxis="y" if k == 1 else f"y{k}")

    def add_trace(self, kind: str, **trace) -> None:
        self.data.append({"type": kind, **trace})

    def add_scatter(self, **trace) -> None:
        self.add_trace("scatter", **trace)

    def add_bar(self, **trace) -> None:
        self.add_trace("bar", **trace)

    def add_heatmap(self, **trace) -> None:
        self.add_trace("heatmap", **trace)

    def add_annotation(self, **annotation) -> None:
        self.layout.setdefault("annotations", []).append(annotation)

    def add_shape(self, **shape) -> None:
        self.layout.setdefault("shapes", []).append(shape)

    def _axis(self, name: str, props: dict) -> None:
        props = dict(props)
        if "title_text" in props:
            props["title"] = {"text": props.pop("title_text")}
        self.layout.setdefault(name, {}).update(props)

    def update_xaxes(self, row_col: int = 1, **props) -> None:
        self._axis("xaxis" if row_col == 1 else f"xaxis{row_col}", props)

    def update_yaxes(self, row_col: int = 1, **props) -> None:
        self._axis("yaxis" if row_col == 1 else f"yaxis{row_col}", props)

    def update_layout(self, **props) -> None:
        for key, value in props.items():
            if isinstance(value, dict) and isinstance(self.layout.get(key), dict):
                self.layout[key].update(value)
            else:
                self.layout[key] = value

    def integer_axis(self, values: Sequence[int], axis: str = "x") -> None:
        """Token counts and positions are integers: no 590.5 ticks on a short run."""
        if len(values) and max(values) - min(values) <= 8:
            self._axis(f"{axis}axis", {"dtick": 1})

    def finish(self, title: str = "", height: int = 360, lang: Optional[str] = None,
               alt: Optional[str] = None) -> go.Figure:
        """The figure in the house style: title on top, the legend in its own band under it
        (never over the title or the data), white background, light grid. Its text
        alternative (layout.meta.alt, static/charts.js) is `alt`, or else in `lang` the sentence
        explorer/alt_text.py reads off the traces."""
        if alt is None and lang is not None:
            from explorer.alt_text import describe
            alt = describe(self.data, self.layout, title, lang)
        if alt:
            self.layout["meta"] = {**self.layout.get("meta", {}), "alt": alt}
        self.update_layout(
            title=dict(text=title, x=0.01, y=0.98, yanchor="top", yref="container", font=dict(size=15)),
            height=height, margin=dict(l=60, r=20, t=88 if title else 40, b=50),
            hoverlabel=dict(font_size=12), paper_bgcolor="white",
            plot_bgcolor=self.layout.get("plot_bgcolor", "white"),
            font=dict(FONT), hovermode=self.layout.get("hovermode", "closest"),
            legend={**dict(orientation="h", yanchor="bottom", y=1.01, x=0, xanchor="left",
                           font=dict(size=12)), **self.layout.get("legend", {})})
        for name in [key for key in self.layout if key.startswith(("xaxis", "yaxis"))] or ["xaxis", "yaxis"]:
            self.layout[name] = {**AXIS, **self.layout.get(name, {})}
        if "template" not in self.layout and pio.templates.default is not None:
            self.layout["template"] = template_for(self.data, self.layout)
        return go.Figure({"data": self.data, "layout": self.layout}, _validate=False)


def empty_figure(message: str, title: str = "", height: int = 360) -> go.Figure:
    """A figure that says, in its middle, why there is nothing to draw yet."""
    fig = Fig()
    fig.add_annotation(text=message, showarrow=False, font=dict(size=14, color=MUTED),
                       xref="paper", yref="paper", x=0.5, y=0.5)
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return fig.finish(title, height, alt=message)
