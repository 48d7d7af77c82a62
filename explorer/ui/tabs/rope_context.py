"""The RoPE tab's two runs of minutes, each on the long text with the model's RoPE base
changed: perplexity per position for several bases (the base sweep) and a greedy continuation
under one changed base. Their handlers are generators that yield between two forwards: Stop, a
closed page or a finished event closes them there, and a time limit inside the run ends them
with what was measured so far (explorer/web/stopping.py)."""
from __future__ import annotations

from typing import Any, Callable, NamedTuple

import gradio as gr

from explorer.locales import normalize_language, text
from explorer.rope import continuation as continuation_experiment
from explorer.rope import frequencies as frequencies_experiment
from explorer.rope import sweep as sweep_experiment
from explorer.texts import long_text
from explorer.ui import LATEX, TabContext, bind, load_or_error, takes, visitor_errors
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


class SweepInputs(NamedTuple):
    """The base sweep's inputs by name, in the order its event sends them; the names are the
    "rope_perplexity" API's parameter names (sweep's signature is made from them)."""
    model_name: Any      # the header's model picker
    lang: Any            # the header's language switch
    bases_text: Any      # the bases, comma-separated ("10000, 1M, ...")
    apply: Any           # the layers whose base changes: "full" | "sliding" | "all"
    n_tokens: Any        # tokens of the long text


class SweepOutputs(NamedTuple):
    """The base sweep's outputs by name, in the order its event lists them (all but `result`
    are drawn again from it on a language switch, by redraw_sweep)."""
    plot: Any            # perplexity per position, one curve per base
    summary: Any         # the summary; the progress line while the sweep runs
    table: Any
    result: Any          # the sweep (gr.State)
    note: Any            # "Stopped." after a Stop, else empty


@takes(SweepInputs)
def sweep(runtime, *values: SweepInputs, progress=gr.Progress()):
    """Perplexity per position on the long text for each RoPE base (one forward per base). A
    generator: a SweepOutputs after each forward, the figure, table and state only at the end;
    closing it (Stop, a closed page) runs no further forward. Its first message clears the
    last sweep's figure, table and state (and a "Stopped."): a sweep stopped halfway leaves no
    chart that could be read as its own, and the language switch has nothing old to redraw."""
    form = SweepInputs(*values)
    lang = normalize_language(form.lang)
    bases = frequencies_experiment.parse_bases(form.bases_text)
    loaded = load_or_error(runtime, form.model_name, progress)
    unchanged = SweepOutputs(*(gr.skip(),) * len(SweepOutputs._fields))
    cleared = SweepOutputs(plot=None, summary=None, table=None, result=None, note="")
    first = True
    for item in sweep_experiment.steps(loaded.model, loaded.tokenizer, long_text(), bases, form.apply,
                                       form.n_tokens, model_title=getattr(loaded.spec, "title", loaded.name),
                                       time_limit_s=SWEEP_TIME_LIMIT_S):
        if isinstance(item, sweep_experiment.Sweep):
            plot, summary, table = draw_sweep(item, lang)
            yield SweepOutputs(plot=plot, summary=summary, table=table, result=item, note="")
            return
        label = sweep_experiment.key_label(loaded.config, form.apply, item.key, lang)
        status = text("rope.base.progress", lang, base=label, tokens=form.n_tokens, done=item.done + 1,
                      total=item.total)
        yield (cleared if first else unchanged)._replace(summary=status)
        first = False


def stopped_word(outputs: type, progress: str):
    """The last message of a stopped sweep or continuation (explorer/web/stopping.py), a
    message of `outputs` (the section's NamedTuple of outputs): its `note` says "Stopped.", its
    progress line (the field named `progress`) is cleared, the rest stays as it was."""
    def last_word(last, lang) -> tuple:
        unchanged = outputs(*(gr.skip(),) * len(outputs._fields))
        return unchanged._replace(**{progress: ""}, note=text("rope.stopped", normalize_language(lang)))
    return last_word


