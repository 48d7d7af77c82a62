"""The Generate & KV-cache tab in a real browser (Debian Chromium): type a prompt, Start, watch
tokens stream and the cache chart grow, Stop; then a short run to the end (C1 replay, C4
check) and Gemma-3 past its 512-token window (C9). Screenshots: artifacts/screenshots/."""
from __future__ import annotations

import re
import time

import pytest

from tests.conftest import SCREENSHOTS
from tests.helpers import open_generate_tab, start_run, switch_language, type_number

pytestmark = pytest.mark.browser

LOAD_TIMEOUT = 180_000  # ms; the first load may convert the checkpoint
RUN_TIMEOUT = 240_000


def _shot(page, name: str) -> None:
    """Full-page screenshot with a long timeout: while tokens stream, Chromium on a loaded
    2-core machine can take more than the default 30 s to settle a frame."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True, timeout=120_000)


def _output(page) -> str:
    return page.locator("#gen-output textarea").input_value()


def _bars(page, elem_id: str) -> int:
    return page.locator(f"#{elem_id} .trace.bars .point").count()


def test_tokens_stream_chart_grows_and_stop_ends_it(page, app_url):
    try:
        _stream_and_stop(page, app_url)
    except Exception:
        # what the page showed when it failed, for CI logs: a screenshot and the status lines
        state = {sel: " | ".join(page.locator(sel).all_inner_texts())[:300]   # no waiting
                 for sel in ("#gen-status", "#gen-history")}
        print("page at failure:", state)
        _shot(page, "generate-stop-FAILED")
        raise


def _stream_and_stop(page, app_url):
    open_generate_tab(page, app_url, LOAD_TIMEOUT)
    # the ≈600-token prompt and 256 new tokens: a run of ~20 s here, so that a slow browser
    # (its first Plotly render can take seconds) still sees it running
    page.locator("#gen-long").click()
    page.wait_for_function("() => document.querySelector('#gen-prompt textarea').value.length > 1000")
    type_number(page, "gen-max-new", 256)
    page.locator("#gen-start").click()

    page.wait_for_function("() => document.querySelector('#gen-output textarea').value.length > 0",
                           timeout=RUN_TIMEOUT)
    assert "Generating" in page.locator("#gen-status").inner_text()
    first = _output(page)
    page.wait_for_function(
        "(n) => document.querySelector('#gen-output textarea').value.length > n + 10",
        arg=len(first), timeout=RUN_TIMEOUT)
    assert _output(page).strip().startswith(first.strip()[:5])   # the text may begin with a newline
    # the per-layer cache bars are drawn (30 layers of SmolLM2) and the growth chart has a line
    page.wait_for_function("() => document.querySelectorAll('#gen-bars .trace.bars .point').length >= 30",
                           timeout=RUN_TIMEOUT)
    # the chart's token count and whether decoding still runs, read in one browser task: on a
    # loaded machine the run can end before a slow page draws its first chart, and a chart
    # drawn after the last token cannot grow: then run again and read it while decoding
    read = ("() => { const g = document.querySelector('#gen-bars .gtitle');"
            " const m = g && g.textContent.match(/after (\\d+) tokens/);"
            " return [m ? +m[1] : -1,"
            " document.querySelector('#gen-status').innerText.includes('Generating')]; }")
    t_before, decoding = page.evaluate(read)
    if not decoding:
        page.locator("#gen-status", has_text="Done").wait_for(timeout=RUN_TIMEOUT)
        start_run(page, "#gen-start", "#gen-status")
        page.locator("#gen-status", has_text="Generating").wait_for(timeout=RUN_TIMEOUT)
        page.wait_for_function(   # the new run's chart replaced the last one's (fewer tokens)
            "(t) => { const g = document.querySelector('#gen-bars .gtitle');"
            " const m = g && g.textContent.match(/after (\\d+) tokens/); return m && +m[1] < t; }",
            arg=t_before, timeout=RUN_TIMEOUT)
        t_before, decoding = page.evaluate(read)
        assert decoding, "the second run ended before its chart could be read"
    page.wait_for_function(
        "(t) => { const g = document.querySelector('#gen-bars .gtitle');"
        " const m = g && g.textContent.match(/after (\\d+) tokens/); return m && +m[1] > t; }",
        arg=t_before, timeout=RUN_TIMEOUT)
    assert page.locator("#gen-growth .scatterlayer .trace").count() >= 2
    _shot(page, "generate-streaming")

    # Press Stop while tokens are still being decoded, and take the number of tokens from the
    # server's own report of the run, never from how far the page had got: a page on a loaded
    # machine draws the stream behind the server, and the run may have decoded all 256 tokens
    # (and be in its C4/C1 checks, rightly "256 (stopped)", or done) while the page still shows
    # fewer. "Generating: n / 256" read and Stop clicked in one browser task, so the page cannot
    # draw the end between them. A run that the server reports as not cut short (256 tokens or
    # done) is run again, and that one stopped as soon as the page shows it decoding (no chart
    # or screenshot between), up to three runs; the last Stop must land mid-run.
    stop_if_decoding = ("() => { const m = document.querySelector('#gen-status').innerText"
                        ".match(/Generating: (\\d+) \\/ 256/);"
                        " if (!m) return -1;"
                        " document.querySelector('#gen-stop').click(); return +m[1]; }")
    ended = page.locator("#gen-status", has_text=re.compile("Stopped|Done"))
    reports = []   # (shown by the page when Stop was pressed, the server's final status)
    for attempt in range(3):
        shown = page.evaluate(stop_if_decoding)
        if shown >= 0:
            # Stop says "Stopping…" at once; the run's own last message, within a step, says
            # where it stopped: text, charts, C3 line and the row of the runs table come from
            # that one state
            ended.wait_for(timeout=RUN_TIMEOUT)
            status = page.locator("#gen-status").inner_text()
            stopped_at = re.search(r"Stopped after (\d+) new tokens", status)
            reports.append((shown, status[:80]))
            if stopped_at and int(stopped_at.group(1)) < 256:
                break
        else:
            reports.append((shown, page.locator("#gen-status").inner_text()[:80]))
        ended.wait_for(timeout=RUN_TIMEOUT)
        start_run(page, "#gen-start", "#gen-status")
        page.locator("#gen-status", has_text="Generating").wait_for(timeout=RUN_TIMEOUT)
    else:
        raise AssertionError(f"no Stop landed before the run's last token: {reports}")
    n = int(stopped_at.group(1))
    assert shown <= n < 256, reports
    stopped = _output(page)
    evidence = page.locator("#gen-evidence").inner_text()
    assert f"checked at all {n} steps" in evidence
    # no part of the page shows Gradio's "Error" badge (a cancel from outside once did)
    for output in ("#gen-output", "#gen-status", "#gen-bars", "#gen-growth", "#gen-latency",
                   "#gen-diff", "#gen-mask", "#gen-evidence"):
        assert not re.search(r"(^|\n)Error(\n|$)", page.locator(output).inner_text()), output
    # the stopped run keeps its row in the visitor's table of runs, with the same n
    history = page.locator("#gen-history", has_text="(stopped)")
    history.wait_for(timeout=30_000)
    made = [int(k) for k in re.findall(r"(\d+) \(stopped\)", history.inner_text())]
    assert made and made[-1] == n
    assert _output(page) == stopped, "tokens kept coming after Stop"
    assert page.locator("#gen-status").inner_text() == status, "the status changed after Stop"
    _shot(page, "generate-stopped")

    # the next run streams its own status line; once it is done, the server's record of the
    # stopped run still says n: nothing was decoded into it after Stop
    type_number(page, "gen-max-new", 4)
    start_run(page, "#gen-start", "#gen-status")
    page.locator("#gen-status", has_text="Done").wait_for(timeout=RUN_TIMEOUT)
    history = page.locator("#gen-history").inner_text()
    assert [int(k) for k in re.findall(r"(\d+) \(stopped\)", history)][-1] == n, history


def test_short_run_shows_replay_and_logit_check(page, app_url):
    open_generate_tab(page, app_url, LOAD_TIMEOUT)
    page.locator("#gen-prompt textarea").fill("What is a KV cache?")
    type_number(page, "gen-max-new", 12)
    page.locator("#gen-start").click()
    page.locator("#gen-status", has_text="Done").wait_for(timeout=RUN_TIMEOUT)
    evidence = page.locator("#gen-evidence").inner_text()
    assert "C3" in evidence and "equal, checked at all 12 steps" in evidence
    assert "buffers preallocated for" in evidence and "the same as the run's own cache" in evidence
    assert "C1" in evidence and "C4" in evidence and "within the tolerance" in evidence
    # 12 steps after a ~36-token prompt span too few t to fit a growth exponent: said so
    assert "needed under the mask" in evidence and "too short to fit how the counts grow" in evidence
    # C1: time with and without the cache, computed and needed scores; C4: one point per token
    legend = page.locator("#gen-latency .legendtext").all_text_contents()
    assert {"with KV cache: your run", "with KV cache: replayed", "no cache (recompute all)",
            "with KV cache: computed", "no cache (recompute all): needed by the mask"} <= set(legend)
    assert page.locator("#gen-diff .scatterlayer .point").count() == 12
    # C3: allocated behind used; C4: the mask over the cache's slots, one panel (SmolLM2: full)
    assert "allocated (whole buffers)" in page.locator("#gen-bars .legendtext").all_text_contents()
    assert page.locator("#gen-mask .heatmaplayer image, #gen-mask .hm image").count() >= 1
    assert "keys (cache.pos + T)" in page.locator("#gen-mask .annotation-text").first.text_content()
    assert page.locator("#gen-history tbody tr").count() >= 1
    _shot(page, "generate-done")
    for chart in ("bars", "latency", "mask"):
        page.locator(f"#gen-{chart}").screenshot(path=str(SCREENSHOTS / f"generate-{chart}.png"))
    # the second section: the calculator of published shapes (the roofline's own section:
    # tests/browser/test_roofline.py)
    page.get_by_role("tab", name="Published shapes").click()
    page.locator("#gen-calc-table", has_text="16.00 GiB").wait_for(timeout=30_000)
    _shot(page, "generate-calculator")

    # The language switch re-draws both sections from their stored results (no new run).
    switch_language(page, "zh")
    page.locator("#gen-calc-table", has_text="每 token").wait_for(timeout=30_000)
    page.locator("#gen-calc-table", has_text="（已加载）").wait_for(timeout=30_000)
    _shot(page, "generate-calculator-zh")
    page.get_by_role("tab", name="运行：逐个生成 token，缓存增长").click()
    page.locator("#gen-evidence", has_text="缓存张量").wait_for(timeout=30_000)
    page.wait_for_function(
        "() => (document.querySelector('#gen-bars .gtitle') || {}).textContent?.includes('每层的 KV 缓存')",
        timeout=30_000)
    assert "完成" in page.locator("#gen-status").inner_text()
    # charts redrawn while their section was hidden fit their box once it is shown again
    page.wait_for_function(
        "() => ['gen-bars', 'gen-growth', 'gen-diff', 'gen-mask'].every(id => {"
        " const box = document.getElementById(id), svg = box && box.querySelector('.main-svg');"
        " return svg && svg.getBoundingClientRect().width <= box.getBoundingClientRect().width; })",
        timeout=10_000)
    _shot(page, "generate-zh")
    page.locator("#gen-evidence", has_text="预先分配的缓冲区").wait_for(timeout=30_000)
    assert "已分配（整个缓冲区）" in page.locator("#gen-bars .legendtext").all_text_contents()
    for chart in ("bars", "latency", "mask"):
        page.locator(f"#gen-{chart}").screenshot(path=str(SCREENSHOTS / f"generate-{chart}-zh.png"))


def test_gemma_local_layers_flatten_past_512(page, app_url):
    open_generate_tab(page, app_url, LOAD_TIMEOUT)
    page.locator("#model-picker input").click()
    page.get_by_role("option", name="Gemma 3 270M (base)").click()
    page.locator("#model-status", has_text="18 layers").wait_for(timeout=LOAD_TIMEOUT)
    page.locator("#gen-long").click()
    page.wait_for_function("() => document.querySelector('#gen-prompt textarea').value.length > 2000")
    type_number(page, "gen-max-new", 4)
    page.locator("#gen-policy").get_by_text("Model's own").click()
    page.locator("label", has_text="replay without cache").click()   # off: keep this run short
    page.locator("#gen-start").click()
    page.locator("#gen-status", has_text="Done").wait_for(timeout=RUN_TIMEOUT)
    evidence = page.locator("#gen-evidence").inner_text()
    assert re.search(r"C9: 15 windowed layers hold 512 tokens each \(capped at 512\); 3 full layers", evidence)
    assert "Their buffers have 512 slots and never grow." in evidence     # read back (C3)
    names = page.locator("#gen-bars .legendtext").all_text_contents()
    assert any("15 layers: sliding window 512" in n for n in names)
    assert any("3 layers: full (global)" in n for n in names)
    # C4's mask over the cache's real slots: the ring's 512 slots plus the chunk's 8 keys
    panels = page.locator("#gen-mask .annotation-text").all_text_contents()
    assert any("S = 520 keys (512 ring slots + the chunk's 8)" in p for p in panels), panels
    _shot(page, "generate-gemma-c9")
    for chart in ("bars", "mask"):
        page.locator(f"#gen-{chart}").screenshot(path=str(SCREENSHOTS / f"generate-gemma-{chart}.png"))


def test_closing_the_tab_ends_the_generation(new_page, app_url, client):
    """A visitor who closes the tab mid-generation must not hold the model: Gradio drops the
    event when the page disconnects, and the generator, which yields after every token, is not
    resumed. The next request (from another visitor) is then served at once."""
    page = new_page("en-US")
    open_generate_tab(page, app_url, LOAD_TIMEOUT)
    page.locator("#gen-prompt textarea").fill("Write a long story about the sea.")
    type_number(page, "gen-max-new", 256)
    page.locator("#gen-start").click()
    page.wait_for_function("() => document.querySelector('#gen-output textarea').value.length > 20",
                           timeout=RUN_TIMEOUT)
    page.context.close()
    closed = time.perf_counter()
    final = client.predict("smollm2-135m-instruct", "en", "Hi.", 1, 0.0, 0, 1.0, 0, "full", 64, 4,
                           False, False, api_name="/generate")
    waited = time.perf_counter() - closed
    assert final[1].startswith("Done")
    # 256 tokens would hold the model for ≥ 25 s even on an idle machine; one prefill takes < 2 s
    assert waited < 15, f"the closed tab's generation held the model for {waited:.1f} s"


def test_the_example_prompt_is_copied_from_the_kept_app_prompt(page, app_url):
    """The tab's example prompt, unchanged: the loop keeps the app's own prompts computed, so
    the run copies all of its prompt but the last token and the evidence says so, in both
    languages (explorer.generate.kept)."""
    open_generate_tab(page, app_url, LOAD_TIMEOUT)
    type_number(page, "gen-max-new", 4)
    page.locator("#gen-start").click()
    page.locator("#gen-status", has_text="Done").wait_for(timeout=RUN_TIMEOUT)
    evidence = page.locator("#gen-evidence").inner_text()
    found = re.search(r"The first (\d+) of your prompt's (\d+) tokens begin like one of the app's own "
                      r"prompts .* computed the other 1 \(prefix reuse\)", evidence)
    assert found and int(found.group(1)) == int(found.group(2)) - 1, evidence
    _shot(page, "generate-kept")
    switch_language(page, "zh")
    page.locator("#gen-evidence", has_text="本应用自带的某个提示词").wait_for(timeout=30_000)
    assert f"其中前 {found.group(1)} 个" in page.locator("#gen-evidence").inner_text()
    _shot(page, "generate-kept-zh")
