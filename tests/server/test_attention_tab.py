"""The Attention tab's endpoints through gradio_client on the in-process app (real SmolLM2,
short inputs): each endpoint answers with real numbers; bad inputs give a clear gr.Error and the
server keeps serving."""
from __future__ import annotations

import math

import numpy as np
import pytest
from gradio_client.exceptions import AppError

SMOL = "smollm2-135m-instruct"
PROMPT = "The cat sat on the mat. The dog"


# Gradio's own check of a dropdown / radio value, or the app's (whichever answers first)
CHOICE_REFUSED = "not in the list of choices|must be one of"


def figure_title(value) -> str:
    """The title of a gr.Plot output as the client receives it (a gr.update carries it in value)."""
    import json

    if isinstance(value, dict) and "value" in value:
        value = value["value"]
    plot = value["plot"] if isinstance(value, dict) else value
    return (json.loads(plot) if isinstance(plot, str) else plot)["layout"]["title"]["text"]


def _map(client, **overrides):
    args = dict(model_name=SMOL, lang="en", text=PROMPT, layer_value=2, head_value="all",
                kind="causal", w=8, s=2, b=1.0, path="eager", n_new=0)
    args.update(overrides)
    return client.predict(*args.values(), api_name="/attention_map")


def test_attention_map_endpoint_reports_real_numbers(client):
    fig, mask_fig, summary, table, data = _map(client, kind="sinks", w=4, s=1, head_value="3")
    assert data["model"] == SMOL and data["layer"] == 2 and data["head"] == 3
    assert data["mask"] == "1 sink + window 4" and data["layer_mask"] == "1 sink + window 4"
    assert abs(data["row_sum_min"] - 1) < 1e-5 and abs(data["row_sum_max"] - 1) < 1e-5
    assert data["masked_max"] == 0.0 and data["mask_matches_nonzero"] is True
    assert data["kl_nats"] > 0
    assert "Layer 2" in summary and "KL" in summary
    assert fig is not None and mask_fig is not None
    assert table["headers"] == ["token", "p unmodified", "p with this mask"]


def test_sink_logit_and_generated_tokens(client):
    *_, summary, _, data = _map(client, kind="sink_logit", b=2.0, n_new=3, path="tiled")
    assert data["n_generated"] == 3 and data["n_tokens"] == data["n_prompt"] + 3
    assert 0 < data["sink_mass_mean"] < 1
    assert abs(data["row_sum_min"] - (1 - data["sink_mass_max"])) < 1e-4
    assert "absorbed" in summary


def test_chinese_summary(client):
    *_, summary, table, data = _map(client, lang="zh")
    assert "第 2 层" in summary and data["kl_nats"] == 0.0
    assert table["headers"] == ["token", "p（原模型）", "p（此掩码下）"]


@pytest.mark.parametrize("overrides, message", [
    (dict(kind="window", w=0), "window w must be at least 1"),
    (dict(kind="sinks", w=4, s=4), "must be smaller than the window"),
    (dict(layer_value=30), "greater than maximum value 29"),      # the slider's own check
    (dict(layer_value=20, model_name="gemma-3-270m"), "layer must be between 0 and 17"),
    # JSON has no NaN, so a client can only send it as text: Gradio's own type check refuses it
    # before the handler runs (NaN numbers are covered at the function level below).
    (dict(layer_value="nan"), ""),
    (dict(kind="sink_logit", b="NaN"), ""),
    (dict(kind="window", w="nan"), ""),
    (dict(head_value="9"), CHOICE_REFUSED),
    (dict(text="word " * 600), "limit here is 512"),
    (dict(text=""), "is empty"),
    (dict(model_name="gpt-5"), CHOICE_REFUSED),
    (dict(path="flash"), CHOICE_REFUSED),
])
def test_bad_inputs_give_clear_errors_and_the_server_keeps_serving(client, overrides, message):
    with pytest.raises(AppError, match=message):
        _map(client, **overrides)
    *_, data = _map(client, layer_value=0)
    assert data["layer"] == 0


@pytest.mark.parametrize("overrides, message", [
    (dict(window=float("nan"), mask_kind="window"), "window w must be a whole number"),
    (dict(sink_logit=float("nan"), mask_kind="sink_logit"), "sink logit b must be a finite number"),
    (dict(layer=float("nan")), "layer must be a whole number"),
    (dict(head="9"), "head must be between 0 and 8"),
    (dict(impl="flash"), "must be one of eager, tiled"),
    (dict(n_generate=-1), "generated tokens must be between 0 and 32"),
])
def test_handler_messages_for_values_the_components_cannot_send(runtime, overrides, message):
    from explorer.attention import maps
    from explorer.inputs import InputError

    args = dict(prompt=PROMPT, layer=1, head="all", mask_kind="causal", window=8, sinks=2,
                sink_logit=1.0, impl="eager", n_generate=0)
    args.update({"sinks" if k == "sinks_n" else k: v for k, v in overrides.items()})
    with pytest.raises(InputError, match=message):
        maps.run(runtime.get(SMOL), **args)


