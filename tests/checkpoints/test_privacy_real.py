"""Privacy with the real default model: a probe learns nothing of another visitor's prompt, and the
tab refuses a flood in the visitor's words (the tiny models: tests/unit/test_privacy.py)."""
from __future__ import annotations

import threading
import time

import pytest


MODEL = "smollm2-135m-instruct"


# a student's prompt, and another's probes: one unrelated, two that begin like it
SECRET = ("My secret plan for the exam is to hide the formulas under my watch strap. Tell me a "
          "long story about it, in ten detailed paragraphs.")


PROBES = ["What is a cat?", "My secret plan is unknown to you.",
          "My secret plan for the exam is to sleep."]


def _handler_args(prompt: str, n_new: int) -> tuple:
    """run_generate's arguments after the runtime and the model (greedy, no checks)."""
    return ("en", prompt, n_new, 0.0, 0, 1.0, 0, "full", 64, 4, False, False, [])


def test_a_probe_learns_nothing_of_another_visitors_prompt(runtime, monkeypatch):
    """Visitor A generates from a secret prompt; while A's run is in the loop, visitor B (another
    session) sends probes that begin like it, one more of A's words each time. The tokens B's
    runs copy from the loop (and the evidence line B reads) are what each probe shares with the
    chat template or the app's own kept prompts (explorer.generate.kept), computed from the
    probe alone: they do not grow with what A wrote."""
    from explorer.generate.kept import app_prompts
    from explorer.lessons import generate_prompts
    from explorer.generate.request import encode_prompt
    from explorer.prompts import template_prefix
    from explorer.serving.prefixes import KEPT_MIN, common_prefix
    from explorer.ui.tabs import generate as tab

    who = threading.local()   # the session each thread's handler serves, as Gradio would say
    monkeypatch.setattr(tab, "event_client", lambda: (getattr(who, "session", None), "10.0.0.7"),
                        raising=False)
    loaded = runtime.get(MODEL)
    template = len(template_prefix(loaded.tokenizer))
    assert template >= 16   # SmolLM2's system turn: enough to be copied (SHARE_MIN)

    first_token, done, ended = threading.Event(), threading.Event(), threading.Event()

    def visitor_a():
        who.session = "A"
        messages = tab.run_generate(runtime, MODEL, *_handler_args(SECRET, 256))
        try:
            for _ in messages:
                first_token.set()
                if done.is_set():
                    return
        finally:
            messages.close()
            ended.set()

    thread = threading.Thread(target=visitor_a)
    thread.start()
    try:
        assert first_token.wait(timeout=120), "A's run never started"
        who.session = "B"
        copied, evidence = [], []
        for probe in PROBES:
            final = list(tab.run_generate(runtime, MODEL, *_handler_args(probe, 1)))[-1]
            session = final[9]
            copied.append(session.records[0].shared_prefix)
            evidence.append(final[7])
        assert not ended.is_set(), "A's run ended before the probes: they probed nothing"
    finally:
        done.set()
        thread.join(timeout=120)
    kept = [encode_prompt(loaded.tokenizer, text)[0] for text in app_prompts(generate_prompts())]
    expected = []
    for probe in PROBES:   # from the probe and the app's constants alone
        ids = encode_prompt(loaded.tokenizer, probe)[0]
        best = max(common_prefix(k, ids, len(ids) - 1) for k in kept)
        expected.append(best if best >= max(template, KEPT_MIN) else template)
    assert min(expected) >= template
    assert copied == expected, (copied, expected)
    for n, line in zip(copied, evidence):
        assert f"first {n} " in line, line
        assert ("chat template" in line) if n == template else ("app's own prompts" in line), line


def test_the_tab_refuses_a_flood_in_the_visitors_words(runtime, monkeypatch):
    """Through the Generate handler on the real model's shared loop: a page that already has
    its cap of runs in the loop is refused at once with a plain sentence in its language, and a
    visitor from another address still generates."""
    import gradio as gr

    from explorer.serving import MAX_RUNS_PER_SESSION, Visitor, scheduler_for
    from explorer.ui.tabs import generate as tab
    from models.generate import SamplingParams

    loaded = runtime.get(MODEL)
    sched = scheduler_for(loaded.model)
    ids = loaded.tokenizer("a flood of runs")["input_ids"]
    held = [sched.submit(ids, SamplingParams(max_new_tokens=200), eos_ids=[],
                         visitor=Visitor("flood", "6.6.6.6")) for _ in range(MAX_RUNS_PER_SESSION)]
    try:
        monkeypatch.setattr(tab, "event_client", lambda: ("flood", "6.6.6.6"))
        for lang, words in (("en", "This page already has"), ("zh", "此页面已有")):
            t0 = time.perf_counter()
            with pytest.raises(gr.Error, match=words):
                list(tab.run_generate(runtime, MODEL, lang, PROBES[0], 1, 0.0, 0, 1.0, 0, "full",
                                      64, 4, False, False, []))
            assert time.perf_counter() - t0 < 5
        monkeypatch.setattr(tab, "event_client", lambda: ("calm", "7.7.7.7"))
        final = list(tab.run_generate(runtime, MODEL, *_handler_args(PROBES[0], 1)))[-1]
        assert final[1].startswith("Done")
    finally:
        for handle in held:
            handle.stop()
