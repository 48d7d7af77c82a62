"""A visitor's mask: the one place a choice becomes a MaskSpec, and its one description.

A mask is a `models.attention.MaskSpec` (causal ∧ (in window w ∨ one of the first s keys)).
Every tab that lets a visitor pick one (a mask control, or a cache policy, the same three
choices under the names a cache gives them) turns the choice into a MaskSpec through `choose`,
so the rules and their error texts are the same everywhere; every tab that names a mask (a
figure title, a table cell, a cache layer's kind) calls `describe`, so the same mask reads the
same everywhere and in both languages. Masks are evaluated with `MaskSpec.visible`, never by
hand.

    choose("window", 8)                         -> MaskSpec(window=8)
    choose("sinks", 8, 2)                       -> MaskSpec(window=8, sinks=2)
    choose("causal"), choose("full", kinds=POLICIES) -> None (the checkpoint's own masks)
    choose("sinks", 4, 4)                       -> InputError("attention.err.sinks_window")

    describe(MaskSpec(window=8), "zh")          -> "滑动窗口 8"
    describe(None, "en")                        -> "the checkpoint's own masks"
    describe(None, "en", sink_logit=1.5)        -> "causal + sink logit b = 1.5"
    describe_layers(model.layer_masks(), "en")  -> "5 × sliding window 512, 1 × causal"
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional

from explorer.inputs import InputError, choice, whole_number
from explorer.locales import Term, text
from models.attention import MaskSpec

CAUSAL, FULL, WINDOW, SINKS = "causal", "full", "window", "sinks"
# A mask control: the checkpoint's own (causal) masks, a sliding window, or sinks + window.
MASK_KINDS = (CAUSAL, WINDOW, SINKS)
# The same three choices as cache policies: a full cache keeps every key (the causal mask), a
# window cache evicts the oldest, a sinks + window cache keeps the first s keys as well.
POLICIES = (FULL, WINDOW, SINKS)
# The names an error gives the fields of the choice, whichever tab it comes from.
KIND_NAME = Term("attention.name.mask")
POLICY_NAME = Term("generate.name.policy")
WINDOW_NAME = Term("attention.name.window")
SINKS_NAME = Term("attention.name.sinks")


def choose(kind: Any, window: Any = None, sinks: Any = 0, *, kinds: tuple = MASK_KINDS,
           max_window: Optional[int] = None, max_sinks: Optional[int] = None) -> Optional[MaskSpec]:
    """The visitor's choice as the override every layer's own mask is restricted by: None for
    "causal" / "full" (each layer keeps the checkpoint's mask), MaskSpec(window=w) for
    "window", MaskSpec(window=w, sinks=s) for "sinks". `kinds` is the vocabulary the control
    offers (MASK_KINDS, POLICIES, or a tab's longer list whose other entries it handles before
    calling); window and sinks are read only when the kind needs them. Raises InputError: a
    kind outside `kinds`, w outside [1, max_window], s outside [0, max_sinks], no sink, or
    s >= w (a sinks + window mask needs at least one sink and a window wider than its sinks)."""
    kind = choice(kind, POLICY_NAME if FULL in kinds else KIND_NAME, kinds)
    if kind in (CAUSAL, FULL):
        return None
    if kind not in (WINDOW, SINKS):
        raise ValueError(f"{kind!r} is not a mask choose() makes; the caller handles it")
    w = whole_number(window, WINDOW_NAME, 1, max_window)
    if kind == WINDOW:
        return MaskSpec(window=w)
    s = whole_number(sinks, SINKS_NAME, 0, max_sinks)
    if s < 1:
        raise InputError("attention.err.no_sink")
    if s >= w:
        raise InputError("attention.err.sinks_window", s=s, w=w)
    return MaskSpec(window=w, sinks=s)


def describe(mask: Optional[MaskSpec], lang: Optional[str] = "en", *,
             sink_logit: Optional[float] = None) -> str:
    """`mask` in `lang`: "causal", "bidirectional", "sliding window w" or "s sinks + window w".
    None stands for no override: each layer keeps the checkpoint's own mask. A gpt-oss sink
    logit b (an extra logit in every softmax, not a change of which keys are visible) is named
    after the mask."""
    if mask is None:
        name = text("masks.own" if sink_logit is None else "masks.causal", lang)
    elif mask.window is None:
        name = text("masks.causal" if mask.causal else "masks.bidirectional", lang)
    elif mask.sinks:
        name = text("masks.sinks", lang, s=mask.sinks, w=mask.window)
    else:
        name = text("masks.window", lang, w=mask.window)
    if sink_logit is not None:
        return text("masks.with_sink_logit", lang, mask=name, b=sink_logit)
    return name


def describe_layers(masks: Sequence[MaskSpec], lang: Optional[str] = "en") -> str:
    """The masks of a model's layers, grouped in order of first appearance with their counts:
    "5 × sliding window 512, 1 × causal" (a single kind: just its name)."""
    counts: dict[MaskSpec, int] = {}
    for mask in masks:
        counts[mask] = counts.get(mask, 0) + 1
    if len(counts) == 1:
        return describe(next(iter(counts)), lang)
    return text("masks.list_sep", lang).join(
        text("masks.count", lang, n=n, mask=describe(mask, lang)) for mask, n in counts.items())
