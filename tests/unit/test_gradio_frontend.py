"""Gradio's page scripts served with two patches (explorer/web/gradio_frontend.py): each applies
to the pinned Gradio's own file and changes nothing else in it; the route answers them and
leaves every other request to Gradio; another Gradio, or a text not found, is served unpatched.
What the patched scripts do, run in Chromium: tests/browser/test_browser_gradio_frontend.py."""
from __future__ import annotations

import pytest

from explorer.web import gradio_frontend
from tests.helpers import middleware_client
from explorer.web.gradio_frontend import DIRECT_REFUSALS, PATCHES, STATUS_WRITES


@pytest.fixture
def fresh_patch():
    gradio_frontend.patched_scripts.cache_clear()
    yield
    gradio_frontend.patched_scripts.cache_clear()


def _client():
    return middleware_client(gradio_frontend.middleware())


def _name(patch) -> str:
    name, _ = gradio_frontend.patched_file(patch)
    return name


@pytest.mark.parametrize("patch", PATCHES, ids=lambda p: p.pattern)
def test_each_patch_changes_only_its_text_of_gradios_own_script(patch):
    name, body = gradio_frontend.patched_file(patch)
    original = (gradio_frontend.assets_dir() / name).read_text(encoding="utf-8")
    text = body.decode("utf-8")
    assert original.count(patch.original) == 1 and patch.original not in text
    assert text.count(patch.patched) == 1
    assert text.replace(patch.patched, patch.original) == original
    assert gradio_frontend.patched_scripts()[name] == body


def test_the_page_loads_both_scripts_by_these_names():
    html = (gradio_frontend.assets_dir().parent / "index.html").read_text(encoding="utf-8")
    assert f"./assets/{_name(DIRECT_REFUSALS)}" in html
    importers = [p for p in gradio_frontend.assets_dir().glob("*.js")
                 if f"./{_name(STATUS_WRITES)}" in p.read_text(encoding="utf-8", errors="replace")]
    assert importers, "no script of Gradio's imports the Blocks script"


@pytest.mark.parametrize("patch", PATCHES, ids=lambda p: p.pattern)
def test_the_route_answers_the_patched_script(patch):
    name, body = gradio_frontend.patched_file(patch)
    client = _client()
    answer = client.get(f"/assets/{name}")
    assert answer.status_code == 200 and answer.content == body
    assert answer.headers["content-type"].startswith("text/javascript")
    assert answer.headers["x-content-type-options"] == "nosniff"
    assert answer.headers["cache-control"] == "no-cache"
    again = client.get(f"/assets/{name}", headers={"if-none-match": answer.headers["etag"]})
    assert again.status_code == 304 and again.content == b""
    head = client.head(f"/assets/{name}")
    assert head.status_code == 200 and head.content == b""
    assert int(head.headers["content-length"]) == len(body)


@pytest.mark.parametrize("path", ["/assets/Blocks-0aNuD791.css", "/assets/Index-CsUOoOcz.js",
                                  "/x/assets/{name}", "/assets/{name}.map", "/assets/{name}/"])
def test_every_other_path_goes_to_gradio(path):
    answer = _client().get(path.format(name=_name(STATUS_WRITES)))
    assert answer.text.startswith("app: ")


def test_a_post_goes_to_gradio():
    assert _client().post(f"/assets/{_name(STATUS_WRITES)}").text.startswith("app: ")


def test_another_gradio_is_served_unpatched(fresh_patch, monkeypatch, caplog):
    from explorer.web import gradio_patches

    monkeypatch.setattr(gradio_patches, "GRADIO_VERSION", "0.0.1")
    assert gradio_frontend.patched_scripts() == {}
    assert caplog.text.count("served without") == len(PATCHES)
    for patch in PATCHES:
        name = sorted(gradio_frontend.assets_dir().glob(patch.pattern))[0].name
        assert _client().get(f"/assets/{name}").text == f"app: /assets/{name}"


def test_a_patch_whose_text_is_not_found_leaves_only_its_file(fresh_patch, monkeypatch, caplog):
    from dataclasses import replace

    gone = replace(DIRECT_REFUSALS, original="D({type:`status`,stage:`nowhere`})")
    monkeypatch.setattr(gradio_frontend, "PATCHES", (STATUS_WRITES, gone))
    assert list(gradio_frontend.patched_scripts()) == [_name(STATUS_WRITES)]
    assert "0 of Gradio's index-*.js scripts" in caplog.text


def test_the_app_launches_with_the_route():
    import app

    middleware = app.launch_options()["app_kwargs"]["middleware"]
    assert any(m.cls is gradio_frontend.PatchedScripts for m in middleware)
