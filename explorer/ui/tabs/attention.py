"""The Attention tab: six experiments, one section (sub-tab) each, in this order: maps under
causal / window / sinks / sink-logit masks with the mask drawn next to them, the grouped-query
layout, attention sinks, the StreamingLLM experiment, the receptive field through depth, and
local vs global layers. The first section (the map) lives in attention_map.py, the other five
here. Thin wiring over explorer.attention: each handler is a module-level function (callable
without a server) that checks inputs, runs the experiment and returns its figures and text
together with the typed result, which the section keeps in gr.State; the shell's one language
switch redraws every section from those results. The three
handlers that make several forward passes (sinks, StreamingLLM, receptive field) are generators
with a progress line, a Stop button and a time limit (see "long runs" below)."""
from __future__ import annotations

from typing import Any, Callable, Generator, NamedTuple

import gradio as gr

from explorer.attention import LONG_TEXT_MAX, Deadline, Progress, costs, groups, \
    receptive_field as rf, sinks, streaming
from explorer.locales import normalize_language, text
from explorer.ui import LATEX, TabContext, keep_or_reset, takes, visitor_errors
from explorer.ui.page import views
from explorer.ui.tabs.attention_map import build_map, head_choices
from explorer.web.stopping import Stops

STREAM_DEFAULT_TOKENS = 2048

TITLE = "attention.tab"


# ----------------------------------------------------------------------------- handlers


def draw_groups(result: groups.GroupsResult, lang: str) -> tuple:
    return (*groups.figures(result, lang), groups.summary(result, lang))


@visitor_errors
def head_groups(loaded, lang) -> tuple:
    """(figure, summary, data, result): which query heads share which KV head."""
    result = groups.run(loaded)
    return (*draw_groups(result, lang), groups.data(result), result)


def draw_costs(result: costs.CostResult, lang: str) -> tuple:
    strip, cost_fig = costs.figures(result, lang)
    return strip, costs.summary(result, lang), cost_fig, costs.table(result, lang)


@visitor_errors
def local_global(loaded, lang) -> tuple:
    """(strip, summary, cost figure, table, data, result): no forward pass."""
    from explorer.attention import model_title

    result = costs.run_once(loaded.model, loaded.name, model_title(loaded))
    return (*draw_costs(result, lang), costs.data(result), result)


# ----------------------------------------------------------------------------- long runs
# The sink grid, StreamingLLM and the receptive-field probe make several forward passes. Their
# handlers are generators that yield after every forward (the progress line), so a Stop, a closed
# tab or a dropped client ends the work at the next yield: the Stop's wrapper (stopping.py), or
# Gradio for a cancelled event, closes the generator there. Each run also has a deadline,
# checked before every forward, a little shorter than its event's Gradio `time_limit=`, so that
# the visitor reads why it stopped. Each run's inputs and outputs are named (SinkInputs /
# SinkOutputs, StreamInputs / StreamOutputs, ProbeInputs / ProbeOutputs): a progress message
# and a Stop's last word set `status` and `running` by name.

SINK_TIME_LIMIT_S = 120
STREAM_TIME_LIMIT_S = 600
PROBE_TIME_LIMIT_S = 120
TIME_LIMIT_MARGIN_S = 30       # Gradio's own limit on the event: the deadline plus this
# the visitors' running runs of each, for their Stop buttons (explorer/web/stopping.py)
SINK_STOPS, STREAM_STOPS, PROBE_STOPS = Stops(), Stops(), Stops()


def progress_line(step: Progress, lang: str, stage: str = "") -> str:
    stage = text("attention.progress_stage", lang, stage=stage) if stage else ""
    return text("attention.progress", lang, done=step.done, total=step.total, stage=stage)


def follow(steps: Generator, report: Callable[[Progress], tuple]) -> Generator:
    """Yield report(progress) for every Progress of an experiment's steps(...); return its
    result. Closing this generator (Gradio does, at a yield, on Stop or a closed client) closes
    the steps too, before their next forward."""
    try:
        while True:
            try:
                step = next(steps)
            except StopIteration as finished:
                return finished.value
            yield report(step)
    finally:
        steps.close()


def stopped_word(outputs: type) -> Callable:
    """The last message of a stopped run (explorer/web/stopping.py), a message of `outputs`
    (the section's NamedTuple of outputs): its `status` says "Stopped.", its `running` flag is
    cleared, the rest stays as it was."""
    def last_word(last, lang) -> tuple:
        stopped = text("attention.stopped", normalize_language(lang))
        return outputs(*(gr.skip(),) * len(outputs._fields))._replace(status=stopped, running=False)
    return last_word


