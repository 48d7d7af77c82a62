"""The Generate & KV-cache tab through its API (gradio_client on the in-process app, real
SmolLM2 checkpoint): /generate streams step by step and equals the engine, /stop ends it,
/kv_calculator reproduces the published figures, /long_prompt fills a prompt past Gemma's
window, and bad inputs come back as plain errors while the server keeps serving."""
from __future__ import annotations

import json
import re
import time

import pytest

from explorer.generate import checks, request as req
from tests.helpers import LONG_PROMPT, wait_for_texts

MODEL = "smollm2-135m-instruct"
PROMPT = "Name a colour."
# a prompt SmolLM2 answers at length (greedy: past 239 tokens in fp32 and bf16), for the runs a


def served_tolerance(runtime) -> float:
    """C4's bound for the precision the served SmolLM2 decodes with (its measured default,
    bf16 where the CPU has AVX512_BF16, else fp32; EXPLORER_WEIGHTS first)."""
    from engine.quantized import configured_weights
    return checks.c4_tolerance(configured_weights(runtime.get(MODEL).model))


# Gradio's own check of a dropdown value, or the app's (whichever answers first)
CHOICE_REFUSED = "not in the list of choices|must be one of"


def args(**overrides):
    values = dict(model=MODEL, lang="en", prompt=PROMPT, max_new=5, temperature=0.0, top_k=0,
                  top_p=1.0, seed=0, policy="full", window=64, sinks=4, compare=True, check=True)
    values.update(overrides)
    return list(values.values())


def plot_data(value) -> dict:
    """A gr.Plot output as the client receives it -> the Plotly figure dict."""
    assert value is not None, "plot output is empty"
    plot = value["plot"] if isinstance(value, dict) and "plot" in value else value
    return json.loads(plot) if isinstance(plot, str) else plot


