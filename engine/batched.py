"""Decoding many independent runs at once: one forward feeds every run its next token.

Why it exists. A decode step of one sequence reads every weight once to produce one token
(claim C2: decode is memory-bound). B runs decoding side by side can share that read: their
next tokens form one (B, 1, d) batch, so every linear layer and MLP runs once per step for all
of them, and the step costs little more than a single run's. This is iteration-level batching
(Orca; vLLM and TGI call it continuous batching): runs join and leave between any two steps.

The parts, each in its module:
- engine.pool: `BatchRun` (a run: its cache and options) and `KVPool`, the store whose
  rows hold the K/V buffers of the runs decoding together (each run's cache a view onto its row);
- engine.pooled_step: a decode token of every run with attention in ONE call per layer
  over the pool (`PooledStep`; the compiled `PooledAttentionKernel`, else SDPA), each row under
  its own run's MaskSpec;
- engine.packing: the weights packed once for the batched products (`pack_model`);
- here: `BatchedDecoder`, which starts, prefills, steps and releases runs.
Prefill chunks keep the per-run path (ForwardContext.runs: models.forward.attention_core hands
row i to run i's own context) on the same buffers. Steps the pool cannot take (a sink logit,
another attention implementation, a logit softcap, a non-causal mask) take that per-run path
too.

What stays each run's own (so its telemetry and tokens are those of the same run alone):
- its KVCache, its positions (RoPE at its own absolute position), its mask and its options;
- its cache bytes, read from its own cache (the view onto its row);
- `scores`: the query-key scores its own attention computes alone (H x each layer's keys).
Everything else in the families' blocks is row-wise and runs on the whole batch.

Families are not copied here: the blocks of models/llama.py, models/gemma3.py, ... run as they
are, with the attention backend named "per_run" or "pooled" (registered below through
models/' seam, models.forward.register_attention). Tests (tests/unit/test_batched.py):
logits of every run within 1e-5 of the same run decoded alone (fp32), greedy tokens identical,
for mixed prompt lengths and cache policies, runs joining and leaving between steps, a row
reused after its run left, a ring buffer wrapping inside the pool next to a full cache.

A run alone in the batch can take the fused C++ decode step (engine.fused, CPU fp32,
batch 1), the fastest path of this engine for one sequence: it needs contiguous buffers of its
own, so such a run first leaves the pool (its cache copied out, once). Several runs that could
each take it take the fused batched step (engine.fused_batch): one C++ call for all of
them, every weight read once, each run's cache read and written where it is (its own buffers or
its pooled row); the pooled forward remains for the steps it cannot take (solo=None, or a run
whose options the fused step lacks). SmolLM2 gguf, one thread: ~23 ms a pooled step of two runs
against ~8 ms for one alone before; see fused_batch for the measured figures.

    decoder = BatchedDecoder(model)
    a = decoder.start(max_len, RunOptions())                  # a BatchRun: cache + options
    b = decoder.start(max_len, RunOptions(mask=MaskSpec(window=64)))
    decoder.prefill(prompt_a, a); decoder.prefill(prompt_b, b)  # (1, 1, V) each, or chunked
    logits = decoder.step_many([tok_a, tok_b], [a, b])        # (2, 1, V); each cache advanced
    a.scores                                                  # query-key scores of a's last call
    decoder.release(a)                                        # a's row is free for the next run
"""
from __future__ import annotations

import logging
import threading
from typing import Optional, Sequence

import torch

from models.forward import (CausalLM, ForwardContext, RunOptions, attention_core, register_attention,
                            rope_inv_freq_of)
from models.kv_cache import KVCache
from models.layers import weight_provider
from models.decoder import decode_options, eager_forward
from . import quantized
from .packing import PACKED, pack_model
from .pool import BatchRun, KVPool
from .prefix import copy_prefix
from .pooled_step import NotPooled, PooledAttentionKernel, PooledStep

# BatchRun, KVPool, PooledAttentionKernel and pack_model are importable from here too: the
# decoder's callers and tests reach them through this module
__all__ = ["BatchedDecoder", "BatchRun", "KVPool", "PooledAttentionKernel", "pack_model", "PACKED"]
log = logging.getLogger(__name__)


# The two attention backends of a batch of runs, registered in models.forward's registry by name.
# The batch's ForwardContext carries what they need: `runs` (per run: a context with its own
# cache, positions and mask) or `pooled` (a PooledStep over the pooled store).
PER_RUN, POOLED = "per_run", "pooled"


def per_run_attention(ctx: ForwardContext, layer: int, q, k, v, sink_logit=None) -> torch.Tensor:
    """Row i of the batch attends over run i's own cache, through the textbook attention."""
    return torch.cat([attention_core(run, layer, q[i:i + 1], k[i:i + 1], v[i:i + 1], sink_logit)
                      for i, run in enumerate(ctx.runs)])                            # (B, H, Tq, D)


def pooled_attention(ctx: ForwardContext, layer: int, q, k, v, sink_logit=None) -> torch.Tensor:
    """One decode token of each run, every run's cache in one store: one call per layer."""
    return ctx.pooled(layer, q, k, v, sink_logit)                                   # (B, H, 1, D)


register_attention(PER_RUN, per_run_attention)
register_attention(POOLED, pooled_attention)


