"""Server-side checks of visitors' inputs, shared by every tab. The browser's limits are not
enough (an API client can send megabytes of text, NaN, 10**400, fractions, lists); each check
runs before any real work and raises InputError, whose text comes from the locale files in the
visitor's language (explorer/ui turns it into gr.Error: `visitor_errors`)."""
from __future__ import annotations

import math
from typing import Any, Optional

from explorer import locales
from explorer.locales import Term

INT64_MAX = 2**63 - 1
MAX_TEXT_CHARS = 200_000   # no visitor text may be longer, whatever a tab's own cap
_SHOWN_VALUE_CHARS = 40    # an error repeats at most this much of what was sent
_SHOWN_OPTIONS_CHARS = 200  # and lists at most this much of a component's choices


class InputError(ValueError):
    """A visitor's input that cannot be used. `key` names its text in explorer/locales (fields
    formatted in; a Term field is translated too); str(error) is the English text."""

    def __init__(self, key: str, **fields: Any):
        self.key, self.fields = key, fields
        super().__init__(self.message("en"))

    def message(self, lang: Optional[str]) -> str:
        return locales.text(self.key, lang, **self.fields)


def shown(value: Any) -> str:
    """A short, printable rendering of a rejected value for an error message."""
    text = repr(value)
    return text if len(text) <= _SHOWN_VALUE_CHARS else text[:_SHOWN_VALUE_CHARS - 1] + "…"


def finite_number(value: Any, name: str | Term) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise InputError("inputs.not_number", name=name, value=shown(value))
    if isinstance(value, str) and len(value) > 64:
        raise InputError("inputs.not_number", name=name, value=shown(value))
    try:
        number = float(value)
    except (ValueError, OverflowError):  # float(10**400) overflows
        raise InputError("inputs.not_number", name=name, value=shown(value)) from None
    if not math.isfinite(number):
        raise InputError("inputs.not_finite", name=name, value=shown(value))
    return number


def whole_number(value: Any, name: str | Term, low: int, high: Optional[int] = None) -> int:
    """An integer in [low, high] (high=None: up to int64's largest); NaN, fractions and
    out-of-range values raise in plain words."""
    try:
        number = finite_number(value, name)
    except InputError:
        raise InputError("inputs.not_whole", name=name, value=shown(value)) from None
    if number != int(number):
        raise InputError("inputs.not_whole", name=name, value=shown(value))
    number = int(number)
    top = INT64_MAX if high is None else high
    if number < low or number > top:
        if high is None and number < low:
            raise InputError("inputs.at_least", name=name, low=low, value=shown(number))
        raise InputError("inputs.between", name=name, low=low, high=top, value=shown(number))
    return number


def check_text(value: Any, name: str | Term, max_chars: int = MAX_TEXT_CHARS) -> str:
    """A non-blank string of at most `max_chars` characters, checked before any tokenizer sees
    it (tokenizing megabytes costs seconds and gigabytes of ids)."""
    if not isinstance(value, str):
        raise InputError("inputs.not_text", name=name)
    if len(value) > min(max_chars, MAX_TEXT_CHARS):
        raise InputError("inputs.too_long", name=name, n=len(value), limit=min(max_chars, MAX_TEXT_CHARS))
    if not value.strip():
        raise InputError("inputs.empty_text", name=name)
    return value


def choice(value: Any, name: str | Term, options: tuple) -> Any:
    """One of `options` exactly (a dropdown's value)."""
    if not isinstance(value, (str, int, float)) or isinstance(value, bool) or value not in options:
        raise InputError("inputs.not_option", name=name, value=shown(value),
                         options=", ".join(str(option) for option in options))
    return value


def check_choice_payload(component: Any, payload: Any) -> None:
    """InputError("inputs.not_option") when `payload` (or an item of a list payload, where the
    component holds several) is not one of `component.choices`' values; a custom-value
    component and None pass (the choice patch of explorer/web/gradio_patches.py calls it)."""
    if payload is None or getattr(component, "allow_custom_value", False):
        return
    values = [value for _, value in getattr(component, "choices", None) or []]
    # a list is a list of choices only where the component holds several (a multiselect
    # dropdown, a checkbox group); elsewhere it is one value, and no choice
    several = getattr(component, "multiselect", None) or isinstance(getattr(component, "value", None), list)
    for item in payload if isinstance(payload, list) and several else [payload]:
        try:
            known = item in values
        except Exception:   # a value whose comparison fails is no choice
            known = False
        if not known:
            name = _component_name(component, "inputs.name.choice")
            options = ", ".join(str(value) for value in values)
            if len(options) > _SHOWN_OPTIONS_CHARS:
                options = options[:_SHOWN_OPTIONS_CHARS - 1] + "…"
            raise InputError("inputs.not_option", name=name, value=shown(item), options=options)


def not_a_number(component: Any, payload: Any) -> InputError:
    """InputError("inputs.not_number") for a payload a number component cannot take (the
    Number patch of explorer/web/gradio_patches.py raises it)."""
    return InputError("inputs.not_number", name=_component_name(component, "inputs.name.number"),
                      value=shown(payload))


def _component_name(component: Any, fallback_key: str) -> Any:
    """A component's label as an error's {name}: its locale key as a Term where it has one."""
    label = getattr(component, "label", None)
    key = getattr(label, "key", None)
    if isinstance(key, str) and locales.has(key):
        return Term(key)
    return label if isinstance(label, str) and label else Term(fallback_key)
