"""A stand-in for Hugging Face's `spaces` package, for tests only (tests/test_zerogpu.py puts
tests/fake_spaces on sys.path). No ZeroGPU Space is reachable from here, so this reproduces
what the real `spaces.GPU` (0.51, spaces/zero/wrappers.py) does to a function on ZeroGPU, as
far as the app can tell:
- off ZeroGPU (SPACES_ZERO_GPU not true) the function comes back unchanged;
- on ZeroGPU every call runs in a process forked (multiprocessing's "fork" context) from the
  caller; the arguments go to it pickled, and every yielded or returned value comes back
  pickled, so state the call changes stays in the child;
- a gr.Error raised in the call reaches the caller as gr.Error; any other exception, or a
  value that does not pickle, as gr.Error("<its class>") titled "ZeroGPU worker error", and a
  child that dies as gr.Error("GPU task aborted");
- a generator closed by its consumer (Stop) stops the child at its next yield;
- progress updates of gr.Progress (Gradio's Queue.set_progress / log_message in the child)
  are forwarded to the caller's queue, as the real package's patch_gradio_queue does;
- a call that outlives its duration is killed (ZeroGPU aborts it); `kill_children()` kills
  every call still running (a test module's teardown: a forked child holds copies of the
  parent's file descriptors, e.g. the pipe to Playwright's driver, which then never sees its
  end and hangs the test session's teardown).
Not reproduced: GPU scheduling and quotas, tensors moved to a GPU, reuse of an idle worker
for the next call (the real package may reuse one; this forks a fresh one every call).

`calls` records each call made in the caller: (function name, duration, child pid).
"""
from __future__ import annotations

import functools
import inspect
import multiprocessing
import os
import pickle
import threading
import traceback

import gradio as gr

_fork = multiprocessing.get_context("fork")
calls: list[tuple[str, object, int]] = []
_children: list = []   # every process started, for kill_children()
# Every end of a call's pipe open in this process. A forked process gets a copy of each, and a
# socket's peer sees it closed only once every copy is: a call's process that kept its
# caller's end would write on after the caller closed it (a Stop) and, the buffer full, block
# until its duration ran out; one that kept another call's ends would hold that call's
# process alive, or its caller's recv() from seeing that process die. So a call's process
# closes all but its own end first thing (_child). (Changed only by whole set operations,
# atomic under the GIL: a fork never sees it half changed, and no lock can be left held.)
_ends: set = set()
DEFAULT_DURATION_S = 60   # spaces.GPU's default

QUEUE_METHODS = ("set_progress", "log_message")


def _on_zerogpu() -> bool:
    return os.environ.get("SPACES_ZERO_GPU", "").lower() in ("1", "t", "true")


def GPU(task=None, *, duration=None, size=None, **kwargs):
    """spaces.GPU(fn), spaces.GPU(duration=60)(fn)."""
    if task is None or not callable(task):
        return functools.partial(_gpu, duration=duration if task is None else task)
    return _gpu(task, duration)


def _gpu(task, duration):
    if not _on_zerogpu():
        return task
    name = getattr(task, "__name__", None) or getattr(getattr(task, "func", None), "__name__", "fn")
    if inspect.isgeneratorfunction(task):
        @functools.wraps(task)
        def gpu_generator(*args, **kwargs):
            connection, process = _start(task, True, args, kwargs, name, duration)
            try:
                while True:
                    kind, value = _receive(connection)
                    if kind == "end":
                        return
                    yield value
            finally:
                _close(connection, process)
        gpu_generator.zerogpu = None   # the real package marks its wrappers so
        return gpu_generator

    @functools.wraps(task)
    def gpu_function(*args, **kwargs):
        connection, process = _start(task, False, args, kwargs, name, duration)
        try:
            kind, value = _receive(connection)
            return value
        finally:
            _close(connection, process)
    gpu_function.zerogpu = None
    return gpu_function


