"""Fuzz every API endpoint of the app with hostile inputs, through the app's own HTTP API.

    .venv/bin/python -m bench.fuzz                  # >= 500 cases per endpoint (the full run)
    .venv/bin/python -m bench.fuzz --cases 20       # the quick part (tests/server/test_fuzz.py runs it)
    .venv/bin/python -m bench.fuzz --endpoints /generate,/rope_frequencies --json out.json
    .venv/bin/python -m bench.fuzz --repeat /flash_timing --times 50 --every 10   # growth of one endpoint

The endpoints are listed from the running app's API description (gradio_client's
view_api(return_format="dict")), so a new endpoint is fuzzed without changing this file. Each
case is one endpoint's defaults with one to three parameters replaced by a hostile value: empty
and blank text, text up to several MB, control and bidirectional characters, the checkpoints'
special tokens, NaN, +-inf, integers past float and int64 range, wrong types, unknown and
path-like model ids. A case is *invalid* when one of its values can never be a valid input of
its parameter's kind (NaN, 10**400, a value outside a dropdown's choices, text past the app's
character cap, blank text); any other hostile value may be valid (a prompt full of bidi marks is
a prompt) and only has to be answered in bounded time and words.

The app is served in-process on a free port with its real Runtime and both models loaded; a
guard on the models' token embedding refuses any forward pass during the fuzz and counts it, so
the run never spends CPU on the model, and a case that reaches the model is recorded. Checks:
- an invalid case answers an error within --invalid-s (default 1 s) and never reaches the model;
- every case answers within --any-s (an error or a result), and no message holds a traceback,
  a source file or a server path;
- the server keeps answering (a cheap endpoint after every endpoint's batch);
- RSS (after malloc_trim: freed memory the allocator keeps is not growth) grows less than
  --rss-mb (default 50 MB) from after the warm-up (a pass of hostile cases, then each endpoint
  once with its defaults) to the end; it is also read after each endpoint's batch.
The last line is a JSON summary; the exit status is 1 when a check failed.
"""
from __future__ import annotations

import dataclasses
import argparse
import gc
import json
import os
import random
import re
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
from bench.fuzz_values import Case, default_args, make_cases  # noqa: E402 (ROOT first)
from bench.memory import MB, live_rss_bytes, rss_bytes  # noqa: E402
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

# What an error message must never hold: a traceback, a source file, a server path.
LEAK = re.compile(r"Traceback|File \"|\.py\b|site-packages|/(?:work|root|home|tmp|usr|opt|var|etc)/"
                  r"|\.cache/")
# An error is a sentence or two: a longer one quotes the visitor's value back (Gradio's own
# choice check quoted a 2 MB value whole) or dumps internals.
MAX_MESSAGE_CHARS = 1000


class ModelTouched(RuntimeError):
    """Raised by the fuzz's guard when a forward pass starts during the fuzz."""


class ModelGuard:
    """Counts (and, while active, refuses) forward passes of every model the Runtime loads: a
    pre-hook on the token embedding, the first module of every forward."""

    def __init__(self):
        self.active = False
        self.touches = 0
        self._lock = threading.Lock()

    def hook(self, module, args):
        with self._lock:
            self.touches += 1
        if self.active:
            raise ModelTouched("forward refused by the fuzz guard")

    def wrap_loader(self, load_model: Callable) -> Callable:
        def load(folder, **kwargs):
            model = load_model(folder, **kwargs)
            embed = getattr(model, "embed", None) or model.get_input_embeddings()
            embed.register_forward_pre_hook(lambda module, args: self.hook(module, args))
            return model
        return load



# ----- the HTTP call -------------------------------------------------------------------------
@dataclass
class Answer:
    ok: bool
    message: Optional[str]
    seconds: float
    status: str
    chars: int = 0     # length of the answer's data as sent (what a session keeps of it)


def without_echo(message: str, case: Case) -> str:
    """The message less the visitor's own values it repeats (an error may quote what was sent:
    "Unknown model '../../etc/passwd'" shows no server path)."""
    for value in case.changes.values():
        if not value.huge:
            made = value.make()
            if isinstance(made, str) and made:
                for form in (repr(made), made, repr(made)[1:-1]):
                    message = message.replace(form, "")
    return message