# ----------------------------------------------------------------------------- continuation

def draw_continuation(result: continuation_experiment.Continuation, lang: str):
    return continuation_experiment.summary(result, lang)


def redraw_continuation(result: continuation_experiment.Continuation, lang: str):
    return draw_continuation(result, lang), ""


class ContinueInputs(NamedTuple):
    """The continuation's inputs by name, in the order its event sends them; the names are the
    "rope_continue" API's parameter names (continuation's signature is made from them)."""
    model_name: Any      # the header's model picker
    lang: Any            # the header's language switch
    log10_base: Any      # the changed base, as log10
    apply: Any           # the sweep's layers: "full" | "sliding" | "all"
    n_tokens: Any        # the sweep's tokens of the long text
    n_new: Any           # tokens continued


class ContinueOutputs(NamedTuple):
    """The continuation's outputs by name, in the order its event lists them (`text` and
    `note` are drawn again from `result` on a language switch, by redraw_continuation)."""
    text: Any            # the two continuations; the progress line while it runs
    result: Any          # the continuation (gr.State)
    note: Any            # "Stopped." after a Stop, else empty


@takes(ContinueInputs)
def continuation(runtime, *values: ContinueInputs, progress=gr.Progress()):
    """Greedy continuation of the long text's first tokens, trained base vs a changed base. A
    generator like `sweep`: a ContinueOutputs with a progress line after every token."""
    form = ContinueInputs(*values)
    lang = normalize_language(form.lang)
    continuation_experiment.check_log10_base(form.log10_base)
    loaded = load_or_error(runtime, form.model_name, progress)
    first = True
    for item in continuation_experiment.steps(loaded.model, loaded.tokenizer, long_text(), form.log10_base,
                                              form.apply, form.n_tokens, form.n_new,
                                              time_limit_s=CONTINUATION_TIME_LIMIT_S):
        clear = "" if first else gr.skip()
        first = False
        if isinstance(item, continuation_experiment.Continuation):
            yield ContinueOutputs(text=draw_continuation(item, lang), result=item, note="")
            return
        yield ContinueOutputs(text=text("rope.cont.progress", lang, done=item.done, total=item.total),
                              result=gr.skip(), note=clear)


def _bind(ctx: TabContext, handler: Callable) -> Callable:
    """A handler whose first argument is the app's Runtime, with its visitor errors shown."""
    return visitor_errors(bind(handler, ctx.runtime))


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
        SWEEP_STOPS.stoppable(_bind(ctx, sweep), stopped_word(SweepOutputs, progress="summary")),
        list(SweepInputs(model_name=ctx.model, lang=ctx.lang, bases_text=sweep_bases, apply=apply_to,
                         n_tokens=sweep_tokens)),
        list(SweepOutputs(plot=sweep_plot, summary=sweep_text, table=sweep_table, result=sweep_state,
                          note=sweep_note)),
        api_name="rope_perplexity", show_progress="minimal",
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
        CONTINUATION_STOPS.stoppable(_bind(ctx, continuation), stopped_word(ContinueOutputs, progress="text")),
        list(ContinueInputs(model_name=ctx.model, lang=ctx.lang, log10_base=cont_base, apply=apply_to,
                            n_tokens=sweep_tokens, n_new=cont_new)),
        list(ContinueOutputs(text=cont_text, result=cont_state, note=cont_note)),
        api_name="rope_continue", show_progress="minimal",
        time_limit=int(CONTINUATION_TIME_LIMIT_S) + EVENT_SLACK_S, **ctx.long_event)
    cont_stop.click(CONTINUATION_STOPS.on_stop, None, None, queue=False, api_name="rope_continue_stop")
    ctx.redraw_on_language(cont_state, [cont_text, cont_note], redraw_continuation)
    ctx.view("rope.cont", [views.control("base", cont_base), views.control("new", cont_new),
                           views.control("apply", apply_to), views.control("tokens", sweep_tokens)],
             run=cont_run, event=cont_event, state=cont_state)
