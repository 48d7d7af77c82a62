"""The Architecture tab: four blocks side by side read from tensors (C18), pre-norm vs post-norm
gradients and training (C19), and multi-head latent attention's cache and decoupled RoPE key (C6,
C7). Thin wiring over explorer/architecture (run -> typed result -> figures)."""
from __future__ import annotations


import gradio as gr

from explorer.architecture import blocks, inventory, mla, norm_placement
from explorer.inputs import InputError
from explorer.locales import normalize_language
from explorer.runtime import UnknownModelError
from explorer.ui import LATEX, TabContext, bind, load_or_error, visitor_errors
from explorer.ui.page import views

TITLE = "arch.tab"
# the checkpoints the app ships, read every time; the picked model joins them when it is another
# Llama or Gemma 3 checkpoint
SHIPPED = ("smollm2-135m-instruct", "gemma-3-270m")
DEFAULT_DEPTHS = "6, 24, 48"


# ----------------------------------------------------------------------------- 1. blocks (C18)
def read_blocks(runtime, lang, model_name, progress=gr.Progress()):
    """The two references, the shipped checkpoints and (if it is another dense Llama/Gemma 3
    checkpoint) the picked model, each read from its tensors."""
    lang = normalize_language(lang)
    try:
        picked = runtime.check_name(model_name)
    except UnknownModelError as error:   # as load_or_error answers it, before any work
        raise gr.Error(str(error), print_exception=False) from None
    names = [name for name in SHIPPED if name in runtime.names()]
    if picked not in names:
        names.append(picked)
    entries = []
    for name in names:
        loaded = load_or_error(runtime, name, progress)
        try:
            entries.append(inventory.checkpoint_entry(name, getattr(loaded.spec, "title", name), loaded.folder,
                                                      loaded.model))
        except inventory.InventoryError:
            if name != picked:
                raise
            # the picked model has a block of another kind (an MoE): the shipped ones still show
    if not entries:
        raise InputError("arch.err.no_models")
    result = blocks.run(entries)
    return (*draw_blocks(result, lang), result)


def draw_blocks(result, lang):
    diagram, params = blocks.figures(result, lang)
    return diagram, params, blocks.table(result, lang), blocks.summary(result, lang)


# ----------------------------------------------------------------------------- 2. norms (C19)
def init_gradients(lang, depths_text):
    result = norm_placement.run_init(norm_placement.parse_depths(depths_text))
    return (*draw_init(result, normalize_language(lang)), result)


def draw_init(result, lang):
    return norm_placement.init_figure(result, lang), norm_placement.init_summary(result, lang)


def show_training(lang):
    """The curves the training command wrote (norm_training.json), drawn."""
    result = norm_placement.load_training()
    return (*draw_training(result, normalize_language(lang)), result)


def draw_training(result, lang):
    return norm_placement.training_figure(result, lang), norm_placement.training_summary(result, lang)


# ----------------------------------------------------------------------------- 3. MLA (C6, C7)
def cache_sizes(lang):
    result = mla.run_cache()
    return (*draw_cache(result, normalize_language(lang)), result)


def draw_cache(result, lang):
    return (*mla.cache_figures(result, lang), mla.cache_summary(result, lang))


def fold(lang, d_in, d_k, positions, base):
    result = mla.run_fold(d_in, d_k, positions, base)
    return (*draw_fold(result, normalize_language(lang)), result)


def draw_fold(result, lang):
    return (*mla.fold_figures(result, lang), mla.fold_summary(result, lang))


