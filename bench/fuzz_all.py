"""Fuzz every event handler of the built app, the private ones included, by fn_index.

    .venv/bin/python -m bench.fuzz_all --cases 6                   # every handler (>= 500 cases)
    .venv/bin/python -m bench.fuzz_all --cases 3 --json out.json   # a shorter pass

bench/fuzz.py reads the API description (view_api), which lists only the public endpoints; an
event with api_visibility="private" is still callable by anyone who reads the page's config:
POST /gradio_api/queue/join with its fn_index (a queued event, then its stream on
/gradio_api/queue/data), or POST /gradio_api/run/predict with its fn_index (an event with
queue=False), as the page itself does. Here the events are enumerated from the built Blocks
(`demo.fns`), so whatever a tab, the lesson panel or the link machinery adds is covered
without a change: every event with a Python function, each sent `--cases` cases. A case is the
event's inputs at their components' current values (what the page would send; None for a
gr.State, which the server fills in itself) with one to three of them replaced by a hostile
value chosen by the component's type: texts of 0.9 MB and past the body bound, control,
bidirectional and special-token texts, lone surrogates, NaN, +-inf, 10**400, negatives, values
outside a choice's options, wrong types, long lists, nested dicts and lists nested 400 deep.

Checks, per case: the server answers (no dropped connection, no timeout, no 5xx: a refusal on
the direct route is a 400, explorer/web/direct_errors.py); an error has a
message, holds no traceback, source file or server path, and is at most 1,000 characters; a
value no handler may accept (a choice outside the options, a blank or oversized text) never
reaches the model (the guard of bench/fuzz.py refuses and counts forward passes). After each
event's batch a cheap public endpoint must still answer. The last line is a JSON summary; the
exit status is 1 when a check failed.
"""
from __future__ import annotations

import argparse
import json
import math
import random
import re
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.fuzz import LEAK, MAX_MESSAGE_CHARS, call, endpoints_of, serve, without_echo  # noqa: E402
from bench.fuzz_values import (MB, Value, bool_values, choice_values, default_args,  # noqa: E402
                               number_values, text_values)

# Gradio's own processing error: it names the event's function and components, and the server
# logs a traceback (a component whose check lets a value through to a TypeError)
GRADIO_INTERNALS = re.compile(r"Could not preprocess|event handler \(named")
DEEP = 400   # nesting depth of the deep list / dict values (Python's JSON parser allows ~1,000)


def _nested_dict(depth: int) -> dict:
    value: Any = "leaf"
    for i in range(depth):
        value = {f"k{i}": value, "n": math.nan if i % 50 == 0 else i}
    return value


def _deep_list(depth: int) -> list:
    value: Any = []
    for _ in range(depth):
        value = [value]
    return value


def structure_values() -> list[Value]:
    """Values every component type is sent: structures it never takes."""
    return [
        Value("nested dict x400", lambda: _nested_dict(DEEP), False),
        Value("list nested 400 deep", lambda: _deep_list(DEEP), False),
        Value("10k-element list", lambda: list(range(10_000)), False),
        Value("list of NaN", lambda: [math.nan, math.inf, -math.inf], False),
        Value("0.9 MB text", lambda: "é" * 450_000, False, huge=True),
        Value("unicode", lambda: "注意力 \u202e\u0000 👩‍👩‍👧 \ud800", False),
        Value("negative", lambda: -(2**31), False),
    ]


def values_for_block(block) -> list[Value]:
    """Hostile values by the input component's type (bench.fuzz's sets, plus structures)."""
    kind = type(block).__name__
    if kind in ("Textbox", "TextArea", "Code"):
        own = text_values("text")
    elif kind in ("Number", "Slider"):
        own = number_values("number")
    elif kind in ("Dropdown", "Radio", "CheckboxGroup"):
        options = [c[1] if isinstance(c, (tuple, list)) else c for c in getattr(block, "choices", None) or []]
        own = choice_values("choice", options)
    elif kind == "Checkbox":
        own = bool_values("flag")
    else:   # a gr.State (the server uses its own copy), and any other component
        own = [Value("string", lambda: "x", False), Value("None", lambda: None, False),
               Value("NaN", lambda: math.nan, False)]
    return own + structure_values()


def _page_value(block) -> Any:
    """What the page would send for this input: its current value (None for a State)."""
    if type(block).__name__ == "State":
        return None
    value = getattr(block, "value", None)
    return None if callable(value) else value


@dataclass
class Event:
    fn_index: int
    name: str            # api_name or the function's name, for the report
    queued: bool
    visibility: str
    blocks: list         # the input components, in order


