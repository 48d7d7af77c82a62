"""Decoding many independent runs at once: one forward feeds every run its next token.

Why it exists. A decode step of one sequence reads every weight once to produce one token
(claim C2: decode is memory-bound). B runs decoding side by side can share that read: their
next tokens form one (B, 1, d) batch, so every linear layer and MLP runs once per step for all
of them, and the step costs little more than a single run's. This is iteration-level batching
(Orca; vLLM and TGI call it continuous batching): runs join and leave between any two steps.

Attention in one call per layer: the pooled store. Each run keeps its own KVCache (its own
policy: full, window ring buffer, sinks + window; its own `pos`, lengths and slot positions,
written by models.kv_cache only), but when it decodes together with others its buffers live in
a row of a `KVPool`: per layer one (rows, H_kv, width, D) K and V store and a (rows, width)
table of slot positions, each run's LayerKV a view onto its row (`LayerKV.move_to`). A decode
step of B runs then attends, per layer, in ONE call over the rows in use (as gpt-fast's batched
cache and vLLM's paged cache do, here with one row per run instead of pages): queries
(rows, H_kv, H / H_kv, D) (the query heads that share a KV head side by side) against the
store's first S columns, S the longest filled extent of any run this step, with a boolean mask
(rows, 1, 1, S) made from every row's own slot positions and its own layer's MaskSpec (window,
sinks), so empty and padding slots and the other runs' keys are never visible. That call is
the compiled kernel models/kernels/pooled_attention.cpp on the CPU in fp32 (one parallel loop
over (row, KV head) pairs, where SDPA pays fixed costs per call and per head at these tiny
shapes), else torch's SDPA with the same mask. The new keys of
all runs are written by one indexed store per layer, at the slots their caches chose
(KVCache.append_many). A row whose run is not in this step (still prefilling, or paused) takes
part with a zero query and is dropped from the output.
Runs leave by `release` (or when their BatchRun is garbage-collected): their row is free at
once for the next run that joins. Prefill chunks keep the per-run path (ForwardContext.runs:
models.forward.attention_core hands row i to run i's own context) on the same buffers. Steps the
pool cannot take (a sink logit, another attention implementation, a logit softcap, a
non-causal mask) take that per-run path too.

Packed weights. While runs decode together, every product of their steps (and of the prefill
chunks of runs joining them) takes a copy of its weight packed once into oneDNN's blocked
layout (models/layers.py Linear, pack_model): at 4-32 rows such a product takes 0.6-0.7 of the
time of MKL's F.linear on this CPU, in fp32 (the same sums in another order). The copies are
made by `pack` (the shared loop calls it on a thread of its own as soon as a second run
arrives, so that a burst of visitors does not wait for them at its first pooled step), else at
the first pooled step, and kept until `drop_packed` (the shared loop drops them once it has been
idle for a minute); on any other thread (another tab, a recording) the model's products stay
F.linear.

What stays each run's own (so its telemetry and tokens are those of the same run alone):
- its KVCache, its positions (RoPE at its own absolute position), its mask and its options;
- its cache bytes, read from its own cache (the view onto its row);
- `scores`: the query-key scores its own attention computes alone (H x each layer's keys).
Everything else in the families' blocks is row-wise and runs on the whole batch.

Families are not copied here: the blocks of models/llama.py, models/gemma3.py, ... run as they
are, with a ForwardContext whose `runs` (and `pooled`) is set. Tests (tests/test_batched.py):
logits of every run within 1e-5 of the same run decoded alone (fp32), greedy tokens identical,
for mixed prompt lengths and cache policies, runs joining and leaving between steps, a row
reused after its run left, a ring buffer wrapping inside the pool next to a full cache.

A run alone in the batch can take the fused C++ decode step (models.decoders.fused, CPU fp32,
batch 1), the fastest path of this engine for one sequence: it needs contiguous buffers of its
own, so such a run first leaves the pool (its cache copied out, once).

    decoder = BatchedDecoder(model)
    a = decoder.start(max_len, RunOptions())                  # a BatchRun: cache + options
    b = decoder.start(max_len, RunOptions(mask=MaskSpec(window=64)))
    decoder.prefill(prompt_a, a); decoder.prefill(prompt_b, b)  # (1, 1, V) each, or chunked
    logits = decoder.step_many([tok_a, tok_b], [a, b])        # (2, 1, V); each cache advanced
    a.scores                                                  # query-key scores of a's last call
    decoder.release(a)                                        # a's row is free for the next run
"""
from __future__ import annotations

