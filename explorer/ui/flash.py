"""The FlashAttention tab (C16, C17): one real head by the naive path and by the engine's tiled
online-softmax path, its tile schedule played in the browser, one row's running max and
normalizer, exactness on random inputs, bytes moved and measured memory against n, timing.
Thin wiring over explorer/flash (run -> typed result -> figures)."""
from __future__ import annotations

import functools
import time
from typing import Any

import gradio as gr
import numpy as np
import pandas as pd

from explorer import prompts
from explorer.flash import capture as flash_capture
from explorer.flash import exactness, figures, io, memory, schedule, timing
from explorer.inputs import check_text, whole_number
from explorer.locales import Term, normalize_language, text
from explorer.ui import TabContext, load_or_error, visitor_errors
from models.attention import MaskSpec

TITLE = "flash.tab"
DEFAULT_PROMPT = ("FlashAttention computes exact attention in tiles: the score matrix never leaves "
                  "the chip, only the output is written back to memory.")
MEMORY_MAX_N = {"cpu": 1024, "cuda": 16384}   # the profiler's events grow with the tiles
TOLERANCE = 1e-5

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


def _bytes(count: float) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if count >= size:
            return f"{count / size:.2f} {unit}"
    return f"{int(count)} B"


def _diff(value) -> str:
    return f"{value:.1e}"


# ----------------------------------------------------------------------------- 1. naive vs tiled
def run_head(runtime, model_name, lang, prompt, n, layer, head, mask_kind, window, sinks,
             block_q, block_k, row, progress=gr.Progress()):
    """Capture one head's q, k, v on the visitor's prompt; naive, tiled and SDPA on it."""
    lang = normalize_language(lang)
    check_text(prompt, Term("inputs.name.prompt"))
    n = whole_number(n, Term("flash.name.n"), flash_capture.MIN_N, flash_capture.max_n(runtime.device))
    override = flash_capture.mask_override(mask_kind, window, sinks)
    block_q, block_k = schedule.check_blocks(n, block_q, block_k)
    row = whole_number(row, Term("flash.name.row"), -1, n - 1)   # -1: the run picks the row
    loaded = load_or_error(runtime, model_name, progress)
    layer, head = flash_capture.check_layer_head(loaded.config, layer, head)
    ids = prompts.encode(loaded.tokenizer, prompt, n, truncate=True, name=Term("inputs.name.prompt"))
    ids = flash_capture.fill_to(ids, n, bos_id=loaded.tokenizer.bos_token_id)
    start = time.perf_counter()
    captured = flash_capture.capture(loaded.model, ids, layer, head, override)
    captured_at = time.perf_counter()
    result = schedule.run(captured, block_q, block_k, None if row == -1 else row)
    drawn = figures.figures(result, lang)
    state = {"result": result, "capture_s": captured_at - start,
             "compute_s": time.perf_counter() - captured_at}
    return (*drawn, head_summary(state, lang), state)


def head_summary(state, lang: str) -> str:
    result, cap, row = state["result"], state["result"].capture, state["result"].row
    na = text("flash.na", lang)
    status = result.status
    n, d = cap.n, cap.head_dim
    return text(
        "flash.summary", lang, layer=cap.layer, head=cap.head, kv_head=cap.kv_head, n=n, d=d,
        mask=figures.mask_text(cap.mask, lang), bq=result.block_q, bk=result.block_k,
        tiles=len(status), computed=int((status != schedule.SKIPPED).sum()),
        partial=int((status == schedule.PARTIAL).sum()), skipped=int((status == schedule.SKIPPED).sum()),
        match=text("flash.yes" if result.skips_match_mask else "flash.no", lang),
        tn=_diff(result.diff_tiled_naive),
        ts=na if result.diff_tiled_sdpa is None else _diff(result.diff_tiled_sdpa),
        ns=na if result.diff_naive_sdpa is None else _diff(result.diff_naive_sdpa),
        naive_bytes=_bytes(result.naive_traffic.total), sp_bytes=_bytes(io.naive_parts(n, n, d)["sp"]),
        tiled_bytes=_bytes(result.tiled_traffic.total), formula_bytes=_bytes(result.formula_traffic.total),
        out_bytes=_bytes(result.tiled_traffic.written),
        chip=figures.chip_text(result, lang),
        row=row.row, m=f"{float(row.running_max[-1]):.6g}", full_m=f"{row.full_max:.6g}",
        dm=_diff(row.max_diff), l=f"{float(row.normalizer[-1]):.6g}", full_l=f"{row.full_normalizer:.6g}",
        dl=_diff(row.normalizer_rel_diff), dout=_diff(row.out_diff), rises=row.rises,
        min_rescale=f"{float(row.rise_rescales.min()) if row.rises else 1.0:.3g}",
        capture_s=state["capture_s"], compute_s=state["compute_s"])


