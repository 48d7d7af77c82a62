"""The decode loop's engine alone (bench/classroom.py --engine): per batch size B, the step time of
B runs with the pooled attention (one call per layer, engine/batched.py) against attention per
run, each run at its own position, on the scheduler's thread setting, side by side in one
process so that a busy CPU slows both alike."""
from __future__ import annotations

import time

from bench.classroom import default_prompt

ENGINE_HEADER = ("| B | per-run attention step ms, wall / CPU | pooled step ms, wall / CPU | "
                 "per-run / pooled (CPU) | pooled tokens/s, wall / CPU | pooled tokens/s per run (CPU) |"
                 "\n|---|---|---|---|---|---|")


def engine_steps(model, prompt_ids: list, b: int, pooled: bool, steps: int = 6) -> tuple:
    """Median wall time and median CPU time (this process, all threads) of one decode step of
    b runs (the prompt prefilled, run i's i % 8 tokens shorter so their positions differ),
    pooled or per-run attention; B = 1 takes the fused step where the machine can.
    The CPU time is what the step costs when it has the cores to itself: on a CPU shared with
    other jobs the wall time also holds the time the OS gave to them."""
    import torch
    from explorer.serving import batch_threads
    from models.device import intra_op_threads
    from engine.batched import BatchedDecoder

    decoder = BatchedDecoder(model, solo="fused" if b == 1 else None, pooled=pooled)
    runs = [decoder.start(len(prompt_ids) + steps + 4) for _ in range(b)]
    with intra_op_threads(batch_threads() if b > 1 else 0), torch.inference_mode():
        for cut in range(min(b, 8)):   # run i's prompt i % 8 tokens shorter: its own positions
            group = runs[cut::8]
            ids = torch.tensor([prompt_ids[:len(prompt_ids) - cut]] * len(group))          # (G, P - cut)
            decoder.forward_many(ids, group)
        decoder.step_many([7] * b, runs)        # warm-up (the pooled store allocated here)
        walls, cpus = [], []
        for _ in range(steps):
            t0, c0 = time.perf_counter(), time.process_time()
            decoder.step_many([7] * b, runs)
            walls.append(time.perf_counter() - t0)
            cpus.append(time.process_time() - c0)
    return sorted(walls)[len(walls) // 2], sorted(cpus)[len(cpus) // 2]


def engine_table(model_name: str, loads: list, rounds: int) -> list:
    """Per B: (B, per-run step (wall s, CPU s), pooled step (wall s, CPU s)), medians over
    alternating rounds."""
    import torch
    from explorer.checkpoints import prepare_embedded
    from explorer.generate.request import encode_prompt
    from transformers import AutoTokenizer
    from models.loading import load_model

    folder = prepare_embedded(model_name)
    model = load_model(folder, device="cpu", dtype=torch.float32)
    prompt_ids, _ = encode_prompt(AutoTokenizer.from_pretrained(str(folder)), default_prompt())
    rows = []
    for b in loads:
        per_run, pooled = [], []
        for _ in range(rounds):
            per_run.append(engine_steps(model, prompt_ids, b, pooled=False))
            pooled.append(engine_steps(model, prompt_ids, b, pooled=True))
        median = lambda pairs: tuple(sorted(x)[rounds // 2] for x in zip(*pairs))  # noqa: E731
        rows.append((b, median(per_run), median(pooled)))
    return rows


def engine_row(b: int, per_run: tuple, pooled: tuple) -> str:
    """One row: wall and CPU ms of each path, their CPU-time ratio, and the pooled tokens/s
    by wall time and by CPU time."""
    (wall_r, cpu_r), (wall_p, cpu_p) = per_run, pooled
    return (f"| {b:>3} | {wall_r * 1e3:.0f} / {cpu_r * 1e3:.0f} | {wall_p * 1e3:.0f} / {cpu_p * 1e3:.0f} | "
            f"{cpu_r / cpu_p:.2f} | {b / wall_p:.1f} / {b / cpu_p:.1f} | {1 / cpu_p:.1f} |")
