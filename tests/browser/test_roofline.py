"""The measured decode roofline (C2): the step's bytes and FLOPs against hand counts (a windowed
layer included) and against the real cache tensors, the element size read from the tensors,
the device measurement (cached, timestamped, one at a time), the knee read from measured
tokens/s, evidence_c2 on SmolLM2 and its criterion failing on broken inputs, the section's API
and the section in a real browser in English and Chinese."""
from __future__ import annotations

import dataclasses
import json
import math
import re
import threading
import time

import pytest
import torch

from explorer.generate import device_roof, roofline, roofline_figures, step_cost

MODEL = "smollm2-135m-instruct"
SMALL = device_roof.RoofSettings(bandwidth_bytes=32 << 20, matmul_n=256, repeats=2)


@pytest.fixture
def fresh_cache(monkeypatch):
    """An empty device-roof cache for this test (the process's own is left as it was)."""
    monkeypatch.setattr(device_roof, "_CACHE", {})


def fake_roof(bandwidth: float = 10e9, flops: float = 50e9) -> device_roof.DeviceRoof:
    return device_roof.DeviceRoof("cpu", "float32", 1, bandwidth, flops, time.time(), 0.0, SMALL)


# ----- the model's count --------------------------------------------------------------------
def test_step_cost_equals_a_hand_count_with_windowed_layers(tiny_gemma):
    shape = step_cost.step_shape(tiny_gemma)
    per_layer_matrices = 64 * 128 + 64 * 32 + 64 * 32 + 128 * 64 + 3 * 64 * 96   # q k v o, MLP
    matmul = 6 * per_layer_matrices + 97 * 64           # + the tied embedding as the LM head
    vectors = 6 * (4 * 64 + 2 * 32) + 64                # 4 norms + q/k norms per layer, final norm
    assert shape.dense_matmul_weights == matmul
    assert shape.dense_weight_bytes == (matmul + vectors) * 4 and shape.element_bytes == 4
    assert shape.embed_row_bytes == 0 and shape.n_experts == 0
    # t = 9: the 5 sliding layers read min(9, 5) = 5 keys each, the global layer 9
    keys = 5 * 5 + 9
    slot = 2 * 1 * 32 * 4                               # K and V, 1 KV head of 32, fp32
    for batch in (1, 3, 16):
        bytes_read, flops = shape.cost(9, batch)
        assert bytes_read == (matmul + vectors) * 4 + batch * keys * slot
        assert flops == batch * (2 * matmul + 4 * 4 * 32 * keys)
    # below the window every layer reads all t keys
    assert shape.cost(4, 1)[0] == (matmul + vectors) * 4 + 6 * 4 * slot


def test_cache_bytes_read_equal_the_real_cache_past_the_window(tiny_gemma):
    """The cache part of the count is what the engine's cache really holds (ring buffers)."""
    shape = step_cost.step_shape(tiny_gemma)
    cache = tiny_gemma.new_cache(32)
    with torch.inference_mode():
        tiny_gemma(torch.arange(1, 21).unsqueeze(0), cache=cache)             # 20 tokens
    weights = shape.cost(20, 0)[0]
    assert shape.cost(20, 1)[0] - weights == sum(cache.used_bytes())
    assert shape.cost(20, 1)[0] - weights < 6 * 20 * shape.kv_bytes_per_slot  # windows cap it


def test_untied_embedding_is_looked_up_not_read(tiny_llama):
    shape = step_cost.step_shape(tiny_llama)
    total = sum(p.numel() for p in tiny_llama.parameters())
    assert shape.dense_weight_bytes == (total - 97 * 64) * 4
    assert shape.embed_row_bytes == 64 * 4
    assert shape.dense_matmul_weights == 3 * (64 * 64 * 2 + 64 * 32 * 2 + 3 * 64 * 96) + 97 * 64


