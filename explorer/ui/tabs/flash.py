"""The FlashAttention tab (C16, C17): one real head by the naive path and by the engine's tiled
online-softmax path, its tile schedule played in the browser, one row's running max and
normalizer, exactness on random inputs, bytes moved and measured memory against n, timing.
Thin wiring over explorer/flash (run -> typed result -> figures)."""
from __future__ import annotations

from typing import Any, NamedTuple

import gradio as gr

from explorer import masks
from explorer.flash import capture as flash_capture
from explorer.flash import exactness, figures, io, schedule, timing
from explorer.inputs import check_text, finite_number, whole_number
from explorer.locales import Term, normalize_language
from explorer.prompts import CHARS_PER_TOKEN_BOUND
from explorer.ui import TabContext, bind, load_or_error, takes, visitor_errors
from explorer.ui.page import views
from explorer.ui.tabs.attention_map import layer_of_model
from models.attention import MaskSpec

TITLE = "flash.tab"
MEMORY_MAX_N = {"cpu": 1024, "cuda": 16384}   # the profiler's events grow with the tiles

# Gradio's plot component hands Plotly.react data and layout but not frames; the tiled figure
# carries its frames in layout.meta, and this script (run once when the page loads) gives them
# to plotly.js whenever such a figure appears or changes, so its slider and play button work.
FRAMES_JS = """
() => {
  if (window.__flashFrames) return;
  window.__flashFrames = true;
  setInterval(() => {
    document.querySelectorAll('.js-plotly-plot').forEach((gd) => {
      const meta = gd.layout && gd.layout.meta;
      if (!meta || !meta.flash_frames || gd.__flashToken === meta.flash_token || !window.Plotly) return;
      gd.__flashToken = meta.flash_token;
      window.Plotly.deleteFrames(gd).then(() => window.Plotly.addFrames(gd, meta.flash_frames));
    });
  }, 200);
}
"""


# ----------------------------------------------------------------------------- 1. naive vs tiled
class HeadInputs(NamedTuple):
    """The schedule section's inputs by name, in the order its event sends them; the names are
    the "flash_run" API's parameter names (run_head's signature is made from them)."""
    model_name: Any      # the header's model picker
    lang: Any            # the header's language switch
    prompt: Any
    n: Any               # tokens of the prompt
    layer: Any
    head: Any
    mask_kind: Any       # "causal" | "window" | "sinks" (shared by the tab's sections)
    window: Any
    sinks: Any
    block_q: Any
    block_k: Any
    row: Any             # the row whose running max is drawn (-1: the run picks)


class HeadOutputs(NamedTuple):
    """The schedule section's outputs by name, in the order its event lists them (the first
    four are drawn again from `result` on a language switch, by draw_head)."""
    naive: Any           # the naive path's scores and weights
    tiles: Any           # the tile schedule, played in the browser
    row: Any             # one row's running max and normalizer
    summary: Any
    result: Any          # the run (gr.State)


@takes(HeadInputs)
def run_head(runtime, *values: HeadInputs, progress=gr.Progress()):
    """Capture one head's q, k, v on the visitor's prompt; naive, tiled and SDPA on it."""
    form = HeadInputs(*values)
    lang = normalize_language(form.lang)
    check_text(form.prompt, Term("inputs.name.prompt"))
    n = whole_number(form.n, Term("flash.name.n"), flash_capture.MIN_N, flash_capture.max_n(runtime.device))
    override = masks.choose(form.mask_kind, form.window, form.sinks)
    block_q, block_k = schedule.check_blocks(n, form.block_q, form.block_k)
    row = whole_number(form.row, Term("flash.name.row"), -1, n - 1)   # -1: the run picks the row
    loaded = load_or_error(runtime, form.model_name, progress)
    layer, head = flash_capture.check_layer_head(loaded.config, form.layer, form.head)
    ids = flash_capture.prompt_ids(loaded.tokenizer, form.prompt, n)
    captured = flash_capture.capture(loaded.model, ids, layer, head, override)
    result = schedule.run(captured, block_q, block_k, None if row == -1 else row)
    return HeadOutputs(*draw_head(result, lang), result=result)


def draw_head(result, lang):
    if result is None:
        return gr.update(), gr.update(), gr.update(), gr.update()
    return (*figures.figures(result, lang), figures.summary(result, lang))