def draw_sinks(result: sinks.SinkResult, lang: str) -> tuple:
    first, first_s, absorbed = sinks.figures(result, lang)
    return first, first_s, gr.update(value=absorbed, visible=absorbed is not None), sinks.summary(result, lang)


class SinkInputs(NamedTuple):
    """The sink grid's inputs by name, in the order its event sends them; the names are the
    "sink_grid" API's parameter names (its handler's signature is made from them), kept as
    they were when the handler took them by position."""
    model_name: Any      # the header's model picker
    lang: Any            # the header's language switch
    n_tokens: Any        # tokens of the long text
    n_sinks: Any         # the first tokens whose attention mass is measured
    with_logit: Any      # add a learned sink logit
    b: Any               # its value


class SinkOutputs(NamedTuple):
    """The sink grid's outputs by name, in the order its event lists them (the first four are
    drawn again from `result` on a language switch, by draw_sinks)."""
    first: Any           # mass on the first token, layer x head
    first_s: Any         # mass on the first n_sinks tokens
    absorbed: Any        # mass the sink logit absorbs (shown only with a sink logit)
    summary: Any
    data: Any            # the numbers (gr.JSON)
    result: Any          # the grid (gr.State)
    status: Any          # the progress line
    running: Any         # the running flag (gr.State)


@visitor_errors
def sink_grid(loaded, lang, n_tokens, n_sinks, use_logit, sink_logit,
              time_limit_s: float = SINK_TIME_LIMIT_S):
    """Yields SinkOutputs: the progress after every forward (other outputs unchanged), then the
    mass on the first tokens."""
    steps = sinks.steps(loaded, n_tokens, n_sinks, use_logit, sink_logit, Deadline(time_limit_s))
    unchanged = SinkOutputs(*(gr.skip(),) * len(SinkOutputs._fields))
    result = yield from follow(steps, lambda step: unchanged._replace(
        status=progress_line(step, lang), running=True))
    first, first_s, absorbed, summary = draw_sinks(result, lang)
    yield SinkOutputs(first=first, first_s=first_s, absorbed=absorbed, summary=summary,
                      data=sinks.data(result), result=result, status="", running=False)


def draw_streaming(result: streaming.StreamingRun, lang: str) -> tuple:
    return (*streaming.figures(result, lang), streaming.summary(result, lang))


class StreamInputs(NamedTuple):
    """The StreamingLLM section's inputs by name, in the order its event sends them; the names
    are the "streaming_ppl" API's parameter names (its handler's signature is made from them),
    kept as they were when the handler took them by position."""
    model_name: Any      # the header's model picker
    lang: Any            # the header's language switch
    n_tokens: Any        # tokens of the long text
    w: Any               # window
    s: Any               # sinks


class StreamOutputs(NamedTuple):
    """The StreamingLLM section's outputs by name, in the order its event lists them (the
    first two are drawn again from `result` on a language switch, by draw_streaming)."""
    plot: Any            # perplexity along the text, one curve per eviction policy
    summary: Any
    data: Any            # the numbers (gr.JSON)
    result: Any          # the run (gr.State)
    status: Any          # the progress line
    running: Any         # the running flag (gr.State)


@visitor_errors
def streaming_ppl(loaded, lang, n_tokens, window, n_sinks, cache: streaming.StreamingCache,
                  time_limit_s: float = STREAM_TIME_LIMIT_S):
    """Yields StreamOutputs: the progress after every forward, then the perplexity along the
    text under each eviction policy."""
    steps = streaming.steps(loaded, n_tokens, window, n_sinks, cache, Deadline(time_limit_s))
    unchanged = StreamOutputs(*(gr.skip(),) * len(StreamOutputs._fields))

    def report(step):
        # the first Progress comes after the inputs were checked: window and sinks are numbers
        stage = streaming.policy_label(step.stage, int(window), int(n_sinks), lang)
        return unchanged._replace(status=progress_line(step, lang, stage), running=True)

    result = yield from follow(steps, report)
    plot, summary = draw_streaming(result, lang)
    yield StreamOutputs(plot=plot, summary=summary, data=streaming.data(result), result=result,
                        status="", running=False)


