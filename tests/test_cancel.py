"""Stop and cancel a streaming /generate through the app's API (bench/cancel.py, short run):
<= 2 tokens decoded after the stop, the run out of the shared decode loop within 1 s, the
next job decoding within 2 s, no worker left and the thread count back to its baseline. The 50-times
run is `python -m bench.cancel`; its last result is in docs/HARDENING.md."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.timeout(600)


def test_stop_and_cancel_end_the_run_and_free_the_model_for_the_next_job():
    from bench import cancel
    from bench.fuzz import serve

    url, demo, runtime, guard = serve()
    forwards = cancel.Forwards(guard)
    try:
        runtime.get(runtime.default_name)
        summary = cancel.run(url, forwards, times=2, modes=("stop", "cancel"), log=lambda line: None)
    finally:
        forwards.close()
        demo.close()
    result = summary.as_dict()
    assert not summary.failures, result
    for mode in ("stop", "cancel"):
        assert result[mode]["times"] == 2
        assert result[mode]["max_extra_tokens"] <= cancel.MAX_EXTRA_TOKENS
        assert result[mode]["max_worker_gone_s"] <= cancel.WORKER_GONE_S
    assert result["workers_end"] == 0 and result["threads_end"] <= result["threads_baseline"]
