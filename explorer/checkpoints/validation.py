"""A checkpoint folder checked before anything loads it, with what the user should know.

The file checks are ``models.safetensors_files`` (the one validator, shared with the loader):
pickle weights refused, each safetensors header checked against its file's size, shards of an
index present. This adds what only the explorer cares about: a note when config.json names
remote code, and errors as CheckpointError.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from models import safetensors_files

from .errors import CheckpointError

INDEX_FILE = safetensors_files.INDEX_FILE


@dataclass
class FolderReport:
    """What ``validate_folder`` found; ``notes`` are worth showing to the user."""

    path: Path
    config: dict
    weight_files: list[Path]
    notes: list[str] = field(default_factory=list)


def _checked(check, *args):
    try:
        return check(*args)
    except CheckpointError:
        raise
    except safetensors_files.CheckpointLoadError as error:
        raise CheckpointError(str(error)) from None


def safetensors_header(path) -> dict:
    """The JSON header of a safetensors file, checked against the file's real size."""
    return _checked(safetensors_files.safetensors_header, Path(path))


def validate_folder(path) -> FolderReport:
    """Check a checkpoint folder before anything loads it; raise CheckpointError if unusable.

    Pure file inspection (reads config.json and the safetensors headers only), so it takes
    milliseconds and is safe on untrusted folders: nothing in them is ever executed.
    """
    folder = Path(path).expanduser()
    config, weight_files = _checked(safetensors_files.check_folder, folder)
    notes: list[str] = []
    if config.get("auto_map"):
        notes.append(
            "config.json names remote code (auto_map); it is never executed: only our own "
            "modules run these weights, and an architecture we do not implement is refused"
        )
    return FolderReport(folder, config, weight_files, notes)
