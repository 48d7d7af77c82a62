"""The shell: i18n registry, tab contract, Runtime, and the shell's API through gradio_client
on the real embedded checkpoints."""
from __future__ import annotations

import gradio as gr
import pytest
import torch



# ----------------------------------------------------------------------------- i18n


# ----------------------------------------------------------------------------- Runtime


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
