"""The engine's decode step four ways, side by side in one process, every decode step paired
with a bandwidth measurement taken right before it (the host's bandwidth drifts by ±20% within
minutes, and bench.decode's separate processes see different machines; here every step is
set against the bandwidth of its own moment).

    PYTHONPATH=. .venv/bin/python -m bench.compiled_decode [--model gemma-3-270m] [--rounds 5]

Variants, all on the same loaded checkpoint and the same 16-token prompt (CPU, fp32):
- eager:      the engine's ordinary forward of one token (models.forward);
- static:     engine.static.StaticDecoder(compile=False): the static-shape step, eager;
- compiled:   the same step through torch.compile;
- autotuned:  the same with autotune (frozen weights, Inductor's GEMV kernels where faster);
- fused:      engine.fused.FusedDecoder: the whole step in one call of a C++ kernel;
- transformers: the transformers model on the same weights, one token with its DynamicCache.
Each step follows a timed 512 MB GEMV (the bandwidth probe; it also leaves the caches as cold
as a real decode step finds them), and its share of the roofline is weight bytes / that
bandwidth / the step's time. The order of the variants rotates every round. Prints per round
each variant's median ms/token and median share, then the medians over rounds and each
variant's speed relative to transformers (per round)."""
from __future__ import annotations

import argparse
import time
from statistics import median

import torch


PROMPT = list(range(1, 17))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--variants", nargs="*",
                        default=["eager", "static", "compiled", "autotuned", "fused", "transformers"])
    args = parser.parse_args(argv)
    torch.set_num_threads(2)
    from models.device import tune_cpu_allocator
    tune_cpu_allocator()  # one process: every variant alike

    from explorer.checkpoints import prepare_embedded
    from engine.static import StaticDecoder
    from models.forward import RunOptions
    from engine.fused import FusedDecoder
    from models.loading import load_model

    folder = prepare_embedded(args.model)
    model = load_model(folder, device="cpu", dtype=torch.float32)
    theirs = None
    if "transformers" in args.variants:
        from transformers import AutoModelForCausalLM
        theirs = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    weight_bytes = sum(p.numel() for p in model.parameters()) * 4
    opts = RunOptions(last_logits_only=True)
    capacity = len(PROMPT) + args.steps + 2
    makers = {"static": lambda: StaticDecoder(model, opts, compile=False),
              "compiled": lambda: StaticDecoder(model, opts),
              "autotuned": lambda: StaticDecoder(model, opts, autotune=True),
              "fused": lambda: FusedDecoder(model, opts)}
    decoders = {name: make() for name, make in makers.items() if name in args.variants}
    prompt = torch.tensor([PROMPT])

    def fresh_cache(name):
        cache = (decoders.get(name) or model).new_cache(capacity)
        model(prompt, cache=cache, options=opts)
        return cache

    # the bandwidth probe: a 512 MB fp32 GEMV, the access pattern of decode (see bench.decode)
    probe_a, probe_x = torch.randn(8192, 16384), torch.randn(16384)

    def run(name) -> tuple[float, float, float]:
        """args.steps decode steps from a fresh 16-token cache, each right after a timed GEMV:
        (median ms per token, median share of the roofline over the pairs, median GB/s). Each
        step is measured against the bandwidth of the moment, not of the round: the host's
        bandwidth moves within seconds."""
        if name == "transformers":
            cache = theirs(prompt, use_cache=True, logits_to_keep=1).past_key_values

            def step():
                nonlocal cache
                cache = theirs(prompt[:, :1], past_key_values=cache, use_cache=True).past_key_values
        else:
            cache = fresh_cache(name)
            step = (lambda: model(prompt[:, :1], cache=cache, options=opts)) if name == "eager" \
                else (lambda: decoders[name].step(1, cache))
        steps, shares, bandwidths = [], [], []
        for _ in range(args.steps):
            t0 = time.perf_counter()
            probe_a @ probe_x
            t1 = time.perf_counter()
            step()
            t2 = time.perf_counter()
            bandwidth = probe_a.nbytes / (t1 - t0)
            steps.append(t2 - t1)
            shares.append(weight_bytes / bandwidth / (t2 - t1))
            bandwidths.append(bandwidth / 1e9)
        return median(steps) * 1e3, median(shares), median(bandwidths)

    results = {name: [] for name in args.variants}
    with torch.inference_mode():
        for name in args.variants:
            if name in decoders:
                t0 = time.perf_counter()
                decoders[name].step(1, fresh_cache(name))
                print(f"{name}: first step (compiles) {time.perf_counter() - t0:.1f} s", flush=True)
        for r in range(args.rounds):
            order = args.variants[r % len(args.variants):] + args.variants[:r % len(args.variants)]
            cells = []
            for name in order:
                ms, share, bandwidth = run(name)
                results[name].append((ms, share))
                cells.append(f"{name} {ms:.1f} ms ({share:.0%} of {bandwidth:.1f} GB/s)")
            print(f"round {r + 1}: " + " | ".join(cells), flush=True)
    print(f"\n{args.model}, {args.rounds} rounds of {args.steps} tokens after a {len(PROMPT)}-token prompt\n"
          "\n| variant | ms/token (median) | share of the roofline, median (min-max) | speed vs transformers, "
          "median of rounds |\n|---|---|---|---|")
    for name, rs in results.items():
        shares = [s for _, s in rs]
        versus = (f"{median(t[0] / ms for (ms, _), t in zip(rs, results['transformers'])):.2f}x"
                  if "transformers" in results else "")
        print(f"| {name} | {median(ms for ms, _ in rs):.1f} | {median(shares):.0%} "
              f"({min(shares):.0%}-{max(shares):.0%}) | {versus} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
