"""One client floods the queue with long runs; how long does another visitor wait?
(docs/HARDENING.md, "Request bodies, the queue and the worker pool")

    .venv/bin/python -m bench.flood                      # serve app.py here, 64 calls
    .venv/bin/python -m bench.flood --url http://127.0.0.1:7860/ --calls 64

The attacker (X-Forwarded-For 10.9.0.1; the served app trusts one proxy) posts `--calls`
StreamingLLM runs with distinct windows to /gradio_api/call/streaming_ppl and keeps no stream
open. Two seconds later a visitor from another address (10.9.0.2) loads the page (GET / and the
header's /load_model to its end), presses Generate (time to the first streamed text) and asks
for an attention map (time to its result); each is waited for at most `--wait` seconds. Prints
how many of the attacker's calls were accepted and each of the visitor's times.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional

import httpx

ROOT = Path(__file__).resolve().parents[1]
MODEL = "smollm2-135m-instruct"
ATTACKER, VISITOR = "10.9.0.1", "10.9.0.2"
MAP = [MODEL, "en", "The cat sat on the mat because it was warm.", 2, "all", "causal", 8, 2, 1.0,
       "eager", 0]
GENERATE = [MODEL, "en", "What is a KV cache?", 16, 0.0, 0, 1.0, 0, "full", 64, 4, False, False]


def serve() -> tuple[subprocess.Popen, str]:
    """`python app.py` on a free port, trusting one proxy (the addresses are set per request)."""
    from bench.ceilings import free_port

    port = free_port()
    env = dict(os.environ, HOST="127.0.0.1", PORT=str(port), GRADIO_ANALYTICS_ENABLED="False",
               EXPLORER_TRUST_PROXY="1", PYTHONUNBUFFERED="1")
    log = open(ROOT / "artifacts" / "flood_server.log", "w")
    server = subprocess.Popen([sys.executable, str(ROOT / "app.py")], cwd=ROOT, env=env,
                              stdout=log, stderr=subprocess.STDOUT)
    return server, f"http://127.0.0.1:{port}/"


def wait_until_served(url: str, timeout_s: float = 300.0) -> None:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        try:
            if httpx.get(f"{url}config", timeout=5).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(1)
    raise TimeoutError(f"{url} did not serve within {timeout_s:.0f} s")


def post(http: httpx.Client, url: str, api: str, data: list, address: str) -> httpx.Response:
    return http.post(f"{url}gradio_api/call/{api}", json={"data": data},
                     headers={"x-forwarded-for": address})


def timed(http: httpx.Client, url: str, api: str, data: list, address: str, wait_s: float,
          first: bool = False) -> tuple[Optional[float], str]:
    """(seconds to the first streamed output if `first`, else to the end; None if none came
    within wait_s or the call failed, how it ended)."""
    started = time.monotonic()
    answer = post(http, url, api, data, address)
    if answer.status_code != 200:
        return None, f"refused {answer.status_code}: {answer.text[:120]}"
    event = None
    try:
        with http.stream("GET", f"{url}gradio_api/call/{api}/{answer.json()['event_id']}",
                         timeout=httpx.Timeout(wait_s)) as stream:
            for line in stream.iter_lines():
                if line.startswith("event:"):
                    event = line.split(":", 1)[1].strip()
                    if (first and event == "generating") or event in ("complete", "error"):
                        break
                if time.monotonic() - started > wait_s:
                    break
    except httpx.TimeoutException:
        pass
    seconds = time.monotonic() - started
    if event in ("complete", "generating") and seconds <= wait_s:
        return seconds, event
    return None, event or f"nothing within {wait_s:.0f} s"


def flood(url: str, calls: int, wait_s: float, tokens: int) -> dict:
    with httpx.Client(timeout=30) as http:
        # the model loaded first, so that the visitor's times are not a first load's
        timed(http, url, "load_model", [MODEL, "en"], "10.9.0.3", 300)
        codes = [post(http, url, "streaming_ppl", [MODEL, "en", tokens, 64 + 8 * i, 4], ATTACKER).status_code
                 for i in range(calls)]
        time.sleep(2)
        started = time.monotonic()
        page = http.get(url, headers={"x-forwarded-for": VISITOR})
        loaded, load_end = timed(http, url, "load_model", [MODEL, "en"], VISITOR, wait_s)
        page_s = None if page.status_code != 200 or loaded is None else time.monotonic() - started
        first_token, generate_end = timed(http, url, "generate", GENERATE, VISITOR, wait_s, first=True)
        mapped, map_end = timed(http, url, "attention_map", MAP, VISITOR, wait_s)
    return {"calls": calls, "accepted": codes.count(200),
            "refused": {str(c): codes.count(c) for c in sorted(set(codes)) if c != 200},
            "page_load_s": page_s, "page_end": load_end, "first_token_s": first_token,
            "generate_end": generate_end, "attention_map_s": mapped, "map_end": map_end,
            "wait_s": wait_s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", help="an app already serving, with EXPLORER_TRUST_PROXY=1")
    parser.add_argument("--calls", type=int, default=64)
    parser.add_argument("--tokens", type=int, default=2048, help="StreamingLLM's text length")
    parser.add_argument("--wait", type=float, default=90.0, help="seconds the visitor waits at most")
    parser.add_argument("--json", help="write the result here")
    args = parser.parse_args()
    server = None
    if args.url:
        url = args.url if args.url.endswith("/") else args.url + "/"
    else:
        (ROOT / "artifacts").mkdir(exist_ok=True)
        server, url = serve()
    try:
        wait_until_served(url)
        result = flood(url, args.calls, args.wait, args.tokens)
    finally:
        if server is not None:
            server.terminate()
            server.wait(30)
    print(json.dumps(result, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    fmt = lambda s: "none within %.0f s" % args.wait if s is None else "%.1f s" % s
    print(f"RESULT flood: {result['accepted']}/{args.calls} long calls accepted; the visitor's page "
          f"load {fmt(result['page_load_s'])}, first token {fmt(result['first_token_s'])}, "
          f"attention map {fmt(result['attention_map_s'])}")


if __name__ == "__main__":
    main()
