"""The worst-case memory of generation: the shared decode loop full of the longest runs.

    .venv/bin/python -m bench.pool_memory                          # 32 runs of 1,024 + 256 tokens
    .venv/bin/python -m bench.pool_memory --runs 8 --prompt 256 --new 32    # a quick look

Loads SmolLM2 (the default model) as the app does, then submits `--runs` runs with distinct
random prompts of `--prompt` tokens and `--new` new tokens (greedy, no end token) to one
explorer.serving.Scheduler, each from a visitor of its own, and drains them all from threads, as
the Generate tab's streams do. Printed: the pooled store's size from the config alone (K and V,
fp32, every layer, rows x capacity) and as allocated; the peak bytes of the tensor storages the
store and the runs' caches held during any growth of the store (read just before every buffer
move, where a growth peaks); the process's RSS before the runs, its peak (VmHWM, reset after the
model loads) and at the end; and the wall time. Peak RSS includes the weights (0.54 GB fp32),
the packed weights of the pooled step, activations and the allocator's retained heap.
"""
from __future__ import annotations

import argparse
import json
import random
import threading
import time
from pathlib import Path


def _status_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def _reset_peak_rss() -> None:
    try:
        Path("/proc/self/clear_refs").write_text("5")   # VmHWM := VmRSS (Linux >= 4.0)
    except OSError:
        pass


def _spy_on_growth(pool) -> dict:
    """Record the peak storage bytes held by the store and its runs at every buffer move."""
    from models.kv_cache import LayerKV

    import weakref

    import torch

    import engine.pool as pool_module

    seen = {"peak_bytes": 0, "moves": 0, "made": []}
    original = LayerKV.move_to

    class Recording:
        """The pool module's torch, recording every store it allocates (whatever list holds it)."""
        def __getattr__(self, name):
            return getattr(torch, name)

        def zeros(self, *args, **kwargs):
            return self._made(torch.zeros(*args, **kwargs))

        def full(self, *args, **kwargs):
            return self._made(torch.full(*args, **kwargs))

        def _made(self, tensor):
            seen["made"] = [ref for ref in seen["made"] if ref() is not None] + [weakref.ref(tensor)]
            return tensor

    pool_module.torch = Recording()

    def held(extra) -> int:
        storages = {}
        tensors = [*pool.k, *pool.v, *pool.slot_pos, *extra, *(ref() for ref in seen["made"])]
        for ref in list(pool.members.values()):
            run = ref()
            if run is not None:
                for layer in run.cache.layers:
                    tensors += [layer.k, layer.v, layer.slot_pos]
        for run in seen.get("joining", ()):
            for layer in run.cache.layers:
                tensors += [layer.k, layer.v, layer.slot_pos]
        for t in tensors:
            if t is not None:
                storages[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return sum(storages.values())

    def measured(layer, k, v, slot_pos):
        seen["moves"] += 1
        seen["peak_bytes"] = max(seen["peak_bytes"], held((k, v, slot_pos)))
        return original(layer, k, v, slot_pos)

    attach = pool.attach

    def attach_seen(runs, on_move):
        seen["joining"] = [run for run in runs if run.row is None]
        try:
            attach(runs, on_move)
        finally:
            seen["joining"] = ()

    LayerKV.move_to = measured
    pool.attach = attach_seen
    return seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--runs", type=int, default=32)
    parser.add_argument("--prompt", type=int, default=1024)
    parser.add_argument("--new", type=int, default=256)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    import torch
    from explorer.runtime import Runtime
    from explorer.serving import Visitor
    from explorer.serving.scheduler import Scheduler
    from models.device import tune_cpu_allocator
    from models.generate import SamplingParams

    tune_cpu_allocator()
    loaded = Runtime().get(args.model)
    model, config = loaded.model, loaded.model.config
    capacity = args.prompt + args.new
    itemsize = model.embed.weight.element_size()
    store_bytes = 2 * config.n_layers * args.runs * config.n_kv_heads * capacity * config.head_dim * itemsize
    scheduler = Scheduler(model, max_batch=args.runs, max_waiting=0, max_per_session=1,
                          max_per_address=args.runs)
    seen = _spy_on_growth(scheduler.decoder.pool)
    rng = random.Random(0)
    vocab = config.vocab_size
    prompts = [[rng.randrange(100, vocab) for _ in range(args.prompt)] for _ in range(args.runs)]
    rss_before = _status_kb("VmRSS")
    _reset_peak_rss()
    pool_sizes, tokens = [], [0] * args.runs
    started = time.perf_counter()

    def consume(i: int) -> None:
        steps = scheduler.generate(prompts[i], SamplingParams(max_new_tokens=args.new, temperature=0.0),
                                   eos_ids=[], visitor=Visitor(session=f"s{i}", address=f"10.0.0.{i}"))
        for _ in steps:
            tokens[i] += 1
            pool_sizes.append(scheduler.decoder.pool.allocated_bytes())

    threads = [threading.Thread(target=consume, args=(i,)) for i in range(args.runs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    result = {
        "model": args.model, "runs": args.runs, "prompt": args.prompt, "new": args.new,
        "tokens": sum(tokens), "store_from_config_mb": store_bytes / 2**20,
        "store_allocated_peak_mb": max(pool_sizes, default=0) / 2**20,
        "growth_peak_held_mb": seen["peak_bytes"] / 2**20, "moves": seen["moves"],
        "rss_before_mb": rss_before / 1024, "rss_peak_mb": _status_kb("VmHWM") / 1024,
        "rss_end_mb": _status_kb("VmRSS") / 1024, "wall_s": round(wall, 1),
        "threads": torch.get_num_threads(),
    }
    print(json.dumps(result, indent=1))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
