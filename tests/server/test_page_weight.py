"""What a visitor's browser fetches on opening the page: its 1.45 MB of HTML comes gzipped
(explorer/web/page_gzip.py), the API's answers not."""
from __future__ import annotations

import gzip

import requests


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
