"""explorer.masks.choose: the one place a visitor's mask choice (a mask control or a cache
policy) becomes the MaskSpec the engine is handed, with one set of error texts."""
from __future__ import annotations

import pytest

from explorer import masks
from explorer.inputs import InputError
from models.attention import MaskSpec


@pytest.mark.parametrize("kind, kinds", [("causal", masks.MASK_KINDS), ("full", masks.POLICIES)])
def test_the_checkpoints_own_masks_are_no_override(kind, kinds):
    # window and sinks are not read: a causal choice with any slider values is no override
    assert masks.choose(kind, kinds=kinds) is None
    assert masks.choose(kind, "nonsense", -3, kinds=kinds) is None


@pytest.mark.parametrize("kinds", [masks.MASK_KINDS, masks.POLICIES])
def test_window_and_sinks_become_the_engines_masks(kinds):
    assert masks.choose("window", 8, kinds=kinds) == MaskSpec(window=8)
    assert masks.choose("window", 8.0, 3, kinds=kinds) == MaskSpec(window=8)   # sinks unread
    assert masks.choose("sinks", 8, 2, kinds=kinds) == MaskSpec(window=8, sinks=2)
    assert masks.choose("sinks", 2, 1, kinds=kinds) == MaskSpec(window=2, sinks=1)
    assert masks.choose("sinks", 64.0, 4.0, kinds=kinds) == MaskSpec(window=64, sinks=4)


@pytest.mark.parametrize("args, limits, key, english", [
    (("bogus",), {}, "inputs.not_option", "The mask must be one of causal, window, sinks"),
    (("full",), {}, "inputs.not_option", "The mask must be one of causal, window, sinks"),
    (("window", 0), {}, "inputs.at_least", "The window w must be at least 1"),
    (("window", None), {}, "inputs.not_whole", "The window w"),
    (("window", float("nan")), {}, "inputs.not_whole", "The window w"),
    (("window", 2.5), {}, "inputs.not_whole", "The window w"),
    (("window", 65), {"max_window": 64}, "inputs.between", "The window w must be between 1 and 64"),
    (("sinks", 8, -1), {}, "inputs.at_least", "The number of sinks s must be at least 0"),
    (("sinks", 8, 9), {"max_sinks": 8}, "inputs.between", "The number of sinks s must be between 0 and 8"),
    (("sinks", 8, 0), {}, "attention.err.no_sink", "at least one sink"),
    (("sinks", 1, 0), {}, "attention.err.no_sink", "at least one sink"),
    (("sinks", 4, 4), {}, "attention.err.sinks_window",
     "The number of sinks s (4) must be smaller than the window w (4)."),
    (("sinks", 1, 1), {}, "attention.err.sinks_window", "smaller than the window w (1)"),
])
def test_bad_choices_raise_one_vocabulary(args, limits, key, english):
    with pytest.raises(InputError) as error:
        masks.choose(*args, **limits)
    assert error.value.key == key
    assert english in str(error.value)


def test_a_policy_is_named_as_the_cache_policy_it_is():
    with pytest.raises(InputError) as error:
        masks.choose("causal", kinds=masks.POLICIES)
    assert str(error.value).startswith("Cache policy must be one of full, window, sinks")
    with pytest.raises(InputError) as error:
        masks.choose("sinks", 4, 4, kinds=masks.POLICIES)
    assert error.value.key == "attention.err.sinks_window"
    assert error.value.message("zh") == "汇的数量 s（4）必须小于窗口 w（4）。"


def test_a_longer_vocabulary_lists_its_own_kinds():
    kinds = masks.MASK_KINDS + ("sink_logit",)
    with pytest.raises(InputError, match="must be one of causal, window, sinks, sink_logit"):
        masks.choose("bogus", kinds=kinds)
    with pytest.raises(ValueError, match="the caller handles it"):
        masks.choose("sink_logit", kinds=kinds)   # a kind that is no MaskSpec stays the caller's
