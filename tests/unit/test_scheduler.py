"""The shared decode loop (explorer/serving/scheduler.py): runs submitted together or one after
another are decoded in one batch, each with the tokens, logits, positions and cache bytes of
the same run alone; stop, deadline and a closed stream take a run out within a step; past its
capacity a submit is refused at once."""
from __future__ import annotations

import threading
import time

import pytest
import torch

from explorer.serving import Busy, Scheduler, ThreadChoice, Visitor, scheduler_for
from models.attention import MaskSpec
from models.forward import RunOptions
from models.generate import SamplingParams, generate

OPTIONS = [RunOptions(), RunOptions(mask=MaskSpec(window=6)), RunOptions(mask=MaskSpec(window=5, sinks=3)),
           RunOptions()]


class Digits:
    """Just what stream_generation needs from a tokenizer: decode."""

    def decode(self, ids, skip_special_tokens=False):
        return "".join(str(i % 10) for i in ids)


def prompt(n: int, seed: int) -> list:
    return torch.randint(0, 97, (n,), generator=torch.Generator().manual_seed(seed)).tolist()


def collect(sched, ids, params, options, out, key, **kw):
    out[key] = list(sched.generate(ids, params, options=options, eos_ids=[], keep_logits=True, **kw))


def assert_as_alone(model, ids, params, options, steps):
    alone = list(generate(model, ids, params, options=options, eos_ids=[], keep_logits=True))
    assert [s.token_id for s in steps] == [s.token_id for s in alone]
    assert [s.position for s in steps] == [s.position for s in alone]
    assert [s.phase for s in steps] == [s.phase for s in alone]
    assert [s.cache_bytes for s in steps] == [s.cache_bytes for s in alone]
    assert [s.cache_lengths for s in steps] == [s.cache_lengths for s in alone]
    worst = max((a.logits - b.logits).abs().max().item() for a, b in zip(steps, alone))
    assert worst <= 1e-5, worst


