"""A classroom at once: N visitors press Start together on the Generate tab, for N in a step load.

The app (app.py) is served from a second process, as visitors meet it; N clients here each
stream one /generate run at the same moment (the tab's default prompt, or with --prompts
distinct thirty different questions; greedy, 48 new tokens, the C1 replay and the C4 check off
unless --with-checks), then the next load level starts. A client is by default "raw": one POST
and one event stream, as the page's own script talks to the server, reading only what the table
needs (--client gradio: gradio_client, which costs the shared CPU as much as the app). Per level: time to first token p50/p95/p99 (submit to the first streamed text), the
p99 gap between two streamed messages, the slowest stream's tokens/s, aggregate tokens/s (all
tokens / the level's wall time), the share of runs refused as busy, and other errors.

    .venv/bin/python -m bench.classroom [--model smollm2-135m-instruct] [--loads 1,5,10,20,30,50]
                                        [--tokens 48] [--with-checks] [--url http://...]
                                        [--client raw|gradio] [--prompts same|distinct]
    .venv/bin/python -m bench.classroom --engine [--loads 1,10,30] [--rounds 3]
    .venv/bin/python -m bench.classroom --solo [--rounds 3]

--solo compares one visitor alone in the app with the engine's fastest path for one sequence
(the fused decode step, in this process while the app idles), alternating, on the default
prompt: streamed tokens/s after the first against the bare decode rate.

--engine measures the decode loop's engine alone, in this process, side by side in one run (so
that a shared, busy CPU slows both alike): per batch size B, the step time of B runs with the
pooled attention (one call per layer, engine/batched.py) against attention per run,
each run at its own position (the default prompt's length plus a few tokens apart), on the
scheduler's thread setting; and a run alone through the fused step (the engine's fastest path
for one sequence). Rounds alternate the paths; the median of each is printed.

The clients share the CPU with the server (a classroom's browsers would not): on a 2-core
machine their message handling takes a share of the cores from the decode.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
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


# --prompts distinct: thirty different questions a class might ask, so that no two runs share
# more than the chat template's opening (SmolLM2: its 24-token system prompt)
DISTINCT_PROMPTS = (
    "What is a transformer in machine learning?", "Why do language models need tokenizers?",
    "Explain attention in one sentence.", "What does a KV cache store?",
    "How does rotary position embedding work?", "Name three uses of large language models.",
    "What is the softmax function?", "Why is decoding slower than prefill per token?",
    "What is a mixture of experts?", "Describe gradient descent briefly.",
    "What is overfitting?", "How big is a typical vocabulary?", "What is perplexity?",
    "Why normalise activations?", "What is a residual connection?",
    "Give an example of a stop word.", "What is temperature in sampling?",
    "How does top-k sampling differ from top-p?", "What is a context window?",
    "Why are GPUs good at matrix products?", "What is quantisation of weights?",
    "Summarise what an embedding is.", "What does the LM head do?",
    "Is attention quadratic in sequence length? Why?", "What is FlashAttention for?",
    "How many parameters does a small model have?", "What is a sliding window mask?",
    "Why cache keys but not queries?", "Translate 'good morning' into Spanish.",
    "Write a haiku about the sea.")


def default_prompt() -> str:
    from explorer.ui.tabs.generate import DEFAULT_PROMPT
    return DEFAULT_PROMPT


OPENING = threading.Semaphore(4)   # clients opening the app at once (each parses its API)


def connect(url: str, out: Stream, clients: list, index: int, tries: int = 3) -> None:
    """One visitor opens the app (a gradio_client Client), before anyone presses Start; a
    few at a time, each tried again after a timeout (opening is outside the measured time)."""
    from gradio_client import Client

    for attempt in range(tries):
        try:
            with OPENING:
                clients[index] = Client(url, verbose=False)
            return
        except Exception as error:   # counted as an error of the level after the last try
            if attempt == tries - 1:
                out.error = f"could not open the app: {str(error)[:200]}"


def stream_one(url: str, model: str, prompt: str, tokens: int, checks: bool, out: Stream,
               client=None) -> None:
    """One visitor: submit /generate and read its stream to the end (a client of its own,
    opened here unless given)."""
    from gradio_client import Client

    if out.error is not None:   # the app never opened for this visitor
        return
    try:
        client = client or Client(url, verbose=False)
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


def stream_raw(url: str, payload: dict, out: Stream, timeout_s: float, http=None) -> None:
    """One visitor as the browser's page talks to the server: POST /queue/join for a session
    of its own, then read that session's event stream, one JSON message per line. Only what the
    table needs is read from each message (did the text change; the final status), so the
    client costs the shared CPU little (gradio_client applies every diff to every output).
    `http`: an httpx.Client made beforehand (closed here), as a visitor's page is open before
    Start; made here if None."""
    import json
    import uuid

    import httpx

    session = uuid.uuid4().hex
    out.submitted = time.perf_counter()
    try:
        with http if http is not None else httpx.Client(timeout=timeout_s) as http:
            joined = http.post(f"{url}gradio_api/queue/join", json={**payload, "session_hash": session})
            if joined.status_code != 200:
                out.error = f"join answered {joined.status_code}: {joined.text[:200]}"
                out.busy = "full" in joined.text.lower() or "busy" in joined.text.lower()
                return
            with http.stream("GET", f"{url}gradio_api/queue/data", params={"session_hash": session}) as events:
                for line in events.iter_lines():
                    if not line.startswith("data:"):
                        continue
                    message = json.loads(line[5:])
                    kind = message.get("msg")
                    if kind == "process_generating":
                        text = message["output"]["data"][0]
                        # the first message holds the text; later ones a list of edits to it
                        if (isinstance(text, str) and text) or (isinstance(text, list) and text):
                            out.arrivals.append(time.perf_counter())
                    elif kind == "process_completed":
                        output = message.get("output") or {}
                        if not message.get("success"):
                            error = str(output.get("error") or "failed")
                            out.error = error[:300]
                            out.busy = "busy" in error.lower()
                            return
                        out.text = output["data"][0] or ""
                        out.status = output["data"][1] or ""
                        found = re.search(r"\*\*(\d+)\*\*", out.status)
                        out.tokens = int(found.group(1)) if found else 0
                        return
        out.error = "the event stream ended before the run did"
    except Exception as error:   # counted, never hidden: the table reports every error
        out.error = str(error)[:300]


def run_raw_level(url: str, model: str, n: int, tokens: int, checks: bool = False,
                  timeout_s: float = 600.0, prompts: Optional[list] = None) -> tuple[list, float]:
    """N raw clients (stream_raw) press Start together, client i on prompts[i % len(prompts)]
    (default: everyone on the tab's default prompt); their Streams and the level's wall time."""
    from bench.cancel import join_payload

    prompts = prompts or [default_prompt()]
    payload = join_payload(url, "/generate", dict(
        model_name=model, lang="en", prompt=prompts[0], n_new=tokens, temp=0.0, k=0, p=1.0,
        seed_value=0, policy_value="full", w=64, s=4, compare_value=checks, check_value=checks))
    streams = [Stream(prompt=prompts[i % len(prompts)], submitted=time.perf_counter()) for i in range(n)]

    def payload_for(prompt: str) -> dict:
        data = list(payload["data"])
        data[2] = prompt   # the event's third input: the prompt box
        return {**payload, "data": data}

    # Each client's httpx.Client is made before the level starts, as a class has the page open
    # before pressing Start: making one costs ~35 ms of CPU (its TLS context, even for http), so
    # made at Start they took ~1 s of this machine's two cores from the server in the very second
    # the class's first tokens are computed (which a classroom's own laptops would not).
    import httpx

    clients = [httpx.Client(timeout=timeout_s) for _ in streams]
    threads = [threading.Thread(target=stream_raw, args=(url, payload_for(s.prompt), s, timeout_s, c),
                                daemon=True) for s, c in zip(streams, clients)]
    t0 = time.perf_counter()
    for thread in threads:
        thread.start()
    end = t0 + timeout_s
    for thread in threads:
        thread.join(timeout=max(0.0, end - time.perf_counter()))
    for thread, stream in zip(threads, streams):
        if thread.is_alive() and stream.error is None:
            stream.error = f"no end within {timeout_s:.0f} s ({len(stream.arrivals)} messages)"
    return streams, time.perf_counter() - t0


def run_level(url: str, model: str, n: int, tokens: int, checks: bool = False,
              prompts: Optional[list] = None, start_gap_s: float = 0.0,
              timeout_s: float = 600.0) -> tuple[list, float]:
    """N clients at once (each in its own thread); their Streams and the level's wall time.
    Every visitor opens the app first (as a class loads the page before pressing Start);
    then all submit together, and the wall time runs from there. A stream without an end
    after timeout_s counts as an error (with its job's status)."""
    prompts = prompts or [default_prompt()] * n
    streams = [Stream(prompt=prompts[i % len(prompts)], submitted=time.perf_counter()) for i in range(n)]
    clients: list = [None] * n
    openers = [threading.Thread(target=connect, args=(url, s, clients, i), daemon=True)
               for i, s in enumerate(streams)]
    for thread in openers:
        thread.start()
    for thread in openers:
        thread.join(timeout=timeout_s)
    threads = [threading.Thread(target=stream_one, args=(url, model, s.prompt, tokens, checks, s, c),
                                daemon=True) for s, c in zip(streams, clients)]
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


def bare_rate(model, prompt_ids: list, tokens: int) -> float:
    """Greedy decode rate (tokens/s after the first) of the fused step alone, no app."""
    import torch
    from engine.batched import BatchedDecoder

    decoder = BatchedDecoder(model, solo="fused")
    run = decoder.start(len(prompt_ids) + tokens)
    with torch.inference_mode():
        decoder.fused_for(run.options)   # the kernel built and its weights packed before timing
        token = int(decoder.prefill(prompt_ids, run)[0, -1].argmax())
        t0 = time.perf_counter()
        for _ in range(tokens - 1):
            token = int(decoder.step_many([token], [run])[0, -1].argmax())
    return (tokens - 1) / (time.perf_counter() - t0)


def solo(url: str, model_name: str, tokens: int, rounds: int) -> list:
    """(bare fused tokens/s, the app's streamed tokens/s) per round, alternating."""
    import torch
    from explorer.checkpoints import prepare_embedded
    from explorer.generate.request import encode_prompt
    from transformers import AutoTokenizer
    from models.loading import load_model

    folder = prepare_embedded(model_name)
    model = load_model(folder, device="cpu", dtype=torch.float32)
    prompt_ids, _ = encode_prompt(AutoTokenizer.from_pretrained(str(folder)), default_prompt())
    pairs = []
    for _ in range(rounds):
        bare = bare_rate(model, prompt_ids, tokens)
        streams, _ = run_raw_level(url, model_name, 1, tokens)
        pairs.append((bare, streams[0].rate))
        print(f"    fused step alone {bare:.1f} tokens/s, through the app {streams[0].rate or 0:.1f} "
              f"tokens/s, load average {os.getloadavg()[0]:.1f}", flush=True)
    return pairs


def cpu_seconds(pid: int) -> Optional[float]:
    """User + system CPU seconds a process has used so far (Linux /proc), None elsewhere."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--loads", default=",".join(map(str, LOADS)))
    parser.add_argument("--tokens", type=int, default=48)
    parser.add_argument("--with-checks", action="store_true", help="C1 replay and C4 check on")
    parser.add_argument("--url", help="an app already running (default: serve app.py here)")
    parser.add_argument("--level-timeout", type=float, default=600.0,
                        help="seconds a level may take; streams still open then count as errors")
    parser.add_argument("--engine", action="store_true",
                        help="the decode engine alone, pooled vs per-run attention (no app)")
    parser.add_argument("--rounds", type=int, default=3, help="--engine, --solo: alternating rounds")
    parser.add_argument("--client", choices=("raw", "gradio"), default="raw",
                        help="raw: one POST and one event stream per visitor, as the page does, "
                             "reading only the text's arrival (light on the shared CPU); gradio: "
                             "gradio_client, which applies every message's diffs")
    parser.add_argument("--prompts", choices=("same", "distinct"), default="same",
                        help="same: every visitor on the tab's default prompt (a class pressing "
                             "Start together); distinct: thirty different questions")
    parser.add_argument("--solo", action="store_true",
                        help="one visitor through the app vs the fused step alone, alternating")
    args = parser.parse_args(argv)
    loads = [int(x) for x in args.loads.split(",") if x.strip()]
    if args.engine:
        from bench.classroom_engine import ENGINE_HEADER, engine_row, engine_table
        print(f"{args.model}, engine only, default prompt; os.cpu_count()={os.cpu_count()}, "
              f"load average {os.getloadavg()[0]:.1f}")
        print(ENGINE_HEADER, flush=True)
        for b, per_run, pooled in engine_table(args.model, loads, args.rounds):
            print(engine_row(b, per_run, pooled), flush=True)
        print(f"load average after: {os.getloadavg()[0]:.1f}")
        return

    from bench.ceilings import connect, serve

    server = None
    url = args.url
    if url is None:   # the app in a child process, its output in a log beside the other benches'
        server, url = serve(Path(tempfile.gettempdir()) / "classroom-app.log")
    try:
        connect(url, server, 300.0).close()
        warm, _ = run_level(url, args.model, 1, 4)   # loads the model in the server process
        if warm[0].error:
            raise SystemExit(f"warm-up run failed: {warm[0].error}")
        print(f"{args.model}, {args.tokens} new tokens, greedy, "
              f"checks {'on' if args.with_checks else 'off'}, {args.client} clients, "
              f"{args.prompts} prompts; "
              f"os.cpu_count()={os.cpu_count()}, "
              f"load average {os.getloadavg()[0]:.1f}")
        if args.solo:
            pairs = solo(url, args.model, args.tokens, args.rounds)
            ratios = sorted(app / bare for bare, app in pairs if app)
            if ratios:
                print(f"one visitor through the app / the fused step alone: median "
                      f"{ratios[len(ratios) // 2]:.2f}x over {len(ratios)} rounds "
                      f"(goal >= 0.9x); load average {os.getloadavg()[0]:.1f}", flush=True)
            return
        prompts = list(DISTINCT_PROMPTS) if args.prompts == "distinct" else None
        print(HEADER, flush=True)
        for n in loads:
            cpu0 = cpu_seconds(server.pid) if server is not None else None
            bench0 = time.process_time()
            if args.client == "raw":
                streams, wall = run_raw_level(url, args.model, n, args.tokens, args.with_checks,
                                              timeout_s=args.level_timeout, prompts=prompts)
            else:
                streams, wall = run_level(url, args.model, n, args.tokens, args.with_checks,
                                          timeout_s=args.level_timeout, prompts=prompts)
            bench_cpu = time.process_time() - bench0
            stats = summarize(n, streams, wall)
            print(row(stats), flush=True)
            cpu1 = cpu_seconds(server.pid) if server is not None else None
            if cpu0 is not None and cpu1 is not None and cpu1 > cpu0:
                # what the level cost the app's process, whatever share of the cores it got
                tokens = stats["aggregate"] * wall
                print(f"    the app's process: {cpu1 - cpu0:.1f} CPU s for {tokens:.0f} tokens "
                      f"({tokens / (cpu1 - cpu0):.1f} tokens per CPU second); the clients "
                      f"({args.client}): {bench_cpu:.1f} CPU s; load average "
                      f"{os.getloadavg()[0]:.1f}", flush=True)
            else:
                print(f"    the clients ({args.client}): {bench_cpu:.1f} CPU s, load average "
                      f"{os.getloadavg()[0]:.1f}", flush=True)
            for s in streams:
                if s.error and not s.busy:
                    print(f"    error: {s.error}", flush=True)
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)


if __name__ == "__main__":
    main()
