"""A fused CPU decode step: one call into a small C++ kernel per generated token.

Why it exists. At batch 1 a decode step reads every weight once and does almost nothing else,
so its ceiling is memory bandwidth (the roofline of bench.decode). SmolLM2's 538 MB are 121
small matrices (1.3-7 MB each); between them the eager engine spends ~1,000 Python-dispatched
aten calls per token, and even the torch.compile'd static step (engine.static) ~250 separate
parallel regions with their thread wake-ups plus 30 SDPA calls of 40-80 us on a 64-slot cache.
That held the compiled step at ~67% of the measured bandwidth on this 2-core CPU, while the
same 121 products run back to back inside one parallel region reach ~100% of a large GEMV
(docs/BENCHMARKS.md). engine/kernels/fused_decode.cpp is that one region: both threads
split every matrix by rows and meet at six barriers per layer.

What stays the same as the engine:
- the weights are the loaded model's own tensors (pointers, no copy), and the cache is the
  engine's KVCache: the same buffers, the same slot layout (models.kv_cache: full, sliding
  ring, sinks + ring). The kernel writes only the K/V rows of its token; the cache chooses each
  layer's slot and keeps `pos`, `length` and the slot positions (KVCache.append);
- each layer's mask is its MaskSpec, evaluated here in Python over the slots' absolute
  positions (as engine.static does) and handed to the kernel as 0 / -inf per slot;
  RoPE's cos / signed sin come from models.layers at the token's absolute position;
- the math of models/llama.py and models/gemma3.py (tests: logits within ~1e-5 of the engine's
  forward for Llama, Mistral, Qwen2 and Gemma 3 configs, every mask kind, rings that wrap).

What it gives up: recording points (analyses that record use the eager forward), devices other
than the CPU, activations other than fp32 (the weights may be fp32, bf16 or int8 blocks:
engine.quantized), batches above 1 (several runs at once: engine.
fused_batch, the same kernel's `fused_decode_batch`), families other than those in LAYOUTS
(the model's declared `family` chooses the block layout). The kernel is compiled once per
machine with the system C++ compiler (~2 s) and checked before loading (engine.native);
without a compiler, FusedDecoder raises a clear error and the eager engine remains.

    decoder = FusedDecoder(model)
    generate(model, prompt_ids, params, decoder=decoder)   # eager prefill, fused decode steps
"""
from __future__ import annotations

import ctypes
from typing import Optional

import torch

from models.forward import CausalLM, RunOptions, rope_inv_freq_of, rope_kind
from models.kv_cache import KVCache
from models.layers import rope_cos_sin, signed_sin
from models.decoder import decode_options, eager_forward
from . import quantized
from .fused_kernel import SOURCE, _Layer, _Model, _P, _QMat, _ptr, library as _library  # noqa: F401

ACTIVATIONS = {"silu": 0, "gelu_pytorch_tanh": 1, "gelu_tanh": 1}
# the block layout of each family the kernel runs, by the family a model class declares:
# True = Gemma 3's four norms per block and QK-norm, False = Llama's two norms
LAYOUTS = {"llama": False, "gemma3": True}