def test_generate_streams_step_by_step_and_equals_the_engine(client, runtime, monkeypatch):
    from models.generate import SamplingParams, generate

    # The tab merges decode steps into at most one message per TEXT_INTERVAL_S; a 5-token run
    # lasts about that long here, so it may arrive in 2 messages. Step by step is checked with
    # merging off (the merging itself: tests/unit/test_generate_explorer.py; a long run at the real
    # interval: test_stop_ends_the_run_with_its_own_last_message and the browser test).
    monkeypatch.setattr("explorer.ui.tabs.generate.TEXT_INTERVAL_S", 0.0)
    job = client.submit(*args(), api_name="/generate")
    final = job.result(timeout=300)
    outputs = job.outputs()
    texts = [out[0] for out in outputs]
    # The text grows as tokens are decoded: each streamed text extends the one before. (When
    # the client is slower than decoding, steps it missed arrive merged in the next message.)
    growing = [t for i, t in enumerate(texts) if i == 0 or t != texts[i - 1]]
    assert len(growing) >= 3
    for before, after in zip(growing, growing[1:]):
        assert after.startswith(before.rstrip()) or len(after) >= len(before)

    loaded = runtime.get(MODEL)
    ids, chat = req.encode_prompt(loaded.tokenizer, PROMPT)
    assert chat
    # the engine's own steps on the products the served steps read (fp32: its own weights)
    from engine.quantized import configured_weights, weights_of
    from models.layers import weight_provider
    weights = configured_weights(loaded.model)
    with weight_provider(weights_of(loaded.model, weights).table if weights != "fp32" else None):
        direct = [s.token_id for s in generate(loaded.model, ids, SamplingParams(max_new_tokens=5))]
    assert final[0] == loaded.tokenizer.decode(direct, skip_special_tokens=True)

    status, evidence = final[1], final[7]
    assert status.startswith("Done") and f"prompt {len(ids)} tokens (chat template)" in status
    # C3: bytes == formula at every step; C4: within tolerance; C1: the replay ran
    assert "(equal, checked at all 5 steps)" in evidence
    c4 = float(re.search(r"over 5 generated tokens = \*\*([0-9.e+-]+)\*\*", evidence).group(1))
    assert c4 <= served_tolerance(runtime)
    assert "**C1**" in evidence and "same next token at 4 of 4" in evidence

    bars = plot_data(final[2])
    t_end = len(ids) + 4
    used = [y * 1024 for trace in bars["data"]
            if trace["type"] == "bar" and trace["name"].startswith("30 layers") for y in trace["y"]]
    assert used == [2 * 3 * 64 * 4 * t_end] * 30
    # the whole buffers, read back: preallocated for prompt + max new tokens
    allocated = next(trace for trace in bars["data"] if trace["name"] == "allocated (whole buffers)")
    assert [y * 1024 for y in allocated["y"]] == [2 * 3 * 64 * 4 * (len(ids) + 5)] * 30
    assert f"take **{30 * 2 * 3 * 64 * 4 * (len(ids) + 5):,} B**" in evidence
    growth = plot_data(final[3])
    measured_line = next(tr for tr in growth["data"] if tr["name"] == "30 layers: full (global)")
    assert measured_line["x"] == list(range(len(ids), t_end + 1))
    assert measured_line["y"][-1] * 1024 == 2 * 30 * 3 * 64 * 4 * t_end
    latency = plot_data(final[4])
    names = {trace.get("name") for trace in latency["data"]}
    assert {"with KV cache: your run", "with KV cache: replayed", "no cache (recompute all)",
            "with KV cache: computed", "with KV cache: needed by the mask",
            "no cache (recompute all): computed", "no cache (recompute all): needed by the mask"} <= names
    diff = plot_data(final[5])
    assert len(diff["data"][0]["y"]) == 5 and max(diff["data"][0]["y"]) <= served_tolerance(runtime)
    # C4's (T, S) mask over the cache's slots: the last 8 tokens as one chunk at cache.pos =
    # t_end - 8, each column a key the engine attended over (a full cache: positions 0..t_end-1)
    mask = plot_data(final[6])["data"][0]
    assert len(mask["z"]) == 8 and len(mask["z"][0]) == t_end
    assert [sum(row) for row in mask["z"]] == list(range(t_end - 7, t_end + 1))
    assert mask["customdata"][0] == list(range(t_end))

    # the visitor's table of runs, drawn after the run from their session state
    history = client.predict("en", api_name="/runs")
    assert history["data"][-1][4] == 5 and history["data"][-1][6] == "✓"


def test_cache_policy_sinks_window_on_the_real_model(client, runtime):
    final = client.predict(*args(policy="sinks", window=16, sinks=4, max_new=3, compare=False),
                           api_name="/generate")
    evidence = final[7]
    assert "**C9**: all 30 layers have a window: each holds 20 tokens (capped at 20)" in evidence
    assert "Their buffers have 20 slots and never grow." in evidence
    assert "(equal, checked at all 3 steps)" in evidence
    c4 = float(re.search(r"= \*\*([0-9.e+-]+)\*\*", evidence.split("**C4**")[1]).group(1))
    assert c4 <= served_tolerance(runtime)
    bars = plot_data(final[2])
    assert [t["name"] for t in bars["data"] if t["type"] == "bar"] == [
        "allocated (whole buffers)", "30 layers: 4 sinks + window 16"]
    allocated = bars["data"][0]
    assert [y * 1024 for y in allocated["y"]] == [2 * 3 * 64 * 4 * 20] * 30   # 4 + 16 slots