def draw_receptive(result: rf.ProbeRun | str, lang: str) -> tuple:
    """(figure, summary, reach table) of a probe; before any probe (the state's initial
    NO_PROBE), the reference reach table alone."""
    if not isinstance(result, rf.ProbeRun):
        return gr.skip(), gr.skip(), rf.table(None, lang)
    return (*rf.figures(result, lang), rf.summary(result, lang), rf.table(result, lang))


class ProbeInputs(NamedTuple):
    """The receptive-field section's inputs by name, in the order its event sends them; the
    names are the "receptive_field" API's parameter names (its handler's signature is made from
    them), kept as they were when the handler took them by position."""
    model_name: Any      # the header's model picker
    lang: Any            # the header's language switch
    mode: Any            # "forced" | "own"
    w: Any               # window
    n_tokens: Any        # tokens of the probe's text
    seed: Any


class ProbeOutputs(NamedTuple):
    """The receptive-field section's outputs by name, in the order its event lists them (the
    first three are drawn again from `result` on a language switch, by draw_receptive)."""
    plot: Any            # which layers the distant token reaches
    summary: Any
    reach: Any           # the reach table (it also follows the model picker)
    data: Any            # the numbers (gr.JSON)
    result: Any          # the probe (gr.State; NO_PROBE before one)
    status: Any          # the progress line
    running: Any         # the running flag (gr.State)


@visitor_errors
def receptive_field(loaded, lang, mode, window, n_tokens, seed,
                    time_limit_s: float = PROBE_TIME_LIMIT_S):
    """Yields ProbeOutputs: the progress after every forward, then which layers a distant
    token reaches."""
    steps = rf.steps(loaded, mode, window, n_tokens, seed, Deadline(time_limit_s))
    unchanged = ProbeOutputs(*(gr.skip(),) * len(ProbeOutputs._fields))
    result = yield from follow(steps, lambda step: unchanged._replace(
        status=progress_line(step, lang), running=True))
    plot, summary, reach = draw_receptive(result, lang)
    yield ProbeOutputs(plot=plot, summary=summary, reach=reach, data=rf.data(result), result=result,
                       status="", running=False)


NO_PROBE = "no probe yet"


# ----------------------------------------------------------------------------- the tab


def build(ctx: TabContext) -> None:
    with ctx.section("attention.section.map"):
        layer, head = build_map(ctx)
    with ctx.section("attention.section.groups"):
        group_outputs, groups_run = _build_groups(ctx)
    with ctx.section("attention.section.sinks"):
        _build_sinks(ctx)
    with ctx.section("attention.section.stream"):
        # measured StreamingLLM curves of this app instance, shared by its visitors (deterministic)
        _build_streaming(ctx, streaming.StreamingCache())
    with ctx.section("attention.section.rf"):
        reach = _build_receptive(ctx)
    with ctx.section("attention.section.lg"):
        lg_outputs, lg_run = _build_local_global(ctx)
    _follow_model(ctx, layer, head, (lg_outputs, lg_run), reach, (group_outputs, groups_run))


def _build_groups(ctx: TabContext) -> tuple:
    """The grouped-query layout; returns (its outputs, which follow the model picker, and its
    redraw button)."""
    t = ctx.t
    gr.Markdown(t("attention.gqa_heading"))
    # drawn on load and on a model change; the button redraws it (what a lesson step presses)
    groups_run = gr.Button(t("attention.redraw"), size="sm", elem_id="attention-groups-run")
    groups_plot = gr.Plot(elem_id="attention-groups", show_label=False)
    groups_summary = gr.Markdown(elem_id="attention-groups-summary", latex_delimiters=LATEX)
    groups_data = gr.JSON(visible=False)
    groups_state = gr.State()
    ctx.redraw_on_language(groups_state, [groups_plot, groups_summary], draw_groups)
    ctx.view("attention.groups", [], run=groups_run, state=groups_state)
    return [groups_plot, groups_summary, groups_data, groups_state], groups_run


def _run_controls(t: Callable, run_key: str, prefix: str) -> tuple:
    """A long run's controls: (Run, Stop, status line, running flag), ids `{prefix}-run` ..."""
    with gr.Row():
        run = gr.Button(t(run_key), elem_id=f"{prefix}-run", scale=4)
        stop = gr.Button(t("attention.stop"), variant="stop", elem_id=f"{prefix}-stop", scale=1)
    status = gr.Markdown(elem_id=f"{prefix}-status")
    running = gr.State(False)
    return run, stop, status, running


