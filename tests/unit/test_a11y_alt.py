"""Every figure the app draws carries a one-sentence text alternative (layout.meta.alt, read by
static/charts.js into the chart's aria-label) in the visitor's language, with numbers read from
the figure's own data (explorer/alt_text.py, a topic's own sentence for the attention maps and
the block diagram). The sentences here; every figure of every section, in both languages, in
tests/checkpoints/test_language_switch.py through `check_alternatives` (one run of each section serves
both tests)."""
from __future__ import annotations

import re

import numpy as np
import plotly.graph_objects as go

from explorer.alt_text import describe, number
from explorer.plotting import Fig, empty_figure

NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
CJK = re.compile(r"[\u4e00-\u9fff]")


def _alt(fig: go.Figure) -> str:
    meta = fig.layout.meta
    return meta.get("alt", "") if isinstance(meta, dict) else ""


def _drawn(fig: go.Figure) -> bool:
    """A figure with data (an empty figure holds only its message)."""
    return any(getattr(trace, attr, None) is not None for trace in fig.data for attr in ("x", "y", "z"))


def _data_numbers(fig: go.Figure) -> set[str]:
    """Every number of the figure's traces, written as the sentences write them."""
    found = set()
    for trace in fig.data:
        for attr in ("x", "y", "z"):
            value = getattr(trace, attr, None)
            if value is None:
                continue
            for item in np.ravel(np.asarray(value, dtype=object)):
                if isinstance(item, (int, float, np.integer, np.floating)) and np.isfinite(float(item)):
                    found.add(number(item))
    return found


def test_a_line_sentence_reads_its_start_end_and_change_off_the_data():
    fig = Fig()
    fig.add_scatter(x=[0, 100, 200], y=[1.5, 9.0, 4.5], name="cache", mode="lines")
    fig.update_xaxes(title_text="tokens (count)")
    alt = _alt(fig.finish("Growth", lang="en"))
    assert alt == "Growth: cache rises by 3, from 1.5 at tokens 0 to 4.5 at 200, peaking at 9 at 100."
    zh = _alt(fig.finish("增长", lang="zh"))
    assert CJK.search(zh) and "4.5" in zh and "9" in zh


def test_a_heatmap_sentence_names_where_its_extremes_are():
    fig = Fig()
    fig.add_heatmap(z=[[0.25, 0.75], [0.5, None]], x=["k0", "k1"], y=["q0", "q1"])
    alt = _alt(fig.finish("Map", lang="en"))
    assert "2 by 2" in alt and "0.75, is at q0, k1" in alt and "0.25, is at q0, k0" in alt


def test_bars_name_the_largest_and_smallest():
    fig = Fig()
    fig.add_bar(x=["e0", "e1", "e2"], y=[3, 12, 1], name="load")
    alt = _alt(fig.finish("Loads", lang="en"))
    assert alt == "Loads: load is largest at e1 (12) and smallest at e2 (1) over 3 values."


def test_an_empty_figure_says_why_and_describe_never_invents_numbers():
    assert _alt(empty_figure("Press Run")) == "Press Run"
    assert describe([], {}, "Title", "en") == "Title"


def numbers_of_labels(fig: go.Figure) -> set[str]:
    """Numbers the figure writes: in its title, its annotations (a diagram's boxes) and its
    category labels (a layer, "L3", a head)."""
    found = set(NUMBER.findall(str(fig.layout.title.text or "")))
    for annotation in fig.layout.annotations:
        found |= set(NUMBER.findall(str(annotation.text or "")))
    for trace in fig.data:
        for attr in ("x", "y"):
            value = getattr(trace, attr, None)
            if value is not None:
                for item in np.ravel(np.asarray(value, dtype=object)):
                    found |= set(NUMBER.findall(str(item)))
    return found


def check_alternatives(drawn, language: str, where: str) -> int:
    """Assert that each figure among a section's drawn outputs has a text alternative in
    `language`, and each figure with data one holding a number of its data, labels or title;
    the number of figures with data."""
    seen = 0
    for fig in (value for value in drawn if isinstance(value, go.Figure)):
        alt = _alt(fig)
        label = f"{where} ({language}) {fig.layout.title.text!r}"
        assert alt, f"{label} has no text alternative"
        if not _drawn(fig):
            continue
        seen += 1
        assert bool(CJK.search(alt)) == (language == "zh"), f"{label}: {alt!r}"
        numbers = set(NUMBER.findall(alt))
        # a number of the data, or of its labels, title or annotations (a layer, a head)
        assert numbers & (_data_numbers(fig) | numbers_of_labels(fig)), f"{label}: {alt!r}"
    return seen
