"""C16's exactness on random inputs: the tiled path against naive and SDPA across sequence
lengths, block sizes (including sizes that do not divide n) and masks."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch

from models.attention import (MaskSpec, TileVisibility, eager_attention, sdpa_attention,
                              sdpa_mask_for, tiled_attention)

NS = (1, 37, 128, 257)
BLOCKS = ((16, 16), (7, 13), (64, 32))
MASKS = (MaskSpec(), MaskSpec(window=17), MaskSpec(window=17, sinks=3), MaskSpec(causal=False))


@dataclass(frozen=True)
class ExactCase:
    n: int
    block_q: int
    block_k: int
    mask: MaskSpec
    tiled_vs_naive: float
    tiled_vs_sdpa: float
    naive_vs_sdpa: float


@torch.inference_mode()
def random_cases(ns: Sequence[int] = NS, blocks: Sequence[tuple] = BLOCKS,
                 masks: Sequence[MaskSpec] = MASKS, d: int = 64, seed: int = 0) -> list[ExactCase]:
    gen = torch.Generator().manual_seed(seed)
    cases = []
    for n in ns:
        q, k, v = (torch.randn(1, 1, n, d, generator=gen) for _ in range(3))
        pos = torch.arange(n)
        scale = d ** -0.5
        for mask in masks:
            visible = mask.visible(pos, pos)
            naive, _ = eager_attention(q, k, v, visible, scale)
            sdpa = sdpa_attention(q, k, v, sdpa_mask_for(visible, pos, pos), scale)
            for block_q, block_k in blocks:
                tiled, _ = tiled_attention(q, k, v, TileVisibility(mask, pos, pos), scale,
                                           block_q=block_q, block_k=block_k)
                cases.append(ExactCase(n, block_q, block_k, mask,
                                       float((tiled - naive).abs().max()),
                                       float((tiled - sdpa).abs().max()),
                                       float((naive - sdpa).abs().max())))
    return cases
