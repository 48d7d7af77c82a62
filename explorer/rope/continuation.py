"""Greedy continuation after the first tokens of the long text: the model as trained beside the
same model with a changed RoPE base (the chosen layers), both decoded greedily."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

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


def check_log10_base(log10_base) -> float:
    """10 ** log10_base, for log10_base in [MIN_LOG10_BASE, MAX_LOG10_BASE]."""
    exponent = finite_number(log10_base, Term("rope.name.log10_base"))
    if not MIN_LOG10_BASE <= exponent <= MAX_LOG10_BASE:
        raise InputError("inputs.between", name=Term("rope.name.log10_base"), low=f"{MIN_LOG10_BASE:g}",
                         high=f"{MAX_LOG10_BASE:g}", value=f"{exponent:g}")
    return float(10 ** exponent)


@torch.inference_mode()
def greedy(model, tokenizer, ids, options, n_new: int) -> str:
    steps = generate(model, list(ids), SamplingParams(max_new_tokens=n_new), options=options)
    return tokenizer.decode([step.token_id for step in steps])


def run(model, tokenizer, text_in: str, log10_base, apply_to, n_tokens, n_new) -> Continuation:
    config = model.config
    base = check_log10_base(log10_base)
    options = base_options(config, base, apply_to)
    n_tokens = whole_number(n_tokens, Term("rope.name.tokens"), MIN_SWEEP_TOKENS, MAX_SWEEP_TOKENS)
    n_new = whole_number(n_new, Term("rope.name.new_tokens"), MIN_NEW_TOKENS, MAX_NEW_TOKENS)
    ids = capped_ids(tokenizer, text_in, n_tokens)
    return Continuation(
        base=base, trained=trained_base(config, apply_to), trained_pair=trained_base_pair(config),
        tail=tokenizer.decode(ids[-TAIL_TOKENS:]),
        trained_text=greedy(model, tokenizer, ids, trained_options(config, apply_to), n_new),
        base_text=greedy(model, tokenizer, ids, options, n_new))


def _cell(value: str) -> str:
    """Text for one Markdown table cell: pipes escaped, newlines shown as ⏎, never empty."""
    return value.replace("|", "\\|").replace("\n", " ⏎ ").strip() or "∅"


def summary(result: Continuation, lang: str) -> str:
    return text("rope.cont.result", lang, tail=_cell(result.tail),
                trained=trained_text(result.trained, result.trained_pair, lang),
                trained_text=_cell(result.trained_text), base=base_label(result.base),
                base_text=_cell(result.base_text))
