"""The MoE tab: routing heatmap of a token × expert (C14), load balance of the three routers the
project trained (C15), what each expert prefers, total vs active parameters of real MoE
configs (C14), time per token against k (C14), and a what-if with another k or without the
selection bias. Layout and wiring over explorer/moe/ (run -> typed result -> figures)."""
from __future__ import annotations

import json
from typing import Any

import gradio as gr

from explorer.inputs import InputError
from explorer.locales import normalize_language
from explorer.checkpoints import shipped
from explorer.moe import balance, cost, params, preferences, routing, session, whatif
from explorer.ui import LATEX, TabContext, bind, load_or_error, visitor_errors
from explorer.ui.page import views

TITLE = "moe.tab"
DEFAULT_TEXT = '''def mean(values):
    """Return the arithmetic mean of a list of numbers."""
    if not values:
        raise ValueError("mean() of an empty list")
    total = 0
    for value in values:
        total += value
    return total / len(values)
'''
DEFAULT_LAYER = 3
PREFERENCE_TOKENS = 8192   # held-out tokens routed for the preference tables


def _model(runtime, name: Any, progress: Any = None):
    loaded = load_or_error(runtime, name, progress)
    session.check_moe(loaded.model, str(name))
    return loaded


# ----------------------------------------------------------------------------- 1. routing heatmap
@visitor_errors
def route(runtime, model_name, user_text, layer, lang):
    """Route the visitor's text through every MoE layer; the heatmap of one layer."""
    session.check(user_text)
    loaded = _model(runtime, model_name)
    tokens = session.tokenize(loaded.tokenizer, user_text)
    layer = session.check_layer(loaded.model, layer)
    state = {"result": routing.run_routing(loaded.model, tokens.ids, tokens.texts), "layer": layer}
    return (*draw_route(state, normalize_language(lang)), state)


def figures_and_table(experiment):
    """draw(result, lang) of a section that shows an experiment's figures, then its one table."""
    def draw(result, lang):
        rows, headers = experiment.table(result, lang)
        return (*experiment.figures(result, lang), gr.update(value=rows, headers=headers))
    return draw


def draw_route(state, lang):
    result, layer = state["result"], state["layer"]
    return routing.figures(result, layer, lang), routing.summary(result, layer, lang)


# ----------------------------------------------------------------------------- 2. load balance (C15)
@visitor_errors
def compare(runtime, user_text, layer, lang):
    """The visitor's text through the three shipped routers, beside their held-out loads."""
    session.check(user_text)
    names = [n for n in shipped.MOE_NAMES if n in runtime.names()]
    if not names:
        raise InputError("moe.err.no_variants")
    models = []
    for name in names:
        loaded = _model(runtime, name)
        tokens = session.tokenize(loaded.tokenizer, user_text)
        layer = session.check_layer(loaded.model, layer)
        models.append((name, shipped.variant_of(name), loaded.model, tokens.ids, tokens.texts, shipped.card(name)))
    result = balance.run(models, layer)
    return (*draw_compare(result, normalize_language(lang)), result)


draw_compare = figures_and_table(balance)


# ----------------------------------------------------------------------------- 3. expert preferences
@visitor_errors
def prefer(runtime, model_name, layer, lang):
    """Lift of tokens and token kinds per expert over the held-out files."""
    loaded = _model(runtime, model_name)
    layer = session.check_layer(loaded.model, layer)
    result = preferences.run_preferences(loaded.model, loaded.tokenizer, session.held_out_texts(),
                                         layer, max_tokens=PREFERENCE_TOKENS)
    return (*draw_prefer(result, normalize_language(lang)), result)


draw_prefer = figures_and_table(preferences)


# ----------------------------------------------------------------------------- 4. parameters (C14)
def parameter_counts(runtime) -> list[params.ParamCount]:
    """Ours (the three variants share one shape: the first listed), then the published ones."""
    ours = []
    for name in shipped.MOE_NAMES:
        path = shipped.folder(name) / "config.json"
        if name in runtime.names() and path.is_file():
            ours.append(params.count_params(json.loads(path.read_text()), name,
                                            f"explorer/moe/checkpoints/{name}/config.json"))
            break
    return ours + params.published_counts()


@visitor_errors
def count(runtime, lang):
    counts = parameter_counts(runtime)
    return (*draw_count(counts, normalize_language(lang)), counts)


draw_count = figures_and_table(params)


# ----------------------------------------------------------------------------- 5. time per token vs k
@visitor_errors
def time_k(runtime, model_name, user_text, lang):
    session.check(user_text)
    loaded = _model(runtime, model_name)
    tokens = session.tokenize(loaded.tokenizer, user_text)
    result = cost.run_cost(loaded.model, tokens.ids)
    return (*draw_time(result, normalize_language(lang)), result)


def draw_time(result, lang):
    return (*cost.figures(result, lang), cost.summary(result, lang))


# ----------------------------------------------------------------------------- 6. what-if
@visitor_errors
def what_if(runtime, model_name, user_text, k, use_bias, lang):
    session.check(user_text)
    if not isinstance(use_bias, bool):
        raise InputError("moe.err.bias_flag")
    loaded = _model(runtime, model_name)
    tokens = session.tokenize(loaded.tokenizer, user_text)
    k = session.check_k(loaded.model, k)
    result = whatif.run(loaded.model, tokens.ids, tokens.texts, k, use_bias)
    return (*draw_whatif(result, normalize_language(lang)), result)


def draw_whatif(result, lang):
    return (*whatif.figures(result, lang), whatif.summary(result, lang))