def build(ctx: TabContext) -> None:
    t, runtime = ctx.t, ctx.runtime
    gr.Markdown(t("arch.intro"))

    with ctx.section("arch.blocks.heading"):
        gr.Markdown(t("arch.blocks.explain"))
        blocks_run = gr.Button(t("arch.blocks.run"), variant="primary", elem_id="arch-blocks-run")
        blocks_text = gr.Markdown(elem_id="arch-blocks-text")
        diagram = gr.Plot(elem_id="arch-blocks-diagram", show_label=False)
        table = gr.Dataframe(elem_id="arch-blocks-table", interactive=False, wrap=True,
                             column_widths=["16%", "21%", "21%", "21%", "21%"])
        params = gr.Plot(elem_id="arch-blocks-params", show_label=False)
        blocks_state = gr.State(None)
        outputs = [diagram, params, table, blocks_text]
        event = blocks_run.click(visitor_errors(bind(read_blocks, runtime)),
                                 [ctx.lang, ctx.model], [*outputs, blocks_state],
                                 api_name="architecture_blocks")
        ctx.view("arch.blocks", [], run=blocks_run, event=event, state=blocks_state)
        ctx.redraw_on_language(blocks_state, outputs, draw_blocks)

    with ctx.section("arch.norm.heading"):
        gr.Markdown(t("arch.norm.explain"), latex_delimiters=LATEX)
        with gr.Row():
            depths = gr.Textbox(DEFAULT_DEPTHS, label=t("arch.norm.depths"), scale=3,
                                max_length=norm_placement.MAX_DEPTHS_CHARS, elem_id="arch-norm-depths")
            init_run = gr.Button(t("arch.norm.run"), variant="primary", scale=1, elem_id="arch-norm-run")
        init_text = gr.Markdown(elem_id="arch-norm-text")
        init_plot = gr.Plot(elem_id="arch-norm-plot", show_label=False)
        init_state = gr.State(None)
        event = init_run.click(visitor_errors(init_gradients), [ctx.lang, depths],
                               [init_plot, init_text, init_state],
                               api_name="architecture_norm_init", **ctx.model_event)
        ctx.view("arch.norm", [views.control("depths", depths)], run=init_run,
                 event=event, state=init_state)
        ctx.redraw_on_language(init_state, [init_plot, init_text], draw_init)

        gr.Markdown(t("arch.norm.train.heading"))
        train_text = gr.Markdown(elem_id="arch-train-text")
        train_plot = gr.Plot(elem_id="arch-train-plot", show_label=False)
        train_state = gr.State(None)
        ctx.demo.load(visitor_errors(show_training), [ctx.lang], [train_plot, train_text, train_state],
                      api_name="architecture_norm_training")
        ctx.redraw_on_language(train_state, [train_plot, train_text], draw_training)

    with ctx.section("arch.mla.heading"):
        gr.Markdown(t("arch.mla.explain"), latex_delimiters=LATEX)
        cache_run = gr.Button(t("arch.mla.run"), variant="primary", elem_id="arch-mla-run")
        cache_text = gr.Markdown(elem_id="arch-mla-text", latex_delimiters=LATEX)
        cache_plot = gr.Plot(elem_id="arch-mla-plot", show_label=False)
        cache_state = gr.State(None)
        event = cache_run.click(visitor_errors(cache_sizes), [ctx.lang], [cache_plot, cache_text, cache_state],
                                api_name="architecture_mla_cache", **ctx.model_event)
        ctx.view("arch.mla", [], run=cache_run, event=event, state=cache_state)
        ctx.redraw_on_language(cache_state, [cache_plot, cache_text], draw_cache)

        gr.Markdown(t("arch.fold.heading"), latex_delimiters=LATEX)
        with gr.Row():
            d_in = gr.Number(64, precision=0, minimum=1, maximum=mla.MAX_D, label=t("arch.fold.d_in"),
                             elem_id="arch-fold-d-in")
            d_k = gr.Number(64, precision=0, minimum=2, maximum=mla.MAX_D, label=t("arch.fold.d_k"),
                            elem_id="arch-fold-d-k")
            positions = gr.Number(512, precision=0, minimum=1, maximum=mla.MAX_POSITIONS,
                                  label=t("arch.fold.positions"), elem_id="arch-fold-positions")
            base = gr.Number(10000, label=t("arch.fold.base"), elem_id="arch-fold-base")
            fold_run = gr.Button(t("arch.fold.run"), variant="primary", elem_id="arch-fold-run")
        fold_text = gr.Markdown(elem_id="arch-fold-text", latex_delimiters=LATEX)
        fold_plot = gr.Plot(elem_id="arch-fold-plot", show_label=False)
        fold_state = gr.State(None)
        event = fold_run.click(visitor_errors(fold), [ctx.lang, d_in, d_k, positions, base],
                               [fold_plot, fold_text, fold_state], api_name="architecture_mla_fold",
                               **ctx.model_event)
        ctx.view("arch.fold", [views.control("d_in", d_in), views.control("d_k", d_k),
                               views.control("positions", positions),
                               views.control("base", base, low=1, high=1e12)],
                 run=fold_run, event=event, state=fold_state)
        ctx.redraw_on_language(fold_state, [fold_plot, fold_text], draw_fold)
