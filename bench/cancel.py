"""Stop a streaming /generate after a few tokens, N times, by Stop and by dropping the job.

    .venv/bin/python -m bench.cancel                 # 50 times each way (the recorded run)
    .venv/bin/python -m bench.cancel --times 3       # the short version (tests/test_cancel.py)

The app is served in-process on a free port with its real Runtime (SmolLM2); the generate
tab's shared decode loop is observed from inside (every token it hands to a run, and when each
run leaves it), so the server side is measured exactly, not inferred from what the client got.
Jobs are chained: while job i decodes, job i+1 is already queued behind it (the model group
runs one event at a time); once job i has decoded `--after` tokens it is stopped, either
- "stop": the Stop button's event (/stop in the same client session, which `cancels` the run), or
- "drop": gradio_client's job.cancel(), what a closed tab or a client that goes away does,
and the bench measures: tokens job i decoded after the stop returned (<= 2), the time until
it left the shared decode loop, its cache freed (<= 1 s), the time until job i+1 decodes its first
token (<= 2 s; the shared loop may have admitted it before the stop); at the end, no worker left and the thread count back to its baseline.
The last line is a JSON summary; the exit status is 1 when a bound was broken.
"""
from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.fuzz import serve  # noqa: E402  (the same in-process app and model guard)

WORKER = "kv-generate"
MAX_EXTRA_TOKENS = 2
WORKER_GONE_S = 1.0
NEXT_STARTS_S = 2.0
JOB = dict(prompt="Write a long story about a lighthouse keeper.", n_new=256, temp=0.0,
           compare_value=False, check_value=False)


class Forwards:
    """Every token the generate tab's shared decode loop hands to a run (Scheduler._emit), with
    the run, and when each run left the loop (Scheduler._remove: its cache freed). The loop
    decodes every visitor's run in one thread (explorer/generate/scheduler.py), so a run is
    observed by its own tokens, not by a thread."""

    def __init__(self, guard=None):
        from explorer.generate import scheduler

        self.events: list[tuple[float, int]] = []
        self.removed: dict[int, float] = {}
        self._lock = threading.Lock()
        emit, remove = scheduler.Scheduler._emit, scheduler.Scheduler._remove
        forwards = self

        def recorded_emit(self, run, *args, **kwargs):
            with forwards._lock:
                forwards.events.append((time.monotonic(), id(run)))
            return emit(self, run, *args, **kwargs)

        def recorded_remove(self, run):
            with forwards._lock:
                forwards.removed.setdefault(id(run), time.monotonic())
            return remove(self, run)
        scheduler.Scheduler._emit = recorded_emit
        scheduler.Scheduler._remove = recorded_remove
        self._restore = lambda: (setattr(scheduler.Scheduler, "_emit", emit),
                                 setattr(scheduler.Scheduler, "_remove", remove))

    def close(self) -> None:
        self._restore()

    def by_thread_since(self, since: float) -> dict[int, list[float]]:
        """run -> its token times at or after `since` (first-token order)."""
        with self._lock:
            events = list(self.events)
        runs: dict[int, list[float]] = {}
        for at, run in events:
            if at >= since:
                runs.setdefault(run, []).append(at)
        return runs

    def since(self, since: float, run: Optional[int] = None) -> int:
        with self._lock:
            return sum(1 for at, who in self.events if at >= since and (run is None or who == run))

    def gone(self, run: Optional[int]) -> bool:
        with self._lock:
            return run is None or run in self.removed


# Pools that keep idle threads for reuse (bounded by their own limits): gradio_client's
# executors (the clients live in this process) and anyio's worker threads (Gradio runs sync
# handlers on them, up to its thread limiter).
POOLS = ("ThreadPoolExecutor", "AnyIO worker thread")
CLIENT_SIDE = "_stream_heartbeat"   # gradio_client's per-client heartbeat (ends after close)


def server_threads() -> int:
    """Threads of this process less the pools above and the clients' heartbeats."""
    return sum(1 for t in threading.enumerate()
               if not t.name.startswith(POOLS) and CLIENT_SIDE not in t.name)


def workers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == WORKER]


def wait_for(condition: Callable[[], bool], timeout: float, step: float = 0.005) -> Optional[float]:
    """Seconds until condition() held, or None after `timeout`."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if condition():
            return time.monotonic() - start
        time.sleep(step)
    return None


@dataclass
class Trial:
    mode: str
    extra_tokens: int
    worker_gone_s: Optional[float]
    next_started_s: Optional[float]


@dataclass
class Summary:
    trials: list = field(default_factory=list)
    threads_baseline: int = 0
    threads_end: int = 0
    workers_end: int = 0
    thread_names_end: list = field(default_factory=list)
    failures: list = field(default_factory=list)

    def as_dict(self) -> dict:
        out = {"threads_baseline": self.threads_baseline, "threads_end": self.threads_end,
               "workers_end": self.workers_end, "thread_names_end": self.thread_names_end,
               "failures": self.failures[:20]}
        for mode in sorted({t.mode for t in self.trials}):
            trials = [t for t in self.trials if t.mode == mode]
            gone = [t.worker_gone_s for t in trials if t.worker_gone_s is not None]
            nxt = [t.next_started_s for t in trials if t.next_started_s is not None]
            out[mode] = {"times": len(trials),
                         "max_extra_tokens": max(t.extra_tokens for t in trials),
                         "max_worker_gone_s": round(max(gone), 3) if gone else None,
                         "max_next_started_s": round(max(nxt), 3) if nxt else None,
                         "worker_not_gone": sum(t.worker_gone_s is None for t in trials),
                         "next_not_started": sum(t.next_started_s is None for t in trials)}
        return out


def press_stop(client, job) -> None:
    """What the browser does on Stop: its Gradio client cancels the running submission named in
    the Stop event's `cancels` (POST /cancel with the session and event, as job.cancel() does),
    then runs the Stop event itself (/stop), which settles the visitor's table of runs."""
    job.cancel()
    client.predict("en", api_name="/stop")