import ctypes
import logging
import os
import threading
import weakref
from pathlib import Path
from dataclasses import dataclass, field
from typing import Optional, Sequence

import torch
import torch.nn.functional as F

from .. import native
from ..forward import CausalLM, ForwardContext, RunOptions, rope_inv_freq_of, rope_kind
from ..kv_cache import KVCache
from ..layers import Linear, can_pack, pack_weight, packed_products, rotate, signed_sin
from . import decode_options, eager_forward

ROW_BLOCK = 8      # the pooled store grows by whole blocks of rows
# Pooled steps take prepacked weights (models/layers.py Linear): a copy of every linear layer's
# weight in oneDNN's layout (SmolLM2: 540 MB), made at the first pooled step and kept until
# drop_packed (the shared loop calls it when it has been idle for a while, explorer/generate/
# scheduler.py), so a class pressing Start again does not pay the packing (0.3 s) again. A model
# whose LM head is larger than this packs nothing: its head is most of its step, so the rest
# alone gains little for the memory (Gemma 3 270M, a 671 MB head of 262,144 x 640: its blocks
# packed made a 30-run step 429 -> 382 ms for 382 MiB, and took the memory ceiling of
# docs/HARDENING.md to 4,057 of its 4,096 MB). EXPLORER_PACKED=0: no packing.
PACKED = os.environ.get("EXPLORER_PACKED", "1") != "0"
HEAD_PACK_MAX_BYTES = 256 * 2 ** 20
_FAR = 2 ** 62     # the window of a layer without one, as a number every distance is below
# The pooled attention call: models/kernels/pooled_attention.cpp where it can run (the CPU,
# fp32, a C++ compiler), else torch's SDPA with the same boolean mask. At SmolLM2's shapes
# (30 runs, 3 KV heads of 3 query heads each, D = 64) the kernel, one parallel loop over
# (row, KV head) pairs bound by reading the keys and values, makes a 30-run step 6-11% faster
# on one thread or beside other work, and changes nothing on a quiet machine with two threads
# (docs/BENCHMARKS.md run 15).
# EXPLORER_POOLED_KERNEL=0: always SDPA.
POOLED_KERNEL = os.environ.get("EXPLORER_POOLED_KERNEL", "1") != "0"
KERNEL_SOURCE = Path(__file__).resolve().parents[1] / "kernels" / "pooled_attention.cpp"
log = logging.getLogger(__name__)


class PooledAttentionKernel:
    """The compiled pooled attention: out[r, g, j] = softmax over the columns c that mask[r, c]
    lets row r see of scale * q[r, g, j] . k[r, g, c], times v[r, g, c], in fp32, the same
    sums as SDPA in another order (tests: within 1e-6 of it). Loaded once per process
    (models.native builds it once per machine); `get()` is None where it cannot be."""
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


@dataclass(eq=False)
class BatchRun:
    """One run inside a batch: its cache and the options it decodes with."""
    cache: KVCache
    options: RunOptions
    layer_masks: list = field(repr=False)   # model.layer_masks(options.mask), made once
    scores: int = 0                         # query-key scores the run's last forward computed
    row: Optional[int] = field(default=None, repr=False)   # its KVPool row while pooled
    released: bool = field(default=False, repr=False)      # left: its row may hold another run
    _finalizer: object = field(default=None, repr=False)

    @property
    def pos(self) -> int:
        return self.cache.pos


