"""Module weights drawn from a torch.Generator of their own, never from torch's process-wide one.

torch.manual_seed(seed) before building a module seeds the generator every thread of the server
shares: another visitor's run that draws from it (or reseeds it, as an unseeded sampler would)
between the seeding and the last draw changes "the same initial weights", and the seeding
changes what that other run draws. Here the module is built as usual and every parameter that
nn.Linear and nn.Embedding drew at construction is drawn again from `generator`, in the order
and from the distributions of their reset_parameters(): the weights are exactly those that
torch.manual_seed(seed) followed by the constructor gives on a quiet process (tests compare
them), so results computed that way (explorer/architecture/norm_training.json) still hold.
"""
from __future__ import annotations

import math
from typing import Callable, TypeVar

import torch
import torch.nn as nn

from models.layers import RMSNorm

M = TypeVar("M", bound=nn.Module)

# modules whose parameters their constructor sets to constants: nothing drawn
CONSTANT_INIT = (nn.LayerNorm, RMSNorm)


@torch.no_grad()
def draw_default_init(module: nn.Module, generator: torch.Generator) -> None:
    """Every nn.Linear's and nn.Embedding's construction-time draws of `module`, again, from
    `generator` (modules() yields submodules in the order the constructors registered them).
    TypeError for a module with parameters of its own whose initialisation is not known here:
    its weights would silently come from the shared generator."""
    for sub in module.modules():
        if isinstance(sub, nn.Linear):
            # nn.Linear.reset_parameters: kaiming_uniform(a=√5) = U(±1/√fan_in), bias the same
            nn.init.kaiming_uniform_(sub.weight, a=math.sqrt(5), generator=generator)
            if sub.bias is not None:
                bound = 1 / math.sqrt(sub.in_features) if sub.in_features > 0 else 0
                nn.init.uniform_(sub.bias, -bound, bound, generator=generator)
        elif isinstance(sub, nn.Embedding):
            nn.init.normal_(sub.weight, generator=generator)
            if sub.padding_idx is not None:
                sub.weight[sub.padding_idx].zero_()
        elif not isinstance(sub, CONSTANT_INIT) and next(sub.parameters(recurse=False), None) is not None:
            raise TypeError(f"{type(sub).__name__} has parameters whose initialisation "
                            "draw_default_init does not know")


def seeded(build: Callable[[], M], seed: int) -> M:
    """build() with every parameter drawn from torch.Generator().manual_seed(seed)."""
    module = build()
    draw_default_init(module, torch.Generator().manual_seed(seed))
    return module
