"""The Generate tab's section "The class as one batch" (explorer/generate/batch_view.py): the
shared decode loop as the class fills it, refreshed by a timer while the section is open.

Thin wiring: the timer's handler reads the loop's snapshot for the visitor's own session (their
runs marked, nobody else's session or run id reaches the page), draws it, and keeps the view in
gr.State for the language switch. It never loads a model or starts a loop: a model that is not
loaded, or has no loop yet, shows an empty loop. Its cost is bounded (batch_view.MAX_ROWS rows,
MAX_STEPS steps): one open page asks every REFRESH_S seconds."""
from __future__ import annotations

from typing import Any, Optional

import gradio as gr

from explorer.locales import normalize_language
from explorer.generate import batch_figures, batch_view
from explorer.serving.limits import MAX_BATCH
from explorer.ui import TabContext, bind, tab_id, visitor_errors

REFRESH_S = 2.0          # the intro text (serving.intro) says so
SECTION_ID = "section-generate-batch"


def _empty(name: str) -> batch_view.BatchView:
    return batch_view.BatchView(model=name, rows=(), hidden=0, shared_tokens=0, steps=(),
                                context=float(batch_view.DEFAULT_CONTEXT), predicted=(), knee=None,
                                roof=False, max_batch=MAX_BATCH)


def draw(view: Optional[batch_view.BatchView], lang: Any):
    lang = normalize_language(lang)
    if view is None:
        view = _empty("")
    rows, steps = batch_figures.figures(view, lang)
    return rows, steps, batch_figures.summary(view, lang)


@visitor_errors
def refresh(runtime, model_name: Any, lang: Any, request: gr.Request):
    """(rows figure, steps figure, summary, view) of the loop of the visitor's model."""
    name = runtime.check_name(model_name)
    session = getattr(request, "session_hash", None) if request is not None else None
    if runtime.is_loaded(name):
        view = batch_view.view(runtime.get(name), session if isinstance(session, str) else None)
    else:
        view = _empty(getattr(runtime.spec(name), "title", name))
    return (*draw(view, lang), view)


def on_tab(index: int, shown: Any, evt: gr.SelectData) -> Any:
    """A top-level tab opened: the timer ticks only if it is this section's tab (`index`) and
    the section was its open sub-tab when the page left it."""
    return gr.Timer(active=bool(shown) and getattr(evt, "index", None) == index)


def build(ctx: TabContext, section: gr.Tab, others: list) -> None:
    """The section's contents. Its timer runs while `section` is the open sub-tab: opening it
    starts the timer and draws at once; opening another sub-tab of the tab (`others`) stops it."""
    t = ctx.t
    gr.Markdown(t("serving.intro"))   # names BLOCK (16) and REFRESH_S (2 s)
    summary = gr.Markdown(elem_id="gen-batch-summary")
    with gr.Row(equal_height=False):
        rows_plot = gr.Plot(show_label=False, elem_id="gen-batch-rows")
        steps_plot = gr.Plot(show_label=False, elem_id="gen-batch-steps")
    now = gr.Button(t("serving.refresh"), size="sm", elem_id="gen-batch-refresh")
    state = gr.State(None)
    timer = gr.Timer(REFRESH_S, active=False)
    outputs = [rows_plot, steps_plot, summary, state]

    def handler(model_name, lang, request: gr.Request = None):
        return refresh(ctx.runtime, model_name, lang, request)

    quiet = dict(show_progress="hidden", concurrency_limit=None, api_visibility="private")
    for trigger in (timer.tick, section.select):
        trigger(handler, [ctx.model, ctx.lang], outputs, **quiet)
    pressed = now.click(handler, [ctx.model, ctx.lang], outputs, **quiet)
    # linkable like every section (no settings: the link opens the section and refreshes it),
    # so a teacher can hand the class the view to watch, or move a following class to it
    ctx.view("generate.batch", [], run=now, event=pressed, state=state)
    # the timer ticks only while the section is on screen: opening it starts the timer; opening
    # another sub-tab of Generate, or another tab, stops it; coming back to Generate starts it
    # again if this was its open sub-tab (`shown`, per page)
    shown = gr.State(False)
    private = dict(queue=False, api_visibility="private")
    section.select(lambda: (gr.Timer(active=True), True), None, [timer, shown], **private)
    for other in others:
        other.select(lambda: (gr.Timer(active=False), False), None, [timer, shown], **private)

    own = ctx.place.get("tab")    # this tab's id, read now: place moves on as tabs are built

    def wire_tabs(tabs, top_tabs):
        index = next(i for i, (_, module) in enumerate(top_tabs) if tab_id(module) == own)
        # one listener on the tab strip (an unqueued event per switch), not one per tab
        tabs.select(bind(on_tab, index), [shown], timer, **private)
    ctx.after_tabs.append(wire_tabs)
    ctx.redraw_on_language(state, [rows_plot, steps_plot, summary], draw)
