"""The RoPE tab's API through gradio_client on the in-process app: every endpoint answers with
real numbers, bad inputs come back as clear gr.Error messages, and the server keeps serving."""
from __future__ import annotations

import json
import re

import pytest

SMOL = "smollm2-135m-instruct"
GEMMA = "gemma-3-270m"
TEXT = ("The import system. Python code in one module gains access to the code in another module "
        "by the process of importing it. The import statement is the most common way of invoking "
        "the import machinery, but it is not the only way. ") * 3


def figure(value) -> dict:
    """gr.Plot's output through the client -> the Plotly figure dict."""
    plot = value["plot"] if isinstance(value, dict) and "plot" in value else value
    return json.loads(plot) if isinstance(plot, str) else plot


def rows_of(array) -> int:
    """Row count of a Plotly array, plain list or Plotly 6's typed {"bdata", "shape"} form."""
    if isinstance(array, dict):
        return int(str(array["shape"]).split(",")[0])
    return len(array)


def numbers_after(label: str, text: str) -> list[float]:
    row = next(line for line in text.splitlines() if line.startswith(f"| {label}"))
    return [float(x) for x in re.findall(r"\*\*([-+0-9.e]+)\*\*", row)]


def expect_error(client, match: str, *args, api_name: str):
    from gradio_client.exceptions import AppError

    with pytest.raises(AppError, match=match):
        client.predict(*args, api_name=api_name)


def test_frequencies_endpoint(client):
    # the client sees the section's outputs only, not the gr.State holding the result
    plot, text, table = client.predict("en", "10000, 100k, 500k, 1M", 64, 8192,
                                       api_name="/rope_frequencies")
    fig = figure(plot)
    assert len(fig["data"]) == 9                   # 4 bases × (θ, wavelength) + the context line
    assert "base **10k**: 25 of 32 pairs complete a full turn" in text
    assert "Computed from the formula" in text and "**31 of the 31 other pairs slow down**" in text
    rows = table["data"]
    assert [r[0] for r in rows] == ["10k", "100k", "500k", "1M"]
    zh_plot, zh_text, zh_table = client.predict("zh", "10000, 1M", 256, 32768, api_name="/rope_frequencies")
    assert "一圈也转不完" in zh_text
    assert [a["text"] for a in figure(zh_plot)["layout"]["annotations"]] == ["各维度对的频率", "各维度对的波长"]
    assert figure(plot)["layout"]["annotations"][0]["text"] == "Frequency of each pair"
    assert "谁在用" in zh_table["headers"] and "who uses it" in table["headers"]


@pytest.mark.parametrize("args, match", [
    (("en", "1", 64, 8192), "greater than 1"),
    (("en", "nan", 64, 8192), "finite"),
    (("en", "10000", 63, 8192), "even"),
    (("en", "10000", 64, 0), "context length"),
    (("en", "", 64, 8192), "at least one"),
])
def test_frequencies_bad_inputs(client, args, match):
    expect_error(client, match, *args, api_name="/rope_frequencies")


def test_real_q_k_toeplitz_then_pair_rotation(client):
    both, one, real, text = client.predict(SMOL, "en", TEXT, 3, 2, 40, 10, 64, 64, api_name="/rope_qk")
    both_spread = numbers_after("both rotated", text)
    one_spread = numbers_after("only q rotated", text)
    assert both_spread[1] < 1e-4 < 1e-2 < one_spread[1]
    assert "Layer 3 (causal, base 100k), head 2 (KV head 0)" in text
    # each verdict is chosen from its number (tests/checkpoints/test_rope_explorer.py feeds the failing cases)
    assert "**Both rotated: constant along every diagonal.**" in text
    assert "**Only q rotated: the absolute position remains.**" in text
    assert "reproduces the q and k the model used" in text
    assert rows_of(figure(both)["data"][0]["z"]) == 64
    assert rows_of(figure(real)["data"][0]["z"]) == 64
    # the pair endpoint reads the capture kept in this session's state
    plot, pair_text = client.predict("en", 5, 100, api_name="/rope_pair")
    assert "Pair 5 (dims 5 and 37)" in pair_text and "At position 100" in pair_text
    assert len(figure(plot)["data"]) == 5


