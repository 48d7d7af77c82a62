"""Gradio's answer to the outputs an event skips, against the app's (explorer/web/gradio_skips.py),
interleaved: the Python one following page costs the server at a class's move (`apply_move`,
93 outputs, 71 of them skipped), in the app as built.

    python bench/skips.py                 # 5 rounds of 20 calls each way
    python bench/skips.py --rounds 9

Prints the median per call of each way and their ratio: `SKIPS: apply_move <gradio> ms -> <app> ms`.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=20)
    args = parser.parse_args(argv)

    import app
    from gradio import state_holder
    from gradio.blocks import Blocks

    from explorer.runtime import Runtime

    runtime = Runtime()
    demo = app.build_app(runtime)          # applies the patches (explorer/web/gradio_patches.py)
    patched = Blocks.postprocess_data
    gradio = getattr(patched, "__wrapped__", None)
    if gradio is None:
        print("the patch is not installed (another Gradio version?)")
        return 1
    named = {getattr(fn.fn, "__qualname__", ""): fn for fn in demo.fns.values()}
    move = named["wire.<locals>.apply_move"]
    raw = json.dumps({"link": "?lesson=kv-cache&step=3", "moves": 3})
    times: dict[str, list[float]] = {"gradio": [], "app": []}

    async def rounds() -> None:
        session = state_holder.SessionState(demo)
        for _ in range(args.rounds):
            for way, method in (("gradio", gradio), ("app", patched)):
                started = time.perf_counter()
                for _ in range(args.calls):
                    await method(demo, move, move.fn(raw, "en", runtime.default_name), session)
                times[way].append((time.perf_counter() - started) / args.calls * 1000)

    asyncio.run(rounds())
    before, after = statistics.median(times["gradio"]), statistics.median(times["app"])
    print(f"SKIPS: apply_move {before:.1f} ms -> {after:.1f} ms per call "
          f"({before / after:.1f}x; {args.rounds} interleaved rounds of {args.calls})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
