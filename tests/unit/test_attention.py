"""Every attention path against eager, for every mask kind; the mask predicates themselves."""
import pytest
import torch

from models.attention import (CAUSAL, MaskSpec, RowBlocks, TileTrace, attend, eager_attention,
                              scored_entries, sdpa_mask_for)

MASKS = {
    "causal": MaskSpec(),
    "window": MaskSpec(window=5),
    "sinks+window": MaskSpec(window=6, sinks=2),
}


def qkv(t=19, s=None, h=4, hkv=2, d=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    s = s or t
    return (torch.randn(2, h, t, d, generator=g), torch.randn(2, hkv, s, d, generator=g),
            torch.randn(2, hkv, s, d, generator=g))


@pytest.mark.parametrize("mask_name", list(MASKS))
@pytest.mark.parametrize("sink_logit", [None, 0.7, torch.tensor([0.5, -1.0, 2.0, 0.0])])
@pytest.mark.parametrize("impl", ["sdpa", "tiled"])
def test_paths_match_eager(mask_name, sink_logit, impl):
    q, k, v = qkv()
    pos = torch.arange(19)
    mask = MASKS[mask_name]
    ref, probs = attend(q, k, v, pos, pos, mask, 0.3, impl="eager", sink_logit=sink_logit)
    out, _ = attend(q, k, v, pos, pos, mask, 0.3, impl=impl, sink_logit=sink_logit, block_q=4, block_k=3)
    assert (out - ref).abs().max().item() < 1e-5


def test_decode_rows_with_offset_positions():
    """A (T, S) non-square mask: 3 new queries at positions 16..18 over 19 keys (claim C4)."""
    q, k, v = qkv(t=3, s=19)
    qpos, kpos = torch.arange(16, 19), torch.arange(19)
    for mask in MASKS.values():
        ref, _ = attend(q, k, v, qpos, kpos, mask, 0.3, impl="eager")
        for impl in ("sdpa", "tiled"):
            out, _ = attend(q, k, v, qpos, kpos, mask, 0.3, impl=impl, block_q=2, block_k=4)
            assert (out - ref).abs().max().item() < 1e-5
    vis = MaskSpec().visible(qpos, kpos)
    assert vis.shape == (3, 19) and vis[0, 16] and not vis[0, 17] and vis[2].all()


def test_probabilities_rows_sum_and_masked_entries_zero():
    q, k, v = qkv()
    pos = torch.arange(19)
    for mask in MASKS.values():
        _, probs = attend(q, k, v, pos, pos, mask, 0.3, impl="eager")
        vis = mask.visible(pos, pos)
        assert torch.allclose(probs.sum(-1), torch.ones(2, 4, 19), atol=1e-6)
        assert (probs[..., ~vis] == 0).all()
        _, tiled_probs = attend(q, k, v, pos, pos, mask, 0.3, impl="tiled", need_probs=True, block_q=4, block_k=4)
        assert (tiled_probs - probs).abs().max() < 1e-6


def test_sink_logit_equals_an_extra_zero_value_key():
    """gpt-oss sink == an always-visible key whose score is b and whose value is zero."""
    q, k, v = qkv(hkv=4)
    pos = torch.arange(19)
    b = 1.3
    vis = MaskSpec().visible(pos, pos)
    out, probs = eager_attention(q, k, v, vis, 0.3, sink_logit=b)
    # explicit extra key: choose k_extra with q . k_extra * scale == b for every query -> use
    # the score matrix directly instead: append a column of b and a zero value row
    scores = (q @ k.transpose(-2, -1)) * 0.3
    scores = scores.masked_fill(~vis, float("-inf"))
    scores = torch.cat([scores, torch.full((*scores.shape[:-1], 1), b)], dim=-1)
    p = torch.softmax(scores, dim=-1)
    v_ext = torch.cat([v, torch.zeros(2, 4, 1, 8)], dim=2)
    assert (p @ v_ext - out).abs().max() < 1e-6
    sink_mass = 1 - probs.sum(-1)
    assert torch.allclose(sink_mass, p[..., -1], atol=1e-6)
    assert (sink_mass > 0).all()


def test_mask_predicates():
    pos = torch.arange(10)
    causal = MaskSpec().visible(pos, pos)
    assert torch.equal(causal, torch.tril(torch.ones(10, 10, dtype=torch.bool)))
    win = MaskSpec(window=3).visible(pos, pos)
    assert win.sum(-1).tolist() == [1, 2, 3, 3, 3, 3, 3, 3, 3, 3]
    assert win[9, 7] and not win[9, 6]
    sinks = MaskSpec(window=3, sinks=2).visible(pos, pos)
    assert sinks[9, 0] and sinks[9, 1] and not sinks[9, 2] and sinks[9, 7]
    # empty cache slots (-1) are never visible
    assert not MaskSpec().visible(pos, torch.tensor([-1, 0]))[:, 0].any()


@pytest.mark.parametrize("bad", [dict(window=0), dict(window=4, sinks=4), dict(sinks=2), dict(window=3, sinks=-1)])
def test_bad_masks_raise(bad):
    with pytest.raises(ValueError):
        MaskSpec(**bad)


def test_tiled_trace_records_schedule_and_online_softmax_state():
    q, k, v = qkv(t=16)
    pos = torch.arange(16)
    trace = TileTrace(4, 4)
    out, _ = attend(q, k, v, pos, pos, MaskSpec(window=4), 0.3, impl="tiled", block_q=4, block_k=4, trace=trace)
    status = {(qi, kj): s for qi, kj, s in trace.tiles}
    # causal: tiles above the diagonal are skipped; window 4: tiles two blocks back are skipped
    assert status[(0, 1)] == "skipped" and status[(3, 0)] == "skipped"
    assert status[(2, 2)] == "computed" and status[(2, 1)] == "computed"
    assert len(trace.tiles) == 16
    # the final running max/normalizer reproduce the full softmax normalizer of each row
    scores = (q @ torch.repeat_interleave(k, 2, dim=1).transpose(-2, -1)) * 0.3
    scores = scores.masked_fill(~MaskSpec(window=4).visible(pos, pos), float("-inf"))
    m_full = scores.amax(-1)
    l_full = torch.exp(scores - m_full[..., None]).sum(-1)
    m_last = torch.cat([rm[-1] for rm in trace.row_max], dim=-1)
    l_last = torch.cat([rn[-1] for rn in trace.row_norm], dim=-1)
    assert torch.allclose(m_last, m_full, atol=1e-6) and torch.allclose(l_last, l_full, atol=1e-5)


@pytest.mark.parametrize("mask", [MaskSpec(window=40), MaskSpec(window=60, sinks=4)],
                         ids=["window", "sinks+window"])
@pytest.mark.parametrize("sink_logit", [None, 0.7])
def test_long_banded_prompt_runs_sdpa_by_row_blocks(mask, sink_logit):
    """A window over a long prompt: SDPA runs one call per block of rows over that block's
    columns only (RowBlocks), and still matches eager attention."""
    t = 300
    q, k, v = qkv(t=t, d=16)
    pos = torch.arange(t)
    visible = mask.visible(pos, pos)
    split = sdpa_mask_for(visible, pos, pos)
    assert isinstance(split, RowBlocks)
    assert [b[:2] for b in split.blocks] == [(0, 128), (128, 256), (256, 300)]
    # every visible entry lies inside its row block's columns
    covered = torch.zeros_like(visible)
    for r0, r1, c0, c1 in split.blocks:
        covered[r0:r1, c0:c1] = True
    assert not (visible & ~covered).any()
    assert split.entries < 0.75 * t * t
    assert scored_entries("sdpa", split, t, t) == split.entries
    assert scored_entries("eager", split, t, t) == t * t   # eager scores the whole matrix
    ref, _ = attend(q, k, v, pos, pos, mask, 0.3, impl="eager", sink_logit=sink_logit)
    out, _ = attend(q, k, v, pos, pos, mask, 0.3, impl="sdpa", sink_logit=sink_logit)
    assert (out - ref).abs().max().item() < 1e-5


def test_row_blocks_only_where_they_save_work():
    pos = torch.arange(300)
    assert sdpa_mask_for(MaskSpec().visible(pos, pos), pos, pos) == CAUSAL     # is_causal skips
    short = torch.arange(200)                                                  # under two blocks
    assert isinstance(sdpa_mask_for(MaskSpec(window=20).visible(short, short), short, short), torch.Tensor)
    # a near-triangular matrix: the blocks skip what lies above the diagonal, as is_causal would
    assert isinstance(sdpa_mask_for(MaskSpec(window=280).visible(pos, pos), pos, pos), RowBlocks)
    # every block needs nearly every column: one call over the whole matrix
    wide = MaskSpec(causal=False, window=280).visible(pos, pos)
    assert isinstance(sdpa_mask_for(wide, pos, pos), torch.Tensor)


# --- counting: the scores each path computes (claim C1) ------------------------------------------
def test_causal_sdpa_counts_the_triangle_it_computes():
    """is_causal computes the lower triangle, t(t+1)/2 per head, not the t x t square; with a
    sink logit the causal pattern becomes a mask matrix and every entry is computed."""
    t = 50
    pos = torch.arange(t)
    visible = MaskSpec().visible(pos, pos)
    hint = sdpa_mask_for(visible, pos, pos)
    assert hint == CAUSAL
    assert scored_entries("sdpa", hint, t, t, visible=visible) == t * (t + 1) // 2 == 1275
    assert scored_entries("sdpa", hint, t, t, visible=visible, sink_logit=0.7) == t * t
    assert scored_entries("eager", hint, t, t, visible=visible) == t * t
    # a decode row over a full cache: every path scores the row
    row = MaskSpec().visible(pos[-1:], pos)
    assert sdpa_mask_for(row, pos[-1:], pos) is None
    for impl in ("sdpa", "eager", "tiled"):
        assert scored_entries(impl, None, 1, t, visible=row) == t


@pytest.mark.parametrize("mask", list(MASKS.values()), ids=list(MASKS))
def test_tiled_count_equals_the_tiles_its_trace_computed(mask):
    """The tiled path's count is the size of the tiles it computed, as its own trace records
    them: tiles the mask hides entirely are skipped and not counted."""
    t, bq, bk = 19, 4, 3
    q, k, v = qkv(t=t)
    pos = torch.arange(t)
    visible = mask.visible(pos, pos)
    trace = TileTrace(bq, bk)
    attend(q, k, v, pos, pos, mask, 0.3, impl="tiled", block_q=bq, block_k=bk, trace=trace)
    computed = sum((min(t, (qi + 1) * bq) - qi * bq) * (min(t, (kj + 1) * bk) - kj * bk)
                   for qi, kj, status in trace.tiles if status == "computed")
    count = scored_entries("tiled", sdpa_mask_for(visible, pos, pos), t, t, visible=visible,
                           block_q=bq, block_k=bk)
    assert count == computed < t * t


def test_a_forward_counts_what_its_path_computed(tiny):
    """The engine's count of one forward without a cache over t tokens, all layers and heads:
    the causal triangle on the SDPA path, the square on the eager path."""
    from models.forward import RunOptions

    model = tiny["llama"]
    c = model.config
    ids = torch.arange(1, 21)[None]
    counts = {}
    with torch.no_grad():
        for impl in ("sdpa", "eager"):
            _, ctx = model(ids, options=RunOptions(attn_impl=impl), return_context=True)
            counts[impl] = ctx.score_entries
    heads = c.n_layers * c.n_heads
    assert counts == {"sdpa": heads * 20 * 21 // 2, "eager": heads * 20 * 20}