def test_moe_step_reads_the_experts_its_tokens_pick(runtime):
    """Our MoE model (in the picker): a token multiplies k of N experts per layer; a step of B
    tokens reads the experts they picked, k at B = 1, all N as B grows (uniform routing)."""
    loaded = runtime.get("explorer-moe-bias")
    shape, c = step_cost.step_shape(loaded.model), loaded.config
    n, k = c.n_experts, c.n_experts_per_tok
    experts = c.n_layers * n * 3 * c.d_model * c.d_expert              # gate, up, down per expert
    assert (shape.n_experts, shape.experts_per_token) == (n, k) and shape.expert_matmul_weights == experts
    assert shape.expert_weight_bytes == experts * 4
    dense = sum(p.numel() for p in loaded.model.parameters()) - experts
    assert shape.dense_weight_bytes == dense * 4                       # tied embedding: the head
    assert shape.experts_touched(1) == pytest.approx(k) and shape.experts_touched(1000) == pytest.approx(n)
    bytes_read, flops = shape.cost(64, 1)
    assert bytes_read == pytest.approx(dense * 4 + experts * 4 * k / n + 64 * c.kv_bytes_per_token(4))
    assert flops == pytest.approx(2 * (shape.dense_matmul_weights + experts * k / n)
                                  + 4 * c.n_heads * c.head_dim * 64 * c.n_layers)


def test_element_size_comes_from_the_tensors(tiny_llama):
    import copy

    half = copy.deepcopy(tiny_llama).to(torch.bfloat16)
    full, low = step_cost.step_shape(tiny_llama), step_cost.step_shape(half)
    assert (full.element_bytes, low.element_bytes) == (4, 2)
    assert low.dense_weight_bytes * 2 == full.dense_weight_bytes
    assert low.kv_bytes_per_slot * 2 == full.kv_bytes_per_slot == 2 * 2 * 16 * 4
    cache = half.new_cache(4)
    assert cache.layers[0].element_size() == low.element_bytes


def test_intensity_grows_with_batch_and_crosses_the_ridge(tiny_llama):
    shape = step_cost.step_shape(tiny_llama)
    intensity = [f / b for b, f in (shape.cost(64, batch) for batch in roofline.LINE_BATCHES)]
    assert intensity == sorted(intensity) and intensity[0] < 1.0
    cross = step_cost.crossing_batch(shape, 64, ridge=2.0)
    b, f = shape.cost(64, cross)
    assert cross > 1 and f / b == pytest.approx(2.0, rel=1e-6)
    assert step_cost.crossing_batch(shape, 64, ridge=1e9) is None
    assert step_cost.crossing_batch(shape, 64, ridge=1e-3) == 1.0


