"""The RoPE tab: frequencies per pair for several bases (C13), the Toeplitz property on the real
model's q and k (C11) and what one-sided rotation leaves (C12), one pair rotating, attention
against distance, the real model's perplexity and continuation with its base changed, and the
context-extension recipes. One section per experiment of explorer/rope; the handlers are
module-level (a test calls them without a server) and return the typed result for the
section's gr.State, from which the language switch redraws. The handlers that run many
forwards (the perplexity sweep, the continuation) are generators that yield between two
forwards: Stop, a closed page or a finished event closes them there, and a time limit inside
the run ends them with what was measured so far."""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable

import gradio as gr

from explorer.inputs import check_text
from explorer.locales import Term, normalize_language, text
from explorer.prompts import CHARS_PER_TOKEN_BOUND
from explorer.rope import continuation as continuation_experiment
from explorer.rope import distance as distance_experiment
from explorer.rope import frequencies as frequencies_experiment
from explorer.rope import pair as pair_experiment
from explorer.rope import scaling as scaling_experiment
from explorer.rope import sweep as sweep_experiment
from explorer.rope import toeplitz as toeplitz_experiment
from explorer.rope.capture import MAX_CAPTURE_TOKENS, MIN_CAPTURE_TOKENS, default_text
from explorer.texts import long_text
from explorer.ui import LATEX, TabContext, keep_or_reset, load_or_error, visitor_errors
from explorer.ui.page import views
from explorer.ui.tabs.attention import layer_of_model
from explorer.web.stopping import Stops

TITLE = "rope.tab"
DEFAULT_BASES = "10000, 100000, 500000, 1000000"
DEFAULT_SWEEP = "10000, 100000, 500000, 1000000, 10000000"
DEFAULT_PAIR_POSITION = 24
# Time limits of the long handlers, checked between two forwards (one forward of 2,048 tokens
# of Gemma takes tens of seconds on a busy CPU, so a run ends at most one forward later).
SWEEP_TIME_LIMIT_S = 300.0
CONTINUATION_TIME_LIMIT_S = 120.0
# the visitors' running sweeps and continuations, for their Stop buttons (stopping.py)
SWEEP_STOPS, CONTINUATION_STOPS = Stops(), Stops()
# Gradio's own `time_limit=` on the events (it acts on streaming events; the limit inside the
# run is what ends the work): the run's limit plus one forward.
EVENT_SLACK_S = 120


def _check_text(value) -> str:
    return check_text(value, Term("inputs.name.text"))


# ----------------------------------------------------------------------------- frequencies

def draw_frequencies(result: frequencies_experiment.Frequencies, lang: str):
    """(figure, summary, table) of a frequencies result in `lang`."""
    return (*frequencies_experiment.figures(result, lang), frequencies_experiment.summary(result, lang),
            frequencies_experiment.table(result, lang))


@visitor_errors
def frequencies(lang, bases_text, head_dim, context, model_bases=None):
    """Per-pair frequency θ_i = base^(-2i/d) and wavelength for several bases against a context;
    `model_bases` (the section's gr.State, from the model picker) names the loaded model's bases
    in the table."""
    lang = normalize_language(lang)
    result = frequencies_experiment.run(frequencies_experiment.parse_bases(bases_text), head_dim, context,
                                        model_bases)
    return (*draw_frequencies(result, lang), result)


# ----------------------------------------------------------------------------- the loaded model's bases

def draw_model_bases(bases: frequencies_experiment.ModelBases, lang: str):
    """The note on the model's bases, for the frequencies and the base sections."""
    note = frequencies_experiment.describe_bases(bases, lang)
    return note, note


