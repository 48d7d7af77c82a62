"""What a visitor's browser fetches and does on opening the page, before they ask for anything:
no chart is drawn (every gr.Plot of the built app starts empty, so the page does not load
Plotly and draw figures at every open: five placeholders on the first tab made a page's load
take 1.3-1.6x as long in Chromium, bench/page_load.py, docs/BENCHMARKS.md), and the page's
1.45 MB of HTML comes gzipped (explorer/web/page_gzip.py), the API's answers not."""
from __future__ import annotations

import gzip

import gradio as gr
import requests


def test_no_chart_is_drawn_before_a_visitor_asks(full_app):
    plots = [block for block in full_app.blocks.values() if isinstance(block, gr.Plot)]
    assert len(plots) > 40                       # the app's charts are all here
    drawn = [block.elem_id for block in plots if block.value is not None]
    assert not drawn, f"charts drawn at every page open: {drawn}"
    config = full_app.get_config_file()
    assert not [c for c in config["components"] if c["type"] == "plot" and c["props"].get("value")]


def raw(url: str, encoding: str | None) -> requests.Response:
    headers = {"Accept-Encoding": encoding} if encoding else {"Accept-Encoding": "identity"}
    response = requests.get(url, headers=headers, stream=True, timeout=60)
    response.raise_for_status()
    response.sent = response.raw.read(decode_content=False)    # the bytes on the wire
    return response


def test_the_page_is_sent_gzipped_and_the_api_is_not(app_url):
    plain = raw(app_url, None)
    assert "content-encoding" not in plain.headers and len(plain.sent) > 500_000
    packed = raw(app_url + "?view=attention.map", "gzip, deflate, br")
    assert packed.headers["content-encoding"] == "gzip" and "accept-encoding" in packed.headers["vary"].lower()
    page = gzip.decompress(packed.sent)
    assert len(packed.sent) * 4 < len(page) and b'"components"' in page and b"model-picker" in page
    for api in ("config", "gradio_api/info"):
        answer = raw(app_url.rstrip("/") + "/" + api, "gzip")
        assert "content-encoding" not in answer.headers, api
        assert answer.sent.lstrip().startswith(b"{"), api