def _build_sinks(ctx: TabContext) -> None:
    t = ctx.t
    gr.Markdown(t("attention.sinks_heading"), latex_delimiters=LATEX)
    gr.Markdown(t("attention.source"), elem_classes=["attention-source"])
    with gr.Row():
        sink_tokens = gr.Slider(16, 512, value=256, step=16, label=t("attention.sink_tokens"),
                                elem_id="sink-tokens")
        sink_count = gr.Number(4, label=t("attention.sinks"), precision=0, elem_id="sink-count")
        use_logit = gr.Checkbox(False, label=t("attention.use_sink_logit"), elem_id="sink-use-logit")
        sink_b = gr.Slider(-5, 10, value=2.0, step=0.1, label=t("attention.sink_logit"),
                           elem_id="sink-b")
    sink_run, sink_stop, sink_status, sink_running = _run_controls(t, "attention.sink_run", "sink")
    with gr.Row():
        sink_first = gr.Plot(elem_id="sink-first", show_label=False)
        sink_first_s = gr.Plot(elem_id="sink-first-s", show_label=False)
        sink_absorbed = gr.Plot(elem_id="sink-absorbed", show_label=False, visible=False)
    sink_summary = gr.Markdown(elem_id="sink-summary")
    with gr.Accordion(t("attention.data"), open=False):
        sink_data = gr.JSON(show_label=False)
    sink_state = gr.State()

    @takes(SinkInputs)
    def on_sinks(*values: SinkInputs, progress=gr.Progress()):
        """Attention mass on the first token(s) for every layer x head."""
        form = SinkInputs(*values)
        yield from sink_grid(ctx.load(form.model_name, progress), form.lang, n_tokens=form.n_tokens,
                             n_sinks=form.n_sinks, use_logit=form.with_logit, sink_logit=form.b)

    # a long run: progress after every forward, a Stop, a time limit
    sink_event = sink_run.click(
        SINK_STOPS.stoppable(on_sinks, stopped_word(SinkOutputs)),
        list(SinkInputs(model_name=ctx.model, lang=ctx.lang, n_tokens=sink_tokens, n_sinks=sink_count,
                        with_logit=use_logit, b=sink_b)),
        list(SinkOutputs(first=sink_first, first_s=sink_first_s, absorbed=sink_absorbed,
                         summary=sink_summary, data=sink_data, result=sink_state, status=sink_status,
                         running=sink_running)),
        api_name="sink_grid", time_limit=SINK_TIME_LIMIT_S + TIME_LIMIT_MARGIN_S, **ctx.long_event)
    # Stop ends a run after the forward under way, with its own last message "Stopped."
    sink_stop.click(SINK_STOPS.on_stop, None, None, queue=False, api_visibility="private")
    ctx.redraw_on_language(sink_state, [sink_first, sink_first_s, sink_absorbed, sink_summary], draw_sinks)
    ctx.view("attention.sinks", [
        views.control("tokens", sink_tokens), views.control("sinks", sink_count, low=0, high=64),
        views.control("use_logit", use_logit), views.control("sink_logit", sink_b)],
        run=sink_run, event=sink_event, state=sink_state)