class FusedDecoder:
    """Decode steps of one model through the fused kernel (see the module doc); a
    models.decoder.Decoder, so generate(..., decoder=) takes it:

        decoder = FusedDecoder(model)
        cache = decoder.new_cache(len(prompt) + n_new)
        logits = decoder.prefill(prompt_ids, cache)    # the engine's forward
        logits = decoder.step(token, cache)            # (1, 1, V), advances cache.pos

    weights: "fp32" (the model's own tensors), "bf16" or "int8" (copies made once per model by
    engine.quantized); None: EXPLORER_WEIGHTS. portable: the portable product loops
    even where the CPU has the SIMD ones (None: EXPLORER_KERNEL_PORTABLE).
    The model's weights must not be replaced afterwards (the kernel holds their addresses)."""

    def __init__(self, model: CausalLM, options: Optional[RunOptions] = None,
                 weights: Optional[str] = None, portable: Optional[bool] = None):
        options = decode_options(options)
        weights = quantized.configured_weights(model) if weights is None else quantized.check_weights(weights)
        portable = quantized.portable_forced() if portable is None else bool(portable)
        config = model.config
        if model.family not in LAYOUTS:
            raise ValueError(f"the fused decode step has no kernel for the {model.family or type(model).__name__!r} "
                             f"family (it runs {', '.join(sorted(LAYOUTS))})")
        weight = model.embed.weight
        if weight.device.type != "cpu" or weight.dtype != torch.float32:
            raise ValueError(f"the fused decode step runs on the CPU in float32; this model is "
                             f"{weight.dtype} on {weight.device}")
        if config.head_dim > 1024:  # the kernel rotates a head in a fixed 1024-float buffer
            raise ValueError(f"the fused decode step handles head_dim <= 1024, not {config.head_dim}")
        if config.hidden_act not in ACTIVATIONS:
            raise ValueError(f"the fused decode step has no {config.hidden_act!r} activation")
        if options.attn_impl != "sdpa":
            raise ValueError("the fused decode step replaces SDPA; eager and tiled attention are "
                             "for the recording (eager) forward")
        if weights != "fp32":
            widths = {config.d_model, config.d_ff, config.n_heads * config.head_dim}
            step = quantized.WIDTH_STEP[weights]
            if any(w % step for w in widths):
                raise ValueError(f"{weights} weights need widths that are multiples of {step}, "
                                 f"not {sorted(widths)}")
        self.model, self.options = model, options
        self.weights, self.portable = weights, portable
        self.layer_masks = model.layer_masks(options.mask)
        self.lib = _library()
        table = quantized.weights_of(model, weights).table   # {} for fp32

        def mat(module, key=None):
            """The QMat of a Linear (or of the head, keyed by the model) in this precision."""
            q = table.get(key if key is not None else module)
            if q is None:
                return _QMat.of(held(module.weight))
            keep.append(q)
            return _QMat.of(q=q)
        blocks = list(model.blocks)
        gemma = LAYOUTS[model.family]

        def norm_scale(norm):  # the scale RMSNorm multiplies by: Gemma's (1 + w), or w
            return (1.0 + norm.weight.detach()) if norm.unit_offset else norm.weight.detach()

        keep = []  # tensors whose addresses the kernel holds: kept alive with the decoder

        def held(t):
            if t is None:
                return None
            t = t.detach().contiguous()
            keep.append(t)
            return t

        self._layers = (_Layer * len(blocks))()
        for i, block in enumerate(blocks):
            attn, mlp, L = block.attn, block.mlp, self._layers[i]
            L.wqkv, L.bqkv = mat(attn.wqkv), _ptr(held(attn.wqkv.bias))
            L.wo, L.bo = mat(attn.wo), _ptr(held(attn.wo.bias))
            L.w_gate_up, L.w_down = mat(mlp.w_gate_up), mat(mlp.w_down)
            L.attn_norm = _ptr(held(norm_scale(block.attn_norm)))
            L.mlp_norm = _ptr(held(norm_scale(block.mlp_norm)))
            if gemma:
                L.attn_post_norm = _ptr(held(norm_scale(block.attn_post_norm)))
                L.mlp_post_norm = _ptr(held(norm_scale(block.mlp_post_norm)))
                L.q_norm = _ptr(held(norm_scale(attn.q_norm)))
                L.k_norm = _ptr(held(norm_scale(attn.k_norm)))
        sinks = options.sink_logit
        if sinks is not None:  # a number for every head, or one per head (gpt-oss)
            sinks = torch.as_tensor(sinks, dtype=torch.float32).expand(config.n_heads).contiguous()
        self._sinks = held(sinks)
        m = self._model = _Model()
        m.n_layers, m.d_model, m.n_heads = config.n_layers, config.d_model, config.n_heads
        m.n_kv_heads, m.head_dim, m.d_ff, m.vocab = config.n_kv_heads, config.head_dim, config.d_ff, config.vocab_size
        m.activation = ACTIVATIONS[config.hidden_act]
        m.norm_eps, m.attn_scale = config.norm_eps, config.attn_scale
        m.embed_scale = float(torch.tensor(model.embed_scale, dtype=torch.float32)) if model.embed_scale else 0.0
        m.attn_softcap = config.attn_logit_softcapping or 0.0
        m.final_softcap = config.final_logit_softcapping or 0.0
        m.embed, m.final_norm = _ptr(held(weight)), _ptr(held(norm_scale(model.norm)))
        head = table.get(model)
        if head is None:
            m.lm_head = _QMat.of(held(model.lm_head_weight()))
        else:
            keep.append(head)
            m.lm_head = _QMat.of(q=head)
        m.wtype, m.portable = quantized.WTYPE[weights], int(portable)
        m.sinks = _ptr(self._sinks)
        m.layers = self._layers
        self._keep = keep
        # the eager forward's bases, per layer kind
        self._inv_freq = {kind: rope_inv_freq_of(config, options, kind) for kind in ("full", "sliding")}
        self._rope = {kind: torch.empty(2, config.head_dim) for kind in self._inv_freq}
        self._bound: Optional[KVCache] = None
        self._groups: list = []
        self._scores = 0  # query-key scores of the last prefill or step

    def new_cache(self, max_len: int, batch: int = 1) -> KVCache:
        if batch != 1:
            raise ValueError("the fused decode step runs one sequence (batch 1)")
        return self.model.new_cache(max_len, batch, options=self.options)

    def _bind(self, cache: KVCache) -> None:
        """Point the kernel at this cache's buffers; group layers whose slots hold the same
        positions (same mask, same capacity) so each group's mask is computed once per step."""
        if len(cache.layers) != len(self._layers):
            raise ValueError("this cache belongs to another model")
        groups: dict = {}
        for i, (layer, L) in enumerate(zip(cache.layers, self._layers)):
            if layer.k.shape[0] != 1 or layer.k.dtype != torch.float32 or not layer.k.is_contiguous():
                raise ValueError("the fused decode step needs a contiguous float32 cache of batch 1")
            L.k_cache, L.v_cache = _ptr(layer.k), _ptr(layer.v)
            L.capacity = layer.capacity
            L.rope = _ptr(self._rope[rope_kind(self.model.config, i)])
            key = (layer.mask, layer.window, layer.sinks, layer.capacity)
            if key not in groups:
                groups[key] = (layer, torch.empty(layer.capacity), [])
            groups[key][2].append(i)
            L.mask = _ptr(groups[key][1])
        self._groups = list(groups.values())
        self._bound = cache

    def prefill(self, ids, cache: Optional[KVCache]) -> torch.Tensor:
        """The prompt through the engine's forward (models.decoder.eager_forward)."""
        logits, self._scores = eager_forward(self.model, self.options, ids, cache)
        return logits

    def step(self, token: int, cache: KVCache) -> torch.Tensor:
        """Feed one token at position cache.pos; returns its logits (1, 1, V)."""
        vocab = self.model.config.vocab_size
        if not 0 <= token < vocab:
            raise ValueError(f"token id {token} is outside the vocabulary (0..{vocab - 1})")
        if cache is not self._bound:
            self._bind(cache)
        logits = torch.empty(vocab)

        def write(positions: list, slots: list) -> None:
            # every layer's slot already records the position (KVCache.append): the masks
            # below see the key the kernel is about to write, as the engine's attention does
            pos, slots = positions[0], slots[0]
            position = torch.tensor([pos])
            for kind, table in self._rope.items():
                cos, sin = rope_cos_sin(position, self._inv_freq[kind], torch.float32)   # (1, D)
                table[0], table[1] = cos[0], signed_sin(sin)[0]
            visible_slots = 0
            for layer, additive, members in self._groups:
                visible = layer.mask.visible(position, layer.slot_pos)[0]                # (C,)
                additive.fill_(float("-inf")).masked_fill_(visible, 0.0)
                visible_slots += int(visible.sum()) * len(members)
                for i in members:
                    self._layers[i].slot = slots[i]
            self._model.n_threads = torch.get_num_threads()
            if self.lib.fused_decode_step(ctypes.byref(self._model), int(token), _ptr(logits)) != 0:
                raise RuntimeError("the fused decode kernel refused its arguments")  # checked above
            # the kernel scores every head against every visible slot, skipping the rest
            self._scores = self.model.config.n_heads * visible_slots

        KVCache.append([cache], write)
        return logits.view(1, 1, -1)

    def scores_per_step(self, cache: Optional[KVCache]) -> int:
        """Query-key scores the last prefill or step computed."""
        return self._scores
