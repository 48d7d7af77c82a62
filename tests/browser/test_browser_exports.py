"""The export toolbar of every figure in a real browser (Debian Chromium): one run of the
Attention map, its three exports downloaded (PNG, HTML, CSV) and checked against the figure the
page shows: the HTML opened with the network off draws the figure, the CSV parses to the
figure's numbers, the PNG is an image of the figure's size naming the model and settings. The
toolbar is used by keyboard alone, and the names fall back to the model picker and the section
when a section has no link box. Screenshot: artifacts/screenshots/exports-attention-map.png."""
from __future__ import annotations

import base64
import csv
import io
import json
import re
import struct
import zlib

import numpy as np
import pytest

from tests.helpers import switch_language

pytestmark = pytest.mark.browser

LOAD_TIMEOUT = 180_000   # ms; the first load may convert the checkpoint
RUN_TIMEOUT = 240_000    # ms; a forward on a busy 2-core machine
SECTION = "section-attention-section-map"
PLOT = "#attention-map .js-plotly-plot"
TOOLBAR = "#attention-map .explorer-export"

# The figure as the page holds it: Plotly's JSON (arrays possibly as {dtype, bdata, shape}),
# less the keys Plotly adds for itself ("_inputArray"), and the size it was drawn at.
FIGURE_JS = """() => {
  const gd = document.querySelector('#attention-map .js-plotly-plot');
  const own = (key, value) => (key.startsWith('_') ? undefined : value);
  return {data: JSON.parse(JSON.stringify(gd.data, own)), width: gd._fullLayout.width,
          height: gd._fullLayout.height,
          title: gd.layout.title.text || gd.layout.title};
}"""


def _run_map(page, app_url):
    page.goto(app_url)
    page.locator("#model-status").get_by_text(re.compile("is loaded")).wait_for(timeout=LOAD_TIMEOUT)
    page.locator("#explorer-tabs [role=tab]", has_text=re.compile("^Attention$")).click()
    page.locator("#explorer-tabs [role=tab]", has_text=re.compile("^Maps and masks$")).click()
    page.locator("#attention-run").click()
    page.locator(TOOLBAR).wait_for(timeout=RUN_TIMEOUT)
    # the link box is filled after the run: the exports name its settings
    page.wait_for_function(
        f"() => (document.querySelector('#link-{SECTION} input, #link-{SECTION} textarea') || {{}})"
        ".value?.includes('layer=')", timeout=RUN_TIMEOUT)


def _download(page, locator, press=None):
    with page.expect_download() as info:
        if press:
            page.keyboard.press(press)
        else:
            locator.click()
    download = info.value
    return download.suggested_filename, open(download.path(), "rb").read()


def _array(value):
    """A trace's array from Plotly's JSON, decoded here (independently of the page's script)."""
    if isinstance(value, dict) and "bdata" in value:
        flat = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        shape = [int(n) for n in str(value.get("shape", "")).split(",") if n.strip()]
        return flat.reshape(shape) if len(shape) == 2 else flat
    return np.asarray(value, dtype=object)


def _png_chunks(data: bytes) -> dict:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    chunks, at = {}, 8
    while at < len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        body = data[at + 8:at + 8 + length]
        crc, = struct.unpack(">I", data[at + 8 + length:at + 12 + length])
        assert crc == zlib.crc32(kind + body), f"bad CRC in {kind}"
        chunks.setdefault(kind.decode(), []).append(body)
        at += 12 + length
    return chunks


