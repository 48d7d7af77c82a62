"""Which prompt prefix a joining run may copy from a run already in the loop (prefix reuse).

A run starts with a copy of the keys and values of the longest prefix of its prompt that another
run in the loop holds and may give it (BatchedDecoder.share_prefix), and feeds only the rest.
What it may copy is decided here, from its own prompt alone: any prefix within one session or
of a kept prompt (the app's own text, fed by the loop itself), across visitors only the public
prefix both have (the chat template's tokens every prompt begins with), so the count a run
reports and the work it saves never depend on another visitor's text.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Optional

from engine.prefix import holds_prefix

# A joining prompt whose first SHARE_MIN tokens or more equal what another run in the loop was
# fed (same options) starts with a copy of that run's keys and values for them and feeds only
# the rest (BatchedDecoder.share_prefix): a classroom pressing Start pays for the chat
# template's system turn once, not thirty times. Across visitors only the public prefix is
# copied (share_limit). Shorter common prefixes are not worth a copy and a wait.
SHARE_MIN = 16
# ... but a kept prompt (keep_prompts) is in already: a copy of even a few of its positions
# waits for nothing and saves their forward (Gemma's chat template around a short question is
# ~14 tokens)
KEPT_MIN = 4


def same_session(run: Any, other: Any) -> bool:
    return run.visitor.session is not None and run.visitor.session == other.visitor.session


def share_limit(run: Any, other: Any, limit: int) -> int:
    """The most leading tokens `run` may copy from `other`: any (up to `limit`) within one
    session or from a kept prompt (the app's own text, fed by the loop itself); across
    visitors only the public prefix both have (the same tokens in every prompt), so that the
    count a run reports, and the prefill work it saves, are the same whatever the other
    visitor wrote or was answered."""
    if same_session(run, other) or other.kept:
        return limit
    return min(limit, run.public, other.public)


def common_prefix(a: Sequence[int], b: Sequence[int], limit: int) -> int:
    """How many leading tokens a and b share, at most `limit`."""
    n = 0
    for x, y in zip(a, b):
        if n >= limit or x != y:
            break
        n += 1
    return n


def best_source(run: Any, others: Iterable[Any], limit: int) -> tuple[Optional[Any], int]:
    """(the run of `others` whose cache holds the longest prefix `run` may copy, its length):
    at least SHARE_MIN tokens (KEPT_MIN from a kept prompt), same options; (None, 0) if none."""
    best, best_n = None, 0
    for other in others:
        if other is run or other.batch is None or not other.batch.pos or other.options != run.options:
            continue
        n = common_prefix(other.sequence(), run.prompt, share_limit(run, other, limit))
        enough = n >= (KEPT_MIN if other.kept else SHARE_MIN) and n > best_n
        if enough and holds_prefix(other.batch.cache, n):
            best, best_n = other, n
    return best, best_n


def worth_waiting(run: Any, feeding: Iterable[Any], limit: int, best_n: int) -> bool:
    """Whether a run being fed now would give `run` a longer prefix (at least SHARE_MIN) once
    its keys are in than the best copy available now."""
    ahead = max((common_prefix(other.prompt, run.prompt, share_limit(run, other, limit))
                 for other in feeding if other.options == run.options), default=0)
    return ahead >= SHARE_MIN and ahead > max(best_n, 0)
