"""Batched decoding across runs (engine.batched): every run of a batch gets the tokens
and logits of the same run decoded alone, whatever its prompt length, cache policy, or the
steps at which it joins and leaves; its cache bytes are its own and equal the formula."""
from __future__ import annotations

import gc
from dataclasses import dataclass, field
from typing import Optional

import pytest
import torch
import torch.nn.functional as F

import engine.batched as batched
import engine.pooled_step as pooled_step
from models.attention import MaskSpec
from engine.batched import BatchedDecoder
from models.forward import RunOptions
from models.generate import SamplingParams, generate

KINDS = ["llama", "mistral", "qwen2", "gemma3"]
POLICIES = {"full": RunOptions(), "window 6": RunOptions(mask=MaskSpec(window=6)),
            "sinks 3 + window 5": RunOptions(mask=MaskSpec(window=5, sinks=3)),
            "sink logit": RunOptions(sink_logit=0.7)}
TOLERANCE = 1e-5   # fp32 logits, batched vs alone


@dataclass
class Plan:
    """One run of a test batch: its prompt, options, new tokens, and the step it joins at."""
    prompt: list
    options: RunOptions
    n_new: int
    join: int = 0
    stop_after: Optional[int] = None   # leave (stopped) after this many tokens
    tokens: list = field(default_factory=list)
    logits: list = field(default_factory=list)
    bytes: list = field(default_factory=list)


def run_batch(decoder: BatchedDecoder, plans: list, chunk: int = 4, trace: Optional[list] = None):
    """Drive the decoder as a scheduler does: at global step s, runs with join == s prefill (in
    chunks of `chunk` tokens), then every decoding run takes one step together. Greedy."""
    live: list = []   # (plan, run) decoding
    step = 0
    while step == 0 or live or any(p.join >= step for p in plans):
        for plan in plans:
            if plan.join == step:
                run = decoder.start(len(plan.prompt) + plan.n_new, plan.options)
                for i in range(0, len(plan.prompt), chunk):
                    logits = decoder.prefill(plan.prompt[i:i + chunk], run)
                take(plan, run, logits[0, -1], live)
        if trace is not None:
            trace.append(len(live))
        if live:
            logits = decoder.step_many([p.tokens[-1] for p, _ in live], [r for _, r in live])
            for row, (plan, run) in enumerate(list(live)):
                live.remove((plan, run))
                if not take(plan, run, logits[row, -1], live):
                    decoder.release(run)   # as the scheduler does: its pooled row is free now
        step += 1


def take(plan: Plan, run, logits: torch.Tensor, live: list) -> bool:
    """Record the run's next token; True while it goes on decoding."""
    plan.tokens.append(int(torch.argmax(logits)))
    plan.logits.append(logits.float().clone())
    plan.bytes.append(run.cache.used_bytes())
    done = len(plan.tokens) == plan.n_new or (plan.stop_after is not None and len(plan.tokens) == plan.stop_after)
    if not done:
        live.append((plan, run))
    return not done


def assert_as_alone(model, plan: Plan, tolerance: float = TOLERANCE, rtol: Optional[float] = None):
    """rtol: the tolerance is rtol x the largest |logit| of the run alone instead."""
    n = len(plan.tokens)
    alone = list(generate(model, plan.prompt, SamplingParams(max_new_tokens=n), options=plan.options,
                          eos_ids=[], keep_logits=True))
    assert plan.tokens == [s.token_id for s in alone]
    worst = max((a - s.logits).abs().max().item() for a, s in zip(plan.logits, alone))
    if rtol is not None:
        tolerance = rtol * max(s.logits.abs().max().item() for s in alone)
    assert worst <= tolerance, (worst, tolerance)
    assert plan.bytes == [s.cache_bytes for s in alone]


def prompt(n: int, seed: int) -> list:
    return torch.randint(0, 97, (n,), generator=torch.Generator().manual_seed(seed)).tolist()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("solo", [None, "fused"])