def _check_png(data: bytes, figure: dict) -> None:
    from PIL import Image

    chunks = _png_chunks(data)
    width, height = struct.unpack(">II", chunks["IHDR"][0][:8])
    # drawn at twice the figure's size in the page
    assert (width, height) == (2 * round(figure["width"]), 2 * round(figure["height"]))
    text = {}
    for body in chunks.get("iTXt", []):
        key, rest = body.split(b"\0", 1)
        text[key.decode()] = rest[4:].decode("utf-8")   # flag, method, "" language, "" translated
    assert "SmolLM2" in text["Title"] and "layer=3" in text["Description"]
    assert "head=all" in text["Description"] and "view=attention.map" in text["Source"]
    image = Image.open(io.BytesIO(data))
    image.load()
    colours = len(np.unique(np.asarray(image.convert("RGB").resize((200, 200))).reshape(-1, 3), axis=0))
    assert colours > 50, "the PNG is nearly blank"


def _check_csv(data: bytes, figure: dict) -> None:
    rows = list(csv.reader(io.StringIO(data.decode("utf-8-sig"), newline="")))
    meta = {row[0][2:]: row[1] for row in rows if row and row[0].startswith("# ")}
    assert meta["model"] == "smollm2-135m-instruct" and meta["view"] == "attention.map"
    assert "layer=3" in meta["settings"] and "head=all" in meta["settings"]
    assert meta["figure"] == figure["title"]
    body = [row for row in rows if row and not row[0].startswith("#")]
    header, cells = body[0], body[1:]
    assert header == ["trace", "name", "type", "x", "y", "z"]
    n_cells = 0
    for index, trace in enumerate(figure["data"]):
        z = _array(trace["z"]).astype(np.float64)
        x, y = list(trace["x"]), list(trace["y"])
        mine = [row for row in cells if row[0] == str(index)]
        assert len(mine) == z.size
        # each row: trace, panel name (head i), type, key label, query label, probability
        assert len({row[1] for row in mine}) == 1 and mine[0][1].startswith(f"head {index} ")
        got = np.array([float(row[5]) if row[5] else np.nan for row in mine]).reshape(z.shape)
        np.testing.assert_array_equal(got, z)   # the figure's numbers, exactly
        assert [row[3] for row in mine[:len(x)]] == [str(v) for v in x]
        assert [row[4] for row in mine[::len(x)]] == [str(v) for v in y]
        n_cells += z.size
    assert len(cells) == n_cells and len(figure["data"]) == 9


def _check_html_offline(browser, path, figure) -> None:
    """The HTML file opened in a fresh context with the network off and every request aborted:
    it draws the figure, from its own copy of the data, and asks for nothing."""
    context = browser.new_context()
    try:
        context.set_offline(True)
        asked = []
        context.route(re.compile(r"^(?!file:).*"), lambda route: (asked.append(route.request.url), route.abort()))
        page = context.new_page()
        errors = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(path.as_uri())
        page.locator("#figure svg.main-svg").first.wait_for(timeout=30_000)
        drawn = page.evaluate("""() => {
          const gd = document.getElementById('figure');
          return {traces: gd._fullData.length, types: gd._fullData.map(t => t.type),
                  images: document.querySelectorAll('#figure .hm image, #figure image').length,
                  data: JSON.parse(document.getElementById('figure-data').textContent).data,
                  title: document.title, heading: document.body.innerText};
        }""")
        assert drawn["traces"] == 9 and set(drawn["types"]) == {"heatmap"}
        assert drawn["images"] >= 9, "the heatmaps were not drawn"
        assert drawn["data"] == figure["data"]
        assert "SmolLM2" in drawn["title"] and "smollm2-135m-instruct" in drawn["heading"]
        assert "layer=3" in drawn["heading"] and "head=all" in drawn["heading"]
        assert not asked, f"the HTML asked the network for {asked}"
        assert not errors, errors
    finally:
        context.close()


