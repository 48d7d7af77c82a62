"""Mixed traffic against the app for a given time: runs, Stops, cancels, dropped connections,
model and language switches; memory sampled along the way.

    .venv/bin/python -m bench.soak --minutes 120 --json soak.json     # the classroom day (issue 27)
    .venv/bin/python -m bench.soak --minutes 10 --generators 12        # its first 10 minutes

The app is served in-process on a free port with its real Runtime (both models). Classroom
load: `--generators` clients (default 12) each generate continuously, every prompt distinct
(its client and its count in it); one client calls every public endpoint of the app in turn
with its API defaults (every tab's, read from view_api, so a new one is included); one opens
pages (GET / and /config, then the page's load events by fn_index, as a browser does) and
leaves them; and `--visitors` (default 2) send requests one after the other, each picked at
random (seeded) from:
- a short generation (8 tokens) on either model, in either language;
- a generation stopped after a few tokens by Stop (/stop, as the browser does),
  cancelled by the client (job.cancel(), a closed tab), or dropped: its connection closed
  with nothing sent (bench.cancel.DroppedJob, a killed browser);
- a model switch (the header's /load_model), an attention map, a RoPE frequency chart, a
  head-group chart.
Memory is read as its parts (/proc/self/status): RssFile is the libraries (a loaded model
owns its weights, copied out of the safetensors map at load by models.loading.own_memory);
RssAnon is the heap, weights included. Every minute the heap is also read after gc and
malloc_trim(0) ("live"): the app keeps up to 1 GB of freed heap mapped for reuse
(models.device.tune_cpu_allocator), which is not growth. Reported: requests by kind and their
errors, the slopes (least squares over the samples after the first quarter, MB per minute) of
RSS, RssFile and the live heap, the sessions Gradio holds (each with its gr.State) against the
cap, the size of the weights' files, files in Gradio's temp folder at the start and end, and
the queue at the end (events waiting or running; must be 0). Gradio's per-session bookkeeping
(sessions held, the queue's per-session message queues and event-id sets) and the temp
folder's files and bytes are sampled with the RSS; their maxima and ends are reported. The slopes are also given after
`--settle-minutes` (default 10, or a quarter of a shorter run).
"""
from __future__ import annotations

import dataclasses
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

from bench.fuzz import serve  # noqa: E402
from bench.memory import MB, live_rss_bytes, rss_bytes, slope_mb_per_min  # noqa: E402

PROMPTS = ["What is a KV cache?", "用一句话解释注意力。", "Once upon a time", "List three colours."]


def rss_parts_mb() -> dict:
    """RssAnon (heap: weights, the allocator's high-water mark, states, activations) and
    RssFile (mapped files: libraries) from /proc/self/status, in MB."""
    parts = {}
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(("RssAnon:", "RssFile:")):
                parts[line.split(":")[0]] = round(int(line.split()[1]) / 1024, 1)
    return parts


def live_anon_mb() -> float:
    """RssAnon after gc and malloc_trim(0): the heap in use, less what glibc keeps for reuse."""
    live_rss_bytes()
    return rss_parts_mb().get("RssAnon", 0.0)


def weights_mb(runtime, models) -> float:
    """Size of the models' safetensors files: the weights' bytes as stored (fp32 files; a model
    served in bf16 holds half)."""
    total = sum(p.stat().st_size for name in models
                for p in Path(runtime.get(name).folder).glob("*.safetensors"))
    return round(total / MB, 1)


def temp_folder(demo=None) -> Path:
    """The served app's temp folder (Gradio's uploaded_file_dir), else Gradio's default."""
    served = getattr(getattr(demo, "server_app", None), "uploaded_file_dir", None)
    return Path(served or os.environ.get("GRADIO_TEMP_DIR") or Path(tempfile.gettempdir()) / "gradio")


def temp_files(demo=None) -> int:
    folder = temp_folder(demo)
    return sum(1 for p in folder.rglob("*") if p.is_file()) if folder.exists() else 0


def temp_bytes(demo=None) -> int:
    folder = temp_folder(demo)
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) if folder.exists() else 0


TOPICS = ["attention heads", "the KV cache", "rotary position embeddings", "a mixture of experts",
          "layer normalisation", "FlashAttention's tiling", "sampling temperature", "tokenizers"]