# ----------------------------------------------------------------------------- 2. exactness
def run_exact(lang):
    """Tiled vs naive vs SDPA on random inputs across n, block sizes and masks."""
    cases = exactness.random_cases()
    return (*draw_exact(cases, normalize_language(lang)), cases)


def draw_exact(cases, lang):
    if not cases:
        return gr.update(), gr.update()
    return figures.exact_summary(cases, lang), figures.exact_table(cases, lang)


# ----------------------------------------------------------------------------- 3. traffic and memory
def _mask_and_blocks(mask_kind, window, sinks, block_q, block_k) -> tuple[MaskSpec, int, int]:
    # a causal mask reads neither window nor sinks; a value no mask could use (NaN, 10**400,
    # text) is refused all the same, before a sweep of seconds that would ignore it
    for value, name in ((window, masks.WINDOW_NAME), (sinks, masks.SINKS_NAME)):
        if value is not None:
            finite_number(value, name)
    override = masks.choose(mask_kind, window, sinks)
    block_q = whole_number(block_q, Term("flash.name.block_q"), 1, io.MAX_SWEEP_N["cuda"])
    block_k = whole_number(block_k, Term("flash.name.block_k"), 1, io.MAX_SWEEP_N["cuda"])
    return override or MaskSpec(), block_q, block_k


class IOInputs(NamedTuple):
    """The bytes section's inputs by name, in the order its event sends them; the names are the
    "flash_io" API's parameter names (run_io's signature is made from them)."""
    lang: Any            # the header's language switch
    mask_kind: Any       # the tab's shared mask and blocks
    window: Any
    sinks: Any
    block_q: Any
    block_k: Any
    head_dim: Any
    sram_kib: Any        # on-chip memory the schedule assumes
    max_n: Any           # the longest n of the sweep


class IOOutputs(NamedTuple):
    """The bytes section's outputs by name, in the order its event lists them (the first three
    are drawn again from `result` on a language switch, by draw_io)."""
    io: Any              # bytes moved against n
    memory: Any          # measured peak extra memory against n
    summary: Any
    result: Any          # the sweep (gr.State)


@takes(IOInputs)
def run_io(runtime, *values: IOInputs):
    """Bytes moved (counted from the engine's schedule and by formula) and measured peak extra
    memory of naive, tiled and SDPA, against n."""
    form = IOInputs(*values)
    lang = normalize_language(form.lang)
    mask, block_q, block_k = _mask_and_blocks(form.mask_kind, form.window, form.sinks, form.block_q,
                                              form.block_k)
    d = whole_number(form.head_dim, Term("flash.name.head_dim"), 8, 512)
    kib = whole_number(form.sram_kib, Term("flash.name.sram"), 1, 1024)
    ns = io.sweep_lengths(form.max_n, block_q, block_k, runtime.device)
    kind = "cuda" if runtime.device.type == "cuda" else "cpu"
    result = io.run_traffic(ns, d, block_q, block_k, mask, kib, runtime.device, MEMORY_MAX_N[kind])
    return IOOutputs(*draw_io(result, lang), result=result)


def draw_io(result, lang):
    if result is None:
        return gr.update(), gr.update(), gr.update()
    return (*figures.traffic_figures(result, lang), figures.traffic_summary(result, lang))


# ----------------------------------------------------------------------------- 4. timing
class TimingInputs(NamedTuple):
    """The timing section's inputs by name, in the order its event sends them; the names are
    the "flash_timing" API's parameter names (run_timing's signature is made from them)."""
    lang: Any            # the header's language switch
    mask_kind: Any       # the tab's shared mask and blocks
    window: Any
    sinks: Any
    block_q: Any
    block_k: Any
    head_dim: Any
    max_n: Any           # the longest n of the sweep


class TimingOutputs(NamedTuple):
    """The timing section's outputs by name, in the order its event lists them (the first two
    are drawn again from `result` on a language switch, by draw_timing)."""
    timing: Any          # time against n
    summary: Any
    result: Any          # the sweep (gr.State)


