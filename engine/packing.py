"""Packed weights for the batched steps: every linear layer's weight copied once into oneDNN's
blocked layout (models/layers.py Linear).

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

from models.forward import CausalLM
from models.layers import Linear, can_pack, pack_weight

# The copies cost memory (SmolLM2: 540 MB). A model whose LM head is larger than
# HEAD_PACK_MAX_BYTES packs nothing: its head is most of its step, so the rest alone gains
# little for the memory (Gemma 3 270M, a 671 MB head of 262,144 x 640: its blocks packed save
# a tenth of a 30-run step for 382 MiB, and take the memory ceiling of docs/HARDENING.md to
# within 39 MB of its 4,096 MB). EXPLORER_PACKED=0: no packing.
PACKED = os.environ.get("EXPLORER_PACKED", "1") != "0"
HEAD_PACK_MAX_BYTES = 256 * 2 ** 20


def pack_model(model: CausalLM, rows_hint: int = 32) -> dict:
    """{module: packed weight} for every Linear of the model and {model: its packed LM head};
    {} where packing is not available (not the CPU, not fp32, no oneDNN) or the head is larger
    than HEAD_PACK_MAX_BYTES: every product then stays F.linear."""
    head = model.lm_head_weight()
    if not can_pack(model.embed.weight) or head.nbytes > HEAD_PACK_MAX_BYTES:
        return {}
    table = {m: pack_weight(m.weight, rows_hint) for m in model.modules() if isinstance(m, Linear)}
    table[model] = pack_weight(head, rows_hint)
    return table
