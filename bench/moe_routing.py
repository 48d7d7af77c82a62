"""MoE tab benchmark: the routing heatmap of 256 tokens (one forward recording every MoE layer's
router, then the figure), on a shipped explorer-moe checkpoint.

    .venv/bin/python bench/moe_routing.py [--model explorer-moe-bias] [--tokens 256] [--repeat 7] [--threads N]

Target (issue): <= 1 s on this CPU. Prints the median wall time and, beside it, this process's
CPU seconds over its torch threads (a lower bound of the wall time on an idle machine, since a
shared machine's wall times swing with other people's load), and the load average.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from explorer.checkpoints import shipped  # noqa: E402
from explorer.moe import routing, session  # noqa: E402
from models.loading import load_model  # noqa: E402

TARGET_S = 1.0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="explorer-moe-bias", choices=shipped.MOE_NAMES)
    parser.add_argument("--tokens", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads(),
                        help="torch threads (default: torch's, as the app runs)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    from transformers import AutoTokenizer

    folder = shipped.folder(args.model)
    model = load_model(folder, device="cpu", dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    text = "".join(session.held_out_texts())[:20 * args.tokens]
    ids = tuple(tokenizer(text, add_special_tokens=False)["input_ids"][:args.tokens])
    texts = tuple(tokenizer.decode([i]) for i in ids)
    layer = routing.moe_layers(model)[-1]

    def heatmap():
        result = routing.run_routing(model, ids, texts)
        return routing.figures(result, layer, "en")

    heatmap()  # warm-up
    wall, cpu = [], []
    for _ in range(args.repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        heatmap()
        wall.append(time.perf_counter() - start)
        cpu.append((time.process_time() - start_cpu) / torch.get_num_threads())
    median = statistics.median(wall)
    print(f"routing heatmap, {args.model}, {len(ids)} tokens, layer {layer}, "
          f"{torch.get_num_threads()} threads, load average {os.getloadavg()[0]:.1f}")
    print(f"  wall: median {median * 1e3:.0f} ms (min {min(wall) * 1e3:.0f}, max {max(wall) * 1e3:.0f}); "
          f"CPU/threads: median {statistics.median(cpu) * 1e3:.0f} ms; target <= {TARGET_S * 1e3:.0f} ms: "
          f"{'met' if median <= TARGET_S else 'NOT met'}")
    return 0 if median <= TARGET_S else 1


if __name__ == "__main__":
    raise SystemExit(main())
