"""C2's bandwidth share and the roofline's knee per decode precision, counted the old way (every
matrix at fp32's 4 bytes, the ridge of an fp32 matmul) and by the one account of the step that
runs (explorer/generate/step_cost.py: the copies the step reads, the peak of the product it
runs), from the same measured steps.

    .venv/bin/python -m bench.step_account [--models smollm2-135m-instruct gemma-3-270m]
        [--weights fp32 bf16 int8 gguf] [--threads N]

For each model and precision (EXPLORER_WEIGHTS as the app would read it): the roof measured
for that precision's product, then the Generate tab's roofline measurement at t = 16 (the
loop's own decoder: B = 1 on the fused step, B = 2 ... 16 together), and prints the bytes a
B = 1 step reads, its share of the measured bandwidth and the roofline's knee, both ways, and
the knee read from the measured tokens/s (roofline.knee, as the roofline and C20 read it)."""
from __future__ import annotations

import argparse
import os


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=["smollm2-135m-instruct", "gemma-3-270m"])
    parser.add_argument("--weights", nargs="+", default=["fp32", "bf16", "int8", "gguf"])
    parser.add_argument("--threads", type=int, default=0, help="intra-op threads (0: the loop's)")
    args = parser.parse_args(argv)

    from explorer.generate import device_roof, roofline, step_cost
    from explorer.runtime import Runtime
    from explorer.serving import batch_threads
    from engine.quantized import WEIGHTS_ENV

    device_roof.REFRESH_INTERVAL_S = 0.0     # every precision's roof measured afresh
    runtime = Runtime()
    threads = args.threads or batch_threads()
    print(f"threads {threads}; t = {roofline.EVIDENCE_CONTEXT}; B = 1 the fused step")
    print("model | weights | MB read at B = 1 (old / new) | share of bandwidth (old / new) | "
          "ridge (old / new) | roofline knee (old / new) | measured knee | tok/s B = 1, 2, 4, 8, 16")
    for name in args.models:
        loaded = runtime.get(name)
        model = loaded.model
        for weights in args.weights:
            os.environ[WEIGHTS_ENV] = weights
            fp32_roof = device_roof.measure(loaded.device, loaded.dtype, threads, refresh=True)
            roof = device_roof.measure(loaded.device, loaded.dtype, threads, refresh=True, weights=weights)
            ids = roofline.prompt_ids(loaded.tokenizer, roofline.EVIDENCE_CONTEXT)
            result = roofline.run(model, ids, roof, batches=(1, 2, 4, 8, 16), timed_steps=3, threads=threads)
            old_shape = step_cost.step_shape(model, "fp32")
            t = round(result.measured_context[0])
            old_bytes = old_shape.cost(t, 1)[0]
            new_bytes = result.measured_bytes[0]
            seconds = result.step_seconds[0]
            old_knee = step_cost.crossing_batch(old_shape, result.context, fp32_roof.ridge)
            new_knee = step_cost.crossing_batch(result.shape, result.context, roof.ridge)
            rates = result.tokens_per_s
            found = roofline.knee(result.batches, rates)       # as the app reads it
            print(f"{name} | {weights} | {old_bytes / 1e6:.1f} / {new_bytes / 1e6:.1f} | "
                  f"{old_bytes / seconds / roof.bandwidth:.2f} / {new_bytes / seconds / roof.bandwidth:.2f} | "
                  f"{fp32_roof.ridge:.1f} / {roof.ridge:.1f} | "
                  f"{old_knee or float('nan'):.1f} / {new_knee or float('nan'):.1f} | {found} | "
                  + ", ".join(f"{r:.0f}" for r in rates), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
