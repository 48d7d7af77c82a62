"""Prefix reuse: a run starts with another run's first n positions, for a prompt that begins
with the same n tokens (as vLLM's automatic prefix caching does with pages).

What makes it exact: a token's keys and values at a layer depend only on the tokens up to it
and their positions (causal attention, RoPE by absolute position), so two runs whose first n
tokens are equal compute the same rows for them (up to the rounding of the products they were
computed in). The copy goes in through the cache's one write path, KVCache.update, as if those
n tokens had been fed here.
"""
from __future__ import annotations

import torch

from models.kv_cache import KVCache


def holds_prefix(cache: KVCache, n: int) -> bool:
    """Every layer holds positions 0..n-1, each in slot p (as a cache that was fed just those n
    tokens would): true of a full layer once n tokens are in, of a ring layer until it first
    wraps."""
    if not 0 < n <= cache.pos:
        return False
    expected = torch.arange(n, device=cache.layers[0].slot_pos.device)
    return all(n <= layer.capacity and bool(torch.equal(layer.slot_pos[:n], expected))
               for layer in cache.layers)


def copy_prefix(cache: KVCache, source: KVCache, n: int) -> None:
    """Start the empty `cache` with the keys and values of positions 0..n-1 of `source`, a cache
    of the same model and the same per-layer policy that holds them (`holds_prefix`)."""
    if cache.pos != 0:
        raise ValueError("a prefix can only start an empty cache")
    if len(source.layers) != len(cache.layers) or not holds_prefix(source, n):
        raise ValueError(f"the source cache does not hold positions 0..{n - 1} in place")
    for mine, theirs in zip(cache.layers, source.layers):
        if (mine.window, mine.sinks) != (theirs.window, theirs.sinks) or n > mine.capacity:
            raise ValueError("the two caches' layers keep different windows")
        if mine.k.shape[:2] != theirs.k.shape[:2] or mine.k.shape[3] != theirs.k.shape[3]:
            raise ValueError("the two caches hold different numbers of rows or heads")
    positions = cache.positions(n, source.layers[0].slot_pos.device)
    for i, theirs in enumerate(source.layers):
        # n <= every layer's capacity: a ring keeps all n in slots 0..n-1, as a full layer does
        cache.update(i, positions, theirs.k[:, :, :n], theirs.v[:, :, :n])
    cache.advance(n)
