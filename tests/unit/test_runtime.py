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


# ----- the memory budget (issue 27, finding 15) ------------------------------------------------
class _Sized(torch.nn.Module):
    def __init__(self, floats: int):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.zeros(floats))
        self.config = {"n_layers": 1}


def _budgeted(sizes: dict, budget: int) -> Runtime:
    """A runtime over models of `sizes` bytes (fp32 parameters), with `budget` bytes."""
    return Runtime("cpu", torch.float32, registry={name: object() for name in sizes},
                   prepare=lambda name, progress=None: Path(name),
                   load_model=lambda folder, device=None, dtype=None: _Sized(sizes[str(folder)] // 4),
                   load_tokenizer=lambda folder: "tok", memory_budget=budget,
                   weights_bytes=lambda folder, dtype: sizes[str(folder)])


def test_the_least_recently_used_model_is_unloaded_to_stay_within_the_budget():
    runtime = _budgeted({"a": 400, "b": 400, "c": 400}, budget=1000)
    first = runtime.get("a")
    runtime.get("b")
    assert runtime.get("a") is first                       # a used again: b is now the oldest
    runtime.get("c")
    assert runtime.loaded_bytes() == {"a": 400, "c": 400}  # b unloaded, a kept
    assert not runtime.is_loaded("b") and runtime.is_loaded("a") and runtime.is_loaded("c")
    assert sum(runtime.loaded_bytes().values()) <= runtime.memory_budget
    runtime.get("b")                                       # loads again, a (now oldest) goes
    assert list(runtime.loaded_bytes()) == ["c", "b"]


def test_a_model_larger_than_the_budget_is_refused_with_its_size():
    runtime = _budgeted({"small": 400, "huge": 28_000_000_000}, budget=16_000_000_000)
    small = runtime.get("small")
    with pytest.raises(ModelLoadError, match=r"huge needs 28\.0 GB for its weights in float32, "
                                             r"more than the 16\.0 GB"):
        runtime.get("huge")
    assert runtime.get("small") is small                   # nothing unloaded for it


def test_an_unloaded_model_is_freed_with_its_decode_loop():
    import gc
    import weakref

    from explorer.serving import registry

    runtime = _budgeted({"a": 400, "b": 400}, budget=600)
    model = runtime.get("a").model
    registry.shared(model, lambda m: type("Loop", (), {"model": m})())   # a loop holds its model
    gone = weakref.ref(model)
    del model
    runtime.get("b")
    gc.collect()
    assert gone() is None, "the unloaded model is still held"


def test_preload_unloads_nothing_and_skips_what_does_not_fit():
    runtime = _budgeted({"a": 400, "b": 400, "c": 100}, budget=600)
    assert runtime.preload() == ["a", "c"]
    assert runtime.loaded_bytes() == {"a": 400, "c": 100}


def test_the_budget_comes_from_the_environment_or_the_machine(monkeypatch):
    from explorer import runtime as runtime_module

    monkeypatch.setenv(runtime_module.MEMORY_BUDGET_ENV, "2.5")
    assert runtime_module.default_budget(torch.device("cpu")) == 2_500_000_000
    monkeypatch.delenv(runtime_module.MEMORY_BUDGET_ENV)
    import psutil
    assert runtime_module.default_budget(torch.device("cpu")) == int(0.5 * psutil.virtual_memory().total)

    def no_gpu_yet(device):   # a ZeroGPU Space's main process, before any GPU call
        raise RuntimeError("CUDA is not available in this process")

    monkeypatch.setattr(torch.cuda, "get_device_properties", no_gpu_yet)
    assert runtime_module.default_budget(torch.device("cuda")) == int(0.5 * psutil.virtual_memory().total)


def test_a_folders_weights_are_counted_from_its_headers(tmp_path):
    from explorer.runtime import folder_weights_bytes, module_bytes

    folder = tmp_path / "tiny"
    tiny_hf("llama").save_pretrained(folder)
    model = load_model(folder, device="cpu", dtype=torch.float32)
    assert folder_weights_bytes(folder, torch.float32) >= module_bytes(model) > 0
    assert folder_weights_bytes(folder, torch.bfloat16) * 2 == folder_weights_bytes(folder, torch.float32)


def test_an_unloaded_model_is_freed_with_the_claims_boards_loop():
    """The board keeps a decode loop of its own per model (explorer/generate/evidence.py); an
    unloaded model goes with it too (before, that loop held it until the process ended)."""
    import gc
    import weakref

    from explorer.generate import evidence

    runtime = _budgeted({"a": 400, "b": 400}, budget=600)
    model = runtime.get("a").model
    with evidence._LOOPS_LOCK:
        evidence._LOOPS[model] = type("Loop", (), {"model": model})()   # a loop holds its model
    gone = weakref.ref(model)
    del model
    runtime.get("b")                                                    # "a" is unloaded
    gc.collect()
    assert gone() is None, "the unloaded model is still held by the board's loop"
