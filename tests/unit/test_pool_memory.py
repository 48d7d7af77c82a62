"""Issue 27 finding 9: growing the pooled K/V store (engine.pool.KVPool) holds no two
whole stores. The store of 32 SmolLM2 runs of 1,280 tokens is 1.9 GB; growing it used to make
every layer's new store before moving anyone into it, so the old store, the joining runs' own
caches and the whole new store were all held at once (~3.8 GB with the caches of 32 runs that
join together). Measured here by the bytes of the tensor storages the pool and the runs hold,
read just before every buffer move (where the peak of a growth is): torch's CPU memory is not
seen by tracemalloc."""
from __future__ import annotations

import pytest
import torch

from engine.batched import BatchedDecoder
from models.kv_cache import LayerKV


def _storages(tensors) -> dict[int, int]:
    return {t.untyped_storage().data_ptr(): t.untyped_storage().nbytes() for t in tensors if t is not None}


def _held_bytes(pool, runs, extra=()) -> int:
    """Bytes of the distinct storages held by the pool's stores and the runs' caches (and any
    buffers about to be filled, `extra`)."""
    held = _storages([*pool.k, *pool.v, *pool.slot_pos, *extra])
    for run in runs:
        for layer in run.cache.layers:
            held.update(_storages([layer.k, layer.v, layer.slot_pos]))
    return sum(held.values())


def _layer_bytes(pool) -> int:
    return max(k.untyped_storage().nbytes() + v.untyped_storage().nbytes() + s.untyped_storage().nbytes()
               for k, v, s in zip(pool.k, pool.v, pool.slot_pos))


def _attach_measured(decoder, runs_before, joining, monkeypatch) -> tuple[int, int]:
    """Attach `joining` to the pool; (peak held bytes during the attach, bytes before it)."""
    everyone = runs_before + joining
    before = _held_bytes(decoder.pool, everyone)
    peak = [before]
    original = LayerKV.move_to

    def measured_move(layer, k, v, slot_pos):
        peak[0] = max(peak[0], _held_bytes(decoder.pool, everyone, (k, v, slot_pos)))
        return original(layer, k, v, slot_pos)

    monkeypatch.setattr(LayerKV, "move_to", measured_move)
    try:
        decoder.pool.attach(joining, decoder._moved)
    finally:
        monkeypatch.setattr(LayerKV, "move_to", original)
    return peak[0], before


def _own_bytes(runs) -> int:
    return sum(layer.k.untyped_storage().nbytes() + layer.v.untyped_storage().nbytes()
               + layer.slot_pos.untyped_storage().nbytes() for run in runs for layer in run.cache.layers)


@pytest.fixture(scope="module")
def deep_llama():
    """A tiny llama of 8 layers: one layer is an eighth of the store (SmolLM2: a thirtieth)."""
    from tests.helpers import ours_from_hf, tiny_hf

    return ours_from_hf(tiny_hf("llama", num_hidden_layers=8))


@pytest.mark.parametrize("first", [0, 8])
def test_growing_the_pool_holds_one_layer_more_than_before_or_after(deep_llama, first, monkeypatch):
    """`first` runs are in the pool; 12 more join at once with longer caches, so the store grows
    in rows (8 -> 24) and width. The peak is at most the larger of before (store + the joining
    runs' own caches) and after (the new store), plus one layer of the new store: never the
    old store, the joining caches and the new store together."""
    decoder = BatchedDecoder(deep_llama, solo=None)
    early = [decoder.start(40) for _ in range(first)]
    if early:
        decoder.pool.attach(early, decoder._moved)
    joining = [decoder.start(72) for _ in range(12)]
    old_store = decoder.pool.allocated_bytes() + sum(s.untyped_storage().nbytes() for s in decoder.pool.slot_pos)
    own = _own_bytes(joining)
    peak, before = _attach_measured(decoder, early, joining, monkeypatch)
    after = _held_bytes(decoder.pool, early + joining)
    assert before == old_store + own
    one_layer = _layer_bytes(decoder.pool)
    assert min(before, after) > one_layer   # so the bound below excludes two whole stores
    assert peak <= max(before, after) + one_layer, (peak, before, after, one_layer)
    # and every run's cache is a view of the store, its row its own
    rows = set()
    for run in early + joining:
        for l, layer in enumerate(run.cache.layers):
            assert layer.k.untyped_storage().data_ptr() == decoder.pool.k[l].untyped_storage().data_ptr()
        rows.add(run.row)
    assert len(rows) == len(early + joining)


@pytest.mark.parametrize("kind", ["llama", "gemma3"])
def test_the_contents_survive_a_growth(tiny, kind):
    """The keys a member had written are where they were after the store grew around it (gemma3:
    layers of different widths, windowed and global)."""
    model = tiny[kind]
    decoder = BatchedDecoder(model, solo=None)
    member = decoder.start(24)
    decoder.prefill(list(range(1, 11)), member)
    keys = [layer.k[:, :, :10].clone() for layer in member.cache.layers]
    decoder.pool.attach([member], decoder._moved)
    decoder.pool.attach([decoder.start(48) for _ in range(9)], decoder._moved)   # rows and width grow
    assert decoder.pool.rows == 16
    for l, layer in enumerate(member.cache.layers):
        assert torch.equal(layer.k[:, :, :10], keys[l])
        assert layer.k.untyped_storage().data_ptr() == decoder.pool.k[l].untyped_storage().data_ptr()


def test_a_class_admitted_at_once_holds_few_own_caches(tiny):
    """Eight long prompts admitted in one iteration: a run's own cache (prompt + new tokens at
    full capacity) is made only when its prefill is about to begin, so no more of them exist at
    once than the iteration's prefill budget feeds (budget 16 / chunk 4 here: 4, where
    allocating at admission held all 8); every run still equals the same run alone."""
    from explorer.serving import Scheduler
    from models.generate import SamplingParams, generate

    model = tiny["llama"]
    sched = Scheduler(model, prefill_chunk=4, prefill_tokens=16, max_per_session=8)
    params = SamplingParams(max_new_tokens=3)
    prompts = [torch.randint(0, 97, (20,), generator=torch.Generator().manual_seed(40 + i)).tolist()
               for i in range(8)]
    start, own = sched.decoder.start, []

    def counted_start(max_len, options=None):
        run = start(max_len, options)
        # runs holding a cache before they decode: started, prompt not yet all fed (a decoding
        # run holds its cache as its own buffers, read in place by the fused batched step, or
        # as a row of the pooled store: the same bytes either way)
        own.append(1 + sum(r.batch is not None and not r.tokens and not r.batch.released
                           for r in sched._active))
        return run

    sched.decoder.start = counted_start
    with sched._lock:   # all eight are queued before the loop's first iteration
        handles = [sched.submit(ids, params, eos_ids=[], keep_logits=True) for ids in prompts]
    for ids, handle in zip(prompts, handles):
        steps = []
        while (step := handle.next(timeout=60)) is not None:
            steps.append(step)
        alone = list(generate(model, ids, params, eos_ids=[], keep_logits=True))
        assert [s.token_id for s in steps] == [s.token_id for s in alone]
        assert max((a.logits - b.logits).abs().max().item() for a, b in zip(steps, alone)) <= 1e-5
    assert len(own) == 8
    assert max(own) <= 16 // 4, own
