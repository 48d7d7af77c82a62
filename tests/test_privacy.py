"""The shared decode loop, tried as a hostile visitor would (issue 27, findings 3 and 4):
prefix reuse tells a visitor nothing of another's prompt or output, and one client cannot take
the loop from the others (runs are capped per session and per client address)."""
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


# ----- prefix reuse in the loop itself (tiny model) -------------------------------------------
def _tokens(n: int, seed: int) -> list:
    import torch

    return torch.randint(3, 97, (n,), generator=torch.Generator().manual_seed(seed)).tolist()


TEMPLATE = _tokens(20, 1)            # what every prompt begins with by construction
SECRET_IDS = TEMPLATE + _tokens(12, 2)


def _copied(sched, ids, visitor, public=len(TEMPLATE)) -> tuple[int, bool]:
    """(tokens the run copied from the loop, whether from a run of its own session)"""
    from models.generate import SamplingParams

    steps = list(sched.generate(ids, SamplingParams(max_new_tokens=2), eos_ids=[], visitor=visitor,
                                public_prefix=public))
    return steps[0].shared_prefix, steps[0].shared_own


@pytest.fixture(scope="module")
def tiny_llama():
    from tests.helpers import ours_from_hf, tiny_hf

    return ours_from_hf(tiny_hf("llama"))


def test_across_sessions_only_the_public_prefix_is_copied(tiny_llama):
    """While A's run (session "a") holds its prompt and output in the loop, every probe of
    another session copies the template's 20 tokens, however much more of A's prompt (or the
    whole of it, and A's first output token) it repeats; a run of A's own session copies all
    it shares; a run whose prompt has no public prefix copies nothing."""
    from explorer.serving import Scheduler, Visitor
    from models.generate import SamplingParams

    sched = Scheduler(tiny_llama, prefill_chunk=8)
    a = sched.generate(SECRET_IDS, SamplingParams(max_new_tokens=200), eos_ids=[],
                       visitor=Visitor("a", "10.0.0.1"), public_prefix=len(TEMPLATE))
    first = next(a)   # A's prompt is in the cache, and its first output token
    try:
        probes = [TEMPLATE + _tokens(12, 3), SECRET_IDS[:24] + _tokens(8, 4),
                  SECRET_IDS[:31] + _tokens(1, 5), SECRET_IDS + [first.token_id] + _tokens(2, 6)]
        b = Visitor("b", "10.0.0.1")
        assert [_copied(sched, ids, b) for ids in probes] == [(20, False)] * 4
        assert _copied(sched, probes[2], Visitor(None, "10.0.0.1")) == (20, False)   # unknown session
        assert _copied(sched, probes[2], b, public=0) == (0, False)
        assert _copied(sched, probes[2], Visitor("a", "10.0.0.1")) == (31, True)      # A's own
    finally:
        a.close()


def test_a_probe_queued_with_the_secret_waits_and_copies_the_same(tiny_llama):
    """A and B submitted together, before the loop's first iteration: whether B's prompt
    repeats A's beyond the template or not, B waits for the template's keys alone and copies
    those (a longer wait for A's text would show in B's time to first token)."""
    from explorer.serving import Scheduler, Visitor
    from models.generate import SamplingParams

    copied = []
    for probe in (TEMPLATE + _tokens(12, 7), SECRET_IDS[:30] + _tokens(2, 8)):
        sched = Scheduler(tiny_llama, prefill_chunk=4, prefill_tokens=8)
        params = SamplingParams(max_new_tokens=2)
        with sched._lock:   # both queued before the loop's first iteration
            a = sched.submit(SECRET_IDS, params, eos_ids=[], visitor=Visitor("a"),
                             public_prefix=len(TEMPLATE))
            b = sched.submit(probe, params, eos_ids=[], visitor=Visitor("b"),
                             public_prefix=len(TEMPLATE))
        steps = [b.next(timeout=60)]
        assert a.next(timeout=60) is not None
        copied.append((steps[0].shared_prefix, steps[0].tokens_processed))
        a.stop()
        b.stop()
    assert copied == [(20, 12), (20, 12)]