# ----------------------------------------------------------------------------- the caller's side
def _start(task, generator, args, kwargs, name, duration):
    parent, child = _fork.Pipe()
    _ends.update((parent, child))
    process = _fork.Process(target=_child, args=(child, task, generator), daemon=True)
    process.start()
    _forget(child)   # the child's end: once the child exits, recv() raises EOFError
    calls.append((name, duration, process.pid))
    _children.append(process)
    watchdog = threading.Timer(duration or DEFAULT_DURATION_S, _kill, args=(process,))
    watchdog.daemon = True
    watchdog.start()
    try:
        parent.send((args, kwargs))   # pickled, as the real package's argument queue does
    except Exception:
        _close(parent, process)
        raise
    return parent, process


def _receive(connection):
    """The child's next ("value" | "end", value); its exceptions raised here; queue events
    (progress) applied to this process's Gradio queue on the way."""
    while True:
        try:
            kind, *payload = connection.recv()
        except (EOFError, OSError):
            raise gr.Error("GPU task aborted", title="ZeroGPU worker error") from None
        if kind == "queue":
            _apply_queue_event(*payload)
            continue
        if kind == "error":
            error, = payload
            raise error
        return kind, payload[0]


def _apply_queue_event(method_name, args, kwargs):
    from gradio.context import LocalContext

    blocks = LocalContext.blocks.get(None)
    if blocks is not None:
        getattr(blocks._queue, method_name)(*args, **kwargs)


def _forget(connection):
    _ends.discard(connection)   # first: a process forked from now on does not get it to close
    connection.close()


def _close(connection, process):
    """Closing the pipe ends the child at its next send (no other process holds this end: see
    _ends); it is reaped in the background so a Stop is not held up by a forward pass still
    running there."""
    _forget(connection)
    threading.Thread(target=process.join, daemon=True).start()


def _kill(process) -> None:
    if process.is_alive():
        process.kill()


def kill_children() -> int:
    """Kill every call's process still running; how many were."""
    alive = [process for process in _children if process.is_alive()]
    for process in alive:
        process.kill()
        process.join(timeout=10)
    _children.clear()
    return len(alive)


# ----------------------------------------------------------------------------- the child's side
def _child(connection, task, generator):
    for end in list(_ends):   # the copies this fork made of every other end: see _ends
        if end is not connection:
            end.close()
    _ends.clear()
    _forward_queue_events(connection)
    try:
        args, kwargs = connection.recv()
        if generator:
            for value in task(*args, **kwargs):
                _send(connection, "value", value)
            _send(connection, "end", None)
        else:
            _send(connection, "value", task(*args, **kwargs))
    except (_CallerGone, EOFError):
        pass   # the caller closed the pipe (Stop): nobody to answer
    except Exception as error:
        _send_error(connection, error)


def _send(connection, kind, value):
    try:
        data = pickle.dumps((kind, value))
    except Exception as error:   # the real package answers a value that does not pickle so
        raise _WorkerError(error) from None
    _send_data(connection, data)


def _send_data(connection, data):
    try:
        connection.send_bytes(data)
    except OSError:   # EPIPE or ECONNRESET: the caller closed its end
        raise _CallerGone from None


class _WorkerError(Exception):
    pass


class _CallerGone(Exception):
    pass


def _send_error(connection, error):
    if isinstance(error, _WorkerError):
        error = error.args[0]
    if not isinstance(error, gr.Error):
        traceback.print_exception(error)
        error = gr.Error(type(error).__name__, title="ZeroGPU worker error")
    try:
        connection.send(("error", error))
    except (BrokenPipeError, OSError):
        pass


def _forward_queue_events(connection):
    from gradio.helpers import TrackedIterable
    from gradio.queueing import Queue

    def forward(method_name):
        def method(self, *args, **kwargs):
            _send_data(connection, pickle.dumps(("queue", method_name, args, kwargs)))
        return method

    for method_name in QUEUE_METHODS:
        setattr(Queue, method_name, forward(method_name))
    # a tracked iterable's iterator does not pickle; the caller's queue needs only its numbers
    TrackedIterable.__reduce__ = _tracked_iterable_reduce


def _tracked_iterable_reduce(self):
    constructor, arguments, state, *_ = object.__reduce__(self)   # not self's: that is this
    return constructor, arguments, {**state, "iterable": None, "_tqdm": None}
