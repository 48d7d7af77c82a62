"""Gradio's per-session bookkeeping, made lazy where the app never reads it; its queue's idle
polling, made slower (`poll_queue_less`, at the end).

Gradio 6 keeps, for every session, a copy of every component's config (`SessionState.
config_values`) so that a "deep link" can rebuild the page as that visitor saw it. It builds
all of them when the session's first event arrives (one `get_config()` per block: 463 blocks
here, ~30 ms of Python on an idle core), and again for a component each time an event writes a
gr.State or answers `gr.skip()`. The app has no deep-link button, so nobody reads them, but the
work holds the GIL that the shared decode loop needs between its ops: a classroom of 30
opening sessions together took seconds of every visitor's first token (py-spy, docs/
BENCHMARKS.md). `LeanSessionState` builds a component's config only when `components` (the
deep-link route) asks for it, with the last value written, so what that route answers is
unchanged.

Installed once by `install()` (app.build_app); the pinned Gradio version's SessionState is
checked for the attributes this relies on, and anything unexpected leaves Gradio as it is.
"""
from __future__ import annotations

import datetime
import logging
import os
from copy import copy
from typing import Any, Iterator

log = logging.getLogger(__name__)

_NEEDED = ("__setitem__", "_update_config", "_update_value_in_config", "components",
           "state_components", "__getitem__", "__contains__")


def _lean_class(base: type) -> type:
    class LeanSessionState(base):  # type: ignore[misc, valid-type]
        """SessionState whose per-component configs are built on demand (see the module)."""

        def __init__(self, blocks):
            self.blocks_config = copy(blocks.default_config)
            # the ids Gradio's own __init__ builds a config for, in its order
            self._config_ids = [k for k in self.blocks_config.blocks if k in blocks.blocks]
            self._built: dict[int, dict] = {}     # id -> config built since its block last changed
            self._values: dict[int, Any] = {}     # id -> last value written to its config
            # the rest as Gradio's __init__ sets it
            self.state_data: dict[int, Any] = {}
            self._state_ttl: dict = {}
            self.is_closed = False
            self.STATE_TTL_WHEN_CLOSED = 1 if os.getenv("GRADIO_IS_E2E_TEST", None) else 3600

        @property
        def config_values(self) -> dict:
            """Every component's config as Gradio's eager version holds it (built now)."""
            return {k: self._config(k) for k in self._config_ids}

        def _config(self, key: int) -> dict:
            if key not in self._built:
                self._built[key] = self.blocks_config.config_for_block(
                    key, [], self.blocks_config.blocks[key])
            config = self._built[key]
            if key in self._values and "props" in config:
                config["props"]["value"] = self._values[key]
            return config

        def __setitem__(self, key: int, value: Any):
            from gradio.components import State

            block = self.blocks_config.blocks.get(key)
            if isinstance(block, State):
                self._state_ttl[key] = (block.time_to_live, datetime.datetime.now())
                self.state_data[key] = value
            else:
                self.blocks_config.blocks[key] = value
            if block:
                self._built.pop(key, None)
                if key not in self._config_ids:
                    self._config_ids.append(key)

        def _update_config(self, key: int):
            if self[key] is not None:
                self._built.pop(key, None)

        def _update_value_in_config(self, key: int, value: Any):
            if key not in self._config_ids:
                self._config_ids.append(key)
            self._values[key] = value

        @property
        def components(self) -> Iterator[dict]:
            for key in list(self._config_ids):
                config = self._config(key)
                if config:
                    yield config

    return LeanSessionState


def install() -> bool:
    """Make Gradio's StateHolder create LeanSessionState sessions; True if installed (or
    already). Leaves Gradio untouched if its SessionState lacks what the subclass overrides."""
    from gradio import state_holder

    current = state_holder.SessionState
    if getattr(current, "_explorer_lean", False):
        return True
    if not all(hasattr(current, name) for name in _NEEDED):
        log.warning("gradio.state_holder.SessionState has changed shape; sessions left eager")
        return False
    lean = _lean_class(current)
    lean._explorer_lean = True
    state_holder.SessionState = lean
    return True


# Gradio's queue looks for a waiting event every `sleep_when_free` seconds: 1 ms on Linux, so an
# idle app wakes its event loop 1,000 times a second (5-8% of a core here, measured with top),
# and while visitors generate each wake takes the GIL the decode loop needs between its ops and
# a core from the fused step, which uses both. Every 10 ms, an event waits at most 10 ms longer
# to start, against a first token of 0.2 s or more.
QUEUE_POLL_S = 0.01


def poll_queue_less(demo: Any, seconds: float = QUEUE_POLL_S) -> bool:
    """After demo.queue(): the queue polls for waiting events every `seconds` at most; True if
    set. Leaves Gradio as it is (False) if its queue lacks the attribute this relies on."""
    queue = getattr(demo, "_queue", None)
    current = getattr(queue, "sleep_when_free", None)
    if isinstance(current, bool) or not isinstance(current, (int, float)):
        log.warning("Gradio's queue has changed shape; its idle polling left as it is")
        return False
    queue.sleep_when_free = max(float(current), seconds)
    return True
