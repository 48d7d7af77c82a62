"""Checks on Plotly figures drawn in two languages: the visible words, and the numbers."""
from __future__ import annotations

import re

import numpy as np

# English words a Chinese figure may keep: names, units and symbols the Chinese strings use too.
KEPT_WORDS = {"base", "token", "NLL", "nats", "log", "RoPE", "NTK", "aware", "YaRN", "original", "KV",
              "logit", "max"}


def figure_words(fig) -> list[str]:
    """Every visible text of a figure: titles, axis and colour-bar titles, subplot titles, legend
    names, hover text and templates, hover data, category labels; Plotly's %{...} and <...>
    markup removed."""
    found = [fig.layout.title.text] + [a.text for a in fig.layout.annotations]
    for axis in ("xaxis", "yaxis", "xaxis2", "yaxis2"):
        found.append(fig.layout[axis].title.text if axis in fig.layout else None)
    for trace in fig.data:
        found += [trace.name, trace.hovertemplate]
        for attr in ("hovertext", "text", "customdata"):
            value = getattr(trace, attr, None)
            if value is not None:
                found += [value] if isinstance(value, str) else list(np.asarray(value, dtype=object).ravel())
        bar = getattr(trace, "colorbar", None) or getattr(getattr(trace, "marker", None), "colorbar", None)
        if bar is not None:
            found.append(bar.title.text)
        if trace.type == "heatmap" and trace.y is not None and isinstance(trace.y[0], str):
            found += list(trace.y)
    return [re.sub(r"%\{[^}]*\}|<[^>]*>", " ", w) for w in found if isinstance(w, str)]


def english_left(fig) -> set[str]:
    return {word for text in figure_words(fig) for word in re.findall(r"[A-Za-z]{3,}", text)} - KEPT_WORDS


def arrays(fig) -> list:
    """The numbers of every trace (x, y, z), to compare across languages."""
    out = []
    for trace in fig.data:
        for attr in ("x", "y", "z"):
            value = getattr(trace, attr, None)
            if value is not None and not (attr == "y" and trace.type == "heatmap"):
                out.append(np.asarray(value, dtype=float))
    return out


def assert_same_numbers(a, b):
    left, right = arrays(a), arrays(b)
    assert len(left) == len(right) and left
    for x, y in zip(left, right):
        np.testing.assert_array_equal(x, y)
