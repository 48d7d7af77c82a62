"""What one decode step of a loaded model reads and computes (claim C2's model half), counted
from the tensors the step that runs actually reads: bytes read and FLOPs of a step of B
sequences at context t, and the batch at which the step's intensity reaches a device's ridge.

The one account of a decode step: the roofline (explorer/generate/roofline.py, C2), C20's
roofline knee (explorer/generate/batch_evidence.py), the batch view's prediction
(explorer/generate/batch_view.py) and the Precision section all count a step here.

Which weights. The shared decode loop's steps (engine.batched.BatchedDecoder, the
fused step of a run alone included) read every matrix in the decode precision
(`served_weights`: fp32, or on the CPU the bf16 / int8 / gguf copies of
engine.quantized); everything else (norms, biases, the embedding rows a step looks up)
is read from the model's own tensors. So a matrix counts the bytes of the copy the products
read (`QuantWeight.nbytes`: codes, block scales, offsets, padding rows of its last tile), or of
the model's own tensor in fp32; the KV cache counts its stored element size (read from a cache
the model makes) per slot, through ModelConfig's KV formula; each layer's cache read is the
tokens it holds: min(t, window) on a sliding-window layer.

    shape = step_shape(model)                  # StepShape of the served precision
    shape = step_shape(model, "fp32")          # ... or of another one
    bytes_read, flops = shape.cost(context, batch)
    crossing_batch(shape, context, ridge)      # the model's own knee, or None
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import torch


@dataclass(frozen=True)
class StepShape:
    """What one decode step touches, counted from the tensors it reads and the model's config."""
    n_layers: int
    n_heads: int
    head_dim: int
    kv_bytes_per_slot: int        # one layer's K and V of one token, in the cache's stored format
    capacities: tuple             # per layer: the tokens its cache holds at most (None: all)
    element_bytes: int            # of the KV cache's stored elements
    dense_weight_bytes: int       # read once per step whatever B (all but routed experts and
                                  # the embedding rows a step looks up, B of them)
    dense_matmul_weights: int     # weights each token multiplies (2-D tensors, LM head included)
    expert_weight_bytes: int = 0  # every routed expert of every MoE layer
    expert_matmul_weights: int = 0
    n_experts: int = 0
    experts_per_token: int = 0
    embed_row_bytes: int = 0      # one looked-up embedding row (0: the head reads the same tensor)
    weights: str = "fp32"         # the decode precision the matrices are read in
    matrix_bytes: int = 0         # of dense_weight_bytes: the matrices' (copies')
    matrix_weights: int = 0       # weights in those matrices

    @property
    def bytes_per_weight(self) -> float:
        """Bytes the step reads per matrix weight (codes, scales and offsets together)."""
        return self.matrix_bytes / self.matrix_weights if self.matrix_weights else 0.0

    def held(self, context: int) -> list[int]:
        """Per layer, the keys a step at context t reads: min(t, window) on a windowed layer."""
        return [context if cap is None else min(context, cap) for cap in self.capacities]

    def experts_touched(self, batch: float) -> float:
        """Expected routed experts a step of `batch` tokens reads per MoE layer, if the router
        picked k of N uniformly: N·(1 − (1 − k/N)^B). Exactly k at B = 1."""
        if not self.n_experts:
            return 0.0
        return self.n_experts * (1.0 - (1.0 - self.experts_per_token / self.n_experts) ** batch)

    def cost(self, context: int, batch: float) -> tuple[float, float]:
        """(bytes read, FLOPs) of one decode step of `batch` sequences at `context` tokens each:
        weights once for the batch, each sequence its own cache and embedding row; 2 FLOPs per
        weight multiplied per token, plus q·k and p·v: 4 x heads x d_head x keys per layer."""
        held = self.held(context)
        cache = self.kv_bytes_per_slot * sum(held)
        experts = (self.expert_weight_bytes * self.experts_touched(batch) / self.n_experts
                   if self.n_experts else 0.0)
        bytes_read = self.dense_weight_bytes + experts + batch * (cache + self.embed_row_bytes)
        active = self.dense_matmul_weights + (self.expert_matmul_weights * self.experts_per_token
                                              / self.n_experts if self.n_experts else 0.0)
        flops = batch * (2.0 * active + 4.0 * self.n_heads * self.head_dim * sum(held))
        return bytes_read, flops


def served_weights(model: torch.nn.Module) -> str:
    """The precision the shared loop's decode steps read the matrices in: the configured one
    (engine.quantized.configured_weights) on the CPU, where the copies exist; the
    model's own tensors ("fp32": whatever dtype they are) on any other device, where
    BatchedDecoder keeps them."""
    from engine import quantized

    if model.embed.weight.device.type != "cpu":
        return "fp32"
    return quantized.configured_weights(model)