def test_batched_equals_alone_mixed_lengths_and_policies(tiny, kind, solo):
    """Four runs of different prompt lengths, each with its own cache policy, decoded in one
    batch: each gets its own tokens, logits (<= 1e-5) and per-layer cache bytes."""
    model = tiny[kind]
    plans = [Plan(prompt(n, seed), POLICIES[name], n_new=14)
             for seed, (n, name) in enumerate([(3, "full"), (9, "window 6"), (5, "sinks 3 + window 5"),
                                               (12, "sink logit")])]
    trace = []
    run_batch(BatchedDecoder(model, solo=solo), plans, trace=trace)
    assert max(trace) == 4
    for plan in plans:
        assert_as_alone(model, plan)


@pytest.mark.parametrize("kind", ["llama", "gemma3"])
def test_runs_join_and_leave_mid_batch(tiny, kind):
    """Runs joining at later steps, one stopped early, the batch shrinking to one run (the fused
    step) and growing again: every run still decodes as it would alone."""
    model = tiny[kind]
    plans = [Plan(prompt(7, 1), POLICIES["full"], n_new=20),
             Plan(prompt(4, 2), POLICIES["window 6"], n_new=6, join=3),
             Plan(prompt(11, 3), POLICIES["sinks 3 + window 5"], n_new=30, join=5, stop_after=9),
             Plan(prompt(6, 4), POLICIES["full"], n_new=8, join=16)]
    trace = []
    run_batch(BatchedDecoder(model), plans, trace=trace)
    # the batch held 1, 2, 3 runs, shrank back to one, then grew again when the last joined
    assert trace[:4] == [1, 1, 1, 2] and max(trace) == 3
    assert trace[15] == 1 and trace[16] == 2
    assert [len(p.tokens) for p in plans] == [20, 6, 9, 8]
    for plan in plans:
        assert_as_alone(model, plan)


def test_a_stopped_run_frees_its_rows(tiny):
    """A run that leaves is no longer in the next step's batch: the batch is one row smaller,
    and the other runs' caches never held its keys."""
    model = tiny["llama"]
    decoder = BatchedDecoder(model, solo=None)
    runs = [decoder.start(32, RunOptions()) for _ in range(3)]
    for i, run in enumerate(runs):
        decoder.prefill(prompt(5 + i, i), run)
    logits = decoder.step_many([1, 2, 3], runs)
    assert logits.shape[:2] == (3, 1)
    kept = [runs[0], runs[2]]
    before = runs[1].cache.pos
    logits = decoder.step_many([4, 5], kept)
    assert logits.shape[:2] == (2, 1)
    assert runs[1].cache.pos == before and [r.cache.pos for r in kept] == [7, 9]
    for run in kept:   # one batch row each: no cache holds another run's tokens
        assert run.cache[0].k.shape[0] == 1 and run.cache.lengths()[0] == run.cache.pos


def pooled_calls(monkeypatch) -> list:
    """Spy on attention: one entry (rows attended, columns) per SDPA call and per call of the
    compiled pooled kernel."""
    calls = []
    sdpa = pooled_step.F.scaled_dot_product_attention
    kernel_call = batched.PooledAttentionKernel.__call__

    def spy(q, k, v, **kw):
        calls.append((k.shape[0], k.shape[2]))
        return sdpa(q, k, v, **kw)

    def kernel_spy(self, q, k_store, v_store, visible, width, scale):
        calls.append((q.shape[0], width))
        return kernel_call(self, q, k_store, v_store, visible, width, scale)
    monkeypatch.setattr(pooled_step.F, "scaled_dot_product_attention", spy)
    monkeypatch.setattr(batched.PooledAttentionKernel, "__call__", kernel_spy)
    return calls


def in_pool(decoder: BatchedDecoder, run) -> bool:
    """Whether every layer of the run's cache is a view onto the decoder's pooled store."""
    pool = decoder.pool
    return run.row is not None and all(
        layer.k.untyped_storage().data_ptr() == pool.k[i].untyped_storage().data_ptr()
        for i, layer in enumerate(run.cache.layers))


