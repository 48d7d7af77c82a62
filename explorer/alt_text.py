"""The one-sentence text alternative of a figure, read from the numbers the figure draws.

A screen reader cannot see a chart; each figure of the app carries a sentence in the visitor's
language in its layout (`layout.meta.alt`, set by `Fig.finish(alt=...)`), and static/charts.js
gives the chart's container role="img" and that sentence as its aria-label.

A topic states what its figure is about with a sentence of its own (the attention maps: which
head puts what share of its attention on which token); every other figure gets `describe`'s,
which reads the figure's own traces, so no number in it is written in advance:
  - a heatmap: its size, and where its largest and smallest values are;
  - a line: where it starts, where it ends, and its highest point;
  - bars: the largest and the smallest bar.
The figure's title (or its panel titles) says what the numbers are.
"""
from __future__ import annotations

import math
import re
from typing import Any, Optional, Sequence

import numpy as np

from explorer.locales import text

# Series described by name before the sentence says "and N more": a sentence, not a table.
MAX_SERIES = 2


def number(value: float) -> str:
    """A value as a reader says it: three significant digits, no exponent for everyday sizes."""
    value = float(value)
    if value == 0 or not math.isfinite(value):
        return "0" if value == 0 else str(value)
    if 1e-3 <= abs(value) < 1e6:
        digits = max(0, 2 - int(math.floor(math.log10(abs(value)))))
        return f"{value:,.{digits}f}".rstrip("0").rstrip(".") if digits else f"{value:,.0f}"
    return f"{value:.3g}"


def plain(markup: Any) -> str:
    """Plotly text (HTML tags, <br>, <sub>) as plain words."""
    if not isinstance(markup, str):
        return ""
    return re.sub(r"\s+", " ", re.sub(r"<br\s*/?>|<[^>]*>", " ", markup)).strip(" :")


def _label(values: Optional[Sequence[Any]], index: int) -> str:
    if values is None or index >= len(values):
        return str(index)
    value = values[index]
    return number(value) if isinstance(value, (int, float, np.integer, np.floating)) else plain(str(value))


def _axis_title(layout: dict, axis: str, short: bool = True) -> str:
    """An axis's title; `short`: less its parenthesised details, e.g. "pair index i" of "pair
    index i (dims i and i + d/2)"."""
    title = layout.get(axis, {}).get("title")
    title = plain(title.get("text") if isinstance(title, dict) else title)
    return re.sub(r"\s*[(（][^()（）]*[)）]", "", title).strip() if short else title


def _floats(values: Any) -> np.ndarray:
    try:
        return np.asarray([np.nan if v is None else v for v in np.ravel(np.asarray(values, dtype=object))],
                          dtype=float)
    except (TypeError, ValueError):
        return np.asarray([], dtype=float)


def _heatmap(trace: dict, lang: str) -> Optional[str]:
    z = np.asarray(trace.get("z", []), dtype=object)
    if z.ndim != 2 or not z.size:
        return None
    values = _floats(z).reshape(z.shape)
    if not np.isfinite(values).any():
        return None
    top = np.unravel_index(np.nanargmax(values), values.shape)
    low = np.unravel_index(np.nanargmin(values), values.shape)
    xs, ys = trace.get("x"), trace.get("y")
    return text("a11y.heatmap", lang, rows=values.shape[0], cols=values.shape[1],
                max=number(values[top]), max_y=_label(ys, top[0]), max_x=_label(xs, top[1]),
                min=number(values[low]), min_y=_label(ys, low[0]), min_x=_label(xs, low[1]))


def _series(trace: dict, layout: dict, lang: str) -> Optional[str]:
    horizontal = trace.get("orientation") == "h"
    values = _floats(trace.get("x" if horizontal else "y", []))
    where = trace.get("y" if horizontal else "x")
    where = list(where) if where is not None else list(range(len(values)))
    keep = [i for i in range(len(values)) if math.isfinite(values[i])]
    if not keep:
        return None
    axis = _axis_title(layout, ("yaxis" if horizontal else "xaxis") + _axis_suffix(trace, horizontal))
    name = plain(trace.get("name")) or text("a11y.series", lang)
    top = max(keep, key=lambda i: values[i])
    if trace.get("type") == "bar" or len(keep) == 1 or trace.get("mode") == "markers":
        low = min(keep, key=lambda i: values[i])
        return text("a11y.bars", lang, name=name, axis=axis, n=len(keep), max=number(values[top]),
                    max_x=_label(where, top), min=number(values[low]), min_x=_label(where, low))
    first, last = keep[0], keep[-1]
    change = values[last] - values[first]
    key = "a11y.rises" if change > 0 else "a11y.falls" if change < 0 else "a11y.flat"
    sentence = text(key, lang, name=name, axis=axis, first=number(values[first]), x0=_label(where, first),
                    last=number(values[last]), x1=_label(where, last), change=number(abs(change)))
    if values[top] > max(values[first], values[last]):
        sentence += text("a11y.peak", lang, max=number(values[top]), max_x=_label(where, top))
    return sentence


def _axis_suffix(trace: dict, horizontal: bool) -> str:
    ref = trace.get("yaxis" if horizontal else "xaxis") or ""
    return ref[1:]


def describe(data: Sequence[dict], layout: dict, title: str, lang: str) -> str:
    """One sentence on the figure of these traces (plain dicts, as Fig holds them) in `lang`;
    the figure's title, or else its panel titles, or else an axis title, says what it shows."""
    parts = []
    described = 0
    for trace in data:
        if trace.get("visible") in (False, "legendonly") or (
                trace.get("hoverinfo") == "skip" and not trace.get("name")):   # a spacer, a fill
            continue
        kind = trace.get("type", "scatter")
        part = _heatmap(trace, lang) if kind == "heatmap" else (
            _series(trace, layout, lang) if kind in ("scatter", "bar", "scattergl") else None)
        if part is None:
            continue
        described += 1
        if len(parts) < MAX_SERIES:
            parts.append(part)
    if described > len(parts):
        parts.append(text("a11y.more", lang, n=described - len(parts)))
    what = plain(title) or text("a11y.join", lang).join(
        plain(a.get("text")) for a in layout.get("annotations", []) if a.get("xref") == "paper"
        and a.get("yanchor") == "bottom") or _axis_title(layout, "yaxis", False) \
        or _axis_title(layout, "xaxis", False) \
        or text("a11y.chart", lang)
    if not parts:
        return what
    sentence = text("a11y.sentence", lang, what=what, parts=text("a11y.join", lang).join(parts))
    return re.sub(r" {2,}", " ", sentence)    # an axis with no title leaves a double space