def test_real_q_k_on_gemma_global_layer(client):
    _, _, _, text = client.predict(GEMMA, "en", TEXT, 5, 3, 30, 5, 32, 48, api_name="/rope_qk")
    assert "Layer 5 (causal, base 1M), head 3 (KV head 0)" in text
    assert numbers_after("both rotated", text)[1] < 1e-4
    both, one, real, text = client.predict(GEMMA, "zh", TEXT, 0, 0, 30, 5, 32, 48, api_name="/rope_qk")
    assert "滑动窗口 512" in text and "base 10k" in text
    # the charts are drawn in Chinese too
    assert figure(both)["layout"]["xaxis"]["title"]["text"] == "键的位置 n（token）"
    assert figure(one)["layout"]["xaxis"]["title"]["text"] == "键的位置 n（token；k 未旋转）"
    assert figure(real)["data"][0]["colorbar"]["title"]["text"] == "分数 × 缩放系数"
    plot, _ = client.predict("zh", 3, 20, api_name="/rope_pair")
    assert figure(plot)["layout"]["xaxis"]["title"]["text"] == "q[3]（维度 3）"


@pytest.mark.parametrize("args, match", [
    ((SMOL, "en", TEXT, 30, 0, 10, 5, 32, 32), "greater than maximum value 29"),   # the slider's own check
    ((GEMMA, "en", TEXT, 18, 0, 10, 5, 32, 32), "layer must be between 0 and 17"),
    ((GEMMA, "en", TEXT, 3, 4, 10, 5, 32, 32), "head must be between 0 and 3"),
    ((SMOL, "en", TEXT, 3, 0, -1, 5, 32, 32), "query token must be between 0"),
    ((SMOL, "en", "   ", 3, 0, 10, 5, 32, 32), "empty"),
    ((SMOL, "en", TEXT, 3, 0, 10, 5, 1024, 32), "greater than maximum value 256"),
    (("no-such-model", "en", TEXT, 3, 0, 10, 5, 32, 32), "not in the list of choices|no-such-model"),
])
def test_real_q_k_bad_inputs(client, args, match):
    expect_error(client, match, *args, api_name="/rope_qk")


def test_distance_endpoint(client):
    plot, text = client.predict(SMOL, "en", TEXT, 48, api_name="/rope_distance")
    assert text.startswith("30 layers, 48 tokens")
    assert rows_of(figure(plot)["data"][0]["z"]) == 30
    zh, _ = client.predict(SMOL, "zh", TEXT, 16, api_name="/rope_distance")
    assert figure(zh)["layout"]["xaxis"]["title"]["text"] == "距离 m − n（token；0 = token 自身）"
    assert figure(zh)["data"][0]["y"][0] == "L0 全局"


def test_perplexity_and_continuation_endpoints(client):
    plot, text, table, note = client.predict(SMOL, "en", "10000, 10M", "full", 128,
                                             api_name="/rope_perplexity")
    bases = [row[0] for row in table["data"]]
    assert bases == ["100k (trained)", "10k", "10M"]
    assert "Base 100k (trained): perplexity" in text and note == ""
    assert "**Every changed base raised the perplexity** by at least 1%" in text
    assert len(figure(plot)["data"]) == 3
    zh_plot, zh_text, zh_table, _ = client.predict(SMOL, "zh", "10M", "full", 128, api_name="/rope_perplexity")
    assert [t["name"] for t in figure(zh_plot)["data"]] == ["base 100k（训练值）", "base 10M"]
    assert figure(zh_plot)["layout"]["xaxis"]["title"]["text"] == "被预测 token 的位置（token）"
    assert [row[0] for row in zh_table["data"]] == ["100k（训练值）", "10M"]
    cont, _ = client.predict(SMOL, "en", 7, "full", 128, 4, api_name="/rope_continue")
    assert "| 100k (trained) |" in cont and "| 10M |" in cont
    assert re.search(r"The two continuations agree on (all 4 tokens|the first \d of 4 tokens)", cont)
    expect_error(client, "no sliding-window layers", SMOL, "en", "10000", "sliding", 128,
                 api_name="/rope_perplexity")
    expect_error(client, "greater than 1", SMOL, "en", "0.5, 10000", "full", 128,
                 api_name="/rope_perplexity")
    expect_error(client, "no sliding-window layers", SMOL, "en", 5, "sliding", 128, 4,
                 api_name="/rope_continue")


def test_scaling_endpoint_and_server_still_serves(client):
    plot = client.predict("en", 64, 100000, 4, 8192, api_name="/rope_scaling")
    names = {trace["name"] for trace in figure(plot)["data"]}
    assert {"original", "linear interpolation (PI)", "NTK-aware", "YaRN"} <= names
    assert "extended context 32,768 tokens" in names
    zh = figure(client.predict("zh", 64, 100000, 4, 8192, api_name="/rope_scaling"))
    assert {"原始", "线性插值（PI）", "扩展后的上下文 32,768 个 token"} <= {t["name"] for t in zh["data"]}
    expect_error(client, "less than minimum value 1", "en", 64, 100000, 0.5, 8192,   # the slider's check
                 api_name="/rope_scaling")
    expect_error(client, "greater than 1", "en", 64, 1, 2, 8192, api_name="/rope_scaling")
    expect_error(client, "even", "en", 7, 100000, 2, 8192, api_name="/rope_scaling")
    _, text, _ = client.predict("en", "10000", 64, 100, api_name="/rope_frequencies")
    assert "base **10k**" in text


