"""The Next token tab: the model's next-token distribution with the sampler's controls applied
live, seeded continuations, and the logit lens through depth (claims C21, C22). Layout and
wiring over explorer/nexttoken/ (runs -> typed results -> figures)."""
from __future__ import annotations

import functools
from typing import Any, Callable, NamedTuple

import gradio as gr

from explorer.locales import normalize_language, text
from explorer.nexttoken import distribution as dist
from explorer.nexttoken import figures, runs
from explorer.ui import LATEX, TabContext, load_or_error, takes, visitor_errors
from explorer.ui.page import views

TITLE = "next.tab"
DEFAULT_PROMPT = "The capital of France is"
SKIP = gr.skip


class DistInputs(NamedTuple):
    """The distribution's inputs, in the order its event sends them (the API's parameter names)."""
    model_name: Any      # the header's model picker
    lang: Any            # the header's language switch
    prompt: Any
    temperature: Any
    top_k: Any
    top_p: Any


class DistOutputs(NamedTuple):
    plot: Any            # the bars: the model's and the sampler's probability per token
    summary: Any
    table: Any           # the same numbers as a table
    samples: Any         # the continuations drawn (empty after a new run)
    result: Any          # runs.Distribution (gr.State)


@visitor_errors
@takes(DistInputs)
def distribution(runtime, *values: DistInputs, progress=gr.Progress()):
    """One forward of the prompt: its next-token distribution and what the sampler keeps of it."""
    form = DistInputs(*values)
    lang = normalize_language(form.lang)
    runs.check_sampling(form.temperature, form.top_k, form.top_p)   # refused before any load
    loaded = load_or_error(runtime, form.model_name, progress)
    result = runs.distribution(loaded, form.prompt, form.temperature, form.top_k, form.top_p)
    return DistOutputs(*figures.draw_distribution(result, lang), result=result)


@visitor_errors
def resample(lang, result, temperature, top_k, top_p):
    """The controls moved: the same logits under the new sampler (no forward). Nothing to redraw
    before a run (a link or a lesson setting the controls)."""
    if not isinstance(result, runs.Distribution):
        runs.check_sampling(temperature, top_k, top_p)
        return SKIP(), SKIP(), SKIP(), SKIP()
    changed = runs.resample(result, temperature, top_k, top_p)
    plot, summary, table, _ = figures.draw_distribution(changed, normalize_language(lang))
    return plot, summary, table, changed


class SampleInputs(NamedTuple):
    lang: Any
    result: Any          # the distribution's stored run (gr.State): its prompt, model and sampler
    n: Any
    seed: Any
    n_new: Any


@visitor_errors
@takes(SampleInputs)
def sample(runtime, *values: SampleInputs):
    """n continuations of the last run's prompt, on its model, with its sampler's settings."""
    form = SampleInputs(*values)
    lang = normalize_language(form.lang)
    n, seed, n_new = runs.check_samples(form.n, form.seed, form.n_new)
    if not isinstance(form.result, runs.Distribution):
        raise gr.Error(text("next.dist.no_run", lang), print_exception=False)
    loaded = load_or_error(runtime, form.result.name)
    result = runs.with_samples(loaded, form.result, n, seed, n_new)
    return figures.samples_text(result, lang), result


class LensInputs(NamedTuple):
    model_name: Any
    lang: Any
    prompt: Any


class LensOutputs(NamedTuple):
    heatmap: Any
    ranks: Any
    summary: Any
    token: Any           # the dropdown of the model's top tokens (choices of this run)
    result: Any          # runs.Lens (gr.State)


@visitor_errors
@takes(LensInputs)
def lens(runtime, *values: LensInputs, progress=gr.Progress()):
    """One forward with every block's residual recorded, read through the logit lens."""
    form = LensInputs(*values)
    lang = normalize_language(form.lang)
    loaded = load_or_error(runtime, form.model_name, progress)
    result = runs.lens(loaded, form.prompt)
    heatmap, ranks, summary = figures.draw_lens(result, lang)
    token = gr.update(choices=[(label, i) for i, label in enumerate(result.choices)], value=0)
    return LensOutputs(heatmap, ranks, summary, token, result)


@visitor_errors
def choose(lang, result, index):
    """Another of the model's top tokens followed through depth (no forward)."""
    if not isinstance(result, runs.Lens):
        return SKIP(), SKIP(), SKIP()
    chosen = runs.choose(result, index)
    _, ranks, summary = figures.draw_lens(chosen, normalize_language(lang))
    return ranks, summary, chosen


def _bind(ctx: TabContext, handler: Callable) -> Callable:
    """A handler whose first argument is the app's Runtime, bound to it (its name and docstring kept)."""
    bound = functools.partial(handler, ctx.runtime)
    bound.__name__, bound.__doc__ = handler.__name__, handler.__doc__
    return bound


