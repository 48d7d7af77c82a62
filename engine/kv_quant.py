"""A KV cache whose keys and values are stored in fewer bytes: bf16, or int8 with one fp32
scale per token and head (issue 30's KV-cache precision).

Why. At long contexts a decode step reads the whole cache as well as the weights (claim C3:
2 x layers x kv heads x head_dim x bytes per element, per token), so its element size is the
other half of the bytes a token costs. The stored tensors are the real ones: `used_bytes()`
reads their shapes and element sizes (and the int8 scales), as for the fp32 cache.

- bf16: the upper half of each fp32 (relative rounding <= 2^-9).
- int8: per (batch, head, token) a scale = max|x| / 127 over the head_dim values and
  q = round(x / scale) (absmax quantization, as KIVI and llama.cpp's q8 cache do per group),
  so a value's rounding is <= scale / 2.

`QuantLayerKV` keeps LayerKV's layouts (full, sliding window, sinks + window) and its
bookkeeping (`slot_pos`, `length`, KVCache's `pos`); only storage differs: what a forward
attends over is decoded to fp32 from the codes, new keys included (a query never sees a key
more exactly than the cache holds it). Used by the eager engine's forward (measurements of
what the precision costs in logits, explorer/generate/precision.py); the fused, static and
pooled steps keep fp32 caches (they refuse another element type or shape).
"""
from __future__ import annotations

from typing import Optional

import torch

from models.attention import MaskSpec
from models.kv_cache import KVCache, LayerKV

KV_FORMATS = ("fp32", "bf16", "int8")


def check_format(kv_format) -> str:
    if kv_format not in KV_FORMATS:
        raise ValueError(f"KV format must be one of {', '.join(KV_FORMATS)}, not {kv_format!r}")
    return kv_format


class QuantLayerKV(LayerKV):
    """One layer's K/V in bf16 codes, or int8 codes with a scale per (batch, head, slot)."""

    def __init__(self, batch: int, n_kv_heads: int, head_dim: int, max_len: int, device,
                 mask: MaskSpec, kv_format: str):
        if check_format(kv_format) == "fp32":
            raise ValueError("an fp32 cache is LayerKV itself")
        code = torch.bfloat16 if kv_format == "bf16" else torch.int8
        super().__init__(batch, n_kv_heads, head_dim, max_len, code, device, mask)
        self.kv_format = kv_format
        if kv_format == "int8":
            scale_shape = (batch, n_kv_heads, self.capacity, 1)
            self.k_scale = torch.zeros(scale_shape, dtype=torch.float32, device=device)
            self.v_scale = torch.zeros(scale_shape, dtype=torch.float32, device=device)
        else:
            self.k_scale = self.v_scale = None

    # ----- codes --------------------------------------------------------------------------
    def _encode(self, x: torch.Tensor) -> tuple[torch.Tensor, Optional[torch.Tensor]]:
        """x (B, Hkv, T, D) fp32 -> (codes, scales (B, Hkv, T, 1) or None)."""
        if self.kv_format == "bf16":
            return x.to(torch.bfloat16), None
        scale = x.abs().amax(-1, keepdim=True) / 127.0                        # (B, Hkv, T, 1)
        inverse = torch.where(scale > 0, 1.0 / scale, torch.zeros_like(scale))
        return torch.round(x * inverse).clamp_(-127, 127).to(torch.int8), scale

    @staticmethod
    def _decode(codes: torch.Tensor, scale: Optional[torch.Tensor]) -> torch.Tensor:
        values = codes.to(torch.float32)
        return values if scale is None else values * scale

    def _put(self, slots, k_codes, k_scale, v_codes, v_scale) -> None:
        """Write codes (and scales) at `slots`: a slice of the slot axis or an index tensor."""
        self.k[:, :, slots] = k_codes
        self.v[:, :, slots] = v_codes
        if self.k_scale is not None:
            self.k_scale[:, :, slots] = k_scale
            self.v_scale[:, :, slots] = v_scale

    def _held(self, end: Optional[int] = None) -> tuple[torch.Tensor, torch.Tensor]:
        """The first `end` slots (all when None) decoded to fp32: (keys, values)."""
        cut = slice(None, end)
        ks = self.k_scale[:, :, cut] if self.k_scale is not None else None
        vs = self.v_scale[:, :, cut] if self.v_scale is not None else None
        return self._decode(self.k[:, :, cut], ks), self._decode(self.v[:, :, cut], vs)

    # ----- LayerKV's storage, in codes ------------------------------------------------------
    def _store(self, k_new: torch.Tensor, v_new: torch.Tensor, positions: torch.Tensor, start: int):
        t = positions.shape[0]
        (kc, ks), (vc, vs) = self._encode(k_new.float()), self._encode(v_new.float())
        if self.window is None:
            end = start + t
            self._put(slice(start, end), kc, ks, vc, vs)
            self.slot_pos[start:end] = positions
            return (*self._held(end), self.slot_pos[:end])
        if t == 1:
            slot = self.slot_of(positions)
            self._put(slot, kc, ks, vc, vs)
            self.slot_pos[slot] = positions
            return (*self._held(), self.slot_pos)
        # a chunk in a ring: attend over (old buffer ++ chunk as the cache will hold it), keep
        # the survivors (LayerKV._store says why)
        k_chunk, v_chunk = self._decode(kc, ks), self._decode(vc, vs)
        if start == 0:
            k_all, v_all, pos_all = k_chunk, v_chunk, positions
        else:
            k_old, v_old = self._held()
            k_all, v_all = torch.cat([k_old, k_chunk], dim=2), torch.cat([v_old, v_chunk], dim=2)
            pos_all = torch.cat([self.slot_pos, positions])
        last = start + t - 1
        keep = (positions < self.sinks) | (positions > last - self.window)
        slot = self.slot_of(positions[keep])
        self._put(slot, kc[:, :, keep], ks[:, :, keep] if ks is not None else None,
                  vc[:, :, keep], vs[:, :, keep] if vs is not None else None)
        self.slot_pos.index_copy_(0, slot, positions[keep])
        return k_all, v_all, pos_all

    def move_to(self, k, v, slot_pos) -> None:
        raise ValueError(f"a {self.kv_format} cache cannot move into fp32 pooled buffers")

    def used_bytes(self) -> int:
        scales = 0
        if self.k_scale is not None:
            b, h, _, _ = self.k_scale.shape
            scales = 2 * b * h * self.length * self.k_scale.element_size()
        return super().used_bytes() + scales

    def allocated_bytes(self) -> int:
        scales = self.k_scale.nbytes + self.v_scale.nbytes if self.k_scale is not None else 0
        return super().allocated_bytes() + scales


def quant_cache(config, masks: list[MaskSpec], max_len: int, kv_format: str, batch: int = 1,
                device=None) -> KVCache:
    """A KVCache of `config`'s shape whose layers store `kv_format` (fp32: LayerKV itself)."""
    if check_format(kv_format) == "fp32":
        return KVCache.for_model(config, masks, max_len, batch, torch.float32, device)
    return KVCache([QuantLayerKV(batch, config.n_kv_heads, config.head_dim, max_len, device, m, kv_format)
                    for m in masks])
