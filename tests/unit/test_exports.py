"""The server's part of the figure exports (explorer/web/exports.py): the one route serving the
plotly.js that exported HTML files inline, and the script with its strings in the page's head.
The exports themselves are proven in a browser: tests/browser/test_browser_exports.py."""
from __future__ import annotations

import json
import re

import pytest

from explorer.locales import LANGUAGES
from explorer.web import exports
from tests.helpers import middleware_client


def _client():
    return middleware_client(exports.middleware())


def test_the_route_serves_exactly_the_packages_plotly_js():
    client = _client()
    answer = client.get(exports.PLOTLY_ROUTE)
    assert answer.status_code == 200
    assert answer.content == exports.plotly_js_path().read_bytes()
    assert answer.content.startswith(b"/**\n* plotly.js v")
    assert answer.headers["content-type"].startswith("text/javascript")
    assert answer.headers["x-content-type-options"] == "nosniff"
    head = client.head(exports.PLOTLY_ROUTE)
    assert head.status_code == 200 and head.content == b""
    assert int(head.headers["content-length"]) == len(answer.content)
    assert client.post(exports.PLOTLY_ROUTE).status_code == 405


@pytest.mark.parametrize("path", ["/explorer/plotly.min.js/", "/explorer/plotly.js", "/explorer/",
                                  "/x/explorer/plotly.min.js", "/explorer/plotly.min.js.map"])
def test_every_other_path_goes_to_the_app(path):
    answer = _client().get(path)
    assert answer.text.startswith("app: "), path


def test_the_app_launches_with_the_route_and_no_new_allowed_path():
    import app

    options = app.launch_options()
    assert any(m.cls is exports.PlotlyScript for m in options["app_kwargs"]["middleware"])
    assert options["allowed_paths"] == [str(app.STATIC)]     # not the plotly package's folder
    assert exports.STYLE in options["css_paths"] and exports.STYLE.is_file()
    assert exports.head() in options["head"]


def test_the_head_holds_the_script_and_its_strings_in_both_languages():
    head = exports.head()
    config = json.loads(re.search(r"window\.explorerExportConfig = (.*?);</script>", head).group(1))
    assert set(config["text"]) == set(LANGUAGES)
    assert set(config["text"]["en"]) == set(config["text"]["zh"])
    assert {"export.png", "export.html", "export.csv", "export.toolbar"} <= set(config["text"]["en"])
    assert config["text"]["zh"]["export.toolbar"] == "导出此图"
    assert config["plotly"] == exports.PLOTLY_ROUTE.lstrip("/")
    # three script elements' worth of tags: the config's, the script's, nothing inside them
    assert head.count("<script") == 2 and head.count("</script>") == 2
    assert exports.SCRIPT.read_text(encoding="utf-8") in head


def test_a_script_that_spells_a_script_tag_is_refused(tmp_path, monkeypatch):
    bad = tmp_path / "exports.js"
    bad.write_text('const html = "</script>";', encoding="utf-8")
    monkeypatch.setattr(exports, "SCRIPT", bad)
    with pytest.raises(ValueError, match="script tag"):
        exports.head()