# Out-of-range slider values are refused by Gradio itself (its own message); the rest by the
# tab's server-side checks (explorer/generate/request.py parse_request), in plain words. NaN and inf
# cannot travel through the JSON API; tests/unit/test_generate_explorer.py checks them.
@pytest.mark.parametrize("overrides, message", [
    (dict(prompt="   "), "The prompt is empty"),
    (dict(top_p=0), "less than minimum value 0.05"),
    (dict(max_new=5000), "greater than maximum value 256"),
    (dict(policy="sinks", window=4, sinks=4), "The number of sinks s (4) must be smaller than the window w (4)"),
    (dict(policy="sinks", window=8, sinks=0), "at least one sink"),
    (dict(policy="lru"), "lru"),
    (dict(model="gpt-5"), CHOICE_REFUSED),
    (dict(prompt="word " * 1100), "the limit here is 1,024"),
])
def test_bad_inputs_come_back_as_plain_errors(client, overrides, message):
    from gradio_client.exceptions import AppError

    with pytest.raises(AppError) as error:
        client.predict(*args(**overrides), api_name="/generate")
    assert re.search(message, str(error.value)) if message is CHOICE_REFUSED else message in str(error.value)


def test_server_keeps_serving_after_errors(client):
    from gradio_client.exceptions import AppError

    with pytest.raises(AppError):
        client.predict(*args(window=5000), api_name="/generate")
    final = client.predict(*args(max_new=2, compare=False, check=False), api_name="/generate")
    assert final[1].startswith("Done")


def test_stop_ends_the_run_with_its_own_last_message(client):
    """Stop (/stop, what the page's button calls) raises the run's flag: the engine stops at
    its next step and the run's last message says where, its text,
    evidence and row drawn from that one state (a cancel from outside once left a note of 64
    tokens above a row of 80). A loaded machine may serve /stop only after the 200 tokens are
    out (seen once in CI): then the run is not a stopped one, and it goes again."""
    for _attempt in range(3):
        job = client.submit(*args(prompt=LONG_PROMPT, max_new=200, compare=False, check=False),
                            api_name="/generate")
        wait_for_texts(job, 3, timeout=120)
        stopped_at = time.time()
        client.predict(api_name="/stop")
        final = job.result(timeout=60)
        if final[1].startswith("**Stopped**"):
            break
    text_out, status, *_, evidence, strip = final
    assert status.startswith("**Stopped** after **"), status
    n = int(re.search(r"after \*\*(\d+)\*\*", status).group(1))
    assert 3 <= n < 200 and time.time() - stopped_at < 60
    assert f"checked at all {n} steps" in evidence
    assert strip.count('class="gen-tok"') == n   # the token strip: the same n tokens
    # the row in the visitor's table is that run, stopped after the same n tokens
    table = client.predict("en", api_name="/runs")
    row = dict(zip(table["headers"], table["data"][-1]))
    assert row["new tokens"] == f"{n} (stopped)"
    assert row["max |Δ logit|"] == "—" and row["bytes = formula"] == "✓"
    assert text_out.replace("\n", " ").startswith(row["text"].rstrip("…"))
    # the model's concurrency slot is free again at once: a 200-token run would hold it for
    # minutes on this CPU, a 1-token request now takes one prefill
    again = client.predict(*args(max_new=1, compare=False, check=False), api_name="/generate")
    assert again[1].startswith("Done")
    # a Stop with nothing running stops only runs queued before it, not the next one
    client.predict(api_name="/stop")
    after = client.predict(*args(max_new=2, compare=False, check=False), api_name="/generate")
    assert after[1].startswith("Done")


def test_a_cancel_from_outside_still_leaves_the_run_its_row(client):
    """A run closed from outside (an API client's job.cancel(), a closed page) cannot write
    its last row: the row of its last message, marked partial, is settled as stopped."""
    job = client.submit(*args(prompt=LONG_PROMPT, max_new=200, compare=False, check=False),
                        api_name="/generate")
    wait_for_texts(job, 3, timeout=120)
    job.cancel()
    cancelled_at = time.time()
    final = client.predict(*args(max_new=1, compare=False, check=False), api_name="/generate")
    assert final[1].startswith("Done") and time.time() - cancelled_at < 60
    table = client.predict("en", api_name="/runs")
    rows = [dict(zip(table["headers"], r)) for r in table["data"]]
    assert any(str(r["new tokens"]).endswith(" (stopped)") for r in rows[:-1]), rows


