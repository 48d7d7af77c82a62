"""The Generate tab's KV-cache calculator section: the cache's bytes for N tokens at an
element size, for each model shape (the loaded model's own row once it is loaded), and MHA,
GQA and MQA of one shape side by side (explorer/generate/shapes.py)."""
from __future__ import annotations

from typing import Any

import gradio as gr

from explorer.generate import shapes
from explorer.locales import normalize_language
from explorer.ui import LATEX, TabContext, bind, load_or_error, visitor_errors
from explorer.ui.page import views


def draw_calculator(result: shapes.ShapesResult, lang: str):
    """(shapes table, variants table) in `lang`."""
    return shapes.tables(result, lang)


@visitor_errors
def calculate(runtime, model_name: Any, lang: Any, tokens: Any, element_bytes: Any):
    """Calculator tables. The loaded model's row appears once it is loaded."""
    lang = normalize_language(lang)
    n, b = shapes.check(tokens, element_bytes)
    if model_name is not None:
        try:
            runtime.check_name(model_name)   # an unknown name is refused, not read as "none loaded"
        except ValueError as error:
            raise gr.Error(str(error), print_exception=False) from None
    loaded_shape = None
    if isinstance(model_name, str) and model_name in runtime.names() and runtime.is_loaded(model_name):
        loaded = runtime.get(model_name)
        loaded_shape = shapes.shape_from_config(getattr(loaded.spec, "title", model_name), loaded.config)
    result = shapes.run(n, b, loaded_shape)
    return (*draw_calculator(result, lang), result)


@visitor_errors
def calculate_after_load(runtime, model_name, lang, tokens, element_bytes):
    """The loaded model's row needs it loaded (the header loads it on page load)."""
    load_or_error(runtime, model_name)
    return calculate(runtime, model_name, lang, tokens, element_bytes)


def build(ctx: TabContext) -> None:
    t = ctx.t
    gr.Markdown(t("generate.calculator"))
    gr.Markdown(t("generate.calc_formulas"), latex_delimiters=LATEX)
    with gr.Row():
        calc_tokens = gr.Number(value=32768, precision=0, minimum=1, label=t("generate.calc_tokens"))
        calc_bytes = gr.Dropdown([("fp16 / bf16 (2)", 2), ("fp32 (4)", 4), ("fp8 / int8 (1)", 1)],
                                 value=2, label=t("generate.calc_bytes"))
        # the tables follow every change; the button recomputes them (what a lesson step presses)
        calc_run = gr.Button(t("generate.calc_run"), size="sm", elem_id="gen-calc-run")
    calc_table = gr.Dataframe(interactive=False, wrap=True, elem_id="gen-calc-table",
                              column_widths=["12%", "8%", "14%", "9%", "6%", "9%", "9%", "10%", "23%"])
    gr.Markdown(t("generate.calc_variants"))
    variants_table = gr.Dataframe(interactive=False, elem_id="gen-variants")
    calc_state = gr.State(None)

    calc = bind(calculate, ctx.runtime)
    after_load = bind(calculate_after_load, ctx.runtime)
    calc_inputs = [ctx.model, ctx.lang, calc_tokens, calc_bytes]
    calc_outputs = [calc_table, variants_table, calc_state]
    drawn = (calc_tokens.change(calc, calc_inputs, calc_outputs, api_name="kv_calculator"),
             calc_bytes.change(calc, calc_inputs, calc_outputs, api_visibility="private"),
             ctx.demo.load(after_load, calc_inputs, calc_outputs, api_visibility="private",
                           **ctx.model_event),
             ctx.model.change(after_load, calc_inputs, calc_outputs, api_visibility="private",
                              **ctx.model_event),
             calc_run.click(calc, calc_inputs, calc_outputs, api_visibility="private"))
    ctx.view("generate.calculator", [views.control("tokens", calc_tokens, high=10**9),
                                     views.control("bytes", calc_bytes)],
             run=calc_run, event=drawn, state=calc_state)
    ctx.redraw_on_language(calc_state, [calc_table, variants_table], draw_calculator)