def build_distribution(ctx: TabContext, prompt: gr.Textbox) -> None:
    t = ctx.t
    gr.Markdown(t("next.dist.intro"), latex_delimiters=LATEX)
    with gr.Row():
        temperature = gr.Slider(0.0, runs.MAX_TEMPERATURE, value=1.0, step=0.05, label=t("next.dist.temperature"),
                                elem_id="next-temperature")
        top_k = gr.Slider(0, runs.MAX_TOP_K, value=0, step=1, label=t("next.dist.top_k"), elem_id="next-top-k")
        top_p = gr.Slider(runs.MIN_TOP_P, 1.0, value=1.0, step=0.05, label=t("next.dist.top_p"),
                          elem_id="next-top-p")
    run = gr.Button(t("next.dist.run"), variant="primary", elem_id="next-dist-run")
    summary = gr.Markdown(elem_id="next-dist-summary")
    plot = gr.Plot(elem_id="next-dist-plot", show_label=False)
    table = gr.Markdown(elem_id="next-dist-table")
    with gr.Row():
        n = gr.Slider(1, dist.MAX_SAMPLES, value=3, step=1, label=t("next.dist.n"), elem_id="next-samples-n")
        seed = gr.Number(0, precision=0, minimum=0, maximum=runs.MAX_SEED, label=t("next.dist.seed"),
                         elem_id="next-seed")
        n_new = gr.Slider(1, dist.MAX_SAMPLE_TOKENS, value=8, step=1, label=t("next.dist.tokens"),
                          elem_id="next-sample-tokens")
    sample_run = gr.Button(t("next.dist.sample"), elem_id="next-sample-run")
    gr.Markdown(t("next.dist.sample_note"), elem_id="next-sample-note")
    samples = gr.Markdown(elem_id="next-samples")
    state = gr.State(None)
    event = run.click(
        _bind(ctx, distribution),
        list(DistInputs(model_name=ctx.model, lang=ctx.lang, prompt=prompt, temperature=temperature,
                        top_k=top_k, top_p=top_p)),
        list(DistOutputs(plot=plot, summary=summary, table=table, samples=samples, result=state)),
        api_name="next_distribution", **ctx.model_event)
    for control in (temperature, top_k, top_p):
        control.change(resample, [ctx.lang, state, temperature, top_k, top_p], [plot, summary, table, state],
                       api_name=f"next_resample_{control.elem_id.rsplit('-', 1)[-1]}", trigger_mode="always_last")
    sample_run.click(_bind(ctx, sample), list(SampleInputs(lang=ctx.lang, result=state, n=n, seed=seed, n_new=n_new)),
                     [samples, state], api_name="next_sample", **ctx.model_event)
    ctx.redraw_on_language(state, [plot, summary, table, samples], figures.draw_distribution)
    ctx.view("next.dist", [views.control("prompt", prompt, max_chars=runs.MAX_PROMPT_CHARS),
                           views.control("temperature", temperature), views.control("top_k", top_k),
                           views.control("top_p", top_p)],
             run=run, event=event, state=state)


def build_lens(ctx: TabContext, prompt: gr.Textbox) -> None:
    t = ctx.t
    gr.Markdown(t("next.lens.intro"), latex_delimiters=LATEX)
    run = gr.Button(t("next.lens.run"), variant="primary", elem_id="next-lens-run")
    summary = gr.Markdown(elem_id="next-lens-summary")
    heatmap = gr.Plot(elem_id="next-lens-heatmap", show_label=False)
    token = gr.Dropdown(choices=[], value=None, label=t("next.lens.token"), elem_id="next-lens-token")
    ranks = gr.Plot(elem_id="next-lens-ranks", show_label=False)
    state = gr.State(None)
    event = run.click(
        _bind(ctx, lens), list(LensInputs(model_name=ctx.model, lang=ctx.lang, prompt=prompt)),
        list(LensOutputs(heatmap=heatmap, ranks=ranks, summary=summary, token=token, result=state)),
        api_name="next_lens", **ctx.model_event)
    token.change(choose, [ctx.lang, state, token], [ranks, summary, state], api_name="next_lens_token")
    ctx.redraw_on_language(state, [heatmap, ranks, summary], figures.draw_lens)
    ctx.view("next.lens", [views.control("prompt", prompt, max_chars=runs.MAX_PROMPT_CHARS)],
             run=run, event=event, state=state)


def build(ctx: TabContext) -> None:
    gr.Markdown(ctx.t("next.intro"))
    prompt = gr.Textbox(DEFAULT_PROMPT, label=ctx.t("next.prompt"), lines=2, max_lines=6,
                        max_length=runs.MAX_PROMPT_CHARS, elem_id="next-prompt")
    with ctx.section("next.dist.section"):
        build_distribution(ctx, prompt)
    with ctx.section("next.lens.section"):
        build_lens(ctx, prompt)
