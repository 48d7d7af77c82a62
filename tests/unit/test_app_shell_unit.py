"""The app's shell without serving it (served: tests/server/test_app_shell.py)."""
from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
import torch

from explorer.i18n import LANGUAGES, Translator, normalize_language
from explorer.runtime import Runtime, UnknownModelError


ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("given, expected", [
    ("zh-CN", "zh"), ("zh_TW", "zh"), ("ZH", "zh"), ("en-GB", "en"), ("fr", "en"),
    ("", "en"), (None, "en"), (42, "en"), ("zh", "zh"), ("en", "en"),
])
def test_normalize_language(given, expected):
    assert normalize_language(given) == expected


def test_translator_rejects_missing_and_duplicate_strings():
    with pytest.raises(ValueError, match="no text for zh"):
        Translator([("x", {"x.a": {"en": "A", "zh": " "}})])
    with pytest.raises(ValueError, match="declared by both"):
        Translator([("a", {"k": {"en": "A", "zh": "甲"}}), ("b", {"k": {"en": "B", "zh": "乙"}})])
    t = Translator([("a", {"k": {"en": "{n} tokens", "zh": "{n} 个词元"}})])
    assert t.text("k", "zh-CN", n=3) == "3 个词元"
    assert t.text("k", "de", n=3) == "3 tokens"
    with pytest.raises(KeyError):
        t("missing")


def test_every_tab_follows_the_contract_and_every_string_has_both_languages():
    from explorer.ui import build_translator
    from explorer.ui.tabs import TAB_MODULES, available_tabs

    tabs = available_tabs()
    names = [m.__name__ for m in tabs]
    assert "explorer.ui.tabs.about" in names
    assert names == [n for n in TAB_MODULES if n in names]  # display order kept
    t = build_translator(tabs)
    gradio_i18n = t.gradio_i18n().translations_dict
    assert set(gradio_i18n) == set(LANGUAGES)
    for key in t.keys():
        for lang in LANGUAGES:
            assert gradio_i18n[lang][key].strip(), (key, lang)
    # The Chinese side is really Chinese (a name like "RoPE" may stay the same in both).
    chinese = [k for k in t.keys() if any("\u4e00" <= c <= "\u9fff" for c in gradio_i18n["zh"][k])]
    assert len(chinese) >= 0.8 * len(t.keys())


def test_about_lists_every_claim_of_the_syllabus():
    from explorer.ui.tabs import about

    ids = about.claim_ids()
    assert ids == [f"C{i}" for i in range(1, 23)]
    assert set(ids) == set(about.CLAIM_PLACES)
    table = about.draw_claims({"rope": "about.tab"}, "en")  # pretend About shows RoPE
    assert "| C11 | RoPE rotates dimension pairs; the score depends only on m − n. | [About tab](#open=rope) |" in table
    assert "| C6 | " in table and "Architecture tab (planned); Generate tab (planned) |" in table
    assert "“关于”标签页" in about.draw_claims({"rope": "about.tab"}, "zh")


def test_language_switch_finds_gradios_locale_module():
    from explorer.ui.page import shell

    head = shell.head_html()
    assert shell._gradio_core_bundle().startswith("core-"), "gradio moved changeLocale"
    assert shell._gradio_core_bundle() in head


def test_the_charts_have_one_watch_in_the_head():
    """static/charts.js is the page's one watch over its charts (the text alternative and the
    lens's cell fit): the head carries it once, and it holds one MutationObserver, one frame's
    batch and one plotly_afterplot hook (the browser tests check that each job is done)."""
    from explorer.ui.page import shell

    head = shell.head_html()
    script = (ROOT / "static" / "charts.js").read_text()
    assert head.count(script) == 1
    assert [script.count(s) for s in ("new MutationObserver(", "requestAnimationFrame(",
                                      '"plotly_afterplot"')] == [1, 1, 1]
    # no other script of the head watches for charts to label or fit
    assert head.count("meta.alt") == script.count("meta.alt") and head.count("meta.fit") == script.count("meta.fit")


def test_launch_options_serve_only_static_and_never_share():
    import app

    options = app.launch_options()
    assert options["allowed_paths"] == [str(ROOT / "static")]
    assert options["share"] is False and options["ssr_mode"] is False
    assert Path(options["css_paths"][0]).is_file()


class _FakeModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.zeros(2))
        self.config = {"n_layers": 1}


def _fake_runtime(calls: list, delay: float = 0.0) -> Runtime:
    def prepare(name, progress=None):
        progress(0.5, "converting")
        return Path("/nonexistent") / name

    def load_model(folder, device=None, dtype=None):
        calls.append(folder.name)
        time.sleep(delay)
        return _FakeModel().train()

    return Runtime("cpu", torch.float32, registry={"a": object(), "b": object()},
                   prepare=prepare, load_model=load_model, load_tokenizer=lambda folder: "tok")


def test_runtime_loads_each_model_once_under_concurrent_requests():
    calls: list = []
    runtime = _fake_runtime(calls, delay=0.2)
    results = []
    threads = [threading.Thread(target=lambda: results.append(runtime.get("a"))) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert calls == ["a"]
    assert len({id(r) for r in results}) == 1
    loaded = results[0]
    assert loaded.model.training is False  # eval mode, whatever the loader returned
    assert loaded.tokenizer == "tok" and loaded.name == "a"
    assert runtime.is_loaded("a") and not runtime.is_loaded("b")


def test_runtime_relays_progress_to_callers_waiting_for_a_load():
    runtime = _fake_runtime([], delay=1.5)
    first = threading.Thread(target=runtime.get, args=("a",))
    first.start()
    time.sleep(0.2)
    seen = []
    runtime.get("a", progress=lambda f, m: seen.append((f, m)))
    first.join()
    assert any(message.startswith("Loading a onto") for _, message in seen), seen


def test_runtime_reports_progress_and_refuses_unknown_names():
    class FalsyProgress(list):  # like gr.Progress: empty (falsy) until something is tracked
        def __call__(self, fraction, message):
            self.append(fraction)

    runtime = _fake_runtime([])
    seen = FalsyProgress()
    runtime.get("b", progress=seen)
    assert seen[0] == 0.0 and seen[-1] == 1.0 and seen == sorted(seen)
    for bad in ["nope", "", None, 3, "../a"]:
        with pytest.raises(UnknownModelError, match="Available models: a, b"):
            runtime.get(bad)
