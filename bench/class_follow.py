"""A live class under load: 1 teacher and N students (default 40) on the app served in this
process, the students as HTTP clients doing what the page does (not N browsers).

    python bench/class_follow.py                       # 40 students, 8 moves, a 1 s poll
    python bench/class_follow.py --students 40 --moves 12 --json out.json

Each student joins by code (POST /gradio_api/run/class_join, its own session) and, as the page's
gr.Timer does, asks the room's revision at its ticks every POLL_S seconds from a random phase, a
long poll (GET /class/revision?room=CODE&since=N, explorer/web/class_route.py: answered when
the revision is not N, one in flight at a time); when it changed, it calls the page's
poll (POST /gradio_api/run/class_poll), whose answer carries the teacher's move to apply.
The teacher (gradio_client, its own session) starts the class and moves through the KV-cache
lesson's steps every few seconds (/class_move, the call the lesson panel chains on each step).
Measured per move and student: the time from the teacher's move being sent to the student's
poll answering with that move (what the page then applies); at the predict step every student
answers once at a random moment within 3 s (/class_answer), the teacher's poll waits for
"N of N answered", reveals, and the histogram must hold N answers.
Then (--generate TOKENS, default 48; 0 skips it) the class generates on the same step: every
student presses Start at once on the Generate tab's default prompt (bench/classroom.py's raw
client: one POST and one event stream, as the page does), and the time to first token p50 / p95
and the tokens/s are printed beside the follow figures: the issue's whole goal in one command.
Prints p50 / p95 / max of the follow time, the poll's own latency and the answers collected.

All students come from 127.0.0.1 here; in a class they are laptops with addresses of their own,
so the per-address bounds are lifted for this process (as bench/ceilings.py's server does).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import secrets
import sys
import time
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
for _name in ("EXPLORER_MAX_RUNS_PER_ADDRESS", "EXPLORER_WAITING_PER_ADDRESS",
              "EXPLORER_NEW_SESSIONS_PER_MINUTE", "EXPLORER_SESSIONS_PER_ADDRESS"):
    os.environ.setdefault(_name, "1000000")

STEPS = ["?lesson=kv-cache&step=1", "?lesson=kv-cache&step=2", "?lesson=kv-cache&step=3"]
PREDICT = STEPS[1]


def pending_link(out) -> Optional[str]:
    """The link of the move a class_poll answer carries (its 9th output, the pending move as
    JSON), or None."""
    pending = out[8] if len(out) > 8 else None
    if isinstance(pending, str) and pending.startswith("{"):
        return json.loads(pending)["link"]
    return None


def percentile(values, q):
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


class Student:
    def __init__(self, http, url, index):
        self.http, self.url, self.index = http, url, index
        self.session = secrets.token_hex(8)
        self.seen: dict[str, float] = {}      # link -> when the poll first carried it
        self.seen_log: list[tuple[str, float]] = []   # every (link, when) a poll carried
        self.poll_times: list[float] = []     # the revision's GET
        self.event_times: list[float] = []    # the Gradio poll, called on a change
        self.errors = 0

    async def call(self, name, data):
        response = await self.http.post(f"{self.url}gradio_api/run/{name}",
                                        json={"data": data, "session_hash": self.session})
        response.raise_for_status()
        return response.json()["data"]

    async def join(self, code):
        await self.call("class_join", [code, f"s{self.index}", None, "en"])

    async def poll_forever(self, code, period, stop):
        await asyncio.sleep(random.random() * period)
        phase = time.perf_counter()
        revision = None
        while not stop.is_set():
            started = time.perf_counter()
            out = []
            try:
                # a long poll, as the page asks (since= the revision it shows)
                since = f"&since={revision}" if revision else ""
                answer = await self.http.get(f"{self.url}class/revision?room={code}{since}",
                                             timeout=60)
                answer.raise_for_status()
                self.poll_times.append(time.perf_counter() - started)
                if answer.text != revision:
                    revision = answer.text
                    called = time.perf_counter()
                    out = await self.call("class_poll", [None, None, "en"])   # state, follow (session), lang
                    self.event_times.append(time.perf_counter() - called)
            except Exception:
                self.errors += 1
            now = time.perf_counter()
            link = pending_link(out)
            if link is not None:
                self.seen.setdefault(link, now)
                self.seen_log.append((link, now))
            # the page's timer starts the next read at its next tick
            elapsed = time.perf_counter() - phase
            await asyncio.sleep(period * (int(elapsed / period) + 1) - elapsed)

    async def answer(self, value):
        await asyncio.sleep(random.random() * 3.0)
        try:
            await self.call("class_answer", [None, PREDICT, value, "en"])
        except Exception:
            self.errors += 1


async def students_process(url, code, n, period, generate=0, model=None):
    """The students (a child process of their own, so that their client work never competes with
    the server for its interpreter): join, poll until stdin closes, answer the predict step once
    it reaches them (at a random moment within 3 s), then, with `generate` tokens, all press
    Start together; print what they saw as JSON."""
    import httpx

    limits = httpx.Limits(max_connections=n + 4, max_keepalive_connections=n + 4)
    async with httpx.AsyncClient(timeout=30, limits=limits) as http:
        students = [Student(http, url, i) for i in range(n)]
        await asyncio.gather(*(s.join(code) for s in students))
        print("joined", flush=True)
        stop = asyncio.Event()
        pollers = [asyncio.create_task(s.poll_forever(code, period, stop)) for s in students]


        async def answer_when_asked(s):
            while PREDICT not in s.seen and not stop.is_set():
                await asyncio.sleep(0.05)
            if not stop.is_set():
                await s.answer(random.randint(3000, 6000))
        answers = [asyncio.create_task(answer_when_asked(s)) for s in students]
        await asyncio.to_thread(sys.stdin.read)      # the parent closes it when done
        stop.set()
        await asyncio.gather(*pollers, *answers)
    generated = {}
    if generate:
        from bench.classroom import run_raw_level, summarize
        streams, wall = await asyncio.to_thread(run_raw_level, url, model, n, generate,
                                                timeout_s=600.0)
        generated = summarize(n, streams, wall)
        generated["error_texts"] = sorted({s.error for s in streams if s.error})[:3]
    print(json.dumps({"generated": generated,
                      "seen": [[s.index, link, t] for s in students for link, t in s.seen_log],
                      "polls": [t for s in students for t in s.poll_times],
                      "events": [t for s in students for t in s.event_times],
                      "errors": sum(s.errors for s in students)}), flush=True)


async def run(url, n, moves, period, gap, generate=0, model=None):
    import subprocess
    from gradio_client import Client
    from explorer.classroom.rooms import ROOMS

    # when each move reached the store (the server runs in this process): the follow time is
    # given from the teacher's press (the move's request sent) and from the store's update
    stored: list[tuple[str, float, float]] = []       # (link, sent, stored)
    original = ROOMS.follow
    sent_at = {"t": 0.0}

    def follow_timed(code, secret, link, bounds=None):
        moves_now = original(code, secret, link, bounds)
        stored.append((link, sent_at["t"], time.perf_counter()))
        return moves_now
    ROOMS.follow = follow_timed

    teacher = await asyncio.to_thread(Client, url, verbose=False)
    out = await asyncio.to_thread(teacher.predict, "en", api_name="/class_start")
    code = next(o for o in out if isinstance(o, str) and "`" in o).split("`")[1]
    child = subprocess.Popen([sys.executable, __file__, "--as-students", url, code, "--students", str(n),
                              "--period", str(period), "--generate", str(generate),
                              "--model", str(model)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True)
    assert (await asyncio.to_thread(child.stdout.readline)).strip() == "joined"
    await asyncio.sleep(period * 2)
    answered = revealed = 0
    # the moves: steps 1, 2, 3, 1, 2, 3, ... (each link differs from the last: each is a move)
    for k in range(moves):
        link = STEPS[k % len(STEPS)]
        sent_at["t"] = time.perf_counter()
        await asyncio.to_thread(teacher.predict, link, "en", api_name="/class_move")
        await asyncio.sleep(gap)
        if link == PREDICT and not answered:
            answered = await count_answered(teacher, n)
            await asyncio.to_thread(teacher.predict, "en", api_name="/class_reveal")
            revealed = await revealed_count(code)
    child.stdin.close()
    seen = json.loads(await asyncio.to_thread(child.stdout.read))
    child.wait()
    ROOMS.follow = original
    follow, after_store, missed = [], [], 0
    for link, sent, at in stored:       # each move: the first poll after it that carried it
        by_student = {}
        for index, seen_link, t in seen["seen"]:
            if seen_link == link and t >= sent:
                by_student[index] = min(t, by_student.get(index, t))
        missed += n - len(by_student)
        follow += [t - sent for t in by_student.values()]
        after_store += [t - at for t in by_student.values()]
    polls, events = seen["polls"], seen["events"]
    return {"students": n, "moves": moves, "poll_period_s": period,
            "follow_p50_s": percentile(follow, 50), "follow_p95_s": percentile(follow, 95),
            "follow_max_s": max(follow) if follow else float("nan"), "follows": len(follow),
            "after_store_p50_s": percentile(after_store, 50), "after_store_p95_s": percentile(after_store, 95),
            "missed": missed, "poll_p50_ms": 1000 * percentile(polls, 50),
            "poll_p95_ms": 1000 * percentile(polls, 95), "polls": len(polls),
            "poll_event_p50_ms": 1000 * percentile(events, 50),
            "poll_event_p95_ms": 1000 * percentile(events, 95), "poll_events": len(events),
            "answered": answered, "revealed_in_histogram": revealed, "errors": seen["errors"],
            "generated": seen.get("generated") or {}}


async def count_answered(teacher, n, timeout=15.0):
    """The teacher page's line: "k of n answered" (its own poll), until all answered."""
    import re
    deadline = time.perf_counter() + timeout
    k = 0
    while time.perf_counter() < deadline:
        out = await asyncio.to_thread(teacher.predict, "en", api_name="/class_poll")
        for o in out if isinstance(out, (list, tuple)) else [out]:
            found = re.search(r"(\d+) of (\d+) answered", o) if isinstance(o, str) else None
            if found:
                k = int(found.group(1))
        if k >= n:
            break
        await asyncio.sleep(0.5)
    return k


