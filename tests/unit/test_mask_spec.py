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


MASKS = [MaskSpec(), MaskSpec(window=3), MaskSpec(window=5, sinks=2), MaskSpec(window=4, sinks=1),
         MaskSpec(causal=False), MaskSpec(causal=False, window=3)]


def test_visible_per_row_is_each_rows_own_visible():
    """The batched step's mask (one query per run, each run its own mask and its own slots)
    equals MaskSpec.visible row by row, for every mask on every row of a grid of positions."""
    from models.attention import visible_per_row

    generator = torch.Generator().manual_seed(0)
    for q in range(0, 12):
        # each row's slots: positions 0..q+2 (some not yet reached by the query), shuffled as
        # a ring buffer leaves them, with empty slots (-1)
        kv = torch.stack([torch.cat([torch.randperm(q + 3, generator=generator),
                                     torch.full((2,), -1)])[:q + 5] for _ in MASKS])  # (n, S)
        for rotation in range(len(MASKS)):
            masks = MASKS[rotation:] + MASKS[:rotation]
            q_pos = torch.full((len(masks),), q)
            seen = visible_per_row(masks, q_pos, kv)
            assert seen.shape == kv.shape and seen.dtype == torch.bool
            for i, mask in enumerate(masks):
                assert torch.equal(seen[i], mask.visible(q_pos[i:i + 1], kv[i])[0]), (mask, q, kv[i])


def test_visible_per_row_with_different_queries():
    from models.attention import visible_per_row

    masks = [MaskSpec(window=2), MaskSpec(window=3, sinks=1), MaskSpec()]
    q_pos = torch.tensor([5, 9, -1])                     # the last row: a query before every key
    kv = torch.tensor([[0, 1, 2, 3, 4, 5, -1], [9, 8, 0, 7, 6, 5, 4], [0, 1, 2, 3, 4, 5, 6]])
    expected = torch.tensor([[0, 0, 0, 0, 1, 1, 0], [1, 1, 1, 1, 0, 0, 0], [0] * 7], dtype=torch.bool)
    assert torch.equal(visible_per_row(masks, q_pos, kv), expected)
