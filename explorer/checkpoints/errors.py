"""The error every checkpoint step raises, and the rule its messages follow: no file-system
paths. A message may reach a visitor (through the app's error box); where the cache or the
installed packages live is for the server log, which callers write with the path."""
from __future__ import annotations

import re

from models.safetensors_files import CheckpointLoadError


class CheckpointError(CheckpointLoadError):
    """A checkpoint cannot be found, prepared or loaded; the message says why and names the
    file (by its name inside the checkpoint folder), never a full path."""


# An absolute, home-relative or dot-relative POSIX path: starts after a space, a quote or a
# bracket (not inside a word, a URL or a fraction such as tokens/s), two components or more.
_PATH = re.compile(r"(?<![\w.:/~-])(?:~|\.{1,2})?(?:/[^\s'\"`/:,;()\[\]{}<>]+){2,}/?")


def without_paths(text: str) -> str:
    """``text`` with every file-system path cut to its last component
    ("/root/.cache/x/model.safetensors: truncated" -> "model.safetensors: truncated")."""
    return _PATH.sub(lambda match: match.group(0).rstrip("/").rsplit("/", 1)[-1], text)
