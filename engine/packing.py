"""Packed weights for the batched steps: every linear layer's weight copied once into oneDNN's
blocked layout, handed to the model's products through its weight-provider seam
(models.layers.weight_provider: a table {module: product}).

While runs decode together, every product of their steps (and of the prefill chunks of runs
joining them) takes such a copy: at 4-32 rows a product takes 0.6-0.7 of the time of MKL's
F.linear on this CPU, in fp32 (the same sums in another order). BatchedDecoder makes the copies
with `pack` (the shared loop calls it on a thread of its own as soon as a second run arrives,
so that a burst of visitors does not wait for them at its first pooled step), else at the first
pooled step, and keeps them until `drop_packed` (the shared loop drops them once it has been
idle for a minute), so a class pressing Start again does not pay the packing (0.3 s) again; on
any other thread (another tab, a recording) the model's products stay F.linear.
"""
from __future__ import annotations

import os
from typing import Optional

import torch

from models.forward import CausalLM
from models.layers import Linear

# The copies cost memory (SmolLM2: 540 MB). A model whose LM head is larger than
# HEAD_PACK_MAX_BYTES packs nothing: its head is most of its step, so the rest alone gains
# little for the memory (Gemma 3 270M, a 671 MB head of 262,144 x 640: its blocks packed save
# a tenth of a 30-run step for 382 MiB, and take the memory ceiling of docs/HARDENING.md to
# within 39 MB of its 4,096 MB). EXPLORER_PACKED=0: no packing.
PACKED = os.environ.get("EXPLORER_PACKED", "1") != "0"
HEAD_PACK_MAX_BYTES = 256 * 2 ** 20


def can_pack(weight: torch.Tensor) -> bool:
    """oneDNN packing exists for this weight: CPU, fp32, a torch built with oneDNN."""
    return (weight.device.type == "cpu" and weight.dtype == torch.float32
            and torch.backends.mkldnn.is_available()
            and hasattr(torch.ops.mkldnn, "_reorder_linear_weight"))


def pack_weight(weight: torch.Tensor, rows_hint: int = 32) -> "PackedWeight":
    """A (out, in) weight in oneDNN's blocked layout for products of about `rows_hint` rows
    (any number of rows works): a copy, as large as the weight."""
    return PackedWeight(torch.ops.mkldnn._reorder_linear_weight(weight.detach(), rows_hint))


class PackedWeight:
    """A product on a packed copy: (x (..., in), bias) -> x @ W.T (+ bias) (..., out).

    Why: a batched decode step is a few products of B rows against every weight, and on the
    CPU oneDNN's product with a weight packed once into its own blocked layout takes 0.6-0.7 of
    the time of MKL's F.linear at B = 4-32 (docs/BENCHMARKS.md), in fp32: the sums differ from
    F.linear's only by their order (~1e-6 relative)."""

    def __init__(self, packed: torch.Tensor):
        self.packed = packed

    def __call__(self, x: torch.Tensor, bias: Optional[torch.Tensor] = None) -> torch.Tensor:
        return torch.ops.mkldnn._linear_pointwise(x, self.packed, bias, "none", [], "")

    @property
    def nbytes(self) -> int:
        return self.packed.nbytes


def pack_model(model: CausalLM, rows_hint: int = 32) -> dict:
    """{module: PackedWeight} for every Linear of the model and {model: its packed LM head};
    {} where packing is not available (not the CPU, not fp32, no oneDNN) or the head is larger
    than HEAD_PACK_MAX_BYTES: every product then stays F.linear."""
    head = model.lm_head_weight()
    if not can_pack(model.embed.weight) or head.nbytes > HEAD_PACK_MAX_BYTES:
        return {}
    table = {m: pack_weight(m.weight, rows_hint) for m in model.modules() if isinstance(m, Linear)}
    table[model] = pack_weight(head, rows_hint)
    return table
