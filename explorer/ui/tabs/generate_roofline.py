"""The Generate tab's roofline section: this device's roof measured (or the one measured before),
then the engine's batched decode timed at B = 1 ... 16 on the loaded model, drawn on it (C2)."""
from __future__ import annotations


import gradio as gr

from explorer.generate import device_roof, roofline, roofline_figures
from explorer.generate.request import check_flag
from explorer.generate.step_cost import served_weights
from explorer.inputs import InputError
from explorer.locales import Term, normalize_language
from explorer.serving import batch_threads, scheduler_for
from explorer.ui import LATEX, TabContext, bind, load_or_error, visitor_errors
from explorer.ui.page import views
from explorer.web.stopping import Stops

# the visitors' running measurements, for their Stop buttons (stopping.py)
ROOF_STOPS = Stops()


def draw_roofline(result: roofline.RooflineResult, lang: str):
    """(device line, roofline figure, tokens/s figure, summary) in `lang`."""
    return (roofline_figures.device_line(result.roof, lang), *roofline_figures.figures(result, lang),
            roofline_figures.summary(result, lang))


@visitor_errors
def measure_roofline(runtime, model_name, lang, context, refresh, progress=gr.Progress()):
    """Measure this device's roof (or take the one measured before), then time the engine's
    batched decode at B = 1 ... 16: (device line, roofline, tokens/s, summary, result) once
    done, nothing before (it yields between forwards so that Stop ends it there)."""
    lang = normalize_language(lang)
    context = roofline.check_context(context)
    refresh = check_flag(Term("generate.roof.refresh"), refresh)
    loaded = load_or_error(runtime, model_name, progress)
    if scheduler_for(loaded.model).load():
        raise InputError("generate.roof.busy")   # their steps and these would time each other
    # the shared loop's intra-op threads: the roof and the steps are measured as batches run
    threads = batch_threads()
    roof = device_roof.measure(loaded.device, loaded.dtype, threads, refresh=refresh,
                               weights=served_weights(loaded.model))
    steps = roofline.run_steps(loaded.model, roofline.prompt_ids(loaded.tokenizer, context), roof,
                               name=getattr(loaded.spec, "title", loaded.name), threads=threads)
    for item in steps:
        if isinstance(item, roofline.RooflineResult):
            yield (*draw_roofline(item, lang), item)
        else:
            progress(item[0], desc=item[1])
            yield (gr.skip(),) * 5


def build(ctx: TabContext) -> None:
    t = ctx.t
    gr.Markdown(t("generate.roof.intro"), latex_delimiters=LATEX)
    with gr.Row():
        context = gr.Slider(1, roofline.MAX_CONTEXT, value=roofline.DEFAULT_CONTEXT, step=1,
                            label=t("generate.roof.context"), elem_id="gen-roof-context")
        refresh = gr.Checkbox(value=False, label=t("generate.roof.refresh"))
    with gr.Row():
        measure = gr.Button(t("generate.roof.measure"), variant="primary", elem_id="gen-roof-measure")
        stop = gr.Button(t("generate.roof.stop"), variant="stop", elem_id="gen-roof-stop")
    device_note = gr.Markdown(t("generate.roof.none"), elem_id="gen-roof-device")
    with gr.Row(equal_height=True):
        roof_plot = gr.Plot(show_label=False, elem_id="gen-roofline")
        rates_plot = gr.Plot(show_label=False, elem_id="gen-roof-rates")
    roof_summary = gr.Markdown(elem_id="gen-roof-summary")
    roof_state = gr.State(None)
    outputs = [device_note, roof_plot, rates_plot, roof_summary, roof_state]
    # Stop ends the measurement between two timed forwards; nothing of it is kept or drawn
    event = measure.click(ROOF_STOPS.stoppable(bind(measure_roofline, ctx.runtime),
                                       lambda last, lang: (gr.skip(),) * 5),
                  [ctx.model, ctx.lang, context, refresh], outputs, api_name="measure_roofline",
                  time_limit=int(roofline.TIME_LIMIT_S) + 60, **ctx.long_event)
    stop.click(ROOF_STOPS.on_stop, None, None, queue=False, api_visibility="private")
    ctx.redraw_on_language(roof_state, [device_note, roof_plot, rates_plot, roof_summary], draw_roofline)
    ctx.view("generate.roofline", [views.control("context", context)], run=measure, event=event,
             state=roof_state)
