"""The Attention tab's first section: the attention probabilities of one layer (one head or
all) under a causal / window / sinks / sink-logit mask, with the mask drawn next to them and
the next-token table. Split from attention.py (the tab's other five sections) along the
section's seam: its inputs are parsed by name (MapInputs) and its outputs returned by name
(MapOutputs), in the order its events send and list them."""
from __future__ import annotations

from typing import Any, NamedTuple

import gradio as gr

from explorer.attention import maps, max_tokens
from explorer.prompts import CHARS_PER_TOKEN_BOUND
from explorer.ui import LATEX, TabContext, bind, load_or_error, takes, visitor_errors
from explorer.ui.page import views

DEFAULT_PROMPT = ("The cat sat on the mat because it was tired. Later that day, the dog came "
                  "in and sat next to the cat, and the")


class MapInputs(NamedTuple):
    """The map section's inputs by name, in the order its events send them; the names are the
    "attention_map" API's parameter names (attention_map's signature is made from them), kept
    as they were when the handler took them by position."""
    model_name: Any      # the header's model picker
    lang: Any            # the header's language switch
    text: Any            # the prompt
    layer_value: Any     # the layer drawn
    head_value: Any      # a query head, or "all"
    kind: Any            # "causal" | "window" | "sinks" | "sink_logit"
    w: Any               # window
    s: Any               # sinks
    b: Any               # the sink logit
    path: Any            # the attention implementation (maps.IMPLS)
    n_new: Any           # tokens generated before the map is drawn


class MapOutputs(NamedTuple):
    """The map section's outputs by name, in the order its events list them (the first four
    are drawn again from `result` on a language switch, by draw_map)."""
    map: Any             # the attention probabilities
    mask: Any            # the mask drawn
    summary: Any
    next_tokens: Any     # the next-token table, unmodified vs under the mask
    data: Any            # the numbers (gr.JSON)
    result: Any          # the map (gr.State)


def draw_map(result: maps.MapResult, lang: str) -> tuple:
    """(map, mask, summary, next-token table) of a stored map in `lang`: no forward pass."""
    return (*maps.figures(result, lang), maps.summary(result, lang), maps.table(result, lang))


@takes(MapInputs)
def attention_map(runtime, *values: MapInputs, progress=gr.Progress()) -> MapOutputs:
    """Attention probabilities of one layer (one head or all) under the chosen mask."""
    form = MapInputs(*values)
    loaded = load_or_error(runtime, form.model_name, progress)
    result = maps.run(loaded, form.text, form.layer_value, form.head_value, form.kind, form.w,
                      form.s, form.b, form.path, form.n_new)
    return MapOutputs(*draw_map(result, form.lang), data=maps.data(result, form.lang), result=result)


@visitor_errors
def show_head(result, head, lang) -> tuple:
    """(map, result) of the stored map drawn for another head (or all): no forward pass."""
    if result is None:
        return gr.skip(), gr.skip()
    result = maps.with_head(result, head)
    return maps.figures(result, lang)[0], result


def head_choices(n_heads: int) -> list:
    return [("all", "all")] + [(str(h), str(h)) for h in range(n_heads)]


def layer_of_model(value, config) -> bool:
    """A layer index the model has (a link's check)."""
    return 0 <= int(value) < config.n_layers


def head_of_model(value, config) -> bool:
    """"all" or a query head the model has (a link's check)."""
    return value == "all" or (str(value).isdigit() and int(value) < config.n_heads)


