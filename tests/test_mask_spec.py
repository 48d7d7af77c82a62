"""MaskSpec.visible: one row per query for every kind of mask, and the predicate it states."""
import pytest
import torch

from models.attention import MaskSpec


@pytest.mark.parametrize("mask", [MaskSpec(), MaskSpec(causal=False), MaskSpec(window=3),
                                  MaskSpec(window=4, sinks=1), MaskSpec(causal=False, window=3)])
def test_visible_has_one_row_per_query(mask):
    q_pos, kv_pos = torch.arange(5, 9), torch.tensor([0, 1, 2, -1, 4, 5, 6, 7, 8])
    seen = mask.visible(q_pos, kv_pos)
    assert seen.shape == (4, 9) and seen.dtype == torch.bool
    for i, q in enumerate(q_pos.tolist()):
        for j, k in enumerate(kv_pos.tolist()):
            expected = k >= 0 and (not mask.causal or k <= q)
            if mask.window is not None:
                expected = expected and (q - k < mask.window or k < mask.sinks)
            assert bool(seen[i, j]) == expected, (mask, q, k)


def test_bidirectional_rows_do_not_share_memory():
    # Writing into one row must not change the others (an expanded view would share memory).
    seen = MaskSpec(causal=False).visible(torch.arange(3), torch.arange(4))
    seen[0, 0] = False
    assert bool(seen[1, 0]) and bool(seen[2, 0])
