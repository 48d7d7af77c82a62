"""The app's own Generate prompts, kept computed in the shared decode loop.

A class presses Start on the same text: the Generate tab's example prompt, a lesson step's, the
long prompt button's. These texts are the app's, the same for every visitor, so the loop feeds
each once and keeps its keys and values (explorer.serving's Scheduler.keep_prompts), and a run
whose prompt begins like one copies those positions instead of computing them again (prefix
reuse): thirty students on a lesson's prompt feed one token each instead of thirty prompts.

Why this tells no visitor anything of another's text (issue 27, finding 4): a kept prompt is fed
by the loop itself, from these constants, whoever runs what, and is never taken from a visitor's
run; what a run copies from it, and so the count its evidence line reports and the work it saves,
depends on its own prompt alone.
"""
from __future__ import annotations

import weakref
from collections.abc import Sequence

from explorer.generate.request import DEFAULT_PROMPT, encode_prompt, long_prompt
from explorer.inputs import InputError

_ASKED: "weakref.WeakSet" = weakref.WeakSet()   # the schedulers already asked (once each)


def app_prompts(lesson_prompts: Sequence[str] = ()) -> tuple[str, ...]:
    """The Generate prompts the app itself offers: the tab's example, the long prompt, and the
    lessons' (explorer.lessons.generate_prompts, handed in by the tab), each once."""
    return tuple(dict.fromkeys([DEFAULT_PROMPT, long_prompt(), *lesson_prompts]))


def keep_app_prompts(scheduler, tokenizer, lesson_prompts: Sequence[str] = ()) -> None:
    """Ask `scheduler` (a model's shared loop) to keep the app prompts' keys and values, encoded
    as a visitor's prompt is (explorer.generate.request.encode_prompt: one user turn of the chat
    template, or a base model's plain text); once per scheduler."""
    if scheduler in _ASKED:
        return
    ids = []
    for text in app_prompts(lesson_prompts):
        try:
            ids.append(encode_prompt(tokenizer, text)[0])
        except InputError:   # longer than a visitor's prompt may be: no visitor copies it
            continue
    scheduler.keep_prompts(ids)
    _ASKED.add(scheduler)
