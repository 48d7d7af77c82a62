"""A classroom, before and after a change: two revisions of the app served side by side and the
same class (N raw clients pressing Start together on the Generate tab, bench/classroom.py's
levels) sent to each in turn, interleaved, so that a busy host slows both alike.

    .venv/bin/python -m bench.classroom_ab --before 985bb6a [--after HEAD] [--loads 10,30]
                                           [--rounds 3] [--tokens 48]

Each revision is checked out into a detached worktree under the temp folder (or given as a
folder) and served by its own app.py, with this checkout's Python and checkpoints cache. Every
round runs each level on both servers, the side that goes first alternating; per level the
medians over rounds of aggregate tokens/s and TTFT p95 are printed with the ratio after/before.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.ceilings import connect, serve  # noqa: E402 (ROOT first)
from bench.classroom import run_raw_level, summarize  # noqa: E402


def checkout(rev: str) -> Path:
    """A folder holding `rev`: the folder itself when `rev` is one, else a detached worktree."""
    if Path(rev).is_dir():
        return Path(rev).resolve()
    sha = subprocess.run(["git", "rev-parse", "--short", rev], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout.strip()
    folder = Path(tempfile.gettempdir()) / f"explorer-ab-{sha}"
    if not folder.exists():
        subprocess.run(["git", "worktree", "add", "--detach", str(folder), sha], cwd=ROOT,
                       check=True, capture_output=True)
    return folder


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", required=True)
    parser.add_argument("--after", default="HEAD")
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--loads", default="10,30")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tokens", type=int, default=48)
    args = parser.parse_args(argv)
    loads = [int(x) for x in args.loads.split(",") if x.strip()]
    sides = {"before": checkout(args.before), "after": checkout(args.after)}
    servers, urls = {}, {}
    try:
        for side, folder in sides.items():
            log = Path(tempfile.gettempdir()) / f"classroom-ab-{side}.log"
            servers[side], urls[side] = serve(log, root=folder)
        for side in sides:
            connect(urls[side], servers[side], 600.0).close()
            warm, _ = run_raw_level(urls[side], args.model, 1, 4)   # loads the model
            if warm[0].error:
                raise SystemExit(f"{side}: warm-up run failed: {warm[0].error}")
        results = {(side, n): [] for side in sides for n in loads}
        for r in range(args.rounds):
            order = list(sides) if r % 2 == 0 else list(sides)[::-1]
            for n in loads:
                for side in order:
                    streams, wall = run_raw_level(urls[side], args.model, n, args.tokens)
                    stats = summarize(n, streams, wall)
                    results[(side, n)].append(stats)
                    print(f"round {r + 1} {side:6} N={n:>3}: {stats['aggregate']:.1f} tok/s, "
                          f"TTFT p95 {stats['ttft_p95'] or 0:.2f} s, errors {stats['errors']}, "
                          f"busy {stats['busy']}; load average {os.getloadavg()[0]:.1f}", flush=True)
        print(f"\n{args.model}, {args.tokens} new tokens, greedy, raw clients; before "
              f"{args.before} ({sides['before']}), after {args.after} ({sides['after']})")
        print("| N | aggregate tok/s before | after | after/before | TTFT p95 s before | after |"
              "\n|---|---|---|---|---|---|")
        for n in loads:
            agg = {s: statistics.median(x["aggregate"] for x in results[(s, n)]) for s in sides}
            ttft = {s: statistics.median(x["ttft_p95"] or 0.0 for x in results[(s, n)]) for s in sides}
            print(f"| {n} | {agg['before']:.1f} | {agg['after']:.1f} | "
                  f"{agg['after'] / agg['before']:.2f} | {ttft['before']:.2f} | {ttft['after']:.2f} |")
    finally:
        for server in servers.values():
            server.terminate()
            server.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