def generator(url: str, index: int, until: float, counts: dict, lock: threading.Lock,
              models: list) -> None:
    """One classroom client generating continuously, each prompt its own."""
    from gradio_client import Client

    n = 0
    while time.monotonic() < until:
        n += 1
        prompt = f"Student {index}, question {n}: explain {TOPICS[(index + n) % len(TOPICS)]} in one sentence."
        error = None
        try:
            client = Client(url, verbose=False, httpx_kwargs={"timeout": 120})
            try:
                client.predict(model_name=models[0], lang="en" if index % 3 else "zh", prompt=prompt,
                               n_new=24, compare_value=False, check_value=False, api_name="/generate")
            finally:
                client.close()
        except Exception as exc:
            error = f"{type(exc).__name__}: {str(exc)[:120]}"
        _count(counts, lock, "classroom generate", error)


def endpoint_walker(url: str, until: float, counts: dict, lock: threading.Lock) -> None:
    """Every public endpoint of the app in turn with its API defaults, round after round."""
    import httpx

    from bench.fuzz import call, default_args, endpoints_of

    endpoints = endpoints_of(url)
    with httpx.Client() as http:
        while time.monotonic() < until:
            for name, parameters in endpoints.items():
                if time.monotonic() >= until:
                    break
                answer = call(http, url, name, default_args(parameters), timeout=700)
                # a refusal in words (a rate limit, a busy loop) is an answer; no answer is not
                failed = answer.status in ("transport", "timeout", "unsent") or answer.status.startswith("http 5")
                _count(counts, lock, f"endpoint {name}",
                       f"{answer.status}: {(answer.message or '')[:120]}" if failed else None)


def page_loader(url: str, demo, until: float, counts: dict, lock: threading.Lock) -> None:
    """A browser opening the page and leaving: the HTML, the config, and the page's load
    events by fn_index (the queue's join and stream, as the page runs them); then nothing more."""
    import httpx

    from bench.fuzz_all import _page_value, call_fn, events_of

    loads = [e for e in events_of(demo) if any(t[1] == "load" for t in demo.fns[e.fn_index].targets)]
    with httpx.Client() as http:
        while time.monotonic() < until:
            error = None
            try:
                for path in ("", "config"):
                    if http.get(url + path, timeout=60).status_code != 200:
                        error = f"GET /{path} failed"
                for event in loads:
                    answer = call_fn(http, url, event, [_page_value(b) for b in event.blocks], timeout=120)
                    if answer.status in ("transport", "timeout", "closed") or answer.status.startswith("http 5"):
                        error = f"load fn {event.fn_index}: {answer.status}"
            except Exception as exc:
                error = f"{type(exc).__name__}: {str(exc)[:120]}"
            _count(counts, lock, "page load", error)
            time.sleep(2)


def _count(counts: dict, lock: threading.Lock, kind: str, error: Optional[str]) -> None:
    with lock:
        entry = counts.setdefault(kind, {"requests": 0, "errors": 0, "examples": []})
        entry["requests"] += 1
        if error:
            entry["errors"] += 1
            if len(entry["examples"]) < 3:
                entry["examples"].append(error)


def queue_size(demo) -> int:
    queue = demo._queue
    waiting = sum(len(q.queue) for q in queue.event_queue_per_concurrency_id.values())
    return waiting + sum(1 for job in queue.active_jobs if job)


KINDS = ["generate", "generate", "stop", "cancel", "drop", "switch", "attention", "rope", "groups"]


def one_request(url: str, kind: str, model: str, lang: str, rng: random.Random, payloads: dict) -> None:
    """One request of `kind` as a fresh visitor (a new session); raises what the client raised."""
    from gradio_client import Client

    from bench.cancel import DroppedJob

    if kind == "drop":
        job = DroppedJob(url, payloads[model, lang])
        time.sleep(rng.uniform(0.5, 3.0))
        job.drop()
        return
    client = Client(url, verbose=False, httpx_kwargs={"timeout": 60})   # a loaded CPU answers slowly
    try:
        if kind == "switch":
            client.predict(model_name=model, lang=lang, api_name="/load_model")
        elif kind == "generate":
            client.predict(model_name=model, lang=lang, prompt=rng.choice(PROMPTS), n_new=8,
                           compare_value=rng.random() < 0.3, check_value=rng.random() < 0.3,
                           api_name="/generate")
        elif kind in ("stop", "cancel"):
            job = client.submit(model_name=model, lang=lang, prompt=rng.choice(PROMPTS),
                                n_new=200, compare_value=False, check_value=False,
                                api_name="/generate")
            time.sleep(rng.uniform(0.5, 3.0))
            if kind == "stop":   # the run ends itself at its next step
                client.predict(api_name="/stop")
                job.result(timeout=60)
            else:
                job.cancel()
        elif kind == "attention":
            client.predict(model_name=model, lang=lang, api_name="/attention_map")
        elif kind == "rope":
            client.predict(lang=lang, api_name="/rope_frequencies")
        else:
            client.predict(model_name=model, lang=lang, api_name="/head_groups")
    finally:
        client.close()


