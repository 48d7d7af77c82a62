"""A person's guess of the next token, matched to the tokenizer, and a class's guesses tallied.

A guess is typed as a word ("Paris"). After a prompt the next word usually follows a space, and
the tokenizer spells " Paris" and "Paris" as different tokens, so both spellings are tried and
the guess is scored as the one the model finds more likely (its `spelled` says which). A word of
several tokens is scored by its first token, the only one the next step decides; its `pieces`
say so, and the page names the pieces.

The tally never shows a student's text by itself: a guessed token is named only when at least
MIN_NAMED students guessed it or it is among the model's top NAMED_TOP tokens (a word the model
itself proposes reveals nothing of a person); every other guess counts in one "other guesses"
number.
"""
from __future__ import annotations

import unicodedata
from collections import Counter
from dataclasses import dataclass
from typing import Any, Optional, Sequence

import torch

from explorer.inputs import InputError

MAX_GUESS_CHARS = 40
MIN_NAMED = 2
NAMED_TOP = 20


@dataclass(frozen=True)
class Match:
    token: int                    # the token the guess is scored as
    pieces: tuple[int, ...]       # the guess's tokens in that spelling (len > 1: a word of pieces)
    spelled: str                  # the spelling scored: " word" or "word"


def clean_guess(value: Any) -> str:
    """The guess as typed: control and format characters removed, outer spaces stripped; an
    InputError for an empty or over-long one."""
    if not isinstance(value, str) or len(value) > 4 * MAX_GUESS_CHARS:
        raise InputError("next.err.guess", limit=MAX_GUESS_CHARS)
    kept = "".join(ch for ch in value if unicodedata.category(ch)[0] != "C").strip()
    if not kept or len(kept) > MAX_GUESS_CHARS:
        raise InputError("next.err.guess", limit=MAX_GUESS_CHARS)
    return kept


def match(tokenizer: Any, guess: str, probs: torch.Tensor) -> Match:
    """The guess's token under `probs` (V,): of " guess" and "guess", the spelling whose first
    token is more likely."""
    best: Optional[Match] = None
    for spelled in (" " + guess, guess):
        pieces = tuple(int(i) for i in tokenizer(spelled, add_special_tokens=False)["input_ids"])
        if not pieces or pieces[0] >= probs.numel():
            continue
        candidate = Match(pieces[0], pieces, spelled)
        if best is None or float(probs[candidate.token]) > float(probs[best.token]):
            best = candidate
    if best is None:
        raise InputError("next.err.guess", limit=MAX_GUESS_CHARS)
    return best


@dataclass(frozen=True)
class Tally:
    named: tuple[tuple[int, int, float], ...]   # (token, students, model probability), most guessed first
    others: int                                 # guesses not named (each a token fewer than MIN_NAMED chose)
    total: int
    class_top: Optional[int]                    # the class's most guessed token, if it is named
    class_mass: float                           # the model's probability of what the class guessed, averaged


def tally(tokens: Sequence[int], probs: torch.Tensor) -> Tally:
    """The class's guesses (one token each) under the model's distribution `probs` (V,)."""
    counts = Counter(int(t) for t in tokens)
    top = set(torch.topk(probs, min(NAMED_TOP, probs.numel())).indices.tolist())
    named = sorted(((t, n, float(probs[t])) for t, n in counts.items() if n >= MIN_NAMED or t in top),
                   key=lambda row: (-row[1], -row[2], row[0]))
    total = sum(counts.values())
    others = total - sum(n for _, n, _ in named)
    ranked = counts.most_common(2)
    unique_top = ranked and (len(ranked) == 1 or ranked[0][1] > ranked[1][1])
    class_top = ranked[0][0] if unique_top and any(t == ranked[0][0] for t, _, _ in named) else None
    mass = sum(float(probs[t]) * n for t, n in counts.items()) / total if total else 0.0
    return Tally(tuple(named), others, total, class_top, mass)
