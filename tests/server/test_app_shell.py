"""The shell: i18n registry, tab contract, Runtime, and the shell's API through gradio_client
on the real embedded checkpoints."""
from __future__ import annotations

import threading
import time
from pathlib import Path

import gradio as gr
import pytest
import torch

from explorer.i18n import LANGUAGES, Translator, normalize_language
from explorer.runtime import Runtime, UnknownModelError

ROOT = Path(__file__).resolve().parents[2]


# ----------------------------------------------------------------------------- i18n

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
    assert ids == [f"C{i}" for i in range(1, 21)]
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


def test_launch_options_serve_only_static_and_never_share():
    import app

    options = app.launch_options()
    assert options["allowed_paths"] == [str(ROOT / "static")]
    assert options["share"] is False and options["ssr_mode"] is False
    assert Path(options["css_paths"][0]).is_file()


# ----------------------------------------------------------------------------- Runtime

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


# ----------------------------------------------------------------------------- app API

def test_model_info_returns_the_real_config_of_smollm2(client, runtime):
    info = client.predict("smollm2-135m-instruct", api_name="/model_info")
    assert (info["family"], info["n_layers"], info["d_model"]) == ("llama", 30, 576)
    assert (info["n_heads"], info["n_kv_heads"], info["head_dim"]) == (9, 3, 64)
    assert (info["d_ff"], info["vocab_size"], info["rope_theta"]) == (1536, 49152, 100000.0)
    assert info["tie_embeddings"] is True
    assert info["layer_types"] == {"full_attention": 30}
    assert 134_000_000 < info["parameters"] < 135_000_000  # tied head counted once
    element = torch.empty((), dtype=runtime.dtype).element_size()
    assert info["kv_cache_bytes_per_token"] == 2 * 30 * 3 * 64 * element  # C3; 46 080 in fp32
    assert "dequantized" in info["source_note"]


def test_model_info_returns_the_real_config_of_gemma(client):
    info = client.predict("gemma-3-270m", api_name="/model_info")
    assert (info["family"], info["n_layers"], info["d_model"]) == ("gemma3", 18, 640)
    assert (info["n_heads"], info["n_kv_heads"], info["head_dim"]) == (4, 1, 256)
    assert info["vocab_size"] == 262144
    assert info["layer_types"] == {"sliding_attention": 15, "full_attention": 3}
    assert info["sliding_window"] == 512
    assert (info["rope_theta"], info["rope_local_theta"]) == (1_000_000.0, 10_000.0)
    assert "Gemma Terms of Use" in info["notice"]


def test_bad_model_name_gives_a_plain_error(client):
    with pytest.raises(Exception, match="Unknown model 'no-such-model'. Available models: "
                                        "smollm2-135m-instruct, gemma-3-270m"):
        client.predict("no-such-model", api_name="/model_info")
    # Through the dropdown, a value outside the choices is refused before the handler
    # (explorer.inputs.short_choice_errors), the value quoted short.
    with pytest.raises(Exception, match="must be one of .*got 'no-such-model'"):
        client.predict("no-such-model", "en", api_name="/load_model")


def test_header_status_follows_the_language(client):
    client.predict("smollm2-135m-instruct", "en", api_name="/load_model")
    english, notice = client.predict("smollm2-135m-instruct", "en", api_name="/header_status")
    chinese, _ = client.predict("smollm2-135m-instruct", "zh", api_name="/header_status")
    assert "Runs on" in english and "30 layers" in english
    assert "运行于" in chinese and "30 层" in chinese
    assert "Apache" in str(notice)
    with pytest.raises(Exception, match="must be one of en, zh, got 'xx'"):
        client.predict("smollm2-135m-instruct", "xx", api_name="/header_status")


def test_no_listener_waits_for_a_stream_and_the_header_loads_first(client):
    """The page runs the listeners of one trigger in turn, in the order registered, each to its
    end (Gradio 6's dispatch awaits a stream until it stops). So on every trigger nothing comes
    after a streaming listener (the Generate tab's "Stopped" note was once cleared by a listener
    that had waited for the run, i.e. right after Stop), and on a model change the header's load (its
    progress bar) comes before every tab's listener (one waits in the model group)."""
    config = client.config
    elem = {c["id"]: c.get("props", {}).get("elem_id") for c in config["components"]}
    listeners = {}
    for dep in config["dependencies"]:
        for target, event in dep["targets"]:
            if target is not None and event != "load":   # load events are dispatched one by one
                listeners.setdefault((elem.get(target) or target, event), []).append(dep)
    streams = 0
    for (name, event), deps in listeners.items():
        for i, dep in enumerate(deps):
            streams += dep["types"]["generator"]
            assert not any(e["types"]["generator"] for e in deps[:i]), \
                f"{name}.{event}: {dep['api_name']} waits until a stream before it ends"
    assert streams >= 8   # Generate (2), Attention (3), RoPE (2), Claims (2), ...: all checked
    on_model = [dep for dep in listeners[("model-picker", "change")] if dep["backend_fn"]]
    assert len(on_model) >= 5 and "model-status" in [elem[o] for o in on_model[0]["outputs"]]
    # Generate's and the board's Stop raise a flag the run reads (explorer/web/stopping.py); a
    # `cancels=` would end the stream from outside, racing the page (its "Error" badge)
    for stop in ("gen-stop", "claims-stop"):
        [dep] = listeners[(stop, "click")]
        assert dep["cancels"] == [] and dep["backend_fn"] and not dep["queue"]
    assert len(listeners[("gen-start", "click")]) == 1


def test_a_tab_that_cannot_be_found_stops_the_start_with_its_name():
    from explorer.ui.tabs import TabNotFound, available_tabs

    with pytest.raises(TabNotFound, match="explorer.ui.tabs.not_written_yet"):
        available_tabs(("explorer.ui.tabs.about", "explorer.ui.tabs.not_written_yet"))
    with pytest.raises(TabNotFound, match="no_such_package.tab"):
        available_tabs(("no_such_package.tab",))


def test_a_tab_written_to_the_contract_works_end_to_end(runtime, serve):
    from gradio_client import Client

    from bench.serve import build

    modules = ("example_tab", "explorer.ui.tabs.about")
    demo = build(runtime, modules)
    tabs = [b for b in demo.blocks.values() if isinstance(b, gr.Tab) and b.id]  # not the sections
    assert [tab.id for tab in tabs] == ["example_tab", "about"]
    with serve(modules, demo=demo) as served:
        client = Client(served.url, verbose=False)
        english = client.predict("smollm2-135m-instruct", "en", "Hello world",
                                 api_name="/example_count")
        chinese = client.predict("smollm2-135m-instruct", "zh", "Hello world",
                                 api_name="/example_count")
        assert english == "2 tokens for 30" and chinese == "30 切出 2 个词元"
        with pytest.raises(Exception, match="Type a prompt first"):
            client.predict("smollm2-135m-instruct", "en", "  ", api_name="/example_count")
        event = next(f for f in demo.fns.values() if f.api_name == "example_count")
        assert (event.concurrency_id, event.concurrency_limit) == ("model", 1)