async def revealed_count(code):
    from explorer.classroom.rooms import ROOMS
    with ROOMS._lock:
        step = ROOMS._rooms[code].questions[PREDICT]
        return len(step.answers) if step.revealed else 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=40)
    parser.add_argument("--moves", type=int, default=8)
    parser.add_argument("--period", type=float, default=None, help="poll period (default: the page's)")
    parser.add_argument("--gap", type=float, default=4.0, help="seconds between the teacher's moves")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--generate", type=int, default=48,
                        help="then every student presses Start together, this many new tokens (0: skip)")
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--as-students", nargs=2, metavar=("URL", "CODE"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.as_students:
        from explorer.ui.page.classroom import POLL_S
        asyncio.run(students_process(*args.as_students, args.students, args.period or POLL_S,
                                     args.generate, args.model))
        return 0
    from explorer.runtime import Runtime
    from explorer.ui.page.classroom import POLL_S
    from bench.serve import served

    period = args.period or POLL_S
    runtime = Runtime()
    tabs = ("explorer.ui.tabs.classroom",) + (("explorer.ui.tabs.generate",) if args.generate else ())
    if args.generate:
        runtime.get(args.model)      # loaded before the class starts, as a served app has it
    with served(runtime, tabs) as app:
        result = asyncio.run(run(app.url, args.students, args.moves, period, args.gap,
                                 args.generate, args.model))
    result["cpu_count"] = os.cpu_count()
    result["load_avg_1m"] = os.getloadavg()[0]
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    ok = result["answered"] == args.students and result["revealed_in_histogram"] == args.students
    generated = result["generated"]
    if args.generate:
        ok = ok and generated.get("done") == args.students
        print(f"FOLLOW p95 {result['follow_p95_s']:.2f} s (goal <= 1); answers {result['answered']}"
              f"/{args.students} revealed {result['revealed_in_histogram']}; generating together: "
              f"TTFT p95 {generated.get('ttft_p95') or float('nan'):.2f} s (goal <= 5), "
              f"{generated.get('aggregate', 0):.1f} tokens/s in all, slowest stream "
              f"{generated.get('min_rate') or float('nan'):.1f} tokens/s, "
              f"{generated.get('errors')} errors, {generated.get('busy')} busy")
    return 0 if ok and not result["missed"] else 1


if __name__ == "__main__":
    sys.exit(main())
