"""explorer/ui/progress.py: an event shows its progress on few, light components a visitor sees
(Gradio's page writes the loading status of every component any event ever targeted, at every
status change of every event afterwards), and the page's own bookkeeping shows none."""
from __future__ import annotations

import gradio as gr

from explorer.ui import HIDDEN
from explorer.ui.progress import MAX_TARGETS, focus_progress


def _targets(demo, event):
    return [block._id for block in demo.fns[event["id"]].show_progress_on]


def test_a_press_shows_progress_on_its_light_outputs_and_the_page_shows_none():
    with gr.Blocks() as demo:
        state = gr.State(None)
        with gr.Column() as column:
            summary = gr.Markdown()
            chart = gr.Plot()
        shown_later = gr.Markdown(visible=False)
        box = gr.Textbox(elem_classes=HIDDEN)
        run, alone, quiet, named = gr.Button(), gr.Button(), gr.Button(), gr.Button()
        many = [gr.Markdown() for _ in range(MAX_TARGETS + 1)]
        timer = gr.Timer(1.0)
        press = run.click(lambda: None, None, [state, column, summary, chart, shown_later, box])
        followed = press.then(lambda: None, None, [summary])
        succeeded = press.success(lambda: None, None, [summary])
        chart_only = alone.click(lambda: None, None, [chart, state])
        hidden_progress = quiet.click(lambda: None, None, [summary], show_progress="hidden")
        named_targets = named.click(lambda: None, None, [summary, chart], show_progress_on=[chart])
        page_wide = run.click(lambda: None, None, many)
        tick = timer.tick(lambda: None, None, [summary])
        load = demo.load(lambda: None, None, [summary])
        by_script = box.change(lambda: None, None, [summary])
        by_person = summary.change(lambda: None, None, [summary])
        js_only = run.click(None, None, [summary], js="() => 'x'")
    focus_progress(demo)
    assert _targets(demo, press) == [summary._id]             # no state, column, chart, hidden box
    assert _targets(demo, chart_only) == [chart._id]           # a chart alone: its spinner is all
    assert _targets(demo, named_targets) == [chart._id]        # named targets are kept
    assert _targets(demo, by_person) == [summary._id]
    for event in (followed, succeeded, hidden_progress, page_wide, tick, load, by_script):
        assert _targets(demo, event) == [], event
    assert demo.fns[js_only["id"]].show_progress_on is None       # no backend: the page writes nothing


def test_the_built_config_names_the_targets():
    """What the page reads: the config's show_progress_on, an empty list (not null: the page
    would fall back to every output) for an event that shows none."""
    with gr.Blocks() as demo:
        out = gr.Markdown()
        followed = gr.Button().click(lambda: None, None, [out]).then(lambda: None, None, [out])
    focus_progress(demo)
    config = {d["id"]: d for d in demo.get_config_file()["dependencies"]}
    assert config[followed["id"]]["show_progress_on"] == []
