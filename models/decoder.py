"""Decoders: how generate() turns a prompt and then one token at a time into logits.

Every decoder of a model follows one protocol (`Decoder`), so models.generate.generate() has no
special cases: it prefills the prompt, then calls `step` once per new token, and reads the
query-key scores each call computed for its telemetry.

- `EagerDecoder` (here): the engine's own forward (models.forward), a prefill and then one
  forward of one token per step; without a cache (use_cache=False in generate) every step is a
  prefill of the whole sequence, claim C1's textbook baseline. Recording points exist only in
  this forward: analyses that record call the model directly, not a fast decoder.
- `engine.static.StaticDecoder`: the decode step with static shapes, eager or compiled
  by torch.compile;
- `engine.fused.FusedDecoder`: the whole decode step as one call into a C++ kernel
  (CPU, fp32, batch 1).
- `engine.batched.BatchedDecoder`: many independent runs decoding at once, one forward
  for all of them (their caches in the rows of `pool.KVPool`, attention in one call per layer
  by `pooled_step.PooledStep`, the products on weights packed by `packing.pack_model`).

The fast decoders prefill through the engine's forward too (`eager_forward`) and continue on the
same KVCache: a prompt is one large forward, dominated by matrix products, where the engine is
already fast; decoding is where the per-token overhead lies.

    decoder = FusedDecoder(model, options)        # or StaticDecoder(...), EagerDecoder(...)
    cache = decoder.new_cache(len(prompt) + n_new)
    logits = decoder.prefill(prompt, cache)       # (1, 1, V): the last position's logits
    logits = decoder.step(token, cache)           # (1, 1, V), advances cache.pos by one
    decoder.scores_per_step(cache)                # query-key scores the last call computed
"""
from __future__ import annotations

import dataclasses
from typing import Optional, Protocol, Sequence, runtime_checkable

import torch

from .forward import CausalLM, RunOptions
from .kv_cache import KVCache

__all__ = ["Decoder", "EagerDecoder", "eager_forward", "decode_options"]


@runtime_checkable
class Decoder(Protocol):
    """What generate() needs of a decoder of one model."""

    model: CausalLM
    options: RunOptions   # the run options it decodes with (always last_logits_only=True)

    def new_cache(self, max_len: int, batch: int = 1) -> KVCache:
        """A cache for max_len tokens laid out as this decoder's steps need it."""
        ...

    def prefill(self, ids: Sequence[int], cache: Optional[KVCache]) -> torch.Tensor:
        """Feed token ids at cache.pos onwards (no cache: positions 0 ..); logits (1, 1, V) of
        the last one."""
        ...

    def step(self, token: int, cache: KVCache) -> torch.Tensor:
        """Feed one token at cache.pos; its logits (1, 1, V). Advances cache.pos by one."""
        ...

    def scores_per_step(self, cache: Optional[KVCache]) -> int:
        """Query-key scores the last prefill or step computed, all layers and heads."""
        ...


def decode_options(options: Optional[RunOptions]) -> RunOptions:
    """The run options of a decoder: generation needs only the last row of logits."""
    return dataclasses.replace(options or RunOptions(), last_logits_only=True)


def eager_forward(model: CausalLM, options: RunOptions, ids: Sequence[int],
                  cache: Optional[KVCache]) -> tuple[torch.Tensor, int]:
    """One forward of the engine over `ids`: (logits (1, 1, V) with last_logits_only, query-key
    scores it computed)."""
    x = torch.tensor([[int(i) for i in ids]], dtype=torch.long, device=model.embed.weight.device)
    logits, ctx = model(x, cache=cache, options=options, return_context=True)
    return logits, ctx.score_entries


class EagerDecoder:
    """The engine's own forward as a decoder (see the module doc)."""

    def __init__(self, model: CausalLM, options: Optional[RunOptions] = None):
        self.model, self.options = model, decode_options(options)
        self._scores = 0

    def new_cache(self, max_len: int, batch: int = 1) -> KVCache:
        return self.model.new_cache(max_len, batch, options=self.options)

    def prefill(self, ids: Sequence[int], cache: Optional[KVCache]) -> torch.Tensor:
        logits, self._scores = eager_forward(self.model, self.options, ids, cache)
        return logits

    def step(self, token: int, cache: KVCache) -> torch.Tensor:
        if cache is None:
            raise ValueError("a step continues a KV cache; without one, prefill the whole sequence")
        return self.prefill([token], cache)

    def scores_per_step(self, cache: Optional[KVCache]) -> int:
        return self._scores