def test_language_switch_redraws_the_stored_results(runtime):
    """Each section's draw (what the shell's one language switch calls) redraws its stored
    result in the new language, with the same numbers and no forward pass."""
    import numpy as np

    from explorer.rope import pair
    from explorer.ui.tabs import rope as tab
    from explorer.ui.tabs import rope_context
    from tests.figure_checks import assert_same_numbers, english_left

    loaded = runtime.get(SMOL)
    fixed = lambda *args, **kwargs: None  # noqa: E731  (no progress bar outside a server)
    stored = {
        "freq": tab.frequencies("en", "10k, 1M", 64, 8192)[-1],
        "qk": tab.capture_and_toeplitz(runtime, SMOL, "en", TEXT, 1, 2, 20, 4, 16, 32, progress=fixed)[-2],
        "dist": tab.distance(runtime, SMOL, "en", TEXT, 16, progress=fixed)[-1],
        # the long handlers are generators: their last message holds the result (then the note)
        "sweep": list(rope_context.sweep(runtime, SMOL, "en", "10M", "full", 128, progress=fixed)),
        "cont": list(rope_context.continuation(runtime, SMOL, "en", 7, "full", 128, 4, progress=fixed))[-1][-2],
        "scale": tab.scaling("en", 64, 1e5, 4, 8192)[-1],
    }
    # a sweep's first message clears the last one's figure, table and state (see the Stop test)
    assert stored["sweep"][0][:1] + stored["sweep"][0][2:4] == (None, None, None)
    stored["sweep"] = stored["sweep"][-1][-2]
    stored["pair"] = tab.rotate_pair("en", stored["qk"], 3, 40)[-1]
    # a capture also rotates a pair of its q (the pair section's first result)
    first = tab.capture_and_toeplitz(runtime, SMOL, "en", TEXT, 1, 2, 20, 4, 16, 32, 7, 50, progress=fixed)[-1]
    assert (first.layer, first.head, first.token, first.position) == (1, 2, 20, 50)
    assert first.pair == pair.visible_pair(stored["qk"], 7)
    draws = {"freq": tab.draw_frequencies, "qk": tab.draw_toeplitz, "pair": tab.draw_pair,
             "dist": tab.draw_distance, "sweep": rope_context.draw_sweep, "cont": rope_context.draw_continuation,
             "scale": tab.draw_scaling}

    def no_forward(*args, **kwargs):
        raise AssertionError("a language switch ran the model")

    forward, loaded.model.forward = loaded.model.forward, no_forward
    try:
        zh = {name: draw(stored[name], "zh") for name, draw in draws.items()}
        en = {name: draw(stored[name], "en") for name, draw in draws.items()}
    finally:
        loaded.model.forward = forward
    figures = [(zh["freq"][0], en["freq"][0]), *zip(zh["qk"][:3], en["qk"][:3]), (zh["pair"][0], en["pair"][0]),
               (zh["dist"][0], en["dist"][0]), (zh["sweep"][0], en["sweep"][0]), (zh["scale"], en["scale"])]
    token_words = set(re.findall(r"[A-Za-z]+", TEXT))              # hover shows the text's tokens
    for chinese, english in figures:
        assert not english_left(chinese) - token_words, english_left(chinese) - token_words
        assert_same_numbers(chinese, english)
    assert zh["qk"][0].layout.yaxis.title.text == "查询的位置 m（token）"
    assert zh["pair"][0].layout.xaxis.title.text == "q[3]（维度 3）" and en["pair"][0].layout.xaxis.title.text == "q[3] (dimension 3)"
    assert zh["dist"][0].layout.yaxis.title.text == "层" and en["dist"][0].layout.yaxis.title.text == "layer"
    assert zh["sweep"][0].data[0].name == "base 100k（训练值）" and en["sweep"][0].data[0].name == "base 100k (trained)"
    assert "谁在用" in zh["freq"][2].columns and "who uses it" in en["freq"][2].columns
    assert list(zh["sweep"][2].iloc[:, 0]) == ["100k（训练值）", "10M"]
    np.testing.assert_array_equal(zh["sweep"][2].iloc[:, 1:].to_numpy(), en["sweep"][2].iloc[:, 1:].to_numpy())
    assert "贪心续写" in zh["cont"] and "greedy continuation" in en["cont"]
    assert "Layer 1 (causal, base 100k), head 2" in en["qk"][3] and "层" in zh["qk"][3]


