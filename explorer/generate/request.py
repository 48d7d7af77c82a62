"""The checks of a generation request: every field the tab (or an API client) sends, checked
before the model runs, and the prompt turned into ids through explorer/prompts.py.

The limits are CPU-sized and checked server-side; the browser's sliders are not enough (an API
client can send anything)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from explorer import masks
from explorer.inputs import InputError, check_text, finite_number, whole_number
from explorer.locales import Term
from explorer.prompts import CHARS_PER_TOKEN_BOUND, encode, uses_chat_template

# The tab's prompt box starts with it; the precision section and the benches decode it too
DEFAULT_PROMPT = "Explain in two sentences why a language model caches keys and values."
LONG_PROMPT_CHARS = 2600  # ≈ 600 tokens of the shipped English text: past Gemma's 512 window
MAX_PROMPT_TOKENS = 1024        # prompt after the chat template
# The tab's cap on new tokens (one run stays within DEADLINE_S on a CPU); the engine itself
# accepts up to models.generate.MAX_NEW_TOKENS.
TAB_MAX_NEW_TOKENS = 256
MAX_WINDOW = 4096
MAX_SINKS = 64
MAX_TOP_K = 1000
MAX_TEMPERATURE = 2.0
MAX_SEED = 2**31 - 1
DEADLINE_S = 120.0              # wall-clock budget of one request, generation + checks


def check_flag(name: Term, value: Any) -> bool:
    """A checkbox's value: True or False (None: False); anything else is refused by name."""
    if value is None:
        return False
    if not isinstance(value, bool):
        raise InputError("generate.error.flag", name=name, value=repr(value)[:40])
    return value


@dataclass(frozen=True)
class Request:
    prompt: str
    max_new_tokens: int = 32
    temperature: float = 0.0
    top_k: int = 0
    top_p: float = 1.0
    seed: Optional[int] = None
    policy: str = "full"          # one of explorer.masks.POLICIES
    window: int = 64
    sinks: int = 4
    compare_no_cache: bool = True
    check_full_forward: bool = True

    def mask(self):
        """The visitor's cache policy as a MaskSpec (None: the model's own layers, unchanged)."""
        return masks.choose(self.policy, self.window, self.sinks, kinds=masks.POLICIES)

    def sampling(self):
        from models.generate import SamplingParams

        return SamplingParams(max_new_tokens=self.max_new_tokens, temperature=self.temperature,
                              top_k=self.top_k, top_p=self.top_p, seed=self.seed)


def parse_request(prompt: Any, max_new_tokens: Any = 32, temperature: Any = 0.0, top_k: Any = 0,
                  top_p: Any = 1.0, seed: Any = None, policy: Any = "full", window: Any = 64,
                  sinks: Any = 4, compare_no_cache: Any = True,
                  check_full_forward: Any = True) -> Request:
    """Check every field (types, finiteness, ranges, cross-field rules); InputError otherwise.
    The prompt's length in tokens is checked when it is encoded (encode_prompt)."""
    check_text(prompt, Term("inputs.name.prompt"), MAX_PROMPT_TOKENS * CHARS_PER_TOKEN_BOUND)
    n_new = whole_number(max_new_tokens, Term("generate.name.max_new"), 1, TAB_MAX_NEW_TOKENS)
    temp = finite_number(temperature, Term("generate.name.temperature"))
    if not 0.0 <= temp <= MAX_TEMPERATURE:
        raise InputError("generate.error.temperature", high=MAX_TEMPERATURE, value=temp)
    k = whole_number(top_k, Term("generate.name.top_k"), 0, MAX_TOP_K)
    p = finite_number(top_p, Term("generate.name.top_p"))
    if not 0.0 < p <= 1.0:
        raise InputError("generate.error.top_p", value=p)
    seed_value = None
    if seed is not None and not (isinstance(seed, str) and not seed.strip()):
        seed_value = whole_number(seed, Term("generate.name.seed"), 0, MAX_SEED)
    masks.choose(policy, window, sinks, kinds=masks.POLICIES, max_window=MAX_WINDOW,
                 max_sinks=MAX_SINKS)
    # the Request keeps window and sinks whatever the policy (a history row shows them): in range
    w = whole_number(window, masks.WINDOW_NAME, 1, MAX_WINDOW)
    s = whole_number(sinks, masks.SINKS_NAME, 0, MAX_SINKS)
    return Request(prompt=prompt, max_new_tokens=n_new, temperature=temp, top_k=k, top_p=p,
                   seed=seed_value, policy=policy, window=w, sinks=s,
                   compare_no_cache=check_flag(Term("generate.name.compare"), compare_no_cache),
                   check_full_forward=check_flag(Term("generate.name.check"), check_full_forward))


def encode_prompt(tokenizer, prompt: str) -> tuple[list[int], bool]:
    """Token ids the model is fed, and whether the chat template was used: instruct models
    (a tokenizer with a chat template) get one user turn, base models the plain text. More
    than MAX_PROMPT_TOKENS ids raise InputError."""
    ids = encode(tokenizer, prompt, MAX_PROMPT_TOKENS, chat=True, name=Term("inputs.name.prompt"))
    return ids, uses_chat_template(tokenizer)


def check_context(n_prompt: int, request: Request, context: int) -> None:
    """The prompt and the new tokens must fit the model's context."""
    if n_prompt + request.max_new_tokens > context:
        raise InputError("generate.error.context", n=n_prompt, new=request.max_new_tokens,
                         context=context)


def long_prompt() -> str:
    """The Generate tab's long prompt: about 600 tokens of the shipped English text, cut at a
    space (past Gemma's 512-token window)."""
    from explorer.texts import long_text

    long = long_text()[:LONG_PROMPT_CHARS]
    return long[:long.rfind(" ")] if " " in long else long
