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
those positions, never from slot indices."""
from __future__ import annotations

import torch

from .attention import MaskSpec


class LayerKV:
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
        self.length = 0  # slots filled so far (<= capacity)

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

    def update(self, k_new: torch.Tensor, v_new: torch.Tensor, positions: torch.Tensor, start: int):
        """Store keys/values (B, Hkv, T, D) at absolute `positions` (T,), the consecutive
        positions start, start + 1, ... (`start` as a Python int, read once per forward by the
        caller). Returns the keys, values and their absolute positions that the new queries
        attend over."""
        t = positions.shape[0]
        if self.window is None:
            if start + t > self.capacity:
                raise ValueError(f"KV cache full: {start + t} tokens > capacity {self.capacity}")
            self.k[:, :, start:start + t] = k_new
            self.v[:, :, start:start + t] = v_new
            self.slot_pos[start:start + t] = positions
            self.length = max(self.length, start + t)
            n = self.length
            return self.k[:, :, :n], self.v[:, :, :n], self.slot_pos[:n]
        if t == 1:
            self.length = min(self.length + 1, self.capacity)
            return self.write_one(k_new, v_new, positions)
        # A chunk: its early queries need keys that its own later tokens will evict, so attend
        # over (old buffer ++ chunk) and keep only the survivors afterwards. An empty buffer
        # (a prompt's prefill) adds nothing but empty slots: attend over the chunk alone.
        if self.length == 0:
            k_all, v_all, pos_all = k_new, v_new, positions
        else:
            k_all = torch.cat([self.k, k_new], dim=2)
            v_all = torch.cat([self.v, v_new], dim=2)
            pos_all = torch.cat([self.slot_pos, positions])
        last = int(positions[-1])
        keep = (positions < self.sinks) | (positions > last - self.window)
        kept_pos = positions[keep]
        slot = self.slot_of(kept_pos)
        self.k.index_copy_(2, slot, k_new[:, :, keep])
        self.v.index_copy_(2, slot, v_new[:, :, keep])
        self.slot_pos.index_copy_(0, slot, kept_pos)
        self.length = int((self.slot_pos >= 0).sum())
        return k_all, v_all, pos_all

    def write_one(self, k_new: torch.Tensor, v_new: torch.Tensor, position: torch.Tensor):
        """Store one token's keys/values (B, Hkv, 1, D) at absolute `position` (1,) and return
        the whole buffers with every slot's position: shapes that never change, so a compiled
        decode step needs no Python int and no recompilation. In a ring, the entry it overwrites
        is exactly one window behind, already invisible to this query. Does not touch `length`
        (the caller, outside any compiled graph, keeps that count)."""
        slot = self.slot_of(position)
        # index_put_ (as gpt-fast writes its cache): Inductor fuses it into the step's kernels
        # as an in-place store into the buffer (seen in the generated code)
        self.k[:, :, slot] = k_new
        self.v[:, :, slot] = v_new
        self.slot_pos[slot] = position
        return self.k, self.v, self.slot_pos

    def used_bytes(self) -> int:
        """Bytes of the cache tensors' filled slots (K and V)."""
        n = self.length
        return self.k[:, :, :n].nbytes + self.v[:, :, :n].nbytes

    def allocated_bytes(self) -> int:
        return self.k.nbytes + self.v.nbytes

    def positions(self) -> torch.Tensor:
        """Absolute positions currently held, in ascending order."""
        held = self.slot_pos[self.slot_pos >= 0]
        return held.sort().values


class KVCache:
    """All layers' caches plus `pos`, the absolute position of the next token. One forward of
    T tokens advances `pos` by T; RoPE, cache writes and mask rows all derive from it."""

    def __init__(self, layers: list[LayerKV]):
        self.layers = layers
        self.pos = 0

    @classmethod
    def for_model(cls, config, masks: list[MaskSpec], max_len: int, batch: int = 1,
                  dtype: torch.dtype = torch.float32, device=None) -> "KVCache":
        return cls([LayerKV(batch, config.n_kv_heads, config.head_dim, max_len, dtype, device, m)
                    for m in masks])

    def check_room_for_one(self) -> None:
        """Raise before a one-token step that a full (non-ring) layer has no slot left for."""
        for layer in self.layers:
            if layer.window is None and self.pos >= layer.capacity:
                raise ValueError(f"KV cache full: position {self.pos} >= capacity {layer.capacity}")

    def advance_one(self) -> None:
        """Bookkeeping after a decoder wrote one token in place (LayerKV.write_one or the fused
        kernel): the next position, and every layer's count of filled slots."""
        self.pos += 1
        for layer in self.layers:
            layer.length = min(self.pos, layer.capacity)

    def used_bytes(self) -> list[int]:
        return [layer.used_bytes() for layer in self.layers]

    def allocated_bytes(self) -> list[int]:
        return [layer.allocated_bytes() for layer in self.layers]

    def lengths(self) -> list[int]:
        return [layer.length for layer in self.layers]

    def __getitem__(self, i: int) -> LayerKV:
        return self.layers[i]
