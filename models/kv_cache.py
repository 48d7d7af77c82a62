"""Preallocated KV cache, one `LayerKV` per layer, driven by one explicit position.

Three layouts, chosen per layer from that layer's MaskSpec so the cache can never disagree with
the mask:
- full:           capacity = max_len; slot == absolute position.
- sliding window: a ring buffer of `window` slots; position p lives in slot p % window.
- sinks + window (StreamingLLM): slots [0, s) hold positions [0, s) forever; the other
  `window` slots are a ring for the most recent positions.

Position scheme (documented because StreamingLLM differs): keys are cached *after* RoPE at
their original absolute position, and each query is rotated at its own absolute position. The
score therefore sees the true distance q - k. StreamingLLM instead re-assigns positions inside
the cache (caching keys before RoPE) so distances never exceed the cache size; that matters only
past the trained context, which the explorer's experiments stay within.

Every slot carries the absolute position it holds (-1 when empty); masks are computed from
those positions, never from slot indices.

Bookkeeping has one owner: `KVCache`. `pos` (the next absolute position), each layer's
`length` (filled slots) and `slot_pos` (the position each slot holds) are written in this
module only; `pos` and `length` are read-only properties elsewhere. Keys and values come in
one way, gpt-fast's: a forward of t tokens takes `positions(t)`, calls `update(layer,
positions, k, v)` for every layer, then `advance(t)` (models.forward). Two more calls serve
whoever writes rows in place instead of handing them over (a compiled step, a C++ kernel):
`append(caches, write)`, where the caches choose each layer's slot for their next position and
record it before `write` fills the rows, and `LayerKV.move_to`, which moves a layer's contents
into other buffers (a row of a pooled store). `rewind(pos)` forgets positions from `pos` on."""
from __future__ import annotations

from typing import Callable

import torch

from .attention import MaskSpec