def _settled(sched, generated: list, timeout: float = 60.0) -> None:
    """Wait until the loop's runs have generated `generated` tokens each (in seat order): each
    decodes AHEAD steps past what its consumer took, then waits."""
    deadline = time.time() + timeout
    while sorted((r.seat, r.generated) for r in sched.snapshot().runs) != list(enumerate(generated, 1)):
        assert time.time() < deadline, sched.snapshot().runs
        time.sleep(0.02)


def _shown(view) -> tuple:
    """Everything the batch view shows a visitor, the steps' wall times left out (those follow
    the machine's load): its fields, both figures and the summary in both languages."""
    import dataclasses

    from explorer.generate import batch_figures

    steady = dataclasses.replace(view, steps=tuple((runs, 0.01) for runs, _ in view.steps))
    drawn = [batch_figures.rows_figure(steady, lang).to_json() + batch_figures.summary(steady, lang)
             for lang in ("en", "zh")]
    return (steady, *drawn)


def test_the_batch_view_tells_a_visitor_nothing_of_anothers_prompt(tiny_llama):
    """Issue 40: visitor V watches the class as one batch while visitor O's prompt begins like
    the app's kept prompt by 0 or by 13 tokens (the same length either way). Everything V's view
    shows (its rows, counts, the prefix reuse saved, both figures' rows and the summary in both
    languages) is the same in both cases; the tokens saved it shows are V's own run's (9 copied
    from the kept prompt). Before the fix the count was the loop's total: 9 + 0 against 9 + 13."""
    from explorer.generate import batch_view
    from explorer.serving import Scheduler, Visitor
    from explorer.serving.runs import AHEAD
    from models.generate import SamplingParams

    kept = TEMPLATE + _tokens(14, 11)
    shown, copied = [], []
    for matched in (0, 13):
        other = kept[:matched] + _tokens(24 - matched, 50 + matched)
        assert other[matched] != kept[matched] and len(other) == 24
        sched = Scheduler(tiny_llama, prefill_chunk=8, solo=None)
        sched.keep_prompts([kept])
        deadline = time.time() + 60
        while sched.kept_pending():      # the app's prompt is in before any visitor's run
            assert time.time() < deadline
            time.sleep(0.02)
        params = SamplingParams(max_new_tokens=100)
        mine = sched.submit(kept[:9] + _tokens(15, 49), params, eos_ids=[],
                            visitor=Visitor("sess-v", "10.0.0.1"))
        theirs = None
        try:
            assert mine.next(timeout=60).shared_prefix == 9
            _settled(sched, [1 + AHEAD])
            theirs = sched.submit(other, params, eos_ids=[], visitor=Visitor("sess-o", "10.0.0.2"))
            copied.append(theirs.next(timeout=60).shared_prefix)
            _settled(sched, [1 + AHEAD, 1 + AHEAD])
            view = batch_view.build(sched.snapshot("sess-v"), tiny_llama, "tiny")
            shown.append(_shown(view))
            assert view.shared_tokens == 9
            assert [row.own for row in view.rows] == [True, False]
            assert batch_view.build(sched.snapshot("sess-o"), tiny_llama, "tiny").shared_tokens == matched
            assert batch_view.build(sched.snapshot(None), tiny_llama, "tiny").shared_tokens == 0
        finally:
            for handle in (mine, theirs):
                if handle is not None:
                    handle.stop()
    assert copied == [0, 13]          # O's run did copy what its prompt shares with the app's
    assert shown[0] == shown[1]


