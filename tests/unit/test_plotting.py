"""explorer/plotting.py: the house style's figures carry the part of Plotly's template that can
apply to them, and nothing of it is lost for what they draw."""
from __future__ import annotations

import json

import plotly.io as pio

from explorer.plotting import SUBPLOT_KINDS, Fig, template_for


def whole_template() -> dict:
    return pio.templates[pio.templates.default].to_plotly_json()


def test_a_figure_carries_its_trace_types_defaults_and_the_whole_cartesian_layout():
    fig = Fig()
    fig.add_scatter(x=[0, 1], y=[1, 2])
    fig.add_heatmap(z=[[1, 2], [3, 4]])
    drawn = fig.finish("t").to_plotly_json()["layout"]["template"]
    whole = whole_template()
    assert set(drawn["data"]) == {"scatter", "heatmap"}
    for kind in ("scatter", "heatmap"):   # the same defaults, value for value
        assert drawn["data"][kind] == whole["data"][kind]
    left_out = set(whole["layout"]) - set(drawn["layout"])
    assert left_out and left_out <= set(SUBPLOT_KINDS)
    for key, value in drawn["layout"].items():   # colorway, axes, fonts, colour scales as they were
        assert value == whole["layout"][key], key


def test_a_subplot_kind_the_figure_has_keeps_its_template_entry():
    whole = whole_template()
    kept = template_for([{"type": "scatterpolar"}], {"polar": {}, "polar2": {}})
    assert kept["layout"]["polar"] == whole["layout"]["polar"]
    assert kept["data"]["scatterpolar"] == whole["data"]["scatterpolar"]
    assert "polar" not in template_for([{"type": "scatter"}], {"xaxis": {}})["layout"]


def test_a_figure_is_written_in_about_half_the_bytes():
    def figure(template=None):
        fig = Fig()
        fig.add_bar(x=list(range(30)), y=list(range(30)))
        fig.add_scatter(x=list(range(30)), y=list(range(30)), mode="markers")
        if template is not None:
            fig.update_layout(template=template)
        return fig.finish("bytes")

    cut, whole = figure(), figure(whole_template())
    assert json.loads(cut.to_json())["data"] == json.loads(whole.to_json())["data"]
    assert len(cut.to_json()) < 0.6 * len(whole.to_json())
