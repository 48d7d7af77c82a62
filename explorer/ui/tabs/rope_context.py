"""The RoPE tab's two runs of minutes, each on the long text with the model's RoPE base
changed: perplexity per position for several bases (the base sweep) and a greedy continuation
under one changed base. Their handlers are generators that yield between two forwards: Stop, a
closed page or a finished event closes them there, and a time limit inside the run ends them
with what was measured so far (explorer/web/stopping.py)."""
from __future__ import annotations

import functools
from typing import Callable

import gradio as gr

from explorer.locales import normalize_language, text
from explorer.rope import continuation as continuation_experiment
from explorer.rope import frequencies as frequencies_experiment
from explorer.rope import sweep as sweep_experiment
from explorer.texts import long_text
from explorer.ui import LATEX, TabContext, load_or_error, visitor_errors
from explorer.ui.page import views
from explorer.web.stopping import Stops

DEFAULT_SWEEP = "10000, 100000, 500000, 1000000, 10000000"
# Time limits of the long handlers, checked between two forwards (one forward of 2,048 tokens
# of Gemma takes tens of seconds on a busy CPU, so a run ends at most one forward later).
SWEEP_TIME_LIMIT_S = 300.0
CONTINUATION_TIME_LIMIT_S = 120.0
# the visitors' running sweeps and continuations, for their Stop buttons (stopping.py)
SWEEP_STOPS, CONTINUATION_STOPS = Stops(), Stops()
# Gradio's own `time_limit=` on the events (it acts on streaming events; the limit inside the
# run is what ends the work): the run's limit plus one forward.
EVENT_SLACK_S = 120


# ----------------------------------------------------------------------------- base sweep

def draw_sweep(result: sweep_experiment.Sweep, lang: str):
    """(figure, summary, table)."""
    return (*sweep_experiment.figures(result, lang), sweep_experiment.summary(result, lang),
            sweep_experiment.table(result, lang))


def redraw_sweep(result: sweep_experiment.Sweep, lang: str):
    """The language switch: the stored sweep in `lang`, and no "Stopped." note in the old one."""
    return (*draw_sweep(result, lang), "")


def sweep(runtime, model_name, lang, bases_text, apply, n_tokens, progress=gr.Progress()):
    """Perplexity per position on the long text for each RoPE base (one forward per base). A
    generator: (figure, summary, table, state, stop note) after each forward, the figure, table
    and state only at the end; closing it (Stop, a closed page) runs no further forward. Its
    first message clears the last sweep's figure, table and state (and a "Stopped."): a sweep
    stopped halfway leaves no chart that could be read as its own, and the language switch
    has nothing old to redraw."""
    lang = normalize_language(lang)
    bases = frequencies_experiment.parse_bases(bases_text)
    loaded = load_or_error(runtime, model_name, progress)
    first = True
    for item in sweep_experiment.steps(loaded.model, loaded.tokenizer, long_text(), bases, apply, n_tokens,
                                       model_title=getattr(loaded.spec, "title", loaded.name),
                                       time_limit_s=SWEEP_TIME_LIMIT_S):
        if isinstance(item, sweep_experiment.Sweep):
            yield (*draw_sweep(item, lang), item, "")
            return
        label = sweep_experiment.key_label(loaded.config, apply, item.key, lang)
        status = text("rope.base.progress", lang, base=label, tokens=n_tokens, done=item.done + 1,
                      total=item.total)
        if first:
            yield None, status, None, None, ""
        else:
            yield gr.skip(), status, gr.skip(), gr.skip(), gr.skip()
        first = False


def stopped_word(n_outputs: int, progress_at: int):
    """The last message of a stopped sweep or continuation (explorer/web/stopping.py): its note
    (the last output) says "Stopped.", its progress line (output `progress_at`) is cleared, the
    rest stays as it was."""
    def last_word(last, lang) -> tuple:
        words = [gr.skip()] * n_outputs
        words[progress_at], words[-1] = "", text("rope.stopped", normalize_language(lang))
        return tuple(words)
    return last_word


# ----------------------------------------------------------------------------- continuation

def draw_continuation(result: continuation_experiment.Continuation, lang: str):
    return continuation_experiment.summary(result, lang)


def redraw_continuation(result: continuation_experiment.Continuation, lang: str):
    return draw_continuation(result, lang), ""


def continuation(runtime, model_name, lang, log10_base, apply, n_tokens, n_new, progress=gr.Progress()):
    """Greedy continuation of the long text's first tokens, trained base vs a changed base. A
    generator like `sweep`: (summary, state, stop note), a progress line after every token."""
    lang = normalize_language(lang)
    continuation_experiment.check_log10_base(log10_base)
    loaded = load_or_error(runtime, model_name, progress)
    first = True
    for item in continuation_experiment.steps(loaded.model, loaded.tokenizer, long_text(), log10_base, apply,
                                              n_tokens, n_new, time_limit_s=CONTINUATION_TIME_LIMIT_S):
        clear = "" if first else gr.skip()
        first = False
        if isinstance(item, continuation_experiment.Continuation):
            yield draw_continuation(item, lang), item, ""
            return
        yield text("rope.cont.progress", lang, done=item.done, total=item.total), gr.skip(), clear


