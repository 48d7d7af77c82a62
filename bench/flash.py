"""Benchmarks of the FlashAttention tab, printed as tables.

    .venv/bin/python bench/flash.py            # frames for n = 256 (32 x 32), timing, memory
    .venv/bin/python bench/flash.py --long     # up to n = 8192, the compiled kernel to 16384 (minutes)

The frames figure is the tab's budget (ready in <= 1 s after the head is captured). The timing
table compares the three paths on one head measured in the same run: their ratios are the
figures to read, since absolute times depend on how busy the machine is.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from explorer import prompts  # noqa: E402
from explorer.flash import capture as flash_capture, compiled, figures, memory, schedule, timing  # noqa: E402
from explorer.runtime import Runtime  # noqa: E402
from explorer.flash.capture import DEFAULT_PROMPT  # noqa: E402
from models.attention import MaskSpec  # noqa: E402

SMOL = "smollm2-135m-instruct"


def best_of(fn, repeat=3):
    times, out = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return min(times), out


def frames(runtime, n=256, block=32, layer=2, head=0):
    loaded = runtime.get(SMOL)
    ids = prompts.encode(loaded.tokenizer, DEFAULT_PROMPT, n, truncate=True)
    ids = flash_capture.fill_to(ids, n, bos_id=loaded.tokenizer.bos_token_id)
    t_capture, cap = best_of(lambda: flash_capture.capture(loaded.model, ids, layer, head))
    t_run, result = best_of(lambda: schedule.run(cap, block, block))
    t_figures, drawn = best_of(lambda: figures.figures(result, "en"))
    t_tiles, tiles = best_of(lambda: figures.tiles_figure(result, "en"))
    t_json, payload = best_of(lambda: tiles.to_json())
    steps = len(result.steps)
    print(f"\n## Frames: n = {n}, {block} x {block} tiles, layer {layer} head {head} ({SMOL})")
    print("| step | seconds (best of 3) |")
    print("|---|---|")
    print(f"| capture q, k, v (one forward of {n} tokens) | {t_capture:.3f} |")
    print(f"| schedule.run: naive + tiled (traced) + SDPA + row | {t_run:.3f} |")
    print(f"| figures (naive, tiled with {steps} frames, row) | {t_figures:.3f} |")
    print(f"| of which the tiled figure | {t_tiles:.3f} |")
    print(f"| tiled figure to JSON ({len(payload) / 1e3:.0f} kB) | {t_json:.3f} |")
    print(f"| **frames ready after the capture (run + figures + JSON)** | **{t_run + t_figures + t_json:.3f}** |")
    meta = json.loads(payload)["layout"]["meta"]
    assert len(meta["flash_frames"]) == steps


def timings(ns, d=64, block=64, mask=MaskSpec()):
    sweep = timing.sweep(ns, d, block, block, mask)
    print(f"\n## Timing: one head, d = {d}, {block} x {block} tiles, {mask.describe()}, {sweep.device}, "
          f"{torch.get_num_threads()} threads, median of 3")
    print("| n | naive ms | tiled ms | SDPA ms | tiled / naive | naive / SDPA | tiles |")
    print("|---|---|---|---|---|---|---|")
    for i, n in enumerate(sweep.ns):
        naive, tiled, sdpa = (sweep.seconds[p][i] * 1e3 for p in ("naive", "tiled", "sdpa"))
        print(f"| {n} | {naive:.2f} | {tiled:.2f} | {sdpa:.2f} | {tiled / naive:.1f}x | {naive / sdpa:.1f}x "
              f"| {sweep.tiles[i]} |")
    print(f"crossover (tiled no slower than naive): {sweep.crossover}")


def compiled_vs_naive(ns, d=64, block=64, mask=MaskSpec()):
    """The compiled tiled kernel against naive and SDPA up to large n (the Python loop is left
    out: at 16k tokens it would visit 65,536 tiles), with each path's measured extra memory."""
    paths = ("naive", "sdpa", "compiled")
    sweep = timing.sweep(ns, d, block, block, mask, repeats=3, paths=paths)
    mem = memory.sweep(ns, d, block, block, mask, paths=paths)
    print(f"\n## Compiled tiled kernel vs naive: one head, d = {d}, {block} x {block}, {mask.describe()}, "
          f"{sweep.device}, {torch.get_num_threads()} threads, median of 3")
    print("| n | naive ms | compiled ms | SDPA ms | compiled / naive | naive extra | compiled extra | SDPA extra |")
    print("|---|---|---|---|---|---|---|---|")
    for i, n in enumerate(sweep.ns):
        naive, comp, sdpa = (sweep.seconds[p][i] * 1e3 for p in paths)
        print(f"| {n} | {naive:.1f} | {comp:.1f} | {sdpa:.1f} | {comp / naive:.2f}x | "
              f"{mem.extra['naive'][i] / 1e6:.1f} MB | {mem.extra['compiled'][i] / 1e3:.1f} kB | "
              f"{mem.extra['sdpa'][i] / 1e3:.1f} kB |")


def memories(ns, d=64, block=64, mask=MaskSpec()):
    sweep = memory.sweep(ns, d, block, block, mask)
    print(f"\n## Peak extra memory (beyond inputs and output), one head, d = {d}, {block} x {block}, "
          f"{mask.describe()}, {sweep.device} (torch.profiler memory events)")
    print("| n | naive | n x n fp32 matrices | tiled | SDPA |")
    print("|---|---|---|---|---|")
    for i, n in enumerate(sweep.ns):
        naive, tiled, sdpa = (sweep.extra[p][i] for p in ("naive", "tiled", "sdpa"))
        print(f"| {n} | {naive / 1e6:.2f} MB | {naive / (4 * n * n):.2f} | {tiled / 1e3:.1f} kB | {sdpa / 1e3:.1f} kB |")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--long", action="store_true", help="timing and memory up to n = 8192")
    args = parser.parse_args()
    from models.device import tune_cpu_allocator
    tune_cpu_allocator()
    runtime = Runtime()
    frames(runtime)
    top = 8192 if args.long else 2048
    ns = [n for n in (256, 512, 1024, 2048, 4096, 8192) if n <= top]
    timings(ns)
    timings(ns, mask=MaskSpec(window=256))
    memories([n for n in ns if n <= (4096 if args.long else 1024)])
    if compiled.available():
        compiled_vs_naive([2048, 4096, 8192, 16384] if args.long else [1024, 2048])


if __name__ == "__main__":
    main()