def _build_streaming(ctx: TabContext, streaming_cache: streaming.StreamingCache) -> None:
    t = ctx.t
    gr.Markdown(t("attention.stream_heading"), latex_delimiters=LATEX)
    gr.Markdown(t("attention.source"), elem_id="stream-source")
    with gr.Row():
        stream_tokens = gr.Slider(128, LONG_TEXT_MAX, value=STREAM_DEFAULT_TOKENS, step=64,
                                  label=t("attention.stream_tokens"), elem_id="stream-tokens")
        stream_window = gr.Number(256, label=t("attention.window"), precision=0, elem_id="stream-window")
        stream_sinks = gr.Number(4, label=t("attention.sinks"), precision=0, elem_id="stream-sinks")
    stream_run, stream_stop, stream_status, stream_running = _run_controls(t, "attention.stream_run", "stream")
    stream_plot = gr.Plot(elem_id="stream-plot", show_label=False)
    stream_summary = gr.Markdown(elem_id="stream-summary")
    with gr.Accordion(t("attention.data"), open=False):
        stream_data = gr.JSON(show_label=False)
    stream_state = gr.State()

    @takes(StreamInputs)
    def on_streaming(*values: StreamInputs, progress=gr.Progress()):
        """Perplexity along the long text: full cache, window only, sinks + window."""
        form = StreamInputs(*values)
        # streaming_ppl is looked up here, at each run (tests hold a run by replacing it)
        yield from streaming_ppl(ctx.load(form.model_name, progress), form.lang, n_tokens=form.n_tokens,
                                 window=form.w, n_sinks=form.s, cache=streaming_cache)

    stream_event = stream_run.click(
        STREAM_STOPS.stoppable(on_streaming, stopped_word(StreamOutputs)),
        list(StreamInputs(model_name=ctx.model, lang=ctx.lang, n_tokens=stream_tokens, w=stream_window,
                          s=stream_sinks)),
        list(StreamOutputs(plot=stream_plot, summary=stream_summary, data=stream_data,
                           result=stream_state, status=stream_status, running=stream_running)),
        api_name="streaming_ppl", time_limit=STREAM_TIME_LIMIT_S + TIME_LIMIT_MARGIN_S,
        **ctx.long_event)
    stream_stop.click(STREAM_STOPS.on_stop, None, None, queue=False, api_visibility="private")
    ctx.redraw_on_language(stream_state, [stream_plot, stream_summary], draw_streaming)
    ctx.view("attention.stream", [
        views.control("tokens", stream_tokens), views.control("window", stream_window, low=1, high=LONG_TEXT_MAX),
        views.control("sinks", stream_sinks, low=0, high=64)],
        run=stream_run, event=stream_event, state=stream_state)


def _build_receptive(ctx: TabContext) -> gr.Dataframe:
    """The receptive-field probe; returns its reach table, which follows the model picker."""
    t = ctx.t
    gr.Markdown(t("attention.rf_heading"), latex_delimiters=LATEX)
    with gr.Row():
        rf_mode = gr.Radio([(t("attention.rf_mode.forced"), "forced"), (t("attention.rf_mode.own"), "own")],
                           value="forced", label=t("attention.rf_mode"), elem_id="rf-mode")
        rf_window = gr.Number(8, label=t("attention.window"), precision=0, elem_id="rf-window")
        rf_tokens = gr.Slider(16, 1024, value=96, step=8, label=t("attention.rf_tokens"),
                              elem_id="rf-tokens")
        rf_seed = gr.Number(0, label=t("attention.seed"), precision=0, elem_id="rf-seed")
    rf_run, rf_stop, rf_status, rf_running = _run_controls(t, "attention.rf_run", "rf")
    rf_plot = gr.Plot(elem_id="rf-plot", show_label=False)
    rf_summary = gr.Markdown(elem_id="rf-summary")
    gr.Markdown(t("attention.reach_heading"), latex_delimiters=LATEX)
    reach = gr.Dataframe(rf.table(None, "en"), elem_id="rf-reach", interactive=False)
    with gr.Accordion(t("attention.data"), open=False):
        rf_data = gr.JSON(show_label=False)
    rf_state = gr.State(NO_PROBE)   # the reach table is redrawn even before a probe

    @takes(ProbeInputs)
    def on_receptive(*values: ProbeInputs, progress=gr.Progress()):
        """Which layers' last hidden state changes when the token at distance d is replaced."""
        form = ProbeInputs(*values)
        yield from receptive_field(ctx.load(form.model_name, progress), form.lang, mode=form.mode,
                                   window=form.w, n_tokens=form.n_tokens, seed=form.seed)

    rf_event = rf_run.click(
        PROBE_STOPS.stoppable(on_receptive, stopped_word(ProbeOutputs)),
        list(ProbeInputs(model_name=ctx.model, lang=ctx.lang, mode=rf_mode, w=rf_window,
                         n_tokens=rf_tokens, seed=rf_seed)),
        list(ProbeOutputs(plot=rf_plot, summary=rf_summary, reach=reach, data=rf_data, result=rf_state,
                          status=rf_status, running=rf_running)),
        api_name="receptive_field", time_limit=PROBE_TIME_LIMIT_S + TIME_LIMIT_MARGIN_S,
        **ctx.long_event)
    rf_stop.click(PROBE_STOPS.on_stop, None, None, queue=False, api_visibility="private")
    ctx.redraw_on_language(rf_state, [rf_plot, rf_summary, reach], draw_receptive)
    ctx.view("attention.rf", [
        views.control("mode", rf_mode), views.control("window", rf_window, low=1, high=1024),
        views.control("tokens", rf_tokens), views.control("seed", rf_seed, low=0, high=2**31 - 1)],
        run=rf_run, event=rf_event, state=rf_state)
    return reach