def model_limits(runtime, model_name, lang, layer=None, head=None, progress=gr.Progress()):
    """The sliders and defaults that follow the picked model (a layer and head kept when the
    model has them), and its RoPE bases read from its config."""
    loaded = load_or_error(runtime, model_name, progress)
    config = loaded.config
    bases = frequencies_experiment.model_bases(config, getattr(loaded.spec, "title", loaded.name))
    return (gr.update(maximum=config.n_layers - 1,
                      **keep_or_reset(layer, lambda v: 0 <= int(v) < config.n_layers,
                                      min(3, config.n_layers - 1))),
            gr.update(maximum=config.n_heads - 1,
                      **keep_or_reset(head, lambda v: 0 <= int(v) < config.n_heads, 0)),
            gr.update(maximum=config.head_dim // 2 - 1),
            config.head_dim, float(config.rope_theta), bases,
            *draw_model_bases(bases, normalize_language(lang)))


# ----------------------------------------------------------------------------- real q and k: Toeplitz

def draw_toeplitz(result: toeplitz_experiment.ToeplitzResult, lang: str):
    """(both rotated, only q rotated, real scores, summary)."""
    return (*toeplitz_experiment.figures(result, lang), toeplitz_experiment.summary(result, lang))


def capture_and_toeplitz(runtime, model_name, lang, text_in, layer, head, q_token, k_token, n_positions,
                         max_tokens, pair=0, position=DEFAULT_PAIR_POSITION, progress=gr.Progress()):
    """Capture the real q, k (before RoPE) at one layer; Toeplitz test with one fixed q and k.
    The captured q's pair `pair` (or the fastest clearly non-zero one, when that pair is
    nearly zero) rotated to `position` is the pair section's first result."""
    lang = normalize_language(lang)
    _check_text(text_in)
    pair_experiment.check_position(position)
    loaded = load_or_error(runtime, model_name, progress)
    result = toeplitz_experiment.run(loaded.model, loaded.tokenizer, text_in, layer, head, q_token, k_token,
                                     n_positions, max_tokens)
    rotation = pair_experiment.run(result, pair_experiment.visible_pair(result, pair), position)
    return (*draw_toeplitz(result, lang), result, rotation)


# ----------------------------------------------------------------------------- one pair rotating

def draw_pair(result: pair_experiment.PairRotation, lang: str):
    return (*pair_experiment.figures(result, lang), pair_experiment.summary(result, lang))


@visitor_errors
def rotate_pair(lang, capture_result, pair, position):
    """One dimension pair (q_i, q_{i+d/2}) of the captured q rotated to position m."""
    lang = normalize_language(lang)
    result = pair_experiment.run(capture_result, pair, position)
    return (*draw_pair(result, lang), result)


@visitor_errors
def show_pair(lang, rotation):
    """The pair section after a capture: its figure, summary and the pair the slider shows."""
    if rotation is None:
        return gr.skip(), gr.skip(), gr.skip()
    return (*draw_pair(rotation, normalize_language(lang)), rotation.pair)


# ----------------------------------------------------------------------------- distance

def draw_distance(result: distance_experiment.DistanceProfile, lang: str):
    return (*distance_experiment.figures(result, lang), distance_experiment.summary(result, lang))


def distance(runtime, model_name, lang, text_in, max_tokens, progress=gr.Progress()):
    """Mean attention weight against distance m − n, per layer, on the real model."""
    lang = normalize_language(lang)
    _check_text(text_in)
    loaded = load_or_error(runtime, model_name, progress)
    result = distance_experiment.run(loaded.model, loaded.tokenizer, text_in, max_tokens)
    return (*draw_distance(result, lang), result)


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


# ----------------------------------------------------------------------------- scaling recipes

def draw_scaling(result: scaling_experiment.Scaling, lang: str):
    return scaling_experiment.figures(result, lang)[0]


@visitor_errors
def scaling(lang, head_dim, base, factor, original_context):
    """θ_i under linear interpolation, NTK-aware scaling and YaRN (frequency curves only)."""
    result = scaling_experiment.run(head_dim, base, factor, original_context)
    return draw_scaling(result, normalize_language(lang)), result


# ----------------------------------------------------------------------------- the tab

def build(ctx: TabContext) -> None:
    t = ctx.t
    gr.Markdown(t("rope.intro"), latex_delimiters=LATEX)
    model_bases_state = gr.State(None)   # the picked model's bases (ModelBases), from its config
    with ctx.section("rope.freq.title"):
        frequency = _build_frequencies(ctx, model_bases_state)
    with ctx.section("rope.qk.title"):
        capture = _build_capture(ctx)
    with ctx.section("rope.pair.title"):
        pair_index = _build_pair(ctx, capture)
    with ctx.section("rope.dist.title"):
        _build_distance(ctx, capture)
    with ctx.section("rope.base.title"):
        base_model_note, sweep_inputs = _build_sweep(ctx)
    with ctx.section("rope.cont.title"):
        _build_continuation(ctx, sweep_inputs)
    with ctx.section("rope.scale.section"):
        scale_base = _build_scaling(ctx, frequency.head_dim)

    # ------------------------------------------------------------------ follow the model picker
    # the sliders, the head dimension and the model's bases; then the frequencies with them
    limit_outputs = [capture.layer, capture.head, pair_index, frequency.head_dim, scale_base,
                     model_bases_state, frequency.model_note, base_model_note]
    for trigger in (ctx.model.change, ctx.demo.load):
        trigger(_bind(ctx, model_limits), [ctx.model, ctx.lang, capture.layer, capture.head],
                limit_outputs,
                api_visibility="private").then(
            frequencies, frequency.inputs, frequency.outputs, api_visibility="private")
    ctx.redraw_on_language(model_bases_state, [frequency.model_note, base_model_note], draw_model_bases)


def _bind(ctx: TabContext, handler: Callable) -> Callable:
    """A handler whose first argument is the app's Runtime, with its visitor errors shown."""
    return visitor_errors(functools.partial(handler, ctx.runtime))


@dataclass(frozen=True)
class _Frequencies:
    """What the frequencies section shares with the others: the head dimension (the scaling
    section's too), the model's note, and its event's inputs and outputs (rerun on a model
    change)."""
    head_dim: gr.Number
    model_note: gr.Markdown
    inputs: list
    outputs: list


def _build_frequencies(ctx: TabContext, model_bases_state: gr.State) -> _Frequencies:
    t = ctx.t
    gr.Markdown(t("rope.freq.heading"), latex_delimiters=LATEX)
    freq_model_note = gr.Markdown(elem_id="rope-freq-model")
    with gr.Row():
        freq_bases = gr.Textbox(DEFAULT_BASES, label=t("rope.freq.bases"), scale=3,
                                max_length=frequencies_experiment.MAX_BASES_CHARS, elem_id="rope-freq-bases")
        freq_dim = gr.Number(64, label=t("rope.freq.head_dim"), precision=0, scale=1,
                             elem_id="rope-freq-dim")
        freq_context = gr.Number(8192, label=t("rope.freq.context"), precision=0, scale=1,
                                 elem_id="rope-freq-context")
        freq_run = gr.Button(t("rope.freq.run"), variant="primary", scale=1, elem_id="rope-freq-run")
    freq_plot = gr.Plot(elem_id="rope-freq-plot", show_label=False)
    freq_text = gr.Markdown(elem_id="rope-freq-text")
    freq_table = gr.Dataframe(elem_id="rope-freq-table", interactive=False, wrap=True)
    freq_state = gr.State(None)
    freq_inputs = [ctx.lang, freq_bases, freq_dim, freq_context, model_bases_state]
    freq_outputs = [freq_plot, freq_text, freq_table]
    freq_event = freq_run.click(frequencies, freq_inputs, [*freq_outputs, freq_state],
                                api_name="rope_frequencies")
    ctx.redraw_on_language(freq_state, freq_outputs, draw_frequencies)
    # the head dimension follows the picked model (set on every load): not a link's setting
    ctx.view("rope.freq", [
        views.control("bases", freq_bases, max_chars=frequencies_experiment.MAX_BASES_CHARS),
        views.control("context", freq_context, low=1, high=frequencies_experiment.MAX_CONTEXT)],
        run=freq_run, event=freq_event, state=freq_state)
    return _Frequencies(freq_dim, freq_model_note, freq_inputs, [*freq_outputs, freq_state])


@dataclass(frozen=True)
class _Capture:
    """The "real q and k" section's controls and outputs: the pair section's capture runs from
    them, the distance section reads the same text and length, and the layer / head sliders
    follow the model picker."""
    text: gr.Textbox
    layer: gr.Slider
    head: gr.Slider
    tokens: gr.Slider
    q_token: gr.Number
    k_token: gr.Number
    positions: gr.Slider
    run: gr.Button
    outputs: list
    state: gr.State


def _build_capture(ctx: TabContext) -> _Capture:
    t = ctx.t
    gr.Markdown(t("rope.qk.heading"), latex_delimiters=LATEX)
    qk_text = gr.Textbox(default_text(), label=t("rope.qk.text"), lines=3, max_lines=6,
                         max_length=MAX_CAPTURE_TOKENS * CHARS_PER_TOKEN_BOUND, elem_id="rope-qk-text")
    with gr.Row():
        qk_layer = gr.Slider(0, 29, value=3, step=1, label=t("rope.qk.layer"), elem_id="rope-qk-layer")
        qk_head = gr.Slider(0, 8, value=0, step=1, label=t("rope.qk.head"), elem_id="rope-qk-head")
        qk_tokens = gr.Slider(MIN_CAPTURE_TOKENS, MAX_CAPTURE_TOKENS, value=256, step=16, label=t("rope.qk.tokens"),
                              elem_id="rope-qk-tokens")
    with gr.Row():
        qk_q_token = gr.Number(120, label=t("rope.qk.q_token"), precision=0, elem_id="rope-qk-q")
        qk_k_token = gr.Number(40, label=t("rope.qk.k_token"), precision=0, elem_id="rope-qk-k")
        qk_positions = gr.Slider(toeplitz_experiment.MIN_TOEPLITZ_POSITIONS,
                                 toeplitz_experiment.MAX_TOEPLITZ_POSITIONS, value=128, step=16, label=t("rope.qk.positions"),
                                 elem_id="rope-qk-positions")
        qk_run = gr.Button(t("rope.qk.run"), variant="primary", elem_id="rope-qk-run")
    qk_text_out = gr.Markdown(elem_id="rope-qk-result")
    with gr.Row():
        with gr.Column():
            gr.Markdown(t("rope.qk.both"))
            qk_both = gr.Plot(elem_id="rope-qk-both", show_label=False)
        with gr.Column():
            gr.Markdown(t("rope.qk.one"))
            qk_one = gr.Plot(elem_id="rope-qk-one", show_label=False)
    gr.Markdown(t("rope.qk.real"))
    qk_real = gr.Plot(elem_id="rope-qk-real", show_label=False)
    capture_state = gr.State(None)
    qk_outputs = [qk_both, qk_one, qk_real, qk_text_out]
    ctx.redraw_on_language(capture_state, qk_outputs, draw_toeplitz)
    # its run event is made with the pair section's (a capture also rotates a pair)
    ctx.view("rope.qk", [
        views.control("text", qk_text), views.control("layer", qk_layer, check=layer_of_model),
        views.control("head", qk_head, check=lambda v, config: 0 <= int(v) < config.n_heads),
        views.control("tokens", qk_tokens),
        views.control("q", qk_q_token, low=0, high=MAX_CAPTURE_TOKENS - 1),
        views.control("k", qk_k_token, low=0, high=MAX_CAPTURE_TOKENS - 1),
        views.control("positions", qk_positions)], run=qk_run, state=capture_state)
    return _Capture(qk_text, qk_layer, qk_head, qk_tokens, qk_q_token, qk_k_token, qk_positions,
                    qk_run, qk_outputs, capture_state)


def _build_pair(ctx: TabContext, capture: _Capture) -> gr.Slider:
    """One rotating pair; returns its pair slider, whose range follows the model picker."""
    t = ctx.t
    gr.Markdown(t("rope.pair.heading"), latex_delimiters=LATEX)
    with gr.Row():
        pair_index = gr.Slider(0, 31, value=0, step=1, label=t("rope.pair.pair"), elem_id="rope-pair-index")
        pair_position = gr.Slider(0, pair_experiment.MAX_POSITION, value=DEFAULT_PAIR_POSITION, step=1, label=t("rope.pair.position"),
                                  elem_id="rope-pair-position")
    with gr.Row():
        pair_plot = gr.Plot(elem_id="rope-pair-plot", show_label=False, scale=3)
        pair_text = gr.Markdown(elem_id="rope-pair-text")
    pair_state = gr.State(None)
    pair_inputs = [ctx.lang, capture.state, pair_index, pair_position]
    pair_outputs = [pair_plot, pair_text]
    # a capture (section "Real q and k") also rotates a pair of its q: this section's first result
    captured = capture.run.click(
        _bind(ctx, capture_and_toeplitz),
        [ctx.model, ctx.lang, capture.text, capture.layer, capture.head, capture.q_token,
         capture.k_token, capture.positions, capture.tokens, pair_index, pair_position],
        [*capture.outputs, capture.state, pair_state], api_name="rope_qk", **ctx.model_event,
    )
    shown = captured.success(show_pair, [ctx.lang, pair_state], [*pair_outputs, pair_index],
                             api_visibility="private")
    if ctx.views is not None:
        ctx.views.get("rope.qk").event = captured
    # drawn from a capture (the "real q and k" section's run): a link sets the pair and position
    ctx.view("rope.pair", [views.control("pair", pair_index, check=lambda v, config: 0 <= int(v) < config.head_dim // 2),
                           views.control("position", pair_position)], event=shown, state=pair_state)
    pair_index.release(rotate_pair, pair_inputs, [*pair_outputs, pair_state], api_name="rope_pair")
    pair_position.change(rotate_pair, pair_inputs, [*pair_outputs, pair_state], api_visibility="private",
                         show_progress="hidden", trigger_mode="always_last")
    ctx.redraw_on_language(pair_state, pair_outputs, draw_pair)
    return pair_index


def _build_distance(ctx: TabContext, capture: _Capture) -> None:
    gr.Markdown(ctx.t("rope.dist.heading"), latex_delimiters=LATEX)
    dist_run = gr.Button(ctx.t("rope.dist.run"), elem_id="rope-dist-run")
    dist_text = gr.Markdown(elem_id="rope-dist-text")
    dist_plot = gr.Plot(elem_id="rope-dist-plot", show_label=False)
    dist_state = gr.State(None)
    dist_outputs = [dist_plot, dist_text]
    dist_event = dist_run.click(_bind(ctx, distance), [ctx.model, ctx.lang, capture.text, capture.tokens],
                                [*dist_outputs, dist_state], api_name="rope_distance", **ctx.model_event)
    ctx.view("rope.dist", [views.control("text", capture.text), views.control("tokens", capture.tokens)],
             run=dist_run, event=dist_event, state=dist_state)
    ctx.redraw_on_language(dist_state, dist_outputs, draw_distance)


def _build_sweep(ctx: TabContext) -> tuple:
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


def _build_continuation(ctx: TabContext, sweep_inputs: tuple) -> None:
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


def _build_scaling(ctx: TabContext, head_dim: gr.Number) -> gr.Number:
    """The context-extension curves at the frequencies section's head dimension; returns the
    base field, which follows the model picker."""
    t = ctx.t
    gr.Markdown(t("rope.scale.heading"), latex_delimiters=LATEX)
    with gr.Row():
        scale_base = gr.Number(100000, label=t("rope.scale.base"), elem_id="rope-scale-base")
        scale_factor = gr.Slider(1, 32, value=4, step=0.5, label=t("rope.scale.factor"),
                                 elem_id="rope-scale-factor")
        scale_context = gr.Number(8192, label=t("rope.scale.context"), precision=0,
                                  elem_id="rope-scale-context")
        scale_run = gr.Button(t("rope.scale.run"), elem_id="rope-scale-run")
    scale_plot = gr.Plot(elem_id="rope-scale-plot", show_label=False)
    scale_state = gr.State(None)
    scale_event = scale_run.click(scaling, [ctx.lang, head_dim, scale_base, scale_factor, scale_context],
                                  [scale_plot, scale_state], api_name="rope_scaling")
    # the base follows the picked model (set on every load): not a link's setting
    ctx.view("rope.scale", [views.control("factor", scale_factor),
                            views.control("context", scale_context, low=1,
                                          high=frequencies_experiment.MAX_CONTEXT)],
             run=scale_run, event=scale_event, state=scale_state)
    ctx.redraw_on_language(scale_state, [scale_plot], draw_scaling)
    return scale_base