def test_calculator_reproduces_published_figures(client):
    client.predict(MODEL, "en", api_name="/load_model")  # what the page does on load
    table, variants = client.predict(MODEL, "en", 32768, 2, api_name="/kv_calculator")
    rows = {row[0]: dict(zip(table["headers"], row)) for row in table["data"]}
    assert rows["Llama-2-7B"]["per token"] == "0.500 MiB"
    assert rows["Llama-2-7B"]["at 32,768 tokens"] == "16.00 GiB"
    assert rows["Llama 3 8B"]["q heads : kv heads"] == "32 : 8"
    assert rows["DeepSeek-V3"]["elements / token / layer"] == "576"
    assert rows["Mistral 7B"]["at 32,768 tokens"] == "512.00 MiB"  # capped at 4096 tokens
    assert "SmolLM2-135M-Instruct (loaded)" in rows
    assert [r[0] for r in variants["data"]] == ["MHA", "GQA", "MQA"]
    from gradio_client.exceptions import AppError

    with pytest.raises(AppError, match="Context length must be between 1 and 10000000"):
        client.predict(MODEL, "en", 20_000_000, 2, api_name="/kv_calculator")
    with pytest.raises(AppError, match="less than minimum value 1"):
        client.predict(MODEL, "en", 0, 2, api_name="/kv_calculator")


def test_long_prompt_passes_gemmas_window(client, runtime):
    text = client.predict(api_name="/long_prompt")
    loaded = runtime.get(MODEL)
    n = len(loaded.tokenizer(text)["input_ids"])
    assert 520 <= n <= req.MAX_PROMPT_TOKENS


# ----- the handlers called directly (no server) ---------------------------------------------
def _is_skip(value) -> bool:
    return isinstance(value, dict) and value.get("__type__") == "update"


def test_run_handler_streams_and_redraws_in_the_other_language(runtime):
    from explorer.ui.tabs import generate as tab

    *messages, final = tab.run_generate(runtime, MODEL, "en", PROMPT, 3, 0.0, 0, 1.0, 0, "full",
                                        64, 4, False, True, [])
    text, status, bars, growth, latency, diff, mask, evidence, runs, session, strip = final
    # once the charts exist, no message answers gr.skip() on a component: Gradio builds a new
    # component for every skip, Python that holds the GIL the shared decode needs
    charted = [m for m in messages if not any(_is_skip(v) for v in m[2:8])]
    assert charted, "no message carried charts"
    after = messages[messages.index(charted[0]):]
    assert not any(_is_skip(v) for m in after for v in m), "a skip after the first charts"
    assert status.startswith("Done") and session.phase == "done" and len(session.records) == 3
    assert runs[-1]["new"] == 3 and not runs[-1]["partial"]
    assert max(session.logit_diffs) <= checks.c4_tolerance(session.weights)
    zh = tab.draw_run(session, "zh")
    assert zh[0].startswith("完成") and len(zh) == 7
    # the token strip: each token with its step's alternatives, redrawn in Chinese from the run
    assert strip.count('class="gen-tok"') == 3 and strip == tab.draw_strip(session, "en")
    assert "第 0 步" in tab.draw_strip(session, "zh") and "Step 0" in strip
    # the same bars in both languages: the numbers come from the stored session
    en_bars, zh_bars = tab.draw_run(session, "en")[1], zh[1]
    assert [list(t.y) for t in en_bars.data] == [list(t.y) for t in zh_bars.data]
    assert en_bars.layout.title.text != zh_bars.layout.title.text
    from explorer.locales import text

    table = tab.show_runs("zh", runs)
    assert list(table.columns) == [text(f"generate.col.{c}", "zh") for c in tab.HISTORY_COLUMNS]
    assert list(table.columns) != list(tab.draw_runs(runs, "en").columns)
    assert table.iloc[-1, 4] == 3 and tab.settle_runs(runs) == runs


