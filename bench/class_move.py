"""A teacher's move against busy pages: a teacher page and N student pages (default 3) in Chromium
(one context each), on the app served in this process.

    python bench/class_move.py                  # 3 students, 3 busy moves and 3 idle ones
    python bench/class_move.py --students 3 --rounds 4 --json out.json

The teacher starts a class, the students join by the class link, the teacher opens the KV-cache
lesson. Each round: the class is at step 2, a prediction; each student answers, and the step's
run decodes 200 tokens on their pages; once every student's page shows tokens arriving, the teacher presses Next (step 3) while those runs
still decode: a BUSY move. When the step-3 runs have ended, the teacher presses Back (step 2):
an IDLE move. Measured per move and student: the time from the teacher's press to the student's
page showing the new step (its address names the step and the lesson panel is shown, what
tests/browser/test_browser_classroom.py waits for). Also noted per busy move: whether the
student's run of step 2 was still decoding when its page showed step 3.
Also measured per move: the time from the press to the store's move (the class follows the new
step; this process serves the app, so both are on one clock). Prints p50 / max of both kinds and
`CLASS_MOVE: busy p50 <s> max <s> · idle p50 <s> max <s> · press -> published p50 ...`.

--teacher-runs: the teacher's page answers the prediction too, so its own 200-token run streams
on the page that presses Next (a teacher measuring the value the class will see).

--http-students K adds K students who are HTTP clients, not pages (bench/class_follow.py's
way): each joins the class in a session of its own and, at each busy round, runs the step's
200-token Generate in that session (one POST and its event stream, as a page does), so the
server carries K more decoding students and the teacher's press stops their runs too. On this
2-core host every Chromium page takes the same cores as the server; in a class each page is on
a device of its own. `--students 1 --http-students 2` measures one page under a three-student
class's server load.

Every page is on 127.0.0.1 here; in a class they are phones with addresses of their own, so the
per-address bounds are lifted for this process (as bench/class_follow.py does).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
from bench import chromium  # noqa: E402 (ROOT first)

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
for _name in ("EXPLORER_MAX_RUNS_PER_ADDRESS", "EXPLORER_WAITING_PER_ADDRESS",
              "EXPLORER_NEW_SESSIONS_PER_MINUTE", "EXPLORER_SESSIONS_PER_ADDRESS"):
    os.environ.setdefault(_name, "1000000")

LOAD_MS = 300_000   # the first page of a cold process builds and warms the app

AT_STEP = ("(n) => new RegExp('[?&]lesson=kv-cache&step=' + n + '(&|$)').test(location.search) && "
           "!!document.getElementById('lesson-panel') && "
           "document.getElementById('lesson-panel').getClientRects().length > 0")
# the run section's status line while tokens stream ("Generating: n / total tokens ...", or
# Chinese); a run's end says Done / 完成
DECODING = ("() => { const s = document.querySelector('#gen-status');"
            " const t = s ? s.innerText : ''; return /(Generating|生成中)/.test(t); }")
TOKENS = ("() => { const s = document.querySelector('#gen-status'); const t = s ? s.innerText : '';"
          " const m = t.match(/(?:Generating|生成中)\\D*(\\d+)\\s*\\/\\s*(\\d+)/); return m ? [+m[1], +m[2]] : null; }")


def at_step(page, n: int, timeout_ms: int) -> None:
    page.wait_for_function(AT_STEP, arg=n, timeout=timeout_ms, polling=50)


def box(page, elem_id: str):
    return page.locator(f"#{elem_id} input, #{elem_id} textarea").first


def start_class(teacher, url: str) -> str:
    teacher.goto(url)
    teacher.click("#tab-classroom-button", timeout=LOAD_MS)
    teacher.click("#class-start")
    teacher.wait_for_function("() => /\\?room=[A-Z2-9]{6}&invite=/.test("
                              "(document.querySelector('#class-info') || {}).innerText || '')",
                              timeout=60_000)
    info = teacher.inner_text("#class-info")
    return re.search(r"\?room=[A-Z2-9]{6}&invite=[\w-]+", info).group(0)


def join(student, url: str, link: str, name: str) -> None:
    code = re.search(r"room=([A-Z2-9]{6})", link).group(1)
    student.goto(url + link)
    student.wait_for_function(
        "(code) => { const e = document.querySelector('#class-code input, #class-code textarea');"
        " return e && e.value === code; }", arg=code, timeout=LOAD_MS)
    box(student, "class-nickname").fill(name)
    student.click("#class-join")
    student.locator("#class-bar").get_by_text(code).wait_for(timeout=60_000)


# --trace: each request the teacher's and each student's page made after the press
# (performance's resource entries): its path, when it started and ended, in seconds after it
CLEAR = "() => { performance.setResourceTimingBufferSize(5000); performance.clearResourceTimings(); }"
ENTRIES = ("(press) => performance.getEntriesByType('resource').map(e => ["
           "e.name.replace(location.origin, '').split('?')[0],"
           " (performance.timeOrigin + e.startTime - press) / 1000,"
           " (performance.timeOrigin + e.responseEnd - press) / 1000])"
           ".filter(e => e[2] > -1)")


PUBLISHED: list[float] = []   # when the room's move counter changed (this process serves the app)


def watch_moves() -> None:
    """Note the time of each move the store makes (its `_move`, under the store's lock): the
    press -> published figure is then measured in one process, on one clock."""
    from explorer.classroom.questions import Questions

    original = Questions._move

    def _move(room, link):
        before = room.moves
        original(room, link)
        if room.moves != before:
            PUBLISHED.append(time.monotonic())
    Questions._move = staticmethod(_move)


def published_after(pressed: float, timeout_s: float = 60.0) -> float:
    """Seconds from the press to the store's move that followed it."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        later = [t for t in PUBLISHED if t >= pressed]
        if later:
            return later[0] - pressed
        time.sleep(0.005)
    raise TimeoutError("the teacher's press moved no class")


def measure_move(teacher, students, button: str, step: int, trace: bool = False) -> tuple[list, list, float]:
    """Press `button` on the teacher's page: (seconds to each student's page at `step`, whether
    that page's previous run was still decoding when it got there, seconds to the store's move)."""
    for page in (teacher, *students):
        page.evaluate(CLEAR)
    press_ms = time.time() * 1000
    pressed = time.monotonic()
    teacher.click(button)
    published = published_after(pressed)
    times, decoding = [], []
    for k, page in enumerate(students):
        try:
            at_step(page, step, 400_000)
        except Exception:
            for j, shown in enumerate([teacher, *students]):
                shown.screenshot(path=f"/tmp/class-move-{j}.png")
                print(j, shown.url, shown.inner_text("#gen-status"), flush=True)
            raise
        times.append(time.monotonic() - pressed)
        decoding.append(bool(page.evaluate(DECODING)))
    if trace:
        print("  teacher: " + requests_after(teacher, press_ms), flush=True)
        for k, page in enumerate(students):
            print(f"  student {k} at {times[k]:.2f} s: " + requests_after(page, press_ms), flush=True)
    return times, decoding, published


def requests_after(page, press_ms: float) -> str:
    """The page's requests since the press (its heartbeat left out): path, start-end seconds."""
    entries = [e for e in page.evaluate(ENTRIES, press_ms) if "heartbeat" not in e[0]]
    return ", ".join(f"{name.rsplit('/', 2)[-2:]} {a:.2f}-{b:.2f}" for name, a, b in entries)


def answer(pages) -> None:
    """Step 2 asks for a prediction before its run: each student answers (the run starts)."""
    for k, page in enumerate(pages):
        page.locator("#lesson-guess input").wait_for(state="visible", timeout=60_000)
        box(page, "lesson-guess").fill(str(1000 * (k + 1)))
        page.click("#lesson-check")


def wait_runs_end(pages, tokens: int, timeout_s: float = 600.0) -> None:
    """Until every page's run of the step (max new `tokens`) has ended: its status line says
    Done with that many tokens (a run not started yet, or an earlier step's, does not count)."""
    done = re.compile(r"(Done|完成).*\b%d\b" % tokens)
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if all(done.search(page.inner_text("#gen-status")) for page in pages):
            return
        time.sleep(0.25)
    raise TimeoutError("the runs did not end")


def wait_quiet(page, timeout_s: float = 600.0) -> None:
    """Until the page's run section is seen not decoding at two reads a second apart (a run
    pressed while the last one was pending starts once that one ends)."""
    end = time.monotonic() + timeout_s
    quiet = 0
    while time.monotonic() < end and quiet < 2:
        quiet = 0 if page.evaluate(DECODING) else quiet + 1
        time.sleep(1.0)
    if quiet < 2:
        raise TimeoutError("the teacher's runs did not end")


def wait_decoding(pages, tokens: int = 3, timeout_s: float = 300.0) -> None:
    """Until each page has been seen decoding its run with `tokens` tokens or more streamed
    (page by page: a busy page answers a read seconds late, and three 200-token runs may not
    all be seen at once; the press then finds at least the last one still decoding)."""
    end = time.monotonic() + timeout_s
    seen = [False] * len(pages)
    while time.monotonic() < end:
        for k, page in enumerate(pages):
            if not seen[k] and page.evaluate(DECODING):
                read = page.evaluate(TOKENS)
                seen[k] = read is not None and read[0] >= tokens
        if all(seen):
            return
        time.sleep(0.05)
    raise TimeoutError(f"the students' runs did not start decoding: {[p.inner_text('#gen-status') for p in pages]}")


def step_two_payload(url: str, default_model: str) -> dict:
    """The body of POST /queue/join for the KV-cache lesson's step-2 run, the 200-token Generate
    a student's page makes at the prediction."""
    from bench.cancel import join_payload
    from explorer.lessons import LESSONS

    step = LESSONS["kv-cache"].steps[1].settings
    return join_payload(url, "/generate", dict(
        model_name=step.get("model") or default_model, lang="en", prompt=step["prompt"],
        n_new=step.get("max_new", 200), temp=0.0, k=0, p=1.0, seed_value=0,
        policy_value="full", w=64, s=4, compare_value=False, check_value=False))


class HttpStudent:
    """A student who is an HTTP client (see the module doc): a session of its own, joined by
    code; `start(payload)` runs a Generate in that session in a thread, `decoding` once its
    first tokens arrived, `ended` once its run ended (its last message or an error)."""

    def __init__(self, url: str, code: str, index: int):
        import secrets

        import httpx

        self.url, self.session = url, secrets.token_hex(8)
        self.http = httpx.Client(timeout=600)
        self.decoding = self.ended = None
        joined = self.http.post(f"{url}gradio_api/run/class_join",
                                json={"data": [code, f"h{index}", None, "en"], "session_hash": self.session})
        joined.raise_for_status()

    def start(self, payload: dict) -> None:
        import threading

        self.decoding, self.ended = threading.Event(), threading.Event()
        threading.Thread(target=self._run, args=(payload,), daemon=True).start()

    def _run(self, payload: dict) -> None:
        try:
            joined = self.http.post(f"{self.url}gradio_api/queue/join", json={**payload, "session_hash": self.session})
            joined.raise_for_status()
            with self.http.stream("GET", f"{self.url}gradio_api/queue/data",
                                  params={"session_hash": self.session}) as events:
                for line in events.iter_lines():
                    if '"process_generating"' in line:
                        self.decoding.set()
                    elif '"process_completed"' in line:
                        return
        finally:
            self.decoding.set()
            self.ended.set()


def run(students: int, rounds: int, trace: bool = False, http_students: int = 0,
        teacher_runs: bool = False) -> dict:
    from playwright.sync_api import sync_playwright

    from bench.serve import served
    from explorer.lessons import LESSONS
    from explorer.locales import text
    from explorer.runtime import Runtime

    busy, idle, still, sent = [], [], [], {"busy": [], "idle": []}
    watch_moves()
    runtime = Runtime()
    with served(runtime) as server, sync_playwright() as playwright:
        browser = chromium.launch(playwright)
        contexts = [browser.new_context(viewport={"width": 1280, "height": 900})
                    for _ in range(students + 1)]
        for context in contexts:
            context.set_default_timeout(180_000)   # a loaded host: a click may wait for the page
        pages = [context.new_page() for context in contexts]
        teacher, pupils = pages[0], pages[1:]
        link = start_class(teacher, server.url)
        print("class started", flush=True)
        for k, page in enumerate(pupils):
            join(page, server.url, link, f"s{k}")
        code = re.search(r"room=([A-Z2-9]{6})", link).group(1)
        others = [HttpStudent(server.url, code, k) for k in range(http_students)]
        if others:
            generate = step_two_payload(server.url, runtime.default_name)
        teacher.click("#lesson-pick input")
        teacher.get_by_role("option", name=text(LESSONS["kv-cache"].title, "en")).click()
        for page in pupils:
            at_step(page, 1, 120_000)
        wait_runs_end(pages, 32)
        teacher.click("#lesson-next")                    # step 2: the long run
        for page in pupils:
            at_step(page, 2, 120_000)
        print("at step 2", [p.inner_text("#gen-status") for p in pupils], flush=True)
        runners = [teacher, *pupils] if teacher_runs else pupils
        for r in range(rounds):
            answer(runners)
            for other in others:
                other.start(generate)
            wait_decoding(runners)
            for other in others:
                if not other.decoding.wait(300):
                    raise TimeoutError("an HTTP student's run did not start")
            times, decoding, published = measure_move(teacher, pupils, "#lesson-next", 3, trace)
            busy += times
            still += decoding
            sent["busy"].append(published)
            print(f"round {r + 1}: busy move {['%.2f' % t for t in times]} s "
                  f"(published {published:.2f} s; previous run still decoding: {decoding})", flush=True)
            wait_runs_end(pupils, 48)
            if teacher_runs:   # the teacher's own runs (not a follower: the move leaves them) end
                wait_quiet(teacher)
            for other in others:
                other.ended.wait(300)
            times, _, published = measure_move(teacher, pupils, "#lesson-back", 2)
            idle += times
            sent["idle"].append(published)
            print(f"round {r + 1}: idle move {['%.2f' % t for t in times]} s "
                  f"(published {published:.2f} s)", flush=True)
        browser.close()
    figures = {"students": students, "http_students": http_students, "rounds": rounds,
               "teacher_runs": teacher_runs, "busy_s": busy, "idle_s": idle,
               "decoding_when_shown": still, "published_s": sent}
    line = (f"CLASS_MOVE: busy p50 {statistics.median(busy):.2f} s max {max(busy):.2f} s · "
            f"idle p50 {statistics.median(idle):.2f} s max {max(idle):.2f} s · "
            f"press -> published p50 busy {statistics.median(sent['busy']):.2f} s "
            f"idle {statistics.median(sent['idle']):.2f} s "
            f"({students} student pages + {http_students} HTTP students, {rounds} rounds"
            f"{', the teacher runs the step too' if teacher_runs else ''}; "
            f"pages still decoding when shown: {sum(still)} of {len(still)})")
    print(line, flush=True)
    return figures


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--http-students", type=int, default=0,
                        help="students who are HTTP clients: the server's load of a bigger class")
    parser.add_argument("--trace", action="store_true",
                        help="the teacher's and each student's requests after a busy move")
    parser.add_argument("--teacher-runs", action="store_true",
                        help="the teacher's page answers and runs the step too (its stream at the press)")
    args = parser.parse_args(argv)
    figures = run(args.students, args.rounds, args.trace, args.http_students, args.teacher_runs)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
