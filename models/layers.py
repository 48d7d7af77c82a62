"""Shared primitives: linear layers, RMSNorm, rotary position embedding (RoPE), gated MLP.
Every model family imports these; none re-implements them."""
from __future__ import annotations

import contextlib
import math
import threading
from typing import Optional

import torch
import torch.nn as nn
import torch.nn.functional as F


class Linear(nn.Linear):
    """nn.Linear (same parameters, same state dict) whose product, on the thread inside
    `packed_products(table)`, uses the table's prepacked copy of its weight (the table is made
    by engine.batched.pack_model).

    Why: a batched decode step (engine.batched) is a few products of B rows against
    every weight, and on the CPU oneDNN's product with a weight packed once into its own blocked
    layout takes 0.6-0.7 of the time of MKL's F.linear at B = 4-32 (measured in docs/BENCHMARKS.md),
    in fp32 (no lower-precision shortcut: the sums differ from F.linear's only by their order,
    ~1e-6 relative). The table is per thread, so every other forward (another visitor's tab,
    a recording, a test against transformers) keeps F.linear while a batched step runs."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return linear(x, self.weight, self.bias, key=self)


def linear(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor] = None,
           key: object = None) -> torch.Tensor:
    """F.linear(x, weight, bias), or the same product on the copy that this thread's table
    (packed_products) holds under `key`, if it holds one: a oneDNN-packed tensor, or a callable
    product on bf16 / int8 weights (engine.quantized)."""
    table = packed_table()
    packed = table.get(key) if table is not None else None
    if packed is None:
        return F.linear(x, weight, bias)
    if isinstance(packed, torch.Tensor):
        return packed_linear(x, packed, bias)
    return packed(x, bias)   # a copy in fewer bytes (engine.quantized.QuantWeight)


_PACKED = threading.local()   # .table: {module: packed weight} on a thread inside packed_products


def packed_linear(x: torch.Tensor, packed: torch.Tensor, bias: Optional[torch.Tensor]) -> torch.Tensor:
    """x @ W.T (+ bias) with W packed by pack_weight: (..., in) -> (..., out)."""
    return torch.ops.mkldnn._linear_pointwise(x, packed, bias, "none", [], "")


def can_pack(weight: torch.Tensor) -> bool:
    """oneDNN packing exists for this weight: CPU, fp32, a torch built with oneDNN."""
    return (weight.device.type == "cpu" and weight.dtype == torch.float32
            and torch.backends.mkldnn.is_available()
            and hasattr(torch.ops.mkldnn, "_reorder_linear_weight"))


def pack_weight(weight: torch.Tensor, rows_hint: int = 32) -> torch.Tensor:
    """A (out, in) weight in oneDNN's blocked layout for products of about `rows_hint` rows
    (any number of rows works): a copy, as large as the weight."""
    return torch.ops.mkldnn._reorder_linear_weight(weight.detach(), rows_hint)


@contextlib.contextmanager
def packed_products(table: Optional[dict]):
    """Inside the block, on this thread only, every Linear found in `table` (and whatever else
    reads it: CausalLM.head, keyed by its model) uses its packed weight."""
    before = getattr(_PACKED, "table", None)
    _PACKED.table = table
    try:
        yield
    finally:
        _PACKED.table = before


def packed_table() -> Optional[dict]:
    """The table in use on this thread (None outside packed_products)."""
    return getattr(_PACKED, "table", None)


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
