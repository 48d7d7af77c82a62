"""The one check of a checkpoint folder's files, before anything reads a tensor from them.

A checkpoint folder holds ``config.json`` and its weights as ``*.safetensors`` (one file, or
shards listed in ``model.safetensors.index.json``). Pickle weights (``PICKLE_SUFFIXES``) are
refused, never opened: unpickling runs code. Each safetensors header is checked against the
file's size, so a download or conversion cut short is refused with the file's name instead of
failing somewhere inside a load.

Standard library only: ``explorer.checkpoints`` validates folders with it and must not import
torch. Pure file inspection (config.json and the headers), so it takes milliseconds and nothing
in the folder is ever executed.

Messages name files by their name inside the folder and the folder by its last component, never
by a full path: they are shown to visitors, and the cache's location is nobody's business but
the server log's (callers log the path next to the message).
"""
from __future__ import annotations

import json
import struct
from pathlib import Path

# Weights in Python's pickle format (torch.save and friends): loading them can run code.
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl", ".pickle")
INDEX_FILE = "model.safetensors.index.json"
MAX_HEADER_BYTES = 100 * 2**20  # the format's own limit on the JSON header

# Bytes per element of the safetensors dtypes, to check each tensor's byte range.
DTYPE_BYTES = {
    "BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1,
    "I16": 2, "U16": 2, "F16": 2, "BF16": 2,
    "I32": 4, "U32": 4, "F32": 4, "I64": 8, "U64": 8, "F64": 8,
}


class CheckpointLoadError(ValueError):
    """The folder cannot be loaded; the message names the file or tensor at fault (no path)."""


def folder_label(folder: Path) -> str:
    """How messages name a checkpoint folder: its last component, quoted."""
    return f"checkpoint folder {Path(folder).name!r}"


def read_config_json(folder: Path) -> dict:
    """The JSON object in ``folder/config.json``."""
    path = Path(folder) / "config.json"
    if not path.is_file():
        raise CheckpointLoadError(f"config.json is missing from {folder_label(folder)}: "
                                  "a checkpoint folder needs config.json")
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise CheckpointLoadError(f"config.json is not valid JSON ({error})") from None
    if not isinstance(config, dict):
        raise CheckpointLoadError(f"config.json must hold a JSON object, not {type(config).__name__}")
    return config


def pickle_files(folder: Path) -> list[str]:
    """Names of the files in ``folder`` that hold pickle weights (never opened)."""
    return sorted(p.name for p in Path(folder).iterdir()
                  if p.is_file() and p.suffix.lower() in PICKLE_SUFFIXES)


def weight_files(folder: Path) -> list[Path]:
    """The safetensors files of ``folder``: the shards its index names (each must exist), else
    every ``*.safetensors``. A folder with only pickle weights, or none, raises."""
    folder = Path(folder)
    index = folder / INDEX_FILE
    if index.is_file():
        try:
            weight_map = json.loads(index.read_text(encoding="utf-8"))["weight_map"]
            shards = sorted(set(weight_map.values()))
        except (UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError) as error:
            raise CheckpointLoadError(f"{INDEX_FILE} is not a valid safetensors index ({error!r})") from None
        missing = [name for name in shards if not (folder / name).is_file()]
        if missing:
            raise CheckpointLoadError(
                f"{INDEX_FILE} names shard(s) missing from {folder_label(folder)}: {', '.join(missing)}")
        return [folder / name for name in shards]
    files = sorted(folder.glob("*.safetensors"))
    if files:
        return files
    pickles = pickle_files(folder)
    if pickles:
        raise CheckpointLoadError(
            f"{folder_label(folder)}: pickle checkpoints are not loaded (they can run code), only "
            f"safetensors are accepted; convert to safetensors (found {', '.join(pickles)})")
    hint = " (a GGUF file is not read directly: convert it to safetensors)" if any(folder.glob("*.gguf")) else ""
    raise CheckpointLoadError(f"{folder_label(folder)}: no weights found: no *.safetensors file{hint}")


def safetensors_header(path: Path) -> dict:
    """The JSON header of a safetensors file, checked against the file's real size.

    Format: 8-byte little-endian header length N, N bytes of JSON, then the data; each
    tensor's ``data_offsets`` are relative to the end of the header. A download cut short
    keeps a readable header but loses data at the end, so the size check is what catches it.
    """
    path = Path(path)
    name, size = path.name, path.stat().st_size
    with open(path, "rb") as handle:
        prefix = handle.read(8)
        if len(prefix) < 8:
            raise CheckpointLoadError(f"{name}: truncated or corrupt safetensors file ({size} bytes, no header)")
        (header_len,) = struct.unpack("<Q", prefix)
        if header_len > min(size - 8, MAX_HEADER_BYTES):
            raise CheckpointLoadError(f"{name}: truncated or corrupt safetensors file "
                                      f"(header claims {header_len} bytes, file has {size})")
        raw = handle.read(header_len)
    try:
        header = json.loads(raw)
    except (UnicodeDecodeError, ValueError) as error:
        raise CheckpointLoadError(f"{name}: corrupt safetensors file (header is not JSON: {error})") from None
    if not isinstance(header, dict):
        raise CheckpointLoadError(f"{name}: corrupt safetensors file (header is not a JSON object)")

    data_end = 0
    for key, info in header.items():
        if key == "__metadata__":
            continue
        try:
            start, end = info["data_offsets"]
            dtype, shape = info["dtype"], info["shape"]
            numel = 1
            for dim in shape:
                numel *= int(dim)
        except (KeyError, TypeError, ValueError):
            raise CheckpointLoadError(f"{name}: corrupt safetensors file (bad header entry for {key!r})") from None
        if dtype in DTYPE_BYTES and end - start != numel * DTYPE_BYTES[dtype]:
            raise CheckpointLoadError(f"{name}: corrupt safetensors file ({key!r}: shape {shape} {dtype} "
                                      f"does not match its {end - start} bytes)")
        data_end = max(data_end, end)
    if size < 8 + header_len + data_end:
        raise CheckpointLoadError(f"{name}: truncated safetensors file ({size} bytes, the header needs "
                                  f"{8 + header_len + data_end}); download or convert it again")
    return header


def check_folder(folder) -> tuple[dict, list[Path]]:
    """(config.json as a dict, safetensors files) of a folder whose files are all usable:
    config.json parses, every weight file is safetensors with a header that fits its size."""
    folder = Path(folder).expanduser()
    if not folder.is_dir():
        raise CheckpointLoadError(f"no such checkpoint folder: {folder.name!r}")
    config = read_config_json(folder)
    files = weight_files(folder)
    for path in files:
        safetensors_header(path)
    return config, files
