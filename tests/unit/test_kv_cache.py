"""The KV cache: cached logits == full forward (C4) for full, sliding (ring wraps) and
sinks+window layouts; bytes held == the formula (C3); the sliding cache is capped (C9); the
cache alone keeps its bookkeeping (pos, lengths, slot positions)."""
import copy

import pytest
import torch

from engine.prefix import copy_prefix, holds_prefix
from models.attention import MaskSpec
from models.forward import RunOptions
from models.generate import SamplingParams, full_forward_logits, generate
from models.kv_cache import KVCache
from tests.helpers import ours_from_hf, tiny_hf


@pytest.fixture(scope="module")
def gemma():
    return ours_from_hf(tiny_hf("gemma3"))  # window 5 on 5 of 6 layers


@pytest.fixture(scope="module")
def llama():
    return ours_from_hf(tiny_hf("llama"))


def decode(model, ids, chunks, options=None):
    """Feed ids in the given chunk sizes through one cache; return logits of every position."""
    cache = model.new_cache(max_len=len(ids[0]), options=options)
    rows, start = [], 0
    with torch.no_grad():
        for n in chunks:
            rows.append(model(ids[:, start:start + n], cache=cache, options=options)[0])
            start += n
    return torch.cat(rows), cache


@pytest.mark.parametrize("chunks", [[1] * 30, [12] + [1] * 18, [7, 9, 1, 13], [30]])
@pytest.mark.parametrize("mask", [None, MaskSpec(window=6), MaskSpec(window=8, sinks=3)])
def test_cached_equals_full_forward(gemma, llama, chunks, mask):
    ids = torch.randint(0, 97, (1, 30), generator=torch.Generator().manual_seed(4))
    opts = RunOptions(mask=mask)
    for model in (gemma, llama):
        ref = full_forward_logits(model, ids[0].tolist(), opts)
        out, cache = decode(model, ids, chunks, opts)
        assert (out - ref).abs().max().item() <= 1e-4
        assert cache.pos == 30


def test_ring_buffer_holds_the_window_at_absolute_positions(gemma):
    ids = torch.randint(0, 97, (1, 23), generator=torch.Generator().manual_seed(5))
    _, cache = decode(gemma, ids, [1] * 23)
    for i, layer in enumerate(cache.layers):
        if gemma.config.layer_types[i] == "sliding_attention":
            assert layer.kind == "window" and layer.capacity == 5
            assert layer.positions().tolist() == [18, 19, 20, 21, 22]
        else:
            assert layer.kind == "full" and layer.positions().tolist() == list(range(23))


def test_streaming_cache_keeps_sinks_and_recent(llama):
    ids = torch.randint(0, 97, (1, 25), generator=torch.Generator().manual_seed(6))
    _, cache = decode(llama, ids, [10] + [1] * 15, RunOptions(mask=MaskSpec(window=6, sinks=2)))
    for layer in cache.layers:
        assert layer.kind == "sinks+window"
        assert layer.positions().tolist() == [0, 1, 19, 20, 21, 22, 23, 24]


def test_cache_bytes_equal_formula_every_step(gemma, llama):
    for model in (gemma, llama):
        c = model.config
        for step in generate(model, [1, 2, 3, 4], SamplingParams(max_new_tokens=12)):
            tokens = step.position  # tokens held in the cache after this step's forward
            per_layer = [min(tokens, c.sliding_window) if t == "sliding_attention" else tokens
                         for t in c.layer_types]
            formula = [2 * c.n_kv_heads * c.head_dim * n * 4 for n in per_layer]
            assert step.cache_bytes == formula
            assert step.cache_bytes == c.kv_bytes_per_layer(tokens, 4)
            assert sum(step.cache_bytes) == c.kv_bytes(tokens, 4)
        if "sliding_attention" not in c.layer_types:
            assert sum(step.cache_bytes) == c.kv_bytes_per_token(4) * tokens


