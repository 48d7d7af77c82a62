"""The Attention tab's experiments, one module each (run -> typed result -> figures/summary):

- maps: one layer's attention probabilities under a chosen mask, the mask beside them and the
  next-token effect of that mask;
- groups: which query heads share a KV head (grouped-query attention);
- sinks: attention mass on the first tokens, every layer x head;
- streaming: perplexity along a long text under full cache, window only and sinks + window;
- receptive_field: how far back a token can reach the last position, layer by layer;
- costs: score entries and cache bytes of local vs global layers as n grows.

What they share lives here: the token limits and the long text the experiments read.
"""
from __future__ import annotations

from typing import Any

import torch

from explorer.inputs import InputError
from explorer.prompts import CHARS_PER_TOKEN_BOUND, encode
from explorer.texts import long_text

MAX_TOKENS_CPU = 512        # prompt + generated tokens on a CPU (one map stays ~1 s)
MAX_TOKENS_GPU = 2048
LONG_TEXT_MAX = 4096        # tokens of the long text an experiment may read


def max_tokens(device: torch.device | str) -> int:
    return MAX_TOKENS_GPU if torch.device(device).type == "cuda" else MAX_TOKENS_CPU


def long_ids(tokenizer, n_tokens: int) -> list[int]:
    """The first `n_tokens` ids of the shipped long text. Only a prefix of the text is tokenized
    (CHARS_PER_TOKEN_BOUND characters per token asked, far more than one token needs)."""
    ids = encode(tokenizer, long_text()[:n_tokens * CHARS_PER_TOKEN_BOUND], n_tokens, truncate=True)
    if len(ids) < n_tokens:
        raise InputError("attention.err.long_text_short", n=len(ids), asked=n_tokens)
    return ids


def model_title(loaded: Any) -> str:
    """The model's display title (its registry name when the spec has none)."""
    return getattr(loaded.spec, "title", loaded.name)
