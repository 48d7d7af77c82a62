"""Patch 6 of explorer/web/gradio_patches.py (applied by its `apply`, behind its version check):
an output an event skips costs nothing.

Gradio 6.31 answers every `gr.skip()` (an update with no key) of an event's outputs as any
update: it builds a fresh component from the output's constructor arguments, stores it in the
visitor's session and sends `{"__type__": "update"}`, which the page applies as no change. For
a following page's class move (`apply_move`: 93 outputs, 71 of them skipped) that is ~20 ms of
Python a page, measured, ~70% of it the skips; a class of 30 moved at once spends it 30 times
while holding the GIL its shared decode needs. The component built is the one already stored
(same arguments), so sending the empty update without building it changes nothing a session
or a page can see.
"""
from __future__ import annotations

import copy
import functools
import logging
from typing import Any

log = logging.getLogger(__name__)

SKIP = {"__type__": "update"}


def fast_skips(blocks_class: type) -> bool:
    """Wrap `blocks_class.postprocess_data` so that the outputs an event skips are answered
    without Gradio's update machinery; True if installed (or already). Leaves Gradio as it is
    (False, one log line) if the method is not there."""
    original = getattr(blocks_class, "postprocess_data", None)
    if original is None:
        log.warning("Gradio's Blocks has no postprocess_data: skipped outputs left to Gradio")
        return False
    if getattr(original, "_explorer_fast_skips", False):
        return True

    @functools.wraps(original)
    async def postprocess_data(self, block_fn, predictions, state):
        outputs = getattr(block_fn, "outputs", None)
        # only a plain list of one value per output (what the app's handlers return), of which
        # some are skips of a component that is not a state; any other shape goes to Gradio
        if not isinstance(predictions, (list, tuple)) or not isinstance(outputs, list) \
                or len(outputs) < 2 or len(predictions) != len(outputs) \
                or getattr(block_fn, "batch", False) or getattr(block_fn, "is_validator_function", False):
            return await original(self, block_fn, predictions, state)
        skipped = {i for i, (block, value) in enumerate(zip(outputs, predictions))
                   if isinstance(value, dict) and value == SKIP and not getattr(block, "stateful", False)}
        if not skipped:
            return await original(self, block_fn, predictions, state)
        kept = [i for i in range(len(outputs)) if i not in skipped]
        answered: list = []
        if kept:   # the rest as Gradio answers them: an event of those outputs alone
            rest = copy.copy(block_fn)
            rest.outputs = [outputs[i] for i in kept]
            values = [predictions[i] for i in kept]
            answered = await original(self, rest, values[0] if len(kept) == 1 else values, state)
        by_index = dict(zip(kept, answered))
        return [dict(SKIP) if i in skipped else by_index[i] for i in range(len(outputs))]

    postprocess_data._explorer_fast_skips = True
    blocks_class.postprocess_data = postprocess_data
    return True