class BatchedDecoder:
    """Prefill and decode steps of many runs of one model (see the module doc).

    solo: "fused" lets a step with a single run go through engine.fused.FusedDecoder
    when the model and the run's options allow it (CPU, fp32, SDPA, a family with a kernel),
    None keeps every step in the engine's forward. pooled: False keeps every decode step's
    attention per run (the path the pooled store is measured and tested against). kernel:
    False makes the pooled call SDPA even where the compiled kernel runs. fused_batch: a step
    of several runs goes through engine.fused_batch (one C++ call for all of them)
    when each run alone could take the fused step (solo="fused"); False: the pooled forward."""

    def __init__(self, model: CausalLM, solo: Optional[str] = "fused", pooled: bool = True,
                 kernel: bool = True, weights: Optional[str] = None, fused_batch: bool = True):
        if solo not in (None, "fused"):
            raise ValueError(f"solo must be None or 'fused', not {solo!r}")
        self.model, self.solo, self.pooled, self.kernel = model, solo, pooled, kernel
        self.fused_batch = fused_batch
        self._fused_batch = None   # fused_batch.FusedBatch, made at the first such step
        # the precision of the decode steps' weights (engine.quantized): fp32 packs
        # the model's own weights for oneDNN; bf16 / int8 use their copies, compiled products
        self.weights = quantized.configured_weights(model) if weights is None else quantized.check_weights(weights)
        self._fused: dict = {}   # RunOptions -> FusedDecoder, or None where it cannot run
        self._inv_freq: dict = {}
        self.pool = KVPool(model)
        self._packed: Optional[dict] = None   # pack_model's, from pack() to drop_packed
        self._pack_lock = threading.Lock()     # one packing at a time; a step waits for it
        config = model.config
        # what the pooled call cannot do for any run of this model; sink logits are found at
        # the first pooled step (NotPooled) and remembered here
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
        its `scores` count only what its own forwards compute (engine.prefix)."""
        self._check_live([run, donor])
        if run.options != donor.options:
            raise ValueError("a prefix is shared only between runs with the same options")
        copy_prefix(run.cache, donor.cache, n)
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
                self._fused[options] = FusedDecoder(self.model, options, weights=self.weights)
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
        if self._fused_batch is not None:
            self._fused_batch.forget(cache)

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
        elif self.fused_batch:
            decoders = [self.fused_for(run.options) for run in runs]
            if all(dec is not None for dec in decoders):
                self._check_live(runs)
                # each run's cache where it is (its own buffers, or its pooled row): no copy
                logits, scores = self._batch().step(tokens, [run.cache for run in runs], decoders)
                for run, n in zip(runs, scores):
                    run.scores = n
                return logits
        ids = torch.tensor([[int(t)] for t in tokens], dtype=torch.long,
                           device=self.model.embed.weight.device)                   # (B, 1)
        return self.forward_many(ids, runs)

    def _batch(self):
        if self._fused_batch is None:
            from .fused_batch import FusedBatch
            self._fused_batch = FusedBatch()
        return self._fused_batch

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
            except NotPooled:   # nothing was written; this model's steps go per run
                self._pool_ok = False
        x = model.embed_tokens(ids)                                                 # (B, T, d)
        contexts = []
        for run in runs:
            ctx = ForwardContext(model, run.cache.positions(t, ids.device), run.cache, run.options,
                                 None, x.dtype, layer_masks=run.layer_masks)
            if t > 1:   # a prefill chunk: only its last row's logits are needed (CausalLM.forward)
                ctx.last_row_from = model.config.n_layers - 1
            contexts.append(ctx)
        batch = ForwardContext(model, contexts[0].positions, None, RunOptions(attn_impl=PER_RUN), None,
                               x.dtype, layer_masks=contexts[0].layer_masks)
        batch.runs = contexts
        batch.last_row_from = contexts[0].last_row_from
        # Which weights, so that a run reads the same values in company as alone: a prompt the
        # model's own fp32 ones (alone, the engine's forward prefills it), packed for oneDNN
        # where the pooled steps packed them; a decode token (a step the pool cannot take) the
        # decode precision's copies, as the fused step alone reads them. A prompt in bf16 or
        # gguf copies would make its first token depend on whether others were decoding then.
        if t > 1:
            table = self._packed if self.weights == "fp32" else None
        else:
            table = self.pack() if self.weights != "fp32" and PACKED else self._packed
        with weight_provider(table or None):
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
            # every run's slots already record their new positions (KVCache.append)
            batch = ForwardContext(model, torch.tensor(positions, device=ids.device), None,
                                   RunOptions(attn_impl=POOLED), None, x.dtype, layer_masks=runs[0].layer_masks)
            batch.pooled = PooledStep(model, self.pool, runs, positions, slots, self.inv_freq, self.kernel)
            h = x
            for i, block in enumerate(model.blocks):
                h = block(h, batch, i)
            return h

        with weight_provider(self._packed_table()):
            logits = model.head(KVCache.append([run.cache for run in runs], write))   # (B, 1, V)
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
                self._packed = self._weights_table()
            return self._packed or None

    def _weights_table(self) -> dict:
        """The products' table in this decoder's precision (see pack)."""
        if self.weights == "fp32" or self.model.embed.weight.device.type != "cpu":
            return pack_model(self.model)
        try:
            return dict(quantized.weights_of(self.model, self.weights).table)
        except (ValueError, RuntimeError) as err:   # widths int8 cannot take, no compiler
            log.warning("batched steps stay fp32: %s", err)
            return pack_model(self.model)

    def drop_packed(self) -> None:
        """Free the packed copies (made again by pack or the next pooled step). A step running
        on another thread keeps the table it took until it ends."""
        with self._pack_lock:
            self._packed = None

    @staticmethod
    def cache_bytes(run: BatchRun) -> list[int]:
        """Per layer, the bytes of the run's own filled cache slots (K and V)."""
        return run.cache.used_bytes()
