"""load_model on checkpoint folders: a good tiny folder loads and matches transformers; bad
folders fail with a message naming the problem, before any model is returned."""
import json

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
    with pytest.raises(CheckpointLoadError, match="model.safetensors: unreadable or truncated"):
        load_model(folder, device="cpu")


def test_pickle_only_folder_refused(tiny_folder, tmp_path):
    folder = tmp_path / "pickle"
    folder.mkdir()
    (folder / "config.json").write_text((tiny_folder[0] / "config.json").read_text())
    torch.save({"x": torch.zeros(1)}, folder / "pytorch_model.bin")
    with pytest.raises(CheckpointLoadError, match="only safetensors are accepted"):
        load_model(folder, device="cpu")


def test_missing_config_and_folder(tmp_path):
    with pytest.raises(CheckpointLoadError, match="no such checkpoint folder"):
        load_model(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(CheckpointLoadError, match="config.json is missing"):
        load_model(tmp_path / "empty")


def test_unsupported_architecture_folder(tiny_folder, tmp_path):
    folder = copy_folder(tiny_folder[0], tmp_path / "gpt2")
    cfg = json.loads((folder / "config.json").read_text())
    cfg["architectures"], cfg["model_type"] = ["GPT2LMHeadModel"], "gpt2"
    (folder / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match="unsupported architecture"):
        load_model(folder, device="cpu")
