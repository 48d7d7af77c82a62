"""Stop a streaming /generate after a few tokens, N times, by Stop, by a cancel and by dropping
the connection.

    .venv/bin/python -m bench.cancel                 # 50 times each way (the recorded run)
    .venv/bin/python -m bench.cancel --times 3       # the short version (tests/unit/test_cancel.py)

The app is served in-process on a free port with its real Runtime (SmolLM2); the generate
tab's shared decode loop is observed from inside (every token it hands to a run, and when each
run leaves it), so the server side is measured exactly, not inferred from what the client got.
Jobs are chained: while job i decodes, job i+1 is already submitted; once job i has decoded
`--after` tokens it is stopped, either
- "stop": the Stop button's event (/stop in the same client session: it raises the run's flag
  and the run ends itself at its next step, explorer/web/stopping.py),
- "cancel": gradio_client's job.cancel() (POST /cancel), what a closing tab's client sends, or
- "drop": the client vanishes without a word: the job was submitted as the browser does
  (POST /queue/join, then the session's event stream GET /queue/data, read on a socket of its
  own) and that socket is shut down and closed, nothing else sent (a killed browser, a lost
  network, a script that exits);
and the bench measures: tokens job i decoded after the stop returned (<= 2), the time until
it left the shared decode loop, its cache freed (<= 1 s), the time until job i+1 decodes its
first token (<= 2 s; the shared loop may have admitted it before the stop); at the end, no
worker left and no thread alive that was not there before the trials.
The last line is a JSON summary; the exit status is 1 when a bound was broken.
"""
from __future__ import annotations

import argparse
import json
import socket
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
HTTPX = {"timeout": 60}   # gradio_client's requests: a loaded CPU serves its config slowly
JOB = dict(prompt="Write a long story about a lighthouse keeper.", n_new=256, temp=0.0,
           compare_value=False, check_value=False)


class Forwards:
    """Every token the generate tab's shared decode loop hands to a run (Scheduler._emit), with
    the run, and when each run left the loop (Scheduler._remove: its cache freed). The loop
    decodes every visitor's run in one thread (explorer/serving/scheduler.py), so a run is
    observed by its own tokens, not by a thread."""

    def __init__(self, guard=None):
        from explorer.serving import scheduler

        self.events: list[tuple[float, int]] = []
        self.removed: dict[int, float] = {}
        self.iterations: list[tuple[float, float]] = []   # the loop's iterations (start, end)
        # every run seen, kept referenced: a run is known by id(), which a freed run's successor
        # could otherwise reuse (its cache is freed all the same: _remove drops it)
        self._runs: dict[int, object] = {}
        self._lock = threading.Lock()
        emit, remove = scheduler.Scheduler._emit, scheduler.Scheduler._remove
        forwards = self

        def recorded_emit(self, run, *args, **kwargs):
            with forwards._lock:
                forwards.events.append((time.monotonic(), id(run)))
                forwards._runs[id(run)] = run
            return emit(self, run, *args, **kwargs)

        def recorded_remove(self, run):
            with forwards._lock:
                forwards.removed.setdefault(id(run), time.monotonic())
                forwards._runs[id(run)] = run
            return remove(self, run)
        iteration = scheduler.Scheduler._iteration

        def recorded_iteration(self):
            start = time.monotonic()
            try:
                return iteration(self)
            finally:
                with forwards._lock:
                    forwards.iterations.append((start, time.monotonic()))
        scheduler.Scheduler._emit = recorded_emit
        scheduler.Scheduler._remove = recorded_remove
        scheduler.Scheduler._iteration = recorded_iteration
        self._restore = lambda: (setattr(scheduler.Scheduler, "_emit", emit),
                                 setattr(scheduler.Scheduler, "_remove", remove),
                                 setattr(scheduler.Scheduler, "_iteration", iteration))

    def close(self) -> None:
        self._restore()
        self._runs.clear()

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

    def step_s(self, run: Optional[int], before: float, last: int = 5) -> float:
        """The longest time between the run's last `last` tokens handed out before `before`."""
        with self._lock:
            times = [at for at, who in self.events if who == run and at < before][-last:]
        return max((b - a for a, b in zip(times, times[1:])), default=0.0)

    def boundary_s(self, since: float) -> Optional[float]:
        """Seconds from `since` to the end of the loop's first iteration that started after it:
        a stop at `since` lands at that iteration's start (its leave phase), after the iteration
        in flight; a loaded CPU stretches both. None if there is none yet."""
        with self._lock:
            ends = [end for start, end in self.iterations if start >= since]
        return min(ends) - since if ends else None

    def gone(self, run: Optional[int]) -> bool:
        with self._lock:
            return run is None or run in self.removed