def step_path(decoder, runs) -> str:
    """Which step engine.batched.BatchedDecoder.step_many takes for these runs:
    "fused" (a run alone: the fused C++ step of engine.fused), "fused_batch" (several
    runs, each with a fused decoder: one C++ call for all, engine.fused_batch) or
    "batched" (one forward of the engine for all of them)."""
    fused = [decoder.fused_for(run.options) is not None for run in runs]
    if len(runs) == 1 and fused[0]:
        return "fused"
    if len(runs) > 1 and decoder.fused_batch and all(fused):
        return "fused_batch"
    return "batched"


def precision_label(model: torch.nn.Module, weights: str) -> str:
    """"gguf", "int8", "bf16", or the model's own dtype ("fp32", "bf16") for its own tensors."""
    if weights != "fp32":
        return weights
    return {torch.float32: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16"}.get(
        model.embed.weight.dtype, str(model.embed.weight.dtype).replace("torch.", ""))


def kv_element_bytes(model: torch.nn.Module) -> int:
    """Bytes of one stored K or V element, read from a cache the model makes (one slot)."""
    return model.new_cache(1).layers[0].k.element_size()


def step_shape(model: torch.nn.Module, weights: Optional[str] = None) -> StepShape:
    """The StepShape of a loaded model (models.forward.CausalLM) decoding with its matrices in
    `weights` (None: served_weights), from the tensors that step reads (see the module doc)."""
    from engine import quantized
    from models.layers import Linear
    from models.moe import Experts

    weights = served_weights(model) if weights is None else quantized.check_weights(weights)
    table = quantized.weights_of(model, weights).table if weights != "fp32" else {}
    config = model.config
    embed = model.embed.weight
    expert_ids, expert_bytes, expert_weights = set(), 0, 0
    for module in model.modules():
        if isinstance(module, Experts):
            for p in module.parameters():
                expert_ids.add(id(p))
                expert_bytes += p.numel() * p.element_size()
                expert_weights += p.numel() if p.dim() >= 2 else 0
    matrix_bytes = matrix_weights = 0
    counted = set(expert_ids)

    def matrix(key, weight: torch.Tensor) -> None:
        nonlocal matrix_bytes, matrix_weights
        copy = table.get(key)
        matrix_bytes += copy.nbytes if copy is not None else weight.numel() * weight.element_size()
        matrix_weights += weight.numel()
        counted.add(id(weight))

    for module in model.modules():
        if isinstance(module, Linear) and id(module.weight) not in counted:
            matrix(module, module.weight)
    head = model.lm_head_weight()
    matrix(model, head)
    head_reads_embed = head is embed and model not in table
    counted.add(id(embed))            # looked up by rows (embed_row_bytes), or read as the head
    other_bytes = other_weights = 0
    for p in model.parameters():      # norms, biases, anything else a step reads whole
        if id(p) not in counted:
            counted.add(id(p))
            other_bytes += p.numel() * p.element_size()
            other_weights += p.numel() if p.dim() >= 2 else 0
    element = kv_element_bytes(model)
    return StepShape(
        n_layers=config.n_layers, n_heads=config.n_heads, head_dim=config.head_dim,
        kv_bytes_per_slot=config.kv_layer_bytes(1, element),
        capacities=tuple(config.kv_layer_capacities()), element_bytes=element,
        dense_weight_bytes=matrix_bytes + other_bytes,
        dense_matmul_weights=matrix_weights + other_weights,
        expert_weight_bytes=expert_bytes, expert_matmul_weights=expert_weights,
        n_experts=config.n_experts if expert_ids else 0,
        experts_per_token=config.n_experts_per_tok if expert_ids else 0,
        embed_row_bytes=0 if head_reads_embed else embed.shape[1] * embed.element_size(),
        weights=weights, matrix_bytes=matrix_bytes, matrix_weights=matrix_weights)


def crossing_batch(shape: StepShape, context: int, ridge: float, high: float = 1 << 20) -> Optional[float]:
    """The batch (a real number) where the step's intensity reaches `ridge` FLOP/byte, or None
    when it stays below up to `high` sequences. Intensity grows with B (weights are shared)."""
    def intensity(batch: float) -> float:
        bytes_read, flops = shape.cost(context, batch)
        return flops / bytes_read

    if intensity(1.0) >= ridge:
        return 1.0
    if intensity(high) < ridge:
        return None
    low = 1.0
    for _ in range(60):
        mid = math.sqrt(low * high)
        low, high = (mid, high) if intensity(mid) < ridge else (low, mid)
    return high
