"""The Attention tab's experiments, one module each (run -> typed result -> figures/summary):

- maps: one layer's attention probabilities under a chosen mask, the mask beside them and the
  next-token effect of that mask;
- groups: which query heads share a KV head (grouped-query attention);
- sinks: attention mass on the first tokens, every layer x head;
- streaming: perplexity along a long text under full cache, window only and sinks + window;
- receptive_field: how far back a token can reach the last position, layer by layer;
- costs: score entries and cache bytes of local vs global layers as n grows;
- evidence: the board's evidence for claims C5, C8 and C10, from the experiments above.

What they share lives here: the token limits, the long text the experiments read, and the way a
long experiment runs: as a generator (`steps(...)`) that yields a `Progress` after every
forward pass and returns its result, so that its caller can stop it between two forwards
(Gradio closes a cancelled generator at its next yield), with a `Deadline` checked before each
forward. `run(...)` is the same computation drained to its result.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Generator, Optional, TypeVar

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


# ----------------------------------------------------------------------------- long runs

T = TypeVar("T")


@dataclass(frozen=True)
class Progress:
    """Where a long experiment stands: `done` of `total` forward passes made. A `steps(...)`
    generator yields Progress(0, total) once its inputs are checked, then one after each
    forward."""
    done: int
    total: int
    stage: str = ""            # the part of the experiment running (a policy name), "" if one

    @property
    def fraction(self) -> float:
        return self.done / self.total if self.total else 1.0


class TimeLimitReached(InputError):
    """A long experiment reached its time limit between two forward passes."""

    def __init__(self, seconds: float, done: int, total: int):
        super().__init__("attention.err.time_limit", s=seconds, done=done, total=total)


class Deadline:
    """A time limit checked between forward passes: `check(done, total)` raises
    TimeLimitReached once `seconds` have passed since the Deadline was made."""

    def __init__(self, seconds: float):
        self.seconds = float(seconds)
        self.end = time.monotonic() + self.seconds

    def check(self, done: int, total: int) -> None:
        if time.monotonic() >= self.end:
            raise TimeLimitReached(self.seconds, done, total)


def check_deadline(deadline: Optional[Deadline], done: int, total: int) -> None:
    if deadline is not None:
        deadline.check(done, total)


def drain(steps: Generator[Any, None, T], each: Optional[Callable[[Any], None]] = None) -> T:
    """Run a `steps(...)` generator to its end and return its result; `each(step)` is called
    with every value it yields (a progress report)."""
    while True:
        try:
            step = next(steps)
        except StopIteration as finished:
            return finished.value
        if each is not None:
            each(step)