@pytest.mark.parametrize("kind", ["llama", "gemma3"])
@pytest.mark.parametrize("kernel", [True, False], ids=["kernel", "sdpa"])
def test_pooled_step_is_one_attention_call_per_layer(tiny, kind, kernel, monkeypatch):
    """Three runs with three cache policies decode in one pooled store: each step makes one
    attention call per layer over all their rows (the compiled kernel's, or SDPA's), and every
    run's logits equal those of the same batch with attention per run (and of the run alone,
    test above)."""
    if kernel:
        assert batched.PooledAttentionKernel.get() is not None, "the kernel builds here (g++)"
    model = tiny[kind]
    options = [POLICIES["full"], POLICIES["window 6"], POLICIES["sinks 3 + window 5"]]
    results = {}
    for pooled in (True, False):
        decoder = BatchedDecoder(model, solo=None, pooled=pooled, kernel=kernel)
        runs = [decoder.start(40, o) for o in options]
        for i, run in enumerate(runs):
            decoder.prefill(prompt(4 + 3 * i, i), run)
        calls = pooled_calls(monkeypatch)
        out = [decoder.step_many([5 + s, 6 + s, 7 + s], runs) for s in range(12)]
        monkeypatch.undo()
        results[pooled] = torch.cat(out)
        if pooled:
            assert all(in_pool(decoder, run) for run in runs)
            assert len(calls) == 12 * model.config.n_layers and {rows for rows, _ in calls} == {3}
        else:
            assert len(calls) == 3 * 12 * model.config.n_layers and {rows for rows, _ in calls} == {1}
            assert all(run.row is None for run in runs)
    assert (results[True] - results[False]).abs().max().item() <= TOLERANCE


def reference_attention(q, k_store, v_store, visible, width, scale):
    """SDPA over the same rows, columns and mask (what the pooled call did before the kernel)."""
    n = q.shape[0]
    return F.scaled_dot_product_attention(q, k_store[:n, :, :width], v_store[:n, :, :width],
                                          attn_mask=visible[:, None, None], scale=scale)


@pytest.mark.parametrize("n, n_kv, rep, d, width", [(30, 3, 3, 64, 70), (5, 1, 8, 256, 17),
                                                     (4, 4, 1, 32, 1), (9, 2, 4, 80, 129)])
def test_the_pooled_kernel_equals_sdpa(n, n_kv, rep, d, width):
    """The compiled pooled attention against SDPA with the same boolean mask: fp32 within
    1e-6, over a store with more rows and columns than the call reads (their values must not
    leak in: they are NaN here), for grouped heads, one head per KV head, Gemma's head size."""
    kernel = batched.PooledAttentionKernel.get()
    assert kernel is not None, "the kernel builds here (g++)"
    gen = torch.Generator().manual_seed(n * width)
    q = torch.randn(n, n_kv, rep, d, generator=gen)
    k_store = torch.full((n + 3, n_kv, width + 5, d), float("nan"))
    v_store = torch.full_like(k_store, float("nan"))
    k_store[:n, :, :width] = torch.randn(n, n_kv, width, d, generator=gen)
    v_store[:n, :, :width] = torch.randn(n, n_kv, width, d, generator=gen)
    visible = torch.rand(n, width, generator=gen) > 0.4
    visible[torch.arange(n), torch.randint(0, width, (n,), generator=gen)] = True   # one each at least
    scale = d ** -0.5
    expected = reference_attention(q, k_store, v_store, visible, width, scale)
    hidden = ~visible[:, None, :, None].expand(n, n_kv, width, d)
    k_store[:n, :, :width][hidden] = float("nan")   # masked slots are never read
    v_store[:n, :, :width][hidden] = float("nan")
    assert torch.isnan(v_store[:n, :, :width]).sum() == hidden.sum()
    out = kernel(q, k_store, v_store, visible, width, scale)
    assert out.shape == q.shape and torch.isfinite(out).all()
    assert (out - expected).abs().max() <= 1e-6


def test_the_pooled_kernel_checks_its_shapes_and_gives_zeros_for_a_row_that_sees_nothing():
    kernel = batched.PooledAttentionKernel.get()
    q, store = torch.randn(2, 1, 2, 8), torch.randn(2, 1, 6, 8)
    visible = torch.zeros(2, 6, dtype=torch.bool)
    visible[0, :3] = True
    out = kernel(q, store, store, visible, 6, 0.5)
    assert (out[1] == 0).all()
    assert (out[0] - reference_attention(q[:1], store, store, visible[:1], 6, 0.5)).abs().max() <= 1e-6
    for bad in [dict(width=7), dict(visible=visible[:, :5]), dict(q=torch.randn(3, 1, 2, 8)),
                dict(q=torch.randn(2, 2, 2, 8)), dict(v_store=torch.randn(2, 1, 5, 8))]:
        args = dict(q=q, k_store=store, v_store=store, visible=visible, width=6, scale=0.5) | bad
        with pytest.raises(ValueError, match="do not fit together"):
            kernel(**args)


