"""Where the project keeps files between runs. Standard library only: explorer.checkpoints
imports it, and must not pull in torch (tests/unit/test_checkpoints_unit.py checks)."""
from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """Where converted checkpoints and built kernels live: $EXPLORER_CACHE, else
    ~/.cache/transformer-explorer."""
    env = os.environ.get("EXPLORER_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "transformer-explorer"
