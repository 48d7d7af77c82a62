"""The one description of an attention mask in the visitor's language.

A mask is a `models.attention.MaskSpec` (causal ∧ (in window w ∨ one of the first s keys));
every tab that names a mask (a figure title, a table cell, a cache layer's kind) calls
`describe` here, so the same mask reads the same everywhere and in both languages. Masks are
built through MaskSpec and evaluated with `MaskSpec.visible`, never by hand.

    describe(MaskSpec(window=8), "zh")          -> "滑动窗口 8"
    describe(None, "en")                        -> "the checkpoint's own masks"
    describe(None, "en", sink_logit=1.5)        -> "causal + sink logit b = 1.5"
    describe_layers(model.layer_masks(), "en")  -> "5 × sliding window 512, 1 × causal"
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Optional

from explorer.locales import text
from models.attention import MaskSpec


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
