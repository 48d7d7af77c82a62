"""Tests for explorer.checkpoints: folder validation, the conversion cache, resolve, CLI.

The two real embedded checkpoints are converted once into the configured cache
(EXPLORER_CACHE, or ~/.cache/transformer-explorer); the first run takes ~1.5 min on 2 cores,
later runs find the folders prepared. Everything else uses tiny folders in tmp_path and a
tiny random model standing in for the GGUF loader, so it runs in seconds.
"""

import hashlib
import io
import json
import os
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
from explorer.checkpoints.__main__ import main

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


# --------------------------------------------------------------------------- cache dir


# --------------------------------------------------------------------------- registry


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
