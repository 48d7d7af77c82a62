"""The RoPE tab: frequencies per pair for several bases (C13), the Toeplitz property on the real
model's q and k (C11) and what one-sided rotation leaves (C12), one pair rotating, attention
against distance, the real model's perplexity and continuation with its base changed
(rope_context.py: the two runs of minutes), and the context-extension recipes. One section per
experiment of explorer/rope; the handlers are module-level (a test calls them without a
server) and return the typed result for the section's gr.State, from which the language
switch redraws."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, NamedTuple

import gradio as gr

from explorer.inputs import check_text
from explorer.locales import Term, normalize_language, text
from explorer.prompts import CHARS_PER_TOKEN_BOUND
from explorer.rope import distance as distance_experiment
from explorer.rope import frequencies as frequencies_experiment
from explorer.rope import pair as pair_experiment
from explorer.rope import scaling as scaling_experiment
from explorer.rope import toeplitz as toeplitz_experiment
from explorer.rope.capture import MAX_CAPTURE_TOKENS, MIN_CAPTURE_TOKENS, default_text
from explorer.ui import LATEX, TabContext, bind, keep_or_reset, load_or_error, takes, visitor_errors
from explorer.ui.page import views
from explorer.ui.tabs import rope_context
from explorer.ui.tabs.attention_map import layer_of_model

TITLE = "rope.tab"
DEFAULT_BASES = "10000, 100000, 500000, 1000000"
DEFAULT_PAIR_POSITION = 24


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


class CaptureInputs(NamedTuple):
    """The capture section's inputs by name, in the order its event sends them; the names are
    the "rope_qk" API's parameter names (capture_and_toeplitz's signature is made from them)."""
    model_name: Any      # the header's model picker
    lang: Any            # the header's language switch
    text_in: Any         # the text whose q and k are captured
    layer: Any
    head: Any
    q_token: Any         # the fixed q's token
    k_token: Any         # the fixed k's token
    n_positions: Any     # positions the pair (q, k) is moved through
    max_tokens: Any      # tokens of the text at most
    pair: Any = 0        # the pair section's pair and position (a capture also rotates one)
    position: Any = DEFAULT_PAIR_POSITION


class CaptureOutputs(NamedTuple):
    """The capture section's outputs by name, in the order its event lists them (the first
    four are drawn again from `result` on a language switch, by draw_toeplitz)."""
    both: Any            # scores with q and k both rotated
    one: Any             # scores with only q rotated
    real: Any            # the real model's scores
    summary: Any
    result: Any          # the capture (gr.State)
    rotation: Any        # the pair section's first result (gr.State)


@takes(CaptureInputs)
def capture_and_toeplitz(runtime, *values: CaptureInputs, progress=gr.Progress()):
    """Capture the real q, k (before RoPE) at one layer; Toeplitz test with one fixed q and k.
    The captured q's pair `pair` (or the fastest clearly non-zero one, when that pair is
    nearly zero) rotated to `position` is the pair section's first result."""
    form = CaptureInputs(*values)
    lang = normalize_language(form.lang)
    _check_text(form.text_in)
    pair_experiment.check_position(form.position)
    loaded = load_or_error(runtime, form.model_name, progress)
    result = toeplitz_experiment.run(loaded.model, loaded.tokenizer, form.text_in, form.layer, form.head,
                                     form.q_token, form.k_token, form.n_positions, form.max_tokens)
    rotation = pair_experiment.run(result, pair_experiment.visible_pair(result, form.pair), form.position)
    return CaptureOutputs(*draw_toeplitz(result, lang), result=result, rotation=rotation)


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
        base_model_note, sweep_inputs = rope_context.build_sweep(ctx)
    with ctx.section("rope.cont.title"):
        rope_context.build_continuation(ctx, sweep_inputs)
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
    return visitor_errors(bind(handler, ctx.runtime))


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
        list(CaptureInputs(model_name=ctx.model, lang=ctx.lang, text_in=capture.text, layer=capture.layer,
                           head=capture.head, q_token=capture.q_token, k_token=capture.k_token,
                           n_positions=capture.positions, max_tokens=capture.tokens, pair=pair_index,
                           position=pair_position)),
        list(CaptureOutputs(*capture.outputs, result=capture.state, rotation=pair_state)),
        api_name="rope_qk", **ctx.model_event,
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
