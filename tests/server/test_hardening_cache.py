"""Issue 27 finding 7 and the Textboxes' bounds.

The attack: for every session it opened, a client asked Gradio's `/gradio_api/deep_link` route,
which wrote that session's component values to `<temp>/deep_links/<hash>/state.json` (0.3-5 MB
each, never deleted, 0.26 s of CPU in the event loop). The route is closed now
(explorer/web/closed_routes.py) and Gradio's temporary files have a lifetime (app.DELETE_CACHE)."""
from __future__ import annotations

from pathlib import Path

import gradio as gr
import httpx
import pytest

import app
from explorer.inputs import MAX_TEXT_CHARS
from explorer.web import closed_routes

SESSIONS = 12


def _folder_bytes(folder: Path) -> tuple[int, int]:
    """(files, bytes) under `folder` (0, 0 where it does not exist)."""
    files = [p for p in folder.rglob("*") if p.is_file()] if folder.exists() else []
    return len(files), sum(p.stat().st_size for p in files)


def test_the_deep_link_route_is_refused_and_the_temp_folder_stays_bounded(served_rope):
    from gradio_client import Client

    demo, url = served_rope
    temp = Path(demo.server_app.uploaded_file_dir)   # shared with other servers of this host
    links = temp / "deep_links"
    links_before = sorted(links.rglob("*")) if links.exists() else []
    before = _folder_bytes(temp)
    statuses = []
    for i in range(SESSIONS):
        client = Client(url, verbose=False)
        client.predict("en", f"{10000 + i}", 64, 8192, api_name="/rope_frequencies")
        assert client.session_hash in demo.state_holder.session_data   # a live session to copy
        for path in ("gradio_api/deep_link", "gradio_api/deep_link/"):
            response = httpx.get(url + path, params={"session_hash": client.session_hash}, timeout=10)
            statuses.append(response.status_code)
        page = httpx.get(url, timeout=10)            # a page load writes nothing either
        assert page.status_code == 200
    assert set(statuses) == {404}, statuses           # before: 200 with the link's hash
    assert (sorted(links.rglob("*")) if links.exists() else []) == links_before   # nothing written
    files, size = _folder_bytes(temp)
    assert files <= before[0] and size <= before[1] + 64 * 1024, (before, (files, size))
    # and what the app's components may write there has a lifetime
    every, age = demo.delete_cache
    assert (every, age) == app.DELETE_CACHE and 0 < every <= age <= 24 * 3600


def test_only_the_closed_routes_are_closed():
    assert closed_routes.is_closed("/gradio_api/deep_link")
    assert closed_routes.is_closed("/some/root/gradio_api/deep_link/")
    for open_path in ("/", "/gradio_api/info", "/gradio_api/queue/join", "/config",
                      "/gradio_api/deep_linking", "/gradio_api/file=deep_link"):
        assert not closed_routes.is_closed(open_path), open_path


def test_every_textbox_of_the_built_app_has_a_max_length(full_app):
    """Every Textbox, whichever tab or panel made it, is bounded in the browser, and no bound
    lets through what explorer.inputs refuses for every text (MAX_TEXT_CHARS)."""
    boxes = [block for block in full_app.blocks.values() if isinstance(block, gr.Textbox)]
    assert len(boxes) >= 8, len(boxes)
    missing = [(b.elem_id, b.label) for b in boxes if not b.max_length]
    assert not missing, missing
    over = [(b.elem_id, b.max_length) for b in boxes if b.max_length > MAX_TEXT_CHARS]
    assert not over, over
    short = [(b.elem_id, b.max_length) for b in boxes if isinstance(b.value, str) and len(b.value) > b.max_length]
    assert not short, short   # a default longer than its own box's bound


def test_a_prompt_box_is_bounded_as_the_server_bounds_the_prompt(full_app):
    """The Generate prompt's bound is the server's: encode() refuses a longer text."""
    from explorer.generate.request import MAX_PROMPT_TOKENS
    from explorer.prompts import CHARS_PER_TOKEN_BOUND, encode
    from explorer.inputs import InputError

    box = next(b for b in full_app.blocks.values() if getattr(b, "elem_id", None) == "gen-prompt")
    assert box.max_length == MAX_PROMPT_TOKENS * CHARS_PER_TOKEN_BOUND
    with pytest.raises(InputError):   # refused before any tokenizer (None would fail if reached)
        encode(None, "x" * (box.max_length + 1), MAX_PROMPT_TOKENS)
