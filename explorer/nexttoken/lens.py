"""The logit lens: what the model would say if it stopped after l blocks.

Each recorded residual stream (distribution.Prediction.resid) goes through the model's own final
norm and unembedding, `CausalLM.head` (with Gemma's softcap where the config has one): no second
implementation of either. Layer l = 0 reads the embeddings, l = L the last block's output,
which is what the forward's own head read, in the same (1, 1, d) shape at the last position, so
`layer_logits(model, prediction, L)` equals the model's logits exactly (tests/checkpoints check
it on both real models, bit for bit).

`read` reads every kept position of every layer in one pass: the chart (the layer x position
picture: the top token and its probability) and, at the last position, for chosen tokens their
rank and probability at every layer, and the first layer from which a token stays the top one
(where it "takes the lead" for good). `chart` and `ranks` are its two halves.
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


# Rows read through the head in one call: the head's weight (Gemma's 262,144 x 640 unembedding,
# 671 MB in fp32) is read once per call, so reading every layer's rows together costs a few
# weight reads instead of one per layer (Gemma: 19 layers x 12 positions in 2 calls, about half
# the time of 19). 128 rows keep a call's (rows, V) logits at 128 MB for Gemma.
CHUNK_ROWS = 128


def _layer_blocks(prediction: Prediction) -> list[range]:
    """Consecutive layers whose kept rows together stay within CHUNK_ROWS (at least one layer)."""
    per = max(1, CHUNK_ROWS // prediction.resid.shape[1])
    n = prediction.n_layers + 1
    return [range(first, min(n, first + per)) for first in range(0, n, per)]


@dataclass(frozen=True)
class LensRead:
    """The lens at every layer: the chart, and at the last position the rank and probability of
    chosen tokens (`ranks`). Rows are read through the head several layers at once; the last
    layer's last position is the forward's own logits (`layer_logits(model, prediction, L)`
    equals them bit for bit, tests/checkpoints), every other row the head's arithmetic on the
    recorded row, read in a call of several rows (a product of another shape may round its last
    bits differently: 1.5e-5 on logits of about 30, measured on Gemma 3)."""
    chart: "LensChart"
    ranks: "Ranks"


@torch.inference_mode()
def read(model: CausalLM, prediction: Prediction, tokens: Sequence[int]) -> LensRead:
    """The chart and the ranks of `tokens` from one pass over the layers' rows."""
    tokens = tuple(int(t) for t in tokens)
    index = torch.tensor(tokens, dtype=torch.long)
    P = prediction.resid.shape[1]
    tops, top_ps, rank, prob, top = [], [], [], [], []
    for block in _layer_blocks(prediction):
        rows = prediction.resid[block.start:block.stop].reshape(1, -1, prediction.resid.shape[-1])
        logits = model.head(rows.to(model.embed.weight))[0].float().cpu()          # (layers * P, V)
        if block.stop == prediction.n_layers + 1:
            logits[-1] = prediction.logits          # the model's own last row (bit-equal to the lens's)
        # the top token's probability exp(max - logsumexp): the softmax's value without its (rows, V)
        value, where = logits.max(dim=-1)
        p_top = torch.exp(value - torch.logsumexp(logits, dim=-1))
        tops.append(where.reshape(len(block), P).numpy())
        top_ps.append(p_top.reshape(len(block), P).double().numpy())
        last = logits.reshape(len(block), P, -1)[:, -1]                              # (layers, V)
        chosen = last[:, index]                                                      # (layers, n)
        # rank = how many tokens have a strictly larger logit (ties share the better rank)
        rank.append(np.stack([(row.unsqueeze(0) > c.unsqueeze(1)).sum(dim=1).numpy()
                              for row, c in zip(last, chosen)]))
        prob.append(torch.exp(chosen - torch.logsumexp(last, dim=-1, keepdim=True)).double().numpy())
        top.append(where.reshape(len(block), P)[:, -1].numpy())
    chart_ = LensChart(np.concatenate(tops), np.concatenate(top_ps), prediction.lens_first)
    ranks_ = Ranks(tokens, np.concatenate(rank), np.concatenate(prob), np.concatenate(top))
    return LensRead(chart_, ranks_)


def chart(model: CausalLM, prediction: Prediction) -> "LensChart":
    """Top token and probability of the lens at every layer and kept position."""
    return read(model, prediction, ()).chart


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


def ranks(model: CausalLM, prediction: Prediction, tokens: Sequence[int]) -> Ranks:
    """Rank and probability of each of `tokens` at the last position, after every layer."""
    return read(model, prediction, tokens).ranks


def agreement(chart_: LensChart, final_top: Sequence[int]) -> np.ndarray:
    """(L + 1,) the share of kept positions where the lens's top token at that layer is the
    model's own top token there (`final_top`: the last layer's row of the chart)."""
    final = np.asarray(final_top)
    return (chart_.top == final[None, :]).mean(axis=1)
