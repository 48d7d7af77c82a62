"""The real q, k, v of one attention head, taken from a forward of the loaded model through its
recording points, together with the mask that layer used (its own MaskSpec restricted by the
visitor's choice, explorer.masks.choose, as ForwardContext made it)."""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Optional, Sequence

import torch

from explorer import prompts
from explorer.inputs import whole_number
from explorer.locales import Term
from models.attention import MaskSpec
from models.forward import Recorder, RunOptions

# the prompt the tab shows first and the claims board captures
DEFAULT_PROMPT = ("FlashAttention computes exact attention in tiles: the score matrix never leaves "
                  "the chip, only the output is written back to memory.")
MIN_N = 8
MAX_N_CPU = 512      # one forward of n tokens, then an n x n naive matrix per head: ~1 s here
MAX_N_GPU = 2048


def max_n(device: torch.device | str) -> int:
    return MAX_N_GPU if torch.device(device).type == "cuda" else MAX_N_CPU


def fill_to(ids: Sequence[int], n: int, bos_id: Optional[int] = None) -> list[int]:
    """Exactly n token ids: the prompt's first n, or the prompt repeated (its BOS kept only at
    the start) until there are n."""
    ids = [int(i) for i in ids]
    head = ids[:1] if bos_id is not None and ids and ids[0] == bos_id else []
    body = ids[len(head):] or ids
    out = list(head)
    while len(out) < n:
        out.extend(body[: n - len(out)])
    return out[:n]


def prompt_ids(tokenizer, prompt: Any, n: int) -> list[int]:
    """Exactly n token ids of a prompt: its first n tokens, or the prompt repeated (fill_to)."""
    ids = prompts.encode(tokenizer, prompt, n, truncate=True, name=Term("inputs.name.prompt"))
    return fill_to(ids, n, bos_id=tokenizer.bos_token_id)


@dataclass(frozen=True)
class HeadCapture:
    """One head of one layer as that layer's attention received it (after RoPE)."""
    layer: int
    head: int
    kv_head: int                 # the KV head this query head reads (grouped-query attention)
    q: torch.Tensor              # (n, D) fp32
    k: torch.Tensor              # (n, D) fp32
    v: torch.Tensor              # (n, D) fp32
    positions: torch.Tensor      # (n,) absolute positions of queries and keys
    mask: MaskSpec               # the MaskSpec the forward used for this layer
    scale: float
    softcap: Optional[float]     # attention-logit softcap of the checkpoint (None for both models)
    token_ids: tuple
    seconds: float = 0.0         # wall time of the forward that captured it

    @property
    def n(self) -> int:
        return self.q.shape[0]

    @property
    def head_dim(self) -> int:
        return self.q.shape[1]


def check_layer_head(config, layer: Any, head: Any) -> tuple[int, int]:
    layer = whole_number(layer, Term("flash.name.layer"), 0, config.n_layers - 1)
    head = whole_number(head, Term("flash.name.head"), 0, config.n_heads - 1)
    return layer, head


@torch.inference_mode()
def capture(model, ids: Sequence[int], layer: int, head: int,
            override: Optional[MaskSpec] = None) -> HeadCapture:
    """One forward of `ids` with a Recorder on q, k, v of `layer`; returns `head`'s slice."""
    config = model.config
    layer, head = check_layer_head(config, layer, head)
    start = time.perf_counter()
    x = torch.tensor([list(ids)], dtype=torch.long, device=model.embed.weight.device)
    recorder = Recorder(["q", "k", "v"], layers=[layer])
    _, ctx = model(x, options=RunOptions(mask=override, last_logits_only=True), recorder=recorder,
                   return_context=True)
    kv_head = head // config.n_rep
    q = recorder.get("q", layer)[0, head].float()                          # (n, D)
    k = recorder.get("k", layer)[0, kv_head].float()                       # (n, D)
    v = recorder.get("v", layer)[0, kv_head].float()                       # (n, D)
    return HeadCapture(layer=layer, head=head, kv_head=kv_head, q=q, k=k, v=v,
                       positions=ctx.positions.cpu(), mask=ctx.layer_masks[layer],
                       scale=config.attn_scale, softcap=config.attn_logit_softcapping,
                       token_ids=tuple(int(i) for i in ids), seconds=time.perf_counter() - start)
