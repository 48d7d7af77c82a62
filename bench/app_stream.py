"""Streaming cost of the Generate tab: time to first token and streamed tokens/s through the
real app (app.py served from a second process, gradio_client here), against the engine's own
decode rate measured in this process, alternating so that machine load hits both alike. The
client shares the 2 cores with the server, which a visitor's browser would not.

    .venv/bin/python bench/app_stream.py [--model smollm2-135m-instruct] [--tokens 64] [--rounds 7]
                                         [--in-process]

Prints one line per round and the median ratio (app / engine); on this shared host single
rounds swing by ±20%, so read the median of several. The app run has the C1 replay and the
C4 check switched off, so only streaming is measured."""
from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# 33 tokens with SmolLM2's chat template (its system turn alone is ~30; the exact count is
# printed), and its greedy answer runs past 96 tokens, so app and engine decode the same count.
PROMPT = "Describe Paris."


def engine_run(loaded, ids, n_tokens):
    """(time to first token, decode tokens/s) of models.generate.generate called directly, in a
    fresh thread like the app's decode worker. (On this machine, under load, torch ops issued
    from the main thread ran 3-10x slower than the same ops from another thread with the same
    2-thread setting; measuring both sides from worker threads keeps the ratio honest.)"""
    out = []
    worker = threading.Thread(target=lambda: out.append(_engine_run(loaded, ids, n_tokens)))
    worker.start()
    worker.join()
    return out[0]


def _engine_run(loaded, ids, n_tokens):
    from models.generate import SamplingParams, generate

    start = time.perf_counter()
    first = last = None
    count = 0
    for step in generate(loaded.model, ids, SamplingParams(max_new_tokens=n_tokens), eos_ids=[]):
        now = time.perf_counter()
        first = first or now
        last = now
        count += 1
    return first - start, (count - 1) / (last - first)


def app_run(client, model, n_tokens):
    """(time to first token, streamed tokens/s, tokens) as a gradio_client sees them, and the
    rate the server's own status line reports (generator yields, client cost excluded)."""
    start = time.perf_counter()
    job = client.submit(model, "en", PROMPT, n_tokens, 0.0, 0, 1.0, 0, "full", 64, 4, False, False,
                        api_name="/generate")
    arrivals, text = [], ""
    for output in job:
        if output[0] and output[0] != text:
            text = output[0]
            arrivals.append(time.perf_counter())
    final = job.result()
    tokens = int(final[1].split("**")[1])  # "Done (...): **N** tokens ... · R tokens/s"
    server_rate = float(re.search(r"([0-9.]+) tokens/s", final[1]).group(1))
    server_ttft = float(re.search(r"first token after ([0-9.]+) s", final[1]).group(1))
    ttft = arrivals[0] - start
    # text updates can merge two tokens into one message; count tokens, not messages
    rate = (tokens - 1) / (arrivals[-1] - arrivals[0])
    return ttft, rate, tokens, server_rate, server_ttft


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--in-process", action="store_true",
                        help="serve the app from this process (default: a second process, as in use)")
    args = parser.parse_args()

    from gradio_client import Client

    from bench.serve import build, free_port, launch
    from explorer.generate.request import encode_prompt
    from explorer.runtime import Runtime

    runtime = Runtime()
    loaded = runtime.get(args.model)
    ids, chat = encode_prompt(loaded.tokenizer, PROMPT)
    if not args.in_process:
        # Default: the app in its own process, as it runs for visitors; the client's work does
        # not share the server's interpreter (its GIL).
        port = free_port()
        url = f"http://127.0.0.1:{port}/"
        server = subprocess.Popen([sys.executable, str(ROOT / "app.py")], cwd=ROOT,
                                  env={**os.environ, "PORT": str(port), "HOST": "127.0.0.1"},
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        close = lambda: (server.terminate(), server.wait(timeout=30))
    else:
        # One process: engine and app alternate on the same model, and client and server share
        # one interpreter (a pessimistic setting: every client message takes the server's GIL).
        demo = build(runtime)
        url = launch(demo)
        close = demo.close
    try:
        client = None
        for _ in range(600):
            try:
                client = Client(url, verbose=False)
                break
            except Exception:
                time.sleep(0.5)
        if client is None:
            raise SystemExit("the app did not start")
        run_rounds(args, loaded, ids, chat, client, runtime)
    finally:
        close()


def run_rounds(args, loaded, ids, chat, client, runtime):
    print(f"{args.model} on {runtime.device_label}; prompt {len(ids)} tokens "
          f"({'chat template' if chat else 'plain'}), {args.tokens} new tokens, greedy")
    engine_run(loaded, ids, 4)  # warm-up
    app_run(client, args.model, 4)  # also loads the model in the server process
    e_ttft, e_rate, a_ttft, a_rate = [], [], [], []
    for r in range(args.rounds):
        t1, r1 = engine_run(loaded, ids, args.tokens)
        t2, r2, n, r3, t3 = app_run(client, args.model, args.tokens)
        e_ttft.append(t1), e_rate.append(r1), a_ttft.append(t2), a_rate.append(r2)
        print(f"round {r + 1}: engine ttft {t1:.3f} s, {r1:.1f} tok/s | app ttft {t2:.3f} s "
              f"(handler start to first token {t3:.2f} s), "
              f"{r2:.1f} tok/s at the client, {r3:.1f} in the server's status ({n} tokens) | "
              f"app/engine rate {r2 / r1:.2f}")
    med = statistics.median
    print(f"median: engine ttft {med(e_ttft):.3f} s, {med(e_rate):.1f} tok/s; app ttft "
          f"{med(a_ttft):.3f} s, {med(a_rate):.1f} tok/s; streamed/engine rate "
          f"{med([a / e for a, e in zip(a_rate, e_rate)]):.2f}")


if __name__ == "__main__":
    main()
