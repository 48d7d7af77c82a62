"""A classroom at once: N visitors press Start together on the Generate tab, for N in a step load.

The app (app.py) is served from a second process, as visitors meet it; N gradio_client clients
here each stream one /generate run at the same moment (the tab's default prompt, greedy, 48 new
tokens, the C1 replay and the C4 check off unless --with-checks), then the next load level
starts. Per level: time to first token p50/p95/p99 (submit to the first streamed text), the
p99 gap between two streamed messages, the slowest stream's tokens/s, aggregate tokens/s (all
tokens / the level's wall time), the share of runs refused as busy, and other errors.

    .venv/bin/python -m bench.classroom [--model smollm2-135m-instruct] [--loads 1,5,10,20,30,50]
                                        [--tokens 48] [--with-checks] [--url http://...]

The clients share the CPU with the server (a classroom's browsers would not): on a 2-core
machine their message handling takes a share of the cores from the decode.
"""
from __future__ import annotations

import argparse
import os
import re
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

LOADS = (1, 5, 10, 20, 30, 50)


@dataclass
class Stream:
    """One client's run as it saw it."""
    prompt: str
    submitted: float
    arrivals: list = field(default_factory=list)   # perf_counter of each message with new text
    text: str = ""
    status: str = ""
    tokens: int = 0
    error: Optional[str] = None
    busy: bool = False
    job: object = None        # the gradio_client Job, to ask a stream that never ends for its status

    @property
    def ttft(self) -> Optional[float]:
        return self.arrivals[0] - self.submitted if self.arrivals else None

    @property
    def rate(self) -> Optional[float]:
        """Streamed tokens/s after the first (tokens counted from the final status line)."""
        if self.tokens < 2 or len(self.arrivals) < 2 or self.arrivals[-1] <= self.arrivals[0]:
            return None
        return (self.tokens - 1) / (self.arrivals[-1] - self.arrivals[0])

    def gaps(self) -> list:
        return [b - a for a, b in zip(self.arrivals, self.arrivals[1:])]


def default_prompt() -> str:
    from explorer.ui.generate import DEFAULT_PROMPT
    return DEFAULT_PROMPT


def stream_one(url: str, model: str, prompt: str, tokens: int, checks: bool, out: Stream) -> None:
    """One visitor: submit /generate and read its stream to the end."""
    from gradio_client import Client

    try:
        client = Client(url, verbose=False)
        out.submitted = time.perf_counter()
        job = out.job = client.submit(model, "en", prompt, tokens, 0.0, 0, 1.0, 0, "full", 64, 4,
                                      checks, checks, api_name="/generate")
        for output in job:
            if output[0] and output[0] != out.text:
                out.text = output[0]
                out.arrivals.append(time.perf_counter())
        final = job.result()
        out.status = final[1] or ""
        found = re.search(r"\*\*(\d+)\*\*", out.status)
        out.tokens = int(found.group(1)) if found else 0
    except Exception as error:   # counted, never hidden: the table reports every error
        message = str(error)
        out.error = message[:300]
        out.busy = "busy" in message.lower() or "queue is full" in message.lower()


def run_level(url: str, model: str, n: int, tokens: int, checks: bool = False,
              prompts: Optional[list] = None, start_gap_s: float = 0.0,
              timeout_s: float = 600.0) -> tuple[list, float]:
    """N clients at once (each in its own thread); their Streams and the level's wall time.
    A stream without an end after timeout_s counts as an error (with its job's status)."""
    prompts = prompts or [default_prompt()] * n
    streams = [Stream(prompt=prompts[i % len(prompts)], submitted=time.perf_counter()) for i in range(n)]
    threads = [threading.Thread(target=stream_one, args=(url, model, s.prompt, tokens, checks, s), daemon=True)
               for s in streams]
    t0 = time.perf_counter()
    for thread in threads:
        thread.start()
        if start_gap_s:
            time.sleep(start_gap_s)
    end = t0 + timeout_s
    for thread in threads:
        thread.join(timeout=max(0.0, end - time.perf_counter()))
    for thread, stream in zip(threads, streams):
        if thread.is_alive() and stream.error is None:
            code = getattr(stream.job.status(), "code", "?") if stream.job is not None else "not submitted"
            stream.error = f"no end within {timeout_s:.0f} s ({len(stream.arrivals)} messages; status {code})"
    return streams, time.perf_counter() - t0


