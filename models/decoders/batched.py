"""Decoding many independent runs at once: one forward feeds every run its next token.

Why it exists. A decode step of one sequence reads every weight once to produce one token
(claim C2: decode is memory-bound). B runs decoding side by side can share that read: their
next tokens form one (B, 1, d) batch, so every linear layer and MLP runs once per step for all
of them, and the step costs little more than a single run's. This is iteration-level batching
(Orca; vLLM and TGI call it continuous batching): runs join and leave between any two steps.

What stays each run's own (so its telemetry and tokens are those of the same run alone):
- its KVCache (models.kv_cache): its own buffers, its own policy (full, window, sinks +
  window) and its own `pos`, so every run feeds its token at its own absolute position;
- its RunOptions: mask, sink logit, RoPE bases, attention implementation;
- its attention: ForwardContext.runs makes models.forward.attention_core hand row i of the
  batch's queries, keys and values to run i's own context (its positions, RoPE, cache, mask);
  everything else in the families' blocks is row-wise and runs on the whole batch.

Families are not copied here: the blocks of models/llama.py, models/gemma3.py, ... run as they
are, with a ForwardContext whose `runs` is set. Tests (tests/test_batched.py): logits of every
run within 1e-5 of the same run decoded alone (fp32), greedy tokens identical, for mixed prompt
lengths and cache policies, runs joining and leaving between steps.

A run alone in the batch can take the fused C++ decode step (models.decoders.fused, CPU fp32,
batch 1) on the same cache object, the fastest path of this engine for one sequence.

    decoder = BatchedDecoder(model)
    a = decoder.start(max_len, RunOptions())                  # a BatchRun: cache + options
    b = decoder.start(max_len, RunOptions(mask=MaskSpec(window=64)))
    decoder.prefill(prompt_a, a); decoder.prefill(prompt_b, b)  # (1, 1, V) each, or chunked
    logits = decoder.step_many([tok_a, tok_b], [a, b])        # (2, 1, V); each cache advanced
    a.scores                                                  # query-key scores of a's last call
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence

import torch

from ..forward import CausalLM, ForwardContext, RunOptions
from ..kv_cache import KVCache
from . import decode_options, eager_forward


@dataclass(eq=False)
class BatchRun:
    """One run inside a batch: its cache and the options it decodes with."""
    cache: KVCache
    options: RunOptions
    layer_masks: list = field(repr=False)   # model.layer_masks(options.mask), made once
    scores: int = 0                         # query-key scores the run's last forward computed

    @property
    def pos(self) -> int:
        return self.cache.pos


class BatchedDecoder:
    """Prefill and decode steps of many runs of one model (see the module doc).

    solo: "fused" lets a step with a single run go through models.decoders.fused.FusedDecoder
    when the model and the run's options allow it (CPU, fp32, SDPA, a family with a kernel),
    None keeps every step in the engine's forward."""

    def __init__(self, model: CausalLM, solo: Optional[str] = "fused"):
        if solo not in (None, "fused"):
            raise ValueError(f"solo must be None or 'fused', not {solo!r}")
        self.model, self.solo = model, solo
        self._fused: dict = {}   # RunOptions -> FusedDecoder, or None where it cannot run

    def start(self, max_len: int, options: Optional[RunOptions] = None) -> BatchRun:
        """A new run: a cache for max_len tokens laid out by its options' mask."""
        options = decode_options(options)
        return BatchRun(cache=self.model.new_cache(max_len, 1, options=options), options=options,
                        layer_masks=self.model.layer_masks(options.mask))

    @torch.inference_mode()
    def prefill(self, ids: Sequence[int], run: BatchRun) -> torch.Tensor:
        """Feed `ids` (a prompt, or a chunk of one) at run.pos onwards through the engine's
        forward; logits (1, 1, V) of the last one. A prompt fed in several chunks fills the
        cache exactly as one forward would (models.kv_cache)."""
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

    @torch.inference_mode()
    def step_many(self, tokens: Sequence[int], runs: Sequence[BatchRun]) -> torch.Tensor:
        """Feed tokens[i] to runs[i] at its own position, all in one forward: logits (B, 1, V),
        row i of run i. Every run's cache advances by one."""
        if len(tokens) != len(runs) or not runs:
            raise ValueError(f"{len(tokens)} tokens for {len(runs)} runs")
        if len(runs) == 1:
            fused = self.fused_for(runs[0].options)
            if fused is not None:
                logits = fused.step(int(tokens[0]), runs[0].cache)
                runs[0].scores = fused.scores_per_step(runs[0].cache)
                return logits
        ids = torch.tensor([[int(t)] for t in tokens], dtype=torch.long,
                           device=self.model.embed.weight.device)                   # (B, 1)
        return self.forward_many(ids, runs)

    @torch.inference_mode()
    def forward_many(self, ids: torch.Tensor, runs: Sequence[BatchRun]) -> torch.Tensor:
        """ids (B, T): row i fed to runs[i] at positions runs[i].pos .. + T - 1 (equal-length
        chunks of several prompts, or one decode token each). Logits (B, 1, V) of each row's
        last position; every run's cache advances by T. The embedding, every block's linear
        layers and MLP, and the LM head run once on the batch; attention per run."""
        model = self.model
        bsz, t = ids.shape
        if bsz != len(runs):
            raise ValueError(f"{bsz} rows of ids for {len(runs)} runs")
        if len({id(run.cache) for run in runs}) != len(runs):
            raise ValueError("each run of a batch needs its own cache")
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
        for i, block in enumerate(model.blocks):
            x = block(x, batch, i)
        for run, ctx in zip(runs, contexts):
            run.cache.advance(t)
            run.scores = ctx.score_entries
        return model.head(x[:, -1:])                                                # (B, 1, V)

    @staticmethod
    def cache_bytes(run: BatchRun) -> list[int]:
        """Per layer, the bytes of the run's own filled cache slots (K and V)."""
        return run.cache.used_bytes()