def test_map_follows_the_language(runtime):
    """The map is drawn in the visitor's language, redrawn in the other one from the stored
    view after a language switch, with the head last picked."""
    import gradio as gr

    from explorer.ui.tabs.attention_map import MapOutputs, attention_map, draw_map, show_head

    outputs = attention_map(runtime, SMOL, "zh", PROMPT, 1, "all", "causal", 8, 2, 1.0, "eager", 0,
                            progress=None)
    assert isinstance(outputs, MapOutputs)      # the section's outputs, by name
    fig, mask_fig, summary, table, data, result = outputs
    assert "第 1 层，全部 9 个头" in fig.layout.title.text and "第 1 层的掩码" in mask_fig.layout.title.text
    assert list(table.columns) == ["token", "p（原模型）", "p（此掩码下）"]
    head_fig, result = show_head(result, 4, "zh")
    assert "第 4 个头" in head_fig.layout.title.text
    fig_en, mask_en, summary_en, table_en = draw_map(result, "en")
    assert "layer 1, head 4: attention probabilities" in fig_en.layout.title.text
    assert mask_en.layout.title.text.startswith("mask of layer 1:")
    assert np.array_equal(fig_en.data[0].z, head_fig.data[0].z)     # same numbers, other words
    assert list(table_en.iloc[:, 1]) == list(table.iloc[:, 1]) == data["next_tokens"]["p unmodified"]
    assert show_head(None, 4, "en") == (gr.skip(), gr.skip())
    with pytest.raises(gr.Error, match="头必须在 0 到 8 之间"):     # the handler's error, in Chinese
        show_head(result, 9, "zh")


def test_head_groups_endpoint(client):
    _, summary, data = client.predict(SMOL, "en", api_name="/head_groups")
    assert data["groups"] == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    assert data["shapes"]["q"][1] == 9 and data["shapes"]["k"][1] == 3
    assert "9 query heads, 3 KV head" in summary


def test_local_global_endpoint(client):
    _, summary, _, table, data = client.predict(SMOL, "en", api_name="/local_global")
    assert data["n_local"] == 0 and data["n_global"] == 30 and "no sliding-window" in summary
    n = data["rows"][0]["n"]
    assert data["rows"][0]["scores per global layer"] == 9 * n * (n + 1) // 2


def test_sink_grid_endpoint(client):
    first, first_s, absorbed, summary, data, status = client.predict(
        SMOL, "en", 32, 2, True, 2.0, api_name="/sink_grid")
    assert status == ""                                    # the progress line is cleared at the end
    assert len(data["first"]) == 30 and len(data["first"][0]) == 9
    assert all(0 <= v <= 1 for row in data["first"] for v in row)
    assert all(0 < v < 1 for row in data["absorbed"] for v in row)
    assert "sink logit b = 2" in summary
    assert "mass on the first token" in figure_title(first)
    first, first_s, absorbed, _, _, _ = client.predict(SMOL, "zh", 32, 2, True, 2.0, api_name="/sink_grid")
    assert figure_title(first).endswith("：第一个 token 上的质量")
    assert figure_title(first_s).endswith("：前 2 个 token 上的质量")
    assert figure_title(absorbed).endswith("：汇 logit b = 2 吸收的质量")
    with pytest.raises(AppError, match="sinks s must be between 1 and 64"):
        client.predict(SMOL, "en", 32, 0, False, 2.0, api_name="/sink_grid")


def test_streaming_endpoint_small(client):
    _, summary, data, _ = client.predict(SMOL, "en", 128, 32, 2, api_name="/streaming_ppl")
    assert set(data["perplexity"]) == {"full", "window", "sinks"}
    assert all(math.isfinite(v) and v > 1 for v in data["perplexity"].values())
    assert data["ratio"]["full"] == pytest.approx(1.0)
    assert "Measured" in summary
    # the curves just measured come back from the server's cache: the Chinese chart costs nothing
    plot, summary, _, _ = client.predict(SMOL, "zh", 128, 32, 2, api_name="/streaming_ppl")
    assert figure_title(plot).startswith("沿文本的困惑度") and "只保留窗口（w = 32" in summary
    with pytest.raises(AppError, match="smaller than the window"):
        client.predict(SMOL, "en", 128, 4, 4, api_name="/streaming_ppl")


def test_receptive_field_endpoint_agrees_with_the_rule(client):
    _, summary, table, data, _ = client.predict(SMOL, "en", "forced", 4, 32, 0, api_name="/receptive_field")
    assert data["agree"] == len(data["distances"])
    assert data["predicted_first_layer"] == data["measured_first_layer"]
    assert 131041 in table["data"][0]
    plot, *_ = client.predict(SMOL, "zh", "forced", 4, 32, 0, api_name="/receptive_field")
    assert figure_title(plot).endswith("最后一个位置的隐藏状态的变化（灰色：无变化）")
    with pytest.raises(AppError, match="window w must be between 2"):
        client.predict(SMOL, "en", "forced", 1, 32, 0, api_name="/receptive_field")