def call(http, base: str, endpoint: str, args: list, timeout: float) -> Answer:
    """POST /gradio_api/call/<name> then read its event stream (what gradio_client does)."""
    start = time.perf_counter()
    try:
        body = json.dumps({"data": args}, allow_nan=True)
    except (ValueError, OverflowError) as error:
        return Answer(False, f"client could not encode: {error}", 0.0, "unsent")
    try:
        posted = http.post(f"{base}gradio_api/call{endpoint}", content=body,
                           headers={"Content-Type": "application/json"}, timeout=timeout)
        if posted.status_code != 200:
            return Answer(False, posted.text[:500], time.perf_counter() - start, f"http {posted.status_code}")
        event_id = posted.json()["event_id"]
        event, data, last_event, last_data = None, [], None, None
        with http.stream("GET", f"{base}gradio_api/call{endpoint}/{event_id}", timeout=timeout) as response:
            for line in response.iter_lines():
                if line.startswith("event:"):
                    event = line[6:].strip()
                elif line.startswith("data:"):
                    data.append(line[5:].strip())
                elif line == "" and event is not None:
                    last_event, last_data = event, "\n".join(data)
                    event, data = None, []
                    if last_event in ("complete", "error"):
                        break
                if time.perf_counter() - start > timeout:
                    return Answer(False, "timed out", time.perf_counter() - start, "timeout")
        seconds = time.perf_counter() - start
        if last_event == "complete":
            return Answer(True, None, seconds, "complete", len(last_data or ""))
        message = None
        if last_data not in (None, "", "null"):
            try:
                message = json.loads(last_data)
            except ValueError:
                message = last_data
            if isinstance(message, dict):
                message = message.get("message") or message.get("error") or json.dumps(message)
        return Answer(False, None if message is None else str(message), seconds, last_event or "closed")
    except Exception as error:  # connection refused, read timeout: the server is in trouble
        return Answer(False, f"{type(error).__name__}: {error}", time.perf_counter() - start, "transport")


# ----- the run -------------------------------------------------------------------------------
@dataclass
class Report:
    cases: int = 0
    invalid: int = 0
    errors: int = 0
    reached_model: int = 0
    ignored: int = 0          # non-strict invalid values answered as if absent (not failures)
    ignored_params: set = field(default_factory=set)
    failures: list = field(default_factory=list)
    slowest_invalid_s: float = 0.0
    slowest_any_s: float = 0.0
    per_endpoint: dict = field(default_factory=dict)
    invalid_seconds: list = field(default_factory=list)
    rss_start_mb: float = 0.0
    rss_end_mb: float = 0.0
    rss_peak_mb: float = 0.0
    skipped: list = field(default_factory=list)   # endpoints not fuzzed (max_minutes, skip)

    def fail(self, case: Case, why: str, answer: Answer) -> None:
        if len(self.failures) < 2000:
            self.failures.append({"endpoint": case.endpoint, "case": case.label(), "why": why,
                                  "status": answer.status, "seconds": round(answer.seconds, 3),
                                  "message": (answer.message or "")[:300]})


def serve(runtime=None):
    """The whole app in this process on a free port: (url, demo, runtime, guard); the caller
    closes demo."""
    import app
    from bench.serve import build, launch
    from explorer.runtime import Runtime
    from models.device import tune_cpu_allocator
    from models.loading import load_model

    tune_cpu_allocator()
    guard = ModelGuard()
    runtime = runtime or Runtime(load_model=guard.wrap_loader(load_model))
    # every case is a new session of this host's one address: the app's bound on those lifted
    settings = app.WEB
    app.WEB = dataclasses.replace(settings, new_sessions_per_minute=1_000_000)
    try:
        demo = build(runtime)
    finally:
        app.WEB = settings
    return launch(demo), demo, runtime, guard


def endpoints_of(url: str) -> dict[str, list[dict]]:
    from gradio_client import Client

    info = Client(url, verbose=False).view_api(return_format="dict", print_info=False)
    return {name: ep["parameters"] for name, ep in info["named_endpoints"].items()}