def build_map(ctx: TabContext) -> tuple:
    """The map under a mask; returns (layer, head), whose ranges follow the model picker."""
    t = ctx.t
    gr.Markdown(t("attention.intro"), latex_delimiters=LATEX)
    with gr.Row():
        prompt = gr.Textbox(DEFAULT_PROMPT, label=t("attention.prompt"), lines=2, scale=4,
                            max_length=max_tokens(ctx.runtime.device) * CHARS_PER_TOKEN_BOUND,
                            elem_id="attention-prompt")
        n_generate = gr.Slider(0, maps.MAX_GENERATED, value=0, step=1, label=t("attention.generate"),
                               scale=1, elem_id="attention-generate")
    with gr.Row():
        layer = gr.Slider(0, 29, value=3, step=1, label=t("attention.layer"), elem_id="attention-layer")
        head = gr.Dropdown(choices=head_choices(9), value="all", label=t("attention.head"),
                           elem_id="attention-head", filterable=False)
        impl = gr.Radio(list(maps.IMPLS), value="eager", label=t("attention.impl"),
                        info=t("attention.impl_info"), elem_id="attention-impl")
    with gr.Row():
        mask_kind = gr.Radio([(t("attention.mask.causal"), "causal"), (t("attention.mask.window"), "window"),
                              (t("attention.mask.sinks"), "sinks"),
                              (t("attention.mask.sink_logit"), "sink_logit")],
                             value="causal", label=t("attention.mask"), elem_id="attention-mask", scale=3)
        window = gr.Number(8, label=t("attention.window"), precision=0, elem_id="attention-window",
                           scale=1)
        sinks_n = gr.Number(2, label=t("attention.sinks"), precision=0, elem_id="attention-sinks",
                            scale=1)
        sink_logit = gr.Slider(-5, 10, value=1.0, step=0.1, label=t("attention.sink_logit"),
                               elem_id="attention-sink-logit", scale=2)
    run = gr.Button(t("attention.run"), variant="primary", elem_id="attention-run")
    with gr.Row():
        map_plot = gr.Plot(elem_id="attention-map", scale=3, show_label=False)
        mask_plot = gr.Plot(elem_id="attention-mask-plot", scale=2, show_label=False)
    map_summary = gr.Markdown(elem_id="attention-summary")
    next_tokens = gr.Dataframe(elem_id="attention-next-tokens", interactive=False)
    with gr.Accordion(t("attention.data"), open=False):
        map_data = gr.JSON(show_label=False)
    map_state = gr.State()

    # one handler for the button and the three controls that redraw on their own; Gradio names
    # the private events after it and describes the API endpoint with its docstring, so the
    # partial keeps the name and the words the closure `on_map` had
    bound = bind(attention_map, ctx.runtime)
    bound.__name__, bound.__doc__ = "on_map", attention_map.__doc__
    on_map = visitor_errors(bound)
    map_inputs = list(MapInputs(model_name=ctx.model, lang=ctx.lang, text=prompt, layer_value=layer,
                                head_value=head, kind=mask_kind, w=window, s=sinks_n, b=sink_logit,
                                path=impl, n_new=n_generate))
    map_outputs = list(MapOutputs(map=map_plot, mask=mask_plot, summary=map_summary,
                                  next_tokens=next_tokens, data=map_data, result=map_state))
    map_event = run.click(on_map, map_inputs, map_outputs, api_name="attention_map", **ctx.model_event)
    mask_kind.change(on_map, map_inputs, map_outputs, api_visibility="private", **ctx.model_event)
    sink_logit.release(on_map, map_inputs, map_outputs, api_visibility="private", **ctx.model_event)
    layer.release(on_map, map_inputs, map_outputs, api_visibility="private", **ctx.model_event)
    # another head of the same map: redrawn from the probabilities already computed
    head.input(show_head, [map_state, head, ctx.lang], [map_plot, map_state], api_visibility="private")
    ctx.redraw_on_language(map_state, [map_plot, mask_plot, map_summary, next_tokens], draw_map)
    ctx.view("attention.map", [
        views.control("prompt", prompt), views.control("layer", layer, check=layer_of_model),
        views.control("head", head, check=head_of_model), views.control("mask", mask_kind),
        views.control("window", window, low=1, high=4096), views.control("sinks", sinks_n, low=0, high=64),
        views.control("sink_logit", sink_logit), views.control("impl", impl),
        views.control("generate", n_generate)], run=run, event=map_event, state=map_state)
    return layer, head
