"""The class as one batch (explorer/generate/batch_view.py, batch_figures.py, the scheduler's
snapshot and step record): under a real batched run of three visitors the loop reports each
run's lengths, its pooled row and the steps it took; a visitor's view marks their own runs only
and carries no text, token ids, session or run id; the paged layout's blocks and bytes follow
ceil(len / 16) and the C3 formula."""
from __future__ import annotations

import dataclasses
import json
import math
import time

import pytest
import torch

from explorer.generate import batch_figures, batch_view
from explorer.serving import Scheduler, Visitor, registry
from explorer.serving.runs import AHEAD, LoopSnapshot, RunState, StepRecord
from models.generate import SamplingParams

SESSIONS = ("sess-alpha-7f3a9c", "sess-bravo-2b8e41", "sess-charlie-c0ffee")


def prompt(n: int, seed: int) -> list:
    return torch.randint(0, 97, (n,), generator=torch.Generator().manual_seed(seed)).tolist()


@pytest.fixture
def three_runs(tiny):
    """Three visitors' runs decoding together in a real loop (tiny Llama): each has taken a few
    steps and waits for its consumer (AHEAD), so the snapshot sees all three in the batch."""
    model = tiny["llama"]
    # solo=None: a run stepping alone stays in the pooled store (the fused step would move it out)
    sched = registry.shared(model, lambda m: Scheduler(m, prefill_chunk=4, prefill_tokens=16, solo=None))
    prompts = [prompt(n, i) for i, n in enumerate((5, 11, 18))]
    handles = [sched.submit(ids, SamplingParams(max_new_tokens=40), eos_ids=[],
                            visitor=Visitor(session=s, address="10.0.0.1"))
               for ids, s in zip(prompts, SESSIONS)]
    for handle in handles:
        for _ in range(3):
            assert handle.next(timeout=30) is not None
    deadline = time.time() + 30
    while [r.generated for r in sched.snapshot().runs] != [3 + AHEAD] * 3:
        assert time.time() < deadline   # every run decodes up to AHEAD steps ahead, then waits
        time.sleep(0.02)
    yield model, sched, prompts
    for handle in handles:
        handle.stop()
    registry.forget(model)


def test_snapshot_of_a_real_batched_run(three_runs):
    model, sched, prompts = three_runs
    snap = sched.snapshot(SESSIONS[1])
    assert [r.prompt for r in snap.runs] == [len(p) for p in prompts]
    assert [r.own for r in snap.runs] == [False, True, False]
    assert {r.state for r in snap.runs} == {"decoding"}
    assert len({r.uid for r in snap.runs}) == 3
    n_layers = model.config.n_layers
    for run in snap.runs:
        # the cache holds the prompt and every generated token but the last (fed next step)
        assert run.held == (run.prompt + run.generated - 1,) * n_layers
        assert run.pooled and run.allocated == tuple(sched.decoder.pool.widths)
        assert all(a >= h for a, h in zip(run.allocated, run.held))
        assert run.shared == 0
    # the step record: when, how many runs, how long, the context; three runs stepped together
    assert snap.steps and all(isinstance(s, StepRecord) for s in snap.steps)
    assert max(s.runs for s in snap.steps) == 3 == sched.stats["max_batch"]
    assert all(0 < s.seconds < 30 and s.context > 0 and s.at <= time.time() for s in snap.steps)
    assert len(snap.steps) == sched.stats["decode_steps"]
    assert snap.max_batch == sched.max_batch
    # prefix reuse saved this session's runs nothing (no prompt begins like another's)
    assert snap.shared_tokens == 0 == sched.stats["shared_tokens"]
    # a snapshot for nobody's session, or an unknown one, marks no run
    assert not any(r.own for r in sched.snapshot(None).runs)
    assert not any(r.own for r in sched.snapshot("sess-unknown").runs)


