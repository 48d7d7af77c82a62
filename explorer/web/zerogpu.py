"""Hugging Face ZeroGPU: the GPU is attached per call, so the events that run a model are
wrapped in `spaces.GPU` once the app is built (app.build_app calls attach_gpu), and the models
are loaded in the main process before the app serves (app.main calls preload_on_zerogpu).

What ZeroGPU does with a wrapped function (the `spaces` package, 0.51): off ZeroGPU it returns
the function unchanged; on ZeroGPU each call runs in a worker process forked from the app's
process, which holds a GPU for that call; arguments, every value a generator yields and the
return value cross by pickling, and nothing the call changes (a model loaded lazily, a cache,
a decode loop) comes back. Hence:
- every model is loaded in the main process at start (Runtime.preload): a model loaded inside
  a call would be loaded again by every call. `spaces` moves the main process's tensors to
  the GPU when a call starts.
- the Generate tab's shared decode loop (explorer/serving/) lives inside one call: each
  visitor's run is decoded alone (a batch of 1) in its own GPU call, with no batching across
  visitors; a loop inherited through the fork is forgotten (explorer/serving/registry.py).
- Stop (explorer/web/stopping.py) raises a flag in this process, which a call's process does not
  see: the stop wrapper stays around the GPU call and ends it at its next message.
- the duration asked for each call comes from the event's own time limit, bounded (a longer
  request lowers the visitor's place in ZeroGPU's queue).
Tested with a stand-in `spaces` that forks per call (tests/fake_spaces,
tests/server/test_zerogpu.py),
not on a real ZeroGPU Space.
"""
from __future__ import annotations

import logging
import os
import threading
from typing import Any

import gradio as gr

from explorer.web import gradio_patches, stopping
from explorer.web.groups import MODEL_GROUPS

log = logging.getLogger(__name__)

ENV = "SPACES_ZERO_GPU"
# ZeroGPU's own default duration, for an event without a time limit (cheap forward passes).
DEFAULT_DURATION_S = 60
# The longest call asked for: a Generate run's own deadline (explorer/generate/request.py,
# DEADLINE_S = 120 s on a CPU; a GPU is much faster). Events whose CPU time limit is longer (a
# perplexity sweep, the claims board) ask for this and are cut by ZeroGPU past it.
MAX_DURATION_S = 120


def _env_true() -> bool:
    # the same reading as spaces.config.boolean
    return os.environ.get(ENV, "").lower() in ("1", "t", "true")


def _spaces() -> Any | None:
    """The `spaces` package on a ZeroGPU Space, else None (logged when the Space says ZeroGPU
    but the package cannot be imported: the app then serves on what torch finds, the CPU)."""
    if not _env_true():
        return None
    try:
        import spaces
    except Exception as error:   # not installed, or its own check failed (no device API URL)
        log.warning("%s is set but the `spaces` package cannot be imported (%s: %s): "
                    "serving without ZeroGPU, on the device torch finds", ENV,
                    type(error).__name__, error)
        return None
    return spaces


def on_zerogpu() -> bool:
    """True on a ZeroGPU Space: SPACES_ZERO_GPU is true and `spaces` imports."""
    return _spaces() is not None


def gpu_groups() -> tuple[str, ...]:
    """The concurrency groups whose events run a model: the tabs' `**ctx.model_event` and
    `**ctx.long_event`, and the Generate tab's own group."""
    return MODEL_GROUPS


def gpu_duration(time_limit: float | None) -> int:
    """Seconds of GPU asked for an event with this time limit (None: none set)."""
    if not time_limit:
        return DEFAULT_DURATION_S
    return int(max(1, min(time_limit, MAX_DURATION_S)))


def attach_gpu(demo: gr.Blocks) -> int:
    """Wrap the function of every event in the model groups in spaces.GPU (after the Blocks are
    built, before launch). Returns how many were wrapped; off ZeroGPU, 0 and nothing changes.
    spaces' wrapper keeps the function's signature (functools.wraps: Gradio still finds a
    gr.Progress default) and its kind (a generator function stays one)."""
    spaces = _spaces()
    if spaces is None:
        return 0

    def in_gpu_call(fn, time_limit):
        # a stoppable handler (explorer/web/stopping.py) goes into the GPU call without its
        # Stop wrapper, which stays here: the Stop's flag lives in this process
        handler, rewrap = stopping.unwrap(fn)
        gpu_fn = spaces.GPU(duration=gpu_duration(time_limit))(handler)
        return rewrap(gpu_fn) if rewrap is not None else gpu_fn

    wrapped = gradio_patches.wrap_events(demo, gpu_groups(), in_gpu_call)
    _prepare_forked_calls()
    log.info("ZeroGPU: %d events run in GPU calls", wrapped)
    return wrapped


def preload_on_zerogpu(runtime: Any) -> bool:
    """On ZeroGPU, load every model of the registry now, in this process, printing progress
    as app.main's warm-up does (before the app serves: `spaces` packs the loaded tensors for
    the GPU calls at launch); elsewhere nothing (the app loads on demand). True when it
    preloaded."""
    if not on_zerogpu():
        return False

    def report(fraction: float, message: str) -> None:
        print(f"[startup] ZeroGPU preload {100 * fraction:3.0f}% {message}", flush=True)

    loaded = runtime.preload(progress=report)
    print(f"[startup] ZeroGPU: {len(loaded)} of {len(runtime.names())} models loaded", flush=True)
    return True


_AT_FORK_LOCK = threading.Lock()
_at_fork_registered = False


def _prepare_forked_calls() -> None:
    """Register _after_fork for every process forked from this one (each ZeroGPU call)."""
    global _at_fork_registered
    with _AT_FORK_LOCK:
        if not _at_fork_registered:
            os.register_at_fork(after_in_child=_after_fork)
            _at_fork_registered = True


def _after_fork() -> None:
    """In a process just forked for a GPU call (one thread, this one), torch's CPU work runs
    on this thread only. torch's CPU kernels (and the fused decode step) use GNU OpenMP, whose
    thread pool does not survive a fork: once the parent has run a parallel region (loading
    the models does), the child's first one waits forever for threads it does not have (seen
    here: a 2000x2000 matmul in a forked child hangs, and runs with one thread). A GPU call's
    heavy work is on the GPU anyway. (No decode loop is inherited either: the loop registry
    forgets its parent's at every fork, explorer/serving/registry.py; on a ZeroGPU Space the
    parent never decodes, but a process serving another app off ZeroGPU beside it, the tests,
    may. The call makes its own loop on first use: a run decodes alone there.)"""
    import torch

    torch.set_num_threads(1)
