"""The quick part of the fuzz (bench/fuzz.py): every endpoint the app's API lists, up to 12
hostile cases each (values every handler must refuse, and hostile texts), against the app served in-process with both models loaded and a guard that refuses
any forward pass. Invalid inputs answer an error quickly without reaching the model; no answer
holds a traceback or a server path; the server keeps answering; memory stays bounded. The
>= 500-cases-per-endpoint run is `python -m bench.fuzz`; its last result is in
docs/HARDENING.md. Also here: the input checks the fuzz relies on, called directly."""
from __future__ import annotations

import math

import pytest


pytestmark = pytest.mark.timeout(900)
QUICK_CASES = 12   # per endpoint; the CI parts of the hardening tests stay within ~3 minutes


def test_every_endpoint_survives_the_quick_fuzz(guarded):
    from bench import fuzz

    url, demo, guard = guarded.url, guarded.demo, guarded.guard
    # Warm every handler first. The quick part sends only values every handler must refuse
    # and texts (stopped by the guard at the model): no case starts a heavy run that
    # ignores its hostile value. On a loaded 2-core CI machine an error may take longer
    # than the full run's 1 s.
    fuzz.fuzz(url, guard, 1, seed=1, log=lambda line: None, invalid_s=30, any_s=60,
              rss_mb=1e9, max_huge=1, strict_only=True)
    report = fuzz.fuzz(url, guard, QUICK_CASES, seed=0, log=lambda line: None, invalid_s=5.0,
                       any_s=30.0, rss_mb=100.0, max_huge=2, strict_only=True)
    # every case is a new session and each keeps its inputs' last values (a 4 MB text among
    # them) until evicted: the server's cap of 20 sessions (guarded_app; the app's is 200,
    # which grew the live heap 113 MB over 471 cases) bounds the fuzz's memory
    # (docs/HARDENING.md)
    held = fuzz.sessions_held(demo)
    assert 0 < held <= guarded.state_sessions < report.cases
    assert report.per_endpoint and min(s["cases"] for s in report.per_endpoint.values()) >= 3
    assert all("rss_live_mb" in s for s in report.per_endpoint.values())
    assert report.invalid > report.cases // 2
    assert not report.failures, report.failures[:10]


@pytest.mark.parametrize("name", [["smollm2-135m-instruct", "gemma-3-270m"], {"a": 1}, math.nan,
                                  "../../etc/passwd"])
def test_the_kv_calculator_refuses_a_model_name_that_is_not_one(runtime, name):
    """Found by the fuzz: /kv_calculator read any unknown model value (a list of two names) as
    "no model loaded" and answered; an unknown name is refused like everywhere else."""
    import gradio as gr

    from explorer.ui.tabs import generate_calculator as tab

    with pytest.raises(gr.Error, match="Unknown model"):
        tab.calculate(runtime, name, "en", 32768, 2)
    assert len(tab.calculate(runtime, None, "en", 32768, 2)) == 3


def test_an_unknown_model_id_is_not_echoed_whole(runtime):
    """Found by the quick fuzz: /model_info answered a 2 MB model id with all of it quoted."""
    from explorer.runtime import UnknownModelError

    with pytest.raises(UnknownModelError) as refused:
        runtime.check_name("注意力" * 700_000)
    assert len(str(refused.value)) < 400 and "Available models" in str(refused.value)


