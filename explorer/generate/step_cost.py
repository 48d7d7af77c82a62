"""What one decode step of a loaded model reads and computes (claim C2's model half): bytes read
and FLOPs of a step of B sequences at context t, counted from the model's own tensors (their
element size, so fp32 on a CPU and bf16 on a GPU) and its config (each layer's cache read is the
tokens it holds: min(t, window) for a sliding-window layer; ModelConfig's KV formula), and the
batch at which the step's intensity reaches a device's ridge point.

    shape = step_shape(model)                  # StepShape: weights, cache slot, experts
    bytes_read, flops = shape.cost(context, batch)
    crossing_batch(shape, context, ridge)      # the model's own knee, or None

explorer/generate/roofline.py places these on the measured roof of the device."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import torch


@dataclass(frozen=True)
class StepShape:
    """What one decode step touches, counted from a model's tensors and config."""
    n_layers: int
    n_heads: int
    head_dim: int
    kv_bytes_per_slot: int        # one layer's K and V of one token (ModelConfig.kv_layer_bytes)
    capacities: tuple             # per layer: the tokens its cache holds at most (None: all)
    element_bytes: int            # of the model's dtype (weights and cache)
    dense_weight_bytes: int       # read once per step whatever B (all but routed experts and
                                  # an untied input embedding, of which a step reads B rows)
    dense_matmul_weights: int     # weights each token multiplies (2-D tensors, LM head included)
    expert_weight_bytes: int = 0  # every routed expert of every MoE layer
    expert_matmul_weights: int = 0
    n_experts: int = 0
    experts_per_token: int = 0
    embed_row_bytes: int = 0      # one row of an untied input embedding (0: tied, the head reads it)

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


def step_shape(model: torch.nn.Module) -> StepShape:
    """The StepShape of a loaded model (models.forward.CausalLM), from its tensors."""
    from models.moe import Experts

    config = model.config
    embed = model.embed.weight
    expert_ids, expert_bytes, expert_weights = set(), 0, 0
    for module in model.modules():
        if isinstance(module, Experts):
            for p in module.parameters():
                expert_ids.add(id(p))
                expert_bytes += p.numel() * p.element_size()
                expert_weights += p.numel() if p.dim() >= 2 else 0
    dense_bytes = dense_weights = 0
    tied = not hasattr(model, "lm_head")
    for p in model.parameters():          # each tensor once (a tied head is the embedding)
        if id(p) in expert_ids:
            continue
        if p is embed and not tied:
            continue                      # an untied embedding is looked up, not multiplied
        dense_bytes += p.numel() * p.element_size()
        dense_weights += p.numel() if p.dim() >= 2 else 0
    element = model.element_size()
    return StepShape(
        n_layers=config.n_layers, n_heads=config.n_heads, head_dim=config.head_dim,
        kv_bytes_per_slot=config.kv_layer_bytes(1, element),
        capacities=tuple(config.kv_layer_capacities()), element_bytes=element,
        dense_weight_bytes=dense_bytes, dense_matmul_weights=dense_weights,
        expert_weight_bytes=expert_bytes, expert_matmul_weights=expert_weights,
        n_experts=config.n_experts if expert_ids else 0,
        experts_per_token=config.n_experts_per_tok if expert_ids else 0,
        embed_row_bytes=0 if tied else embed.shape[1] * embed.element_size())


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
