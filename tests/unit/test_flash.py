"""FlashAttention, live (C16, C17): the computation behind the Flash tab, on numbers.

The tiled path equals naive for every mask kind and block size; the recorded schedule skips
exactly the tiles the mask empties; IO counts match hand-computed cases; measured peak extra
memory grows ~n^2 for naive and ~n for tiled; one row's online-softmax state ends where the full
softmax is; the captured head is the head the model attended with."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from explorer.flash import capture as cap_mod
from explorer.flash import exactness, io, memory, schedule, timing
from explorer.inputs import InputError
from explorer.masks import choose
from models.attention import MaskSpec, TileTrace, TileVisibility, tiled_attention
from models.forward import Recorder, RunOptions

MASKS = {"causal": MaskSpec(), "window": MaskSpec(window=9), "sinks": MaskSpec(window=9, sinks=2),
         "bidirectional": MaskSpec(causal=False)}


# ----------------------------------------------------------------------------- exactness (C16)


@pytest.mark.parametrize("block_q,block_k", [(1, 1), (4, 4), (5, 3), (16, 7), (33, 33)])
@pytest.mark.parametrize("mask", list(MASKS.values()), ids=list(MASKS))
def test_tiled_equals_naive_every_mask_and_block(mask, block_q, block_k):
    cases = exactness.random_cases(ns=(1, 33), blocks=[(block_q, block_k)], masks=[mask], d=16)
    assert len(cases) == 2
    for case in cases:
        assert case.tiled_vs_naive <= 1e-5, case
        assert case.tiled_vs_sdpa <= 1e-5, case


def test_default_random_sweep_covers_non_dividing_blocks_and_is_exact():
    cases = exactness.random_cases()
    assert any(c.n % c.block_q and c.n % c.block_k for c in cases)
    assert {c.mask for c in cases} == set(exactness.MASKS)
    assert max(c.tiled_vs_naive for c in cases) <= 1e-5
    assert max(c.naive_vs_sdpa for c in cases) <= 1e-5


def test_tile_visibility_equals_the_boolean_matrix():
    pos = torch.arange(3, 40)
    mask = MaskSpec(window=6, sinks=2)
    lazy = TileVisibility(mask, pos, pos)
    full = mask.visible(pos, pos)
    assert lazy.shape == tuple(full.shape)
    assert torch.equal(lazy[5:17, 0:9], full[5:17, 0:9])
    assert torch.equal(lazy[30:, 30:], full[30:, 30:])


# ----------------------------------------------------------------------------- the schedule


def _capture(n=20, mask=MaskSpec(), d=8, seed=0) -> cap_mod.HeadCapture:
    gen = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(n, d, generator=gen) for _ in range(3))
    return cap_mod.HeadCapture(layer=0, head=0, kv_head=0, q=q, k=k, v=v, positions=torch.arange(n),
                               mask=mask, scale=d ** -0.5, softcap=None, token_ids=tuple(range(n)))


@pytest.mark.parametrize("mask", list(MASKS.values()), ids=list(MASKS))
@pytest.mark.parametrize("block_q,block_k", [(4, 4), (3, 7), (20, 1)])
def test_schedule_skips_exactly_the_tiles_the_mask_empties(mask, block_q, block_k):
    result = schedule.run(_capture(mask=mask), block_q, block_k)
    nq, nk = result.grid
    assert len(result.steps) == nq * nk
    # the engine's order: query blocks outer, key blocks inner
    assert [tuple(s) for s in result.steps] == [(i, j) for i in range(nq) for j in range(nk)]
    assert result.skips_match_mask
    visible = mask.visible(torch.arange(20), torch.arange(20)).expand(20, 20)
    for (qi, kj), status in zip(result.steps, result.status):
        tile = visible[qi * block_q:(qi + 1) * block_q, kj * block_k:(kj + 1) * block_k]
        assert status == (schedule.SKIPPED if not tile.any() else
                          schedule.FULL if tile.all() else schedule.PARTIAL)
    assert result.diff_tiled_naive <= 1e-5 and result.diff_tiled_sdpa <= 1e-5


def test_causal_schedule_counts_by_hand():
    # n = 16 in 4 x 4 tiles, causal: 6 tiles above the diagonal skipped, 4 diagonal tiles
    # partly masked, 6 below fully visible
    result = schedule.run(_capture(n=16), 4, 4)
    counts = np.bincount(result.status, minlength=3)
    assert counts.tolist() == [6, 4, 6]
    # sliding window 4: also the tiles two or more blocks below the diagonal are skipped
    result = schedule.run(_capture(n=16, mask=MaskSpec(window=4)), 4, 4)
    assert np.bincount(result.status, minlength=3).tolist() == [6 + 3, 7, 0]


def test_row_online_softmax_ends_at_the_full_softmax():
    """C17: the running max and normalizer after the last key block are the whole row's, the
    rescale factors are <= 1, and the partial output converges to the final one."""
    result = schedule.run(_capture(n=40, seed=3), 8, 6, row=37)
    row = result.row
    assert row.row == 37 and row.q_block == 4
    assert len(row.running_max) == math.ceil(40 / 6)
    assert row.max_diff <= 1e-6 and row.normalizer_rel_diff <= 1e-6 and row.out_diff <= 1e-5
    computed_max = row.running_max[row.computed]
    assert np.all(np.diff(computed_max) >= 0)                  # the running max never falls
    assert np.all(row.rescale <= 1.0 + 1e-7) and np.all(row.rescale >= 0)
    assert row.partial_error[-1] <= 1e-5
    # somewhere the max rose after the first block: a rescale below one was really applied
    assert np.any(row.rescale[1:][row.computed[1:]] < 1.0)
    # the rescale recorded is exp(m_old - m_new) between consecutive steps
    m = row.running_max
    for j in range(1, len(m)):
        if row.computed[j] and np.isfinite(m[j - 1]):
            assert row.rescale[j] == pytest.approx(math.exp(m[j - 1] - m[j]), rel=1e-5)
    # the row's normalizer after each step is sum exp(s - m) over the keys seen so far
    scores = result.scores[37]
    for j in range(len(m)):
        seen = np.nan_to_num(scores[: (j + 1) * 6], nan=-np.inf)
        if np.isfinite(m[j]):
            assert row.normalizer[j] == pytest.approx(np.exp(seen - m[j]).sum(), rel=1e-5)


def test_trace_records_rescale_and_partial_outputs():
    cap = _capture(n=12)
    q, k, v = cap.q[None, None], cap.k[None, None], cap.v[None, None]
    pos = cap.positions
    trace = TileTrace(4, 4, keep_partial=True)
    out, _ = tiled_attention(q, k, v, TileVisibility(cap.mask, pos, pos), cap.scale, block_q=4,
                             block_k=4, trace=trace)
    assert [tuple(r.shape) for r in trace.rescale] == [(3, 1, 1, 4)] * 3
    assert [tuple(p.shape) for p in trace.partial_out] == [(3, 1, 1, 4, 8)] * 3
    # skipped tiles leave the state alone: rescale 1, partial output unchanged
    assert torch.all(trace.rescale[0][1:] == 1)
    assert torch.equal(trace.partial_out[0][1], trace.partial_out[0][0])
    final = trace.partial_out[2][-1] / trace.row_norm[2][-1][..., None]
    assert torch.allclose(final, out[:, :, 8:12], atol=1e-6)


# ----------------------------------------------------------------------------- IO counts


def test_io_counts_match_hand_computed_cases():
    # n = 8, d = 2, 4 x 4 tiles, causal: tiles (0,0), (1,0), (1,1) computed, (0,1) skipped
    trace = io.run_schedule(8, 2, 4, 4, MaskSpec())
    assert [s for _, _, s in trace.tiles] == ["computed", "skipped", "computed", "computed"]
    counted = io.counted(trace.tiles, 8, 8, 2, 4, 4)
    assert counted == io.Traffic(read=4 * (16 + 3 * 2 * 4 * 2), written=4 * 16)
    assert io.naive(8, 8, 2) == io.Traffic(read=4 * (16 + 16 + 128 + 16), written=4 * (128 + 16))
    assert io.formula(8, 8, 2, 4) == io.Traffic(read=4 * (16 + 2 * 2 * 8 * 2), written=4 * 16)
    # blocks that do not divide n: n = 5, d = 1, Bq = 2, Bk = 3, causal. Key blocks [0,3), [3,5);
    # only (query block 0, key block 1) is empty. K/V reads: 2*3 + 2*3 + 2*2 + 2*3 + 2*2 = 26
    trace = io.run_schedule(5, 1, 2, 3, MaskSpec())
    assert [s for _, _, s in trace.tiles].count("skipped") == 1
    assert io.counted(trace.tiles, 5, 5, 1, 2, 3) == io.Traffic(read=4 * (5 + 26), written=4 * 5)
    read, written = io.step_traffic(trace.tiles, 5, 5, 1, 2, 3)
    assert read == [4 * (2 + 6), 0, 4 * (2 + 6), 4 * 4, 4 * (1 + 6), 4 * 4]
    assert written == [0, 4 * 2, 0, 4 * 2, 0, 4 * 1]


def test_io_sweep_tiled_beats_naive_and_skipping_saves_about_half():
    sweep = io.sweep((64, 256, 1024), 16, 32, 32, MaskSpec())
    for naive, counted, formula in zip(sweep.naive, sweep.counted, sweep.formula):
        assert counted.total < formula.total < naive.total
        assert counted.written == formula.written       # only the n x d output is written
    # causal skipping: K/V reads fall to about half of the full schedule's at large n
    kv_counted = sweep.counted[-1].read - 4 * 1024 * 16
    kv_formula = sweep.formula[-1].read - 4 * 1024 * 16
    assert 0.5 <= kv_counted / kv_formula <= 0.55
    # naive grows ~n^2 (its 4n^2 score traffic dominates)
    assert sweep.naive[-1].total / sweep.naive[-2].total > 14


def test_paper_blocks_and_on_chip_size():
    assert io.paper_blocks(64 * 1024, 64) == (64, 64)     # M = 16384 fp32: Bc = M / 4d = 64
    assert io.paper_blocks(64 * 1024, 128) == (32, 32)
    assert io.paper_blocks(192 * 1024, 64) == (64, 192)   # Br = min(Bc, d)
    chip = io.on_chip_bytes(32, 32, 64)
    assert sum(chip.values()) == 4 * (32 * 64 + 2 * 32 * 64 + 32 * 32 + 2 * 32 + 32 * 64)


# ----------------------------------------------------------------------------- measured memory


def test_peak_extra_memory_grows_quadratically_naive_linearly_tiled():
    ns = (256, 512, 1024)
    sweep = memory.sweep(ns, 32, 64, 64, MaskSpec())
    naive, tiled = sweep.extra["naive"], sweep.extra["tiled"]
    # naive holds at least one fp32 n x n matrix; its growth per doubling is ~4x
    assert all(b >= 4 * n * n for b, n in zip(naive, ns))
    assert naive[2] / naive[0] > 12
    # tiled: below half of one score matrix even at n = 256, and at most linear growth
    assert all(b < 4 * n * n / 2 for b, n in zip(tiled, ns))
    assert tiled[2] / tiled[0] < 4
    assert tiled[2] - tiled[0] < 0.05 * (naive[2] - naive[0])


# ----------------------------------------------------------------------------- timing


def test_timing_sweep_measures_each_path_and_finds_the_crossover():
    sweep = timing.sweep((64, 128), 16, 32, 32, MaskSpec(), repeats=1)
    assert {"naive", "tiled", "sdpa"} <= set(sweep.seconds) <= {"naive", "tiled", "sdpa", "compiled"}
    assert all(s > 0 for times in sweep.seconds.values() for s in times)
    assert sweep.tiles == (4, 16)
    made = timing.TimingSweep(ns=(1, 2, 3), d=1, block_q=1, block_k=1, mask=MaskSpec(), device="cpu",
                              seconds={"naive": (1, 2, 3), "tiled": (5, 2.5, 2.9), "sdpa": (1, 1, 1)},
                              tiles=(1, 4, 9))
    assert made.crossover == 3


# ----------------------------------------------------------------------------- capture and inputs


@pytest.mark.parametrize("family", ["llama", "gemma3"])
def test_captured_head_is_the_head_the_model_attended_with(tiny, family):
    model = tiny[family]
    ids = list(range(3, 27))
    layer, head = 0, model.config.n_heads - 1
    captured = cap_mod.capture(model, ids, layer, head)
    assert captured.kv_head == head // model.config.n_rep
    # gemma3's layer 0 is local: the capture carries its own sliding window
    assert captured.mask == model.layer_masks()[layer]
    result = schedule.run(captured, 8, 8)
    recorder = Recorder(["attn_probs"], layers=[layer])
    with torch.inference_mode():
        model(torch.tensor([ids]), options=RunOptions(attn_impl="eager"), recorder=recorder)
    probs = recorder.get("attn_probs", layer)[0, head]
    assert np.abs(result.probs - probs.numpy()).max() <= 1e-5
    assert result.diff_tiled_naive <= 1e-5 and result.diff_tiled_sdpa <= 1e-5


def test_capture_applies_the_visitors_mask(tiny):
    model = tiny["llama"]
    override = choose("sinks", 6, 2)
    captured = cap_mod.capture(model, list(range(3, 23)), 1, 0, override)
    assert captured.mask == MaskSpec(window=6, sinks=2)
    result = schedule.run(captured, 4, 4)
    assert result.skips_match_mask and (result.status == schedule.SKIPPED).sum() > 10 - 4


def test_fill_to_repeats_the_prompt_keeping_one_bos():
    assert cap_mod.fill_to([1, 5, 6, 7], 9, bos_id=1) == [1, 5, 6, 7, 5, 6, 7, 5, 6]
    assert cap_mod.fill_to([5, 6, 7], 7) == [5, 6, 7, 5, 6, 7, 5]
    assert cap_mod.fill_to(list(range(10)), 4) == [0, 1, 2, 3]


@pytest.mark.parametrize("blocks,key", [((0, 8), "inputs.at_least"), ((8, 0), "inputs.at_least"),
                                        ((64, 8), "flash.err.block_gt_n"),
                                        ((8, 33), "flash.err.block_gt_n"),
                                        ((1.5, 8), "inputs."), ((float("nan"), 8), "inputs."),
                                        (("many", 8), "inputs.")])
def test_bad_blocks_are_refused_before_any_work(blocks, key):
    with pytest.raises(InputError) as error:
        schedule.check_blocks(32, *blocks)
    assert error.value.key == key or key.endswith(".") and error.value.key.startswith(key)


def test_schedule_over_the_frame_cap_is_refused():
    n = 512
    with pytest.raises(InputError) as error:
        schedule.check_blocks(n, 16, 16)                        # 32 x 32 = 1024 tiles
    assert error.value.key == "flash.err.frames"
    assert schedule.check_blocks(n, 32, 32) == (32, 32)         # 256 tiles


def test_bad_head_layer_and_mask_are_refused(tiny):
    config = tiny["llama"].config
    for layer, head in ((0, config.n_heads), (config.n_layers, 0), (0, -1), (0, "x")):
        with pytest.raises(InputError):
            cap_mod.check_layer_head(config, layer, head)
    with pytest.raises(InputError):
        choose("diagonal")
    with pytest.raises(InputError):
        choose("sinks", 4, 4)
    with pytest.raises(InputError) as error:
        choose("sinks", 1, 0)
    assert error.value.key == "attention.err.no_sink"
    with pytest.raises(InputError) as error:
        choose("sinks", 1, 1)
    assert error.value.key == "attention.err.sinks_window"
    assert choose("causal") is None
    assert choose("window", 16) == MaskSpec(window=16)


# ----------------------------------------------------------------------------- the compiled kernel


@pytest.mark.skipif(not __import__("explorer.flash.compiled", fromlist=["x"]).available(),
                    reason="no C++ compiler")
@pytest.mark.parametrize("mask", list(MASKS.values()), ids=list(MASKS))
@pytest.mark.parametrize("n,block_q,block_k", [(1, 4, 4), (37, 7, 13), (300, 64, 32)])
def test_compiled_kernel_equals_naive_and_runs_the_engines_schedule(mask, n, block_q, block_k):
    from explorer.flash import compiled
    from models.attention import eager_attention

    gen = torch.Generator().manual_seed(n)
    q, k, v = (torch.randn(n, 32, generator=gen) for _ in range(3))
    pos = torch.arange(n)
    out, tiles = compiled.attention(q, k, v, pos, pos, mask, 0.2, block_q, block_k)
    naive, _ = eager_attention(q[None, None], k[None, None], v[None, None],
                               mask.visible(pos, pos).expand(n, n), 0.2)
    assert (out - naive[0, 0]).abs().max() <= 1e-5
    trace = TileTrace(block_q, block_k)
    tiled_attention(q[None, None], k[None, None], v[None, None], TileVisibility(mask, pos, pos), 0.2,
                    block_q=block_q, block_k=block_k, trace=trace)
    assert tiles == sum(status == "computed" for _, _, status in trace.tiles)


@pytest.mark.skipif(not __import__("explorer.flash.compiled", fromlist=["x"]).available(),
                    reason="no C++ compiler")
def test_compiled_kernel_memory_does_not_grow_with_n():
    sweep = memory.sweep((256, 1024), 32, 64, 64, MaskSpec())
    compiled_extra, naive = sweep.extra["compiled"], sweep.extra["naive"]
    assert compiled_extra[0] == compiled_extra[1] < 4 * 256 * 256 / 2
    assert naive[1] / naive[0] > 12


def test_row_rescales_are_the_rises_of_the_running_max():
    result = schedule.run(_capture(n=48, mask=MaskSpec(window=20), seed=5), 8, 8, row=44)
    row = result.row
    m = row.running_max
    rose = [j for j in range(1, len(m)) if np.isfinite(m[j - 1]) and m[j] > m[j - 1]]
    assert row.rises == len(rose)
    assert np.allclose(row.rise_rescales, [math.exp(m[j - 1] - m[j]) for j in rose], rtol=1e-5)
    assert np.all((row.rise_rescales > 0) & (row.rise_rescales < 1))
