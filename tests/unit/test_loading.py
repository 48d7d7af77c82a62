"""load_model on checkpoint folders: a good tiny folder loads and matches transformers; bad
folders fail with a message naming the problem, before any model is returned."""
import json
import sys

import pytest
import torch

from models.loading import CheckpointLoadError, load_model
from tests.helpers import tiny_hf


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiny-gemma")
    hf = tiny_hf("gemma3")
    hf.save_pretrained(folder)  # safetensors by default
    return folder, hf


def test_folder_loads_and_matches(tiny_folder):
    folder, hf = tiny_folder
    model = load_model(folder, device="cpu", dtype=torch.float32)
    assert not model.training and not any(p.requires_grad for p in model.parameters())
    ids = torch.randint(0, 97, (1, 12))
    with torch.no_grad():
        assert (model(ids) - hf(ids).logits).abs().max() <= 1e-5


def copy_folder(src, dst):
    dst.mkdir()
    for f in src.iterdir():
        (dst / f.name).write_bytes(f.read_bytes())
    return dst


def test_truncated_weights_named(tiny_folder, tmp_path):
    folder = copy_folder(tiny_folder[0], tmp_path / "cut")
    weights = folder / "model.safetensors"
    data = weights.read_bytes()
    weights.write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointLoadError, match=r"^model\.safetensors: truncated safetensors file") as info:
        load_model(folder, device="cpu")
    assert str(tmp_path) not in str(info.value)  # the message may reach a visitor


def test_damage_the_header_check_misses_is_still_named(tiny_folder, tmp_path, monkeypatch):
    """A file whose header fits its size but whose data safetensors refuses (here: a header
    that is not what safetensors accepts) fails in read_tensors, named by file name."""
    import models.loading as loading

    folder = copy_folder(tiny_folder[0], tmp_path / "odd")
    monkeypatch.setattr(loading, "check_folder", lambda f: (json.loads((folder / "config.json").read_text()),
                                                             [folder / "model.safetensors"]))
    weights = folder / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[8] = ord("[")  # the header's JSON object becomes invalid JSON
    weights.write_bytes(bytes(data))
    with pytest.raises(CheckpointLoadError, match=r"^model\.safetensors: unreadable or truncated") as info:
        load_model(folder, device="cpu")
    assert str(tmp_path) not in str(info.value)


def test_pickle_only_folder_refused(tiny_folder, tmp_path):
    folder = tmp_path / "pickle"
    folder.mkdir()
    (folder / "config.json").write_text((tiny_folder[0] / "config.json").read_text())
    torch.save({"x": torch.zeros(1)}, folder / "pytorch_model.bin")
    with pytest.raises(CheckpointLoadError, match="only safetensors are accepted") as info:
        load_model(folder, device="cpu")
    assert "pytorch_model.bin" in str(info.value) and str(tmp_path) not in str(info.value)


def test_missing_config_and_folder(tmp_path):
    with pytest.raises(CheckpointLoadError, match="^no such checkpoint folder: 'nope'$"):
        load_model(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(CheckpointLoadError, match="^config.json is missing from checkpoint folder 'empty'"):
        load_model(tmp_path / "empty")


def test_unsupported_architecture_folder(tiny_folder, tmp_path):
    folder = copy_folder(tiny_folder[0], tmp_path / "gpt2")
    cfg = json.loads((folder / "config.json").read_text())
    cfg["architectures"], cfg["model_type"] = ["GPT2LMHeadModel"], "gpt2"
    (folder / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match="unsupported architecture"):
        load_model(folder, device="cpu")


def mapped_files() -> str:
    """The file paths this process maps (/proc/self/maps), one per line."""
    with open("/proc/self/maps") as maps:
        return "".join(line.split(maxsplit=5)[-1] for line in maps if len(line.split()) == 6)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/maps")
def test_loaded_model_owns_its_memory(tiny_folder, tmp_path):
    """No parameter is left a view of the checkpoint's memory map: once loaded, the file is not
    mapped, so a file rewritten on disk cannot reach the model, and the pages of tensors read
    only to build fused copies are not held."""
    import gc

    folder = copy_folder(tiny_folder[0], tmp_path / "own")
    model = load_model(folder, device="cpu", dtype=torch.float32)
    gc.collect()
    assert str(folder) not in mapped_files()
    ids = torch.randint(0, 97, (1, 12))
    before = model(ids)
    (folder / "model.safetensors").write_bytes(b"\0" * 64)  # the file changed under the server
    assert torch.equal(model(ids), before)


