"""Benchmarks of the Attention tab, printed as tables.

    .venv/bin/python bench/attention.py                 # maps + sink grid + receptive field
    .venv/bin/python bench/attention.py --streaming     # also StreamingLLM on both models (minutes)

Times depend on how busy the machine is: the ratios printed next to them (map vs a plain sdpa
forward of the same tokens, measured in the same run) are the figures to compare.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from explorer.attention import maps as am  # noqa: E402
from explorer.prompts import token_labels  # noqa: E402
from explorer.attention import receptive_field as rf  # noqa: E402
from explorer.attention import sinks as grid_mod, streaming as sinks  # noqa: E402
from explorer.runtime import Runtime  # noqa: E402
from explorer.texts import long_text  # noqa: E402
from models.attention import MaskSpec  # noqa: E402
from models.forward import RunOptions  # noqa: E402

SMOL, GEMMA = "smollm2-135m-instruct", "gemma-3-270m"


def best_of(fn, repeat=3):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return min(times), out


def peak_rss_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def bench_map(loaded, n_tokens=512, layer=None):
    ids = [int(i) for i in loaded.tokenizer(long_text()).input_ids[:n_tokens]]
    model = loaded.model
    layer = loaded.config.n_layers // 2 if layer is None else layer
    x = torch.tensor([ids])
    with torch.inference_mode():
        t_sdpa, _ = best_of(lambda: model(x, options=RunOptions(last_logits_only=True)))
    t_map, lm = best_of(lambda: am.layer_attention(model, ids, layer, am.MaskChoice(), "eager"))
    t_tiled, _ = best_of(lambda: am.layer_attention(model, ids, layer, am.MaskChoice(), "tiled"), 1)
    labels = token_labels(loaded.tokenizer, ids)
    t_fig, fig = best_of(lambda: am.attention_figure(lm, labels, None), 1)
    t_fig1, fig1 = best_of(lambda: am.attention_figure(lm, labels, 0), 1)
    size_all = len(fig.to_json()) / 1e6
    size_one = len(fig1.to_json()) / 1e6
    probs_mb = lm.probs.numel() * 4 / 1e6
    print(f"| {loaded.name} | {n_tokens} | layer {layer}, {lm.probs.shape[0]} heads | "
          f"{t_sdpa:.2f} s | {t_map:.2f} s ({t_map / t_sdpa:.2f}×) | {t_tiled:.2f} s | "
          f"{probs_mb:.1f} MB | {t_fig + t_fig1:.2f} s; JSON {size_all:.1f} MB grid, {size_one:.1f} MB one head |")


def bench_sink_grid(loaded, n_tokens=256):
    ids = [int(i) for i in loaded.tokenizer(long_text()).input_ids[:n_tokens]]
    model = loaded.model
    x = torch.tensor([ids])
    with torch.inference_mode():
        t_sdpa, _ = best_of(lambda: model(x, options=RunOptions(last_logits_only=True)))
    t_grid, grid = best_of(lambda: grid_mod.sink_grid(model, ids, 4))
    # what capturing every layer's probabilities would have held at once
    all_probs_mb = loaded.config.n_layers * loaded.config.n_heads * n_tokens ** 2 * 4 / 1e6
    print(f"| {loaded.name} | {n_tokens} | {loaded.config.n_layers}×{loaded.config.n_heads} | "
          f"{t_sdpa:.2f} s | {t_grid:.2f} s ({t_grid / t_sdpa:.2f}×) | kept {grid.first.nbytes * 3 / 1e3:.1f} kB "
          f"instead of {all_probs_mb:.0f} MB | mass on token 0: mean {grid.first.mean():.3f}, "
          f"{int((grid.first > 0.5).sum())} heads > 0.5 |")


def bench_receptive(loaded, window, n_tokens):
    ids = [int(i) for i in loaded.tokenizer(long_text()).input_ids[:n_tokens]]
    mask = MaskSpec(window=window) if window else None
    step = window or loaded.config.sliding_window or n_tokens
    distances = rf.default_distances(n_tokens, step)
    start = time.perf_counter()
    result = rf.probe(loaded.model, ids, distances, mask, seed=0)
    seconds = time.perf_counter() - start
    label = f"forced w={window}" if window else "own masks"
    print(f"| {loaded.name} | {label} | {n_tokens} | {seconds:.1f} s | d={result.distances} | "
          f"rule {result.predicted} | measured {result.measured} | agree: {result.agrees} |")


def bench_streaming(loaded, n_tokens, window, n_sinks):
    ids = [int(i) for i in loaded.tokenizer(long_text()).input_ids[:n_tokens]]

    def report(fraction, message):
        print(f"\r  {loaded.name}: {message:60s}", end="", file=sys.stderr, flush=True)

    result = sinks.run_streaming(loaded.name, loaded.model, ids, window, n_sinks, sinks.StreamingCache(), progress=report)
    print(file=sys.stderr)
    summary = sinks.streaming_summary(result)
    verdict = sinks.streaming_verdict(summary)
    for policy in result.nll:
        print(f"| {loaded.name} | {sinks.policy_label(policy, window, n_sinks)} | {n_tokens} | "
              f"{summary['perplexity'][policy]:.2f} | {summary['ratio'][policy]:.2f}× | "
              f"{summary['seconds'][policy]:.0f} s |")
    tail = {p: result.perplexity(p, n_tokens - 512) for p in result.nll}
    print(f"|  | last 512 tokens: " + ", ".join(f"{p} {v:.2f}" for p, v in tail.items())
          + f" | | window-only {verdict['window_effect']}; sinks in every layer close "
            f"{verdict['gap_closed']:.0%} of the gap"
          + (f", sinks in global layers only {verdict['sinks_global_closed']:.0%}"
             if "sinks_global_closed" in verdict else "") + " | | |")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--streaming", action="store_true", help="run the StreamingLLM curves")
    parser.add_argument("--only-streaming", action="store_true")
    parser.add_argument("--tokens", type=int, default=2048)
    parser.add_argument("--window", type=int, default=256)
    parser.add_argument("--sinks", type=int, default=4)
    parser.add_argument("--models", default=f"{SMOL},{GEMMA}")
    args = parser.parse_args()
    torch.set_grad_enabled(False)
    runtime = Runtime()
    names = args.models.split(",")
    print(f"device: {runtime.device_label}, torch threads {torch.get_num_threads()}")
    loaded = {name: runtime.get(name) for name in names}
    if not args.only_streaming:
        print("\n## One layer, all heads (map = one forward with a Recorder on that layer)")
        print("| model | tokens | what | sdpa forward | map (eager at that layer) | map (tiled everywhere) | probs held | figures |")
        print("|---|---|---|---|---|---|---|---|")
        for name in names:
            bench_map(loaded[name], 512)
        print("\n## Sink grid, every layer × head (probabilities reduced as each layer hands them over)")
        print("| model | tokens | grid | sdpa forward | sink grid | memory | result |")
        print("|---|---|---|---|---|---|---|")
        for name in names:
            bench_sink_grid(loaded[name], 256)
        print("\n## Receptive field (one batched forward)")
        print("| model | masks | tokens | time | distances | first layer by the rule | measured | agree |")
        print("|---|---|---|---|---|---|---|---|")
        if SMOL in loaded:
            bench_receptive(loaded[SMOL], 8, 128)
        if GEMMA in loaded:
            bench_receptive(loaded[GEMMA], 8, 64)
            bench_receptive(loaded[GEMMA], None, 640)
        print(f"\npeak RSS so far: {peak_rss_mb():.0f} MB")
    if args.streaming or args.only_streaming:
        print(f"\n## StreamingLLM: perplexity past the window (positions ≥ w + s), "
              f"{args.tokens} tokens of the long text")
        print("| model | policy | tokens | perplexity | × full | time |")
        print("|---|---|---|---|---|---|")
        for name in names:
            bench_streaming(loaded[name], args.tokens, args.window, args.sinks)
        print(f"\npeak RSS: {peak_rss_mb():.0f} MB")


if __name__ == "__main__":
    main()
