"""The command line: list the embedded checkpoints, or prepare (convert once into the cache).

    python -m explorer.checkpoints list
    python -m explorer.checkpoints prepare --all
    python -m explorer.checkpoints prepare gemma-3-270m
"""
from __future__ import annotations

import argparse
import sys
import time
from typing import Optional

from models.paths import cache_dir

from .conversion import is_complete, prepare_embedded
from .errors import CheckpointError
from .registry import DEFAULT_EMBEDDED, EMBEDDED


class TextBar:
    """progress callable drawing ``[#####.....]  50% message`` on a stream (stderr)."""

    def __init__(self, stream=None, width: int = 30) -> None:
        # Looked up now, not as a default argument, so a redirected sys.stderr is honoured.
        self.stream, self.width = stream or sys.stderr, width
        # Redraw in place on a terminal; in a log file print one line per stage.
        self.inline = hasattr(self.stream, "isatty") and self.stream.isatty()

    def __call__(self, fraction: float, message: str) -> None:
        fraction = min(max(fraction, 0.0), 1.0)
        filled = round(fraction * self.width)
        line = f"[{'#' * filled}{'.' * (self.width - filled)}] {100 * fraction:3.0f}% {message}"
        if self.inline:
            # \r back to the line's start, \033[K clears what a longer message left behind.
            self.stream.write("\r\033[K" + line + ("\n" if fraction >= 1.0 else ""))
        else:
            self.stream.write(line + "\n")
        self.stream.flush()


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m explorer.checkpoints",
        description="List or prepare (convert once into the cache) the embedded checkpoints.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="show the embedded checkpoints and whether they are prepared")
    prepare = commands.add_parser("prepare", help="convert embedded checkpoints into the cache")
    prepare.add_argument("names", nargs="*", metavar="NAME",
                         help=f"default: {DEFAULT_EMBEDDED}; known: {', '.join(EMBEDDED)}")
    prepare.add_argument("--all", action="store_true", help="prepare every embedded checkpoint")
    args = parser.parse_args(argv)

    if args.command == "list":
        print(f"cache: {cache_dir()}")
        for entry in EMBEDDED.values():
            folder = cache_dir() / entry.name
            state = f"prepared at {folder}" if is_complete(folder) else "not prepared"
            default = " (default)" if entry.default else ""
            print(f"{entry.name}{default}\n  {entry.title} — {entry.licence}; {entry.source_note}\n  {state}")
        return 0

    if args.all and args.names:
        parser.error("give NAMEs or --all, not both")
    names = list(EMBEDDED) if args.all else (args.names or [DEFAULT_EMBEDDED])
    bar = TextBar()
    try:
        for name in names:
            started = time.monotonic()
            folder = prepare_embedded(name, bar)
            print(f"{name}\t{folder}\t{time.monotonic() - started:.1f} s")
    except CheckpointError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