def fuzz(url: str, guard: ModelGuard, cases_per_endpoint: int, *, seed: int = 0,
         only: Optional[list[str]] = None, invalid_s: float = 1.0, any_s: float = 30.0,
         rss_mb: float = 50.0, log: Callable[[str], None] = print, max_huge: int = 3,
         strict_only: bool = False, max_minutes: Optional[float] = None,
         skip: Optional[list[str]] = None) -> Report:
    """max_minutes: no endpoint is started past this time (the rest are listed in
    report.skipped); skip: endpoints not fuzzed."""
    import httpx

    endpoints = all_endpoints = endpoints_of(url)
    if only:
        missing = [e for e in only if e not in endpoints]
        if missing:
            raise SystemExit(f"no such endpoints: {missing}; the app has {sorted(endpoints)}")
        endpoints = {e: endpoints[e] for e in only}
    # a cheap endpoint that needs no model: asked after every endpoint's batch
    probe = next((e for e in ("/rope_frequencies", "/rope_scaling", "/header_status", "/runs")
                  if e in all_endpoints), None)
    report = Report()
    rng = random.Random(seed)
    report.rss_start_mb = report.rss_peak_mb = last_live = live_rss_bytes() / MB
    guard.active = True
    try:
        with httpx.Client() as http:
            started = time.monotonic()
            for endpoint, parameters in endpoints.items():
                if endpoint in (skip or ()) or (
                        max_minutes is not None and time.monotonic() - started > 60 * max_minutes):
                    report.skipped.append(endpoint)
                    continue
                stats = {"cases": 0, "invalid": 0, "errors": 0, "reached_model": 0, "ignored": 0,
                         "slowest_s": 0.0, "failures": 0, "largest_answer_kb": 0.0}
                base_args = default_args(parameters)
                names = [p["parameter_name"] for p in parameters]
                for case in make_cases(endpoint, parameters, cases_per_endpoint, rng, max_huge,
                                       strict_only):
                    args = list(base_args)
                    for name, value in case.changes.items():
                        args[names.index(name)] = value.make()
                    touches = guard.touches
                    answer = call(http, url, endpoint, args, timeout=max(any_s, invalid_s) + 30)
                    del args
                    touched = guard.touches - touches
                    report.cases += 1
                    stats["cases"] += 1
                    stats["slowest_s"] = max(stats["slowest_s"], answer.seconds)
                    stats["largest_answer_kb"] = max(stats["largest_answer_kb"],
                                                     round(answer.chars / 1024, 1))
                    report.slowest_any_s = max(report.slowest_any_s, answer.seconds)
                    report.errors += not answer.ok
                    stats["errors"] += not answer.ok
                    report.reached_model += touched > 0
                    stats["reached_model"] += touched > 0
                    before = len(report.failures)
                    if answer.status in ("transport", "timeout", "unsent") or answer.status.startswith("http 5"):
                        report.fail(case, "no answer", answer)
                    if case.invalid:
                        report.invalid += 1
                        stats["invalid"] += 1
                        report.slowest_invalid_s = max(report.slowest_invalid_s, answer.seconds)
                        report.invalid_seconds.append(answer.seconds)
                        if (answer.ok or touched) and not case.strict:
                            report.ignored += 1
                            stats["ignored"] += 1
                            report.ignored_params.add(f"{endpoint} {case.label()}")
                        elif answer.ok:
                            report.fail(case, "invalid input accepted", answer)
                        elif not answer.message:
                            report.fail(case, "error without a message", answer)
                        if touched and case.strict:
                            report.fail(case, "invalid input reached the model", answer)
                        if answer.seconds > invalid_s:
                            # an ignored value's case completes (status "complete", no message):
                            # it is its answer that was slow, not an error without words
                            what = "error" if not answer.ok else "answer (accepted)"
                            report.fail(case, f"{what} took more than {invalid_s} s", answer)
                    if answer.seconds > any_s:
                        report.fail(case, f"answer took more than {any_s} s", answer)
                    if answer.message and LEAK.search(without_echo(answer.message, case)):
                        report.fail(case, "traceback or path in the message", answer)
                    if answer.message and len(answer.message) > MAX_MESSAGE_CHARS:
                        report.fail(case, f"message of {len(answer.message):,} characters", answer)
                    stats["failures"] += len(report.failures) - before
                    report.rss_peak_mb = max(report.rss_peak_mb, rss_bytes() / MB)
                if probe is not None:
                    guard.active = False
                    alive = call(http, url, probe, default_args(all_endpoints[probe]), 60)
                    guard.active = True
                    if not alive.ok:
                        report.fail(Case(probe, {}), f"server not answering after {endpoint}", alive)
                stats["slowest_s"] = round(stats["slowest_s"], 3)
                # live RSS (after gc and malloc_trim) once this endpoint's batch is answered,
                # and its change over the batch: which endpoint the run's growth came with
                live = live_rss_bytes() / MB
                stats["rss_live_mb"] = round(live, 1)
                stats["rss_growth_mb"] = round(live - last_live, 1)
                last_live = live
                reasons: dict = {}   # this endpoint's failures by reason, printed as it ends
                for failure in report.failures:
                    if failure.get("endpoint") == endpoint:
                        why = re.sub(r"[\d.]+ s$", "N s", failure["why"])
                        reasons[why] = reasons.get(why, 0) + 1
                stats["failure_reasons"] = reasons
                report.per_endpoint[endpoint] = stats
                log(f"{endpoint}: {stats}")
                sys.stdout.flush()
    finally:
        guard.active = False
    report.rss_end_mb = live_rss_bytes() / MB
    if report.rss_end_mb - report.rss_start_mb > rss_mb:
        report.failures.append({"why": f"RSS grew {report.rss_end_mb - report.rss_start_mb:.0f} MB "
                                       f"(> {rss_mb} MB)"})
    return report