def draw_head(state, lang):
    if not state:
        return gr.update(), gr.update(), gr.update(), gr.update()
    return (*figures.figures(state["result"], lang), head_summary(state, lang))


# ----------------------------------------------------------------------------- 2. exactness
def run_exact(lang):
    """Tiled vs naive vs SDPA on random inputs across n, block sizes and masks."""
    cases = exactness.random_cases()
    return (*draw_exact(cases, normalize_language(lang)), cases)


def draw_exact(cases, lang):
    if not cases:
        return gr.update(), gr.update()
    frame = pd.DataFrame({
        text("flash.col.n", lang): [c.n for c in cases],
        text("flash.col.blocks", lang): [f"{c.block_q} × {c.block_k}" for c in cases],
        text("flash.col.mask", lang): [figures.mask_text(c.mask, lang) for c in cases],
        text("flash.col.tn", lang): [_diff(c.tiled_vs_naive) for c in cases],
        text("flash.col.ts", lang): [_diff(c.tiled_vs_sdpa) for c in cases],
        text("flash.col.ns", lang): [_diff(c.naive_vs_sdpa) for c in cases],
    })
    summary = text("flash.exact.summary", lang, cases=len(cases),
                   tn=_diff(max(c.tiled_vs_naive for c in cases)),
                   ts=_diff(max(c.tiled_vs_sdpa for c in cases)),
                   ns=_diff(max(c.naive_vs_sdpa for c in cases)), tol=_diff(TOLERANCE))
    return summary, frame


# ----------------------------------------------------------------------------- 3. traffic and memory
def _mask_and_blocks(mask_kind, window, sinks, block_q, block_k) -> tuple[MaskSpec, int, int]:
    override = flash_capture.mask_override(mask_kind, window, sinks)
    block_q = whole_number(block_q, Term("flash.name.block_q"), 1, io.MAX_SWEEP_N["cuda"])
    block_k = whole_number(block_k, Term("flash.name.block_k"), 1, io.MAX_SWEEP_N["cuda"])
    return override or MaskSpec(), block_q, block_k


def run_io(runtime, lang, mask_kind, window, sinks, block_q, block_k, head_dim, sram_kib, max_n):
    """Bytes moved (counted from the engine's schedule and by formula) and measured peak extra
    memory of naive, tiled and SDPA, against n."""
    lang = normalize_language(lang)
    mask, block_q, block_k = _mask_and_blocks(mask_kind, window, sinks, block_q, block_k)
    d = whole_number(head_dim, Term("flash.name.head_dim"), 8, 512)
    kib = whole_number(sram_kib, Term("flash.name.sram"), 1, 1024)
    ns = io.sweep_lengths(max_n, block_q, block_k, runtime.device)
    paper_q, paper_k = io.paper_blocks(kib * 1024, d)
    io.sweep_lengths(ns[-1], paper_q, paper_k, runtime.device)    # the paper's blocks fit too
    start = time.perf_counter()
    counted = io.sweep(ns, d, block_q, block_k, mask)
    paper = io.sweep(ns, d, paper_q, paper_k, mask)
    device_kind = "cuda" if runtime.device.type == "cuda" else "cpu"
    mem_ns = [n for n in ns if n <= MEMORY_MAX_N[device_kind]]
    measured = memory.sweep(mem_ns, d, block_q, block_k, mask, runtime.device)
    state = {"counted": counted, "paper": paper, "memory": measured, "kib": kib,
             "seconds": time.perf_counter() - start}
    return (*draw_io(state, lang), state)


