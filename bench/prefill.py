"""Prefill speed, ours vs transformers, side by side in one process: both models loaded on the
same checkpoint, their prefills interleaved round by round, the ratio taken per round (both
sides of a round see the same machine) and summarised by its median.

    PYTHONPATH=. .venv/bin/python -m bench.prefill [--models M ...] [--lengths 16 512 2048] [--rounds 7]

bench.decode runs each implementation in its own process (so that peak memory is its own);
on this shared host the speed drifts by ±20% within minutes, which moves its cross-process
prefill ratio by as much. This one answers only "which prefill is faster", as fairly as one
process allows. Ours fills a KV cache and keeps the last logits (what generation does); theirs
is called as generate() calls it (use_cache, logits_to_keep=1)."""
from __future__ import annotations

import argparse
import time
from statistics import median

import torch

from bench.decode import LENGTHS, prompt_ids


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="*", default=list(LENGTHS))
    parser.add_argument("--lengths", nargs="*", type=int)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--malloc", choices=("tuned", "default"), default="tuned",
                        help="tuned (both sides share the process): models.device.tune_cpu_allocator")
    args = parser.parse_args(argv)
    torch.set_num_threads(2)
    if args.malloc == "tuned":
        from models.device import tune_cpu_allocator
        tune_cpu_allocator()
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from explorer.checkpoints import prepare_embedded
    from models.forward import RunOptions
    from models.loading import load_model

    rows = []
    for name in args.models:
        folder = prepare_embedded(name)
        ours = load_model(folder, device="cpu", dtype=torch.float32)
        theirs = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
        tokenizer = AutoTokenizer.from_pretrained(folder)
        opts = RunOptions(last_logits_only=True)
        for length in args.lengths or LENGTHS[name]:
            ids = torch.tensor([prompt_ids(tokenizer, length)])

            def ours_prefill():
                return ours(ids, cache=ours.new_cache(length + 32), options=opts)[0, -1]

            def their_prefill():
                return theirs(ids, use_cache=True, logits_to_keep=1).logits[0, -1]

            times = {"ours": [], "theirs": []}
            with torch.inference_mode():
                diff = (ours_prefill() - their_prefill()).abs().max().item()  # also the warm-up
                for r in range(args.rounds):
                    pair = [("ours", ours_prefill), ("theirs", their_prefill)]
                    for label, fn in pair if r % 2 == 0 else pair[::-1]:  # alternate who goes first
                        t0 = time.perf_counter()
                        fn()
                        times[label].append(time.perf_counter() - t0)
            ratios = [t / o for o, t in zip(times["ours"], times["theirs"])]
            row = (name, length, length / median(times["ours"]), length / median(times["theirs"]),
                   median(ratios), min(ratios), max(ratios), diff)
            rows.append(row)
            print(f"{name} {length}: ours/theirs speed per round " + " ".join(f"{x:.2f}" for x in ratios), flush=True)
        del ours, theirs
    print(f"\n{args.rounds} rounds per cell, order alternating, allocator {args.malloc}\n\n| model | prompt | prefill tok/s ours / "
          "transformers (medians) | speed ratio, median of rounds (min-max) | max abs logit diff |\n"
          "|---|---|---|---|---|")
    for name, length, ours_rate, their_rate, med, lo, hi, diff in rows:
        print(f"| {name} | {length} | {ours_rate:.0f} / {their_rate:.0f} | {med:.2f}x ({lo:.2f}-{hi:.2f}) | {diff:.1e} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