@takes(TimingInputs)
def run_timing(runtime, *values: TimingInputs):
    form = TimingInputs(*values)
    lang = normalize_language(form.lang)
    mask, block_q, block_k = _mask_and_blocks(form.mask_kind, form.window, form.sinks, form.block_q,
                                              form.block_k)
    d = whole_number(form.head_dim, Term("flash.name.head_dim"), 8, 512)
    ns = io.sweep_lengths(form.max_n, block_q, block_k, runtime.device)
    sweep = timing.sweep(ns, d, block_q, block_k, mask, runtime.device)
    return TimingOutputs(*draw_timing(sweep, lang), result=sweep)


def draw_timing(sweep, lang):
    if sweep is None:
        return gr.update(), gr.update()
    return figures.timing_figure(sweep, lang), figures.timing_summary(sweep, lang)


def build(ctx: TabContext) -> None:
    t, runtime = ctx.t, ctx.runtime
    handled = lambda handler: visitor_errors(bind(handler, runtime))  # noqa: E731
    gr.Markdown(t("flash.intro"))
    gr.Markdown(t("flash.shared"))
    with gr.Row():
        mask_kind = gr.Radio([(t("flash.mask.choice.causal"), "causal"), (t("flash.mask.choice.window"), "window"),
                              (t("flash.mask.choice.sinks"), "sinks")], value="causal",
                             label=t("flash.mask"), elem_id="flash-mask", scale=3)
        window = gr.Number(64, precision=0, label=t("flash.window"), elem_id="flash-window", scale=1)
        sinks = gr.Number(4, precision=0, label=t("flash.sinks"), elem_id="flash-sinks", scale=1)
        block_q = gr.Number(32, precision=0, label=t("flash.block_q"), elem_id="flash-block-q", scale=1)
        block_k = gr.Number(32, precision=0, label=t("flash.block_k"), elem_id="flash-block-k", scale=1)
    linked = [views.control("mask", mask_kind), views.control("window", window, low=1, high=4096),
              views.control("sinks", sinks, low=0, high=64),
              views.control("block_q", block_q, low=1, high=1024),
              views.control("block_k", block_k, low=1, high=1024)]

    with ctx.section("flash.sec.schedule"):
        with gr.Row():
            prompt = gr.Textbox(flash_capture.DEFAULT_PROMPT, label=t("flash.prompt"), lines=2, scale=4,
                                max_length=flash_capture.max_n(ctx.runtime.device) * CHARS_PER_TOKEN_BOUND,
                                elem_id="flash-prompt")
            n = gr.Number(256, precision=0, label=t("flash.n"), elem_id="flash-n", scale=1)
            layer = gr.Number(2, precision=0, label=t("flash.layer"), elem_id="flash-layer", scale=1)
            head = gr.Number(0, precision=0, label=t("flash.head"), elem_id="flash-head", scale=1)
            row = gr.Number(-1, precision=0, label=t("flash.row"), elem_id="flash-row", scale=1)
        run = gr.Button(t("flash.run"), variant="primary", elem_id="flash-run")
        summary = gr.Markdown(elem_id="flash-summary")
        naive_plot = gr.Plot(elem_id="flash-naive", show_label=False)
        gr.Markdown(t("flash.play_note"))
        tiles_plot = gr.Plot(elem_id="flash-tiles", show_label=False)
        row_plot = gr.Plot(elem_id="flash-row-plot", show_label=False)
        head_state = gr.State(None)
        inputs = list(HeadInputs(model_name=ctx.model, lang=ctx.lang, prompt=prompt, n=n, layer=layer,
                                 head=head, mask_kind=mask_kind, window=window, sinks=sinks,
                                 block_q=block_q, block_k=block_k, row=row))
        outputs = list(HeadOutputs(naive=naive_plot, tiles=tiles_plot, row=row_plot, summary=summary,
                                   result=head_state))
        event = run.click(visitor_errors(bind(run_head, runtime)), inputs, outputs,
                          api_name="flash_run", **ctx.model_event)
        ctx.redraw_on_language(head_state, [naive_plot, tiles_plot, row_plot, summary], draw_head)
        ctx.view("flash.schedule", [
            views.control("prompt", prompt), views.control("n", n, low=1, high=flash_capture.MAX_N_GPU),
            views.control("layer", layer, low=0, high=255, check=layer_of_model),
            views.control("head", head, low=0, high=255,
                          check=lambda v, config: int(v) < config.n_heads),
            views.control("row", row, low=-1, high=flash_capture.MAX_N_GPU - 1), *linked],
            run=run, event=event, state=head_state)

    with ctx.section("flash.sec.exact"):
        gr.Markdown(t("flash.exact.intro"))
        exact_run = gr.Button(t("flash.exact.run"), variant="primary", elem_id="flash-exact-run")
        exact_summary = gr.Markdown(elem_id="flash-exact-summary")
        exact_table = gr.Dataframe(elem_id="flash-exact-table", interactive=False, wrap=True)
        exact_state = gr.State(None)
        exact_event = exact_run.click(visitor_errors(run_exact), [ctx.lang], [exact_summary, exact_table, exact_state],
                        api_name="flash_exact", **ctx.model_event)
        ctx.redraw_on_language(exact_state, [exact_summary, exact_table], draw_exact)
        ctx.view("flash.exact", [], run=exact_run, event=exact_event, state=exact_state)

    with ctx.section("flash.sec.io"):
        gr.Markdown(t("flash.io.intro"))
        with gr.Row():
            io_d = gr.Number(64, precision=0, label=t("flash.io.head_dim"), elem_id="flash-io-d")
            io_sram = gr.Number(64, precision=0, label=t("flash.io.sram"), elem_id="flash-io-sram")
            io_max = gr.Number(2048, precision=0, label=t("flash.io.max_n"), elem_id="flash-io-max-n")
            io_run = gr.Button(t("flash.io.run"), variant="primary", elem_id="flash-io-run")
        io_summary = gr.Markdown(elem_id="flash-io-summary")
        io_plot = gr.Plot(elem_id="flash-io-plot", show_label=False)
        mem_plot = gr.Plot(elem_id="flash-mem-plot", show_label=False)
        io_state = gr.State(None)
        io_inputs = list(IOInputs(lang=ctx.lang, mask_kind=mask_kind, window=window, sinks=sinks,
                                  block_q=block_q, block_k=block_k, head_dim=io_d, sram_kib=io_sram,
                                  max_n=io_max))
        io_outputs = list(IOOutputs(io=io_plot, memory=mem_plot, summary=io_summary, result=io_state))
        io_event = io_run.click(handled(run_io), io_inputs, io_outputs, api_name="flash_io", **ctx.model_event)
        ctx.redraw_on_language(io_state, [io_plot, mem_plot, io_summary], draw_io)
        ctx.view("flash.io", [*linked, views.control("d", io_d, low=1, high=1024),
                              views.control("sram", io_sram, low=1, high=1 << 20),
                              views.control("max_n", io_max, low=1, high=1 << 16)],
                 run=io_run, event=io_event, state=io_state)

    with ctx.section("flash.sec.timing"):
        gr.Markdown(t("flash.time.intro"))
        with gr.Row():
            time_d = gr.Number(64, precision=0, label=t("flash.io.head_dim"), elem_id="flash-time-d")
            time_max = gr.Number(2048, precision=0, label=t("flash.time.max_n"), elem_id="flash-time-max-n")
            time_run = gr.Button(t("flash.time.run"), variant="primary", elem_id="flash-time-run")
        time_summary = gr.Markdown(elem_id="flash-time-summary")
        time_plot = gr.Plot(elem_id="flash-time-plot", show_label=False)
        time_state = gr.State(None)
        time_inputs = list(TimingInputs(lang=ctx.lang, mask_kind=mask_kind, window=window, sinks=sinks,
                                        block_q=block_q, block_k=block_k, head_dim=time_d, max_n=time_max))
        time_outputs = list(TimingOutputs(timing=time_plot, summary=time_summary, result=time_state))
        time_event = time_run.click(handled(run_timing), time_inputs, time_outputs, api_name="flash_timing",
                                    **ctx.model_event)
        ctx.redraw_on_language(time_state, [time_plot, time_summary], draw_timing)
        ctx.view("flash.timing", [*linked, views.control("d", time_d, low=1, high=1024),
                                  views.control("max_n", time_max, low=1, high=1 << 16)],
                 run=time_run, event=time_event, state=time_state)

    ctx.demo.load(None, None, None, js=FRAMES_JS)