# Pools that keep idle threads for reuse (bounded by their own limits): gradio_client's
# executors (the clients live in this process), anyio's worker threads (Gradio runs sync
# handlers on them, up to its thread limiter) and asyncio's default executor of an event loop
# ("asyncio_N": e.g. getaddrinfo of an async HTTP client; a second one appears when two such
# calls overlap, which made a CI run read "threads 10 > baseline 9").
POOLS = ("ThreadPoolExecutor", "AnyIO worker thread", "asyncio_")
# the client side's own threads, not the server's: gradio_client's per-client heartbeat (ends
# after close) and this bench's readers of dropped connections (bench-*)
CLIENT_SIDE = ("_stream_heartbeat", "bench-")


def counted_threads() -> list[threading.Thread]:
    """Threads of this process less the pools above and the client side's own."""
    return [t for t in threading.enumerate()
            if not t.name.startswith(POOLS) and not any(c in t.name for c in CLIENT_SIDE)]


def threads_left(baseline: set, timeout: float) -> list[threading.Thread]:
    """Counted threads that were not there at the baseline (by identity, not by count: in a
    test process other tests' threads come and go, and one ending hid one left here, or one
    of theirs starting read as ours) and are still alive after up to `timeout` s (one that is
    finishing its work, e.g. the packing thread of a run that arrived late, is given that
    long)."""
    def new() -> list[threading.Thread]:
        return [t for t in counted_threads() if t.ident not in baseline]
    wait_for(lambda: not new(), timeout, step=0.05)
    return new()


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
    last: bool = False        # no job after it: next_started_s is None by design
    step_s: float = 0.0       # the run's longest time between its last tokens before the stop
    boundary_s: Optional[float] = None   # stop -> end of the loop's first step begun after it


@dataclass
class Summary:
    trials: list = field(default_factory=list)
    threads_baseline: int = 0
    threads_end: int = 0
    workers_end: int = 0
    thread_names_end: list = field(default_factory=list)
    thread_names_baseline: list = field(default_factory=list)
    threads_left: list = field(default_factory=list)   # names of threads_left()'s
    failures: list = field(default_factory=list)

    def as_dict(self) -> dict:
        out = {"threads_baseline": self.threads_baseline, "threads_end": self.threads_end,
               "workers_end": self.workers_end, "thread_names_end": self.thread_names_end,
               "threads_left": self.threads_left,
               "failures": self.failures[:20]}
        for mode in sorted({t.mode for t in self.trials}):
            trials = [t for t in self.trials if t.mode == mode]
            gone = [t.worker_gone_s for t in trials if t.worker_gone_s is not None]
            nxt = [t.next_started_s for t in trials if t.next_started_s is not None]
            out[mode] = {"times": len(trials),
                         "max_step_s": round(max(t.step_s for t in trials), 3),
                         "gone_within_s": sum(t.worker_gone_s is not None
                                              and t.worker_gone_s <= WORKER_GONE_S for t in trials),
                         # left at the first step boundary after the stop (however long the
                         # steps of a loaded CPU): the stop itself worked
                         "gone_by_boundary": sum(t.worker_gone_s is not None and t.worker_gone_s
                                                 <= max(WORKER_GONE_S, (t.boundary_s or 0) + 0.05)
                                                 for t in trials),
                         "next_within_s": sum(t.next_started_s is not None
                                              and t.next_started_s <= NEXT_STARTS_S for t in trials),
                         "max_extra_tokens": max(t.extra_tokens for t in trials),
                         "max_worker_gone_s": round(max(gone), 3) if gone else None,
                         "max_next_started_s": round(max(nxt), 3) if nxt else None,
                         "worker_not_gone": sum(t.worker_gone_s is None for t in trials),
                         "next_not_started": sum(t.next_started_s is None and not t.last
                                                 for t in trials)}
        return out


