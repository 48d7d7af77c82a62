"""One decode token of each of many runs, attention in ONE call per layer over the pooled store.

A decode step of B runs whose caches live in a `KVPool` (engine.pool) attends, per
layer, in one call over the store's rows in use: queries (rows, H_kv, H / H_kv, D) (the query
heads that share a KV head side by side) against the store's first S columns, S the longest
filled extent of any run this step, with a boolean mask (rows, 1, 1, S) made from every row's
own slot positions and its own layer's MaskSpec (window, sinks; models.attention.
visible_per_row), so empty and padding slots and the other runs' keys are never visible. The
new keys of all runs are written by one indexed store per layer, at the slots their caches
chose (KVCache.append). A row whose run is not in this step (still prefilling, or paused)
takes part with a zero query and is dropped from the output.

That call is the compiled kernel engine/kernels/pooled_attention.cpp on the CPU in fp32 (one
parallel loop over (row, KV head) pairs, where SDPA pays fixed costs per call and per head at
these tiny shapes), else torch's SDPA with the same mask. Steps the pooled call cannot take (a
sink logit, another attention implementation, a logit softcap, a non-causal mask) go per run
(engine.batched).
"""
from __future__ import annotations

import ctypes
import logging
import os
import threading
from pathlib import Path
from typing import Callable, Optional, Sequence

import torch
import torch.nn.functional as F

from . import native
from models.attention import MaskSpec, visible_per_row
from models.forward import rope_kind
from models.layers import rotate, signed_sin
from .pool import BatchRun, KVPool

# The pooled attention call: engine/kernels/pooled_attention.cpp where it can run (the CPU,
# fp32, a C++ compiler), else torch's SDPA with the same boolean mask. At SmolLM2's shapes
# (30 runs, 3 KV heads of 3 query heads each, D = 64) the kernel, one parallel loop over
# (row, KV head) pairs bound by reading the keys and values, makes a 30-run step 6-11% faster
# on one thread or beside other work, and changes nothing on a quiet machine with two threads
# (docs/BENCHMARKS.md). EXPLORER_POOLED_KERNEL=0: always SDPA.
POOLED_KERNEL = os.environ.get("EXPLORER_POOLED_KERNEL", "1") != "0"
KERNEL_SOURCE = Path(__file__).resolve().with_name("kernels") / "pooled_attention.cpp"
log = logging.getLogger(__name__)


class PooledAttentionKernel:
    """The compiled pooled attention: out[r, g, j] = softmax over the columns c that mask[r, c]
    lets row r see of scale * q[r, g, j] . k[r, g, c], times v[r, g, c], in fp32, the same
    sums as SDPA in another order (tests: within 1e-6 of it). Loaded once per process
    (engine.native builds it once per machine); `get()` is None where it cannot be."""
    _lock = threading.Lock()
    _loaded: Optional["PooledAttentionKernel"] = None
    _tried = False

    def __init__(self, lib):
        self._fn = lib.pooled_decode_attention
        self._fn.argtypes = [ctypes.c_void_p] * 5 + [ctypes.c_int64] * 6 + [ctypes.c_float, ctypes.c_int]
        self._fn.restype = ctypes.c_int

    @classmethod
    def get(cls) -> Optional["PooledAttentionKernel"]:
        with cls._lock:
            if not cls._tried:
                cls._tried = True
                if POOLED_KERNEL:
                    try:
                        cls._loaded = cls(native.load(KERNEL_SOURCE, "pooled attention"))
                    except (RuntimeError, OSError) as err:   # no compiler, refused, not loadable
                        log.warning("pooled attention runs through SDPA: %s", err)
            return cls._loaded

    @staticmethod
    def takes(q: torch.Tensor, store: torch.Tensor) -> bool:
        """The kernel runs fp32 on the CPU over a store laid out as KVPool makes it."""
        return (q.device.type == "cpu" and q.dtype == torch.float32 and store.dtype == torch.float32
                and store.is_contiguous())

    def __call__(self, q: torch.Tensor, k_store: torch.Tensor, v_store: torch.Tensor,
                 visible: torch.Tensor, width: int, scale: float) -> torch.Tensor:
        """q (n, H_kv, rep, D); k_store, v_store one layer's whole store (rows >= n, H_kv, W, D),
        of which columns [0, width) are read; visible (n, width) bool. Returns (n, H_kv, rep, D)."""
        n, n_kv, rep, d = q.shape
        rows, store_kv, store_width, store_d = k_store.shape
        if (rows < n or store_kv != n_kv or store_d != d or not 0 < width <= store_width
                or v_store.shape != k_store.shape or tuple(visible.shape) != (n, width)):
            raise ValueError(f"pooled attention: q {tuple(q.shape)}, store {tuple(k_store.shape)}, "
                             f"mask {tuple(visible.shape)}, width {width} do not fit together")
        q, visible = q.contiguous(), visible.contiguous()
        out = torch.empty_like(q)
        status = self._fn(q.data_ptr(), k_store.data_ptr(), v_store.data_ptr(), visible.data_ptr(),
                          out.data_ptr(), n, n_kv, rep, d, width, store_width, float(scale),
                          torch.get_num_threads())
        if status != 0:
            raise RuntimeError(f"the pooled attention kernel refused its arguments ({status})")
        return out


class NotPooled(Exception):
    """The step's attention needs something the pooled call does not do (a sink logit)."""


