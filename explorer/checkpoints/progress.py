"""How slow checkpoint steps report progress, without knowing who listens (the UI passes a
gr.Progress, the CLI a text bar, tests a list's append)."""
from __future__ import annotations

import logging
from typing import Callable, Optional

log = logging.getLogger("explorer.checkpoints")

Progress = Callable[[float, str], object]
"""``progress(fraction in [0, 1], message)``; gr.Progress accepts this call too."""


def report(progress: Optional[Progress], fraction: float, message: str) -> None:
    """Log the step and tell ``progress`` (when given)."""
    log.info("%3.0f%% %s", 100 * fraction, message)
    if progress is not None:
        progress(fraction, message)