def test_a_run_leaving_renumbers_no_other_row(three_runs):
    """Rows are the runs' place numbers, kept while a run is in the loop: when the second of three
    runs leaves, the others stay rows 1 and 3, and the next run to join takes place 2."""
    model, sched, prompts = three_runs
    assert [r.seat for r in sched.snapshot().runs] == [1, 2, 3]
    middle = next(r for r in sched._active if r.seat == 2)
    middle.stop.set()
    deadline = time.time() + 30
    while len(sched.snapshot().runs) != 2:
        assert time.time() < deadline
        time.sleep(0.02)
    view = batch_view.build(sched.snapshot(SESSIONS[2]), model, "tiny")
    assert [row.number for row in view.rows] == [1, 3]
    labels = {t.name: list(t.y) for t in batch_figures.rows_figure(view, "en").data if t.type == "bar"}
    assert labels["held, your run"] == ["you · 3"] and labels["held (tokens)"] == ["run 1"]
    late = sched.submit(prompt(7, 9), SamplingParams(max_new_tokens=4), eos_ids=[],
                        visitor=Visitor(session="sess-delta", address="10.0.0.2"))
    try:
        seats = sorted(r.seat for r in sched.snapshot().runs)
        assert seats == [1, 2, 3]
    finally:
        late.stop()


def test_snapshot_fields_are_lengths_and_counts_only():
    names = {f.name for f in dataclasses.fields(RunState)}
    assert names == {"uid", "own", "state", "prompt", "generated", "held", "allocated", "pooled",
                     "shared", "seat"}


def test_a_visitor_receives_no_text_ids_or_other_sessions(three_runs):
    model, sched, prompts = three_runs
    for mine, session in enumerate(SESSIONS):
        snap = sched.snapshot(session)
        view = batch_view.build(snap, model, "tiny")
        sent = repr(view)
        for lang in ("en", "zh"):
            rows_fig, steps_fig = batch_figures.figures(view, lang)
            sent += rows_fig.to_json() + steps_fig.to_json() + batch_figures.summary(view, lang)
        for other in SESSIONS:
            assert other not in sent              # not even the viewer's own session
        for run in snap.runs:
            assert run.uid not in sent            # the runs' ids stay in the scheduler
        assert [row.own for row in view.rows] == [i == mine for i in range(3)]
        # the rows carry counts only: no field holds a sequence (a prompt's or output's ids)
        for row in view.rows:
            assert all(isinstance(getattr(row, f.name), (int, bool, str))
                       for f in dataclasses.fields(row))
            assert row.state in ("waiting", "prefilling", "decoding")


def test_own_row_is_highlighted_and_the_others_anonymous(three_runs):
    model, sched, _ = three_runs
    view = batch_view.build(sched.snapshot(SESSIONS[2]), model, "tiny")
    figure = batch_figures.rows_figure(view, "en")
    used = {trace.name: trace for trace in figure.data if trace.type == "bar"}
    own, others = used["held, your run"], used["held (tokens)"]
    assert list(own.y) == ["you · 3"] and own.marker.color == batch_figures.OWN
    assert sorted(others.y) == ["run 1", "run 2"] and others.marker.color == batch_figures.OTHERS
    summary = batch_figures.summary(view, "en")
    assert "Your runs: row 3 (highlighted)." in summary and "**3 decoding**" in summary
    zh = batch_figures.summary(view, "zh")
    assert "你的请求：第 3 行（高亮显示）。" in zh and "**3 个解码中**" in zh
    nobody = batch_view.build(sched.snapshot("sess-unknown"), model, "tiny")
    assert "None of these runs is yours." in batch_figures.summary(nobody, "en")
    assert not any("you" in str(t.y) for t in batch_figures.rows_figure(nobody, "en").data)


@pytest.mark.parametrize("tokens, blocks", [(0, 0), (1, 1), (15, 1), (16, 1), (17, 2), (33, 3),
                                            (512, 32), (1000, 63)])
def test_blocks_are_ceil_of_len_over_16(tokens, blocks):
    assert batch_view.blocks_for(tokens) == blocks == math.ceil(tokens / 16)