class KVPool:
    """Every pooled run's K/V buffers in one store per layer (see the module doc): k[l], v[l]
    (rows, H_kv, width[l], D) and slot_pos[l] (rows, width[l]), -1 where no key is. Run r's
    layer l is the view k[l][r.row : r.row + 1, :, :capacity] (and likewise v, slot_pos).
    Grows by whole rows and widths, moving every member's view; freed when the last run leaves."""

    def __init__(self, model: CausalLM):
        config, param = model.config, model.embed.weight
        self.n_layers, self.n_kv, self.head_dim = config.n_layers, config.n_kv_heads, config.head_dim
        self.dtype, self.device = param.dtype, param.device
        self._lock = threading.RLock()   # a run's finalizer may free its row from any thread
        self._reset()

    def _reset(self) -> None:
        self.rows = 0
        self.widths = [0] * self.n_layers
        self.k: list = []
        self.v: list = []
        self.slot_pos: list = []
        self.members: dict = {}   # row -> weakref to its BatchRun

    @property
    def span(self) -> int:
        """Rows from 0 to the last one in use: what one pooled attention call covers."""
        return max(self.members) + 1 if self.members else 0

    def allocated_bytes(self) -> int:
        return sum(t.nbytes for t in self.k + self.v)

    def attach(self, runs: Sequence[BatchRun], on_move) -> None:
        """Give every run of `runs` without a row one (the lowest free ones), its cache moved
        into it. on_move(cache) is called for every cache whose buffers moved."""
        with self._lock:
            new = [run for run in runs if run.row is None]
            if not new:
                return
            free = [r for r in range(self.rows) if r not in self.members]
            rows = max(self.rows, len(self.members) + len(new))
            widths = [max([w] + [run.cache.layers[l].capacity for run in new])
                      for l, w in enumerate(self.widths)]
            if rows > self.rows or widths != self.widths:
                self._grow(rows, widths, on_move)
                free = [r for r in range(self.rows) if r not in self.members]
            for run, row in zip(new, free):
                for l, layer in enumerate(run.cache.layers):
                    self.slot_pos[l][row].fill_(-1)   # columns past this run's capacity: empty
                    cap = layer.capacity
                    layer.move_to(self.k[l][row:row + 1, :, :cap], self.v[l][row:row + 1, :, :cap],
                                  self.slot_pos[l][row, :cap])
                run.row = row
                self.members[row] = weakref.ref(run)
                run._finalizer = weakref.finalize(run, self._free, row, weakref.ref(self))
                on_move(run.cache)

    def _grow(self, rows: int, widths: list, on_move) -> None:
        """New stores of at least `rows` rows and these widths; every member moves into them."""
        rows = -(-rows // ROW_BLOCK) * ROW_BLOCK   # whole blocks: fewer than ROW_BLOCK rows spare
        kw = {"dtype": self.dtype, "device": self.device}
        # zeros, not empty: SDPA (the path where the kernel cannot run) still multiplies a masked
        # column's value by its zero weight, and NaN * 0 is NaN
        k = [torch.zeros(rows, self.n_kv, w, self.head_dim, **kw) for w in widths]
        v = [torch.zeros(rows, self.n_kv, w, self.head_dim, **kw) for w in widths]
        slot_pos = [torch.full((rows, w), -1, dtype=torch.long, device=self.device) for w in widths]
        for row, ref in self.members.items():
            run = ref()
            if run is None:
                continue
            for l, layer in enumerate(run.cache.layers):
                cap = layer.capacity
                layer.move_to(k[l][row:row + 1, :, :cap], v[l][row:row + 1, :, :cap], slot_pos[l][row, :cap])
            on_move(run.cache)
        self.rows, self.widths, self.k, self.v, self.slot_pos = rows, list(widths), k, v, slot_pos

    @staticmethod
    def _free(row: int, pool_ref) -> None:
        pool = pool_ref()
        if pool is not None:
            pool.free(row)

    def free(self, row: int) -> None:
        with self._lock:
            self.members.pop(row, None)
            if not self.members:    # the last run left: give the memory back
                self._reset()

    def release(self, run: BatchRun) -> None:
        """Free the run's row (its views stay, but the row may be given to the next run)."""
        with self._lock:
            if run.row is None:
                return
            if run._finalizer is not None:
                run._finalizer.detach()
            row, run.row = run.row, None
            self.free(row)

    def detach(self, run: BatchRun, on_move) -> None:
        """Move the run's cache out into buffers of its own and free its row."""
        with self._lock:
            if run.row is None:
                return
            for layer in run.cache.layers:
                layer.move_to(torch.empty_like(layer.k, memory_format=torch.contiguous_format),
                              torch.empty_like(layer.v, memory_format=torch.contiguous_format),
                              torch.empty_like(layer.slot_pos))
            on_move(run.cache)
            self.release(run)


class _NotPooled(Exception):
    """The step's attention needs something the pooled call does not do (a sink logit)."""


class _PooledStep:
    """One decode token of each of B pooled runs: ForwardContext.pooled for their forward.
    Built once per step; called once per layer by models.forward.attention_core."""

    def __init__(self, decoder: "BatchedDecoder", runs: Sequence[BatchRun], positions: list,
                 slots: list):
        model = decoder.model
        self.config, self.pool = model.config, decoder.pool
        self.runs = runs
        device = self.pool.device
        self.n = self.pool.span
        rows = [run.row for run in runs]
        self.rows = torch.tensor(rows, device=device)                                   # (B,)
        self.in_order = rows == list(range(self.n))
        self.q_pos = torch.tensor(positions, device=device)                              # (B,)
        self.slots = torch.tensor(slots, device=device).T.contiguous()                   # (L, B)
        self._rope: dict = {}
        self._masks: dict = {}
        self._positions = positions
        self._decoder = decoder
        self.kernel = PooledAttentionKernel.get() if decoder.kernel else None

    def rope(self, kind: str):
        """(cos, signed sin) (B, 1, 1, D): each row at its own position with its own bases,
        computed as models.layers.rope_cos_sin does for one run (the same products)."""
        if kind not in self._rope:
            inv = torch.stack([self._decoder.inv_freq(run.options, kind) for run in self.runs])  # (B, D/2)
            freqs = self.q_pos.to(inv.dtype)[:, None] * inv.to(self.q_pos.device)            # (B, D/2)
            emb = torch.cat((freqs, freqs), dim=-1)                                         # (B, D)
            dtype = self.pool.dtype
            cos, sin = emb.cos().to(dtype), emb.sin().to(dtype)
            self._rope[kind] = (cos[:, None, None], signed_sin(sin)[:, None, None])        # (B,1,1,D)
        return self._rope[kind]

    def visible(self, layer: int, width: int) -> torch.Tensor:
        """(n, 1, 1, width) bool: row r's query sees the key in column c. Made from the rows'
        slot positions and each run's own MaskSpec of this layer: causal ∧ (in its window ∨ a
        sink) over filled slots, exactly MaskSpec.predicate. Layers whose runs all have the same
        mask hold the same positions in the same slots: one mask for all of them."""
        masks = tuple(run.layer_masks[layer] for run in self.runs)
        key = (masks, width)
        if key not in self._masks:
            device = self.pool.device
            kv = self.pool.slot_pos[layer][:self.n, :width]                                 # (n, S)
            q = torch.full((self.n,), -1, dtype=torch.long, device=device)
            window = torch.full((self.n,), _FAR, dtype=torch.long, device=device)
            sinks = torch.zeros(self.n, dtype=torch.long, device=device)
            q[self.rows] = self.q_pos
            window[self.rows] = torch.tensor([m.window or _FAR for m in masks], device=device)
            sinks[self.rows] = torch.tensor([m.sinks for m in masks], device=device)
            q, window, sinks = q[:, None], window[:, None], sinks[:, None]                   # (n, 1)
            vis = (kv >= 0) & (kv <= q) & (((q - kv) < window) | (kv < sinks))            # (n, S)
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
            raise _NotPooled
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


class BatchedDecoder:
    """Prefill and decode steps of many runs of one model (see the module doc).

    solo: "fused" lets a step with a single run go through models.decoders.fused.FusedDecoder
    when the model and the run's options allow it (CPU, fp32, SDPA, a family with a kernel),
    None keeps every step in the engine's forward. pooled: False keeps every decode step's
    attention per run (the path the pooled store is measured and tested against). kernel:
    False makes the pooled call SDPA even where the compiled kernel runs."""

    def __init__(self, model: CausalLM, solo: Optional[str] = "fused", pooled: bool = True,
                 kernel: bool = True):
        if solo not in (None, "fused"):
            raise ValueError(f"solo must be None or 'fused', not {solo!r}")
        self.model, self.solo, self.pooled, self.kernel = model, solo, pooled, kernel
        self._fused: dict = {}   # RunOptions -> FusedDecoder, or None where it cannot run
        self._inv_freq: dict = {}
        self.pool = KVPool(model)
        self._packed: Optional[dict] = None   # pack_model's, from pack() to drop_packed
        self._pack_lock = threading.Lock()     # one packing at a time; a step waits for it
        config = model.config
        # what the pooled call cannot do for any run of this model; sink logits are found at
        # the first pooled step (_NotPooled) and remembered here
        self._pool_ok = config.attn_logit_softcapping is None

    def start(self, max_len: int, options: Optional[RunOptions] = None) -> BatchRun:
        """A new run: a cache for max_len tokens laid out by its options' mask."""
        options = decode_options(options)
        return BatchRun(cache=self.model.new_cache(max_len, 1, options=options), options=options,
                        layer_masks=self.model.layer_masks(options.mask))

    def release(self, run: BatchRun) -> None:
        """The run is done: its row of the pooled store is free at once for the next run (its
        cache's lengths and bytes stay readable; it cannot decode further)."""
        run.released = True
        self.pool.release(run)

    @torch.inference_mode()
    def share_prefix(self, run: BatchRun, donor: BatchRun, n: int) -> None:
        """Start `run` (nothing fed yet) with the first n positions of `donor`'s cache, for a
        prompt that begins with the same n tokens as what the donor was fed (prefix reuse, as
        vLLM's automatic prefix caching does with pages). Both must run with the same options:
        every one of them shapes the keys (the mask and a sink logit change what the earlier
        layers output, the RoPE bases the rotation). The run's next prefill feeds the rest;
        its `scores` count only what its own forwards compute (KVCache.copy_prefix)."""
        self._check_live([run, donor])
        if run.options != donor.options:
            raise ValueError("a prefix is shared only between runs with the same options")
        run.cache.copy_prefix(donor.cache, n)
        run.scores = 0

    @torch.inference_mode()
    def prefill(self, ids: Sequence[int], run: BatchRun) -> torch.Tensor:
        """Feed `ids` (a prompt, or a chunk of one) at run.pos onwards through the engine's
        forward; logits (1, 1, V) of the last one. A prompt fed in several chunks fills the
        cache exactly as one forward would (models.kv_cache)."""
        self._check_live([run])
        logits, run.scores = eager_forward(self.model, run.options, ids, run.cache)
        return logits

    def fused_for(self, options: RunOptions):
        """The fused decoder of these options, or None when it cannot run them (kept)."""
        if self.solo != "fused":
            return None
        if options not in self._fused:
            from .fused import FusedDecoder
            try:
                self._fused[options] = FusedDecoder(self.model, options)
            except (ValueError, RuntimeError):   # no kernel for this model / options / machine
                self._fused[options] = None
        return self._fused[options]

    def inv_freq(self, options: RunOptions, kind: str) -> torch.Tensor:
        key = (options.rope_theta, options.rope_local_theta, kind)
        if key not in self._inv_freq:
            self._inv_freq[key] = rope_inv_freq_of(self.model.config, options, kind)
        return self._inv_freq[key]

    def _moved(self, cache: KVCache) -> None:
        """A cache's buffers moved: a fused decoder bound to it must bind again."""
        for fused in self._fused.values():
            if fused is not None and getattr(fused, "_bound", None) is cache:
                fused._bound = None

    def _check_live(self, runs: Sequence[BatchRun]) -> None:
        if any(run.released for run in runs):
            raise ValueError("a released run cannot decode further: its row may hold another run")

    @torch.inference_mode()
    def step_many(self, tokens: Sequence[int], runs: Sequence[BatchRun]) -> torch.Tensor:
        """Feed tokens[i] to runs[i] at its own position, all in one forward: logits (B, 1, V),
        row i of run i. Every run's cache advances by one."""
        if len(tokens) != len(runs) or not runs:
            raise ValueError(f"{len(tokens)} tokens for {len(runs)} runs")
        if len(runs) == 1:
            fused = self.fused_for(runs[0].options)
            if fused is not None:
                self._check_live(runs)
                self.pool.detach(runs[0], self._moved)   # the kernel needs buffers of its own
                logits = fused.step(int(tokens[0]), runs[0].cache)
                runs[0].scores = fused.scores_per_step(runs[0].cache)
                return logits
        ids = torch.tensor([[int(t)] for t in tokens], dtype=torch.long,
                           device=self.model.embed.weight.device)                   # (B, 1)
        return self.forward_many(ids, runs)

    def _poolable(self, runs: Sequence[BatchRun]) -> bool:
        if not (self.pooled and self._pool_ok and len(runs) > 1):
            return False
        for run in runs:
            if run.options.attn_impl != "sdpa" or run.options.sink_logit is not None:
                return False
            if any(not m.causal for m in run.layer_masks):
                return False
            if run.cache.layers[0].k.dtype != self.pool.dtype or run.cache.layers[0].k.shape[0] != 1:
                return False
        return True

    @torch.inference_mode()
    def forward_many(self, ids: torch.Tensor, runs: Sequence[BatchRun]) -> torch.Tensor:
        """ids (B, T): row i fed to runs[i] at positions runs[i].pos .. + T - 1 (equal-length
        chunks of several prompts, or one decode token each). Logits (B, 1, V) of each row's
        last position; every run's cache advances by T. The embedding, every block's linear
        layers and MLP, and the LM head run once on the batch; attention in one pooled call per
        layer for a decode token (T = 1) of several runs, else per run."""
        model = self.model
        bsz, t = ids.shape
        if bsz != len(runs):
            raise ValueError(f"{bsz} rows of ids for {len(runs)} runs")
        if len({id(run.cache) for run in runs}) != len(runs):
            raise ValueError("each run of a batch needs its own cache")
        self._check_live(runs)
        if t == 1 and self._poolable(runs):
            try:
                return self._pooled_forward(ids, runs)
            except _NotPooled:   # nothing was written; this model's steps go per run
                self._pool_ok = False
        x = model.embed_tokens(ids)                                                 # (B, T, d)
        contexts = []
        for run in runs:
            ctx = ForwardContext(model, run.cache.positions(t, ids.device), run.cache, run.options,
                                 None, x.dtype, layer_masks=run.layer_masks)
            if t > 1:   # a prefill chunk: only its last row's logits are needed (CausalLM.forward)
                ctx.last_row_from = model.config.n_layers - 1
            contexts.append(ctx)
        batch = ForwardContext(model, contexts[0].positions, None, RunOptions(), None, x.dtype,
                               layer_masks=contexts[0].layer_masks)
        batch.runs = contexts
        batch.last_row_from = contexts[0].last_row_from
        # the packed weights while runs decode together (a prefill chunk of a run joining them,
        # a step the pool cannot take): packed for the pooled steps, used here too
        with packed_products(self._packed or None):
            for i, block in enumerate(model.blocks):
                x = block(x, batch, i)
            logits = model.head(x[:, -1:])                                          # (B, 1, V)
        for run, ctx in zip(runs, contexts):
            run.cache.advance(t)
            run.scores = ctx.score_entries
        return logits

    def _pooled_forward(self, ids: torch.Tensor, runs: Sequence[BatchRun]) -> torch.Tensor:
        """One decode token of each run, attention pooled (see the module doc)."""
        model = self.model
        self.pool.attach(runs, self._moved)
        x = model.embed_tokens(ids)                                                 # (B, 1, d)

        def write(positions: list, slots: list) -> torch.Tensor:
            # every run's slots already record their new positions (KVCache.append_many)
            batch = ForwardContext(model, torch.tensor(positions, device=ids.device), None,
                                   RunOptions(), None, x.dtype, layer_masks=runs[0].layer_masks)
            batch.pooled = _PooledStep(self, runs, positions, slots)
            h = x
            for i, block in enumerate(model.blocks):
                h = block(h, batch, i)
            return h

        with packed_products(self._packed_table()):
            logits = model.head(KVCache.append_many([run.cache for run in runs], write))   # (B, 1, V)
        n_heads = model.config.n_heads
        for run in runs:   # the scores its own attention computes alone: every key of its cache
            # (a full layer: its filled slots; a ring: its whole buffer, as LayerKV._store gives)
            run.scores = n_heads * sum(layer.length if layer.window is None else layer.capacity
                                       for layer in run.cache.layers)
        return logits

    def _packed_table(self) -> Optional[dict]:
        if self._packed is None and PACKED and self.pool.members:
            return self.pack()
        return self._packed or None

    @property
    def unpacked(self) -> bool:
        """pack() has something to do (packing is on and not done since the last drop)."""
        return self._packed is None and PACKED

    def pack(self) -> Optional[dict]:
        """Make the packed copies of the batched steps' weights, unless they are made (or being
        made: this waits for it); the table, or None where nothing packs (pack_model). Safe
        from any thread: a step taking the table waits for a packing under way."""
        if self.kernel:
            PooledAttentionKernel.get()   # built here too (once per machine, ~1 s), not at a step
        with self._pack_lock, torch.inference_mode():
            if self._packed is None and PACKED:
                self._packed = pack_model(self.model)
            return self._packed or None

    def drop_packed(self) -> None:
        """Free the packed copies (made again by pack or the next pooled step). A step running
        on another thread keeps the table it took until it ends."""
        with self._pack_lock:
            self._packed = None

    @staticmethod
    def cache_bytes(run: BatchRun) -> list[int]:
        """Per layer, the bytes of the run's own filled cache slots (K and V)."""
        return run.cache.used_bytes()


def pack_model(model: CausalLM, rows_hint: int = 32) -> dict:
    """{module: packed weight} for every Linear of the model and {model: its packed LM head};
    {} where packing is not available (not the CPU, not fp32, no oneDNN) or the head is larger
    than HEAD_PACK_MAX_BYTES: every product then stays F.linear."""
    head = model.lm_head_weight()
    if not can_pack(model.embed.weight) or head.nbytes > HEAD_PACK_MAX_BYTES:
        return {}
    table = {m: pack_weight(m.weight, rows_hint) for m in model.modules() if isinstance(m, Linear)}
    table[model] = pack_weight(head, rows_hint)
    return table
