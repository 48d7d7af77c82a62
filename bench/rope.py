"""RoPE tab benchmark: frequency figures, real q/k captures, the perplexity sweep.

    .venv/bin/python bench/rope.py            # prints a table; --quick skips the sweep

Targets (issue): frequency plots < 100 ms; q/k capture of 256 tokens <= 1 s; a sweep of 5 bases
over 1,024 tokens of SmolLM2 <= 60 s. On a shared machine wall times swing with other people's
load (10x seen here), so each row also prints this process's CPU seconds divided by its torch
threads: roughly the wall time with the cores to ourselves (a lower bound: it assumes perfect
thread scaling). The verdict is on wall time. The load average is printed,
and the ratio of the sweep to one plain forward measured in the same run.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from explorer.rope import capture as rope_capture, distance, scaling, sweep as rope_sweep, toeplitz  # noqa: E402
from explorer.rope import frequencies as freq  # noqa: E402
from explorer.texts import long_text  # noqa: E402


CPU_SECONDS = {}  # label -> CPU seconds / threads of the median run


def timed(fn, repeat: int) -> tuple[float, object]:
    """(median wall seconds, last result); the matching CPU/threads figure goes in timed.cpu."""
    runs, out = [], None
    for _ in range(repeat):
        start, cpu = time.perf_counter(), time.process_time()
        out = fn()
        runs.append((time.perf_counter() - start, (time.process_time() - cpu) / torch.get_num_threads()))
    runs.sort()
    timed.cpu = runs[len(runs) // 2][1]
    return runs[len(runs) // 2][0], out


def load(name):
    from transformers import AutoTokenizer

    from explorer.checkpoints import prepare_embedded
    from models.loading import load_model

    folder = prepare_embedded(name)
    return load_model(folder, device=torch.device("cpu"), dtype=torch.float32), AutoTokenizer.from_pretrained(str(folder))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="skip the 5-base perplexity sweep")
    args = parser.parse_args()
    torch.set_grad_enabled(False)
    print(f"torch threads {torch.get_num_threads()}, load average at start {os.getloadavg()[0]:.2f}")
    rows = []

    def add(label, seconds, target):
        rows.append((label, seconds, timed.cpu, target))

    bases = [1e4, 1e5, 5e5, 1e6]

    def frequencies(head_dim, bases, context):
        result = freq.run(bases, head_dim, context)
        return freq.figures(result, "en"), freq.summary(result, "en"), freq.table(result, "en")

    frequencies(64, bases, 8192)  # warm-up: plotly imports
    seconds, _ = timed(lambda: frequencies(64, bases, 8192), 20)
    add("frequency figure + table, 4 bases, d=64", seconds, 0.1)
    seconds, _ = timed(lambda: freq.figures(freq.run(bases + [3e6, 1e7], 256, 131072), "en"), 10)
    add("frequency figure, 6 bases, d=256", seconds, 0.1)
    seconds, _ = timed(lambda: scaling.figures(scaling.run(64, 1e5, 4, 8192), "en"), 10)
    add("extension-recipes figure", seconds, 0.1)

    text = long_text()
    prose = text[:8000]   # what a visitor may send to a capture
    for name in ("smollm2-135m-instruct", "gemma-3-270m"):
        model, tokenizer = load(name)
        rope_capture.capture_qk(model, tokenizer, prose, 0, 32)  # warm-up
        for layer in (3, model.config.n_layers - 1):
            seconds, capture = timed(lambda: rope_capture.capture_qk(model, tokenizer, prose, layer, 256), 3)
            add(f"{name}: capture q/k, 256 tokens, layer {layer}", seconds, 1.0)
        seconds, _ = timed(lambda: toeplitz.toeplitz(capture, 0, 120, 40, 128), 5)
        add(f"{name}: Toeplitz both/one side, 128 positions", seconds, None)
        seconds, _ = timed(lambda: distance.run(model, tokenizer, prose, 256), 1)
        add(f"{name}: attention vs distance, all layers, 256 tokens", seconds, None)
        if name.startswith("smollm2") and not args.quick:
            ids = rope_capture.capped_ids(tokenizer, text, 1024)
            one, _ = timed(lambda: rope_sweep.nll_per_position(model, ids), 1)
            add(f"{name}: one forward + NLL, 1,024 tokens", one, None)
            total, sweep = timed(lambda: rope_sweep.run(
                model, tokenizer, text, [1e4, 1e5, 5e5, 1e6, 1e7], "full", 1024,
                progress=lambda done, total, key: print(f"  [{done}/{total}] base {key:g}", flush=True)), 1)
            add(f"{name}: perplexity sweep, 5 bases x 1,024 tokens", total, 60.0)
            print(f"  sweep / one forward = {total / one:.2f} (5 forwards expected)")
            print(rope_sweep.table(sweep, "en").round(3).to_string(index=False))
        del model

    print(f"\nload average at end {os.getloadavg()[0]:.2f}")
    width = max(len(r[0]) for r in rows)
    print(f"{'measurement':<{width}}  {'wall s':>9}  {'cpu/thr s':>9}  target")
    for label, seconds, cpu, target in rows:
        verdict = ""
        if target is not None:
            verdict = f"<= {target:g} s  " + ("ok" if seconds <= target else
                                              "over on wall, ok in CPU/threads (load)" if cpu <= target
                                              else "OVER")
        print(f"{label:<{width}}  {seconds:9.4f}  {cpu:9.4f}  {verdict}")


if __name__ == "__main__":
    main()
