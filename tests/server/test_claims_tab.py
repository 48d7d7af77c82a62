"""The Claims tab (explorer/ui/tabs/claims.py): its handler called directly, and its API through
gradio_client in both languages, on a board of fast fake evidence functions
(tests/claims_fakes.py) served with the real SmolLM2 loaded."""
from __future__ import annotations

import sys
import threading
import time

import gradio as gr
import pytest

from explorer.claims import board
from explorer.runtime import UnknownModelError
from explorer.ui.tabs import claims as claims_tab
from explorer.web import stopping
from tests import claims_fakes as fakes
from tests.helpers import stop_buttons
from tests.unit.test_claims import fake_loaded

FAKE = "tests.claims_fakes:FAST_REGISTRY"
MODULES = ("explorer.ui.tabs.claims", "explorer.ui.tabs.about")
TITLES = {"rope": "rope.tab", "moe": "moe.tab", "claims": "claims.tab"}


class FakeRuntime:
    def __init__(self):
        self.loaded = fake_loaded()

    def get(self, name, progress=None):
        if name != self.loaded.name:
            raise UnknownModelError(f"Unknown model {name!r}. Available models: {self.loaded.name}.")
        return self.loaded


def _last(generator):
    values = list(generator)
    return values[-1], values


def test_the_handler_streams_progress_then_the_board_in_the_visitors_language():
    board.CACHE.forget(fake_loaded(), fakes.FAST_REGISTRY)   # the real board's entry stays
    (table, summary, result), messages = _last(claims_tab.run_board(
        FakeRuntime(), fakes.FAST_REGISTRY, TITLES, False, "smollm2-135m-instruct", "zh-CN"))
    assert isinstance(result, board.BoardResult) and len(table) == 22
    assert "**22 个论断中有 17 个成立**" in summary and table.columns[0] == "编号"
    progress = messages[:-1]
    assert [m[1] for m in progress] == [f"正在核验 C{i}（第 {i} 个，共 22 个）" for i in range(1, 23)]
    # each progress message carries the table so far: rows measured, then rows still to come
    assert list(progress[12][0]["结论"][10:14]) == ["✓ 成立", "✗ 不成立", "… 未运行", "… 未运行"]
    # the language switch redraws from the stored result without running anything
    redrawn_table, redrawn_summary = claims_tab.draw(result, "en", TITLES)
    assert redrawn_summary.startswith("**17 of 22 claims hold**")
    assert list(redrawn_table.iloc[:, 0]) == [f"C{i}" for i in range(1, 23)]


def test_a_second_rerun_within_the_interval_answers_with_the_kept_board():
    """The kept board is every visitor's: "Run again" replaces it at most once per
    RERUN_INTERVAL_S; sooner, the kept board answers and the summary says when a new run may
    start, in the visitor's language."""
    board.CACHE.forget(fake_loaded(), fakes.FAST_REGISTRY)   # the real board's entry stays
    (_, summary, first), _ = _last(claims_tab.run_board(
        FakeRuntime(), fakes.FAST_REGISTRY, TITLES, True, "smollm2-135m-instruct", "en"))
    assert "Not run again" not in summary
    (_, summary, again), messages = _last(claims_tab.run_board(
        FakeRuntime(), fakes.FAST_REGISTRY, TITLES, True, "smollm2-135m-instruct", "en"))
    assert again is first and len(messages) == 1            # nothing measured
    assert board.CACHE.cached(fake_loaded(), fakes.FAST_REGISTRY) is first
    assert summary.startswith("**17 of 22 claims hold**")
    assert "Not run again" in summary and "every 10 minutes (the next in 10 minutes)" in summary
    (_, summary, _), _ = _last(claims_tab.run_board(
        FakeRuntime(), fakes.FAST_REGISTRY, TITLES, True, "smollm2-135m-instruct", "zh"))
    assert "未重新运行" in summary and "（10 分钟后可再次运行）" in summary


def test_the_handler_refuses_an_unknown_model_in_plain_words():
    with pytest.raises(gr.Error, match="Unknown model 'nope'"):
        list(claims_tab.run_board(FakeRuntime(), fakes.FAST_REGISTRY, TITLES, False, "nope", "en"))


def test_closing_the_stream_stops_the_board(monkeypatch):
    """Gradio closes the generator on Stop: the board stops between claims and keeps nothing."""
    board.CACHE.forget(fake_loaded(), fakes.FAST_REGISTRY)   # the real board's entry stays
    def sleepy(loaded):
        time.sleep(0.2)
        return fakes.passing(loaded)

    monkeypatch.setattr(fakes, "sleepy_tab", sleepy, raising=False)
    registry = tuple(fakes.entry("C11", "sleepy_tab") for _ in range(5))
    stream = claims_tab.run_board(FakeRuntime(), registry, TITLES, False, "smollm2-135m-instruct", "en")
    first = next(stream)
    assert first[1].startswith("Checking C11 (1 of 5)")
    stream.close()
    for _ in range(40):
        if not any(t.name == "claims-board" and t.is_alive() for t in threading.enumerate()):
            break
        time.sleep(0.05)
    assert board.CACHE.cached(fake_loaded(), registry) is None


