"""The FlashAttention tab's handlers, called directly and through gradio_client on an in-process
app: real numbers in both languages, the language redraw from the stored result, and clear
errors for bad inputs (block 0, block > n, n over the frame cap, unknown head, ...)."""
from __future__ import annotations

import json
import re

import pytest

from explorer.inputs import InputError
from explorer.ui.tabs import flash as ui

SMOL = "smollm2-135m-instruct"
PROMPT = "Tiles of queries and keys stay on chip; only the output goes back to memory."


def figure(value) -> dict:
    plot = value["plot"] if isinstance(value, dict) and "plot" in value else value
    if isinstance(plot, str):
        return json.loads(plot)
    return plot if isinstance(plot, dict) else plot.to_plotly_json()


def head(runtime, lang="en", n=64, layer=1, head_=2, mask="causal", window=16, sinks=2, bq=16, bk=16, row=-1):
    return ui.run_head(runtime, SMOL, lang, PROMPT, n, layer, head_, mask, window, sinks, bq, bk, row)


def test_run_head_both_languages_same_numbers(runtime):
    naive, tiles, row_fig, summary, result = head(runtime, "en")
    assert result.n == 64 and result.grid == (4, 4) and result.skips_match_mask
    assert result.diff_tiled_naive <= 1e-5 and result.diff_tiled_sdpa <= 1e-5
    assert f"max |tiled − naive| = {result.diff_tiled_naive:.1e}" in summary
    assert "16 in all, **10 computed** (4 of them partly masked), **6 skipped**" in summary
    # the tiled figure: one frame per tile, carried in layout.meta for the page script
    fig = figure(tiles)
    frames = fig["layout"]["meta"]["flash_frames"]
    assert len(frames) == 16 and len(fig["layout"]["sliders"][0]["steps"]) == 16
    assert [b["method"] for b in fig["layout"]["updatemenus"][0]["buttons"]] == ["animate", "animate"]
    assert frames[-1]["data"][0]["z"][3][3] == 4           # the last tile is the current one
    # Chinese: the same numbers from a redraw of the stored result, no forward pass
    zh = ui.draw_head(result, "zh")
    assert "精确（C16）" in zh[3] and f"{result.diff_tiled_naive:.1e}" in zh[3]
    assert figure(zh[1])["layout"]["meta"]["flash_frames"][0]["data"][0]["z"] == frames[0]["data"][0]["z"]
    assert "查询块" in json.dumps(figure(zh[1])["layout"]["meta"]["flash_frames"][5]["layout"], ensure_ascii=False)
    again = head(runtime, "zh")
    assert again[4].diff_tiled_naive == result.diff_tiled_naive
    assert "朴素路径" in figure(again[0])["layout"]["title"]["text"]


def test_run_head_sinks_window_and_chosen_row(runtime):
    *_, summary, result = head(runtime, n=96, mask="sinks", window=24, sinks=4, bq=8, bk=8, row=90)
    assert result.capture.mask.window == 24 and result.capture.mask.sinks == 4
    assert result.row.row == 90 and result.row.q_block == 11
    assert result.skips_match_mask and (result.status == 0).sum() > 40
    assert result.row.max_diff <= 1e-6 and result.row.out_diff <= 1e-5
    assert "4 sinks + window 24" in summary and "**Row 90 (C17):**" in summary


@pytest.mark.parametrize("kwargs, key", [
    (dict(bq=0), "inputs.at_least"),
    (dict(bk=65), "flash.err.block_gt_n"),
    (dict(n=512, bq=8, bk=16), "flash.err.frames"),
    (dict(n=600), "inputs.between"),
    (dict(head_=9), "inputs.between"),
    (dict(layer=30), "inputs.between"),
    (dict(mask="diagonal"), "inputs.not_option"),
    (dict(mask="sinks", window=4, sinks=4), "attention.err.sinks_window"),
    (dict(row=64), "inputs.between"),
])
def test_bad_inputs_are_refused(runtime, kwargs, key):
    with pytest.raises(InputError) as error:
        head(runtime, **kwargs)
    assert error.value.key == key
    assert error.value.message("zh") != error.value.message("en")