def test_exports_of_the_attention_map(browser, new_page, app_url, screenshot, tmp_path):
    page = new_page()
    _run_map(page, app_url)
    figure = page.evaluate(FIGURE_JS)
    toolbar = page.locator(TOOLBAR)
    assert toolbar.locator("button").all_inner_texts() == ["PNG", "HTML", "CSV"]
    assert toolbar.get_attribute("aria-label") == "Export this figure"
    # every figure on the page has one, drawn later or not
    assert page.locator(".explorer-export").count() == page.locator(".js-plotly-plot").count()

    name, png = _download(page, toolbar.locator("button[data-kind=png]"))
    assert name.startswith("smollm2-135m-instruct_attention-map_layer-3_head-all") and name.endswith(".png")
    _check_png(png, figure)

    name, html = _download(page, toolbar.locator("button[data-kind=html]"))
    assert name.endswith(".html")
    path = tmp_path / name
    path.write_bytes(html)
    _check_html_offline(browser, path, figure)

    name, data = _download(page, toolbar.locator("button[data-kind=csv]"))
    assert name.endswith(".csv")
    _check_csv(data, figure)

    page.locator("#attention-map").scroll_into_view_if_needed()
    toolbar.hover()
    screenshot(page, "exports-attention-map")


def test_exports_by_keyboard_and_without_a_link(new_page, app_url):
    page = new_page()
    _run_map(page, app_url)
    png = page.locator(TOOLBAR + " button[data-kind=png]")
    # Tab from the top of the page reaches the toolbar; Enter downloads, the next Tab moves on
    page.locator("body").focus()
    for _ in range(400):
        page.keyboard.press("Tab")
        if png.evaluate("(b) => b === document.activeElement"):
            break
    else:
        pytest.fail("Tab never reached the PNG button of the attention map")
    name, data = _download(page, None, press="Enter")
    assert name.endswith(".png") and data[:8] == b"\x89PNG\r\n\x1a\n"
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")
    name, data = _download(page, None, press="Enter")
    assert name.endswith(".csv") and b"# model,smollm2-135m-instruct" in data

    # a section without a link box: the model picker's shown name and the section's id
    page.evaluate(f"() => {{ document.getElementById('link-{SECTION}').id = 'moved-away'; }}")
    name, data = _download(page, page.locator(TOOLBAR + " button[data-kind=csv]"))
    assert name == "SmolLM2-135M-Instruct_attention-map.csv"
    text = data.decode("utf-8-sig")
    assert "# model,SmolLM2-135M-Instruct" in text and f"# view,{SECTION}" in text

    # a section with a link box (a small one made here): its query string is what is named
    page.evaluate(f"""() => {{
      const box = document.createElement('div');
      box.id = 'link-{SECTION}';
      box.innerHTML = '<textarea>?view=attention.map&model=fake-model&layer=7&head=2</textarea>';
      document.body.appendChild(box);
    }}""")
    name, data = _download(page, page.locator(TOOLBAR + " button[data-kind=csv]"))
    assert name == "fake-model_attention-map_layer-7_head-2.csv"
    assert "# settings,layer=7; head=2" in data.decode("utf-8-sig")

    # a title's markup is read as text in an inert document: a handler in it never runs
    title, quiet = page.evaluate("""async () => {
      const gd = document.createElement('div');
      gd.layout = {title: {text: '<img src=x onerror="window.ran = 1">head <b>3</b>'}};
      const info = window.explorerExport.describe(gd);
      await new Promise((done) => setTimeout(done, 500));
      return [info.title, window.ran === undefined];
    }""")
    assert title == "head 3" and quiet

    # a toolbar left without its figure (a plot emptied or drawn anew) is taken away
    page.evaluate("() => { const bar = document.createElement('div'); bar.className = 'explorer-export';"
                  " bar.id = 'orphan'; document.getElementById('attention-map').prepend(bar); }")
    page.wait_for_function("() => !document.getElementById('orphan')", timeout=5_000)
    assert page.locator(".explorer-export").count() == page.locator(".js-plotly-plot").count()

    # the toolbar's words follow the language switch
    switch_language(page, "zh")
    page.wait_for_function(
        "() => document.querySelector('#attention-map .explorer-export').getAttribute('aria-label') === '导出此图'")
    assert png.get_attribute("title") == "将此图下载为 PNG 图片"
