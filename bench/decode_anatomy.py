"""Where one decode step's time goes, for the roofline discussion in docs/BENCHMARKS.md.

    PYTHONPATH=. .venv/bin/python -m bench.decode_anatomy [--model smollm2-135m-instruct]

Prints, measured in this one process on the embedded checkpoint (CPU), the bytes of each step
counted by explorer/generate/step_cost.py (the one account of a decode step the app uses):
- bandwidth: a 512 MB fp32 GEMV (what bench.decode calls the roofline's bandwidth);
- the step the app serves: the fused step on the served precision's copies (its bytes counted
  from those copies), against the roofline of those bytes;
- matmuls alone: the model's own weight matrices multiplied back to back by fixed vectors, in
  forward order: the floor of a decode step made of nothing else;
- a real decode step at 16-48 tokens of context;
- everything else: a decode step with every matrix product replaced by an empty output of the
  right shape (norms, RoPE, cache writes, attention, views and Python remain; caches stay hot);
- the number of top-level aten calls one decode step makes."""
from __future__ import annotations

import argparse
import time

import torch
import torch.nn.functional as F

from bench.decode import measure_bandwidth


def per_call_ms(fn, calls: int, rounds: int = 3) -> float:
    """Best of `rounds` of the mean time of `calls` calls."""
    fn()
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - t0) / calls)
    return best * 1e3


def aten_calls(step) -> int:
    from torch.profiler import profile
    with profile() as prof:
        step()
    return sum(1 for e in prof.events() if e.cpu_parent is None or not e.cpu_parent.name.startswith("aten::"))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)

    from explorer.generate.step_cost import served_weights, step_shape
    from explorer.runtime import Runtime
    from engine.fused import FusedDecoder
    from models.forward import RunOptions

    # as the app loads it: the checkpoint's served precision and its GGUF codes come along
    model = Runtime(device="cpu", dtype=torch.float32).get(args.model).model
    opts = RunOptions(last_logits_only=True)
    matrices = [p for name, p in model.named_parameters() if p.dim() == 2 and not name.startswith("embed")]
    if model.config.tie_embeddings:
        matrices.append(model.lm_head_weight())      # the LM head reads the whole vocabulary
    weight_bytes = step_shape(model, "fp32").cost(32, 1)[0]     # the eager engine's step
    served = served_weights(model)
    served_bytes = step_shape(model, served).cost(32, 1)[0]
    inputs = {k: torch.randn(1, k) for k in {m.shape[1] for m in matrices}}

    def matmuls():
        for m in matrices:
            F.linear(inputs[m.shape[1]], m)

    with torch.inference_mode():
        cache = model.new_cache(64)
        model(torch.arange(16)[None], cache=cache, options=opts)
        token = torch.tensor([[5]])

        def step():
            if cache.pos >= 48:
                cache.rewind(16)   # back to 16 tokens of context: every step sees 16-48
            model(token, cache=cache, options=opts)

        fused = FusedDecoder(model, opts, weights=served)
        fused_cache = model.new_cache(64)
        fused.prefill(list(range(16)), fused_cache)

        def fused_step():
            if fused_cache.pos >= 48:
                fused_cache.rewind(16)
            fused.step(5, fused_cache)

        bandwidth = measure_bandwidth(args.threads)
        served_ms = per_call_ms(fused_step, 20)
        chain = per_call_ms(matmuls, 10)
        decode = per_call_ms(step, 20)
        calls = aten_calls(step)
        real_linear = F.linear
        try:  # every matrix product becomes an empty output of the right shape
            F.linear = lambda x, w, b=None: torch.empty(*x.shape[:-1], w.shape[0])
            rest = per_call_ms(step, 100)
        finally:
            F.linear = real_linear
    roofline_ms = weight_bytes / (bandwidth * 1e9) * 1e3
    served_roof_ms = served_bytes / (bandwidth * 1e9) * 1e3
    print(f"{args.model}: {weight_bytes / 1e6:.0f} MB read by an fp32 step, {len(matrices)} matrices per token")
    print(f"bandwidth (512 MB GEMV)       {bandwidth:6.1f} GB/s -> roofline {roofline_ms:5.1f} ms/token")
    print(f"served: fused step on {served:5s} {served_ms:6.1f} ms  ({served_bytes / 1e6:.1f} MB counted: "
          f"roofline {served_roof_ms:.1f} ms, {served_roof_ms / served_ms:.0%} of it)")
    print("the eager fp32 engine (models/):")
    print(f"matmuls alone, back to back   {chain:6.1f} ms  ({roofline_ms / chain:.0%} of the roofline)")
    print(f"real decode step              {decode:6.1f} ms  ({roofline_ms / decode:.0%} of the roofline)")
    print(f"everything but the matmuls    {rest:6.1f} ms  (matmuls stubbed out, hot caches)")
    print(f"aten calls per decode step    {calls:6d}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