def draw_io(state, lang):
    if not state:
        return gr.update(), gr.update(), gr.update()
    counted, paper, measured, kib = state["counted"], state["paper"], state["memory"], state["kib"]
    n, d = counted.ns[-1], counted.d
    chip = sum(io.on_chip_bytes(counted.block_q, counted.block_k, d).values())
    pchip = sum(io.on_chip_bytes(paper.block_q, paper.block_k, d).values())
    extra = measured.extra
    m0, m1 = measured.ns[0], measured.ns[-1]
    summary = text(
        "flash.io.summary", lang, n=n, d=d, naive=_bytes(counted.naive[-1].total),
        bq=counted.block_q, bk=counted.block_k, tiled=_bytes(counted.counted[-1].total),
        ratio=counted.naive[-1].total / counted.counted[-1].total,
        chip=_bytes(chip) + (text("flash.io.over", lang) if chip > kib * 1024 else ""), kib=kib,
        pbq=paper.block_q, pbk=paper.block_k, pchip=_bytes(pchip), paper=_bytes(paper.counted[-1].total),
        device=measured.device, mem_naive=_bytes(extra["naive"][-1]),
        matrices=extra["naive"][-1] / (4 * m1 * m1), mem_tiled=_bytes(extra["tiled"][-1]),
        mem_sdpa=_bytes(extra["sdpa"][-1]), n0=m0, mem_n=m1, growth_n=m1 / m0, growth_n2=(m1 / m0) ** 2,
        g_naive=extra["naive"][-1] / max(1, extra["naive"][0]),
        g_tiled=extra["tiled"][-1] / max(1, extra["tiled"][0]), seconds=state["seconds"])
    if "compiled" in extra:
        summary += " " + text("flash.io.compiled", lang, mem=_bytes(extra["compiled"][-1]),
                              growth=extra["compiled"][-1] / max(1, extra["compiled"][0]))
    return (figures.io_figure(counted, lang, paper=paper, sram_kib=kib),
            figures.memory_figure(measured, lang), summary)


# ----------------------------------------------------------------------------- 4. timing
def run_timing(runtime, lang, mask_kind, window, sinks, block_q, block_k, head_dim, max_n):
    lang = normalize_language(lang)
    mask, block_q, block_k = _mask_and_blocks(mask_kind, window, sinks, block_q, block_k)
    d = whole_number(head_dim, Term("flash.name.head_dim"), 8, 512)
    ns = io.sweep_lengths(max_n, block_q, block_k, runtime.device)
    return (*draw_timing(timing.sweep(ns, d, block_q, block_k, mask, runtime.device), lang),)


def draw_timing(sweep, lang):
    if not sweep:
        return gr.update(), gr.update(), gr.update()
    ms = {path: sweep.seconds[path][-1] * 1e3 for path in sweep.seconds}
    if sweep.crossover is not None:
        crossover = text("flash.time.crossover", lang, n=sweep.crossover)
    else:
        crossover = text("flash.time.no_crossover", lang, n=sweep.ns[-1], ratio=ms["tiled"] / ms["naive"])
    summary = text("flash.time.summary", lang, n=sweep.ns[-1], naive=ms["naive"], tiled=ms["tiled"],
                   sdpa=ms["sdpa"], tiles=sweep.tiles[-1], bq=sweep.block_q, bk=sweep.block_k,
                   crossover=crossover)
    if "compiled" in ms:
        summary += " " + text("flash.time.compiled", lang, ms=ms["compiled"], ratio=ms["compiled"] / ms["naive"])
    return figures.timing_figure(sweep, lang), summary, sweep


