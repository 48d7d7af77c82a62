"""Claims board benchmark: the whole real board (every claim's evidence function, as the Claims
tab runs it) on each model, with per-claim wall and CPU seconds and the total.

    .venv/bin/python -m bench.claims                          # SmolLM2, then Gemma
    .venv/bin/python -m bench.claims --models smollm2-135m-instruct

Target (issue 15): the whole board for SmolLM2 in <= 60 s on the 2-core CPU. Wall times on a
shared machine swing with other people's load, so the load average is printed at start and end
and each claim also shows this process's CPU seconds over torch's threads (roughly the wall
time with the cores to ourselves). Also checked: every row's link names a tab and section that
exist in the app, and every locale key a row shows exists in both languages.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from explorer.claims import board  # noqa: E402
from explorer.locales import has  # noqa: E402
from explorer.runtime import Runtime  # noqa: E402

GOAL_S = {"smollm2-135m-instruct": 60.0}


def section_ids(runtime: Runtime) -> set[str]:
    """elem_ids of the app's tabs and sections ("tab-rope", "section-rope-qk-title", ...)."""
    import app
    import gradio as gr

    demo = app.build_app(runtime)
    return {block.elem_id for block in demo.blocks.values()
            if isinstance(block, gr.Tab) and block.elem_id}


def problems(result: board.BoardResult, sections: set[str]) -> list[str]:
    found = []
    for row in result.rows:
        if f"tab-{row.tab}" not in sections:
            found.append(f"{row.claim}: tab {row.tab!r} is not in the app")
        if row.section and row.section not in sections:
            found.append(f"{row.claim}: section {row.section!r} is not in the app")
        if row.evidence is not None:
            keys = [row.evidence.criterion, *(m.label for m in row.evidence.measures)]
            found += [f"{row.claim}: no locale text {key!r}" for key in keys if not has(key)]
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["smollm2-135m-instruct", "gemma-3-270m"])
    args = parser.parse_args()
    runtime = Runtime()
    print(f"{runtime.device_label}; torch threads {torch.get_num_threads()}; "
          f"load average at start {os.getloadavg()[0]:.2f}")
    sections = section_ids(runtime)
    for name in args.models:
        loaded = runtime.get(name)
        cpu_at = {}

        def progress(done, total, claim):
            cpu_at[done] = time.process_time()

        started, cpu = time.perf_counter(), time.process_time()
        result = board.run(loaded, progress=progress)
        wall = time.perf_counter() - started
        print(f"\n{name}: {result.count('pass')} of {len(result.rows)} pass, "
              f"{result.count('fail')} fail, {result.count('missing')} not available")
        print(f"{'claim':6} {'verdict':8} {'wall s':>7} {'cpu s/thr':>9}  reason / numbers")
        for index, row in enumerate(result.rows):
            cpu_s = (cpu_at[index + 1] - cpu_at[index]) / torch.get_num_threads()
            detail = board.table(result, "en").iloc[index, 2]
            print(f"{row.claim:6} {row.verdict:8} {row.seconds:7.2f} {cpu_s:9.2f}  {detail[:90]}")
        cpu_total = (time.process_time() - cpu) / torch.get_num_threads()
        goal = GOAL_S.get(name)
        verdict = "" if goal is None else f" (goal <= {goal:.0f} s: {'met' if wall <= goal else 'NOT met'})"
        print(f"total {wall:.1f} s wall, {cpu_total:.1f} s CPU/thread{verdict}; "
              f"load average now {os.getloadavg()[0]:.2f}")
        for problem in problems(result, sections):
            print("  problem:", problem)


if __name__ == "__main__":
    main()