def _bind(ctx: TabContext, handler: Callable) -> Callable:
    """A handler whose first argument is the app's Runtime, with its visitor errors shown."""
    return visitor_errors(functools.partial(handler, ctx.runtime))


def build_sweep(ctx: TabContext) -> tuple:
    """The base sweep; returns (its model note, (apply_to, tokens)): the continuation section
    runs on the same layers and text length."""
    t = ctx.t
    gr.Markdown(t("rope.base.heading"), latex_delimiters=LATEX)
    base_model_note = gr.Markdown(elem_id="rope-base-model")
    gr.Markdown(t("rope.base.source"), elem_id="rope-base-source")
    with gr.Row():
        sweep_bases = gr.Textbox(DEFAULT_SWEEP, label=t("rope.base.bases"), scale=3,
                                 max_length=frequencies_experiment.MAX_BASES_CHARS, elem_id="rope-sweep-bases")
        sweep_tokens = gr.Slider(sweep_experiment.MIN_SWEEP_TOKENS, sweep_experiment.MAX_SWEEP_TOKENS,
                                 value=1024, step=128, label=t("rope.base.tokens"), scale=2,
                                 elem_id="rope-sweep-tokens")
    apply_to = gr.Radio([(t("rope.base.apply.full"), "full"), (t("rope.base.apply.sliding"), "sliding"),
                         (t("rope.base.apply.all"), "all")], value="full", label=t("rope.base.apply"),
                        elem_id="rope-apply-to")
    with gr.Row():
        sweep_run = gr.Button(t("rope.base.run"), variant="primary", elem_id="rope-sweep-run")
        sweep_stop = gr.Button(t("rope.stop"), variant="stop", elem_id="rope-sweep-stop")
    sweep_note = gr.Markdown(elem_id="rope-sweep-note")
    sweep_text = gr.Markdown(elem_id="rope-sweep-text")
    sweep_plot = gr.Plot(elem_id="rope-sweep-plot", show_label=False)
    sweep_table = gr.Dataframe(elem_id="rope-sweep-table", interactive=False, wrap=True)
    sweep_state = gr.State(None)
    sweep_outputs = [sweep_plot, sweep_text, sweep_table]
    sweep_event = sweep_run.click(
        SWEEP_STOPS.stoppable(_bind(ctx, sweep), stopped_word(5, progress_at=1)),
        [ctx.model, ctx.lang, sweep_bases, apply_to, sweep_tokens],
        [*sweep_outputs, sweep_state, sweep_note], api_name="rope_perplexity", show_progress="minimal",
        time_limit=int(SWEEP_TIME_LIMIT_S) + EVENT_SLACK_S, **ctx.long_event)
    # Stop ends the sweep after the forward under way, which then says "Stopped."
    sweep_stop.click(SWEEP_STOPS.on_stop, None, None, queue=False, api_name="rope_perplexity_stop")
    ctx.redraw_on_language(sweep_state, [*sweep_outputs, sweep_note], redraw_sweep)
    ctx.view("rope.base", [views.control("bases", sweep_bases, max_chars=frequencies_experiment.MAX_BASES_CHARS),
                           views.control("tokens", sweep_tokens), views.control("apply", apply_to)],
             run=sweep_run, event=sweep_event, state=sweep_state)
    return base_model_note, (apply_to, sweep_tokens)


def build_continuation(ctx: TabContext, sweep_inputs: tuple) -> None:
    """The continuation under a changed base, on the sweep's (apply_to, tokens)."""
    apply_to, sweep_tokens = sweep_inputs
    t = ctx.t
    gr.Markdown(t("rope.cont.heading"))
    with gr.Row():
        cont_base = gr.Slider(continuation_experiment.MIN_LOG10_BASE, continuation_experiment.MAX_LOG10_BASE,
                              value=6, step=0.1, label=t("rope.cont.base"), elem_id="rope-cont-base")
        cont_new = gr.Slider(continuation_experiment.MIN_NEW_TOKENS, continuation_experiment.MAX_NEW_TOKENS, value=20, step=1,
                             label=t("rope.cont.new"), elem_id="rope-cont-new")
        cont_run = gr.Button(t("rope.cont.run"), elem_id="rope-cont-run")
        cont_stop = gr.Button(t("rope.stop"), variant="stop", elem_id="rope-cont-stop")
    cont_note = gr.Markdown(elem_id="rope-cont-note")
    cont_text = gr.Markdown(elem_id="rope-cont-text")
    cont_state = gr.State(None)
    cont_event = cont_run.click(
        CONTINUATION_STOPS.stoppable(_bind(ctx, continuation), stopped_word(3, progress_at=0)),
        [ctx.model, ctx.lang, cont_base, apply_to, sweep_tokens, cont_new],
        [cont_text, cont_state, cont_note], api_name="rope_continue", show_progress="minimal",
        time_limit=int(CONTINUATION_TIME_LIMIT_S) + EVENT_SLACK_S, **ctx.long_event)
    cont_stop.click(CONTINUATION_STOPS.on_stop, None, None, queue=False, api_name="rope_continue_stop")
    ctx.redraw_on_language(cont_state, [cont_text, cont_note], redraw_continuation)
    ctx.view("rope.cont", [views.control("base", cont_base), views.control("new", cont_new),
                           views.control("apply", apply_to), views.control("tokens", sweep_tokens)],
             run=cont_run, event=cont_event, state=cont_state)
