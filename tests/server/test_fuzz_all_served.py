"""Every event of the built, served app survives hostile input (the unit tests:
tests/unit/test_fuzz_all.py)."""
from __future__ import annotations

from bench import fuzz_all


CI_CASES = 2   # per event: ~290 cases over ~145 events, ~1.5 min on an idle 2-core machine


def test_every_event_of_the_built_app_survives_hostile_input(guarded):
    url, demo, guard = guarded.url, guarded.demo, guarded.guard
    report = fuzz_all.fuzz_events(url, demo, guard, CI_CASES, seed=0, any_s=60,
                                  log=lambda line: None)
    with_fn = [i for i, fn in demo.fns.items() if fn.fn is not None]
    assert sorted(report.per_event) == sorted(with_fn)        # every server-side handler
    assert report.private >= 30 and report.cases >= CI_CASES * len(with_fn)
    assert all(stats["cases"] >= CI_CASES for stats in report.per_event.values())
    assert report.errors > report.cases // 2                   # hostile values are refused...
    assert not report.failures, report.failures[:10]          # ...in words, and it kept serving