# ----- fairness: one client cannot take the loop ----------------------------------------------
def test_one_client_is_refused_past_its_cap_while_another_is_admitted(tiny_llama):
    """One address floods the loop with runs from fresh sessions: past its cap each submit is
    refused at once with TooManyRuns (scope "address"), while a second client's run is still
    admitted and decodes; one session past its own cap is refused likewise; a stopped run
    gives its place back, and runs of no known visitor are not capped."""
    from explorer.serving import Scheduler, TooManyRuns, Visitor
    from models.generate import SamplingParams

    sched = Scheduler(tiny_llama, max_batch=6, max_waiting=10, max_per_session=2,
                      max_per_address=4)
    long = SamplingParams(max_new_tokens=200)
    handles = [sched.submit(_tokens(6, i), long, eos_ids=[], visitor=Visitor(f"s{i}", "6.6.6.6"))
               for i in range(4)]
    try:
        for i in range(4, 10):
            t0 = time.perf_counter()
            with pytest.raises(TooManyRuns) as refused:
                sched.submit(_tokens(6, i), long, eos_ids=[], visitor=Visitor(f"s{i}", "6.6.6.6"))
            assert refused.value.scope == "address" and refused.value.limit == 4
            assert time.perf_counter() - t0 < 0.5
        other = sched.submit(_tokens(6, 20), SamplingParams(max_new_tokens=3), eos_ids=[],
                             visitor=Visitor("t0", "7.7.7.7"))
        handles.append(other)
        assert other.next(timeout=60) is not None                 # admitted, and decoding
        handles.append(sched.submit(_tokens(6, 21), long, eos_ids=[], visitor=Visitor("t", "8.8.8.8")))
        handles.append(sched.submit(_tokens(6, 22), long, eos_ids=[], visitor=Visitor("t", "9.9.9.9")))
        with pytest.raises(TooManyRuns) as refused:
            sched.submit(_tokens(6, 23), long, eos_ids=[], visitor=Visitor("t", "10.10.10.10"))
        assert refused.value.scope == "session" and refused.value.limit == 2
        handles[0].stop()                                         # a place of 6.6.6.6 is free again
        handles.append(sched.submit(_tokens(6, 24), long, eos_ids=[], visitor=Visitor("s9", "6.6.6.6")))
        handles += [sched.submit(_tokens(6, 30 + i), long, eos_ids=[]) for i in range(3)]
        assert sched.stats["refused_visitor"] == 7
    finally:
        for handle in handles:
            handle.stop()


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


# ----- the client's address ---------------------------------------------------------------------
@pytest.mark.parametrize("trust, forwarded, expected", [
    ("", ["1.2.3.4"], "10.0.0.9"),                      # not trusted: the header is the client's word
    ("0", ["1.2.3.4"], "10.0.0.9"),
    ("yes", ["1.2.3.4"], "10.0.0.9"),                   # not a number of proxies: not trusted
    ("1", ["1.2.3.4"], "1.2.3.4"),
    ("1", ["6.6.6.6, 1.2.3.4"], "1.2.3.4"),             # what the client wrote before it is ignored
    ("1", ["6.6.6.6", "1.2.3.4"], "1.2.3.4"),           # the header sent twice
    ("2", ["6.6.6.6, 1.2.3.4, 172.16.0.2"], "1.2.3.4"),
    ("2", ["1.2.3.4"], "10.0.0.9"),                     # not through both proxies
    ("1", [], "10.0.0.9"),
])
def test_the_forwarded_address_counts_only_when_the_operator_trusts_the_proxy(trust, forwarded, expected):
    from explorer.web.admission import client_address

    assert client_address("10.0.0.9", forwarded, trust) == expected


def test_the_event_client_is_read_from_gradios_request(monkeypatch):
    """event_client reads Gradio's per-event request (its session hash, the connection's peer
    and the X-Forwarded-For headers): fails if Gradio moves them."""
    import fastapi
    from gradio.context import LocalContext
    from gradio.route_utils import Request

    from explorer.web.gradio_context import event_client

    scope = {"type": "http", "method": "POST", "path": "/", "client": ("10.0.0.9", 5000),
             "headers": [(b"x-forwarded-for", b"6.6.6.6, 1.2.3.4")], "query_string": b""}
    token = LocalContext.request.set(Request(fastapi.Request(scope), session_hash="abc"))
    try:
        monkeypatch.delenv("EXPLORER_TRUST_PROXY", raising=False)
        assert event_client() == ("abc", "10.0.0.9")
        monkeypatch.setenv("EXPLORER_TRUST_PROXY", "1")
        assert event_client() == ("abc", "1.2.3.4")
    finally:
        LocalContext.request.reset(token)
    assert event_client() == (None, None)