def test_without_the_kernel_the_pooled_call_is_sdpa(tiny, monkeypatch, caplog):
    """No compiler (or EXPLORER_POOLED_KERNEL=0): the pooled steps' attention is SDPA's, said
    once in the log (the step itself is tested on both paths above)."""
    from engine import native

    monkeypatch.setattr(batched.PooledAttentionKernel, "_tried", False)
    monkeypatch.setattr(batched.PooledAttentionKernel, "_loaded", None)
    monkeypatch.setattr(native, "compiler", lambda: None)
    with caplog.at_level("WARNING", logger=pooled_step.__name__):
        assert batched.PooledAttentionKernel.get() is None
        assert batched.PooledAttentionKernel.get() is None
    assert sum("runs through SDPA" in r.getMessage() and "needs a C++ compiler" in r.getMessage()
               for r in caplog.records) == 1
    decoder = BatchedDecoder(tiny["llama"], solo=None)
    runs = [decoder.start(20) for _ in range(2)]
    for i, run in enumerate(runs):
        decoder.prefill(prompt(3 + i, i), run)
    calls = pooled_calls(monkeypatch)
    decoder.step_many([5, 6], runs)
    assert calls and {rows for rows, _ in calls} == {2}


def test_a_row_is_reused_after_its_run_leaves(tiny):
    """A long run leaves; a short one joins and takes its row without the store growing. The
    row's old keys (positions the newcomer's queries would otherwise see) are never visible:
    the newcomer decodes exactly as alone."""
    model = tiny["llama"]
    decoder = BatchedDecoder(model, solo=None)
    plans = [Plan(prompt(5, 1), POLICIES["full"], n_new=16),
             Plan(prompt(14, 2), POLICIES["full"], n_new=10),
             Plan(prompt(3, 3), POLICIES["full"], n_new=12, join=12)]
    seen = {}

    def spy_start(max_len, options=None, _start=decoder.start):
        run = _start(max_len, options)
        seen[len(seen)] = run
        return run
    decoder.start = spy_start
    trace = []
    run_batch(decoder, plans, trace=trace)
    long, newcomer = seen[1], seen[2]
    assert long.released and newcomer.row is None   # both left; the last one freed the store
    for plan in plans:
        assert_as_alone(model, plan)
    # replay the join by hand to see the rows: the newcomer gets the row the long run left
    decoder = BatchedDecoder(model, solo=None)
    runs = [decoder.start(60) for _ in range(3)]
    for i, run in enumerate(runs):
        decoder.prefill(prompt(20 - 5 * i, i), run)
    decoder.step_many([1, 2, 3], runs)
    rows, width = decoder.pool.rows, list(decoder.pool.widths)
    middle = runs[1].row
    decoder.release(runs[1])
    assert middle not in decoder.pool.members
    with pytest.raises(ValueError, match="released"):
        decoder.step_many([1, 2], [runs[0], runs[1]])
    new = decoder.start(12)
    decoder.prefill(prompt(3, 9), new)
    logits = decoder.step_many([4, 5, 6], [runs[0], new, runs[2]])
    assert new.row == middle and decoder.pool.rows == rows and decoder.pool.widths == width
    alone = decoder.start(12)
    decoder.prefill(prompt(3, 9), alone)
    ref = decoder.step_many([5], [alone])
    assert (logits[1, -1] - ref[0, -1]).abs().max().item() <= TOLERANCE


def test_a_dropped_run_frees_its_row(tiny):
    """A run nobody holds any more (no release called) gives its row back when it is
    collected; the last one gives the whole store back."""
    model = tiny["llama"]
    decoder = BatchedDecoder(model, solo=None)
    runs = [decoder.start(16) for _ in range(2)]
    for i in range(2):
        decoder.prefill(prompt(4, i), runs[i])
    decoder.step_many([1, 2], runs)
    assert len(decoder.pool.members) == 2 and decoder.pool.allocated_bytes() > 0
    del runs[0]
    gc.collect()
    assert len(decoder.pool.members) == 1
    runs.clear()
    gc.collect()
    assert not decoder.pool.members and decoder.pool.allocated_bytes() == 0


