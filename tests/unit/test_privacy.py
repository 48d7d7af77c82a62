"""The shared decode loop, tried as a hostile visitor would (issue 27, findings 3 and 4):
prefix reuse tells a visitor nothing of another's prompt or output, and one client cannot take
the loop from the others (runs are capped per session and per client address)."""
from __future__ import annotations

import time

import pytest


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