def test_row_bytes_used_allocated_and_paged(tiny):
    model = tiny["gemma3"]
    config, element = model.config, model.element_size()
    n = config.n_layers
    held = tuple([17] * n)
    run = RunState(uid="x", own=True, state="decoding", prompt=10, generated=8, held=held,
                   allocated=(64,) * n, pooled=True, shared=0)
    row = batch_view.row_view(4, run, config, element)
    full = [None] * n    # every layer keeps what it holds here: the formula of C3 per token
    assert (row.used, row.allocated, row.paged, row.blocks) == (17, 64, 32, 2 * n)
    assert row.used_bytes == config.kv_bytes(17, element, full)
    assert row.paged_bytes == config.kv_bytes(32, element, full)
    assert row.allocated_bytes == config.kv_bytes(64, element, full)
    assert row.used_bytes < row.paged_bytes < row.allocated_bytes
    # layers holding different lengths (a window ring next to a full layer): block per layer
    mixed = dataclasses.replace(run, held=(3,) + (40,) * (n - 1))
    row = batch_view.row_view(1, mixed, config, element)
    assert row.blocks == 1 + 3 * (n - 1) and row.used == 40 and row.paged == 48
    assert row.paged_bytes == config.kv_layer_bytes(16, element) + (n - 1) * config.kv_layer_bytes(48, element)


def test_totals_prediction_and_knee(tiny):
    model = tiny["llama"]
    n = model.config.n_layers
    runs = tuple(RunState(uid=str(i), own=i == 0, state=s, prompt=8, generated=g,
                          held=(h,) * n, allocated=(a,) * n, pooled=a > 0, shared=sh, seat=i + 1)
                 for i, (s, g, h, a, sh) in enumerate([("decoding", 5, 12, 32, 0),
                                                       ("prefilling", 0, 4, 32, 16),
                                                       ("waiting", 0, 0, 0, 0)]))
    steps = tuple(StepRecord(at=0.0, runs=b, seconds=0.01 * b, context=20.0) for b in (1, 2, 2, 4))
    snap = LoopSnapshot(runs=runs, steps=steps, shared_tokens=16, max_batch=8)

    class Roof:
        bandwidth, flops = 1e9, 1e10

    view = batch_view.build(snap, model, "tiny", Roof())
    assert (view.count("decoding"), view.count("prefilling"), view.count("waiting")) == (1, 1, 1)
    assert view.totals == tuple(sum(getattr(r, k) for r in view.rows)
                                for k in ("used_bytes", "allocated_bytes", "paged_bytes"))
    assert view.rows[2].used_bytes == view.rows[2].allocated_bytes == 0
    assert view.context == 20.0 and [b for b, _ in view.predicted] == list(range(1, 9))
    from explorer.generate.step_cost import crossing_batch, step_shape
    shape = step_shape(model)
    for b, seconds in view.predicted:
        bytes_read, flops = shape.cost(20, b)
        assert seconds == pytest.approx(max(bytes_read / 1e9, flops / 1e10))
    assert view.knee == pytest.approx(crossing_batch(shape, 20, 10.0))
    assert batch_view.measured_by_batch(view.steps) == {1: 0.01, 2: 0.02, 4: 0.04}
    summary = batch_figures.summary(view, "en")
    assert "Prefix reuse saved **your runs 16 prompt tokens**" in summary
    assert "为**你的请求省下了 16 个提示 token**" in batch_figures.summary(view, "zh")
    assert "B = 2: 20 ms (100 tok/s)" in summary
    steps_fig = batch_figures.steps_figure(view, "en")
    assert {t.name for t in steps_fig.data} >= {"measured steps", "median per B",
                                                "roofline's prediction (context 20)"}
    # the log axis spans B = 1 ... max_batch, and the knee's line and label sit at the knee
    # (on a log axis plotly.js takes a shape's x as the value, an annotation's as its log10)
    low, high = steps_fig.layout.xaxis.range
    assert steps_fig.layout.xaxis.type == "log" and 10 ** low <= 1 and 10 ** high >= snap.max_batch
    class SlowRoof:           # a ridge 10x lower: the knee falls within B = 1 ... 8
        bandwidth, flops = 1e9, 1e9

    kneed = batch_view.build(snap, model, "tiny", SlowRoof())
    assert 1 < kneed.knee <= snap.max_batch, kneed.knee
    drawn = batch_figures.steps_figure(kneed, "en")
    assert drawn.layout.shapes[0].x0 == drawn.layout.shapes[0].x1 == pytest.approx(kneed.knee)
    assert drawn.layout.annotations[0].x == pytest.approx(math.log10(kneed.knee))
    # no roof measured yet: no prediction, and the summary says it is coming
    blind = batch_view.build(snap, model, "tiny", None)
    assert blind.predicted == () and "being measured" in batch_figures.summary(blind, "en")


