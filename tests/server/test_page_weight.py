"""What a visitor's browser does on opening the page before they ask for anything: no chart is
drawn. Every gr.Plot of the built app starts empty, so the page does not load Plotly and draw
figures at every open (five placeholders on the first tab made an app page's load take
1.3-1.6x as long in Chromium: bench/page_load.py, docs/BENCHMARKS.md)."""
from __future__ import annotations

import gradio as gr


def test_no_chart_is_drawn_before_a_visitor_asks(full_app):
    plots = [block for block in full_app.blocks.values() if isinstance(block, gr.Plot)]
    assert len(plots) > 40                       # the app's charts are all here
    drawn = [block.elem_id for block in plots if block.value is not None]
    assert not drawn, f"charts drawn at every page open: {drawn}"
    config = full_app.get_config_file()
    assert not [c for c in config["components"] if c["type"] == "plot" and c["props"].get("value")]
