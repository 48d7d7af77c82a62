"""Where the page shows an event's progress: on few, light components, never on the whole page.

Gradio's page keeps a loading status for every component that any event has shown progress on
(its progress targets: `show_progress_on`, else all of its outputs), and at every status change
of any event (a press, each message of a stream, an end) it writes every one of them again
(Gradio 6.31, Blocks' update_loading_stati_state). Each write searches the component tree for
the component from its root, through the page's reactive proxies, and for a layout block
(a column, a group) takes a snapshot of the value of every component inside it, charts
included. A page that has shown a lesson step (93 outputs) and a class bar (a column) pays
that again at every message of every run afterwards: in a profile of a student's page whose
class moved on while its run streamed, these writes took 1.7 s of the page's 3.8 s.

The app serves Gradio's page script with that writer patched to write only the statuses that
changed (explorer/web/gradio_frontend.py); the targets still matter, since each status change
of an event is written to each of its targets, and the patch applies only to the pinned Gradio.
So progress answers a person's action, on components that are cheap to write and say
something: none of the app's state, layout blocks or hidden helpers, and a chart only when
the event outputs nothing else a visitor sees (a chart's value is copied at every write).
The page's own bookkeeping shows none: an event that follows another (`.then`, `.success`),
a timer's tick, the page's load, or a change of a hidden box that the page's script writes
(the class's poll and move). Nor does an event that redraws more than MAX_TARGETS components
(a lesson step, a link, the language: quick page-wide updates where a spinner over dozens of
components tells nothing). An event that names its targets (`show_progress_on=`) keeps them.
"""
from __future__ import annotations

import gradio as gr
from gradio.blocks import BlockContext

from explorer.ui import HIDDEN

MAX_TARGETS = 12
# triggers that no person presses: the page's own bookkeeping
PAGE_TRIGGERS = frozenset({"then", "success", "failure", "tick", "load", "unload"})


def hidden(block: object) -> bool:
    """Built hidden: not drawn (visible=False), or drawn unseen (HIDDEN)."""
    classes = getattr(block, "elem_classes", None) or []
    return getattr(block, "visible", True) is False or HIDDEN in ([classes] if isinstance(classes, str) else classes)


def seen(block: object) -> bool:
    """A component a visitor sees: not a state, a layout block, a timer or one built hidden."""
    return not isinstance(block, (gr.State, BlockContext, gr.Timer)) and not hidden(block)


def by_the_page(demo: gr.Blocks, fn: object) -> bool:
    """Whether no person's action triggers the event `fn`: each of its triggers is a page's
    one (PAGE_TRIGGERS), or a change of a component built hidden."""
    for block_id, event in getattr(fn, "targets", ()):
        block = demo.blocks.get(block_id) if block_id is not None else None
        if event not in PAGE_TRIGGERS and not (event == "change" and block is not None and hidden(block)):
            return False
    return True


def targets(demo: gr.Blocks, fn: object, max_targets: int = MAX_TARGETS) -> list:
    """Where the event `fn` shows its progress: its seen outputs other than charts, or its
    charts when it has nothing else to show it on (a chart alone: its spinner is all the
    visitor sees of a run); none for the page's own events, an event that shows no progress
    or redraws more than `max_targets` components."""
    shown = [block for block in fn.outputs if seen(block)]
    if fn.show_progress == "hidden" or len(shown) > max_targets or by_the_page(demo, fn):
        return []
    return [block for block in shown if not isinstance(block, gr.Plot)] or shown


def focus_progress(demo: gr.Blocks, max_targets: int = MAX_TARGETS) -> None:
    """Give every backend event of `demo` that names no progress targets its `targets`."""
    for fn in demo.fns.values():
        if fn.fn is not None and fn.show_progress_on is None:
            fn.show_progress_on = targets(demo, fn, max_targets)