# ----- the device ---------------------------------------------------------------------------
def test_device_roof_is_measured_once_cached_and_timestamped(fresh_cache, monkeypatch):
    before, threads_before = time.time(), torch.get_num_threads()
    assert device_roof.cached("cpu", torch.float32, 1) is None
    results = []
    threads = [threading.Thread(target=lambda: results.append(
        device_roof.measure("cpu", torch.float32, 1, settings=SMALL))) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    roof = results[0]
    assert all(r is roof for r in results)                 # one measurement, shared
    assert device_roof.cached("cpu", torch.float32, 1) is roof
    assert math.isfinite(roof.bandwidth) and roof.bandwidth > 1e8
    assert math.isfinite(roof.flops) and roof.flops > 1e8 and roof.ridge == roof.flops / roof.bandwidth
    assert before <= roof.measured_at <= time.time() and roof.seconds > 0
    assert (roof.device, roof.dtype, roof.threads, roof.settings) == ("cpu", "float32", 1, SMALL)
    assert torch.get_num_threads() == threads_before       # the thread setting is restored
    # a refresh once the kept roof is older than the interval measures again
    monkeypatch.setattr(device_roof, "REFRESH_INTERVAL_S", 0.0)
    again = device_roof.measure("cpu", torch.float32, 1, refresh=True, settings=SMALL)
    assert again is not roof and again.measured_at >= roof.measured_at
    assert device_roof.measure("cpu", torch.float32, 1) is again


def test_a_second_refresh_within_the_interval_is_refused(fresh_cache):
    """The kept roof is every visitor's: a refresh asked less than REFRESH_INTERVAL_S after
    the last measurement does not measure (under a load the caller chose); it answers with the
    kept roof and says when a new measurement may run, in both languages."""
    roof = device_roof.measure("cpu", torch.float32, 1, refresh=True, settings=SMALL)
    assert roof.refresh_in_s == 0.0
    kept = device_roof.measure("cpu", torch.float32, 1, refresh=True, settings=SMALL)
    assert kept.measured_at == roof.measured_at and kept.bandwidth == roof.bandwidth
    assert 0 < kept.refresh_in_s <= device_roof.REFRESH_INTERVAL_S
    assert device_roof.cached("cpu", torch.float32, 1) is roof   # nothing replaced
    minutes = math.ceil(kept.refresh_in_s / 60)
    assert f"the next in {minutes} minutes" in roofline_figures.device_line(kept, "en")
    assert f"（{minutes} 分钟后可再次测量）" in roofline_figures.device_line(kept, "zh")
    assert "not taken" not in roofline_figures.device_line(roof, "en")


# ----- the knee -----------------------------------------------------------------------------
@pytest.mark.parametrize("rates, expected", [
    ((10, 20, 40, 40, 41), 4),          # linear to 4, then flat
    ((10, 20, 40, 80, 90), 8),
    ((10, 12, 24, 48, 50), 8),          # a noisy B = 2 does not end the growth early
    ((10, 11, 11.5, 12, 12), 1),        # flat from the start
    ((10, 20, 40, 80, 160), None),      # linear throughout: no knee within 1..16
])
def test_knee_is_read_from_the_measured_rates(rates, expected):
    assert roofline.knee((1, 2, 4, 8, 16), rates) == expected


# ----- a measurement on a tiny model, its figures and summary -------------------------------
@pytest.fixture(scope="module")
def tiny_result(tiny_gemma):
    return roofline.run(tiny_gemma, list(range(1, 9)), fake_roof(), name="tiny", batches=(1, 2, 4, 8),
                        timed_steps=1, threads=1)


def test_run_counts_each_measured_step_at_its_real_context(tiny_result):
    r = tiny_result
    assert r.batches == (1, 2, 4, 8) and len(r.step_seconds) == 4 and min(r.step_seconds) > 0
    # batch 1 steps a run of its own, as the loop's run alone (the fused step): one warm-up
    # step, then the timed step feeds its 10th token: it attended to 8 + 1 + 1 keys
    assert r.paths == ("fused", "fused_batch", "fused_batch", "fused_batch")
    assert r.measured_context[0] == 10
    assert r.measured_bytes[0] == r.shape.cost(10, 1)[0]
    # B = 2 steps runs 0 and 1, which the warm-up round stepped at B = 2, 4 and 8 before
    assert r.measured_context[1] == 8 + 3 + 1
    assert all(len(times) == 1 for times in r.step_times)
    assert r.tokens_per_s == tuple(b / s for b, s in zip(r.batches, r.step_seconds))
    assert r.line_bytes[0] == r.shape.cost(8, 1)[0] and r.context == 8


def test_figures_draw_the_measured_roof_and_points(tiny_result):
    roof_fig, rates_fig = roofline_figures.figures(tiny_result, "en")
    roof_line, model_line, measured = roof_fig.data[:3]
    assert max(roof_line.y) == pytest.approx(tiny_result.roof.flops / 1e9)
    assert list(measured.x) == list(tiny_result.intensity)
    assert list(measured.y) == pytest.approx([f / 1e9 for f in tiny_result.achieved_flops])
    assert list(model_line.x) == list(tiny_result.line_intensity)
    assert list(rates_fig.data[1].y) == list(tiny_result.tokens_per_s)
    zh = roofline_figures.figures(tiny_result, "zh")[0]
    assert zh.layout.title.text != roof_fig.layout.title.text and list(zh.data[2].x) == list(measured.x)


def test_summary_sentences_are_chosen_from_the_numbers(tiny_result):
    text = roofline_figures.summary(tiny_result, "en")
    ridge = tiny_result.roof.ridge
    assert "memory-bound" in text and f"{ridge:.2f}" in text
    assert f"{roofline.speedup(tiny_result):.1f}×" in text
    # a roof whose ridge lies below the step's intensity: the other sentence
    low = dataclasses.replace(tiny_result, roof=fake_roof(bandwidth=1e12, flops=1e9))
    assert "compute-bound" in roofline_figures.summary(low, "en") and "memory-bound" not in roofline_figures.summary(low, "en")
    # rates linear to 4 then flat: the knee sentence names B = 4
    seconds = [b / r for b, r in zip(tiny_result.batches, (10, 20, 40, 41))]
    flat = dataclasses.replace(tiny_result, step_seconds=tuple(seconds))
    assert "the knee, read from the data, is at B = 4" in roofline_figures.summary(flat, "en")
    assert "拐点在 B = 4" in roofline_figures.summary(flat, "zh")
    # a roof below what the steps achieved (measured on a busier machine) is said to be so
    high = dataclasses.replace(tiny_result, roof=fake_roof(bandwidth=1e15, flops=5e15))
    low = dataclasses.replace(tiny_result, roof=fake_roof(bandwidth=1e3, flops=5e3))
    assert roofline.over_roof(high) is None and "of the measured roof" not in roofline_figures.summary(high, "en")
    batch, share = roofline.over_roof(low)
    assert share > 1 and f"B = {batch} ran at {100 * share:.0f}% of the measured roof" in roofline_figures.summary(low, "en")


# ----- the claims board -----------------------------------------------------------------------
def test_c2_criterion_fails_on_broken_inputs(tiny_result):
    # tokens/s = 10 B, and the B = 1 step moving its bytes at half of the roof's bandwidth
    steps = dataclasses.replace(tiny_result, step_seconds=(0.1,) * 4)
    bandwidth = 2 * steps.measured_bytes[0] / 0.1
    linear = dataclasses.replace(steps, roof=fake_roof(bandwidth=bandwidth, flops=100 * bandwidth))
    assert roofline.bandwidth_share(linear) == pytest.approx(0.5)
    assert roofline.c2_holds(linear) and roofline.evidence_from(linear).passed
    # tokens/s that do not grow with the batch: eight sequences cost eight weight reads
    flat = dataclasses.replace(tiny_result, step_seconds=tuple(0.1 * b for b in tiny_result.batches))
    evidence = roofline.evidence_from(flat)
    assert not roofline.c2_holds(flat) and not evidence.passed
    assert dict((m.label, m.value) for m in evidence.measures)["claims.m.batch_speedup"] == pytest.approx(1.0)
    # a roof whose ridge lies below B = 1's intensity: not memory-bound
    compute = dataclasses.replace(linear, roof=fake_roof(bandwidth=1e12, flops=1e9))
    assert not roofline.memory_bound_at_one(compute) and not roofline.evidence_from(compute).passed
    # intensity far below the ridge by the count, but the step moves its bytes at 5% of the
    # measured bandwidth: its time is set by something other than reading them (overhead)
    slow = dataclasses.replace(linear, roof=fake_roof(bandwidth=10 * bandwidth, flops=1000 * bandwidth))
    assert roofline.memory_bound_at_one(slow) and roofline.speedup(slow) >= roofline.C2_MIN_SPEEDUP
    evidence = roofline.evidence_from(slow)
    assert not roofline.c2_holds(slow) and not evidence.passed
    assert dict((m.label, m.value) for m in evidence.measures)["claims.m.bandwidth_share_b1"] == pytest.approx(5.0)
    assert "only 5% of the measured bandwidth (C2 asks ≥ 15%)" in roofline_figures.summary(slow, "en")
    assert "C2 does NOT hold on this run" in roofline_figures.summary(slow, "en")
    assert "C2 在这次测量中不成立" in roofline_figures.summary(slow, "zh")
    assert "C2 holds on this run" in roofline_figures.summary(linear, "en")


@pytest.mark.slow
def test_evidence_c2_passes_on_smollm2(runtime):
    from explorer.locales import text

    loaded = runtime.get(MODEL)
    # the first forwards of a freshly loaded model run several times slower (B = 1 measured at
    # 3-4% of the bandwidth, then 26-35%); on the board C1 runs first and warms it
    roofline.run(loaded.model, roofline.prompt_ids(loaded.tokenizer, roofline.EVIDENCE_CONTEXT),
                 roofline.device_roof.measure(loaded.device, loaded.dtype,
                                              weights=roofline.served_weights(loaded.model)), batches=(1, 8),
                 timed_steps=1)
    started = time.perf_counter()
    evidence = roofline.evidence_c2(loaded)
    seconds = time.perf_counter() - started
    values = {m.label: m.value for m in evidence.measures}
    assert evidence.passed, values
    assert (evidence.claim, evidence.tab, evidence.section) == ("C2", "generate", "section-generate-roofline")
    assert values["claims.m.intensity_b1"] < values["claims.m.ridge"]
    assert values["claims.m.bandwidth_share_b1"] >= 100 * roofline.C2_MIN_BANDWIDTH_SHARE
    assert values["claims.m.bandwidth_b1"] * 1e9 == pytest.approx(
        values["claims.m.bandwidth_share_b1"] / 100 * values["claims.m.bandwidth"] * 1e9)
    assert values["claims.m.batch_speedup"] >= roofline.C2_MIN_SPEEDUP
    assert values["claims.m.tokens_b8"] > values["claims.m.tokens_b1"] > 0
    for m in evidence.measures:
        assert text(m.label, "en") and text(m.label, "zh") and math.isfinite(m.value)
    assert "≥ 2.5×" in text(evidence.criterion, "en", **evidence.fields)
    assert "≥ 15% of the measured bandwidth" in text(evidence.criterion, "en", **evidence.fields)
    assert "2.5" in text(evidence.criterion, "zh", **evidence.fields)
    assert seconds < 60   # a few seconds on an idle 2-core CPU; the shared one is slower


# ----- the section ------------------------------------------------------------------------------
def plot_data(value) -> dict:
    plot = value["plot"] if isinstance(value, dict) and "plot" in value else value
    return json.loads(plot) if isinstance(plot, str) else plot


def test_measure_api_draws_the_measured_roof_and_refuses_bad_input(client):
    from gradio_client.exceptions import AppError

    device, roof_plot, rates_plot, summary = client.predict(MODEL, "en", 16, False,
                                                            api_name="/measure_roofline")
    assert re.search(r"memory bandwidth \*\*[\d.]+ GB/s\*\*", device) and "UTC" in device
    figure = plot_data(roof_plot)
    assert figure["layout"]["xaxis"]["type"] == "log"
    assert len(figure["data"][2]["x"]) == len(roofline.BATCHES)         # the measured steps
    assert len(plot_data(rates_plot)["data"][1]["y"]) == len(roofline.BATCHES)
    assert "B = 1" in summary and ("memory-bound" in summary or "compute-bound" in summary)
    with pytest.raises(AppError, match="greater than maximum value 512"):   # the slider's check
        client.predict(MODEL, "en", 4096, False, api_name="/measure_roofline")
    with pytest.raises(AppError, match="no-such-model"):
        client.predict("no-such-model", "en", 16, False, api_name="/measure_roofline")


@pytest.mark.slow
def test_handler_redraws_in_the_other_language(runtime):
    import gradio as gr

    from explorer.ui.tabs import generate_roofline

    for bad in (0, 513, 2.5, float("nan"), "many"):
        with pytest.raises(gr.Error, match="Context t"):
            list(generate_roofline.measure_roofline(runtime, MODEL, "en", bad, False, progress=lambda *a, **k: None))
    # the "measure again" box takes True or False: anything else is refused before the roof is
    # measured or the decode precision's weight copies are made (the fuzz saw 162 MB of them)
    for bad in ("yes", 1, [True]):
        with pytest.raises(gr.Error, match="Measure the device again"):
            list(generate_roofline.measure_roofline(runtime, MODEL, "en", 8, bad, progress=lambda *a, **k: None))

    *_, final = generate_roofline.measure_roofline(runtime, MODEL, "zh", 8, False, progress=lambda *a, **k: None)
    device, roof_fig, rates_fig, summary, result = final
    assert "本设备实测" in device and "B = 1" in summary
    en = generate_roofline.draw_roofline(result, "en")
    assert en[0].startswith("**This device, measured:**")
    assert list(en[1].data[2].x) == list(roof_fig.data[2].x)      # same numbers, other words
    assert en[1].layout.title.text != roof_fig.layout.title.text


def test_handler_declines_while_visitors_generate_and_stops_between_forwards(runtime, monkeypatch):
    import gradio as gr

    from explorer.ui.tabs import generate_roofline

    class Busy:
        def load(self):
            return 2

    with monkeypatch.context() as patch:
        patch.setattr(generate_roofline, "scheduler_for", lambda model: Busy())
        with pytest.raises(gr.Error, match="Other visitors are generating"):
            list(generate_roofline.measure_roofline(runtime, MODEL, "en", 8, False, progress=lambda *a, **k: None))
    # Stop closes the generator between two forwards: nothing more runs, no result comes
    steps = generate_roofline.measure_roofline(runtime, MODEL, "en", 8, False, progress=lambda *a, **k: None)
    first = next(steps)
    assert len(first) == 5 and all(isinstance(value, type(gr.skip())) for value in first)
    steps.close()
    with pytest.raises(StopIteration):
        next(steps)


@pytest.mark.browser
def test_roofline_section_in_the_browser_in_both_languages(page, app_url):
    from tests.conftest import SCREENSHOTS

    page.goto(app_url)
    page.locator("#model-status").get_by_text(re.compile("is loaded|已加载")).wait_for(timeout=180_000)
    page.locator("#explorer-tabs [role=tab]", has_text="Generate").click()
    page.get_by_role("tab", name="The decode roofline, measured").click()
    box = page.locator("#gen-roof-context input[type=number]")
    box.fill("16")
    box.press("Enter")
    page.locator("#gen-roof-measure").click()
    page.locator("#gen-roof-summary", has_text="B = 1").wait_for(timeout=240_000)
    assert page.locator("#gen-roofline .scatterlayer .point").count() >= len(roofline.BATCHES)
    assert "GB/s" in page.locator("#gen-roof-device").inner_text()
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.locator("#section-generate-roofline").screenshot(path=str(SCREENSHOTS / "generate-roofline.png"),
                                                          timeout=120_000)
    page.locator("#language-switch").get_by_text("中文").click()
    page.locator("#gen-roof-device", has_text="本设备实测").wait_for(timeout=30_000)
    page.locator("#gen-roof-summary", has_text="受内存带宽限制").wait_for(timeout=30_000)
    page.wait_for_function(
        "() => (document.querySelector('#gen-roofline .gtitle') || {}).textContent?.includes('解码屋顶线')",
        timeout=30_000)
    page.locator("#section-generate-roofline").screenshot(path=str(SCREENSHOTS / "generate-roofline-zh.png"),
                                                          timeout=120_000)
