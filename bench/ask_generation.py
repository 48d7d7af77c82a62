"""Wait for a served app, then ask it for one short greedy /generate through gradio_client; exit
status 1 unless text came back. The last step of bench/container_check.sh and
bench/space_check.sh (run with whichever Python has gradio_client: the host's .venv, the
Space's fresh venv).

    python bench/ask_generation.py http://127.0.0.1:7871/ [--wait-s 900] [--timeout-s 600]
"""
from __future__ import annotations

import argparse
import sys
import time
from typing import Optional


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("url")
    parser.add_argument("--wait-s", type=float, default=900, help="how long to wait for the server")
    parser.add_argument("--timeout-s", type=float, default=600, help="how long the generation may take")
    args = parser.parse_args(argv)
    from gradio_client import Client

    started = time.time()
    while True:
        try:
            client = Client(args.url, verbose=False)
            break
        except Exception:
            if time.time() - started > args.wait_s:
                print(f"no server at {args.url} after {args.wait_s:.0f} s", file=sys.stderr)
                return 1
            time.sleep(3)
    print(f"serving after {time.time() - started:.0f} s of waiting")
    t0 = time.time()
    job = client.submit(api_name="/generate", prompt="What is a KV cache?", n_new=8,
                        compare_value=False, check_value=False)
    outputs = job.result(timeout=args.timeout_s)
    text = next((o for o in outputs if isinstance(o, str) and o.strip()), None)
    if text is None:
        print("the generation answered no text", file=sys.stderr)
        return 1
    print(f"generation answered in {time.time() - t0:.1f} s: {text[:200]!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
