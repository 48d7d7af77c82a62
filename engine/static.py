"""A decode step with static shapes, for torch.compile.

The eager engine is driven from Python: a decode token of SmolLM2 issues ~1,000 small aten
calls, and on this CPU their dispatch costs ~4-5 ms of a ~30 ms token, which is most of the
gap to the memory-bandwidth roofline (docs/BENCHMARKS.md). torch.compile removes that cost by
fusing the small ops into a few generated kernels, but only if every step has the same shapes
and reads no Python number out of a tensor; otherwise it recompiles at every cache length.

So this step runs the *same family modules* (models/llama.py, models/gemma3.py) with a
different ForwardContext:
- the position is a (1,) tensor, never an int;
- keys/values are written in place (index_put_) into the preallocated buffers
  (StaticDecodeContext.store, inside KVCache.append, which records the slot's position and
  advances the cache outside the compiled graph), and attention reads the whole buffer, every
  slot with the absolute position it holds;
- the mask is the layer's MaskSpec evaluated over those slot positions (empty slots hold -1),
  so causal, sliding-window and sinks+window layers all keep their exact mask.

Prefill stays on the eager path (it is one large forward, dominated by matmuls); decoding then
continues on the same KVCache. `StaticDecoder(model, compile=False)` runs the identical step
without the compiler: the tests use it to tell the static layout from the compiler."""
from __future__ import annotations

from typing import Optional

import torch

from models.forward import CausalLM, ForwardContext, RunOptions
from models.kv_cache import KVCache
from models.decoder import decode_options, eager_forward


# autotune=True: Inductor freezes the weights into constants and times its own C++ GEMV
# kernels against ATen's for every matrix shape, keeping the faster. On this 2-core CPU it was
# faster than the plain compiled step in some benchmark runs and not in others
# (docs/BENCHMARKS.md); it costs 15-80 s of compiling and ~20 MB more peak memory.
AUTOTUNE = {"freezing": True, "max_autotune": True, "max_autotune_gemm_backends": "CPP,ATEN"}


class StaticDecodeContext(ForwardContext):
    """ForwardContext of one decode token whose shapes never change (see the module doc)."""

    def store(self, layer: int, k: torch.Tensor, v: torch.Tensor):
        """Write one token's keys/values (B, Hkv, 1, D) into its slot and return the whole
        buffers (B, Hkv, C, D) with every slot's position (C,): shapes that never change, so the
        compiled step reads no Python int and never recompiles. The slot already records the
        position (KVCache.append, which this step runs inside)."""
        kv = self.cache.layers[layer]
        slot = kv.slot_of(self.positions)
        # index_put_ (as gpt-fast writes its cache): Inductor fuses it into the step's kernels
        # as an in-place store into the buffer (seen in the generated code)
        kv.k[:, :, slot] = k
        kv.v[:, :, slot] = v
        return kv.k, kv.v, kv.slot_pos

    def visible(self, layer: int, kv_pos: torch.Tensor):
        mask = self.layer_masks[layer]
        key = (mask, kv_pos.shape[0])
        if key not in self._visible:
            # (1, C) over every slot; no data-dependent shortcut (sdpa_mask_for reads values)
            vis = mask.visible(self.positions, kv_pos)
            self._visible[key] = (vis, vis)
        return self._visible[key]


class StaticDecoder:
    """Decode steps of one model at fixed cache capacities, compiled once per capacity.

        decoder = StaticDecoder(model)                 # compiles lazily, at the first step
        cache = decoder.new_cache(len(prompt) + n_new)
        logits = decoder.prefill(prompt_ids, cache)    # the engine's forward
        logits = decoder.step(token, cache)            # (1, 1, V), advances cache.pos

    The first step of a new capacity compiles (~30 s for SmolLM2 on 2 CPU cores, ~5-8 s when
    Inductor's on-disk cache already holds it; 15-80 s with autotune). Capacities are rounded up
    to `capacity_step` so that prompts of similar length share one compiled graph; the extra
    slots are empty and masked, and cost one read of their (small) K/V per step. Recording
    points are not available here: analyses that record use the eager forward. The model's
    weights must not change after the first step (autotune folds them into the graph)."""

    def __init__(self, model: CausalLM, options: Optional[RunOptions] = None, compile: bool = True,
                 autotune: bool = False, capacity_step: int = 64):
        options = decode_options(options)
        if options.attn_impl != "sdpa":
            raise ValueError("the static decode step uses SDPA; eager and tiled attention are for the "
                             "recording (eager) forward")
        self.model, self.options, self.capacity_step = model, options, capacity_step
        self.layer_masks = model.layer_masks(options.mask)
        self._scores = 0
        # fullgraph: a graph break would silently bring back the Python overhead this removes;
        # dynamic=False: one specialised graph per capacity, no symbolic shapes
        self._fn = torch.compile(self._step, fullgraph=True, dynamic=False,
                                 options=AUTOTUNE if autotune else None) if compile else self._step

    def new_cache(self, max_len: int, batch: int = 1) -> KVCache:
        step = self.capacity_step
        return self.model.new_cache(-(-max_len // step) * step, batch, options=self.options)

    def _step(self, token: torch.Tensor, position: torch.Tensor, cache: KVCache) -> torch.Tensor:
        """token (B, 1), position (1,) -> logits (B, 1, V). Traced by torch.compile."""
        model = self.model
        x = model.embed_tokens(token)                                   # (B, 1, d)
        ctx = StaticDecodeContext(model, position, cache, self.options, None, x.dtype, self.layer_masks)
        for i, block in enumerate(model.blocks):
            x = block(x, ctx, i)
        return model.head(x)                                            # (B, 1, V)

    def prefill(self, ids, cache: Optional[KVCache]) -> torch.Tensor:
        """The prompt through the engine's forward (models.decoder.eager_forward)."""
        logits, self._scores = eager_forward(self.model, self.options, ids, cache)
        return logits

    def step(self, token: int, cache: KVCache) -> torch.Tensor:
        """Feed one token at position cache.pos; returns its logits (1, 1, V)."""
        device = self.model.embed.weight.device

        def write(positions: list, slots: list) -> torch.Tensor:
            # the cache's bookkeeping (slot positions before, pos and lengths after) stays in
            # Python, out of the compiled graph
            return self._fn(torch.tensor([[token]], device=device), torch.tensor(positions, device=device), cache)

        logits = KVCache.append([cache], write)
        # a static step scores every head against every slot, the empty and masked ones too
        self._scores = sum(self.model.config.n_heads * layer.capacity for layer in cache.layers)
        return logits

    def scores_per_step(self, cache: Optional[KVCache]) -> int:
        """Query-key scores the last prefill or step computed."""
        return self._scores