def events_of(demo) -> list[Event]:
    """Every event of the built app whose function runs on the server."""
    found = []
    for index, fn in sorted(demo.fns.items()):
        if fn.fn is None:
            continue
        name = fn.api_name or getattr(fn.fn, "__name__", None) or fn.name or str(index)
        found.append(Event(index, str(name), bool(fn.queue), str(getattr(fn, "api_visibility", "")),
                           list(fn.inputs)))
    return found


@dataclass
class Case:
    changes: dict        # input position -> Value

    @property
    def strict_invalid(self) -> bool:
        return any(v.invalid and v.strict for v in self.changes.values())

    def label(self, event: Event) -> str:
        return ", ".join(f"{type(event.blocks[i]).__name__}#{i}={v.label}" for i, v in self.changes.items())


def make_cases(event: Event, n: int, rng: random.Random, max_huge: int = 1) -> list[Case]:
    """n cases: each input's values in turn first (so a small n reaches every input), then
    random changes of 1-3 inputs. At most `max_huge` multi-MB values per event."""
    pools = {i: values_for_block(block) for i, block in enumerate(event.blocks)}
    if not pools:
        return [Case({}) for _ in range(min(n, 2))]
    single = [(i, v) for i, values in pools.items() for v in values]
    rng.shuffle(single)
    cases, huge = [], 0
    for i, value in single:
        if len(cases) >= n:
            return cases
        if value.huge:
            if huge >= max_huge:
                continue
            huge += 1
        cases.append(Case({i: value}))
    while len(cases) < n:
        picked = rng.sample(list(pools), min(len(pools), rng.choice((1, 2, 3))))
        cases.append(Case({i: rng.choice([v for v in pools[i] if not v.huge]) for i in picked}))
    return cases


@dataclass
class Answer:
    ok: bool
    message: Optional[str]
    seconds: float
    status: str


def call_fn(http, base: str, event: Event, args: list, timeout: float) -> Answer:
    """The event by fn_index as the page calls it, from a new session."""
    start = time.perf_counter()
    session = uuid.uuid4().hex[:11]
    try:
        body = json.dumps({"data": args, "fn_index": event.fn_index, "session_hash": session,
                           "event_data": None, "trigger_id": None}, allow_nan=True)
    except (ValueError, OverflowError, RecursionError) as error:
        return Answer(False, f"client could not encode: {error}", 0.0, "unsent")
    headers = {"Content-Type": "application/json"}
    try:
        if not event.queued:
            response = http.post(f"{base}gradio_api/run/predict", content=body, headers=headers,
                                 timeout=timeout)
            seconds = time.perf_counter() - start
            if response.status_code == 200:
                return Answer(True, None, seconds, "complete")
            return Answer(False, _message_of(response), seconds, f"http {response.status_code}")
        posted = http.post(f"{base}gradio_api/queue/join", content=body, headers=headers, timeout=timeout)
        if posted.status_code != 200:
            return Answer(False, _message_of(posted), time.perf_counter() - start, f"http {posted.status_code}")
        with http.stream("GET", f"{base}gradio_api/queue/data", params={"session_hash": session},
                         timeout=timeout) as stream:
            for line in stream.iter_lines():
                if time.perf_counter() - start > timeout:
                    return Answer(False, "timed out", time.perf_counter() - start, "timeout")
                if not line.startswith("data:"):
                    continue
                message = json.loads(line[5:])
                kind = message.get("msg")
                if kind == "process_completed":
                    seconds = time.perf_counter() - start
                    if message.get("success"):
                        return Answer(True, None, seconds, "complete")
                    output = message.get("output") or {}
                    text = output.get("error") or message.get("title")
                    return Answer(False, None if text is None else str(text), seconds, "error")
                if kind in ("unexpected_error", "close_stream"):
                    return Answer(False, message.get("message"), time.perf_counter() - start, kind)
        return Answer(False, None, time.perf_counter() - start, "closed")
    except Exception as error:   # a dropped connection, a read timeout: the server is in trouble
        return Answer(False, f"{type(error).__name__}: {error}", time.perf_counter() - start, "transport")


def _message_of(response) -> Optional[str]:
    try:
        body = response.json()
    except ValueError:
        return response.text[:500] or None
    if isinstance(body, dict):
        text = body.get("error") or body.get("detail")
        return None if text is None else str(text)
    return str(body)[:500]


@dataclass
class Report:
    events: int = 0
    private: int = 0
    cases: int = 0
    errors: int = 0
    results: int = 0
    accepted_strict_invalid: int = 0    # a private event that ignores the input (recorded)
    reached_model: int = 0
    failures: list = field(default_factory=list)
    slowest_s: float = 0.0
    per_event: dict = field(default_factory=dict)

    def fail(self, event: Event, case: Case, why: str, answer: Answer) -> None:
        if len(self.failures) < 1000:
            self.failures.append({"fn_index": event.fn_index, "event": event.name,
                                  "case": case.label(event), "why": why, "status": answer.status,
                                  "seconds": round(answer.seconds, 3),
                                  "message": (answer.message or "")[:300]})


