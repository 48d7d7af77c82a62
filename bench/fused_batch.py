"""The fused batched decode step against the pooled step and the solo fused step, interleaved.

    .venv/bin/python -m bench.fused_batch                               # SmolLM2, default precision
    .venv/bin/python -m bench.fused_batch --model gemma-3-270m --sizes 1 2 4 --rounds 4

Loads the model as the app does and starts, per path, the largest batch of runs (each prefilled
with `--prompt` tokens of the shipped text); then, round after round, steps each path at every
batch size in turn (so the machine's noise falls on all of them alike) and prints the best step
of each (ms), its tokens per second (B / step) and its ratio to the solo fused step. Paths:
"solo" (one run, engine.fused, the same at every B), "pooled" (BatchedDecoder with
fused_batch=False: the pooled forward for B >= 2), "fused" (BatchedDecoder: the fused batched
step for B >= 2). Before timing, the fused batched logits of a B = 4 step are checked against the
same runs decoded alone on the solo step (printed: the largest difference, and greedy equality).
"""
from __future__ import annotations

import argparse
import time

import torch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 2, 4, 8, 16, 32])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--prompt", type=int, default=64)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--weights", default=None, help="fp32 | bf16 | int8 | gguf (default: the model's)")
    args = parser.parse_args()

    from explorer.generate.roofline import prompt_ids
    from explorer.runtime import Runtime
    from engine.batched import BatchedDecoder
    from models.device import intra_op_threads
    from models.forward import RunOptions

    loaded = Runtime().get(args.model)
    model = loaded.model
    ids = prompt_ids(loaded.tokenizer, args.prompt)
    most = max(args.sizes)
    room = args.prompt + args.rounds * len(args.sizes) + 16
    paths = {"solo": BatchedDecoder(model, weights=args.weights),
             "pooled": BatchedDecoder(model, weights=args.weights, fused_batch=False),
             "fused": BatchedDecoder(model, weights=args.weights)}
    print(f"{args.model}, weights {paths['fused'].weights}, {args.threads} thread(s), "
          f"prompt {args.prompt}")
    best: dict = {}
    with intra_op_threads(args.threads), torch.inference_mode():
        runs = {}
        for name, dec in paths.items():
            runs[name] = [dec.start(room + 8, RunOptions()) for _ in range(1 if name == "solo" else most)]
            for run in runs[name]:
                dec.prefill(ids, run)
        check(paths["fused"], model, ids, RunOptions())
        token = ids[-1]
        for rnd in range(args.rounds):
            for b in args.sizes:
                for name, dec in paths.items():
                    group = runs[name][:1] if name == "solo" else runs[name][:b]
                    if name == "solo" and b != args.sizes[0]:
                        continue
                    if name != "solo" and b == 1:
                        continue
                    t0 = time.perf_counter()
                    dec.step_many([token] * len(group), group)
                    dt = time.perf_counter() - t0
                    if rnd:   # the first round warms up (packing, kernels, pool growth)
                        key = (name, 1 if name == "solo" else b)
                        best[key] = min(best.get(key, dt), dt)
    solo = best[("solo", 1)]
    print(f"solo fused step: {solo * 1e3:.2f} ms, {1 / solo:.1f} tokens/s")
    print(f"{'B':>3} {'pooled ms':>10} {'tok/s':>7} {'fused ms':>9} {'tok/s':>7} {'pooled/fused':>12} "
          f"{'fused tok/s vs solo':>19}")
    for b in args.sizes:
        if b == 1:
            continue
        p, f = best[("pooled", b)], best[("fused", b)]
        print(f"{b:>3} {p * 1e3:>10.2f} {b / p:>7.1f} {f * 1e3:>9.2f} {b / f:>7.1f} {p / f:>12.2f} "
              f"{(b / f) / (1 / solo):>19.2f}")


def check(decoder, model, ids, options) -> None:
    """Four runs (prompts of different lengths) decoded 8 steps by the fused batched step and
    each alone by the solo fused step: the largest logit difference and greedy equality."""
    fused = decoder.fused_for(options)
    lengths = [len(ids), len(ids) - 7, len(ids) - 20, len(ids) - 3]
    runs = [decoder.start(len(ids) + 16, options) for _ in lengths]
    alone = [fused.new_cache(len(ids) + 16) for _ in lengths]
    firsts = []
    for run, cache, n in zip(runs, alone, lengths):
        decoder.prefill(ids[:n], run)
        firsts.append(int(fused.prefill(ids[:n], cache)[0, -1].argmax()))
    toks, mine = list(firsts), list(firsts)
    worst, same = 0.0, True
    for _ in range(8):
        out = decoder.step_many(mine, runs)[:, 0]
        ref = torch.stack([fused.step(t, c)[0, 0] for t, c in zip(toks, alone)])
        worst = max(worst, (out - ref).abs().max().item())
        mine, toks = out.argmax(-1).tolist(), ref.argmax(-1).tolist()
        same = same and mine == toks
    for run in runs:
        decoder.release(run)
    print(f"check: 4 runs x 8 steps, fused batched vs each alone: max |dlogit| {worst:.3g}, "
          f"greedy tokens {'identical' if same else 'DIFFER'}")


if __name__ == "__main__":
    main()
