"""Long texts shipped with the app for experiments that need one (perplexity along position)."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

TEXTS_DIR = Path(__file__).resolve().parent.parent / "static" / "texts"
LONG_TEXT_FILE = TEXTS_DIR / "python-execution-model.txt"
LONG_TEXT_SOURCE = ("The Python Language Reference, chapters “Execution model” and “The import "
                    "system” (CPython 3.11 docs). © Python Software Foundation, PSF License.")


@lru_cache(maxsize=1)
def long_text() -> str:
    """About 4,000 tokens of English prose; immutable, so caching it is safe for all visitors."""
    return LONG_TEXT_FILE.read_text(encoding="utf-8")
