"""The logit lens: what the model would say if it stopped after l blocks.

Each recorded residual stream (distribution.Prediction.resid) goes through the model's own final
norm and unembedding, `CausalLM.head` (with Gemma's softcap where the config has one): no second
implementation of either. Layer l = 0 reads the embeddings, l = L the last block's output,
which is what the forward's own head read, in the same (1, 1, d) shape at the last position, so
`through_depth(...)[L]` equals the model's logits exactly (tests/checkpoints check it on both
real models, bit for bit).

`chart` reads every kept position of every layer (the layer x position picture: the top token
and its probability); `ranks` reads the last position only, for chosen tokens: their rank and
probability at every layer, and the first layer from which a token stays the top one (where it
"takes the lead" for good).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np
import torch

from explorer.nexttoken.distribution import Prediction
from models.forward import CausalLM


@dataclass(frozen=True)
class LensChart:
    top: np.ndarray           # (L + 1, P) int: the lens's top token at each layer and position
    top_p: np.ndarray         # (L + 1, P) its probability
    first_position: int       # position of column 0


@torch.inference_mode()
def layer_logits(model: CausalLM, prediction: Prediction, layer: int) -> torch.Tensor:
    """(V,) the lens's logits at the last position after `layer` blocks (0 .. L)."""
    row = prediction.resid[layer, -1:].unsqueeze(0).to(model.embed.weight)   # (P, d) -> (1, 1, d)
    return model.head(row)[0, -1].float().cpu()


@torch.inference_mode()
def chart(model: CausalLM, prediction: Prediction) -> LensChart:
    """Top token and probability of the lens at every layer and kept position: one head of
    (1, P, d) per layer, reduced to its top-1 before the next (only one (P, V) at a time)."""
    tops, probs = [], []
    for layer in range(prediction.n_layers + 1):
        rows = prediction.resid[layer].unsqueeze(0).to(model.embed.weight)   # (P, d) -> (1, P, d)
        p = torch.softmax(model.head(rows)[0].float(), dim=-1)              # (P, V)
        value, index = p.max(dim=-1)
        tops.append(index.cpu().numpy())
        probs.append(value.cpu().numpy())
    return LensChart(np.stack(tops), np.stack(probs).astype(np.float64), prediction.lens_first)


@dataclass(frozen=True)
class Ranks:
    tokens: tuple[int, ...]
    rank: np.ndarray          # (L + 1, n) int: 0 = the lens's most likely token at that layer
    prob: np.ndarray          # (L + 1, n) probability under the lens's softmax
    top: np.ndarray           # (L + 1,) int: the lens's top token at each layer

    def lead_layer(self, i: int) -> Optional[int]:
        """The first layer from which tokens[i] is the lens's top token at every later layer;
        None when it is not the top at the last layer."""
        first = None
        for layer in range(self.rank.shape[0] - 1, -1, -1):
            if self.rank[layer, i] != 0:
                break
            first = layer
        return first


@torch.inference_mode()
def ranks(model: CausalLM, prediction: Prediction, tokens: Sequence[int]) -> Ranks:
    """Rank and probability of each of `tokens` at the last position, after every layer."""
    tokens = tuple(int(t) for t in tokens)
    index = torch.tensor(tokens, dtype=torch.long)
    rank, prob, top = [], [], []
    for layer in range(prediction.n_layers + 1):
        logits = layer_logits(model, prediction, layer)
        p = torch.softmax(logits, dim=-1)
        chosen = logits[index]
        # rank = how many tokens have a strictly larger logit (ties share the better rank)
        rank.append((logits.unsqueeze(0) > chosen.unsqueeze(1)).sum(dim=1).numpy())
        prob.append(p[index].double().numpy())
        top.append(int(torch.argmax(logits)))
    return Ranks(tokens, np.stack(rank), np.stack(prob), np.array(top))


def agreement(chart_: LensChart, final_top: Sequence[int]) -> np.ndarray:
    """(L + 1,) the share of kept positions where the lens's top token at that layer is the
    model's own top token there (`final_top`: the last layer's row of the chart)."""
    final = np.asarray(final_top)
    return (chart_.top == final[None, :]).mean(axis=1)
