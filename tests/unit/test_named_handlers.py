"""@takes (explorer/ui): a handler taking a section's inputs as `*values: Inputs` shows Gradio one
parameter per field (the API's names), and one with a trailing `progress=gr.Progress()` still has
the Progress injected where Gradio puts it (positionally, after the inputs) and receives it by
name. No model, no server."""
from __future__ import annotations

import functools
import inspect
from typing import Any, NamedTuple

import gradio as gr
from gradio.helpers import special_args

from explorer.ui import takes, visitor_errors
from explorer.web.stopping import argument_reader


class Inputs(NamedTuple):
    model_name: Any
    lang: Any
    n: Any = 3


@takes(Inputs)
def plain(runtime, *values: Inputs, progress=gr.Progress()):
    return Inputs(*values), progress


@takes(Inputs)
def streaming(runtime, *values: Inputs, progress=gr.Progress()):
    yield Inputs(*values), progress


def test_the_signature_names_the_fields_then_progress():
    handler = visitor_errors(functools.partial(plain, "runtime"))
    parameters = inspect.signature(handler).parameters
    assert list(parameters) == ["model_name", "lang", "n", "progress"]
    assert parameters["n"].default == 3
    assert isinstance(parameters["progress"].default, gr.Progress)


def test_gradio_injects_progress_after_the_inputs_and_the_handler_gets_it_by_name():
    handler = visitor_errors(functools.partial(plain, "runtime"))
    inputs = ["m", "zh", 5]
    special_args(handler, inputs)
    assert isinstance(inputs[-1], gr.Progress)
    form, progress = handler(*inputs)
    assert form == Inputs("m", "zh", 5) and progress is inputs[-1]
    assert handler("m", "en", 5, progress=None) == (Inputs("m", "en", 5), None)   # a test's call


def test_a_generator_stays_one_and_the_language_is_read_by_name():
    handler = visitor_errors(functools.partial(streaming, "runtime"))
    assert inspect.isgeneratorfunction(handler)
    assert next(handler("m", "zh", 1, "p")) == (Inputs("m", "zh", 1), "p")
    assert argument_reader(handler, "lang")(("m", "zh", 1), {}) == "zh"


def test_the_attention_map_keeps_the_api_names_of_its_positional_days():
    """The "attention_map" endpoint's parameters are named after MapInputs' fields: they are
    the names its clients already send (terse ones included), so a field is never renamed."""
    from explorer.ui.tabs.attention_map import MapInputs, attention_map

    parameters = inspect.signature(functools.partial(attention_map, "runtime")).parameters
    assert list(parameters) == ["model_name", "lang", "text", "layer_value", "head_value", "kind", "w",
                                "s", "b", "path", "n_new", "progress"]
    assert list(parameters)[:-1] == list(MapInputs._fields)


def test_a_stopped_sink_grid_says_so_by_name():
    """The sink grid's last word after Stop: every output unchanged but the status line and the
    running flag, found by name (SinkOutputs), not by position."""
    from explorer.ui.tabs.attention import SinkOutputs, stopped_word

    last = stopped_word(SinkOutputs)(None, "zh")
    assert isinstance(last, SinkOutputs) and last.running is False and last.status
    assert all(value == gr.skip() for value in last._replace(status=gr.skip(), running=gr.skip()))


def test_a_stopped_rope_sweep_clears_its_progress_line_by_name():
    """The RoPE sweep's last word after Stop: its progress line (the summary while it runs) is
    cleared and its note says so; the rest is unchanged."""
    from explorer.ui.tabs.rope_context import SweepOutputs, stopped_word

    last = stopped_word(SweepOutputs, progress="summary")(None, "en")
    assert isinstance(last, SweepOutputs) and last.summary == "" and last.note
    assert all(value == gr.skip() for value in (last.plot, last.table, last.result))