def test_calculator_handler_and_its_redraw(runtime):
    import gradio as gr

    from explorer.ui.tabs import generate_calculator as tab

    runtime.get(MODEL)
    table, variants, result = tab.calculate(runtime, MODEL, "zh", 32768, 2)
    en_table, en_variants = tab.draw_calculator(result, "en")
    assert list(table.columns) != list(en_table.columns)
    assert table.iloc[0, 7] == en_table.iloc[0, 7] == "16.00 GiB"   # Llama-2-7B at 32k tokens
    assert "SmolLM2-135M-Instruct（已加载）" in list(table.iloc[:, 0])
    with pytest.raises(gr.Error, match="上下文长度"):
        tab.calculate(runtime, MODEL, "zh", 0, 2)


def test_a_run_that_ends_before_its_first_token_still_gets_its_row():
    """A deadline can pass during the prefill: the run ends with no step recorded, and its row
    in the visitor's table says so instead of failing on the missing cache reading."""
    from explorer.generate.session import Session
    from explorer.ui.tabs.generate import history_row

    request = req.parse_request("Hello", 8)
    session = Session(model_name="SmolLM2", config=None, element_bytes=4, layouts=[],
                      prompt_ids=[1, 2, 3], chat=False, request=request, phase="done",
                      stopped="deadline")
    row = history_row(session, 3)
    assert row["run"] == 3 and row["new"] == 0 and row["prompt"] == 3
    assert row["cache"] == "0 B" and row["c4"] == "—"


def test_the_empty_charts_are_built_and_serialised_once():
    """Thirty runs starting together all show the same "pending" charts: one figure and one
    serialisation for all of them, while a drawn chart is serialised anew."""
    from explorer.generate import figures
    from explorer.ui.tabs import generate as tab

    a = figures.empty_figure("t", "en", message="generate.fig.c4_pending")
    assert figures.empty_figure("t", "en", message="generate.fig.c4_pending") is a
    assert figures.is_shared(a) and a is not figures.empty_figure("t", "zh", message="generate.fig.c4_pending")
    assert tab._plot_data(a) is tab._plot_data(a)
    drawn = figures.plotting.empty_figure("x")
    assert not figures.is_shared(drawn) and tab._plot_data(drawn) is not tab._plot_data(drawn)


def test_the_step_that_ends_decoding_goes_out_as_text_and_the_next_draws_the_charts(runtime, monkeypatch):
    """The snapshot of the last decode step is sent with the text and the charts already held:
    the snapshot after it (here "done" at once) draws them, so charts are not built twice at
    the moment a class's runs end together."""
    from explorer.generate import figures
    from explorer.generate.session import stream_generation
    from explorer.ui.tabs import generate as tab

    loaded = runtime.get(MODEL)
    request = req.parse_request(PROMPT, 3, compare_no_cache=False, check_full_forward=False)
    ids, chat = req.encode_prompt(loaded.tokenizer, PROMPT)
    sessions = [s.snapshot() for s in stream_generation(loaded.model, loaded.tokenizer, ids, request,
                                                         chat=chat)]
    assert [s.phase for s in sessions[-2:]] == ["decode", "done"] and not sessions[-2].streaming
    monkeypatch.setattr(tab, "in_background", lambda *args, **kwargs: iter(sessions))
    drawn = []
    layer_bytes = figures.layer_bytes_figure

    def counted(session, lang):
        drawn.append((session.phase, len(session.records)))
        return layer_bytes(session, lang)

    monkeypatch.setattr(figures, "layer_bytes_figure", counted)
    messages = list(tab.run_generate(runtime, MODEL, "en", PROMPT, 3, 0.0, 0, 1.0, 0, "full", 64, 4,
                                     False, False, []))
    assert len(messages) == len(sessions)
    charted, ending, final = messages[-3], messages[-2], messages[-1]
    assert ending[0] == final[0] == sessions[-1].text          # the last text goes out first
    assert all(a is b for a, b in zip(ending[2:8], charted[2:8]))   # with the charts held
    assert drawn == [("decode", 2), ("done", 3)]               # drawn once at the end, not twice
    assert final[1].startswith("Done") and final[8][-1]["new"] == 3
