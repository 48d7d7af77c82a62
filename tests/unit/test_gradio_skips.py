"""explorer/web/gradio_skips.py: the skipped outputs of an event are answered without Gradio's
update machinery, and the answer (what the page receives, what the session keeps) is the one
Gradio itself gives."""
from __future__ import annotations

import gradio as gr
import pandas as pd
import pytest
from gradio.blocks import Blocks
from gradio.state_holder import SessionState

from explorer.web import gradio_skips
from tests.helpers import run_coroutine


@pytest.fixture
def patched(monkeypatch):
    """Blocks.postprocess_data as Gradio has it, and the patched one (the class restored after)."""
    original = Blocks.postprocess_data
    original = getattr(original, "__wrapped__", original)    # the app may have patched it already
    monkeypatch.setattr(Blocks, "postprocess_data", original)
    assert gradio_skips.fast_skips(Blocks) and gradio_skips.fast_skips(Blocks)   # once only
    assert Blocks.postprocess_data is not original
    return original


def _answers(demo, fn, predictions, original):
    def fresh():   # each side gets its own copy (Gradio edits an update dict in place)
        if isinstance(predictions, list):
            return [dict(v) if isinstance(v, dict) else v for v in predictions]
        return dict(predictions) if isinstance(predictions, dict) else predictions

    async def both():
        mine, theirs = SessionState(demo), SessionState(demo)
        got = await Blocks.postprocess_data(demo, fn, fresh(), mine)
        expected = await original(demo, fn, fresh(), theirs)
        return got, expected, mine, theirs
    return run_coroutine(both())


def test_skipped_outputs_are_answered_as_gradio_answers_them(patched):
    with gr.Blocks() as demo:
        text, number, table, state = gr.Textbox(), gr.Number(), gr.Dataframe(), gr.State(1)
        button = gr.Button()
        event = button.click(lambda: None, None, [text, number, table, state])
    fn = demo.fns[event["id"]]
    frame = pd.DataFrame({"a": [1, 2]})
    for predictions in ([gr.skip(), 3, frame, gr.skip()],              # a state's skip: Gradio's
                        [gr.skip(), gr.skip(), gr.skip(), 5],
                        ["x", gr.update(value=4, visible=False), gr.skip(), 7],
                        [gr.skip(), gr.skip(), gr.skip(), gr.skip()],
                        ["x", 4, frame, 8]):
        got, expected, mine, theirs = _answers(demo, fn, predictions, patched)
        assert got == expected, predictions
        assert mine.state_data == theirs.state_data
    # the skipped textbox: Gradio built a fresh one for the session, the patch built none
    _, _, mine, theirs = _answers(demo, fn, [gr.skip(), 3, frame, 1], patched)
    assert mine.blocks_config.blocks[text._id] is text and theirs.blocks_config.blocks[text._id] is not text


def test_shapes_it_does_not_know_go_to_gradio(patched):
    with gr.Blocks() as demo:
        text = gr.Textbox()
        single = gr.Button().click(lambda: None, None, [text])
        pair = gr.Button().click(lambda: None, None, [text, gr.Number()])
    for fn, predictions in ((demo.fns[single["id"]], gr.skip()),
                            (demo.fns[pair["id"]], gr.skip()),              # one skip for all
                            (demo.fns[pair["id"]], {text: "by component"})):
        got, expected, _, _ = _answers(demo, fn, predictions, patched)
        assert got == expected


def test_a_gradio_without_the_method_is_left_as_it_is():
    class Other:
        pass

    assert gradio_skips.fast_skips(Other) is False and not hasattr(Other, "postprocess_data")
