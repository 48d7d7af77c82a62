"""Prefill and decode speed of our modules vs transformers on the same checkpoint, dtype and
thread count, and the share of the memory-bandwidth roofline.

    python -m bench.decode                      # both embedded models, CPU fp32; table on stdout
    python -m bench.decode --out /tmp/bench.md  # also write the table to a file (docs/BENCHMARKS.md quotes it)
    python -m bench.decode --models smollm2-135m-instruct --lengths 16 --new-tokens 32
    python -m bench.decode --impls ours transformers --autotune-lengths   # the eager engine only

Each (model, implementation, prompt length) runs in a fresh subprocess so its peak memory is its
own; ours and transformers' alternate, and each pair is repeated (best of --repeats) so the
ratio compares runs made minutes apart at most. Absolute tokens/s drift with machine load:
read the ratio and the roofline share, both measured in this one run.

Roofline: decode must read every weight once per token plus the whole KV cache, so
tokens/s <= bandwidth / (weight bytes + cache bytes); bandwidth is measured with a 512 MB fp32
GEMV (the same access pattern as decode) in each run's process right before and right after its
decode (the higher of the two counts), and each run's share is taken against its own bandwidth:
the host's bandwidth drifts within minutes."""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LENGTHS = {"smollm2-135m-instruct": [16, 512, 2048], "gemma-3-270m": [16, 512, 1024, 2048]}
# ours: the eager engine; ours-compiled: eager prefill, then engine.static.StaticDecoder
# (torch.compile); ours-autotuned: the same with autotune (frozen weights, Inductor's own
# GEMV kernels where they beat ATen's; ~70 s to compile, so only at --autotune-lengths);
# ours-fused: eager prefill, then engine.fused.FusedDecoder (one C++ call per token)
IMPLS = ("ours", "ours-compiled", "ours-autotuned", "ours-fused", "transformers")


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def current_rss_mb() -> float:
    """Resident memory now (VmRSS), where ru_maxrss would also count the bandwidth probe."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return rss_mb()


def measure_bandwidth(threads: int) -> float:
    """GB/s streamed by an fp32 GEMV over a 512 MB matrix (best of 5)."""
    import torch
    torch.set_num_threads(threads)
    a = torch.randn(8192, 16384)
    x = torch.randn(16384)
    best = float("inf")
    for _ in range(6):
        t0 = time.perf_counter()
        a @ x
        best = min(best, time.perf_counter() - t0)
    return a.nbytes / best / 1e9


def prompt_ids(tokenizer, n: int) -> list[int]:
    from explorer.texts import long_text
    ids = tokenizer(long_text()).input_ids
    while len(ids) < n:
        ids = ids + ids
    return ids[:n]


def run_one(model_name: str, impl: str, length: int, new_tokens: int, threads: int,
            malloc: str = "tuned") -> dict:
    """In a subprocess: load one implementation, prefill `length` tokens, decode greedily."""
    import torch
    from transformers import AutoTokenizer

    from explorer.checkpoints import prepare_embedded
    from models.device import tune_cpu_allocator
    if malloc == "tuned":  # for every implementation alike: a setting of the process, not of ours
        tune_cpu_allocator()
    torch.set_num_threads(threads)
    folder = prepare_embedded(model_name)
    tok = AutoTokenizer.from_pretrained(folder)
    ids = prompt_ids(tok, length)
    compile_s = 0.0
    if impl.startswith("ours"):
        from models.decoder import EagerDecoder
        from engine.static import StaticDecoder
        from models.forward import RunOptions
        from models.loading import load_model
        model = load_model(folder, device="cpu", dtype=torch.float32)
        n_params = sum(p.numel() for p in model.parameters())
        opts = RunOptions(last_logits_only=True)
        if impl == "ours-fused":
            from engine.fused import FusedDecoder
            t0 = time.perf_counter()
            decoder = FusedDecoder(model, opts)   # builds the kernel if this machine has none yet
            compile_s = time.perf_counter() - t0
        elif impl == "ours":
            decoder = EagerDecoder(model, opts)
        else:
            decoder = StaticDecoder(model, opts, autotune=impl == "ours-autotuned")

        def prefill(x):   # every decoder prefills through the engine's forward
            cache = decoder.new_cache(length + new_tokens)
            return decoder.prefill(x[0].tolist(), cache)[0, -1], cache

        def step(x, cache):
            return decoder.step(int(x[0, 0]), cache)[0, -1], cache

        if impl != "ours":  # compile outside the timed part (once per capacity)
            with torch.inference_mode():
                _, warm_cache = prefill(torch.tensor([ids[:8]]))
                t0 = time.perf_counter()
                step(torch.tensor([[ids[8]]]), warm_cache)
                compile_s += time.perf_counter() - t0
    elif impl == "transformers":
        from transformers import AutoModelForCausalLM
        model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
        n_params = sum(p.numel() for p in model.parameters())

        def prefill(x):
            out = model(x, use_cache=True, logits_to_keep=1)
            return out.logits[0, -1], out.past_key_values

        def step(x, cache):
            out = model(x, past_key_values=cache, use_cache=True)
            return out.logits[0, -1], out.past_key_values
    else:
        raise ValueError(f"unknown implementation {impl!r}; choose from {IMPLS}")
    rss_loaded = rss_mb()
    with torch.inference_mode():
        # warm-up at a short length so allocator and kernels are primed
        logits, cache = prefill(torch.tensor([ids[:8]]))
        step(torch.tensor([[int(logits.argmax())]]), cache)
        t_prefill = float("inf")
        for _ in range(3):  # one prefill lasts 0.1-4 s: take the best of three, each from scratch
            t0 = time.perf_counter()
            logits, cache = prefill(torch.tensor([ids]))
            t_prefill = min(t_prefill, time.perf_counter() - t0)
        peak = rss_mb()  # before the probe: its 512 MB matrix would count in the peak otherwise
        bandwidth_before = measure_bandwidth(threads)
        tokens, t1 = [], time.perf_counter()
        for _ in range(new_tokens):
            token = int(logits.argmax())
            tokens.append(token)
            logits, cache = step(torch.tensor([[token]]), cache)
        t_decode = time.perf_counter() - t1
    peak = max(peak, current_rss_mb())  # the probe's matrix is unmapped again by now
    # the bandwidth this decode could have had: measured right before and right after it, in
    # the same process (the host's bandwidth drifts by ±20% within minutes); the higher of the
    # two, so that a slow probe can never inflate the share
    bandwidth = max(bandwidth_before, measure_bandwidth(threads))
    return {"model": model_name, "impl": impl, "length": length, "prefill_tok_s": length / t_prefill,
            "decode_tok_s": new_tokens / t_decode, "peak_rss_mb": peak, "rss_loaded_mb": rss_loaded,
            "bandwidth_gb_s": bandwidth, "compile_s": compile_s,
            "n_params": n_params, "tokens": tokens}


def subprocess_run(model_name, impl, length, new_tokens, threads, malloc) -> dict:
    code = ("import json,sys; from bench.decode import run_one; print('RESULT'+json.dumps("
            f"run_one({model_name!r},{impl!r},{length},{new_tokens},{threads},{malloc!r})))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True)
    line = [l for l in out.stdout.splitlines() if l.startswith("RESULT")][-1]
    return json.loads(line[len("RESULT"):])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="*", default=list(LENGTHS))
    parser.add_argument("--lengths", nargs="*", type=int)
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--impls", nargs="*", default=["ours", "ours-compiled", "ours-fused", "transformers"],
                        choices=IMPLS)
    parser.add_argument("--autotune-lengths", nargs="*", type=int, default=[16],
                        help="prompt lengths that also run ours-autotuned")
    parser.add_argument("--malloc", choices=("tuned", "default"), default="tuned",
                        help="tuned: every process, ours and transformers' alike, runs with "
                             "models.device.tune_cpu_allocator (glibc keeps freed memory); default: glibc as is")
    parser.add_argument("--out", default="")
    args = parser.parse_args(argv)
    import torch
    from statistics import median

    from explorer.checkpoints import prepare_embedded
    from models.loading import read_config
    prefill_rows, decode_rows = [], []
    for name in args.models:
        config = read_config(prepare_embedded(name))
        for length in args.lengths or LENGTHS[name]:
            impls = list(args.impls) + (["ours-autotuned"] if length in args.autotune_lengths
                                        and "ours-autotuned" not in args.impls else [])
            runs = {impl: [] for impl in impls}
            for r in range(args.repeats):
                # alternate, so all see the same machine conditions, in an order that rotates:
                # none always runs first, or right after a process that compiled
                for impl in impls[r % len(impls):] + impls[:r % len(impls)]:
                    runs[impl].append(subprocess_run(name, impl, length, args.new_tokens, args.threads, args.malloc))
            cache_bytes = config.kv_bytes(length, 4)       # fp32, each layer its own window
            theirs = runs.get("transformers")
            if "ours" in runs and theirs:
                ours_p, theirs_p = (max(r["prefill_tok_s"] for r in rs) for rs in (runs["ours"], theirs))
                prefill_rows.append(dict(model=name, length=length, ours=ours_p, theirs=theirs_p,
                                         ratio=ours_p / theirs_p))
            for impl, rs in runs.items():
                bytes_per_token = rs[0]["n_params"] * 4 + cache_bytes
                # each run's share of its own roofline (bandwidth measured right after it)
                shares = [r["decode_tok_s"] * bytes_per_token / (r["bandwidth_gb_s"] * 1e9) for r in rs]
                rate = max(r["decode_tok_s"] for r in rs)
                row = dict(model=name, length=length, impl=impl, decode=rate,
                           ratio=rate / max(r["decode_tok_s"] for r in theirs) if theirs else None,
                           share_best=max(shares), share_median=median(shares),
                           bandwidth=max(r["bandwidth_gb_s"] for r in rs),
                           rss=max(r["peak_rss_mb"] for r in rs), compile_s=max(r["compile_s"] for r in rs),
                           same_tokens=all(r["tokens"] == theirs[0]["tokens"] for r in rs) if theirs else None)
                decode_rows.append(row)
                print(json.dumps({k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items()}), flush=True)
    table = ("| model | prompt | prefill tok/s ours / transformers | ratio |\n|---|---|---|---|\n" +
             "".join(f"| {r['model']} | {r['length']} | {r['ours']:.0f} / {r['theirs']:.0f} | {r['ratio']:.2f}x |\n"
                     for r in prefill_rows) +
             "\n| model | prompt | decode by | decode tok/s | vs transformers | share of roofline, best (median) "
             "| bandwidth GB/s (max) | peak RSS MB | compile s | greedy tokens = transformers' |\n"
             "|---|---|---|---|---|---|---|---|---|---|\n" +
             "".join(f"| {r['model']} | {r['length']} | {r['impl']} | {r['decode']:.1f} | "
                     f"{'' if r['ratio'] is None else format(r['ratio'], '.2f') + 'x'} | "
                     f"{r['share_best']:.0%} ({r['share_median']:.0%}) | {r['bandwidth']:.1f} | {r['rss']:.0f} | "
                     f"{r['compile_s']:.0f} | {'' if r['same_tokens'] is None else 'yes' if r['same_tokens'] else 'no'} |\n"
                     for r in decode_rows))
    print(table)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(
            "# Decode benchmark: our modules vs transformers\n\n"
            f"Command: `python -m bench.decode {' '.join(argv or sys.argv[1:])}`\n\n"
            f"Machine: {os.cpu_count()} CPU cores, torch {torch.__version__}, {args.threads} threads, fp32, "
            f"{args.new_tokens} greedy tokens after the prompt, {args.repeats} runs of each, alternating, "
            f"allocator {args.malloc} in every process. "
            "Rates: best run. Bandwidth: a 512 MB fp32 GEMV, measured in each run's process right before "
            "and right after its decode, the higher of the two. Roofline = bandwidth / (weight bytes + KV-cache bytes at that length); the share "
            "is each run's decode rate over its own roofline.\n\n" + table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