def warm_defaults(url: str, guard: ModelGuard, only: Optional[list[str]] = None,
                  skip: Optional[list[str]] = None) -> None:
    """Each endpoint once with its API defaults, a valid request for most: a handler's first
    real run builds what it keeps for every later run (the Flash timing's first sweep: +124 MB
    of live RSS, then +0.5 MB over 50 more; the claims board's first build: +127 MB, then +0.6
    MB over 30; docs/HARDENING.md), which is not growth of the fuzz. The guard stays active."""
    import httpx

    endpoints = endpoints_of(url)
    guard.active = True
    try:
        with httpx.Client() as http:
            for endpoint in only or endpoints:
                if endpoint not in (skip or ()):
                    call(http, url, endpoint, default_args(endpoints[endpoint]), timeout=120)
    finally:
        guard.active = False


def sessions_held(demo) -> int:
    """How many sessions Gradio's state holder keeps (each with its inputs' and outputs' last
    values: bounded by the app's state_session_capacity)."""
    holder = getattr(demo, "state_holder", None)
    return len(getattr(holder, "session_data", ()))


def queue_records(demo) -> dict:
    """What Gradio's queue keeps per session after its events finished: a message queue each
    (an LRU of 2,000 sessions) and a set of pending event ids, emptied when its event ends but
    kept as an empty set (Gradio 6.31 removes a session's entry only when its stream is cut)."""
    queue = getattr(demo, "_queue", None)
    return {"queue_id_sets": len(getattr(queue, "pending_event_ids_session", ())),
            "queue_message_queues": len(getattr(queue, "pending_messages_per_session", ()))}


