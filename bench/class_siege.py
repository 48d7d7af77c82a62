"""A class under siege (issue 41's proof): a class of N students (default 40) joined through one
address with the Space's default settings keeps working while a hostile client of the same
address floods joins, answers, code probes and slow bodies; the server's RSS sampled throughout.

    python -m bench.class_siege                              # 30 minutes, 40 students
    python -m bench.class_siege --minutes 1 --students 12 --json out.json

The app is served in this process (bench/serve.py, the Class tab) with SPACE_ID set as on a
Space, so the server trusts one proxy (admission.trust_proxy_setting) and no per-address bound
is lifted (bench/class_follow.py lifts them: not here). Every client reaches it from 127.0.0.1
with the header the Space's proxy would send, `X-Forwarded-For: SHARED` (one school address):
teacher, students and attacker are one address to every bound.

The class: the teacher (gradio_client, its own session) starts a class; the students (a child
process, each an HTTP client with its own Gradio session as a page has) join by code
(/gradio_api/run/class_join) and follow as static/classroom.js does: at the timer's ticks
(POLL_S, from a random phase, one read in flight) the long poll GET /class/revision with the
member token and since=, and on a change the page's poll (/gradio_api/run/class_poll), whose
answer carries the move to apply and the bar (its histogram once revealed). The teacher moves
through the lessons' steps every --gap seconds; every so often (spaced so that the whole run holds
the lessons' 7 predict steps, at least PREDICT_MIN_S apart: a student answers well under the
6-a-minute bound) it moves to a predict step, every student answers once at a random moment
within 3 s (/class_answer), the teacher waits until the store holds every student's answer,
reveals (/class_reveal), and every student's poll must then show the histogram. After the
attacker stops, the teacher moves once more: the class still follows.

Class errors (must be 0): a student request that failed or was refused, a move some student's
poll never carried (before the next move), a predict step without every student's answer, a
reveal that did not draw, a reveal some student never saw.

Late students (bench/class_late.py), a third of the way in: one types the code, one opens the
student link (its invite) and joins, one of the class reloads its page; link and reload failing
are class errors.

The attacker (bench/class_attacker.py, a child process of its own; every loop bounded in count
and in time, only to 127.0.0.1), four floods at once for the class's duration:
- joins: /class_join with the room's code (projected: the attacker knows it) from one session,
  and without a session;
- answers: /class_answer of its one member, to each predict step, as fast as it is answered;
- probes: GET /class/revision?room=<random code> without a token;
- slow bodies: POSTs declaring a body and sending part of it, then a byte now and then
  (trickled) or nothing more (stalled), SLOW_AT_ONCE at a time.
Its outcomes are counted: accepted, refused by reason / status.

RSS: /proc/self/status of this process (the server) every RSS_EVERY_S; the slope (MB/min, least
squares) after the first quarter. Prints a summary; --json writes every figure.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import secrets
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Optional

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
SPACE_ID = "siege/transformer-explorer"   # set (main) as on a Space: its default settings

from bench.class_attacker import (HOSTILE_SESSION, SHARED, SLOW_WAIT_S,  # noqa: E402 (ROOT first)
                                  attacker_process, bounds_of, lesson_links, refusal)
from bench.class_late import late_arrivals  # noqa: E402
from bench.memory import rss_mb, slope_mb_per_min  # noqa: E402

PREDICT_MIN_S = 12.0        # predict steps at least this far apart (6 answers a minute each)
RSS_EVERY_S = 5.0
KEEPALIVE_S = 4.0           # the students' idle connections kept at most (uvicorn's: 5 s)
ERROR_TEXTS = 8             # error texts kept per client kind



def _note(texts: list, text: str) -> None:
    if len(texts) < ERROR_TEXTS and text not in texts:
        texts.append(text)


# ----------------------------------------------------------------------------- the students


class Student:
    def __init__(self, http, url: str, index: int, predict: set):
        self.http, self.url, self.index, self.predict = http, url, index, predict
        self.session = secrets.token_hex(8)
        self.token: Optional[str] = None
        self.current: Optional[str] = None          # the link the page last applied
        self.seen: list[tuple[str, float]] = []     # every (link, monotonic) a poll carried
        self.revealed: set[str] = set()             # links whose histogram the bar showed
        self.answered: set[str] = set()
        self.errors = 0
        self.texts: list[str] = []
        self.requests = 0

    async def call(self, name: str, data: list) -> list:
        self.requests += 1
        response = await self.http.post(f"{self.url}gradio_api/run/{name}",
                                        json={"data": data, "session_hash": self.session})
        if response.status_code != 200:
            raise RuntimeError(f"{name} {response.status_code}: {response.text[:160]}")
        return response.json()["data"]

    def fail(self, what: str, error: BaseException) -> None:
        self.errors += 1
        _note(self.texts, f"{what}: {type(error).__name__}: {str(error)[:160]}")

    async def join(self, code: str) -> None:
        out = await self.call("class_join", [code, f"s{self.index}", None, "en"])
        page = json.loads(out[4])
        self.token = page["member"]

    async def poll_forever(self, code: str, period: float, stop: asyncio.Event) -> None:
        """static/classroom.js's tick: one long poll in flight, the Gradio poll on a change."""
        await asyncio.sleep(random.random() * period)
        phase = time.monotonic()
        revision = None
        while not stop.is_set():
            try:
                since = f"&since={revision}" if revision else ""
                self.requests += 1
                answer = await self.http.get(
                    f"{self.url}class/revision?room={code}&member={self.token}{since}", timeout=60)
                if answer.status_code != 200:
                    raise RuntimeError(f"revision {answer.status_code}")
            except Exception as error:       # noqa: BLE001 - every failure is a class error
                self.fail(f"revision at {time.monotonic():.0f}", error)
            else:
                if answer.text != revision:
                    revision = answer.text
                    try:
                        out = await self.call("class_poll", [None, None, "en"])  # state, follow, lang
                        self.read_poll(out)
                    except Exception as error:   # noqa: BLE001
                        self.fail(f"class_poll at {time.monotonic():.0f}", error)
            elapsed = time.monotonic() - phase
            await asyncio.sleep(period * (int(elapsed / period) + 1) - elapsed)

    def read_poll(self, out: list) -> None:
        now = time.monotonic()
        pending = out[8] if len(out) > 8 else None        # poll's outputs: pending is the 9th
        if isinstance(pending, str) and pending.startswith("{"):
            self.current = json.loads(pending)["link"]
            self.seen.append((self.current, now))
        plot = out[6] if len(out) > 6 else None
        if isinstance(plot, dict) and plot.get("visible") and plot.get("value") and self.current:
            self.revealed.add(self.current)
        status = out[2] if len(out) > 2 else None
        if isinstance(status, str) and "⚠" in status:
            self.fail("poll", RuntimeError(status[:160]))

    async def answer_when_asked(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            link = self.current
            if link in self.predict and link not in self.answered and link not in self.revealed:
                self.answered.add(link)
                await asyncio.sleep(random.random() * 3.0)
                low, high = bounds_of(link)
                value = round(random.uniform(low, min(high, low + 1000)), 1)
                try:
                    await self.call("class_answer", [None, link, value, "en"])
                except Exception as error:   # noqa: BLE001
                    self.fail("answer", error)
            await asyncio.sleep(0.05)


async def students_process(url: str, code: str, n: int, period: float) -> None:
    """The students: join, print their tokens, follow and answer until stdin closes; then
    print what they saw as JSON."""
    import httpx

    _, predict = lesson_links()
    # idle connections dropped before uvicorn's 5 s keep-alive closes them: a request on one the
    # server is closing fails in transport (a browser retries it; httpx does not)
    limits = httpx.Limits(max_connections=2 * n + 4, max_keepalive_connections=2 * n + 4,
                          keepalive_expiry=KEEPALIVE_S)
    async with httpx.AsyncClient(timeout=30, limits=limits,
                                 headers={"x-forwarded-for": SHARED}) as http:
        students = [Student(http, url, i, set(predict)) for i in range(n)]
        joined = await asyncio.gather(*(s.join(code) for s in students), return_exceptions=True)
        for s, outcome in zip(students, joined):
            if isinstance(outcome, BaseException):
                s.fail("join", outcome)
        print("joined " + json.dumps([s.token for s in students]), flush=True)
        stop = asyncio.Event()
        tasks = [asyncio.create_task(s.poll_forever(code, period, stop)) for s in students if s.token]
        tasks += [asyncio.create_task(s.answer_when_asked(stop)) for s in students if s.token]
        await asyncio.to_thread(sys.stdin.read)      # the parent closes it when done
        stop.set()
        for task in tasks:           # a long poll may wait WAIT_S more: the page has closed
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    print(json.dumps({"seen": [[s.index, link, t] for s in students for link, t in s.seen],
                      "revealed": [[s.index, link] for s in students for link in sorted(s.revealed)],
                      "errors": [s.errors for s in students],
                      "requests": sum(s.requests for s in students),
                      "texts": sorted({t for s in students for t in s.texts})[:ERROR_TEXTS]}),
          flush=True)


# ----------------------------------------------------------------------------- the teacher


class Rss:
    """/proc/self/status's VmRSS every RSS_EVERY_S on a thread of its own."""

    def __init__(self):
        self.samples: list[tuple[float, float]] = []
        self.started = time.monotonic()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stop.is_set():
            self.samples.append((time.monotonic() - self.started, rss_mb()))
            self.stop.wait(RSS_EVERY_S)

    def close(self) -> dict:
        self.stop.set()
        self.thread.join()
        self.samples.append((time.monotonic() - self.started, rss_mb()))
        span = self.samples[-1][0]
        settled = [s for s in self.samples if s[0] >= span / 4]
        return {"rss_start_mb": round(self.samples[0][1], 1), "rss_end_mb": round(self.samples[-1][1], 1),
                "rss_max_mb": round(max(m for _, m in self.samples), 1),
                "rss_slope_after_q1_mb_per_min": (None if slope_mb_per_min(settled) is None
                                                  else round(slope_mb_per_min(settled), 3)),
                "rss_samples": [[round(t, 1), round(m, 1)] for t, m in self.samples]}


def siege(url: str, students: int, seconds: float, gap: float, period: float) -> dict:
    from gradio_client import Client

    from explorer.classroom.rooms import ROOMS

    plain, predict = lesson_links()
    rounds = max(1, min(len(predict), int(seconds // PREDICT_MIN_S)))
    teacher = Client(url, verbose=False, headers={"x-forwarded-for": SHARED})
    out = teacher.predict("en", api_name="/class_start")
    info = next(o for o in out if isinstance(o, str) and "`" in o)
    code = info.split("`")[1]
    invite = re.search(r"[?&]invite=([\w-]+)", info).group(1)     # the student link's
    child = subprocess.Popen([sys.executable, "-m", "bench.class_siege", "--as-students", url, code,
                              "--students", str(students), "--period", str(period)], cwd=ROOT,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    line = child.stdout.readline().strip()
    assert line.startswith("joined "), line
    tokens = [t for t in json.loads(line[len("joined "):]) if t]
    attacker = subprocess.Popen([sys.executable, "-m", "bench.class_siege", "--as-attacker", url, code,
                                 "--seconds", str(seconds)], cwd=ROOT, stdout=subprocess.PIPE,
                                text=True)
    started = time.monotonic()
    until = started + seconds
    teacher_errors, texts = 0, []
    moves: list[tuple[str, float]] = []          # (link, sent)
    reveals: list[str] = []
    answered_all: list[str] = []

    def move(link: str) -> None:
        nonlocal teacher_errors
        moves.append((link, time.monotonic()))
        try:
            teacher.predict(link, "en", api_name="/class_move")
        except Exception as error:   # noqa: BLE001
            teacher_errors += 1
            _note(texts, f"move {link}: {error}")

    def ask(link: str) -> None:
        nonlocal teacher_errors
        move(link)
        deadline = time.monotonic() + 20.0
        while time.monotonic() < deadline:
            with ROOMS._lock:
                step = ROOMS._rooms[code].questions.get(link)
                have = sum(t in step.answers for t in tokens) if step else 0
            if have == len(tokens):
                answered_all.append(link)
                break
            time.sleep(0.25)
        try:
            out = teacher.predict("en", api_name="/class_reveal")
            plot = out[1] if isinstance(out, (list, tuple)) and len(out) > 1 else None
            if not plot:
                raise RuntimeError(f"no histogram: {str(out)[:120]}")
            reveals.append(link)
        except Exception as error:   # noqa: BLE001
            teacher_errors += 1
            _note(texts, f"reveal {link}: {error}")
        time.sleep(max(3.0, gap))

    late: dict[str, str] = {}

    # the predict steps spread over the run; plain steps every `gap` in between
    late_at = started + seconds / 3
    ask_at = [started + (k + 0.5) * seconds / rounds for k in range(rounds)]
    k = 0
    while time.monotonic() < until:
        if not late and time.monotonic() >= late_at:    # students arriving late, reloading
            late.update(late_arrivals(url, code, invite, tokens[0]))
        if predict and ask_at and time.monotonic() >= ask_at[0]:
            ask_at.pop(0)
            ask(predict[len(reveals) % len(predict)] if len(reveals) < len(predict)
                else predict[k % len(predict)])
            continue
        move(plain[k % len(plain)])
        k += 1
        time.sleep(min(gap, max(0.0, until - time.monotonic())))
    hostile = json.loads(attacker.communicate(timeout=SLOW_WAIT_S + 60)[0] or "{}")
    # after the siege: the class still follows
    after_from = len(moves)
    move(plain[(k + 1) % len(plain)])
    # the final move is seen by every student within two poll periods on an idle host; at a
    # load average of 14 (2026-12-06) 3 of 40 had not polled yet: wait longer than a page would
    time.sleep(max(10.0, 4 * period + 1))
    seen = json.loads(child.communicate(timeout=120)[0])
    with ROOMS._lock:
        room = ROOMS._rooms.get(code)
        hostile_members = sum(m.session == HOSTILE_SESSION for m in room.members.values()) if room else None
        members = len(room.members) if room else 0

    # every move reached every student (the first poll carrying it, before the next move)
    missed = []
    for i, (link, sent) in enumerate(moves):
        if i > 0 and moves[i - 1][0] == link:     # the same link again: no move to carry
            continue
        before = moves[i + 1][1] + 2.0 if i + 1 < len(moves) else float("inf")
        got = {index for index, seen_link, t in seen["seen"] if seen_link == link and sent <= t < before}
        missed += [(i, link, s) for s in range(len(tokens)) if s not in got]
    revealed = {(index, link) for index, link in seen["revealed"]}
    unseen_reveals = [(s, link) for link in reveals for s in range(len(tokens)) if (s, link) not in revealed]
    class_errors = (sum(seen["errors"]) + (students - len(tokens)) + teacher_errors + len(missed)
                    + (len(reveals) - len(answered_all)) + len(unseen_reveals)
                    + (rounds - len(reveals))
                    + sum(late.get(kind) != "ok" for kind in ("link", "reload")))
    return {"students": students, "joined": len(tokens), "seconds": round(time.monotonic() - started, 1),
            "code": code, "moves": len(moves), "moves_after_siege": len(moves) - after_from,
            "predict_rounds": rounds, "reveals": len(reveals), "all_answered": len(answered_all),
            "class_errors": class_errors, "student_errors": sum(seen["errors"]),
            "student_requests": seen["requests"], "teacher_errors": teacher_errors,
            "missed_moves": len(missed), "missed_examples": missed[:5],
            # per missed move: (index, link, students missing it, seconds until the next move)
            "missed_by_move": [(i, link, sum(m[0] == i for m in missed),
                                round(moves[i + 1][1] - moves[i][1], 1) if i + 1 < len(moves) else None)
                               for i, link in sorted({(m[0], m[1]) for m in missed})],
            "unseen_reveals": len(unseen_reveals), "error_texts": seen["texts"] + texts,
            "hostile": hostile, "hostile_members": hostile_members, "room_members": members,
            "late_mid_siege": late}


def summary(result: dict) -> str:
    h = result["hostile"]

    def counted(kind):
        return ", ".join(f"{k}: {v}" for k, v in sorted(h.get(kind, {}).items()))
    return "\n".join([
        f"class: {result['joined']}/{result['students']} students joined from one address, "
        f"{result['moves']} moves ({result['moves_after_siege']} after the siege), "
        f"{result['reveals']}/{result['predict_rounds']} reveals, {result['all_answered']} with every "
        f"student's answer, {result['student_requests']} student requests in "
        f"{result['seconds']:.0f} s",
        f"CLASS ERRORS {result['class_errors']} (students {result['student_errors']}, teacher "
        f"{result['teacher_errors']}, missed moves {result['missed_moves']}, unseen reveals "
        f"{result['unseen_reveals']})" + (f": {result['error_texts'][:3]}" if result["error_texts"] else ""),
        f"hostile joins: {counted('joins')} -> members of its session: {result['hostile_members']}",
        f"hostile answers: {counted('answers')}",
        f"hostile probes: {counted('probes')}",
        f"hostile slow bodies: {counted('slow_bodies')} (longest held {h.get('slow_body_s_max')} s)",
        f"late students mid-siege (link and reload must join; typed may be refused): "
        f"{result['late_mid_siege']}",
        f"RSS {result['rss_start_mb']} -> {result['rss_end_mb']} MB (max {result['rss_max_mb']}), "
        f"slope after the first quarter {result['rss_slope_after_q1_mb_per_min']} MB/min"])


def run_siege(students: int, seconds: float, gap: float = 6.0, period: Optional[float] = None,
              url: Optional[str] = None) -> dict:
    """The siege on the app served at `url` (this process's), or on one served here."""
    from explorer.ui.page.classroom import POLL_S

    period = period or POLL_S
    rss = Rss()
    if url is None:
        from bench.serve import served
        from explorer.runtime import Runtime
        with served(Runtime(), ("explorer.ui.tabs.classroom",)) as app:
            result = siege(app.url, students, seconds, gap, period)
    else:
        result = siege(url, students, seconds, gap, period)
    result.update(rss.close())
    result.update(cpu_count=os.cpu_count(), load_avg_1m=os.getloadavg()[0],
                  space_id=os.environ.get("SPACE_ID"), shared_address=SHARED)
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--students", type=int, default=40)
    parser.add_argument("--gap", type=float, default=6.0, help="seconds between the teacher's moves")
    parser.add_argument("--period", type=float, default=None, help="poll period (default: the page's)")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--seconds", type=float, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--as-students", nargs=2, metavar=("URL", "CODE"), help=argparse.SUPPRESS)
    parser.add_argument("--as-attacker", nargs=2, metavar=("URL", "CODE"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    os.environ.setdefault("SPACE_ID", SPACE_ID)     # read per request: one proxy trusted
    if args.as_students:
        asyncio.run(students_process(*args.as_students, args.students, args.period))
        return 0
    if args.as_attacker:
        asyncio.run(attacker_process(*args.as_attacker, args.seconds))
        return 0
    result = run_siege(args.students, args.minutes * 60, args.gap, args.period)
    print(summary(result), flush=True)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0 if result["class_errors"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