def test_sweeps_refuse_too_many_tiles_and_too_large_n(runtime):
    with pytest.raises(InputError) as error:
        ui.run_io(runtime, "en", "causal", 16, 2, 8, 8, 64, 64, 2048)
    assert error.value.key == "flash.err.sweep_tiles"
    with pytest.raises(InputError) as error:
        ui.run_timing(runtime, "en", "causal", 16, 2, 64, 64, 64, 10**6)
    assert error.value.key == "inputs.between"
    with pytest.raises(InputError):
        ui.run_io(runtime, "en", "causal", 16, 2, 64, 64, 0, 64, 256)       # d = 0


def test_exact_io_and_timing_handlers(runtime):
    summary, table, cases = ui.run_exact("en")
    assert len(cases) == 48 and "48 cases" in summary and len(table) == 48
    zh_summary, zh_table = ui.draw_exact(cases, "zh")
    assert "个用例" in zh_summary and "掩码" in zh_table.columns
    io_fig, mem_fig, io_summary, state = ui.run_io(runtime, "en", "causal", 16, 2, 32, 32, 32, 16, 512)
    assert state.counted.ns == (128, 256, 512)
    assert state.paper.block_q == 32 and state.paper.block_k == 32   # M = 16 KiB, d = 32
    naive = state.memory.extra["naive"]
    assert naive[-1] > 8 * naive[0]
    assert "Measured on CPU" in io_summary
    assert len(figure(io_fig)["data"]) == 4 and len(figure(mem_fig)["data"]) == len(state.memory.extra) + 1
    time_fig, time_summary, sweep = ui.run_timing(runtime, "en", "causal", 16, 2, 32, 32, 32, 256)
    assert sweep.ns == (128, 256) and "At n = 256" in time_summary
    assert ("No crossover" in time_summary) == (sweep.crossover is None)


# ----------------------------------------------------------------------------- through the API


@pytest.fixture(scope="module")
def flash_client(serve):
    """gradio_client on the app with the shell and this tab only."""
    from gradio_client import Client

    with serve(("explorer.ui.tabs.flash",)) as served:
        yield Client(served.url, verbose=False)


def test_api_runs_a_head_in_both_languages_and_refuses_bad_blocks(flash_client):
    from gradio_client.exceptions import AppError

    args = (SMOL, PROMPT, 64, 1, 2, "causal", 16, 2, 16, 16, -1)
    naive, tiles, row_fig, summary = flash_client.predict(SMOL, "en", *args[1:], api_name="/flash_run")
    assert "**Layer 1, head 2**" in summary and "16 in all" in summary
    assert len(figure(tiles)["layout"]["meta"]["flash_frames"]) == 16
    *_, zh_summary = flash_client.predict(SMOL, "zh", *args[1:], api_name="/flash_run")
    assert "**第 1 层，第 2 个头**" in zh_summary
    numbers = lambda s: re.findall(r"\d\.\de[-+]\d\d", s)   # noqa: E731
    assert numbers(summary) == numbers(zh_summary)
    bad = list(args[1:])
    bad[7] = 0                                              # block 0
    with pytest.raises(AppError, match="query block Bq must be at least 1"):
        flash_client.predict(SMOL, "en", *bad, api_name="/flash_run")
    bad[7] = 100                                            # block > n
    with pytest.raises(AppError, match=r"\(100\) is larger than n \(64\)"):
        flash_client.predict(SMOL, "en", *bad, api_name="/flash_run")
    bad[7], bad[1] = 8, 512                                 # n over the frame cap
    with pytest.raises(AppError, match="more than the 512 frames"):
        flash_client.predict(SMOL, "en", *bad, api_name="/flash_run")
    bad = list(args[1:])
    bad[3] = 9                                              # unknown head
    with pytest.raises(AppError, match="head must be between 0 and 8"):
        flash_client.predict(SMOL, "en", *bad, api_name="/flash_run")
    with pytest.raises(AppError, match="查询块"):
        bad = list(args[1:])
        bad[7] = 100
        flash_client.predict(SMOL, "zh", *bad, api_name="/flash_run")


def test_api_exactness_and_sweeps(flash_client):
    summary, table = flash_client.predict("en", api_name="/flash_exact")
    assert "48 cases" in summary and len(table["data"]) == 48
    io_fig, mem_fig, io_summary = flash_client.predict("en", "causal", 16, 2, 32, 32, 32, 16, 256,
                                                       api_name="/flash_io")
    assert "Measured on CPU" in io_summary
    time_fig, time_summary = flash_client.predict("zh", "causal", 16, 2, 32, 32, 32, 256,
                                                  api_name="/flash_timing")
    assert "在 n = 256 时" in time_summary
