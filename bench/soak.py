"""Mixed traffic against the app for a given time: runs, Stops, cancels, model and language
switches; RSS sampled along the way.

    .venv/bin/python -m bench.soak --minutes 10 --json soak.json

The app is served in-process on a free port with its real Runtime (both models). Two visitors
send requests one after the other, each picked at random (seeded) from:
- a short generation (8 tokens) on either model, in either language;
- a generation stopped after a few tokens by Stop (/cancel + /stop, as the browser does), or
  cancelled by the client (job.cancel(), a closed tab);
- an attention map, a RoPE frequency chart in the other language, a head-group chart.
Reported: requests by kind and their errors, the RSS slope (least squares over the samples
after the first quarter, MB per minute) and its range, files in Gradio's temp folder at the
start and end, and the queue at the end (events waiting or running; must be 0).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.fuzz import MB, rss_bytes, serve  # noqa: E402

PROMPTS = ["What is a KV cache?", "用一句话解释注意力。", "Once upon a time", "List three colours."]


def rss_parts_mb() -> dict:
    """RssAnon (heap: the allocator's high-water mark, states, activations) and RssFile
    (mapped files: safetensors weights, libraries) from /proc/self/status, in MB."""
    parts = {}
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(("RssAnon:", "RssFile:")):
                parts[line.split(":")[0]] = round(int(line.split()[1]) / 1024, 1)
    return parts


def temp_files() -> int:
    folder = Path(os.environ.get("GRADIO_TEMP_DIR") or Path(tempfile.gettempdir()) / "gradio")
    return sum(1 for p in folder.rglob("*") if p.is_file()) if folder.exists() else 0


def queue_size(demo) -> int:
    queue = demo._queue
    waiting = sum(len(q.queue) for q in queue.event_queue_per_concurrency_id.values())
    return waiting + sum(1 for job in queue.active_jobs if job)


def slope_mb_per_min(samples: list[tuple[float, float]]) -> Optional[float]:
    if len(samples) < 3:
        return None
    n = len(samples)
    mt = sum(t for t, _ in samples) / n
    mr = sum(r for _, r in samples) / n
    var = sum((t - mt) ** 2 for t, _ in samples)
    return 60 * sum((t - mt) * (r - mr) for t, r in samples) / var if var else None


def visitor(url: str, models: list, seed: int, until: float, counts: dict, lock: threading.Lock):
    from gradio_client import Client

    rng = random.Random(seed)
    while time.monotonic() < until:
        kind = rng.choice(["generate", "generate", "stop", "cancel", "attention", "rope", "groups"])
        model = rng.choice(models)
        lang = rng.choice(["en", "zh"])
        client = Client(url, verbose=False)
        error = None
        try:
            if kind == "generate":
                client.predict(model_name=model, lang=lang, prompt=rng.choice(PROMPTS), n_new=8,
                               compare_value=rng.random() < 0.3, check_value=rng.random() < 0.3,
                               api_name="/generate")
            elif kind in ("stop", "cancel"):
                job = client.submit(model_name=model, lang=lang, prompt=rng.choice(PROMPTS),
                                    n_new=200, compare_value=False, check_value=False,
                                    api_name="/generate")
                time.sleep(rng.uniform(0.5, 3.0))
                job.cancel()
                if kind == "stop":
                    client.predict(lang, api_name="/stop")
            elif kind == "attention":
                client.predict(model_name=model, lang=lang, api_name="/attention_map")
            elif kind == "rope":
                client.predict(lang=lang, api_name="/rope_frequencies")
            else:
                client.predict(model_name=model, lang=lang, api_name="/head_groups")
        except Exception as exc:  # counted, not fatal: the soak reports them
            error = f"{type(exc).__name__}: {str(exc)[:120]}"
        finally:
            client.close()
        with lock:
            entry = counts.setdefault(kind, {"requests": 0, "errors": 0, "examples": []})
            entry["requests"] += 1
            if error:
                entry["errors"] += 1
                if len(entry["examples"]) < 3:
                    entry["examples"].append(error)


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--visitors", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sessions", type=int, help="override app.STATE_SESSIONS (the session cap)")
    parser.add_argument("--json", help="write the summary here")
    args = parser.parse_args(argv)
    import app

    if args.sessions:
        app.STATE_SESSIONS = args.sessions
    url, demo, runtime, _ = serve()
    models = runtime.names()
    for name in models:
        runtime.get(name)
    files_start = temp_files()
    counts: dict = {}
    lock = threading.Lock()
    start = time.monotonic()
    until = start + 60 * args.minutes
    threads = [threading.Thread(target=visitor, args=(url, models, args.seed + i, until, counts, lock),
                                daemon=True) for i in range(args.visitors)]
    for t in threads:
        t.start()
    samples = []
    parts_start = rss_parts_mb()
    while any(t.is_alive() for t in threads):
        samples.append((time.monotonic() - start, rss_bytes() / MB))
        time.sleep(10)
    for t in threads:
        t.join()
    time.sleep(3)
    samples.append((time.monotonic() - start, rss_bytes() / MB))
    parts_end = rss_parts_mb()
    settled = [s for s in samples if s[0] >= samples[-1][0] / 4]
    result = {
        "minutes": round((time.monotonic() - start) / 60, 2),
        "requests": counts,
        "rss_start_mb": round(samples[0][1], 1), "rss_end_mb": round(samples[-1][1], 1),
        "rss_max_mb": round(max(r for _, r in samples), 1),
        "rss_parts_start_mb": parts_start, "rss_parts_end_mb": parts_end,
        "rss_slope_mb_per_min_after_first_quarter": None if slope_mb_per_min(settled) is None
        else round(slope_mb_per_min(settled), 2),
        "temp_files_start": files_start, "temp_files_end": temp_files(),
        "queue_end": queue_size(demo),
        "sessions_held_end": len(demo.state_holder.session_data),
        "session_cap": demo.state_session_capacity,
        "generate_workers_end": sum(t.name == "kv-generate" for t in threading.enumerate()),
    }
    demo.close()
    if args.json:
        Path(args.json).write_text(json.dumps({**result, "rss_samples": samples}, indent=1))
    print(json.dumps(result, ensure_ascii=False))
    return 0 if result["queue_end"] == 0 and result["generate_workers_end"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