@pytest.mark.parametrize("kind", ["llama", "gemma3"])
def test_visitors_at_once_each_get_their_own_run(tiny, kind):
    """Four visitors (different prompt lengths, cache policies, one sampling with a seed)
    submitted together: the batch grows past one, and each run equals the same run alone."""
    model = tiny[kind]
    sched = Scheduler(model, prefill_chunk=4, prefill_tokens=8)
    params = [SamplingParams(max_new_tokens=12), SamplingParams(max_new_tokens=20),
              SamplingParams(max_new_tokens=9), SamplingParams(max_new_tokens=15, temperature=0.8, top_k=20, seed=3)]
    prompts = [prompt(n, i) for i, n in enumerate([3, 10, 6, 13])]
    out: dict = {}
    threads = [threading.Thread(target=collect, args=(sched, prompts[i], params[i], OPTIONS[i], out, i))
               for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert sorted(out) == [0, 1, 2, 3]
    assert sched.stats["max_batch"] > 1
    assert max(s.batch_size for steps in out.values() for s in steps) > 1
    for i in range(4):
        assert len(out[i]) == params[i].max_new_tokens
        assert out[i][-1].finished == "length"
        assert_as_alone(model, prompts[i], params[i], OPTIONS[i], out[i])
    assert sched.load() == 0


def test_thread_choice_measures_each_option_then_keeps_the_cheaper_and_probes():
    choice = ThreadChoice((1, 2), probe_every=4, max_gap=16)
    cost = {1: 0.10, 2: 0.06}          # seconds a step of 30 runs takes on n threads

    def steps(n_steps: int, rows: int = 30) -> list:
        picks = []
        for _ in range(n_steps):
            n = choice.pick(rows)
            picks.append(n)
            choice.record(n, rows, cost[n])
        return picks

    picks = steps(40)
    assert picks[:2] == [1, 2]                       # each option tried once
    # then the cheaper, the other as a probe after 4 steps, then 8, then 16: each confirmed
    probes = [i for i, n in enumerate(picks) if n == 1][1:]
    assert [b - a for a, b in zip(probes, probes[1:])] == [8, 16]
    # another process takes a core: two threads now stall; a probe sees it, one thread wins,
    # and probes come often again
    cost[2] = 0.25
    steps(20)
    assert choice.best(30) == 1
    picks = steps(30)
    assert picks.count(2) >= 2
    # one step held up by something outside it (the app's first chart messages of a class take
    # the GIL for a moment) does not change the choice; a lasting change does, within two steps
    cost[2] = 0.06
    steps(40)
    assert choice.best(30) == 2
    choice.record(2, 30, 1.1)
    assert choice.best(30) == 2 and steps(6).count(2) >= 5
    cost[2] = 0.25
    steps(2)
    assert choice.best(30) == 1
    # a batch of another size class is measured on its own (a step's cost is not linear in runs)
    assert choice.best(3) == 1 and steps(2, rows=3) == [1, 2]
    assert ThreadChoice.size_class(31) == ThreadChoice.size_class(16) != ThreadChoice.size_class(15)
    # a fixed count (EXPLORER_BATCH_THREADS) is never probed
    fixed = ThreadChoice((2,))
    assert {fixed.pick(30) for _ in range(40)} == {2}


def test_a_prefill_forward_takes_the_count_measured_for_as_many_rows_or_fewer():
    """A prefill chunk of G prompts x n tokens has G * n rows in its products: it takes the best
    count of the largest size class the decode steps measured up to G * n rows, torch's own
    count (the last option) before any. (It took the count of G rows' class, mostly never
    measured, so one thread: distinct prompts of a class were prefilled on one core.)"""
    choice = ThreadChoice((1, 2))
    assert choice.for_rows(200) == 2 and choice.for_rows(3) == 2
    for _ in range(3):
        choice.record(1, 30, 0.10)
        choice.record(2, 30, 0.06)
        choice.record(1, 3, 0.02)
        choice.record(2, 3, 0.03)
    assert choice.for_rows(200) == 2 == choice.for_rows(16)   # the 16-31 class: two threads
    assert choice.for_rows(10) == 1 == choice.for_rows(3)     # 4-15 unmeasured: the 2-3 class
    assert choice.for_rows(1) == 2                            # nothing measured that small
    assert ThreadChoice((2,)).for_rows(500) == 2


@pytest.mark.skipif(torch.get_num_threads() < 2, reason="one intra-op thread: nothing to choose")
def test_the_loop_uses_both_thread_counts_and_every_run_stays_as_alone(tiny):
    """Twenty steps of four runs in one class: both thread counts decode some of them (the
    untried one first, then probes), and each run still equals the same run alone."""
    model = tiny["llama"]
    sched = Scheduler(model)
    sched.threads.probe_every = 3
    params = SamplingParams(max_new_tokens=20)
    prompts = [prompt(n, 10 + i) for i, n in enumerate([4, 7, 5, 9])]
    out: dict = {}
    threads = [threading.Thread(target=collect, args=(sched, prompts[i], params, RunOptions(), out, i))
               for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert set(sched.threads.taken) == {1, torch.get_num_threads()}
    for i in range(4):
        assert_as_alone(model, prompts[i], params, RunOptions(), out[i])


def test_a_run_joining_mid_stream(tiny):
    """A second visitor arrives while the first decodes: it joins between two steps, both
    runs stay exact, and the first run's later steps were shared (batch_size 2)."""
    model = tiny["mistral"]
    sched = Scheduler(model)
    first_ids, second_ids = prompt(5, 1), prompt(8, 2)
    params = SamplingParams(max_new_tokens=40)
    first = sched.generate(first_ids, params, eos_ids=[], keep_logits=True)
    steps = [next(first) for _ in range(3)]
    out: dict = {}
    joiner = threading.Thread(target=collect, args=(sched, second_ids, SamplingParams(max_new_tokens=10),
                                                    RunOptions(), out, "b"))
    joiner.start()
    steps += list(first)
    joiner.join(timeout=60)
    assert steps[0].batch_size == 1 and max(s.batch_size for s in steps) == 2
    assert_as_alone(model, first_ids, params, RunOptions(), steps)
    assert_as_alone(model, second_ids, SamplingParams(max_new_tokens=10), RunOptions(), out["b"])


def test_stop_and_closed_stream_leave_within_a_step(tiny):
    model = tiny["llama"]
    sched = Scheduler(model)
    long = SamplingParams(max_new_tokens=240)
    handle = sched.submit(prompt(4, 0), long, eos_ids=[])
    other = sched.generate(prompt(6, 1), long, eos_ids=[])
    assert handle.next(timeout=30) is not None and next(other) is not None
    # decoded together: both consumers read, so neither run waits with AHEAD steps untaken (a
    # run whose consumer reads nothing pauses after AHEAD steps, and the other decodes alone)
    sizes = []
    for _ in range(3):
        assert handle.next(timeout=30) is not None
        sizes.append(next(other).batch_size)
    assert max(sizes) == 2
    stopped = handle._run.batch   # its engine.batched.BatchRun
    handle.stop()
    while handle.next(timeout=30) is not None:
        pass
    assert handle.end == "stop"
    # out of the loop, and its row of the pooled store given back
    assert stopped.released and stopped.row is None
    other.close()            # a consumer that went away (Gradio closes the generator)
    deadline = time.monotonic() + 10
    while sched.load() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert sched.load() == 0 and not sched.decoder.pool.members


def test_deadline_and_should_stop(tiny):
    model = tiny["llama"]
    sched = Scheduler(model)
    handle = sched.submit(prompt(4, 0), SamplingParams(max_new_tokens=240), eos_ids=[],
                          deadline=time.perf_counter() - 1)
    assert handle.next(timeout=30) is None and handle.end == "deadline"
    calls = []
    steps = list(sched.generate(prompt(4, 0), SamplingParams(max_new_tokens=240), eos_ids=[],
                                should_stop=lambda: len(calls) > 2 or calls.append(1)))
    assert len(steps) < 240


def test_past_capacity_a_quick_busy_answer(tiny):
    model = tiny["llama"]
    sched = Scheduler(model, max_batch=1, max_waiting=1)
    long = SamplingParams(max_new_tokens=240)
    handles = [sched.submit(prompt(4, i), long, eos_ids=[]) for i in range(2)]
    t0 = time.perf_counter()
    with pytest.raises(Busy) as refused:
        sched.submit(prompt(4, 9), long, eos_ids=[])
    assert time.perf_counter() - t0 < 0.5
    assert refused.value.capacity == 2 and sched.stats["refused"] == 1
    assert "busy" in str(refused.value).lower()
    for h in handles:
        h.stop()
    with pytest.raises(ValueError, match="context"):
        sched.submit(prompt(4, 0), SamplingParams(max_new_tokens=4096), eos_ids=[])


def test_the_tab_says_busy_in_the_visitors_language():
    """The loop's Busy carries no visitor text: the Generate tab answers it with the locale's
    "generate.error.busy", the capacity filled in, in the visitor's language."""
    import gradio as gr

    from explorer.locales import text
    from explorer.ui import visitor_errors
    from explorer.ui.tabs import generate as tab

    def refused():
        raise Busy(64)
        yield

    @visitor_errors
    def handler(lang):
        yield from tab._engine_errors(refused(), lang)

    for lang in ("en", "zh"):
        with pytest.raises(gr.Error) as shown:
            list(handler(lang))
        assert shown.value.message == text("generate.error.busy", lang, capacity=64)
        assert "64" in shown.value.message
    assert text("generate.error.busy", "en", capacity=64) != text("generate.error.busy", "zh", capacity=64)


def test_one_scheduler_per_model(tiny):
    from explorer.serving import registry

    try:
        assert scheduler_for(tiny["llama"]) is scheduler_for(tiny["llama"])
        assert scheduler_for(tiny["llama"]) is not scheduler_for(tiny["gemma3"])
    finally:   # the next test that asks the registry for these models' loop gets its own
        registry.forget(tiny["llama"])
        registry.forget(tiny["gemma3"])


def test_the_tab_names_a_shared_step_and_declines_checks_while_busy(tiny):
    """The Generate tab's status line says how many other visitors' tokens a step carried, the
    evidence says decoding was shared; C1 and C4 are declined while another run is in the
    loop, with the reason in the evidence."""
    from explorer.generate import figures, request as req, session as sess

    model = tiny["qwen2"]
    sched = scheduler_for(model)
    other = sched.submit(prompt(4, 5), SamplingParams(max_new_tokens=200), eos_ids=[])
    try:
        assert other.next(timeout=60) is not None
        request = req.Request(prompt="x", max_new_tokens=6)
        *_, session = sess.stream_generation(model, Digits(), [1, 2, 3], request)
    finally:
        other.stop()
    assert session.max_batch() == 2 and session.stopped == "length"
    assert session.replay_note == "busy" and session.logit_diffs is None and session.replay == []
    shared = next(r for r in session.records if r.batch_size == 2)
    session.records = session.records[:session.records.index(shared) + 1]
    assert "this step ran with 1 other visitors' tokens" in figures.status(session, "en")
    evidence = figures.summary(session, "en")
    assert "Decoding was shared: up to 1 other visitors'" in evidence
    assert "were declined" in evidence
    assert "其他 1 位访客" in figures.status(session, "zh")


@pytest.mark.parametrize("kind", ["llama", "gemma3"])
def test_a_classroom_on_one_prompt_pays_for_one_prefill(tiny, kind):
    """One session submits the same 24-token prompt five times together, a sixth prompt that
    begins the same and goes on, a seventh a different one: one run feeds the shared prompt,
    the others copy its keys and values and feed only their own rest; every run still equals
    the same run alone, and each says on its first step how many of its tokens were copied.
    (Across sessions only the public prefix is copied: tests/unit/test_privacy.py.)"""
    from explorer.serving.prefixes import SHARE_MIN

    model = tiny[kind]
    sched = Scheduler(model, prefill_chunk=8, prefill_tokens=64, max_per_session=7)
    same = prompt(24, 5)
    longer = same + prompt(6, 6)
    prompts = [same] * 5 + [longer, prompt(24, 7)]
    params = SamplingParams(max_new_tokens=6)
    out: dict = {}
    threads = [threading.Thread(target=collect, args=(sched, ids, params, RunOptions(), out, i),
                                kwargs={"visitor": Visitor(session="class")})
               for i, ids in enumerate(prompts)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert sorted(out) == list(range(7))
    for i, ids in enumerate(prompts):
        assert_as_alone(model, ids, params, RunOptions(), out[i])
    shared = [out[i][0].shared_prefix for i in range(7)]
    if kind == "gemma3":
        # its sliding layers keep 5 slots: a ring holds no 16-token prefix in place to copy
        assert min(layer.capacity for layer in model.new_cache(30).layers) < SHARE_MIN
        assert shared == [0] * 7 and sched.stats["shared_tokens"] == 0
        return
    assert sorted(shared[:5]) == [0, 23, 23, 23, 23]     # one fed it, four copied all but one token
    assert shared[5] in (23, 24) and shared[6] == 0
    assert [out[i][0].tokens_processed for i in range(7)] == [len(p) - s for p, s in zip(prompts, shared)]
    assert sched.stats["shared_tokens"] == sum(shared) and sum(shared) >= 4 * 23 + SHARE_MIN
    assert sched.stats["prefill_tokens"] == sum(map(len, prompts)) - sum(shared)


def test_prefixes_are_shared_only_under_the_same_options(tiny):
    """A run with another cache policy, or a prompt sharing fewer than SHARE_MIN tokens, feeds
    its whole prompt (all runs of one session, which may share any prefix)."""
    from explorer.serving.prefixes import SHARE_MIN

    model = tiny["llama"]
    sched = Scheduler(model, prefill_chunk=8, prefill_tokens=64)
    base = prompt(24, 8)
    short = base[:SHARE_MIN - 1] + prompt(9, 9)
    jobs = [(base, RunOptions()), (base, RunOptions(mask=MaskSpec(window=30))), (short, RunOptions())]
    out: dict = {}
    params = SamplingParams(max_new_tokens=4)
    one = Visitor(session="one")
    first = sched.generate(base, params, eos_ids=[], keep_logits=True, visitor=one)
    steps = [next(first)]          # the first run's prompt is in before the others arrive
    threads = [threading.Thread(target=collect, args=(sched, ids, params, opts, out, i),
                                kwargs={"visitor": one})
               for i, (ids, opts) in enumerate(jobs[1:])]
    for t in threads:
        t.start()
    steps += list(first)
    for t in threads:
        t.join(timeout=120)
    assert [out[i][0].shared_prefix for i in range(2)] == [0, 0]
    for i, (ids, opts) in enumerate(jobs[1:]):
        assert_as_alone(model, ids, params, opts, out[i])
    assert sched.stats["shared_tokens"] == 0


def test_prompts_of_different_lengths_share_prefill_forwards(tiny):
    """Six prompts of 10-15 tokens joining together: one forward feeds ten tokens to all six,
    the remainders share the next ones (4 forwards, not one per length); each run exact."""
    model = tiny["llama"]
    sched = Scheduler(model)
    params = SamplingParams(max_new_tokens=3)
    prompts = [prompt(n, 20 + n) for n in range(10, 16)]
    with sched._lock:   # all six are queued before the loop's first iteration
        handles = [sched.submit(ids, params, eos_ids=[], keep_logits=True) for ids in prompts]
    for ids, handle in zip(prompts, handles):
        steps = []
        while (step := handle.next(timeout=60)) is not None:
            steps.append(step)
        assert_as_alone(model, ids, params, RunOptions(), steps)
    assert sched.stats["prefill_forwards"] == 4
    assert sched.stats["prefill_tokens"] == sum(map(len, prompts))


def test_a_run_whose_steps_were_shared_keeps_no_logits_rows(tiny):
    """C4 needs every generated token's logits row (V floats); a run that shared a step with
    another visitor drops its rows at that step and declines the checks even if the other run
    left before it ended, so 32 checked runs never hold 32 runs' rows (bench/ceilings.py)."""
    from explorer.generate import request as req, session as sess

    model = tiny["llama"]
    loop = Scheduler(model)
    # long enough that it is still decoding when ours joins, however the two threads are
    # scheduled; it leaves after the first step it shares with ours, while ours goes on
    other = loop.submit(prompt(4, 6), SamplingParams(max_new_tokens=200), eos_ids=[])
    assert other.next(timeout=60) is not None     # decoding: the next run shares its steps

    def drain():   # its visitor reads on, and stops it once a step was shared with ours
        while (step := other.next(timeout=60)) is not None:
            if step.batch_size > 1:
                other.stop()

    reader = threading.Thread(target=drain)
    reader.start()
    request = req.Request(prompt="x", max_new_tokens=12, compare_no_cache=False,
                          check_full_forward=True)
    kept = []
    original = sess.logit_differences

    def record(model_, ids, n_prompt, cached_logits, options):   # what the check would get
        kept.append(len(cached_logits))
        return original(model_, ids, n_prompt, cached_logits, options)

    sess.logit_differences = record
    try:
        *_, session = sess.stream_generation(model, Digits(), [1, 2, 3], request, scheduler=loop,
                                             eos_ids=[])
    finally:
        sess.logit_differences = original
        reader.join(timeout=60)
    assert session.max_batch() == 2 and session.others_at_end == 0   # it left before ours ended
    assert session.replay_note == "busy" and session.logit_diffs is None and kept == []
    from explorer.generate import figures   # the C4 chart says it was declined, not pending
    note = figures.logit_diff_figure(session, "en").layout.annotations[0].text
    assert note == "Declined: other visitors were generating"
    *_, alone = sess.stream_generation(model, Digits(), [1, 2, 3], request, scheduler=loop, eos_ids=[])
    assert alone.max_batch() == 1 and alone.logit_diffs is not None and len(alone.logit_diffs) == 12


def test_an_idle_loop_ends_and_gives_its_packed_weights_back(tiny, monkeypatch):
    """Visitors decoding together make the batched steps' packed weights (models/layers.py);
    they outlive the runs (the next class reuses them) until the loop has been idle for
    IDLE_EXIT_S: then its thread ends and the copies are freed; the next visitor restarts it."""
    import explorer.serving.scheduler as scheduler
    import engine.batched as batched
    from engine.packing import can_pack

    if not (can_pack(torch.zeros(1)) and batched.PACKED):
        pytest.skip("no oneDNN packing here")
    monkeypatch.setattr(scheduler, "IDLE_EXIT_S", 0.3)
    sched = Scheduler(tiny["llama"])
    params = SamplingParams(max_new_tokens=6)
    # submitted together (microseconds apart): the later ones join while the first decodes
    handles = [sched.submit(prompt(5, i), params, eos_ids=[]) for i in range(3)]
    for handle in handles:
        while handle.next(timeout=30) is not None:
            pass
        assert handle.end == "length"
    assert sched.stats["max_batch"] >= 2 and sched.decoder._packed
    thread = sched._thread
    deadline = time.monotonic() + 30
    while sched.decoder._packed is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sched.decoder._packed is None
    if thread is not None:
        thread.join(5)
        assert not thread.is_alive()
    assert len(list(sched.generate(prompt(5, 9), params, eos_ids=[]))) == 6   # restarts


def test_a_second_visitor_has_the_weights_packed_before_the_first_shared_step(tiny, monkeypatch):
    """A lone visitor (the fused step) packs nothing; the second run submitted starts the
    packing on a thread of its own ("kv-pack"), so the first pooled step finds the copies made
    instead of making them while every visitor of a burst waits (the packer is joined inside
    submit here, to fix the order the app leaves to the two threads)."""
    import explorer.serving.scheduler as scheduler
    import engine.batched as batched
    from engine.packing import can_pack

    if not (can_pack(torch.zeros(1)) and batched.PACKED):
        pytest.skip("no oneDNN packing here")
    made = []
    pack_model = batched.pack_model

    def recorded(model, *args, **kwargs):
        made.append(threading.current_thread().name)
        return pack_model(model, *args, **kwargs)

    def joined(target, name, stop=None):
        thread = start_worker(target, name, stop)
        thread.join(30)
        return thread

    start_worker = scheduler.start_worker
    monkeypatch.setattr(batched, "pack_model", recorded)
    monkeypatch.setattr(scheduler, "start_worker", joined)
    sched = Scheduler(tiny["llama"])
    params = SamplingParams(max_new_tokens=5)
    assert len(list(sched.generate(prompt(5, 0), params, eos_ids=[]))) == 5
    assert made == [] and sched.decoder.unpacked
    handles = [sched.submit(prompt(5 + i, i), params, eos_ids=[]) for i in range(3)]
    assert made == ["kv-pack"] and not sched.decoder.unpacked   # before any step of theirs
    for handle in handles:
        while handle.next(timeout=30) is not None:
            pass
        assert handle.end == "length"
    assert sched.stats["max_batch"] >= 2 and made == ["kv-pack"]