@pytest.mark.parametrize("mask", [None, MaskSpec(window=6), MaskSpec(window=5, sinks=3)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_config_byte_methods_equal_the_cache_tensors(gemma, mask, dtype):
    """ModelConfig's byte methods (what the explorer's charts and calculators use) against the
    bytes of the real K/V tensors, at every length, for each layout and element size."""
    model = copy.deepcopy(gemma).to(dtype)
    c = model.config
    opts = RunOptions(mask=mask)
    cache = model.new_cache(24, options=opts)
    element = cache[0].element_size()
    assert element == (4 if dtype == torch.float32 else 2)
    ids = torch.randint(0, 97, (1, 24), generator=torch.Generator().manual_seed(9))
    with torch.no_grad():
        model(ids[:, :10], cache=cache, options=opts)
        for i in range(10, 24):
            measured = cache.used_bytes()
            assert measured == [layer.k[:, :, :layer.length].nbytes * 2 for layer in cache.layers]
            assert measured == c.kv_bytes_per_layer(cache.pos, element, cache.capacities())
            assert measured == [c.kv_layer_bytes(cache.pos, element, layer.capacity) for layer in cache.layers]
            assert sum(measured) == c.kv_bytes(cache.pos, element, cache.capacities())
            model(ids[:, i:i + 1], cache=cache, options=opts)
    # without a mask restriction, each layer's own capacity (its sliding window) is the default
    if mask is None:
        assert [cap if cap != 24 else None for cap in cache.capacities()] == c.kv_layer_capacities()
        assert cache.used_bytes() == c.kv_bytes_per_layer(24, element)
    # query heads do not appear; the MHA twin of the same shape holds n_heads / n_kv_heads more
    assert c.kv_bytes_per_token(element, n_kv_heads=c.n_heads) == c.kv_bytes_per_token(element) * c.n_rep
    with pytest.raises(ValueError, match="capacities given"):
        c.kv_bytes(5, element, [None])


@pytest.mark.parametrize("mask", [None, MaskSpec(window=6), MaskSpec(window=5, sinks=3)])
def test_layer_used_bytes_are_the_filled_slots_of_the_tensors(llama, mask):
    """LayerKV.used_bytes (each Step's cache_bytes, the Generate tab's C3 reading) is the K and V
    rows of the slots that hold a position, read from the tensors: two sequences, a chunk,
    single steps (a ring wraps) and a rewind that empties one slot of a ring."""
    opts = RunOptions(mask=mask)
    cache = llama.new_cache(20, batch=2, options=opts)
    ids = torch.randint(0, 97, (2, 16), generator=torch.Generator().manual_seed(11))

    def check():
        for layer in cache.layers:
            filled = layer.slot_pos >= 0
            assert layer.used_bytes() == layer.k[:, :, filled].nbytes + layer.v[:, :, filled].nbytes
            assert layer.length == int(filled.sum())

    check()
    with torch.no_grad():
        llama(ids[:, :7], cache=cache, options=opts)
        check()
        for i in range(7, 16):
            llama(ids[:, i:i + 1], cache=cache, options=opts)
            check()
    assert cache.used_bytes()[0] > 0
    cache.rewind(15)
    check()


def test_cache_full_raises(llama):
    cache = llama.new_cache(max_len=4)
    with torch.no_grad(), pytest.raises(ValueError, match="KV cache full"):
        llama(torch.zeros(1, 5, dtype=torch.long), cache=cache)


def test_per_layer_mask_restrictions(gemma):
    """A tuple of per-layer restrictions: cache layouts and logits follow each layer's own."""
    n = gemma.config.n_layers
    per_layer = tuple(MaskSpec(window=4, sinks=1) if i % 2 else None for i in range(n))
    opts = RunOptions(mask=per_layer)
    masks = gemma.layer_masks(per_layer)
    for i, m in enumerate(masks):
        native = gemma.config.layer_window(i)
        assert m == (MaskSpec(window=4, sinks=1) if i % 2 else MaskSpec(window=native))
    ids = torch.randint(0, 97, (1, 20), generator=torch.Generator().manual_seed(7))
    ref = full_forward_logits(gemma, ids[0].tolist(), opts)
    out, cache = decode(gemma, ids, [6] + [1] * 14, opts)
    assert (out - ref).abs().max().item() <= 1e-4
    assert [layer.kind for layer in cache.layers][:2] == ["window", "sinks+window"]
    with pytest.raises(ValueError, match="per-layer masks given"):
        gemma.layer_masks((None,))


@pytest.mark.parametrize("mask", [None, MaskSpec(window=6, sinks=2)])
def test_prefill_keeps_only_the_last_row_of_the_last_block(gemma, llama, mask):
    """A prefill that keeps only the last logits computes the last block's queries, output
    projection and MLP for the last position alone: same logits, same cache, fewer scores."""
    ids = torch.randint(0, 97, (1, 20), generator=torch.Generator().manual_seed(8))
    for model in (gemma, llama):
        full_opts, last_opts = RunOptions(mask=mask), RunOptions(mask=mask, last_logits_only=True)
        with torch.no_grad():
            full_cache, last_cache = model.new_cache(32, options=full_opts), model.new_cache(32, options=last_opts)
            full, full_ctx = model(ids, cache=full_cache, options=full_opts, return_context=True)
            last, last_ctx = model(ids, cache=last_cache, options=last_opts, return_context=True)
            assert last.shape[1] == 1 and (last[0, -1] - full[0, -1]).abs().max().item() <= 1e-5
            for a, b in zip(full_cache.layers, last_cache.layers):   # the cache needs every row
                assert torch.equal(a.k, b.k) and torch.equal(a.v, b.v) and torch.equal(a.slot_pos, b.slot_pos)
            # the next token continues identically from either cache
            step_full = model(ids[:, :1], cache=full_cache, options=full_opts)
            step_last = model(ids[:, :1], cache=last_cache, options=last_opts)
            assert torch.equal(step_full[0, -1], step_last[0, -1])
        # the last layer (full attention in both models) scored 1 query row of 20 keys, not
        # the causal triangle of 20 rows
        saved = full_ctx.score_entries - last_ctx.score_entries
        assert saved == model.config.n_heads * (20 * 21 // 2 - 20) if mask is None else saved > 0


def test_only_the_cache_writes_its_bookkeeping(llama):
    """pos and each layer's length are read-only outside models/kv_cache.py; a forward takes
    its positions from the cache and may not bring its own."""
    cache = llama.new_cache(8)
    with pytest.raises(AttributeError):
        cache.pos = 3
    with pytest.raises(AttributeError):
        cache[0].length = 3
    with torch.no_grad():
        llama(torch.tensor([[1, 2, 3]]), cache=cache)
        assert cache.pos == 3 and cache.lengths() == [3] * llama.config.n_layers
        with pytest.raises(ValueError, match="positions are the cache's"):
            llama(torch.tensor([[4]]), cache=cache, positions=torch.tensor([3]))
    assert cache.pos == 3


def test_append_records_the_slot_and_undoes_a_failed_write(llama):
    """The path for a token written in place by someone else (the fused kernel): the cache
    chooses each layer's slot and records its position before the write, advances after it,
    and restores the slot positions when the write fails."""
    opts = RunOptions(mask=MaskSpec(window=4, sinks=1))
    cache = llama.new_cache(16, options=opts)
    with torch.no_grad():
        llama(torch.arange(1, 8)[None], cache=cache, options=opts)    # positions 0..6
    before = [layer.slot_pos.clone() for layer in cache.layers]
    seen = []

    def write(positions, slots):
        pos, slots = positions[0], slots[0]
        seen.append((pos, slots, [int(layer.slot_pos[s]) for layer, s in zip(cache.layers, slots)]))
        raise RuntimeError("kernel failed")

    with pytest.raises(RuntimeError, match="kernel failed"):
        KVCache.append([cache], write)
    # slot of position 7 in a 1-sink + 4-slot ring: 1 + (7 - 1) % 4 = 3, recorded before the write
    assert seen == [(7, [3] * llama.config.n_layers, [7] * llama.config.n_layers)]
    assert cache.pos == 7 and all(torch.equal(a.slot_pos, b) for a, b in zip(cache.layers, before))
    assert KVCache.append([cache], lambda positions, slots: "written") == "written"
    assert cache.pos == 8 and cache.lengths() == [5] * llama.config.n_layers
    assert cache[0].positions().tolist() == [0, 4, 5, 6, 7]


@pytest.mark.parametrize("mask", [None, MaskSpec(window=6, sinks=2)])
def test_rewind_replays_the_same_logits(llama, mask):
    """rewind(p) forgets positions p and later: decoding again from p gives the logits a fresh
    cache gives; a ring that has overwritten what p would need refuses to go back that far."""
    opts = RunOptions(mask=mask)
    ids = torch.randint(0, 97, (1, 20), generator=torch.Generator().manual_seed(10))
    with torch.no_grad():
        cache = llama.new_cache(20, options=opts)
        first = [llama(ids[:, :12], cache=cache, options=opts)[0, -1]]
        first += [llama(ids[:, i:i + 1], cache=cache, options=opts)[0, -1] for i in range(12, 14)]
        if mask is None:
            cache.rewind(12)
            assert cache.pos == 12 and cache.lengths() == [12] * llama.config.n_layers
            again = [llama(ids[:, i:i + 1], cache=cache, options=opts)[0, -1] for i in range(12, 14)]
            assert all(torch.equal(a, b) for a, b in zip(again, first[1:]))
        else:
            with pytest.raises(ValueError, match="cannot rewind that far"):
                cache.rewind(10)
            cache.rewind(13)                      # one step back: the ring still holds 8..12
            assert cache.pos == 13
            again = llama(ids[:, 13:14], cache=cache, options=opts)[0, -1]
            assert torch.equal(again, first[2])
        with pytest.raises(ValueError, match="can rewind to"):
            cache.rewind(cache.pos + 1)


def test_append_records_every_caches_slots_and_undoes_a_failed_write(llama):
    """The pooled batched step's way in: several caches (their own policies and positions)
    record one token each before one write, advance together after it, and are all restored
    when it fails."""
    policies = [RunOptions(), RunOptions(mask=MaskSpec(window=4, sinks=1))]
    caches = [llama.new_cache(16, options=o) for o in policies]
    with torch.no_grad():
        for cache, opts, n in zip(caches, policies, (3, 7)):
            llama(torch.arange(1, n + 1)[None], cache=cache, options=opts)
    before = [[layer.slot_pos.clone() for layer in cache.layers] for cache in caches]
    n_layers = llama.config.n_layers

    def fail(positions, slots):
        assert positions == [3, 7] and slots == [[3] * n_layers, [3] * n_layers]
        assert [int(c[0].slot_pos[3]) for c in caches] == [3, 7]
        raise RuntimeError("write failed")

    with pytest.raises(RuntimeError, match="write failed"):
        KVCache.append(caches, fail)
    assert [c.pos for c in caches] == [3, 7]
    assert all(torch.equal(a.slot_pos, b) for c, bs in zip(caches, before) for a, b in zip(c.layers, bs))
    assert KVCache.append(caches, lambda positions, slots: "written") == "written"
    assert [c.pos for c in caches] == [4, 8] and caches[1].lengths() == [5] * n_layers
    assert caches[1][0].positions().tolist() == [0, 4, 5, 6, 7]


def test_move_to_keeps_the_contents_in_new_buffers(llama):
    """A layer moved into other buffers (a pooled store's row) holds the same keys, values and
    positions there, and the cache goes on writing into them."""
    opts = RunOptions(mask=MaskSpec(window=4))
    cache = llama.new_cache(16, options=opts)
    ids = torch.randint(0, 97, (1, 9), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        llama(ids[:, :6], cache=cache, options=opts)
        ref = copy.deepcopy(cache)
        store = torch.zeros(3, *cache[0].k.shape[1:])
        layer = cache[0]
        old = (layer.k.clone(), layer.slot_pos.clone())
        for i, lay in enumerate(cache.layers):
            row = torch.zeros(1, *lay.k.shape[1:]) if i else store[1:2]
            lay.move_to(row, torch.zeros_like(lay.v), torch.full_like(lay.slot_pos, -1))
        assert torch.equal(store[1:2], old[0]) and torch.equal(layer.slot_pos, old[1])
        with pytest.raises(ValueError, match="cannot move"):
            layer.move_to(store, store, layer.slot_pos)
        a = llama(ids[:, 6:9], cache=cache, options=opts)
        b = llama(ids[:, 6:9], cache=ref, options=opts)
    assert torch.equal(a, b) and torch.equal(store[1:2], cache[0].k)


@pytest.mark.parametrize("mask", [None, MaskSpec(window=6, sinks=2)])
def test_a_copied_prefix_gives_what_feeding_it_gives(llama, mask):
    """engine.prefix.copy_prefix: a cache started with another cache's first n positions, then
    fed the rest, holds what a cache fed every token holds and gives the same logits; a ring
    that has wrapped, a different window, a cache already fed and a prefix the source lacks are
    refused."""
    opts = RunOptions(mask=mask)
    ids = torch.randint(0, 97, (1, 16), generator=torch.Generator().manual_seed(11))
    n = 5 if mask is not None else 12      # a ring of 2 + 6 slots holds positions 0..7 in place
    with torch.no_grad():
        donor = llama.new_cache(16, options=opts)
        llama(ids[:, :n + 1], cache=donor, options=opts)        # fed more than the prefix
        fresh = llama.new_cache(16, options=opts)
        expected = llama(ids, cache=fresh, options=opts)[0, -1]
        copied = llama.new_cache(16, options=opts)
        assert holds_prefix(donor, n) and not holds_prefix(donor, n + 2)
        copy_prefix(copied, donor, n)
        assert copied.pos == n and copied.lengths() == [min(n, layer.capacity) for layer in copied.layers]
        got = llama(ids[:, n:], cache=copied, options=opts)[0, -1]
    assert (got - expected).abs().max().item() <= 1e-5
    for a, b in zip(copied.layers, fresh.layers):
        assert torch.equal(a.slot_pos, b.slot_pos)
        assert torch.allclose(a.k, b.k, atol=1e-5) and torch.allclose(a.v, b.v, atol=1e-5)
    with pytest.raises(ValueError, match="empty cache"):
        copy_prefix(copied, donor, 2)
    with pytest.raises(ValueError, match="does not hold"):
        copy_prefix(llama.new_cache(16, options=opts), donor, n + 2)
    other = RunOptions(mask=MaskSpec(window=7)) if mask is None else RunOptions()
    with pytest.raises(ValueError, match="different windows"):
        copy_prefix(llama.new_cache(16, options=other), donor, 4)
    if mask is not None:   # the ring wraps: position 2 is gone from its slot
        with torch.no_grad():
            llama(ids[:, n + 1:], cache=donor, options=opts)
        assert not holds_prefix(donor, 3)
