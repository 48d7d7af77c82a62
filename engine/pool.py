"""The pooled store: the K/V buffers of every run decoding together, one store per layer.

Each run keeps its own KVCache (its own policy: full, window ring buffer, sinks + window; its
own `pos`, lengths and slot positions, written by models.kv_cache only), but while it decodes
together with others its buffers live in a row of a `KVPool`: per layer one
(rows, H_kv, width, D) K and V store and a (rows, width) table of slot positions, each run's
LayerKV a view onto its row (`LayerKV.move_to`). A pooled decode step (engine.
pooled_step) then attends, per layer, in one call over the rows in use, as gpt-fast's batched
cache and vLLM's paged cache do, here with one row per run instead of pages.
Runs leave by `release` (or when their BatchRun is garbage-collected): their row is free at
once for the next run that joins.
"""
from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass, field
from typing import Optional, Sequence

import torch

from models.forward import CausalLM, RunOptions
from models.kv_cache import KVCache

ROW_BLOCK = 8      # the pooled store grows by whole blocks of rows


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
        with self._lock:   # not halfway through a growth, whose layers are made one by one
            return sum(t.nbytes for t in self.k + self.v if t is not None)

    def attach(self, runs: Sequence[BatchRun], on_move) -> None:
        """Give every run of `runs` without a row one (the lowest free ones), its cache moved
        into it. on_move(cache) is called for every cache whose buffers moved.

        The store grows one layer at a time, and the joining runs move in layer by layer with
        it: a layer's new store is made, the members' and the joining runs' layer moved into
        it, and the buffers they leave are dropped before the next layer's store is made. So
        attaching holds at most one layer more than the larger of before (old store and the
        joining runs' own caches) and after (the new store): never two whole stores (for 32
        runs of 1,280 SmolLM2 tokens a store is 1.9 GB; docs/HARDENING.md)."""
        with self._lock:
            new = [run for run in runs if run.row is None]
            if not new:
                return
            rows = max(self.rows, len(self.members) + len(new))
            if rows > self.rows:
                rows = -(-rows // ROW_BLOCK) * ROW_BLOCK   # whole blocks: fewer than ROW_BLOCK spare
            widths = [max([w] + [run.cache.layers[l].capacity for run in new])
                      for l, w in enumerate(self.widths)]
            if not self.k:
                self.k, self.v, self.slot_pos = ([None] * self.n_layers for _ in range(3))
            members = [(row, run) for row, run in ((row, ref()) for row, ref in self.members.items())
                       if run is not None]
            placed = list(zip(new, [r for r in range(rows) if r not in self.members]))
            grew = False
            for l in range(self.n_layers):
                if rows != self.rows or widths[l] != self.widths[l] or self.k[l] is None:
                    self._grow_layer(l, rows, widths[l], members)
                    grew = True
                for run, row in placed:
                    layer = run.cache.layers[l]
                    cap = layer.capacity
                    self.slot_pos[l][row].fill_(-1)   # columns past this run's capacity: empty
                    layer.move_to(self.k[l][row:row + 1, :, :cap], self.v[l][row:row + 1, :, :cap],
                                  self.slot_pos[l][row, :cap])
            self.rows = rows
            if grew:
                for _, run in members:
                    on_move(run.cache)
            for run, row in placed:
                run.row = row
                self.members[row] = weakref.ref(run)
                run._finalizer = weakref.finalize(run, self._free, row, weakref.ref(self))
                on_move(run.cache)

    def _grow_layer(self, l: int, rows: int, width: int, members: list) -> None:
        """Layer l's store anew at (rows, width); every member's layer l moves into it and the
        old store is dropped (the pool's references first, the members' as they move)."""
        self.k[l] = self.v[l] = self.slot_pos[l] = None
        kw = {"dtype": self.dtype, "device": self.device}
        # zeros, not empty: SDPA (the path where the kernel cannot run) still multiplies a masked
        # column's value by its zero weight, and NaN * 0 is NaN
        k = torch.zeros(rows, self.n_kv, width, self.head_dim, **kw)
        v = torch.zeros(rows, self.n_kv, width, self.head_dim, **kw)
        slot_pos = torch.full((rows, width), -1, dtype=torch.long, device=self.device)
        for row, run in members:
            layer = run.cache.layers[l]
            cap = layer.capacity
            layer.move_to(k[row:row + 1, :, :cap], v[row:row + 1, :, :cap], slot_pos[row, :cap])
        self.k[l], self.v[l], self.slot_pos[l] = k, v, slot_pos
        self.widths[l] = width

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
