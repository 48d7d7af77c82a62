"""The one way a visitor's text becomes token ids, and token ids become labels.

Text is checked (type, blank, length in characters) before the tokenizer sees it, and the ids
are capped after: every tab and the CLI go through `encode`."""
from __future__ import annotations

import weakref
from typing import Any, Optional, Sequence

from explorer.inputs import InputError, check_text
from explorer.locales import Term

# A token is at least one character in practice; this many characters per allowed token leaves
# room for any real text while keeping the tokenizer's work bounded before the token cap applies.
CHARS_PER_TOKEN_BOUND = 16


def uses_chat_template(tokenizer) -> bool:
    """Instruct models ship a chat template; base models do not."""
    return bool(getattr(tokenizer, "chat_template", None))


def encode(tokenizer, text: Any, max_tokens: int, *, chat: bool = False, truncate: bool = False,
           name: str | Term = Term("inputs.name.text")) -> list[int]:
    """Token ids of `text`: one user turn of the chat template when `chat` and the tokenizer has
    one, else the plain text (with the tokenizer's BOS, if it adds one). More than `max_tokens`
    ids raise InputError, or are cut to the first `max_tokens` when `truncate`."""
    check_text(text, name, max_chars=max_tokens * CHARS_PER_TOKEN_BOUND)
    if chat and uses_chat_template(tokenizer):
        encoded = tokenizer.apply_chat_template([{"role": "user", "content": text}],
                                                add_generation_prompt=True, tokenize=True)
        if not isinstance(encoded, list):  # transformers 5 returns a BatchEncoding
            encoded = encoded["input_ids"]
    else:
        encoded = tokenizer(text)["input_ids"]
    ids = [int(i) for i in encoded]
    if not ids:
        raise InputError("inputs.no_tokens", name=name)
    if len(ids) > max_tokens:
        if not truncate:
            raise InputError("inputs.too_many_tokens", name=name, n=len(ids), limit=max_tokens)
        ids = ids[:max_tokens]
    return ids


# Unlike first characters for template_prefix: letters, digits, punctuation, whitespace, CJK and
# what looks like a special token, any of which a tokenizer might merge with the template's end.
_TEMPLATE_PROBES = ("a", "Z 1", "7", "\n\nx", "  x", "\tx", "!x", "\"x", "<|x", "。你好", "é")
_TEMPLATE_PREFIXES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def template_prefix(tokenizer) -> tuple[int, ...]:
    """The ids every prompt `encode(tokenizer, text, chat=True)` makes begins with, whatever
    its text: the chat template's tokens before the visitor's own (its system turn and the user
    turn's header), or a base model's BOS. Taken as the common prefix of the encodings of unlike
    texts, so that a text whose first characters merge with the template's last token does not
    count that token as the template's."""
    try:
        return _TEMPLATE_PREFIXES[tokenizer]
    except (KeyError, TypeError):
        pass
    encodings = [encode(tokenizer, probe, 64, chat=True) for probe in _TEMPLATE_PROBES]
    n = 0
    while all(len(ids) > n and ids[n] == encodings[0][n] for ids in encodings):
        n += 1
    prefix = tuple(encodings[0][:n])
    try:
        _TEMPLATE_PREFIXES[tokenizer] = prefix
    except TypeError:   # not weakly referable: computed again next time
        pass
    return prefix


def public_prefix(tokenizer, ids: Sequence[int]) -> int:
    """How many leading `ids` (a prompt encoded with chat=True) are template_prefix's: what
    every visitor's prompt has in common by construction, the only part of it a run may share
    with another visitor's. 0 when the prompt does not begin with all of them."""
    prefix = template_prefix(tokenizer)
    return len(prefix) if tuple(int(i) for i in ids[:len(prefix)]) == prefix else 0


def piece_text(text: str) -> str:
    """A decoded token with newlines and tabs made visible (∅ for an empty decoding)."""
    return text.replace("\n", "↵").replace("\t", "⇥") or "∅"


def token_text(tokenizer, token_id: int) -> str:
    """A token as text with newlines and tabs made visible (∅ for an empty decoding)."""
    return piece_text(tokenizer.decode([int(token_id)]))


def visible_token(tokenizer, token_id: int) -> str:
    """A token with its whitespace made visible and its id, for tables (HTML collapses runs of
    spaces, so "  " and " " would look the same)."""
    text = tokenizer.decode([int(token_id)])
    shown = text.replace(" ", "␣").replace("\n", "↵").replace("\t", "⇥") or "∅"
    return f"{shown} (id {int(token_id)})"


def token_labels(tokenizer, ids: Sequence[int], first_position: int = 0) -> list[str]:
    """Axis labels "position: token", unique so a categorical axis keeps every token."""
    return [f"{first_position + i}: {token_text(tokenizer, t)}" for i, t in enumerate(ids)]
