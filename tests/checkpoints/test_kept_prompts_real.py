"""Kept prompts with the real default model: a kept prompt whose forward fails is dropped, and the
server keeps the default model's prompts at start but not on ZeroGPU (the tiny models:
tests/unit/test_kept_prompts.py)."""
from __future__ import annotations

from tests.unit.test_kept_prompts import KEPT, _first
from tests.unit.test_privacy import _tokens


def test_a_kept_prompt_whose_forward_fails_is_dropped_and_runs_go_on(tiny_llama):
    """An error in a kept prompt's forward (out of memory, say) reaches no visitor: the kept
    prompt is dropped, not retried, and the next run feeds its whole prompt and decodes."""
    import time

    from explorer.serving import Scheduler, Visitor

    failed = []

    def fail_once(module, args):
        if not failed:
            failed.append(True)
            raise MemoryError()

    sched = Scheduler(tiny_llama, prefill_chunk=8)
    hook = tiny_llama.embed.register_forward_pre_hook(fail_once)
    try:
        sched.keep_prompts([KEPT])
        deadline = time.monotonic() + 60
        # the loop counts the failed run done, then drops it: wait for both
        while (sched.kept_pending() or sched._kept) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert failed and not sched.kept_pending() and not sched._kept
        steps = _first(sched, KEPT + _tokens(3, 40), Visitor("b"))
    finally:
        hook.remove()
    assert len(steps) == 3 and steps[0].shared_prefix == 0


def test_the_server_keeps_the_default_models_prompts_at_start_but_not_on_zerogpu(runtime, monkeypatch):
    """app.main's warm-up asks the default model's loop to keep the app's prompts (the first
    class copies them at once); on ZeroGPU, where each run's loop lives in its own GPU call,
    neither the warm-up nor a Generate run asks."""
    import app
    from explorer.serving import scheduler_for
    from explorer.ui.tabs import generate as tab

    asked = []
    monkeypatch.setattr(tab, "keep_app_prompts", lambda loop, tokenizer, prompts: asked.append(loop))
    monkeypatch.setattr(tab, "on_zerogpu", lambda: True)
    app._keep_default_prompts(runtime)
    assert asked == []
    monkeypatch.setattr(tab, "on_zerogpu", lambda: False)
    app._keep_default_prompts(runtime)
    assert asked == [scheduler_for(runtime.get(runtime.default_name).model)]