def build(ctx: TabContext) -> None:
    t, runtime = ctx.t, ctx.runtime
    bind = lambda handler: visitor_errors(functools.partial(handler, runtime))  # noqa: E731
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
    shared = [mask_kind, window, sinks, block_q, block_k]

    with ctx.section("flash.sec.schedule"):
        with gr.Row():
            prompt = gr.Textbox(DEFAULT_PROMPT, label=t("flash.prompt"), lines=2, scale=4, elem_id="flash-prompt")
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
        run.click(visitor_errors(functools.partial(run_head, runtime)),
                  [ctx.model, ctx.lang, prompt, n, layer, head, *shared, row],
                  [naive_plot, tiles_plot, row_plot, summary, head_state], api_name="flash_run",
                  **ctx.model_event)
        ctx.redraw_on_language(head_state, [naive_plot, tiles_plot, row_plot, summary], draw_head)

    with ctx.section("flash.sec.exact"):
        gr.Markdown(t("flash.exact.intro"))
        exact_run = gr.Button(t("flash.exact.run"), variant="primary", elem_id="flash-exact-run")
        exact_summary = gr.Markdown(elem_id="flash-exact-summary")
        exact_table = gr.Dataframe(elem_id="flash-exact-table", interactive=False, wrap=True)
        exact_state = gr.State(None)
        exact_run.click(visitor_errors(run_exact), [ctx.lang], [exact_summary, exact_table, exact_state],
                        api_name="flash_exact", **ctx.model_event)
        ctx.redraw_on_language(exact_state, [exact_summary, exact_table], draw_exact)

    with ctx.section("flash.sec.io"):
        gr.Markdown(t("flash.io.intro"))
        with gr.Row():
            io_d = gr.Number(64, precision=0, label=t("flash.io.head_dim"), elem_id="flash-io-d")
            io_sram = gr.Number(64, precision=0, label=t("flash.io.sram"), elem_id="flash-io-sram")
            io_max = gr.Number(2048, precision=0, label=t("flash.io.max_n"), elem_id="flash-io-max-n")
            io_run = gr.Button(t("flash.io.run"), variant="primary", elem_id="flash-io-run")
        io_summary = gr.Markdown(elem_id="flash-io-summary")
        with gr.Row():
            io_plot = gr.Plot(elem_id="flash-io-plot", show_label=False)
            mem_plot = gr.Plot(elem_id="flash-mem-plot", show_label=False)
        io_state = gr.State(None)
        io_run.click(bind(run_io), [ctx.lang, *shared, io_d, io_sram, io_max],
                     [io_plot, mem_plot, io_summary, io_state], api_name="flash_io", **ctx.model_event)
        ctx.redraw_on_language(io_state, [io_plot, mem_plot, io_summary], draw_io)

    with ctx.section("flash.sec.timing"):
        gr.Markdown(t("flash.time.intro"))
        with gr.Row():
            time_d = gr.Number(64, precision=0, label=t("flash.io.head_dim"), elem_id="flash-time-d")
            time_max = gr.Number(2048, precision=0, label=t("flash.time.max_n"), elem_id="flash-time-max-n")
            time_run = gr.Button(t("flash.time.run"), variant="primary", elem_id="flash-time-run")
        time_summary = gr.Markdown(elem_id="flash-time-summary")
        time_plot = gr.Plot(elem_id="flash-time-plot", show_label=False)
        time_state = gr.State(None)
        time_run.click(bind(run_timing), [ctx.lang, *shared, time_d, time_max],
                       [time_plot, time_summary, time_state], api_name="flash_timing", **ctx.model_event)
        ctx.redraw_on_language(time_state, [time_plot, time_summary], lambda s, lang: draw_timing(s, lang)[:2])

    ctx.demo.load(None, None, None, js=FRAMES_JS)