class PooledStep:
    """One decode token of each of B pooled runs: ForwardContext.pooled for their forward.
    Built once per step; called once per layer by models.forward.attention_core."""

    def __init__(self, model, pool: KVPool, runs: Sequence[BatchRun], positions: list, slots: list,
                 inv_freq: Callable, kernel: bool = True):
        """inv_freq(options, kind): the RoPE frequencies of a run's options for a layer kind
        (BatchedDecoder.inv_freq, which keeps them); kernel: use the compiled call where it runs."""
        self.config, self.pool = model.config, pool
        self.runs = runs
        device = self.pool.device
        self.n = self.pool.span
        rows = [run.row for run in runs]
        self._row_list = rows
        self.rows = torch.tensor(rows, device=device)                                   # (B,)
        self.in_order = rows == list(range(self.n))
        self.q_pos = torch.tensor(positions, device=device)                              # (B,)
        self.slots = torch.tensor(slots, device=device).T.contiguous()                   # (L, B)
        self._rope: dict = {}
        self._masks: dict = {}
        self._positions = positions
        self._inv_freq = inv_freq
        self.kernel = PooledAttentionKernel.get() if kernel else None

    def rope(self, kind: str):
        """(cos, signed sin) (B, 1, 1, D): each row at its own position with its own bases,
        computed as models.layers.rope_cos_sin does for one run (the same products)."""
        if kind not in self._rope:
            inv = torch.stack([self._inv_freq(run.options, kind) for run in self.runs])  # (B, D/2)
            freqs = self.q_pos.to(inv.dtype)[:, None] * inv.to(self.q_pos.device)            # (B, D/2)
            emb = torch.cat((freqs, freqs), dim=-1)                                         # (B, D)
            dtype = self.pool.dtype
            cos, sin = emb.cos().to(dtype), emb.sin().to(dtype)
            self._rope[kind] = (cos[:, None, None], signed_sin(sin)[:, None, None])        # (B,1,1,D)
        return self._rope[kind]

    def visible(self, layer: int, width: int) -> torch.Tensor:
        """(n, 1, 1, width) bool: row r's query sees the key in column c. Each run's own
        MaskSpec of this layer over its row's slot positions (models.attention.visible_per_row:
        the engine's predicates, one row per run). Layers whose runs all have the same mask
        hold the same positions in the same slots: one mask for all of them."""
        masks = tuple(run.layer_masks[layer] for run in self.runs)
        key = (masks, width)
        if key not in self._masks:
            device = self.pool.device
            kv = self.pool.slot_pos[layer][:self.n, :width]                                 # (n, S)
            # rows of runs not in this step: a query at -1 sees no filled slot (set below)
            q = torch.full((self.n,), -1, dtype=torch.long, device=device)
            q[self.rows] = self.q_pos
            row_masks = [MaskSpec()] * self.n
            for row, mask in zip(self._row_list, masks):
                row_masks[row] = mask
            vis = visible_per_row(row_masks, q, kv)                                        # (n, S)
            if not self.in_order:   # rows of runs not in this step: see every column (unread)
                idle = torch.ones(self.n, dtype=torch.bool, device=device)
                idle[self.rows] = False
                vis |= idle[:, None]
            self._masks[key] = vis[:, None, None]                                          # (n,1,1,S)
        return self._masks[key]

    def __call__(self, layer: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                 sink_logit=None) -> torch.Tensor:
        """q (B, H, 1, D), k/v (B, H_kv, 1, D) before RoPE -> rotate each row at its run's
        position -> write every row's key and value into its run's slot -> one attention call
        over the store's rows in use. Returns (B, H, 1, D)."""
        if sink_logit is not None:
            raise NotPooled
        pool = self.pool
        cos, sin_signed = self.rope(rope_kind(self.config, layer))
        q, k = rotate(q, cos, sin_signed), rotate(k, cos, sin_signed)
        cols = self.slots[layer]                                                          # (B,)
        pool.k[layer][self.rows, :, cols] = k[:, :, 0]                                    # (B, Hkv, D)
        pool.v[layer][self.rows, :, cols] = v[:, :, 0]
        width = max(min(p + 1, run.cache.layers[layer].capacity)
                    for p, run in zip(self._positions, self.runs))
        b, h, _, d = q.shape
        hkv = pool.n_kv
        if not self.in_order:   # every row in use takes part; rows of runs not in this step idle
            full = q.new_zeros(self.n, h, 1, d)
            full[self.rows] = q
            q = full
        # the query heads of one KV head side by side: (n, H_kv, H / H_kv, D), head h = g * rep + r
        q = q.reshape(self.n, hkv, h // hkv, d)
        visible = self.visible(layer, width)                                              # (n,1,1,S)
        kernel = self.kernel
        if kernel is not None and kernel.takes(q, pool.k[layer]):
            out = kernel(q, pool.k[layer], pool.v[layer], visible.view(self.n, width), width,
                         self.config.attn_scale)                                          # (n, Hkv, rep, D)
        else:
            out = F.scaled_dot_product_attention(
                q, pool.k[layer][:self.n, :, :width], pool.v[layer][:self.n, :, :width],
                attn_mask=visible, scale=self.config.attn_scale)                          # (n, Hkv, rep, D)
        out = out.reshape(self.n, h, 1, d)
        return out if self.in_order else out[self.rows]                                    # (B, H, 1, D)
