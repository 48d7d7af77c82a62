"""Issue 27 finding 13: every event handler is fuzzed, the private ones too (callable by fn_index
though view_api does not list them). The CI part of bench/fuzz_all.py: every event of the built
app, a few hostile cases each, against the app served in-process with a guard refusing any
forward pass. The >= 500-case run and its result: docs/HARDENING.md."""
from __future__ import annotations

import math

import gradio as gr
import pytest

from bench import fuzz_all

pytestmark = pytest.mark.timeout(900)


def test_the_events_are_read_from_the_blocks_private_ones_included():
    with gr.Blocks() as demo:
        text = gr.Textbox(max_length=10)
        number = gr.Slider(0, 10, value=3)
        out = gr.Markdown()
        gr.Button().click(lambda t, n: t, [text, number], out, api_visibility="private")
        gr.Button().click(lambda t: t, [text], out, api_name="shown", queue=False)
        gr.Button().click(None, [text], None, js="(t) => t")   # runs in the page only
    events = fuzz_all.events_of(demo)
    assert [(e.visibility, e.queued, len(e.blocks)) for e in events] == \
        [("private", True, 2), ("public", False, 1)]


def test_each_component_type_gets_hostile_values_of_its_own_and_structures():
    with gr.Blocks():
        blocks = [gr.Textbox(), gr.Number(), gr.Slider(0, 4), gr.Radio(["en", "zh"]),
                  gr.Dropdown(["a"]), gr.Checkbox(), gr.State()]
    for block in blocks:
        labels = {v.label for v in fuzz_all.values_for_block(block)}
        assert {"nested dict x400", "list nested 400 deep", "list of NaN", "unicode", "negative"} <= labels
    assert {"NaN", "+inf", "10**400", "-1"} <= {v.label for v in fuzz_all.values_for_block(blocks[1])}
    assert {"4 MB", "empty", "lone surrogate"} <= {v.label for v in fuzz_all.values_for_block(blocks[0])}
    radio = fuzz_all.values_for_block(blocks[3])
    assert all(v.make() not in ("en", "zh") for v in radio if not v.huge)
    deep = fuzz_all._deep_list(fuzz_all.DEEP)
    for _ in range(fuzz_all.DEEP):
        deep = deep[0]
    assert deep == [] and math.isnan(fuzz_all._nested_dict(1)["n"])


def _through_direct_errors(path: str, status: int, chunks: list[bytes], method: str = "POST") -> list[dict]:
    """What DirectErrors sends for a response of `status` made of `chunks` on `path`."""
    import asyncio
    import threading

    from explorer.web.direct_errors import DirectErrors

    sent: list[dict] = []

    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": status, "headers": []})
        for i, chunk in enumerate(chunks):
            await send({"type": "http.response.body", "body": chunk, "more_body": i < len(chunks) - 1})

    async def receive():
        return {"type": "http.request", "body": b""}

    async def send(message):
        sent.append(message)

    call = DirectErrors(app)({"type": "http", "method": method, "path": path}, receive, send)
    worker = threading.Thread(target=asyncio.run, args=(call,))   # a session loop may be running here
    worker.start()
    worker.join(timeout=30)
    return sent


def test_a_refusal_on_the_direct_route_is_a_400_not_a_500():
    """Found by this fuzz: Gradio answers every handler error of an unqueued event (the page's
    `POST /gradio_api/run/predict` with a fn_index) with 500, a refusal in words included."""
    refusal = [b'{"error": "Language must be one of ', b'en, zh.", "visible": true}']
    sent = _through_direct_errors("/gradio_api/run/predict", 500, refusal)
    assert sent[0]["status"] == 400 and b"".join(m.get("body", b"") for m in sent[1:]) == b"".join(refusal)
    for path, status, chunks, method in [
            ("/gradio_api/run/predict", 500, [b'{"error": null}'], "POST"),      # no message: 500
            ("/gradio_api/run/predict", 500, [b"Internal Server Error"], "POST"),
            ("/gradio_api/run/predict", 200, [b'{"data": []}'], "POST"),
            ("/gradio_api/queue/join", 500, refusal, "POST"),                      # not the route
            ("/gradio_api/run/predict", 500, refusal, "GET")]:
        sent = _through_direct_errors(path, status, chunks, method)
        assert sent[0]["status"] == status, (path, chunks, method)
        assert b"".join(m.get("body", b"") for m in sent[1:]) == b"".join(chunks)
