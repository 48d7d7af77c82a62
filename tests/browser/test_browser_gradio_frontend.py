"""Gradio's page scripts as the app serves them (explorer/web/gradio_frontend.py), in Chromium:
the page loads both patched scripts; the patched loading-status writer gives each component
exactly the statuses Gradio's own writer gives it, less the repeats; a refusal of an unqueued
event (joining a class by a mistyped code) is shown in its words."""
from __future__ import annotations

import re

import pytest

from explorer.locales import text
from explorer.web import gradio_frontend
from explorer.web.gradio_frontend import STATUS_WRITES

pytestmark = pytest.mark.browser

# Both writers run on the same object, through the same steps of what Gradio's dependency
# manager does to its statuses: new entries, unchanged calls (other events' status changes),
# `set_status` in place, equal copies (`update` rebuilds every other entry), a new field, a
# cleared status ({}), an entry that comes back. Answers {id: [status written, ...]} per writer.
DRIVE = r"""
async ([original, patched]) => {
  const run = async (method) => {
    const Writer = eval('(class { ' + method + ' })');
    const w = new Writer(), got = {};
    w.loading_stati = {current: {}};
    w.update_state_cb = async (id, state) => {
      (got[id] = got[id] || []).push(JSON.stringify(state.loading_status));
    };
    const cur = w.loading_stati.current;
    cur[3] = {status: 'pending', fn_index: 0, eta: null, progress: undefined};
    cur[7] = {status: 'pending', fn_index: 0, eta: 1.5};
    await w.update_loading_stati_state();
    await w.update_loading_stati_state();
    cur[3].status = 'generating';
    await w.update_loading_stati_state();
    cur[7] = {...cur[7]};
    cur[12] = {status: 'pending', fn_index: 1, eta: null};
    await w.update_loading_stati_state();
    cur[7] = {...cur[7], used_cache: null};
    await w.update_loading_stati_state();
    cur[3] = {};
    await w.update_loading_stati_state();
    await w.update_loading_stati_state();
    cur[3] = {status: 'complete', fn_index: 0, eta: null};
    cur[12].status = 'complete';
    await w.update_loading_stati_state();
    return got;
  };
  return {original: await run(original), patched: await run(patched)};
}
"""


def _method(source: str) -> str:
    assert source.startswith("async update_loading_stati_state(){")
    return source


def _less_repeats(values: list) -> list:
    return [v for k, v in enumerate(values) if k == 0 or v != values[k - 1]]


def test_the_patched_writer_writes_what_gradios_own_does_less_the_repeats(page):
    got = page.evaluate(DRIVE, [_method(STATUS_WRITES.original), _method(STATUS_WRITES.patched)])
    original, patched = got["original"], got["patched"]
    assert set(original) == set(patched) == {"3", "7", "12"}
    for component, values in original.items():
        assert patched[component] == _less_repeats(values), component
    assert sum(map(len, patched.values())) < sum(map(len, original.values())) // 2
    # an in-place change of `status` (Gradio's set_status) and a cleared status are written
    assert [v for v in patched["3"] if '"generating"' in v] and "{}" in patched["3"]


def test_the_page_runs_the_patched_scripts_and_shows_an_unqueued_refusal(page, app_url):
    page.goto(app_url)
    page.locator("#model-picker").wait_for(timeout=180_000)
    loaded = page.evaluate("() => performance.getEntriesByType('resource').map(e => e.name)")
    for patch in gradio_frontend.PATCHES:
        name, _ = gradio_frontend.patched_file(patch)
        assert any(re.search(rf"/assets/{re.escape(name)}$", url) for url in loaded), (name, loaded)
        served = page.evaluate("(u) => fetch(u).then(r => r.text())", f"assets/{name}")
        assert patch.patched in served and patch.original not in served
    # joining by a mistyped code: the store refuses it on the direct route (queue=False); the
    # page shows why, where Gradio's own client showed a bare "Error" badge
    page.click("#tab-classroom-button")
    page.locator("#class-code input, #class-code textarea").first.fill("ZZ")
    page.click("#class-join")
    said = text("classroom.err.code", "en")
    page.locator(".toast-body", has_text=said[:30]).first.wait_for(timeout=30_000)
