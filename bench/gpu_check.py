"""The GPU check: everything the app computes, once, on a CUDA device.

    .venv/bin/python -m bench.gpu_check [--skip-tabs] [--max-batch 64]

On a machine with CUDA it runs, and ends with one summary line:
1. parity, CUDA against the CPU's fp32 reference (the engine's own modules on both):
   - tiny random models of every family (tests/helpers.py): CUDA fp32 logits within
     TINY_FP32_TOL, CUDA bf16 within TINY_BF16_TOL (max |difference|, logits of size ~1);
   - both real checkpoints over a 64-token text: CUDA bf16 next-token argmax equal to the CPU
     fp32 one at >= REAL_BF16_TOP1 of the positions, max |difference| printed; CUDA fp32 within
     REAL_FP32_TOL;
2. every tab's computation once: the tabs' API tests (tests/test_*_tab.py) with the app's
   Runtime on CUDA (EXPLORER_DEVICE=cuda, EXPLORER_DTYPE=float32, so their fp32 tolerances
   hold);
3. the batched decode (engine.batched) at 1, 2, 4, ... 64 visitors on CUDA bf16 with
   SmolLM2: step time and tokens/s per batch size, and greedy tokens of a batch of runs equal to
   each run alone (CUDA fp32).
Where torch sees no CUDA device it prints why and exits 0 without running anything
(tests/server/test_classroom.py checks that).

    .venv/bin/python -m bench.gpu_check --rehearse-on-cpu [--max-batch 2]

runs the same steps with the CPU standing in for the GPU (bf16 included; the tabs left out,
the test suite runs them on the CPU anyway), so that a session lent a GPU for a few minutes does
not spend them on a fault of this script: tests/server/test_classroom.py rehearses it in CI.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

TINY_FP32_TOL = 1e-4
TINY_BF16_TOL = 5e-2
REAL_FP32_TOL = 1e-2      # logits of magnitude ~10-40, GPU kernels sum in another order
REAL_BF16_TOP1 = 0.9
REAL_MODELS = ("smollm2-135m-instruct", "gemma-3-270m")
TEXT = ("The history of the transformer architecture begins with attention mechanisms in machine "
        "translation. Researchers found that letting every token look at every other token, weighted "
        "by learned similarity, captured long-range structure better than recurrence. ") * 4


def cuda_or_reason():
    import torch
    if not torch.cuda.is_available():
        return None, ("gpu_check: skipped: no CUDA device here (torch.cuda.is_available() is False, "
                      f"torch {torch.__version__}, CUDA build {torch.version.cuda}); nothing was run")
    return torch.device("cuda"), ""


def synchronize(device) -> None:
    """Wait for the device's queued work (timings); the CPU's is done when a call returns."""
    import torch
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def device_name(device) -> str:
    import torch
    return torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU (rehearsal)"


def max_diff(a, b) -> float:
    return (a.float().cpu() - b.float().cpu()).abs().max().item()


def check_tiny(device) -> list:
    import torch
    from tests.helpers import ours_from_hf, tiny_hf

    failures = []
    ids = torch.randint(0, 97, (1, 24), generator=torch.Generator().manual_seed(0))
    for kind in ("llama", "mistral", "qwen2", "gemma3"):
        cpu = ours_from_hf(tiny_hf(kind))
        with torch.inference_mode():
            ref = cpu(ids)
            for dtype, tol in ((torch.float32, TINY_FP32_TOL), (torch.bfloat16, TINY_BF16_TOL)):
                gpu = ours_from_hf(tiny_hf(kind)).to(device=device, dtype=dtype)
                diff = max_diff(gpu(ids.to(device)), ref)
                ok = diff <= tol
                print(f"  tiny {kind:8s} {str(dtype):15s} max |d logits| {diff:.2e} (<= {tol:g}) "
                      f"{'ok' if ok else 'FAIL'}", flush=True)
                if not ok:
                    failures.append(f"tiny {kind} {dtype}")
    return failures


def check_real(device) -> list:
    import torch
    from explorer.checkpoints import prepare_embedded
    from models.loading import load_model
    from transformers import AutoTokenizer

    failures = []
    for name in REAL_MODELS:
        folder = prepare_embedded(name)
        ids = AutoTokenizer.from_pretrained(folder)(TEXT, return_tensors="pt").input_ids[:, :64]
        with torch.inference_mode():
            ref = load_model(folder, device="cpu", dtype=torch.float32)(ids)[0]
            for dtype in (torch.float32, torch.bfloat16):
                model = load_model(folder, device=device, dtype=dtype)
                out = model(ids.to(device))[0].float().cpu()
                diff = max_diff(out, ref)
                top1 = (out.argmax(-1) == ref.argmax(-1)).float().mean().item()
                ok = diff <= REAL_FP32_TOL if dtype == torch.float32 else top1 >= REAL_BF16_TOP1
                print(f"  {name:22s} {str(dtype):15s} max |d logits| {diff:.3g}, argmax agreement "
                      f"{top1:.0%} {'ok' if ok else 'FAIL'}", flush=True)
                if not ok:
                    failures.append(f"{name} {dtype}")
                del model
    return failures


def check_tabs() -> bool:
    tests = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests").glob("test_*_tab.py"))
    env = {**os.environ, "EXPLORER_DEVICE": "cuda", "EXPLORER_DTYPE": "float32"}
    print(f"  tabs: {' '.join(tests)}", flush=True)
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests],
                            cwd=ROOT, env=env, capture_output=True, text=True)
    tail = result.stdout.strip().splitlines()[-1:] or [result.stderr[-300:]]
    print(f"  tabs: {tail[0]}", flush=True)
    return result.returncode == 0


def check_batched(device, max_batch: int) -> tuple[list, dict]:
    import torch
    from explorer.checkpoints import prepare_embedded
    from engine.batched import BatchedDecoder
    from models.generate import SamplingParams, generate
    from models.loading import load_model

    folder = prepare_embedded(REAL_MODELS[0])
    failures = []
    # exactness on the GPU in fp32: three runs together == each alone (greedy tokens)
    model = load_model(folder, device=device, dtype=torch.float32)
    decoder = BatchedDecoder(model, solo=None)
    prompts = [list(range(100 + 7 * i, 120 + 9 * i)) for i in range(3)]
    runs = [decoder.start(len(p) + 12) for p in prompts]
    tokens = [[int(decoder.prefill(p, r)[0, -1].argmax())] for p, r in zip(prompts, runs)]
    for _ in range(11):
        logits = decoder.step_many([t[-1] for t in tokens], runs)
        for row, t in enumerate(tokens):
            t.append(int(logits[row, -1].argmax()))
    for p, t in zip(prompts, tokens):
        alone = [s.token_id for s in generate(model, p, SamplingParams(max_new_tokens=12), eos_ids=[])]
        if alone != t:
            failures.append(f"batched != alone ({device.type} fp32)")
    print(f"  batched == alone, 3 runs x 12 greedy tokens, {device.type} fp32: "
          f"{'ok' if not failures else 'FAIL'}", flush=True)
    del model, decoder
    # throughput in bf16, the GPU's default
    model = load_model(folder, device=device, dtype=torch.bfloat16)
    decoder = BatchedDecoder(model, solo=None)
    rates = {}
    b = 1
    while b <= max_batch:
        runs = [decoder.start(256) for _ in range(b)]
        decoder.forward_many(torch.randint(100, 5000, (b, 32), device=device), runs)
        for _ in range(3):
            decoder.step_many([7] * b, runs)
        synchronize(device)
        n = 16
        t0 = time.perf_counter()
        for _ in range(n):
            decoder.step_many([7] * b, runs)
        synchronize(device)
        step = (time.perf_counter() - t0) / n
        rates[b] = b / step
        print(f"  batched decode bf16, {b:3d} visitors: step {step * 1e3:.1f} ms, {b / step:.0f} tokens/s",
              flush=True)
        b *= 2
    return failures, rates


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-tabs", action="store_true", help="leave out the tabs' API tests")
    parser.add_argument("--max-batch", type=int, default=None, help="default 64 (rehearsal: 2)")
    parser.add_argument("--rehearse-on-cpu", action="store_true",
                        help="every step but the tabs on the CPU in the GPU's place (a check of this script)")
    args = parser.parse_args(argv)
    import torch
    if args.rehearse_on_cpu:
        device, args.skip_tabs = torch.device("cpu"), True
    else:
        device, reason = cuda_or_reason()
        if device is None:
            print(reason)
            return 0
    max_batch = args.max_batch or (2 if args.rehearse_on_cpu else 64)
    print(f"gpu_check on {device_name(device)}, torch {torch.__version__}", flush=True)
    t0 = time.perf_counter()
    failures = check_tiny(device) + check_real(device)
    tabs = None if args.skip_tabs else check_tabs()
    if tabs is False:
        failures.append("tabs")
    batch_failures, rates = check_batched(device, max_batch)
    failures += batch_failures
    top = max(rates, key=rates.get) if rates else None
    print(f"gpu_check: {'PASS' if not failures else 'FAIL ' + ', '.join(failures)} · "
          f"{device_name(device)} · parity tiny+real ok={not any('tiny' in f or 'gemma' in f or 'smol' in f for f in failures)} · "
          f"tabs {'skipped' if tabs is None else ('ok' if tabs else 'FAIL')} · batched decode "
          f"{rates.get(1, 0):.0f} tok/s at 1 visitor, {rates.get(top, 0):.0f} at {top} · "
          f"{time.perf_counter() - t0:.0f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