def fuzz_events(url: str, demo, guard, cases_per_event: int, *, seed: int = 0,
                any_s: float = 30.0, only: Optional[Callable[[Event], bool]] = None,
                log: Callable[[str], None] = print) -> Report:
    import httpx

    events = [e for e in events_of(demo) if only is None or only(e)]
    probe = "/rope_frequencies" if "/rope_frequencies" in endpoints_of(url) else None
    probe_args = default_args(endpoints_of(url)[probe]) if probe else None
    report = Report()
    rng = random.Random(seed)
    guard.active = True
    try:
        with httpx.Client() as http:
            for event in events:
                report.events += 1
                report.private += event.visibility == "private"
                defaults = [_page_value(block) for block in event.blocks]
                stats = {"name": event.name, "visibility": event.visibility, "queued": event.queued,
                         "cases": 0, "errors": 0, "failures": 0}
                before_failures = len(report.failures)
                for case in make_cases(event, cases_per_event, rng):
                    args = list(defaults)
                    for i, value in case.changes.items():
                        args[i] = value.make()
                    touches = guard.touches
                    answer = call_fn(http, url, event, args, timeout=any_s + 30)
                    del args
                    touched = guard.touches > touches
                    report.cases += 1
                    stats["cases"] += 1
                    report.slowest_s = max(report.slowest_s, answer.seconds)
                    report.reached_model += touched
                    if answer.ok:
                        report.results += 1
                    else:
                        report.errors += 1
                        stats["errors"] += 1
                        messages = stats.setdefault("messages", {})   # a few, for the report
                        if len(messages) < 3:
                            key = f"{answer.status}: {(answer.message or '')[:120]}"
                            messages[key] = messages.get(key, 0) + 1
                    if answer.status in ("transport", "timeout", "unsent", "closed", "unexpected_error"):
                        report.fail(event, case, "no answer", answer)
                    elif answer.status.startswith("http 5"):
                        report.fail(event, case, "server error", answer)
                    if not answer.ok and answer.status not in ("transport", "timeout") and not answer.message:
                        report.fail(event, case, "error without a message", answer)
                    if answer.message and LEAK.search(without_echo(answer.message, case)):
                        report.fail(event, case, "traceback or path in the message", answer)
                    if answer.message and GRADIO_INTERNALS.search(answer.message):
                        report.fail(event, case, "Gradio's processing error (names the handler)", answer)
                    if answer.message and len(answer.message) > MAX_MESSAGE_CHARS:
                        report.fail(event, case, f"message of {len(answer.message):,} characters", answer)
                    if answer.seconds > any_s:
                        report.fail(event, case, f"answer took more than {any_s} s", answer)
                    if case.strict_invalid:
                        report.accepted_strict_invalid += answer.ok
                        if answer.ok:   # an input this event does not read (listed in the report)
                            stats.setdefault("accepted_invalid", []).append(case.label(event))
                        if touched:
                            report.fail(event, case, "invalid input reached the model", answer)
                if probe:
                    guard.active = False
                    alive = call(http, url, probe, list(probe_args), 60)
                    guard.active = True
                    if not alive.ok:
                        report.fail(event, Case({}), f"server not answering after fn {event.fn_index}",
                                    Answer(False, alive.message, alive.seconds, alive.status))
                stats["failures"] = len(report.failures) - before_failures
                report.per_event[event.fn_index] = stats
                log(f"fn {event.fn_index} {event.name} ({event.visibility}, "
                    f"{'queued' if event.queued else 'direct'}): {stats['cases']} cases, "
                    f"{stats['errors']} errors, {stats['failures']} failures")
    finally:
        guard.active = False
    return report


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=6, help="cases per event")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--any-s", type=float, default=30.0)
    parser.add_argument("--json", help="write the report here")
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    started = time.perf_counter()
    url, demo, runtime, guard = serve()
    try:
        for name in runtime.names():   # loaded first: a load is not what a case measures
            runtime.get(name)
        report = fuzz_events(url, demo, guard, args.cases, seed=args.seed, any_s=args.any_s)
    finally:
        demo.close()
    summary = {k: v for k, v in report.__dict__.items() if k != "per_event"}
    summary["slowest_s"] = round(report.slowest_s, 3)
    summary["wall_s"] = round(time.perf_counter() - started, 1)
    if args.json:
        Path(args.json).write_text(json.dumps({**summary, "per_event": report.per_event}, indent=1,
                                              ensure_ascii=False))
    for failure in report.failures[:40]:
        print("FAIL", json.dumps(failure, ensure_ascii=False))
    summary["failures"] = len(report.failures)
    print(json.dumps(summary, ensure_ascii=False))
    return 1 if report.failures else 0


if __name__ == "__main__":
    sys.exit(main())
