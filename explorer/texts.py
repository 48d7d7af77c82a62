"""Long texts shipped with the app for experiments that need one (perplexity along position),
and its passages (`passage`): the Precision section scores each weight precision on one, and
the served default precision was chosen on another (explorer/generate/precision.py)."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

TEXTS_DIR = Path(__file__).resolve().parent.parent / "static" / "texts"
LONG_TEXT_FILE = TEXTS_DIR / "python-execution-model.txt"
LONG_TEXT_SOURCE = ("The Python Language Reference, chapters “Execution model” and “The import "
                    "system” (CPython 3.11 docs). © Python Software Foundation, PSF License.")
# the passages of the long text, by their headings (a line underlined with '*' in the file)
EXECUTION_MODEL = "Execution model"              # about 2,200 tokens
IMPORT_STATEMENT = 'The "import" statement'      # about 2,050 tokens


@lru_cache(maxsize=1)
def long_text() -> str:
    """About 4,000 tokens of English prose; immutable, so caching it is safe for all visitors."""
    return LONG_TEXT_FILE.read_text(encoding="utf-8")


def headings(text: str) -> list[tuple[int, str]]:
    """(character offset, heading) of each passage of `text`: a line underlined by a line of as
    many '*' (reStructuredText's top-level title, as the file keeps it)."""
    found, offset = [], 0
    lines = text.split("\n")
    for line, below in zip(lines, lines[1:]):
        if line.strip() and below == "*" * len(line):
            found.append((offset, line))
        offset += len(line) + 1
    return found


@lru_cache(maxsize=4)
def passage(heading: str) -> str:
    """The passage of the long text that begins with `heading` (its title line included), up
    to the next one; KeyError for a heading the text does not have."""
    text = long_text()
    marks = headings(text)
    for i, (start, title) in enumerate(marks):
        if title == heading:
            end = marks[i + 1][0] if i + 1 < len(marks) else len(text)
            return text[start:end]
    raise KeyError(heading)