def repeat(url: str, guard: ModelGuard, demo, endpoint: str, times: int, every: int,
           log: Callable[[str], None] = print, top: int = 0) -> list[dict]:
    """Call one endpoint `times` times with its API defaults, each call a new session (as the
    fuzz does), and read the live RSS (after gc and malloc_trim) and the sessions held every
    `every` calls: a leak grows with every call; memory that per-session records hold stops
    growing once the session cap is reached. top > 0: also compare tracemalloc snapshots taken
    at the first and the last reading, and log the `top` largest growths by source line."""
    import httpx
    import tracemalloc

    parameters = endpoints_of(url)[endpoint]
    args = default_args(parameters)
    rows, first = [], None
    guard.active = True
    try:
        with httpx.Client() as http:
            for i in range(times + 1):
                if i % every == 0:
                    row = {"calls": i, "rss_live_mb": round(live_rss_bytes() / MB, 1),
                           "sessions": sessions_held(demo), **queue_records(demo)}
                    rows.append(row)
                    log(json.dumps(row))
                    if top and first is None:
                        tracemalloc.start(1)
                        first = tracemalloc.take_snapshot()
                if i == times:
                    break
                answer = call(http, url, endpoint, list(args), timeout=120)
                if i == 0:
                    log(json.dumps({"endpoint": endpoint, "ok": answer.ok, "seconds":
                                    round(answer.seconds, 3), "answer_kb": round(answer.chars / 1024, 1),
                                    "message": (answer.message or "")[:200]}))
    finally:
        guard.active = False
    if first is not None:
        gc.collect()
        last = tracemalloc.take_snapshot()
        tracemalloc.stop()
        for stat in last.compare_to(first, "lineno")[:top]:
            log(f"tracemalloc {stat.size_diff / MB:+.1f} MB {stat.count_diff:+d} blocks "
                f"{stat.traceback[0].filename.split('site-packages/')[-1]}:{stat.traceback[0].lineno}")
    return rows


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=500, help="cases per endpoint")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--endpoints", help="comma-separated api names (default: all)")
    parser.add_argument("--invalid-s", type=float, default=1.0)
    parser.add_argument("--any-s", type=float, default=30.0)
    parser.add_argument("--rss-mb", type=float, default=50.0)
    parser.add_argument("--strict-only", action="store_true",
                        help="only values every handler must refuse, and texts (no heavy runs)")
    parser.add_argument("--max-huge", type=int, default=3, help="multi-MB cases per endpoint")
    parser.add_argument("--max-minutes", type=float,
                        help="start no endpoint after this many minutes (the rest are listed as skipped)")
    parser.add_argument("--skip", help="comma-separated api names not to fuzz")
    parser.add_argument("--json", help="write the report here")
    parser.add_argument("--passes", type=int, default=1,
                        help="run the same cases this many times (the report is the last pass's)")
    parser.add_argument("--repeat", metavar="ENDPOINT",
                        help="instead of fuzzing: call this endpoint with its defaults --times "
                             "times, one session each, reading live RSS every --every calls")
    parser.add_argument("--times", type=int, default=400)
    parser.add_argument("--every", type=int, default=50)
    parser.add_argument("--tracemalloc", type=int, default=0, metavar="TOP",
                        help="with --repeat: the TOP largest heap growths by source line")
    parser.add_argument("--sessions", type=int,
                        help="the app's state session cap for this run (default: the app's)")
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    started = time.perf_counter()
    if args.sessions:
        import app

        app.WEB = dataclasses.replace(app.WEB, state_sessions=args.sessions)
    url, demo, runtime, guard = serve()
    for name in runtime.names():   # load every model first: loading is not growth
        runtime.get(name)
    if args.repeat:
        try:
            # the first calls build what a handler computes once (caches, a shared result):
            # read before and after them, and measure growth from after them
            before = {"calls": "before the first call", "rss_live_mb": round(live_rss_bytes() / MB, 1)}
            print(json.dumps(before))
            repeat(url, guard, demo, args.repeat, 2, 1, log=lambda line: None)
            rows = repeat(url, guard, demo, args.repeat, args.times, args.every, top=args.tracemalloc)
            rows.insert(0, before)
        finally:
            demo.close()
        if args.json:
            Path(args.json).write_text(json.dumps(rows, indent=1))
        print(json.dumps({"endpoint": args.repeat, "first_calls_mb": round(rows[1]["rss_live_mb"] - rows[0]["rss_live_mb"], 1),
                          "growth_mb": round(rows[-1]["rss_live_mb"] - rows[1]["rss_live_mb"], 1),
                          "wall_s": round(time.perf_counter() - started, 1)}))
        return 0
    try:
        # a first pass warms every handler's imports and caches: growth is measured after it
        fuzz(url, guard, min(args.cases, 6), seed=args.seed + 1,
             only=args.endpoints.split(",") if args.endpoints else None, log=lambda line: None,
             strict_only=args.strict_only, skip=args.skip.split(",") if args.skip else None)
        warm_defaults(url, guard, args.endpoints.split(",") if args.endpoints else None,
                      args.skip.split(",") if args.skip else None)
        for done in range(args.passes):
            # the same cases again (seed): growth that recurs every pass is a leak; growth of
            # the first pass only is what the handlers build once for the largest inputs
            report = fuzz(url, guard, args.cases, seed=args.seed,
                          only=args.endpoints.split(",") if args.endpoints else None,
                          invalid_s=args.invalid_s, any_s=args.any_s, rss_mb=args.rss_mb,
                          max_huge=args.max_huge, strict_only=args.strict_only,
                          max_minutes=args.max_minutes,
                          skip=args.skip.split(",") if args.skip else None)
            if args.passes > 1:
                print(json.dumps({"pass": done + 1, "rss_start_mb": round(report.rss_start_mb, 1),
                                  "rss_end_mb": round(report.rss_end_mb, 1),
                                  "failures": len(report.failures)}))
    finally:
        demo.close()
    summary = {k: v for k, v in report.__dict__.items() if k not in ("per_endpoint", "invalid_seconds")}
    times = sorted(report.invalid_seconds) or [0.0]
    summary["invalid_p50_s"] = round(times[len(times) // 2], 3)
    summary["invalid_p99_s"] = round(times[min(len(times) - 1, int(0.99 * len(times)))], 3)
    summary["endpoints"] = len(report.per_endpoint)
    summary["ignored_params"] = sorted({label.split("=")[0] for label in report.ignored_params})
    summary["wall_s"] = round(time.perf_counter() - started, 1)
    for key in ("slowest_invalid_s", "slowest_any_s", "rss_start_mb", "rss_end_mb", "rss_peak_mb"):
        summary[key] = round(summary[key], 3)
    if args.json:
        Path(args.json).write_text(json.dumps({**summary, "per_endpoint": report.per_endpoint},
                                              indent=1, ensure_ascii=False))
    for failure in report.failures[:40]:
        print("FAIL", json.dumps(failure, ensure_ascii=False))
    print(json.dumps(summary, ensure_ascii=False))
    return 1 if report.failures else 0


if __name__ == "__main__":
    sys.exit(main())