class LayerKV:
    """One layer's K/V buffers (B, Hkv, capacity, D) and the absolute position of every slot."""

    def __init__(self, batch: int, n_kv_heads: int, head_dim: int, max_len: int,
                 dtype: torch.dtype, device, mask: MaskSpec):
        self.mask = mask
        self.window = mask.window if mask.window is not None and mask.window + mask.sinks < max_len else None
        self.sinks = mask.sinks if self.window is not None else 0
        self.capacity = self.sinks + self.window if self.window is not None else max_len
        shape = (batch, n_kv_heads, self.capacity, head_dim)
        self.k = torch.zeros(shape, dtype=dtype, device=device)
        self.v = torch.zeros(shape, dtype=dtype, device=device)
        self.slot_pos = torch.full((self.capacity,), -1, dtype=torch.long, device=device)
        # on the CPU, the same memory as a NumPy array: one slot read or written per decode
        # token and layer costs ~0.2 us through it, ~3 us as a tensor index (x 2 x 30 layers)
        self._slot_pos_np = self.slot_pos.numpy() if self.slot_pos.device.type == "cpu" else None
        self._length = 0

    @property
    def length(self) -> int:
        """Slots filled so far: min(tokens seen, capacity), kept by KVCache."""
        return self._length

    @property
    def kind(self) -> str:
        if self.window is None:
            return "full"
        return "sinks+window" if self.sinks else "window"

    def slot_of(self, positions: torch.Tensor) -> torch.Tensor:
        if self.window is None:
            return positions
        ring = self.sinks + (positions - self.sinks) % self.window
        return torch.where(positions < self.sinks, positions, ring)

    def slot_of_int(self, position: int) -> int:
        """slot_of for one position given as a Python int."""
        if self.window is None or position < self.sinks:
            return position
        return self.sinks + (position - self.sinks) % self.window

    def _set_slot_pos(self, slot: int, position: int) -> int:
        """Record `position` in `slot`; returns the position the slot held before."""
        if self._slot_pos_np is not None:
            old = int(self._slot_pos_np[slot])
            self._slot_pos_np[slot] = position
            return old
        old = int(self.slot_pos[slot])
        self.slot_pos[slot] = position
        return old

    def _store(self, k_new: torch.Tensor, v_new: torch.Tensor, positions: torch.Tensor, start: int):
        """Store keys/values (B, Hkv, T, D) at the consecutive absolute `positions` (T,) =
        start, start + 1, ... (`start` the cache's position as a Python int). Returns the
        keys, values and their absolute positions that the new queries attend over."""
        t = positions.shape[0]
        if self.window is None:
            end = start + t
            self.k[:, :, start:end] = k_new
            self.v[:, :, start:end] = v_new
            self.slot_pos[start:end] = positions
            return self.k[:, :, :end], self.v[:, :, :end], self.slot_pos[:end]
        if t == 1:
            # the whole buffer, every slot with its position: in a ring the entry this
            # overwrites is exactly one window behind, already invisible to this query
            slot = self.slot_of(positions)
            self.k[:, :, slot] = k_new
            self.v[:, :, slot] = v_new
            self.slot_pos[slot] = positions
            return self.k, self.v, self.slot_pos
        # A chunk: its early queries need keys that its own later tokens will evict, so attend
        # over (old buffer ++ chunk) and keep only the survivors afterwards. An empty buffer
        # (a prompt's prefill) adds nothing but empty slots: attend over the chunk alone.
        if start == 0:
            k_all, v_all, pos_all = k_new, v_new, positions
        else:
            k_all = torch.cat([self.k, k_new], dim=2)
            v_all = torch.cat([self.v, v_new], dim=2)
            pos_all = torch.cat([self.slot_pos, positions])
        last = start + t - 1
        keep = (positions < self.sinks) | (positions > last - self.window)
        kept_pos = positions[keep]
        slot = self.slot_of(kept_pos)
        self.k.index_copy_(2, slot, k_new[:, :, keep])
        self.v.index_copy_(2, slot, v_new[:, :, keep])
        self.slot_pos.index_copy_(0, slot, kept_pos)
        return k_all, v_all, pos_all

    def move_to(self, k: torch.Tensor, v: torch.Tensor, slot_pos: torch.Tensor) -> None:
        """Copy this layer's keys, values and slot positions into the given buffers (of the
        same shapes: (B, Hkv, capacity, D) and (capacity,), e.g. views onto one row of a
        pooled store, engine.batched) and keep them from now on. The contents, and so
        every position, length and mask, stay as they were; only where they live changes."""
        if k.shape != self.k.shape or v.shape != self.v.shape or slot_pos.shape != self.slot_pos.shape:
            raise ValueError(f"cannot move a {tuple(self.k.shape)} layer into {tuple(k.shape)} buffers")
        k.copy_(self.k)
        v.copy_(self.v)
        slot_pos.copy_(self.slot_pos)
        self.k, self.v, self.slot_pos = k, v, slot_pos
        self._slot_pos_np = slot_pos.numpy() if slot_pos.device.type == "cpu" else None

    def used_bytes(self) -> int:
        """Bytes of the cache tensors' filled slots (K and V): k[:, :, :n].nbytes +
        v[:, :, :n].nbytes, read from the tensors' shape and element size without making the
        slices (a shared decode loop reads it for every run and layer after every step)."""
        b, h, _, d = self.k.shape
        return b * h * self.length * d * self.k.element_size() + \
            self.v.shape[0] * self.v.shape[1] * self.length * self.v.shape[3] * self.v.element_size()

    def allocated_bytes(self) -> int:
        return self.k.nbytes + self.v.nbytes

    def element_size(self) -> int:
        return self.k.element_size()

    def positions(self) -> torch.Tensor:
        """Absolute positions currently held, in ascending order."""
        held = self.slot_pos[self.slot_pos >= 0]
        return held.sort().values