def _build_local_global(ctx: TabContext) -> tuple:
    """Local vs global layers; returns (its outputs, which follow the model picker, and its
    redraw button)."""
    gr.Markdown(ctx.t("attention.lg_heading"), latex_delimiters=LATEX)
    lg_run = gr.Button(ctx.t("attention.redraw"), size="sm", elem_id="lg-run")
    lg_strip = gr.Plot(elem_id="lg-strip", show_label=False)
    lg_summary = gr.Markdown(elem_id="lg-summary")
    lg_plot = gr.Plot(elem_id="lg-plot", show_label=False)
    lg_table = gr.Dataframe(elem_id="lg-table", interactive=False)
    lg_data = gr.JSON(visible=False)
    lg_state = gr.State()
    ctx.redraw_on_language(lg_state, [lg_strip, lg_summary, lg_plot, lg_table], draw_costs)
    ctx.view("attention.lg", [], run=lg_run, state=lg_state)
    return [lg_strip, lg_summary, lg_plot, lg_table, lg_data, lg_state], lg_run


def _follow_model(ctx: TabContext, layer, head, lg: tuple, reach, grouped: tuple) -> None:
    """What the picked model decides, on load and on a model change: the layer / head ranges,
    local vs global layers, the reach table and the head groups (`lg`, `grouped`: each
    section's outputs and its redraw button); the groups and local / global sections are also
    API endpoints of their own."""
    (lg_outputs, lg_run), (group_outputs, groups_run) = lg, grouped

    def on_groups(model_name, lang):
        """Which query heads share which KV head in the selected model."""
        return head_groups(ctx.load(model_name), lang)

    def on_local_global(model_name, lang):
        """Layer types and score / cache cost per layer kind as n grows."""
        return local_global(ctx.load(model_name), lang)

    @visitor_errors
    def on_controls(model_name, lang, layer_value=None, head_value=None, progress=gr.Progress()):
        """Layer / head ranges, local/global costs and the reach table of the selected model. No
        forward pass (masks and the cache formula only), so it stays out of the model's queue
        and the page fills in even while someone else's long experiment runs."""
        loaded = ctx.load(model_name, progress)
        config = loaded.config
        heads = head_choices(config.n_heads)
        return (gr.update(maximum=config.n_layers - 1,
                          **keep_or_reset(layer_value, lambda v: 0 <= int(v) < config.n_layers,
                                          min(3, config.n_layers - 1))),
                gr.update(choices=heads, **keep_or_reset(head_value, lambda v: v in dict(heads).values(),
                                                         "all")),
                *local_global(loaded, lang), rf.table(None, lang))

    # API-only endpoints, wired before the page's own refresh below so that they keep their names
    groups_api = gr.Button(visible=False)
    groups_api.click(on_groups, [ctx.model, ctx.lang], group_outputs, api_name="head_groups",
                     **ctx.model_event)
    lg_api = gr.Button(visible=False)
    lg_api.click(on_local_global, [ctx.model, ctx.lang], lg_outputs, api_name="local_global")

    drawn = []
    for trigger in (ctx.demo.load, ctx.model.change):
        # the head groups read the shapes of real q/k/v tensors: a (tiny) forward, so queued
        controls = trigger(on_controls, [ctx.model, ctx.lang, layer, head],
                           [layer, head, *lg_outputs, reach], api_visibility="private")
        drawn.append(controls)
        drawn.append(controls.then(on_groups, [ctx.model, ctx.lang], group_outputs,
                                   api_visibility="private", **ctx.model_event))
    # each section's button redraws it for the picked model (what a lesson step on it presses)
    redrawn_lg = lg_run.click(on_local_global, [ctx.model, ctx.lang], lg_outputs,
                              api_visibility="private")
    redrawn_groups = groups_run.click(on_groups, [ctx.model, ctx.lang], group_outputs,
                                      api_visibility="private", **ctx.model_event)
    # what a lesson step on these two sections follows: they are drawn for the picked model
    if ctx.views is not None:
        ctx.views.get("attention.lg").event = (*drawn[0::2], redrawn_lg)
        ctx.views.get("attention.groups").event = (*drawn[1::2], redrawn_groups)