def visitor(url: str, models: list, seed: int, until: float, counts: dict, lock: threading.Lock,
            payloads: dict):
    rng = random.Random(seed)
    while time.monotonic() < until:
        kind = rng.choice(KINDS)
        error = None
        try:
            one_request(url, kind, rng.choice(models), rng.choice(["en", "zh"]), rng, payloads)
        except Exception as exc:  # counted, not fatal: the soak reports them
            error = f"{type(exc).__name__}: {str(exc)[:120]}"
        _count(counts, lock, kind, error)


def per_kind(url: str, demo, models: list, payloads: dict, n: int, seed: int = 0) -> dict:
    """Where the heap goes: each kind of request in turn, n times by one visitor (each a new
    session), the live heap (after gc and malloc_trim) and the sessions Gradio holds read
    before and after. A kind whose heap grows by about its sessions' gr.State per request and
    stops at the session cap is state, a bound; one that grows past the cap is a leak."""
    rng = random.Random(seed)
    for kind in dict.fromkeys(KINDS):   # warm-up: every kind once (imports, caches, pools)
        one_request(url, kind, rng.choice(models), "en", rng, payloads)
    out = {}
    for kind in dict.fromkeys(KINDS):
        time.sleep(2)
        before, held = live_anon_mb(), len(demo.state_holder.session_data)
        errors = 0
        for _ in range(n):
            try:
                one_request(url, kind, rng.choice(models), rng.choice(["en", "zh"]), rng, payloads)
            except Exception:
                errors += 1
        time.sleep(2)   # a dropped or cancelled run leaves the loop
        after = live_anon_mb()
        out[kind] = {"requests": n, "errors": errors, "live_anon_delta_mb": round(after - before, 1),
                     "per_request_kb": round(1024 * (after - before) / n),
                     "sessions_before": held, "sessions_after": len(demo.state_holder.session_data)}
    return out


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--visitors", type=int, default=2, help="clients of the mixed kinds")
    parser.add_argument("--generators", type=int, default=12,
                        help="classroom clients generating continuously, distinct prompts")
    parser.add_argument("--no-walker", action="store_true", help="no client calling every endpoint")
    parser.add_argument("--no-pages", action="store_true", help="no client opening pages")
    parser.add_argument("--settle-minutes", type=float, default=10.0,
                        help="slopes after this many minutes too (a quarter of a shorter run)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sessions", type=int, help="override app.WEB.state_sessions (the session cap)")
    parser.add_argument("--models", type=lambda text: text.split(","),
                        help="comma-separated model ids (default: every model the app lists)")
    parser.add_argument("--per-kind", type=int, metavar="N",
                        help="instead of the mixed traffic: N requests of each kind in turn, the live "
                             "heap read before and after each kind")
    parser.add_argument("--json", help="write the summary here")
    args = parser.parse_args(argv)
    import app

    if args.sessions:
        app.WEB = dataclasses.replace(app.WEB, state_sessions=args.sessions)
    from bench.cancel import join_payload

    url, demo, runtime, _ = serve()
    models = [name for name in runtime.names() if name in (args.models or runtime.names())]
    for name in models:
        runtime.get(name)
    payloads = {(model, lang): join_payload(url, "/generate", dict(
        model_name=model, lang=lang, prompt=PROMPTS[0], n_new=200, compare_value=False,
        check_value=False)) for model in models for lang in ("en", "zh")}
    if args.per_kind:
        result = {"per_kind": per_kind(url, demo, models, payloads, args.per_kind, args.seed),
                  "session_cap": demo.state_session_capacity, "weights_mb": weights_mb(runtime, models)}
        demo.close()
        if args.json:
            Path(args.json).write_text(json.dumps(result, indent=1))
        print(json.dumps(result))
        return 0
    from bench.fuzz import queue_records

    files_start, bytes_start = temp_files(demo), temp_bytes(demo)
    counts: dict = {}
    lock = threading.Lock()
    start = time.monotonic()
    until = start + 60 * args.minutes
    threads = [threading.Thread(target=visitor, args=(url, models, args.seed + i, until, counts, lock,
                                                      payloads),
                                daemon=True) for i in range(args.visitors)]
    threads += [threading.Thread(target=generator, args=(url, i, until, counts, lock, models), daemon=True)
                for i in range(args.generators)]
    if not args.no_walker:
        threads.append(threading.Thread(target=endpoint_walker, args=(url, until, counts, lock), daemon=True))
    if not args.no_pages:
        threads.append(threading.Thread(target=page_loader, args=(url, demo, until, counts, lock), daemon=True))
    bookkeeping = []   # (t, sessions, queue message queues, queue id sets, temp files, temp bytes)
    for t in threads:
        t.start()
    samples, parts, live, sessions = [], [], [], []
    parts_start = rss_parts_mb()
    next_live = 0.0
    while any(t.is_alive() for t in threads):
        now = time.monotonic() - start
        samples.append((now, rss_bytes() / MB))
        part = rss_parts_mb()
        parts.append((now, part.get("RssAnon", 0.0), part.get("RssFile", 0.0)))
        sessions.append((now, len(demo.state_holder.session_data)))
        records = queue_records(demo)
        bookkeeping.append((now, len(demo.state_holder.session_data), records["queue_message_queues"],
                            records["queue_id_sets"], temp_files(demo), temp_bytes(demo)))
        if now >= next_live:
            live.append((now, live_anon_mb()))
            next_live = now + 60
        time.sleep(10)
    for t in threads:
        t.join()
    time.sleep(3)
    now = time.monotonic() - start
    samples.append((now, rss_bytes() / MB))
    parts_end = rss_parts_mb()
    parts.append((now, parts_end.get("RssAnon", 0.0), parts_end.get("RssFile", 0.0)))
    live.append((now, live_anon_mb()))
    settled = [s for s in samples if s[0] >= samples[-1][0] / 4]

    def slope(points):
        value = slope_mb_per_min([p for p in points if p[0] >= now / 4])
        return None if value is None else round(value, 2)

    settle = min(60 * args.settle_minutes, now / 4)

    def settled_slope(points):
        value = slope_mb_per_min([p for p in points if p[0] >= settle])
        return None if value is None else round(value, 2)

    records = queue_records(demo)
    result = {
        "minutes": round((time.monotonic() - start) / 60, 2),
        "clients": {"generators": args.generators, "visitors": args.visitors,
                    "endpoint_walker": not args.no_walker, "page_loader": not args.no_pages},
        "errors": sum(entry["errors"] for entry in counts.values()),
        "settle_minutes": round(settle / 60, 2),
        "rss_slope_after_settle_mb_per_min": settled_slope(samples),
        "live_anon_slope_after_settle_mb_per_min": settled_slope(live),
        "queue_message_queues_max": max((b[2] for b in bookkeeping), default=0),
        "queue_id_sets_max": max((b[3] for b in bookkeeping), default=0),
        "queue_records_end": records,
        "temp_bytes_start": bytes_start, "temp_bytes_max": max((b[5] for b in bookkeeping), default=0),
        "temp_bytes_end": temp_bytes(demo),
        "requests": counts,
        "rss_start_mb": round(samples[0][1], 1), "rss_end_mb": round(samples[-1][1], 1),
        "rss_max_mb": round(max(r for _, r in samples), 1),
        "rss_parts_start_mb": parts_start, "rss_parts_end_mb": parts_end,
        "rss_slope_mb_per_min_after_first_quarter": None if slope_mb_per_min(settled) is None
        else round(slope_mb_per_min(settled), 2),
        "file_slope_mb_per_min": slope([(t, f) for t, _, f in parts]),
        "anon_slope_mb_per_min": slope([(t, a) for t, a, _ in parts]),
        "live_anon_mb": [round(a, 1) for _, a in live],
        "live_anon_slope_mb_per_min": slope(live),
        "live_anon_slope_last_half_mb_per_min": None if slope_mb_per_min(
            [p for p in live if p[0] >= now / 2]) is None
        else round(slope_mb_per_min([p for p in live if p[0] >= now / 2]), 2),
        "weights_mb": weights_mb(runtime, models),
        "sessions_held_max": max((n for _, n in sessions), default=0),
        "temp_files_start": files_start, "temp_files_end": temp_files(demo),
        "queue_end": queue_size(demo),
        "sessions_held_end": len(demo.state_holder.session_data),
        "session_cap": demo.state_session_capacity,
        "generate_workers_end": sum(t.name == "kv-generate" for t in threading.enumerate()),
    }
    demo.close()
    if args.json:
        Path(args.json).write_text(json.dumps({**result, "rss_samples": samples, "rss_parts": parts,
                                               "live_anon": live, "sessions": sessions,
                                               "bookkeeping": bookkeeping}, indent=1))
    print(json.dumps(result, ensure_ascii=False))
    return 0 if result["queue_end"] == 0 and result["generate_workers_end"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