def press_stop(client, job) -> None:
    """What the browser does on Stop: it runs the Stop event (/stop, not queued) in the
    visitor's session, which raises the flag of the session's running run; the run then ends
    itself at its next step with its own last message (no /cancel)."""
    client.predict(api_name="/stop")


class DroppedJob:
    """/generate as the browser submits it: POST /queue/join for a session of its own, then that
    session's event stream (GET /queue/data) read on a plain socket by a thread, as a live page
    reads it. drop() shuts the socket down and closes it: the server sees the connection end
    and nothing else (no /cancel, no /stop)."""

    def __init__(self, url: str, payload: dict):
        import urllib.parse
        import uuid

        import httpx

        self.session = uuid.uuid4().hex
        parts = urllib.parse.urlsplit(url)
        posted = httpx.post(f"{url}gradio_api/queue/join",
                            json={**payload, "session_hash": self.session}, timeout=30)
        posted.raise_for_status()
        sock = socket.create_connection((parts.hostname, parts.port), timeout=30)
        sock.sendall((f"GET /gradio_api/queue/data?session_hash={self.session} HTTP/1.1\r\n"
                      f"Host: {parts.netloc}\r\nAccept: text/event-stream\r\n\r\n").encode())
        self.read(sock)

    def read(self, sock) -> None:
        """Read `sock` on a thread of its own until drop()."""
        self.sock = sock
        self.messages = 0           # event-stream bytes read (a live reader, not a count of steps)
        # the reader wakes every second to see whether drop() was called: closing a socket does
        # not wake a thread blocked on it (only a shutdown does, and that can fail on a
        # connection the server has already ended)
        self.sock.settimeout(1.0)
        self._dropped = threading.Event()
        self._reader = threading.Thread(target=self._read, name="bench-dropped-reader", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while not self._dropped.is_set():
            try:
                chunk = self.sock.recv(65536)
            except socket.timeout:   # nothing sent for a second (e.g. queued): read on
                continue
            except OSError:          # closed by drop()
                return
            if not chunk:
                return
            self.messages += chunk.count(b"data:")

    def drop(self) -> None:
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
        self._dropped.set()
        self._reader.join(5.0)   # within a second: the reader sees the flag at its next wake


def join_payload(url: str, api_name: str, kwargs: dict) -> dict:
    """The body of POST /queue/join for `api_name` called with `kwargs` (the endpoint's defaults
    for the rest), as the browser sends it: one value per input of the event, None for a
    gr.State."""
    from gradio_client import Client

    client = Client(url, verbose=False, httpx_kwargs=HTTPX)
    try:
        fn_index = client._infer_fn_index(api_name, None)
        endpoint = client.endpoints[fn_index]
        info = client.view_api(return_format="dict", print_info=False)["named_endpoints"][api_name]
        values = [kwargs.get(p["parameter_name"], p.get("parameter_default"))
                  for p in info["parameters"]]
        data = list(endpoint.insert_empty_state(*values))
    finally:
        client.close()
    return {"data": data, "fn_index": fn_index, "event_data": None, "trigger_id": None}


def run(url: str, forwards: Forwards, times: int, modes=("stop", "cancel", "drop"), after: int = 3,
        log: Callable[[str], None] = print, by_boundary: bool = False) -> Summary:
    from gradio_client import Client

    summary = Summary()
    clients = []
    plan = [mode for mode in modes for _ in range(times)]
    payload = join_payload(url, "/generate", JOB) if "drop" in plan else None

    def submit(i: int):
        if plan[i] == "drop":
            return None, DroppedJob(url, payload)
        client = Client(url, verbose=False, httpx_kwargs=HTTPX)   # a session per job, a tab each
        clients.append(client)
        return client, client.submit(api_name="/generate", **JOB)

    def first_forward_of_new_thread(since: float, known: set) -> Optional[int]:
        for ident in forwards.by_thread_since(since):
            if ident not in known:
                return ident
        return None

    # warm-up: one full short run, so imports and thread pools exist before the baseline
    warm = Client(url, verbose=False, httpx_kwargs=HTTPX)
    warm.predict(api_name="/generate", **{**JOB, "n_new": 2})
    warm.close()
    wait_for(lambda: not workers(), 5)
    time.sleep(1.0)
    baseline = {t.ident for t in counted_threads()}
    summary.threads_baseline = len(baseline)
    baseline_names = sorted(t.name for t in threading.enumerate() if not t.name.startswith(POOLS))

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
            job.drop()
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
        step_s = forwards.step_s(ident, before=stopped)
        boundary = forwards.boundary_s(stopped)
        trial = Trial(mode, extra, gone, next_s, last, step_s, boundary)
        summary.trials.append(trial)
        if extra > MAX_EXTRA_TOKENS:
            summary.failures.append(f"trial {i} ({mode}): {extra} tokens after the stop")
        # a stop lands at a step boundary: the iteration in flight finishes first (the run's
        # cache is in use until then). by_boundary: where the loop's iterations are slower than
        # WORKER_GONE_S allows (a loaded CPU), the run must have left by the end of the first
        # iteration that started after the stop; the next job's bound grows as much.
        slack = (boundary or 0.0) if by_boundary else 0.0
        gone_bound = max(WORKER_GONE_S, slack + 0.05)
        if gone is None or gone > gone_bound:
            summary.failures.append(f"trial {i} ({mode}): worker gone after {gone} s "
                                    f"(steps of {step_s:.3f} s, boundary {boundary} s)")
        next_bound = max(NEXT_STARTS_S, NEXT_STARTS_S + slack)
        if not last and (next_s is None or next_s > next_bound):
            summary.failures.append(f"trial {i} ({mode}): next job started after {next_s} s")
        log(f"trial {i} {mode}: extra tokens {extra}, worker gone {gone and round(gone, 3)} s, "
            f"next started {next_s and round(next_s, 3)} s, steps of {step_s:.3f} s, "
            f"boundary {boundary and round(boundary, 3)} s")
        if not last:
            client, job, ident = next_client, next_job, next_ident
            seen.add(ident)
    for c in clients:
        c.close()
    wait_for(lambda: not workers(), 5)
    time.sleep(2.0)
    summary.workers_end = len(workers())
    left = threads_left(baseline, 10.0)
    summary.threads_left = sorted(t.name for t in left)
    summary.threads_end = summary.threads_baseline + len(left)   # the baseline's, plus those
    summary.thread_names_end = sorted(t.name for t in threading.enumerate() if not t.name.startswith(POOLS))
    summary.thread_names_baseline = baseline_names
    if summary.workers_end:
        summary.failures.append(f"{summary.workers_end} worker threads left")
    if left:
        summary.failures.append(f"threads left that were not there before the trials: {summary.threads_left}")
    return summary


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--times", type=int, default=50, help="stops per mode")
    parser.add_argument("--modes", default="stop,cancel,drop",
                        help="stop (the Stop button), cancel (job.cancel(): a closed tab), "
                             "drop (the connection closed, nothing sent)")
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