def percentile(values: list, q: float) -> Optional[float]:
    if not values:
        return None
    values = sorted(values)
    k = min(len(values) - 1, max(0, round(q / 100 * (len(values) - 1))))
    return values[k]


def summarize(n: int, streams: list, wall: float) -> dict:
    done = [s for s in streams if s.error is None]
    ttft = [s.ttft for s in done if s.ttft is not None]
    gaps = [g for s in done for g in s.gaps()]
    rates = [s.rate for s in done if s.rate is not None]
    return {"clients": n, "done": len(done), "busy": sum(s.busy for s in streams),
            "errors": sum(s.error is not None and not s.busy for s in streams),
            "ttft_p50": percentile(ttft, 50), "ttft_p95": percentile(ttft, 95),
            "ttft_p99": percentile(ttft, 99), "gap_p99": percentile(gaps, 99),
            "min_rate": min(rates) if rates else None,
            "aggregate": sum(s.tokens for s in done) / wall if wall > 0 else 0.0, "wall": wall}


def row(stats: dict) -> str:
    def f(value, fmt="{:.2f}"):
        return "-" if value is None else fmt.format(value)
    return (f"| {stats['clients']:>3} | {f(stats['ttft_p50'])} | {f(stats['ttft_p95'])} | "
            f"{f(stats['ttft_p99'])} | {f(stats['gap_p99'])} | {f(stats['min_rate'], '{:.1f}')} | "
            f"{stats['aggregate']:.1f} | {stats['busy'] / stats['clients']:.0%} | {stats['errors']} |")


HEADER = ("| clients | TTFT p50 s | TTFT p95 s | TTFT p99 s | gap p99 s | slowest stream tok/s | "
          "aggregate tok/s | busy | errors |\n|---|---|---|---|---|---|---|---|---|")


def serve(port: int) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(ROOT / "app.py")], cwd=ROOT,
                            env={**os.environ, "PORT": str(port), "HOST": "127.0.0.1"},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def wait_for(url: str, timeout_s: float = 300.0) -> None:
    from gradio_client import Client

    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        try:
            Client(url, verbose=False)
            return
        except Exception:
            time.sleep(0.5)
    raise SystemExit(f"the app at {url} did not start within {timeout_s:.0f} s")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--loads", default=",".join(map(str, LOADS)))
    parser.add_argument("--tokens", type=int, default=48)
    parser.add_argument("--with-checks", action="store_true", help="C1 replay and C4 check on")
    parser.add_argument("--url", help="an app already running (default: serve app.py here)")
    parser.add_argument("--level-timeout", type=float, default=600.0,
                        help="seconds a level may take; streams still open then count as errors")
    args = parser.parse_args(argv)
    loads = [int(x) for x in args.loads.split(",") if x.strip()]

    server = None
    url = args.url
    if url is None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        server = serve(port)
        url = f"http://127.0.0.1:{port}/"
    try:
        wait_for(url)
        warm, _ = run_level(url, args.model, 1, 4)   # loads the model in the server process
        if warm[0].error:
            raise SystemExit(f"warm-up run failed: {warm[0].error}")
        print(f"{args.model}, {args.tokens} new tokens, default prompt, greedy, "
              f"checks {'on' if args.with_checks else 'off'}; os.cpu_count()={os.cpu_count()}, "
              f"load average {os.getloadavg()[0]:.1f}")
        print(HEADER, flush=True)
        for n in loads:
            streams, wall = run_level(url, args.model, n, args.tokens, args.with_checks,
                                      timeout_s=args.level_timeout)
            print(row(summarize(n, streams, wall)), flush=True)
            for s in streams:
                if s.error and not s.busy:
                    print(f"    error: {s.error}", flush=True)
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)


if __name__ == "__main__":
    main()
