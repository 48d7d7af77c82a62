"""Greedy continuation after the first tokens of the long text: the model as trained beside the
same model with a changed RoPE base (the chosen layers), both decoded greedily, one token at a
time so that the caller can stop between two forwards and a time limit ends the decoding."""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Iterator, Optional, Union

import torch

from explorer.inputs import InputError, finite_number, whole_number
from explorer.locales import Term, text
from explorer.rope.capture import capped_ids
from explorer.rope.frequencies import base_label
from explorer.rope.sweep import MAX_SWEEP_TOKENS, MIN_SWEEP_TOKENS, base_options, trained_base, \
    trained_base_pair, trained_options, trained_text
from models.generate import SamplingParams, generate

MIN_NEW_TOKENS, MAX_NEW_TOKENS = 4, 48        # the tab's sliders: 4 .. 48 new tokens,
MIN_LOG10_BASE, MAX_LOG10_BASE = 3.0, 8.0     # bases 1k .. 100M
TAIL_TOKENS = 40           # the end of the prompt shown above the table


@dataclass(frozen=True)
class Continuation:
    base: float                    # the changed base
    trained: Optional[float]       # the trained base of the chosen layers (None: Gemma's two)
    trained_pair: tuple[float, float]
    tail: str                      # the prompt's last TAIL_TOKENS tokens, decoded
    trained_text: str              # greedy continuation with the trained base(s)
    base_text: str                 # greedy continuation with `base`
    trained_ids: tuple[int, ...] = ()
    base_ids: tuple[int, ...] = ()
    n_new: int = 0                 # tokens asked for, per continuation
    time_limit_s: Optional[float] = None
    timed_out: bool = False        # the time limit ended the decoding early

    @property
    def agreeing(self) -> int:
        """Tokens the two continuations share from the start."""
        same = 0
        for trained, changed in zip(self.trained_ids, self.base_ids):
            if trained != changed:
                break
            same += 1
        return same


@dataclass(frozen=True)
class ContinuationStep:
    """Progress between two forwards: `done` of `total` new tokens decoded in all."""
    done: int
    total: int


def check_log10_base(log10_base) -> float:
    """10 ** log10_base, for log10_base in [MIN_LOG10_BASE, MAX_LOG10_BASE]."""
    exponent = finite_number(log10_base, Term("rope.name.log10_base"))
    if not MIN_LOG10_BASE <= exponent <= MAX_LOG10_BASE:
        raise InputError("inputs.between", name=Term("rope.name.log10_base"), low=f"{MIN_LOG10_BASE:g}",
                         high=f"{MAX_LOG10_BASE:g}", value=f"{exponent:g}")
    return float(10 ** exponent)


def greedy_ids(model, ids, options, n_new: int, should_stop) -> Iterator[int]:
    """Greedy tokens after `ids`, one per forward, until n_new or should_stop(). Inference mode
    is entered around each forward, not across the yields: a web server may resume this
    generator on another thread, and the mode is per thread."""
    steps = generate(model, list(ids), SamplingParams(max_new_tokens=n_new), options=options,
                     should_stop=should_stop)
    while True:
        with torch.inference_mode():
            step = next(steps, None)
        if step is None:
            return
        yield step.token_id


def steps(model, tokenizer, text_in: str, log10_base, apply_to, n_tokens, n_new,
          time_limit_s: Optional[float] = None) -> Iterator[Union[ContinuationStep, Continuation]]:
    """A ContinuationStep after every decoded token, the Continuation last. Past `time_limit_s`
    from the start no further forward begins (the texts so far are kept, `timed_out`). Every
    input is checked before the first forward."""
    started = time.monotonic()
    config = model.config
    base = check_log10_base(log10_base)
    options = base_options(config, base, apply_to)
    n_tokens = whole_number(n_tokens, Term("rope.name.tokens"), MIN_SWEEP_TOKENS, MAX_SWEEP_TOKENS)
    n_new = whole_number(n_new, Term("rope.name.new_tokens"), MIN_NEW_TOKENS, MAX_NEW_TOKENS)
    ids = capped_ids(tokenizer, text_in, n_tokens)
    out_of_time = [False]

    def should_stop() -> bool:
        if time_limit_s is not None and time.monotonic() - started >= time_limit_s:
            out_of_time[0] = True
        return out_of_time[0]

    decoded: list[list[int]] = [[], []]
    for run_index, run_options in enumerate((trained_options(config, apply_to), options)):
        for token in greedy_ids(model, ids, run_options, n_new, should_stop):
            decoded[run_index].append(token)
            yield ContinuationStep(len(decoded[0]) + len(decoded[1]), 2 * n_new)
    yield Continuation(
        base=base, trained=trained_base(config, apply_to), trained_pair=trained_base_pair(config),
        tail=tokenizer.decode(ids[-TAIL_TOKENS:]), trained_text=tokenizer.decode(decoded[0]),
        base_text=tokenizer.decode(decoded[1]), trained_ids=tuple(decoded[0]), base_ids=tuple(decoded[1]),
        n_new=n_new, time_limit_s=time_limit_s, timed_out=out_of_time[0])


def run(model, tokenizer, text_in: str, log10_base, apply_to, n_tokens, n_new,
        time_limit_s: Optional[float] = None) -> Continuation:
    """`steps` driven to the end."""
    for item in steps(model, tokenizer, text_in, log10_base, apply_to, n_tokens, n_new, time_limit_s):
        if isinstance(item, Continuation):
            return item
    raise AssertionError("steps() ends with its Continuation")


def _cell(value: str) -> str:
    """Text for one Markdown table cell: pipes escaped, newlines shown as ⏎, never empty."""
    return value.replace("|", "\\|").replace("\n", " ⏎ ").strip() or "∅"


def summary(result: Continuation, lang: str) -> str:
    out = text("rope.cont.result", lang, tail=_cell(result.tail),
               trained=trained_text(result.trained, result.trained_pair, lang),
               trained_text=_cell(result.trained_text), base=base_label(result.base),
               base_text=_cell(result.base_text))
    compared = min(len(result.trained_ids), len(result.base_ids))
    if compared:
        same = result.agreeing
        key = "rope.cont.same" if same == compared else "rope.cont.differ"
        out += "\n\n" + text(key, lang, same=same, n=compared, first=same + 1)
    if result.timed_out:
        out += "\n\n" + text("rope.cont.timed_out", lang, limit=result.time_limit_s or 0.0,
                              done=len(result.trained_ids) + len(result.base_ids), total=2 * result.n_new)
    return out