def build(ctx: TabContext) -> None:
    t, runtime = ctx.t, ctx.runtime
    bound = lambda handler: bind(handler, runtime)  # noqa: E731
    gr.Markdown(t("moe.intro"), latex_delimiters=LATEX)
    names = shipped.moe_model_names(runtime)
    with gr.Row():
        model = gr.Dropdown(names, value=names[0] if names else None, label=t("moe.model"),
                            elem_id="moe-model", scale=1)
        user_text = gr.Textbox(DEFAULT_TEXT, label=t("moe.text"), lines=6, max_lines=12,
                               max_length=session.MAX_TEXT_CHARS, elem_id="moe-text", scale=3)
        layer = gr.Number(DEFAULT_LAYER, precision=0, label=t("moe.layer"), elem_id="moe-layer", scale=1)
    # the tab's own model, text and layer (a link's values; the handlers check the layer
    # against the picked MoE model)
    shared = [views.control("moe_model", model), views.control("text", user_text),
              views.control("layer", layer, low=0, high=255)]

    with ctx.section("moe.route.section"):
        gr.Markdown(t("moe.route.intro"), latex_delimiters=LATEX)
        run = gr.Button(t("moe.route.run"), variant="primary", elem_id="moe-route-run")
        outputs = [gr.Plot(elem_id="moe-heatmap", show_label=False), gr.Markdown(elem_id="moe-route-summary")]
        state = gr.State(None)
        event = run.click(bound(route), [model, user_text, layer, ctx.lang], [*outputs, state],
                          api_name="moe_route", **ctx.model_event)
        ctx.view("moe.route", shared, run=run, event=event, state=state)
        ctx.redraw_on_language(state, outputs, draw_route)

    with ctx.section("moe.load.section"):
        gr.Markdown(t("moe.load.intro"), latex_delimiters=LATEX)
        run = gr.Button(t("moe.load.run"), variant="primary", elem_id="moe-load-run")
        outputs = [gr.Plot(elem_id="moe-load-plot", show_label=False),
                   gr.Plot(elem_id="moe-share-plot", show_label=False),
                   gr.Dataframe(elem_id="moe-load-table", interactive=False, wrap=True)]
        state = gr.State(None)
        event = run.click(bound(compare), [user_text, layer, ctx.lang], [*outputs, state],
                          api_name="moe_compare", **ctx.model_event)
        ctx.view("moe.load", shared[1:], run=run, event=event, state=state)
        ctx.redraw_on_language(state, outputs, draw_compare)

    with ctx.section("moe.pref.section"):
        gr.Markdown(t("moe.pref.intro"), latex_delimiters=LATEX)
        run = gr.Button(t("moe.pref.run"), variant="primary", elem_id="moe-pref-run")
        outputs = [gr.Plot(elem_id="moe-kinds-plot", show_label=False),
                   gr.Dataframe(elem_id="moe-pref-table", interactive=False, wrap=True)]
        state = gr.State(None)
        event = run.click(bound(prefer), [model, layer, ctx.lang], [*outputs, state],
                          api_name="moe_preferences", **ctx.model_event)
        ctx.view("moe.pref", [shared[0], shared[2]], run=run, event=event, state=state)
        ctx.redraw_on_language(state, outputs, draw_prefer)

    with ctx.section("moe.params.section"):
        gr.Markdown(t("moe.params.intro"), latex_delimiters=LATEX)
        outputs = [gr.Plot(elem_id="moe-params-plot", show_label=False),
                   gr.Dataframe(elem_id="moe-params-table", interactive=False, wrap=True)]
        state = gr.State(None)
        event = ctx.demo.load(bound(count), [ctx.lang], [*outputs, state], api_name="moe_parameters")
        ctx.view("moe.params", [], event=event, state=state)
        ctx.redraw_on_language(state, outputs, draw_count)

    with ctx.section("moe.cost.section"):
        gr.Markdown(t("moe.cost.intro"), latex_delimiters=LATEX)
        run = gr.Button(t("moe.cost.run"), variant="primary", elem_id="moe-cost-run")
        outputs = [gr.Plot(elem_id="moe-cost-plot", show_label=False), gr.Markdown(elem_id="moe-cost-summary")]
        state = gr.State(None)
        event = run.click(bound(time_k), [model, user_text, ctx.lang], [*outputs, state],
                          api_name="moe_time_k", **ctx.model_event)
        ctx.view("moe.cost", shared[:2], run=run, event=event, state=state)
        ctx.redraw_on_language(state, outputs, draw_time)

    with ctx.section("moe.whatif.section"):
        gr.Markdown(t("moe.whatif.intro"), latex_delimiters=LATEX)
        with gr.Row():
            k = gr.Slider(1, 8, value=1, step=1, label=t("moe.k"), elem_id="moe-whatif-k")
            use_bias = gr.Checkbox(True, label=t("moe.whatif.use_bias"), elem_id="moe-whatif-bias")
            run = gr.Button(t("moe.whatif.run"), variant="primary", elem_id="moe-whatif-run")
        outputs = [gr.Plot(elem_id="moe-whatif-plot", show_label=False), gr.Markdown(elem_id="moe-whatif-summary")]
        state = gr.State(None)
        event = run.click(bound(what_if), [model, user_text, k, use_bias, ctx.lang], [*outputs, state],
                          api_name="moe_what_if", **ctx.model_event)
        ctx.view("moe.whatif", [*shared[:2], views.control("k", k), views.control("bias", use_bias)],
                 run=run, event=event, state=state)
        ctx.redraw_on_language(state, outputs, draw_whatif)
