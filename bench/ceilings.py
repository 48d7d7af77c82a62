"""Memory ceiling at full concurrency: the largest request of every heavy handler, sent at the
same time by separate clients (one gradio_client session each) to one served app, with the
server process's peak RSS.

    .venv/bin/python -m bench.ceilings                        # 8 generations + 1 of each other
    .venv/bin/python -m bench.ceilings --generations 32 --copies 2 --json ceilings.json

The server is `python app.py` in a child process (its RSS is the app's alone, not the clients').
After Gemma is loaded and one short generation has built its decode loop, the peak RSS
(/proc/PID/status VmHWM) is reset (clear_refs 5) and VmRSS sampled every 50 ms while:

- `--copies` x each request of the one-forward-at-a-time "model" group at its largest (Gemma):
  StreamingLLM over 4,096 tokens, the RoPE sweep of 8 bases over 2,048 tokens, the Attention
  map of all heads at the CPU's 512 tokens (32 of them generated) on the tiled path (which
  recomputes the map eagerly to compare);
- `--generations` x a 256-token Gemma generation with both checks (C1 replay, C4 full forward),
  admitted together by Generate's shared decode loop (its capacity is 32 decoding + 32 queued).

Every request must be answered, by a result or by an error that is a sentence (no traceback,
no path); then one short generation and one small Attention map must succeed. The verdict: the
peak against `--bound-mb`. Exit status 1 if any of these fails.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Optional

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.serve import free_port  # noqa: E402

GEMMA = "gemma-3-270m"
LONG_BASES = "1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11"          # explorer/rope: at most 8
# The largest request each heavy handler allows (server limits equal the UI's): keyword
# arguments of gradio_client's predict, the rest at the components' defaults.
LARGEST: dict[str, dict[str, Any]] = {
    "/streaming_ppl": dict(model_name=GEMMA, n_tokens=4096, w=256, s=4),
    "/rope_perplexity": dict(model_name=GEMMA, bases_text=LONG_BASES, apply="all", n_tokens=2048),
    "/generate": dict(model_name=GEMMA, n_new=256, compare_value=True, check_value=True),
}
RSS_BOUND_MB = 4096        # the whole server process, both models loaded, at full concurrency
SAMPLE_S = 0.05
MB = 1 << 20


def attention_request(tokenizer_json: Path) -> dict[str, Any]:
    """The largest Attention map on a CPU: a prompt of MAX_TOKENS_CPU - MAX_GENERATED tokens
    (a margin of 4 for the tokenizer's special tokens), all heads, 32 tokens generated, the
    tiled path (the map is computed twice, tiled and eager, and compared)."""
    from tokenizers import Tokenizer

    from explorer.attention import MAX_TOKENS_CPU
    from explorer.attention.maps import MAX_GENERATED

    target = MAX_TOKENS_CPU - MAX_GENERATED - 4
    tokenizer = Tokenizer.from_file(str(tokenizer_json))
    sentence = "The quick brown fox jumps over the lazy dog near the river bank. "
    words: list[str] = []
    for word in (sentence * 200).split():
        if len(tokenizer.encode(" ".join(words + [word])).ids) > target:
            break
        words.append(word)
    return dict(model_name=GEMMA, text=" ".join(words), layer_value=17, head_value="all",
                kind="sinks", w=64, s=4, path="tiled", n_new=MAX_GENERATED)


def vm_kb(pid: int, field: str) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


class Sampler:
    """VmRSS of a process every SAMPLE_S, its peak and when it was reached."""

    def __init__(self, pid: int):
        self.pid, self.peak_kb, self.peak_at, self.samples = pid, 0, 0.0, 0
        self._done = threading.Event()
        self._started = time.perf_counter()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._done.is_set():
            rss = vm_kb(self.pid, "VmRSS")
            self.samples += 1
            if rss > self.peak_kb:
                self.peak_kb, self.peak_at = rss, time.perf_counter() - self._started
            time.sleep(SAMPLE_S)

    def stop(self) -> None:
        self._done.set()
        self._thread.join()


@dataclass
class Answer:
    endpoint: str
    copy: int
    ok: bool                   # a result came back
    seconds: float
    error: str = ""            # the error's message when not ok ("" when ok)
    clear: bool = True         # an error that is a sentence: no traceback, no path, short
    status: str = ""           # a generation's status line (tokens, how it ended)


def ask(url: str, endpoint: str, copy: int, kwargs: dict, start: threading.Barrier,
        timeout_s: float, answers: list) -> None:
    from gradio_client import Client

    from bench.fuzz import LEAK, MAX_MESSAGE_CHARS

    client = Client(url, verbose=False)
    start.wait()
    t0 = time.perf_counter()
    try:
        outputs = client.submit(**kwargs, api_name=endpoint).result(timeout=timeout_s)
        status = str(outputs[1])[:300] if endpoint == "/generate" and outputs else ""
        answers.append(Answer(endpoint, copy, outputs is not None, time.perf_counter() - t0,
                              status=status))
    except Exception as error:  # an error answer (busy, time limit, input) or no answer
        message = str(error)
        answers.append(Answer(endpoint, copy, False, time.perf_counter() - t0, message[:300],
                              bool(message) and not LEAK.search(message)
                              and len(message) <= MAX_MESSAGE_CHARS and "Timeout" not in type(error).__name__))
    finally:
        client.close()


def serve(log_path: Path, root: Path = ROOT) -> tuple[subprocess.Popen, str]:
    """`python app.py` of `root` (this checkout, or another's) in a child process on a free
    port: (process, url)."""
    port = free_port()
    env = dict(os.environ, HOST="127.0.0.1", PORT=str(port), GRADIO_ANALYTICS_ENABLED="False",
               PYTHONUNBUFFERED="1")
    # every simulated visitor comes from this host's one address: the decode loop's cap per
    # address (explorer/serving/scheduler.py) would refuse a class of them
    env.setdefault("EXPLORER_MAX_RUNS_PER_ADDRESS", "1000000")
    # ... and so would the queue's and the session store's bounds per address (app.py)
    for name in ("EXPLORER_WAITING_PER_ADDRESS", "EXPLORER_NEW_SESSIONS_PER_MINUTE",
                 "EXPLORER_SESSIONS_PER_ADDRESS"):
        env.setdefault(name, "1000000")
    # no first answers computed at start-up (explorer/ui/page/warm.py): minutes of every section's
    # default run (the precision comparison among them) that would share the two cores with
    # the first measurement, which then measures the start-up instead of the class (a class
    # of 30 on Gemma measured 80 tokens/s beside it, 200 without)
    env.setdefault("EXPLORER_WARM", "0")
    log = open(log_path, "w")
    env["PYTHONPATH"] = str(root)
    server = subprocess.Popen([sys.executable, str(root / "app.py")], cwd=root, env=env,
                              stdout=log, stderr=subprocess.STDOUT)
    return server, f"http://127.0.0.1:{port}/"


def connect(url: str, server: Optional[subprocess.Popen], wait_s: float):
    """A gradio_client Client of the app at url once it serves (server: the process serving
    it, if ours: its exit ends the wait)."""
    from gradio_client import Client

    started = time.time()
    while True:
        if server is not None and server.poll() is not None:
            raise SystemExit(f"the server exited ({server.returncode}) before serving")
        try:
            return Client(url, verbose=False)
        except Exception:
            if time.time() - started > wait_s:
                raise SystemExit(f"no server at {url} after {wait_s:.0f} s")
            time.sleep(2)


@contextlib.contextmanager
def served_gemma():
    """`python app.py` in a child process, Gemma loaded and its decode loop built by one short
    generation: yields (client, url, pid); the server is terminated on exit."""
    log_path = Path(tempfile.mkstemp(prefix="ceilings-", suffix=".log")[1])
    server, url = serve(log_path)
    client = None
    try:
        client = connect(url, server, 600)
        t0 = time.perf_counter()
        client.predict(GEMMA, "en", api_name="/load_model")
        client.predict(model_name=GEMMA, prompt="Hello", n_new=2, compare_value=False,
                       check_value=False, api_name="/generate")
        print(f"Gemma loaded and its decode loop built in {time.perf_counter() - t0:.0f} s "
              f"(server log {log_path})")
        yield client, url, server.pid
    finally:
        if client is not None:
            client.close()
        server.terminate()
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def peak_during(pid: int, work: Callable[[], Any]) -> tuple[Any, dict[str, float]]:
    """(work(), RSS figures in MB of process pid): before, peak (the larger of VmHWM, reset
    first, and VmRSS sampled every SAMPLE_S), and after."""
    before_kb = vm_kb(pid, "VmRSS")
    with open(f"/proc/{pid}/clear_refs", "w") as refs:
        refs.write("5")                                          # VmHWM := VmRSS
    sampler = Sampler(pid)
    try:
        result = work()
    finally:
        sampler.stop()
    hwm_kb = vm_kb(pid, "VmHWM")
    return result, dict(before=before_kb / 1024, peak=max(hwm_kb, sampler.peak_kb) / 1024,
                        vm_hwm=hwm_kb / 1024, sampled=sampler.peak_kb / 1024,
                        peak_at_s=sampler.peak_at, after=vm_kb(pid, "VmRSS") / 1024)


def largest_requests() -> dict[str, dict[str, Any]]:
    from models.paths import cache_dir

    return {**LARGEST, "/attention_map": attention_request(cache_dir() / GEMMA / "tokenizer.json")}


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--generations", type=int, default=8, help="256-token generations at once")
    parser.add_argument("--copies", type=int, default=1, help="copies of each model-group request")
    parser.add_argument("--bound-mb", type=float, default=RSS_BOUND_MB)
    parser.add_argument("--timeout-s", type=float, default=1500, help="per request")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args(argv)

    requests = largest_requests()
    jobs = [(endpoint, copy, kwargs) for endpoint, kwargs in requests.items() if endpoint != "/generate"
            for copy in range(args.copies)]
    jobs += [("/generate", copy, requests["/generate"]) for copy in range(args.generations)]
    answers: list[Answer] = []

    def all_at_once() -> float:
        start = threading.Barrier(len(jobs))
        threads = [threading.Thread(target=ask, args=(url, endpoint, copy, kwargs, start, args.timeout_s,
                                                      answers), daemon=True)
                   for endpoint, copy, kwargs in jobs]
        t0 = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return time.perf_counter() - t0

    with served_gemma() as (client, url, pid):
        wall, rss = peak_during(pid, all_at_once)
        t1 = time.perf_counter()          # the next requests succeed
        text = client.predict(model_name=GEMMA, prompt="Name a colour.", n_new=8, compare_value=False,
                              check_value=False, api_name="/generate")[0]
        small_map = client.predict(model_name=GEMMA, text="The cat sat on the mat.", api_name="/attention_map")
        next_ok = isinstance(text, str) and bool(text.strip()) and small_map is not None
        next_s = time.perf_counter() - t1
    answers.sort(key=lambda a: (a.endpoint, a.copy))
    for a in answers:
        state = "result" if a.ok else ("error" if a.clear else "UNCLEAR")
        print(f"  {a.endpoint:18s} #{a.copy:<2d} {state:7s} {a.seconds:7.1f} s  {(a.error or a.status)[:160]}")
    unanswered = len(jobs) - len(answers) + sum(not a.ok and not a.clear for a in answers)
    load = os.getloadavg()
    print(f"{len(jobs)} requests at once ({args.generations} generations, {args.copies} of each other) "
          f"in {wall:.0f} s: {sum(a.ok for a in answers)} results, "
          f"{sum(not a.ok and a.clear for a in answers)} clear errors, {unanswered} unanswered or unclear")
    print(f"server RSS: {rss['before']:.0f} MB before, peak {rss['peak']:.0f} MB (VmHWM {rss['vm_hwm']:.0f}, "
          f"sampled {rss['sampled']:.0f} at {rss['peak_at_s']:.0f} s), {rss['after']:.0f} MB after; "
          f"bound {args.bound_mb:.0f} MB; next requests {'succeeded' if next_ok else 'FAILED'} in {next_s:.1f} s; "
          f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    ok = unanswered == 0 and next_ok and rss["peak"] < args.bound_mb
    if args.json:
        args.json.write_text(json.dumps(dict(
            generations=args.generations, copies=args.copies, wall_s=wall, rss_mb=rss, bound_mb=args.bound_mb,
            next_ok=next_ok, load=load, answers=[asdict(a) for a in answers], ok=ok), indent=1))
    print(f"RESULT ceilings: peak {rss['peak']:.0f} MB, {'within' if ok else 'NOT within'} the bound")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
