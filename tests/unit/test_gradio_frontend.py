"""Gradio's page script served with its loading-status writer patched
(explorer/web/gradio_frontend.py): the patch applies to the pinned Gradio's own file and changes
nothing else in it; the route answers it and leaves every other request to Gradio; another
Gradio serves its file unpatched. What the patched writer does, run in Chromium against
Gradio's own: tests/browser/test_browser_gradio_frontend.py."""
from __future__ import annotations

import pytest

from explorer.web import gradio_frontend


@pytest.fixture
def fresh_patch():
    gradio_frontend.patched_script.cache_clear()
    yield
    gradio_frontend.patched_script.cache_clear()


def _client():
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route
    from starlette.testclient import TestClient

    app = Starlette(routes=[Route("/{path:path}", lambda request: PlainTextResponse("app: " + request.url.path),
                                  methods=["GET", "POST"])],
                    middleware=gradio_frontend.middleware())
    return TestClient(app)


def test_the_patch_changes_only_the_writer_of_gradios_own_script():
    name, body = gradio_frontend.patched_script()
    original = (gradio_frontend.assets_dir() / name).read_text(encoding="utf-8")
    text = body.decode("utf-8")
    assert name.startswith("Blocks-") and name.endswith(".js")
    assert original.count(gradio_frontend.ORIGINAL) == 1 and gradio_frontend.ORIGINAL not in text
    assert text.count(gradio_frontend.PATCHED) == 1
    assert text.replace(gradio_frontend.PATCHED, gradio_frontend.ORIGINAL) == original
    # the page imports the script by this name: the route serves the file the page asks for
    importers = [p for p in gradio_frontend.assets_dir().glob("*.js")
                 if f"./{name}" in p.read_text(encoding="utf-8", errors="replace")]
    assert importers, f"no script of Gradio's imports {name}"


def test_the_route_answers_the_patched_script():
    name, body = gradio_frontend.patched_script()
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
    name, _ = gradio_frontend.patched_script()
    answer = _client().get(path.format(name=name))
    assert answer.text.startswith("app: ")


def test_a_post_goes_to_gradio():
    name, _ = gradio_frontend.patched_script()
    assert _client().post(f"/assets/{name}").text.startswith("app: ")


def test_another_gradio_is_served_unpatched(fresh_patch, monkeypatch, caplog):
    from explorer.web import gradio_patches

    monkeypatch.setattr(gradio_patches, "GRADIO_VERSION", "0.0.1")
    assert gradio_frontend.patched_script() is None
    assert "served unpatched" in caplog.text
    name = sorted(gradio_frontend.assets_dir().glob(gradio_frontend.PATTERN))[0].name
    assert _client().get(f"/assets/{name}").text == f"app: /assets/{name}"


def test_a_script_without_the_writer_is_served_unpatched(fresh_patch, monkeypatch, caplog):
    monkeypatch.setattr(gradio_frontend, "ORIGINAL", "async update_loading_stati_state(){}")
    assert gradio_frontend.patched_script() is None
    assert "0 of Gradio's Blocks-*.js scripts" in caplog.text


def test_the_app_launches_with_the_route():
    import app

    middleware = app.launch_options()["app_kwargs"]["middleware"]
    assert any(m.cls is gradio_frontend.PatchedScript for m in middleware)