def test_the_savings_are_counted_per_session_bounded_and_forgotten(tiny):
    """Issue 40: the loop counts the prompt tokens prefix reuse saved per session, keeps at most
    `limit` sessions (the least recently counted go first), and forgets the sessions the app
    drops as idle (explorer/web/gradio_patches.py's _drop_sessions, through the registry)."""
    import threading

    from explorer.serving.runs import SAVINGS_SESSIONS, Savings
    from explorer.web import gradio_patches

    savings = Savings(limit=3)
    for session, n in (("a", 5), ("b", 7), (None, 9), ("a", 2), ("c", 0), ("c", 1), ("d", 4)):
        savings.add(session, n)
    assert (savings.of("a"), savings.of("b"), savings.of("c"), savings.of("d")) == (7, 0, 1, 4)
    assert savings.of(None) == 0 and len(savings) == 3 and SAVINGS_SESSIONS >= 1000
    savings.forget(["a", "zz"])
    assert savings.of("a") == 0 and len(savings) == 2

    model = tiny["llama"]
    sched = registry.shared(model, lambda m: Scheduler(m, solo=None))
    try:
        sched._savings.add("sess-gone", 11)
        sched._savings.add("sess-kept", 3)
        assert sched.snapshot("sess-gone").shared_tokens == 11

        class Holder:                      # Gradio's StateHolder, as _drop_sessions reads it
            lock = threading.Lock()
            session_data = {"sess-gone": 1, "sess-kept": 2}
            time_last_used = {"sess-gone": 0, "sess-kept": 0}

            def delete_state(self, session):
                pass

        gradio_patches._drop_sessions(Holder(), ["sess-gone"])
        assert sched.snapshot("sess-gone").shared_tokens == 0
        assert sched.snapshot("sess-kept").shared_tokens == 3
    finally:
        registry.forget(model)


def test_view_of_a_model_without_a_loop_makes_none(tiny):
    model = tiny["qwen2"]

    class Loaded:
        name, spec, device, dtype = "tiny", None, torch.device("cpu"), torch.float32

    Loaded.model = model
    registry.forget(model)
    view = batch_view.view(Loaded(), "sess-x")
    assert view.rows == () and view.steps == () and registry.existing(model) is None
    assert json.loads(batch_figures.rows_figure(view, "en").to_json())["layout"]["annotations"]


def test_the_timer_handler_marks_the_requests_own_session(three_runs):
    from explorer.ui.tabs import generate_batch

    model, sched, _ = three_runs

    class Runtime:
        def check_name(self, name):
            return name

        def is_loaded(self, name):
            return name == "tiny"

        def get(self, name):
            class Loaded:
                pass
            loaded = Loaded()
            loaded.name, loaded.spec, loaded.model = "tiny", None, model
            loaded.device, loaded.dtype = torch.device("cpu"), torch.float32
            return loaded

        def spec(self, name):
            return None

    class Request:
        session_hash = SESSIONS[0]

    rows, steps, summary, view = generate_batch.refresh(Runtime(), "tiny", "en", Request())
    assert [row.own for row in view.rows] == [True, False, False]
    assert "Your runs: row 1" in summary and SESSIONS[0] not in rows.to_json()
    # a model not loaded: an empty loop, nothing loaded or started
    rows, steps, summary, view = generate_batch.refresh(Runtime(), "other", "zh", Request())
    assert view.rows == () and "没有请求" in json.dumps(json.loads(rows.to_json()), ensure_ascii=False)