def drop(job) -> None:
    """A client that vanishes without a word: its event stream is closed and nothing is asked of
    the server (a closed tab's browser sends /cancel where it can: that is "cancel")."""
    job.communicator.should_cancel = True
    job.future.cancel()


def run(url: str, forwards: Forwards, times: int, modes=("stop", "cancel"), after: int = 3,
        log: Callable[[str], None] = print) -> Summary:
    from gradio_client import Client

    summary = Summary()
    clients = []

    def submit(i: int):
        client = Client(url, verbose=False)   # a session per job, as a tab per visitor
        clients.append(client)
        return client, client.submit(api_name="/generate", **JOB)

    def first_forward_of_new_thread(since: float, known: set) -> Optional[int]:
        for ident in forwards.by_thread_since(since):
            if ident not in known:
                return ident
        return None

    # warm-up: one full short run, so imports and thread pools exist before the baseline
    Client(url, verbose=False).predict(api_name="/generate", **{**JOB, "n_new": 2})
    wait_for(lambda: not workers(), 5)
    time.sleep(1.0)
    summary.threads_baseline = server_threads()

    plan = [mode for mode in modes for _ in range(times)]
    t0 = time.monotonic()
    client, job = submit(0)
    ident = None
    wait_for(lambda: first_forward_of_new_thread(t0, set()) is not None, 120)
    ident = first_forward_of_new_thread(t0, set())
    seen = {ident}
    for i, mode in enumerate(plan):
        last = i == len(plan) - 1
        started = time.monotonic()
        if not last:
            next_client, next_job = submit(i + 1)
        # let job i decode a few tokens
        if wait_for(lambda: forwards.since(started - 60, ident) >= after, 60) is None:
            summary.failures.append(f"trial {i}: job did not decode {after} tokens")
        if mode == "stop":
            press_stop(client, job)
        elif mode == "cancel":
            job.cancel()
        else:
            drop(job)
        stopped = time.monotonic()
        gone = wait_for(lambda: forwards.gone(ident), 5)
        # the next job's first forward, from a thread not seen before
        next_ident, next_s = None, None
        if not last:
            # batched: the next run may have joined the loop before the stop (then 0 s)
            found = wait_for(lambda: first_forward_of_new_thread(started, seen) is not None, 10)
            if found is not None:
                next_ident = first_forward_of_new_thread(started, seen)
                next_s = max(0.0, forwards.by_thread_since(started)[next_ident][0] - stopped)
        time.sleep(0.3)
        extra = forwards.since(stopped, ident)
        trial = Trial(mode, extra, gone, next_s)
        summary.trials.append(trial)
        if extra > MAX_EXTRA_TOKENS:
            summary.failures.append(f"trial {i} ({mode}): {extra} tokens after the stop")
        if gone is None or gone > WORKER_GONE_S:
            summary.failures.append(f"trial {i} ({mode}): worker gone after {gone} s")
        if not last and (next_s is None or next_s > NEXT_STARTS_S):
            summary.failures.append(f"trial {i} ({mode}): next job started after {next_s} s")
        log(f"trial {i} {mode}: extra tokens {extra}, worker gone {gone and round(gone, 3)} s, "
            f"next started {next_s and round(next_s, 3)} s")
        if not last:
            client, job, ident = next_client, next_job, next_ident
            seen.add(ident)
    for c in clients:
        c.close()
    wait_for(lambda: not workers(), 5)
    time.sleep(2.0)
    summary.workers_end = len(workers())
    summary.threads_end = server_threads()
    summary.thread_names_end = sorted(t.name for t in threading.enumerate() if not t.name.startswith(POOLS))
    if summary.workers_end:
        summary.failures.append(f"{summary.workers_end} worker threads left")
    if summary.threads_end > summary.threads_baseline:
        summary.failures.append(f"threads {summary.threads_end} > baseline {summary.threads_baseline}")
    return summary


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--times", type=int, default=50, help="stops per mode")
    parser.add_argument("--modes", default="stop,cancel",
                        help="stop (the Stop button), cancel (job.cancel(): a closed tab), drop (stream closed)")
    parser.add_argument("--after", type=int, default=3, help="tokens decoded before the stop")
    parser.add_argument("--json", help="write the summary here")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    url, demo, runtime, guard = serve()
    forwards = Forwards(guard)
    runtime.get(runtime.default_name)
    try:
        summary = run(url, forwards, args.times, tuple(args.modes.split(",")), args.after)
    finally:
        forwards.close()
        demo.close()
    result = summary.as_dict()
    result["wall_s"] = round(time.perf_counter() - started, 1)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    print(json.dumps(result))
    return 1 if summary.failures else 0


if __name__ == "__main__":
    sys.exit(main())
