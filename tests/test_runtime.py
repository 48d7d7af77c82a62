"""explorer.runtime when a load fails: the failure is remembered for a while, so visitors
waiting for the load (and those who follow) get its error at once instead of each retrying a
slow conversion; and what they are told names no file-system path (the log does)."""
from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

import pytest
import torch

from explorer.checkpoints import without_paths
from explorer.runtime import ModelLoadError, Runtime
from models.loading import load_model
from tests.helpers import tiny_hf


class _FakeModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.zeros(2))
        self.config = {"n_layers": 1}


def _runtime(folder: Path, load, retry_after_s: float = 60.0) -> Runtime:
    return Runtime("cpu", torch.float32, registry={"a": object()},
                   prepare=lambda name, progress=None: folder, load_model=load,
                   load_tokenizer=lambda folder: "tok", retry_after_s=retry_after_s)


def test_visitors_waiting_on_a_failed_load_get_its_error_without_retrying(tmp_path):
    calls = []

    def failing_load(folder, device=None, dtype=None):
        calls.append(time.monotonic())
        time.sleep(0.5)  # a slow conversion/load that ends in an error
        raise OSError(f"[Errno 28] No space left on device: '{folder}/model.safetensors'")

    runtime = _runtime(tmp_path / "cache" / "a", failing_load)
    errors, finished = [], []

    def visitor():
        try:
            runtime.get("a")
        except ModelLoadError as error:
            errors.append(str(error))
        finished.append(time.monotonic())

    threads = [threading.Thread(target=visitor) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert len(calls) == 1, "every waiting visitor retried the failed load"
    assert errors == ["OSError: [Errno 28] No space left on device: 'model.safetensors'"] * 6
    # The waiters heard of the failure as soon as it happened (they poll the lock every 0.5 s),
    # not one 0.5 s load after another.
    assert max(finished) - calls[0] < 1.5

    started = time.monotonic()
    with pytest.raises(ModelLoadError, match="No space left on device"):
        runtime.get("a")  # a later visitor: answered from memory
    assert len(calls) == 1 and time.monotonic() - started < 0.1
    assert not runtime.is_loaded("a")


def test_a_failed_load_is_tried_again_after_the_interval(tmp_path):
    outcomes = [ValueError("config.json is not valid JSON"), None]

    def load(folder, device=None, dtype=None):
        outcome = outcomes.pop(0)
        if outcome is not None:
            raise outcome
        return _FakeModel()

    runtime = _runtime(tmp_path, load, retry_after_s=0.3)
    for _ in range(3):
        with pytest.raises(ModelLoadError, match="^config.json is not valid JSON$"):
            runtime.get("a")
    assert outcomes == [None]  # tried once
    time.sleep(0.35)
    loaded = runtime.get("a")  # the interval has passed: tried again, and it works now
    assert outcomes == [] and loaded.tokenizer == "tok" and runtime.is_loaded("a")


def test_a_failed_preparation_is_remembered_too(tmp_path):
    prepared = []

    def prepare(name, progress=None):
        prepared.append(name)
        raise ValueError("the package 'x' that carries this checkpoint is not installed")

    runtime = Runtime("cpu", torch.float32, registry={"a": object()}, prepare=prepare,
                      load_model=lambda *a, **k: pytest.fail("not reached"),
                      load_tokenizer=lambda folder: "tok")
    for _ in range(2):
        with pytest.raises(ModelLoadError, match="is not installed"):
            runtime.get("a")
    assert prepared == ["a"]


def test_a_broken_checkpoint_is_reported_without_its_path_which_the_log_keeps(tmp_path, caplog):
    """The real loader on a cache folder whose weights were cut short: the visitor reads which
    file is wrong, the server log reads where it is; so does the app's error box."""
    import gradio as gr

    from explorer.ui import load_or_error

    folder = tmp_path / "cache" / "a"
    tiny_hf("llama").save_pretrained(folder)
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-100])
    runtime = _runtime(folder, load_model)
    with caplog.at_level(logging.ERROR, logger="explorer.runtime"):
        with pytest.raises(ModelLoadError) as info:
            runtime.get("a")
    message = str(info.value)
    assert message.startswith("model.safetensors: truncated safetensors file")
    assert str(tmp_path) not in message and without_paths(message) == message
    assert str(folder) in caplog.text

    with pytest.raises(gr.Error) as shown:
        load_or_error(runtime, "a")
    assert "model.safetensors: truncated" in str(shown.value) and str(tmp_path) not in str(shown.value)
