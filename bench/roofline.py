"""The Generate tab's decode roofline measured from a shell, as a Markdown table
(docs/BENCHMARKS.md, claim C2): this device's roof, then the engine's batched decode step timed
at B = 1, 2, 4, 8, 16 (explorer/generate/roofline.py).

    PYTHONPATH=. .venv/bin/python -m bench.roofline --model smollm2-135m-instruct --context 64"""
from __future__ import annotations

import argparse
import os
from typing import Optional, Sequence

from explorer.generate import device_roof
from explorer.serving import batch_threads
from explorer.generate.roofline import DEFAULT_CONTEXT, TIMED_STEPS, check_context, prompt_ids, run
from explorer.generate.roofline_figures import device_line, summary
from explorer.runtime import Runtime


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--context", type=int, default=DEFAULT_CONTEXT)
    parser.add_argument("--steps", type=int, default=TIMED_STEPS)
    args = parser.parse_args(argv)
    loaded = Runtime().get(args.model)
    threads = batch_threads()
    roof = device_roof.measure(loaded.device, loaded.dtype, threads)
    result = run(loaded.model, prompt_ids(loaded.tokenizer, check_context(args.context)), roof,
                 name=args.model, timed_steps=args.steps, threads=threads)
    print(f"load average {os.getloadavg()[0]:.1f} (1 min), {result.threads} intra-op thread(s)")
    print(device_line(roof).replace("**", ""))
    print("\n| B | step ms (best) | tokens/s | intensity FLOP/B | GB/s achieved | GFLOP/s achieved |")
    print("|---|---|---|---|---|---|")
    for row in zip(result.batches, result.step_seconds, result.tokens_per_s, result.intensity,
                   result.achieved_bandwidth, result.achieved_flops):
        b, s, r, i, bw, fl = row
        print(f"| {b} | {s * 1e3:.1f} | {r:.1f} | {i:.2f} | {bw / 1e9:.1f} | {fl / 1e9:.1f} |")
    print()
    print(summary(result).replace("**", ""))


if __name__ == "__main__":
    main()
