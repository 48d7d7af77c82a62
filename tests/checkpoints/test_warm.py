"""Instant first answers (explorer/ui/page/warm.py): a section's default answer, computed once in the
background, is what a press with the default inputs gets at once, in either language; any other
press runs as always; the Generate run and per-visitor handlers are never kept."""
from __future__ import annotations

import re
import time

import pytest


def _rounded(summary: str) -> str:
    """A summary without its round-off residuals (1e-15 and 0.0e+00 are both "nothing")."""
    return re.sub(r"\d\.\de[-+]\d+", "~0", summary)

from explorer.ui.page import warm as warm_module


@pytest.fixture(scope="module")
def fold_job(full_page):
    warm = full_page.warm
    job = next(j for j in warm.jobs if j.key == "arch.fold")
    solo = warm_module.Warm(jobs=[job])
    solo.kept = warm.kept          # the app's own cache, filled for this one job
    solo.lock = warm.lock
    solo.run()
    assert not job.failed and job.seconds is not None
    return job


def test_generate_and_state_reading_handlers_are_not_warmed(full_page):
    keys = {job.key for job in full_page.warm.jobs}
    assert "generate.run" not in keys
    assert {"attention.map", "flash.schedule", "arch.fold", "claims.board"} <= keys
    for job in full_page.warm.jobs:
        assert warm_module._warmable(job.block_fn, job.block_fn.inputs[job.lang_at])


def test_a_default_press_gets_the_kept_answer_at_once(fold_job, full_page):
    wrapped = fold_job.block_fn.fn
    started = time.perf_counter()
    kept = wrapped(*fold_job.defaults)
    assert time.perf_counter() - started < 0.05
    assert kept is full_page.warm.kept[("arch.fold", "en")]
    # the same numbers a live run computes (the run is deterministic)
    live = fold_job.original(*fold_job.defaults)
    assert _rounded(kept[1]) == _rounded(live[1])   # the summary text, every number in it


def test_chinese_is_drawn_from_the_same_result(fold_job):
    args = list(fold_job.defaults)
    args[fold_job.lang_at] = "zh"
    kept = fold_job.block_fn.fn(*args)
    live = fold_job.original(*args)
    assert _rounded(kept[1]) == _rounded(live[1])
    assert any("\u4e00" <= ch <= "\u9fff" for ch in kept[1])
    assert kept[2] is fold_job.block_fn.fn(*fold_job.defaults)[2]   # one result, two drawings


def test_any_other_input_runs_live(fold_job):
    args = list(fold_job.defaults)
    position = next(i for i, c in enumerate(fold_job.block_fn.inputs)
                    if getattr(c, "elem_id", "") == "arch-fold-positions")
    args[position] = 256
    other = fold_job.block_fn.fn(*args)
    assert other[2] is not fold_job.block_fn.fn(*fold_job.defaults)[2]
    assert other[1] != fold_job.block_fn.fn(*fold_job.defaults)[1]


def test_the_banner_counts_sections_and_stops_its_timer():
    job = warm_module._Job("x", None, None, [], 0)
    warm = warm_module.Warm(jobs=[job])
    banner, timer = warm.banner("en")
    assert banner["visible"] is False           # not started (tests, EXPLORER_WARM=0)
    warm.started = True
    banner, timer = warm.banner("zh")
    assert banner["visible"] and "0" in banner["value"] and "1" in banner["value"]
    assert timer.active
    warm.finished = True
    banner, timer = warm.banner("en")
    assert banner["visible"] is False and timer.active is False


def test_warming_waits_for_the_decode_loops_to_be_quiet(monkeypatch):
    """Visitors first: a section is not started while runs decode or wait, and starts once the
    loops have been idle for quiet_s (a class pressing Generate in the first minutes got about
    two thirds of the throughput while warming shared the cores)."""
    import threading
    import time

    clock = {"busy_until": time.perf_counter() + 0.6}
    started = []

    def handler(lang):
        started.append(time.perf_counter())
        return lang

    job = warm_module._Job("x", None, handler, ["en"], 0)
    warm = warm_module.Warm(jobs=[job], busy=lambda: time.perf_counter() < clock["busy_until"])
    began = time.perf_counter()
    thread = threading.Thread(target=lambda: warm.run())
    monkeypatch.setattr(warm_module, "QUIET_S", 0.3)
    monkeypatch.setattr(warm_module, "LOOK_S", 0.05)
    thread.start()
    thread.join(timeout=10)
    assert started and warm.finished
    # not before the loops went quiet (0.6 s) plus the quiet time asked for
    assert started[0] - began >= 0.6 + 0.25
    assert warm.waited_s >= 0.8 and warm.kept[("x", "en")] == "en"


def test_warming_starts_at_once_on_idle_loops():
    job = warm_module._Job("x", None, lambda lang: lang, ["en"], 0)
    warm = warm_module.Warm(jobs=[job], busy=lambda: False)
    warm.run()
    assert warm.finished and warm.waited_s == 0.0


def test_live_runs_counts_every_loop(monkeypatch):
    from explorer.serving import registry

    class Loop:
        def __init__(self, n):
            self.n = n

        def load(self):
            return self.n

    loops = [Loop(2), Loop(3)]
    monkeypatch.setattr(registry, "_LOOPS", set(loops))
    assert registry.live_runs() == 5