@pytest.mark.parametrize("kind", ["llama", "gemma3"])
def test_a_ring_wraps_inside_the_pool_next_to_a_full_cache(tiny, kind):
    """A window-4 run wraps its ring buffer several times inside its pooled row, between a
    full-cache run and a sinks + window run, and the store grows (rows and widths) when a
    longer run joins mid-way: every run decodes as alone, and the ring run's cache stays a
    view of 4 slots (its own policy) onto the store."""
    model = tiny[kind]
    decoder = BatchedDecoder(model, solo=None)
    plans = [Plan(prompt(6, 1), POLICIES["full"], n_new=24),
             Plan(prompt(5, 2), RunOptions(mask=MaskSpec(window=4)), n_new=24),
             Plan(prompt(9, 3), POLICIES["sinks 3 + window 5"], n_new=20, join=2),
             Plan(prompt(30, 4), POLICIES["full"], n_new=10, join=6)]
    rings = []
    start = decoder.start

    def spy_start(max_len, options=None):
        run = start(max_len, options)
        if options is plans[1].options:
            rings.append(run)
        return run
    decoder.start = spy_start
    widths = []
    original = decoder.step_many

    def spy_step(tokens, runs):
        out = original(tokens, runs)
        widths.append(list(decoder.pool.widths))
        if rings and not rings[0].released and rings[0].pos > 12:
            assert in_pool(decoder, rings[0])
            assert rings[0].cache[0].capacity == 4 and rings[0].cache[0].k.shape[2] == 4
        return out
    decoder.step_many = spy_step
    run_batch(decoder, plans, chunk=4)
    assert max(w[0] for w in widths if w) > min(w[0] for w in widths if w)   # it grew mid-way
    for plan in plans:
        assert_as_alone(model, plan)


def test_each_run_needs_its_own_cache(tiny):
    model = tiny["llama"]
    decoder = BatchedDecoder(model, solo=None)
    run = decoder.start(16)
    decoder.prefill([1, 2, 3], run)
    with pytest.raises(ValueError, match="own cache"):
        decoder.step_many([1, 2], [run, run])
    with pytest.raises(ValueError, match="tokens for"):
        decoder.step_many([1], [])


@pytest.mark.parametrize("kind", KINDS)
def test_per_run_cache_bytes_equal_the_formula(tiny, kind):
    """Each run's bytes, read from its own cache tensors, equal ModelConfig.kv_bytes_per_layer
    for its own tokens and its own layers' capacities."""
    model = tiny[kind]
    decoder = BatchedDecoder(model, solo=None)
    runs = [decoder.start(40, POLICIES[name]) for name in ("full", "window 6", "sinks 3 + window 5")]
    for i, run in enumerate(runs):
        decoder.prefill(prompt(4 + 3 * i, i), run)
    for _ in range(9):
        decoder.step_many([7] * len(runs), runs)
        for run in runs:
            element = run.cache[0].element_size()
            expected = model.config.kv_bytes_per_layer(run.pos, element, run.cache.capacities())
            assert run.cache.used_bytes() == expected


def test_equal_length_prefill_chunks_batch_together(tiny):
    """Prompts fed as one (B, T) forward (forward_many) fill each run's cache as its own
    prefill would: the same next-token logits and the same decode afterwards."""
    model = tiny["gemma3"]
    decoder = BatchedDecoder(model, solo=None)
    prompts = [prompt(8, s) for s in range(3)]
    options = [POLICIES["full"], POLICIES["window 6"], POLICIES["sinks 3 + window 5"]]
    runs = [decoder.start(20, o) for o in options]
    ids = torch.tensor(prompts)                                                  # (3, 8)
    together = decoder.forward_many(ids, runs)
    for row, (p, o, run) in enumerate(zip(prompts, options, runs)):
        alone = decoder.start(20, o)
        ref = decoder.prefill(p, alone)
        assert (together[row, -1] - ref[0, -1]).abs().max().item() <= TOLERANCE
        assert run.cache.used_bytes() == alone.cache.used_bytes()
        assert run.cache.lengths() == alone.cache.lengths()
