"""The Architecture tab: its handlers called directly (bad inputs are InputErrors with a key,
before any work), and its endpoints through gradio_client on the in-process app (real
checkpoints): every endpoint answers with real numbers, bad inputs come back as clear errors in
the visitor's language, and the server keeps serving."""
from __future__ import annotations

import json
import re

import pytest

from explorer.architecture import blocks, mla, norm_placement
from explorer.inputs import InputError
from explorer.ui.tabs import architecture as tab

SMOL = "smollm2-135m-instruct"
CJK = re.compile(r"[\u4e00-\u9fff]")


def figure(value) -> dict:
    plot = value["plot"] if isinstance(value, dict) and "plot" in value else value
    return json.loads(plot) if isinstance(plot, str) else plot


# ----------------------------------------------------------------------------- handlers, no server

@pytest.mark.parametrize("depths, key", [("", "inputs.empty_text"), ("6, 24, many", "arch.err.not_depth"),
                                         ("100", "inputs.between"), ("1 2 3 4 5", "arch.err.too_many_depths"),
                                         (["6"], "inputs.not_text")])
def test_init_handler_refuses_bad_depths(depths, key, monkeypatch):
    ran = []
    monkeypatch.setattr(norm_placement, "run_init", lambda *a, **k: ran.append(1))
    with pytest.raises(InputError) as error:
        tab.init_gradients("en", depths)
    assert error.value.key == key and not ran          # refused before any work


@pytest.mark.parametrize("args, key", [((64, 65, 512, 1e4), "arch.err.odd_d_k"),
                                       ((64, 64, 10**6, 1e4), "inputs.between"),
                                       ((64, 64, 512, -3), "arch.err.base"),
                                       ((256, 256, 4096, 1e4), "arch.err.fold_too_big")])
def test_fold_handler_refuses_bad_inputs(args, key):
    with pytest.raises(InputError) as error:
        tab.fold("en", *args)
    assert error.value.key == key


def test_errors_in_chinese():
    error = InputError("arch.err.odd_d_k", value=65)
    assert "偶数" in error.message("zh") and "even" in str(error)


def test_handlers_return_what_the_outputs_expect():
    fig, summary, result = tab.init_gradients("zh", "4, 8")
    assert isinstance(result, norm_placement.InitGradients) and result.depths == (4, 8)
    assert CJK.search(summary) and len(fig.data) == 4
    fig, summary, result = tab.show_training("en")
    assert "held-out loss" in summary and result.steps == len(result.train_loss["pre"])
    fig, summary, result = tab.cache_sizes("en")
    assert isinstance(result, mla.CacheComparison) and "2.25 KV heads" in summary
    # the language redraw draws the stored result again, in the other language
    fig_zh, summary_zh = tab.draw_cache(result, "zh")
    assert CJK.search(summary_zh) and list(fig_zh.data[0].x) == list(fig.data[0].x)


def test_blocks_handler_reads_the_shipped_checkpoints(runtime):
    diagram, params, table, summary, result = tab.read_blocks(runtime, "en", SMOL, progress=lambda *a, **k: None)
    assert isinstance(result, blocks.Blocks)
    assert [b.key for b in result.blocks] == ["transformer", "gpt2", SMOL, "gemma-3-270m"]
    for block in result.blocks[2:]:
        # the tensors' count equals the parameters our loaded module holds
        assert block.module_params == block.total_params
    assert "**no bias tensor**" in summary and "(equal: yes)" in summary
    assert list(table.columns)[1:] == [b.title for b in result.blocks]


def test_blocks_handler_refuses_an_unknown_model(runtime):
    import gradio as gr

    with pytest.raises(gr.Error):
        tab.read_blocks(runtime, "en", "no-such-model", progress=lambda *a, **k: None)


# ----------------------------------------------------------------------------- through gradio_client

def expect_error(client, match: str, *args, api_name: str):
    from gradio_client.exceptions import AppError

    with pytest.raises(AppError, match=match):
        client.predict(*args, api_name=api_name)


def test_blocks_endpoint(client):
    diagram, params, table, summary = client.predict("en", SMOL, api_name="/architecture_blocks")
    headers = table["headers"]
    assert headers[1:] == ["Transformer (2017, base)", "GPT-2 (small)", "SmolLM2-135M-Instruct",
                           "Gemma 3 270M (base)"]
    rows = {row[0]: row[1:] for row in table["data"]}
    assert rows["norms per block"] == ["3", "2", "2", "4 + QK"]
    assert rows["bias tensors"][2:] == ["none", "none"]
    assert rows["parameters (from tensors)"][1] == "124,439,808"
    assert "134,515,008 parameters" in summary
    assert len(figure(diagram)["layout"]["shapes"]) > 30
    zh_table = client.predict("zh", SMOL, api_name="/architecture_blocks")[2]
    assert "每个模块的归一化数" in [row[0] for row in zh_table["data"]]


def test_norm_endpoints(client):
    plot, summary = client.predict("en", "6, 24", api_name="/architecture_norm_init")
    assert len(figure(plot)["data"]) == 4
    ratios = [float(x) for x in re.findall(r"\*\*(\d+\.\d+)\*\*", summary)]
    assert len(ratios) == 4 and ratios[2] > 3 * ratios[3]       # 24 layers: post ≫ pre
    expect_error(client, "not a whole number of layers", "en", "6, twelve", api_name="/architecture_norm_init")
    expect_error(client, "最多 4 个", "zh", "1 2 3 4 5", api_name="/architecture_norm_init")
    plot, summary = client.predict("en", api_name="/architecture_norm_training")
    assert "pre-norm" in summary and len(figure(plot)["data"]) == 5


def test_mla_endpoints(client):
    plot, summary = client.predict("en", api_name="/architecture_mla_cache")
    assert "**576 = 4.5 · d_head**" in summary
    plot, summary = client.predict("en", 32, 64, 256, 10000, api_name="/architecture_mla_fold")
    residual = float(re.search(r"leaves \*\*([\d.]+) %\*\*", summary).group(1))
    assert residual > 10
    expect_error(client, "must be even", "en", 32, 63, 256, 10000, api_name="/architecture_mla_fold")
    expect_error(client, "limit here", "en", 256, 256, 8192, 10000, api_name="/architecture_mla_fold")
    expect_error(client, "必须大于 1", "zh", 32, 64, 256, 0.5, api_name="/architecture_mla_fold")
    # still serving
    plot, summary = client.predict("zh", 16, 8, 4, 10000, api_name="/architecture_mla_fold")
    assert CJK.search(summary)