def test_the_registry_can_be_replaced_for_tests(monkeypatch):
    monkeypatch.delenv(claims_tab.REGISTRY_ENV, raising=False)
    assert claims_tab.board_registry() is board.CLAIMS
    monkeypatch.setenv(claims_tab.REGISTRY_ENV, FAKE)
    assert claims_tab.board_registry() == fakes.FAST_REGISTRY


# ----------------------------------------------------------------------------- the API

@pytest.fixture(scope="module")
def board_client(serve):
    from gradio_client import Client

    # the registry is read when the tab is built
    with serve(MODULES, {claims_tab.REGISTRY_ENV: FAKE}) as served:
        yield served.demo, Client(served.url, verbose=False)


def test_api_returns_the_board_as_data_in_both_languages(board_client, runtime):
    _, client = board_client
    # not a board the handler tests above kept for their stand-in of the same name
    board.CACHE.forget(runtime.get("smollm2-135m-instruct"), fakes.FAST_REGISTRY)
    table, summary = client.predict("smollm2-135m-instruct", "en", api_name="/claims_board")
    assert table["headers"] == ["id", "claim", "evidence (measured now)", "criterion", "verdict",
                                "s", "shown in"]
    rows = {row[0]: row for row in table["data"]}
    assert list(rows) == [f"C{i}" for i in range(1, 23)]
    assert rows["C11"][4] == "✓ holds" and rows["C12"][4] == "✗ fails"
    assert rows["C14"][4] == "– not available"
    assert rows["C11"][2] == "s = 30; s = 3.1e-06 s"        # 30: the real SmolLM2's layers
    assert rows["C11"][6].endswith("(#open=rope/section-rope-qk-title)")
    assert summary.startswith("**17 of 22 claims hold** on SmolLM2-135M-Instruct")

    table_zh, summary_zh = client.predict("smollm2-135m-instruct", "zh", api_name="/claims_board")
    assert table_zh["headers"][0] == "编号" and table_zh["data"][10][4] == "✓ 成立"
    assert "**22 个论断中有 17 个成立**" in summary_zh
    # the second call was answered from the cache: the same computation time
    assert summary.split("Computed at ")[1].split(" in ")[0] in summary_zh


def test_api_refuses_bad_inputs_clearly(board_client):
    _, client = board_client
    with pytest.raises(Exception, match="no-such-model"):
        client.predict("no-such-model", "en", api_name="/claims_board")
    with pytest.raises(Exception, match="xx"):
        client.predict("smollm2-135m-instruct", "xx", api_name="/claims_board")


def test_the_board_event_is_bounded_and_stoppable(board_client):
    demo, _ = board_client
    events = list(demo.fns.values())
    run = next(f for f in events if f.api_name == "claims_board")
    assert (run.concurrency_id, run.concurrency_limit) == ("long", 1)
    assert run.time_limit == claims_tab.EVENT_LIMIT_S > board.BOARD_LIMIT_S
    rerun = [f for f in events if f.fn is not None
             and getattr(stopping.unwrap(f.fn)[0], "args", ())[3:4] == (True,)]
    # one Stop for both: it raises the flag the board reads (explorer/web/stopping.py)
    assert rerun and rerun[0].fn.stops is run.fn.stops
    [stop] = stop_buttons(demo, run.fn)
    assert stop.queue is False and not stop.cancels


class LoadedRuntime(FakeRuntime):
    def names(self):
        return [self.loaded.name, "other"]

    def is_loaded(self, name):
        return name == self.loaded.name


def test_a_change_of_model_shows_its_kept_board_or_the_claims_not_yet_run():
    board.CACHE.forget(fake_loaded(), fakes.FAST_REGISTRY)   # the real board's entry stays
    runtime = LoadedRuntime()
    table, summary, result = claims_tab.show_cached(runtime, fakes.FAST_REGISTRY, TITLES, "other", "en")
    assert summary.startswith("Press **Run**") and set(table["verdict"]) == {"… not run"}
    kept = board.board(runtime.loaded, registry=fakes.FAST_REGISTRY)
    table, summary, result = claims_tab.show_cached(runtime, fakes.FAST_REGISTRY, TITLES,
                                                    "smollm2-135m-instruct", "zh")
    assert result is kept and "**22 个论断中有 17 个成立**" in summary
    assert claims_tab.show_cached(runtime, fakes.FAST_REGISTRY, TITLES, None, "en")[2].rows[0].verdict == "pending"


def test_a_replaced_registry_is_refused_outside_a_test_run(monkeypatch):
    """A served app must not show fake verdicts: outside pytest the tab refuses to build."""
    monkeypatch.setenv(claims_tab.REGISTRY_ENV, FAKE)
    monkeypatch.delitem(sys.modules, "pytest")
    with pytest.raises(RuntimeError, match="only the test suite"):
        claims_tab.board_registry()
    monkeypatch.delenv(claims_tab.REGISTRY_ENV)
    assert claims_tab.board_registry() is board.CLAIMS


def test_a_replaced_registry_is_named_on_the_page(runtime):
    from bench.serve import build

    def markdown_of(env):
        demo = build(runtime, MODULES, env)
        return [str(block.value) for block in demo.blocks.values() if isinstance(block, gr.Markdown)]

    assert f"`{FAKE}`" in markdown_of({claims_tab.REGISTRY_ENV: FAKE})
    assert not any(FAKE in value for value in markdown_of({claims_tab.REGISTRY_ENV: None}))