def test_server_limits_equal_the_sliders(runtime):
    """Every slider of the tab offers exactly the range its experiment's run accepts."""
    import app
    from explorer.rope import capture, continuation, pair, sweep, toeplitz

    demo = app.build_app(runtime, ("explorer.ui.tabs.rope",))
    sliders = {block.elem_id: block for block in demo.blocks.values()
               if getattr(block, "elem_id", None) and type(block).__name__ == "Slider"}
    expected = {
        "rope-qk-tokens": (capture.MIN_CAPTURE_TOKENS, capture.MAX_CAPTURE_TOKENS),
        "rope-qk-positions": (toeplitz.MIN_TOEPLITZ_POSITIONS, toeplitz.MAX_TOEPLITZ_POSITIONS),
        "rope-pair-position": (0, pair.MAX_POSITION),
        "rope-sweep-tokens": (sweep.MIN_SWEEP_TOKENS, sweep.MAX_SWEEP_TOKENS),
        "rope-cont-base": (continuation.MIN_LOG10_BASE, continuation.MAX_LOG10_BASE),
        "rope-cont-new": (continuation.MIN_NEW_TOKENS, continuation.MAX_NEW_TOKENS),
    }
    for elem_id, (low, high) in expected.items():
        assert (sliders[elem_id].minimum, sliders[elem_id].maximum) == (low, high), elem_id
    assert (sweep.MIN_SWEEP_TOKENS, sweep.MAX_SWEEP_TOKENS) == (128, 2048)
    with pytest.raises(Exception, match="between 3 and 8"):
        continuation.check_log10_base(9)


def test_stop_ends_a_running_sweep(app_url, runtime, client):
    """Stop (/rope_perplexity_stop, what the page's button calls) ends a sweep between two
    forwards: at most the forward under way finishes, none starts after it, the run's last
    message says "Stopped.", the last sweep's chart and table are gone (not left to be read as
    the stopped sweep's), and the server answers the next request."""
    import time

    from gradio_client import Client

    model = runtime.get(SMOL).model
    calls = []
    forward = model.forward

    def counted(*args, **kwargs):
        calls.append(1)
        return forward(*args, **kwargs)

    # the cancel call waits for the forward under way: longer than httpx's default 5 s on a busy CPU
    own = Client(app_url, verbose=False, httpx_kwargs={"timeout": 120})
    done = own.predict(SMOL, "en", "1M", "full", 128, api_name="/rope_perplexity")
    assert done[0] is not None and "perplexity **" in done[1] and done[2]["data"]   # a sweep to clear
    model.forward = counted
    try:
        job = own.submit(SMOL, "en", "10000, 1M, 10M, 100M, 1B", "full", 128, api_name="/rope_perplexity")
        deadline = time.monotonic() + 240
        while not calls and time.monotonic() < deadline:
            time.sleep(0.05)
        assert calls, "the sweep never started"
        own.predict(api_name="/rope_perplexity_stop")
        cancelled_at = len(calls)
        final = job.result(timeout=240)
        time.sleep(2)
        assert len(calls) <= cancelled_at + 1 and len(calls) < 6, (cancelled_at, len(calls))
    finally:
        del model.forward
        own.close()
    assert final[-1] == "Stopped." and final[1] == ""   # the note, and no progress line left
    # no chart or table of the last sweep: the first message cleared them, none drew a new one
    messages = job.outputs()
    assert messages[0][0] is None and not messages[0][2]["data"]
    assert all(isinstance(m[0], dict) and m[0].get("__type__") == "update" for m in messages[1:])
    assert not any("perplexity **" in str(out) for out in job.outputs())   # no final summary
    _, text, _ = client.predict("en", "10000", 64, 100, api_name="/rope_frequencies")
    assert "base **10k**" in text


def test_each_long_event_has_a_stop_and_a_time_limit(runtime):
    """The sweep and the continuation (many forwards each) have a Stop that ends them and a
    Gradio time limit of their run's limit plus one forward; the run's own limit is what ends
    the work (explorer/rope: time_limit_s)."""
    import app
    from explorer.ui.tabs import rope as tab
    from explorer.ui.tabs import rope_context
    from tests.helpers import stop_buttons

    demo = app.build_app(runtime, ("explorer.ui.tabs.rope",))
    events = {fn.api_name: fn for fn in demo.fns.values() if fn.api_name}
    config = demo.get_config_file()
    for api_name, limit in (("rope_perplexity", rope_context.SWEEP_TIME_LIMIT_S),
                            ("rope_continue", rope_context.CONTINUATION_TIME_LIMIT_S)):
        event = events[api_name]
        assert event.time_limit == int(limit) + rope_context.EVENT_SLACK_S
        [stop] = stop_buttons(demo, event.fn)
        assert stop.queue is False and not stop.cancels   # a flag: the run ends itself