def test_streaming_text_is_chosen_from_the_measured_numbers():
    """The sentences under the StreamingLLM chart follow the numbers (Gemma-like and
    SmolLM2-like cases, measured in bench/attention.py), in both languages."""
    from explorer.attention import streaming as sinks

    def render_streaming(_, lang, numbers):
        return sinks.summary_text(numbers, lang)

    t = None

    def data(ratios):
        summary = {"past_window_from": 260, "perplexity": {p: 10 * r for p, r in ratios.items()},
                   "ratio": ratios, "seconds": {p: 60.0 for p in ratios}}
        return {"title": "M", "n_tokens": 2048, "window": 256, "sinks": 4, "own_window": 512,
                **summary, **sinks.streaming_verdict(summary)}

    gemma_like = data({"full": 1.0, "window": 1.77, "sinks": 9.16, "sinks_global": 1.19})
    text = render_streaming(t, "en", gemma_like)
    assert "does not make this model fall apart" in text and "**worse**" in text
    # the two sink policies differ only in the local layers: the sentence compares them
    assert "global layers" in text and "**9.16×** against **1.19×**" in text
    assert "the sinks hurt in those layers" in text
    assert "有害" in render_streaming(t, "zh", gemma_like)
    smol_like = render_streaming(t, "en", data({"full": 1.0, "window": 1.86, "sinks": 1.14}))
    assert "closes 84% of the gap" in smol_like and "worse" not in smol_like
    collapse = render_streaming(t, "en", data({"full": 1.0, "window": 30.0, "sinks": 1.05}))
    assert "fall apart: perplexity past the window is **30.0×**" in collapse


def last(outputs):
    """The final outputs of a streaming handler (the ones before are its progress)."""
    *_, final = outputs
    return final


def test_language_switch_redraws_the_measured_charts(runtime):
    """The sink grids, the StreamingLLM chart and the receptive-field chart are redrawn in the
    new language from what the handlers stored: same numbers, no forward pass."""
    from explorer.attention import streaming
    from explorer.ui.tabs.attention import draw_receptive, draw_sinks, draw_streaming, receptive_field, \
        sink_grid, streaming_ppl

    loaded = runtime.get(SMOL)
    *sink_en, _, _, sink_result, _, _ = last(sink_grid(loaded, "en", 32, 2, True, 2.0))
    stream_en, _, _, stream_result, _, _ = last(streaming_ppl(loaded, "en", 64, 16, 2,
                                                              streaming.StreamingCache()))
    rf_en, _, _, _, rf_result, _, _ = last(receptive_field(loaded, "en", "forced", 4, 32, 0))
    sink_en = [sink_en[0], sink_en[1], sink_en[2]["value"]]

    def no_forward(*args, **kwargs):
        raise AssertionError("a language switch ran the model")

    forward, loaded.model.forward = loaded.model.forward, no_forward
    try:
        first, first_s, absorbed, _ = draw_sinks(sink_result, "zh")
        (stream_zh, _), (rf_zh, _, reach_zh) = draw_streaming(stream_result, "zh"), draw_receptive(rf_result, "zh")
        figures = [first, first_s, absorbed["value"], stream_zh, rf_zh]
    finally:
        loaded.model.forward = forward
    assert figures[0].layout.title.text.endswith("：第一个 token 上的质量")
    assert figures[2].layout.title.text.endswith("：汇 logit b = 2 吸收的质量")
    assert figures[3].layout.xaxis.title.text == "文本中的位置（token）"
    assert figures[4].layout.yaxis.title.text == "被扰动 token 的距离 d"
    for drawn, redrawn in zip([*sink_en, stream_en, rf_en], figures):
        for a, b in zip(drawn.data, redrawn.data):
            for attr in ("x", "y", "z"):
                left, right = getattr(a, attr, None), getattr(b, attr, None)
                if left is not None and not isinstance(left[0], str):
                    np.testing.assert_array_equal(np.asarray(left, float), np.asarray(right, float))
    assert reach_zh.columns[0] == "模型" and 131041 in list(reach_zh.iloc[:, 3])
    no_logit = last(sink_grid(loaded, "zh", 32, 2, False, 2.0))
    assert no_logit[2]["visible"] is False and draw_sinks(no_logit[5], "en")[2]["value"] is None


def test_sections_redraw_from_state_only(runtime):
    """Every section keeps its result in gr.State; the language redraw reads only those states,
    and no event of the tab reads a gr.JSON (client-sent data) back as an input."""
    import gradio as gr

    from app import build_app

    demo = build_app(runtime, ("explorer.ui.tabs.attention",))
    tabs = [block for block in demo.blocks.values() if isinstance(block, gr.Tab)]
    labels = {tab.elem_id for tab in tabs}
    assert {"section-attention-section-map", "section-attention-section-lg"} <= labels
    json_ids = {block._id for block in demo.blocks.values() if isinstance(block, gr.JSON)}
    for dependency in demo.fns.values():
        assert not json_ids & {block._id for block in dependency.inputs}, dependency.name
