"""What the MoE tab's handlers share before any experiment runs: the visitor's text checked and
tokenized, the layer and k checked against the loaded model, and the held-out texts. Every
check raises InputError (explorer/inputs.py) before real work."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from explorer.inputs import InputError, check_text, whole_number
from explorer.locales import Term
from explorer.moe import corpus
from explorer.prompts import encode, token_text
from explorer.moe.routing import moe_layers, moe_shape

MAX_TOKENS = 512       # the heatmap's columns; our models were trained on 256-token windows
MAX_TEXT_CHARS = 16 * MAX_TOKENS   # explorer.prompts.encode's bound before tokenizing


@dataclass(frozen=True)
class Tokens:
    ids: tuple[int, ...]
    texts: tuple[str, ...]   # each token as text (explorer.prompts.token_text)


def check(value: Any) -> str:
    """The visitor's text, checked before any model is loaded or tokenizer run."""
    return check_text(value, Term("moe.text_name"), max_chars=MAX_TEXT_CHARS)


def tokenize(tokenizer, value: Any, truncate: bool = False) -> Tokens:
    """The text's tokens, at most MAX_TOKENS: more raise InputError, or are cut to the first
    MAX_TOKENS when `truncate`."""
    ids = encode(tokenizer, check(value), MAX_TOKENS, truncate=truncate, name=Term("moe.text_name"))
    if len(ids) < 2:
        raise InputError("moe.err.too_few_tokens", n=len(ids))
    return Tokens(tuple(ids), tuple(token_text(tokenizer, i) for i in ids))


def check_moe(model, name: str) -> None:
    try:
        moe_shape(model)
    except ValueError:
        raise InputError("moe.err.not_moe", name=name) from None


def check_layer(model, value: Any) -> int:
    layers = moe_layers(model)
    layer = whole_number(value, Term("moe.layer"), 0, model.config.n_layers - 1)
    if layer not in layers:
        raise InputError("moe.err.not_moe_layer", layer=layer, layers=", ".join(map(str, layers)))
    return layer


def check_k(model, value: Any) -> int:
    n_experts, _, _ = moe_shape(model)
    return whole_number(value, Term("moe.k"), 1, n_experts)


def held_out_texts() -> Sequence[str]:
    """The held-out files of the training corpus (never trained on)."""
    try:
        return corpus.load().held_out
    except corpus.CorpusError:
        raise InputError("moe.err.no_corpus") from None
