"""Shared primitives: linear layers, RMSNorm, rotary position embedding (RoPE), gated MLP.
Every model family imports these; none re-implements them."""
from __future__ import annotations

import contextlib
import math
import threading
from typing import Callable, Mapping, Optional

import torch
import torch.nn as nn
import torch.nn.functional as F


class Linear(nn.Linear):
    """nn.Linear (same parameters, same state dict) whose product goes through `linear`, so a
    weight provider in use may compute it on its own copy of the weight (see below)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return linear(x, self.weight, self.bias, key=self)


# --- the weight-provider seam --------------------------------------------------------------------
# A weight provider maps a module (a Linear; a CausalLM for its LM head) to a product
# `(x, bias) -> x @ W.T + bias` computed from its own copy of that module's weight: packed into
# another layout, or stored in fewer bytes. A module it does not hold uses its own weight
# (F.linear). Nothing in models/ makes a provider: a decode engine does (engine.packing,
# engine.quantized), and its parity tests bound how far its products may stray from F.linear's.
# The provider is set per thread, around a forward (`with weight_provider(p): model(ids)`), so a
# forward running at the same time on another thread (another visitor's recording, a test
# against transformers) keeps the model's own weights; a Linear's forward receives only x.
Product = Callable[[torch.Tensor, Optional[torch.Tensor]], torch.Tensor]
_PROVIDER = threading.local()   # .value: the provider of this thread, or None


def linear(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor] = None,
           key: object = None) -> torch.Tensor:
    """F.linear(x, weight, bias), or the product this thread's weight provider holds for `key`."""
    provider = getattr(_PROVIDER, "value", None)
    product = provider.get(key) if provider is not None else None
    if product is None:
        return F.linear(x, weight, bias)
    return product(x, bias)


@contextlib.contextmanager
def weight_provider(provider: Optional[Mapping[object, Product]]):
    """Inside the block, on this thread only, every module `provider` holds computes its product
    with the provider's (None or {}: every module its own weight)."""
    before = getattr(_PROVIDER, "value", None)
    _PROVIDER.value = provider or None
    try:
        yield
    finally:
        _PROVIDER.value = before


class RMSNorm(nn.Module):
    """x / rms(x) * w, computed in fp32 whatever the activation dtype (as Llama and Gemma do).

    unit_offset=True is Gemma's variant: the stored weight is a delta around 1, the scale is
    (1 + w), and the multiply happens in fp32 before casting back (Gemma3RMSNorm)."""

    def __init__(self, dim: int, eps: float = 1e-6, unit_offset: bool = False):
        super().__init__()
        self.eps = eps
        self.unit_offset = unit_offset
        self.weight = nn.Parameter(torch.zeros(dim) if unit_offset else torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dtype == torch.float32:
            # one fused kernel on the fp32 path: decode speed on CPU is dominated by op count
            weight = 1.0 + self.weight if self.unit_offset else self.weight
            return F.rms_norm(x, (x.shape[-1],), weight, self.eps)
        normed = F.rms_norm(x.float(), (x.shape[-1],), None, self.eps)
        if self.unit_offset:
            return (normed * (1.0 + self.weight.float())).to(x.dtype)
        return self.weight * normed.to(x.dtype)


# ---------------------------------------------------------------------------------------------
# RoPE, in the Hugging Face "rotate_half" layout: dimension i is paired with i + head_dim/2
# (not the interleaved (2i, 2i+1) layout of the original paper / Meta's reference code).

def rope_inv_freq(head_dim: int, base: float, scaling: Optional[dict] = None) -> torch.Tensor:
    """theta_i = base^(-2i/d) for i = 0 .. d/2-1, in fp32, with optional context scaling.
    Computed exactly as transformers does so logits match to the last bits."""
    exponents = torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim
    inv_freq = 1.0 / (base ** exponents)
    if scaling is None:
        return inv_freq
    kind = scaling.get("rope_type")
    if kind == "linear":  # position interpolation: every frequency slowed by `factor`
        return inv_freq / scaling["factor"]
    if kind == "llama3":  # Llama 3.1: slow only the low frequencies, blend in between
        factor = scaling["factor"]
        low, high = scaling["low_freq_factor"], scaling["high_freq_factor"]
        old_ctx = scaling["original_max_position_embeddings"]
        wavelen = 2 * math.pi / inv_freq
        scaled = torch.where(wavelen > old_ctx / low, inv_freq / factor, inv_freq)
        smooth = (old_ctx / wavelen - low) / (high - low)
        blended = (1 - smooth) * scaled / factor + smooth * scaled
        medium = (wavelen >= old_ctx / high) & (wavelen <= old_ctx / low)
        return torch.where(medium, blended, scaled)
    raise ValueError(f"unknown RoPE scaling {kind!r}")


def rope_cos_sin(positions: torch.Tensor, inv_freq: torch.Tensor, dtype: torch.dtype):
    """cos, sin of shape (T, head_dim) for absolute integer positions (T,). The angles are
    computed in inv_freq's dtype: fp32 for the model (as transformers does), fp64 when an
    analysis wants the rotation free of rounding."""
    freqs = positions.to(inv_freq.dtype)[:, None] * inv_freq[None, :].to(positions.device)  # (T, d/2)
    emb = torch.cat((freqs, freqs), dim=-1)                                   # (T, d)
    return emb.cos().to(dtype), emb.sin().to(dtype)


def signed_sin(sin: torch.Tensor) -> torch.Tensor:
    """sin with its first half negated, so that transformers' rotate_half(x) * sin equals
    roll(x, d/2) * signed_sin(sin)."""
    half = sin.shape[-1] // 2
    return torch.cat((-sin[..., :half], sin[..., half:]), dim=-1)


def rotate(x: torch.Tensor, cos: torch.Tensor, sin_signed: torch.Tensor) -> torch.Tensor:
    """Rotate each pair (i, i+d/2) of x (..., T, d) by angle position * theta_i, given cos and
    signed_sin(sin) of shape (T, d). Same numbers as transformers' x*cos + rotate_half(x)*sin
    to the last bit (moving the minus sign from x onto the table is exact), in 4 ops instead of
    7: a forward builds the signed table once and rotates q and k of every layer with it."""
    return x * cos + torch.roll(x, x.shape[-1] // 2, dims=-1) * sin_signed


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate x (..., T, d) at the positions cos, sin = rope_cos_sin(...) were made for."""
    return rotate(x, cos, signed_sin(sin))


# ---------------------------------------------------------------------------------------------

ACTIVATIONS = {
    "silu": F.silu,  # SwiGLU (Llama, Mistral, Qwen2)
    "gelu_pytorch_tanh": lambda x: F.gelu(x, approximate="tanh"),  # GeGLU-tanh (Gemma)
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
}


class GatedMLP(nn.Module):
    """down(act(gate(x)) * up(x)). gate and up are stored as one fused matrix (one matmul per
    token instead of two); the loader concatenates the checkpoint's gate_proj and up_proj."""

    def __init__(self, d_model: int, d_ff: int, act: str):
        super().__init__()
        if act not in ACTIVATIONS:
            raise ValueError(f"unsupported activation {act!r}")
        self.act = ACTIVATIONS[act]
        self.d_ff = d_ff
        self.w_gate_up = Linear(d_model, 2 * d_ff, bias=False)
        self.w_down = Linear(d_ff, d_model, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate, up = self.w_gate_up(x).split(self.d_ff, dim=-1)
        # in place into the activation's fresh output: one (T, d_ff) buffer fewer per layer
        return self.w_down(self.act(gate).mul_(up))