class KVCache:
    """All layers' caches plus `pos`, the absolute position of the next token. One forward of
    T tokens takes positions pos .. pos + T - 1 and advances `pos` by T; RoPE, cache writes and
    mask rows all derive from it (gpt-fast's input_pos)."""

    def __init__(self, layers: list[LayerKV]):
        self.layers = layers
        self._pos = 0

    @classmethod
    def for_model(cls, config, masks: list[MaskSpec], max_len: int, batch: int = 1,
                  dtype: torch.dtype = torch.float32, device=None) -> "KVCache":
        return cls([LayerKV(batch, config.n_kv_heads, config.head_dim, max_len, dtype, device, m)
                    for m in masks])

    @property
    def pos(self) -> int:
        """The absolute position of the next token (= tokens seen so far)."""
        return self._pos

    # --- a forward of T tokens ------------------------------------------------------------

    def check_room(self, t: int) -> None:
        """Raise before a forward of t tokens that a full (non-ring) layer has no slots for."""
        for layer in self.layers:
            if layer.window is None and self._pos + t > layer.capacity:
                raise ValueError(f"KV cache full: {self._pos + t} tokens > capacity {layer.capacity}")

    def positions(self, t: int, device=None) -> torch.Tensor:
        """(T,) absolute positions of the next t tokens, pos .. pos + t - 1: the one place a
        forward's positions are made. Raises first if they do not fit."""
        self.check_room(t)
        return torch.arange(self._pos, self._pos + t, device=device)

    def update(self, layer: int, positions: torch.Tensor, k: torch.Tensor, v: torch.Tensor):
        """Write one layer's keys/values (B, Hkv, T, D) of the forward at `positions` (from
        `positions(T)`; already rotated). Returns (keys, values, absolute positions (S,)) the
        new queries attend over. `pos` moves only at `advance`, after every layer."""
        return self.layers[layer]._store(k, v, positions, self._pos)

    def advance(self, t: int) -> None:
        """After a forward of t tokens (every layer updated): the next position, and every
        layer's count of filled slots."""
        self._pos += t
        for layer in self.layers:
            layer._length = min(self._pos, layer.capacity)

    # --- one token per cache, written in place ------------------------------------------------

    @staticmethod
    def append(caches: "list[KVCache]", write: Callable[[list, list], object]):
        """One token for each cache (one cache, or a batch of runs), its K/V rows written in place
        by one call: `write(positions, slots)` gets each cache's position and its per-layer
        slots after every cache's slots record their new positions, so a mask made from
        slot_pos inside `write` sees the new keys; then every cache advances by one. If `write`
        raises, every slot position is restored and no `pos` moves. Returns what `write`
        returns."""
        for cache in caches:
            cache.check_room(1)
        positions = [cache._pos for cache in caches]
        slots = [[layer.slot_of_int(pos) for layer in cache.layers] for cache, pos in zip(caches, positions)]
        done = []   # (layer, slot, position it held before)
        try:
            for cache, pos, cache_slots in zip(caches, positions, slots):
                for layer, slot in zip(cache.layers, cache_slots):
                    done.append((layer, slot, layer._set_slot_pos(slot, pos)))
            out = write(positions, slots)
        except BaseException:
            for layer, slot, old in reversed(done):
                layer._set_slot_pos(slot, old)
            raise
        for cache in caches:
            cache.advance(1)
        return out

    # --- going back ------------------------------------------------------------------------

    def rewind(self, pos: int) -> None:
        """Forget positions pos and later, as if only `pos` tokens had been fed. A ring layer
        that already overwrote a key the next query at `pos` would see cannot go back: refused."""
        if not 0 <= pos <= self._pos:
            raise ValueError(f"can rewind to 0..{self._pos}, not {pos}")
        for layer in self.layers:
            if layer.window is not None and pos < self._pos:
                held = set(layer.slot_pos.tolist())
                needed = set(range(min(layer.sinks, pos))) | set(range(max(layer.sinks, pos - layer.window + 1), pos))
                if not needed <= held:
                    raise ValueError(f"a {layer.kind} layer no longer holds every key position {pos} "
                                     f"would see: it cannot rewind that far")
        self._pos = pos
        for layer in self.layers:
            layer.slot_pos.masked_fill_(layer.slot_pos >= pos, -1)
            # a ring that went back one step holds one slot fewer than min(pos, capacity)
            layer._length = int((layer.slot_pos >= 0).sum())

    # --- reading -----------------------------------------------------------------------------

    def used_bytes(self) -> list[int]:
        return [layer.used_bytes() for layer in self.layers]

    def allocated_bytes(self) -> list[int]:
        return [layer.allocated_bytes() for layer in self.layers]

    def lengths(self) -> list[int]:
        return [layer.length for layer in self.layers]

    def capacities(self) -> list[int]:
        return [layer.capacity for layer in self.layers]

    def __getitem__(self, i: int) -> LayerKV:
        return self.layers[i]
