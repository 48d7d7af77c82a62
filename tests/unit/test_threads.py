"""explorer/serving/workers.py: a daemon thread inside torch when Python exits aborts the process
(exit status 134, "terminate called without an active exception"; a Generate run's C1 replay
under way at exit did it). A worker started with start_worker is stopped and waited for at
exit, and the process exits cleanly. Each case runs in a fresh interpreter."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

from explorer.serving import workers as threads
from tests.helpers import ROOT, decoding_snapshot

BUSY_AT_EXIT = """
import sys, threading, torch
from explorer.serving.workers import start_worker
stop, busy = threading.Event(), threading.Event()
def work():
    a = torch.randn(600, 600)
    while not stop.is_set():          # polled between two rounds of products, as a replay does
        for _ in range(20):
            a = torch.tanh(a @ a)
        busy.set()
if sys.argv[1] == "start_worker":
    start_worker(work, "busy", stop)
else:
    threading.Thread(target=work, daemon=True).start()
busy.wait(60)
sys.exit(0)                           # the worker is inside torch now
"""


def _exit_status(how: str) -> tuple[int, str]:
    done = subprocess.run([sys.executable, "-c", BUSY_AT_EXIT, how], capture_output=True,
                          text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": ROOT}, timeout=120)
    return done.returncode, done.stderr


def test_a_worker_busy_in_torch_at_exit_lets_the_process_exit_cleanly():
    status, stderr = _exit_status("start_worker")
    assert status == 0 and "terminate called" not in stderr, stderr[-500:]


def test_a_plain_daemon_thread_busy_in_torch_at_exit_aborts_the_process():
    """Why start_worker exists: if this stops failing, torch or Python changed (then the
    exit hook is harmless, but this test says so)."""
    status, stderr = _exit_status("daemon")
    assert status != 0 and "terminate called" in stderr


def test_exit_sets_the_stop_events_and_waits_within_its_bound():
    stop, unstoppable = threading.Event(), threading.Event()
    worker = threads.start_worker(lambda: stop.wait(30), "stoppable", stop)
    stuck = threads.start_worker(lambda: unstoppable.wait(30), "no stop event")
    assert {worker, stuck} <= set(threads._LIVE) and len(threads._LIVE) >= 2
    started = time.monotonic()
    threads.stop_workers(wait_s=0.5)
    assert stop.is_set() and not worker.is_alive()
    assert stuck.is_alive() and time.monotonic() - started < 5   # only waited for, then left
    unstoppable.set()
    stuck.join(5)
    assert not stuck.is_alive()


def test_a_generate_worker_is_stopped_at_exit():
    """transport.in_background's worker (the run's decode, then its C4 check and C1 replay) is
    one of them: the exit hook's stop ends it at its next poll, and the stream ends."""
    from explorer.serving import transport

    def make(should_stop):
        while not should_stop():
            time.sleep(0.005)
            yield decoding_snapshot()

    before = set(threads._LIVE)
    stream = transport.in_background(make, idle_timeout_s=60)
    next(stream)
    [worker] = [t for t in threads._LIVE if t not in before]
    assert worker.name == "kv-generate"
    threads.stop_workers(wait_s=5)
    assert not worker.is_alive() and worker not in threads._LIVE
    assert [s.phase for s in stream] in ([], ["decode"])   # it ends without waiting for more
