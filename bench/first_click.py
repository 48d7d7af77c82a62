"""The first press of every section on a cold server, before and after warming (explorer/ui/page/warm.py).

    python -m bench.first_click            # every warmed section of the default model

In one process: the app is built, the default model loaded, then each section's default run is
made once as warming makes it (the time a first press waits without warming: the first run of
that handler in the process), and the same press is timed again through the wrapped handler
(what a first press waits once warmed). Prints one line per section and
`FIRST_CLICK: before <median> s (max <max> s) after <max> s`.
"""
from __future__ import annotations

import statistics
import sys
import time


def main(argv: list[str]) -> int:
    import app
    from explorer.runtime import Runtime

    runtime = Runtime()
    warm = app.build_page(runtime).warm
    if argv:
        warm.jobs = [job for job in warm.jobs if job.key in argv]
    runtime.get(runtime.default_name)
    warm.run()
    before, after = [], []
    for job in warm.jobs:
        if job.failed:
            print(f"{job.key:22s} not warmed (answers live)", flush=True)
            continue
        started = time.perf_counter()
        job.block_fn.fn(*job.defaults)
        hit = time.perf_counter() - started
        before.append(job.seconds)
        after.append(hit)
        print(f"{job.key:22s} before {job.seconds:7.2f} s   after {hit * 1000:7.2f} ms", flush=True)
    if before:
        print(f"FIRST_CLICK: before {statistics.median(before):.1f} s (max {max(before):.1f} s) "
              f"after {max(after) * 1000:.1f} ms", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
