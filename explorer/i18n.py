"""The app's two paths for visitor text, both reading explorer/locales/ (en.py, zh.py).

- Static text (labels, tab titles, button captions, fixed Markdown) uses `t("key")`, which
  returns a Gradio `I18nData` marker. Gradio's frontend translates it in the browser, following
  the browser's language and the language switch in the header; no server round trip.
- Text a handler computes (a model card, a status line, a figure) uses `t.text("key", lang,
  **fields)` (the same as `explorer.locales.text`) on the server; the handler takes the header's
  language component as an input, so it always knows which language the visitor has chosen.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Optional

import gradio as gr
from gradio.i18n import I18nData

from explorer import locales
from explorer.locales import DEFAULT_LANGUAGE, LANGUAGES, normalize_language  # noqa: F401 (re-exported)


def check_strings(strings: Mapping[str, Mapping[str, str]], owner: str = "?") -> None:
    """Raise ValueError unless every key has a non-empty text in every language (strings given
    as {key: {lang: text}}, the form extra sources take)."""
    for key, texts in strings.items():
        if not isinstance(key, str) or not key:
            raise ValueError(f"{owner}: string keys must be non-empty str, got {key!r}")
        missing = [lang for lang in LANGUAGES if not (texts.get(lang) or "").strip()]
        if missing:
            raise ValueError(f"{owner}: string {key!r} has no text for {', '.join(missing)}")
        extra = set(texts) - set(LANGUAGES)
        if extra:
            raise ValueError(f"{owner}: string {key!r} has unknown languages {sorted(extra)}")


class Translator:
    """All visitor strings of one app instance: the locale files, plus `extra` sources
    ({key: {lang: text}} per owner) for tab modules that live outside the app (tests).
    Immutable after construction."""

    def __init__(self, extra: Iterable[tuple[str, Mapping[str, Mapping[str, str]]]] = ()):
        merged: dict[str, dict[str, str]] = {
            key: {lang: locales.CATALOG[lang][key] for lang in LANGUAGES}
            for key in locales.CATALOG[DEFAULT_LANGUAGE]}
        owners = dict.fromkeys(merged, "explorer/locales")
        for owner, strings in extra:
            check_strings(strings, owner)
            for key, texts in strings.items():
                if key in merged:
                    raise ValueError(f"string {key!r} is declared by both {owners[key]} and {owner}")
                merged[key] = {lang: texts[lang] for lang in LANGUAGES}
                owners[key] = owner
        self._strings = merged

    def __contains__(self, key: str) -> bool:
        return key in self._strings

    def keys(self) -> list[str]:
        return sorted(self._strings)

    def _template(self, key: str, lang: Any) -> str:
        if key not in self._strings:
            raise KeyError(f"no visitor string {key!r}: add it to explorer/locales/en.py and zh.py")
        return self._strings[key][normalize_language(lang)]

    def __call__(self, key: str) -> I18nData:
        """Static text, translated in the browser. Unknown keys raise at build time."""
        self._template(key, DEFAULT_LANGUAGE)
        return I18nData(key)

    def text(self, key: str, lang: Optional[str], **fields) -> str:
        """Text computed on the server, in `lang` (any browser locale or switch value)."""
        if locales.has(key):
            return locales.text(key, lang, **fields)
        template = self._template(key, lang)
        return template.format(**fields) if fields else template

    def gradio_i18n(self) -> gr.I18n:
        """The gr.I18n to pass to launch(). "zh" also serves zh-CN, zh-TW, ... in the browser."""
        per_language = {lang: {k: v[lang] for k, v in self._strings.items()} for lang in LANGUAGES}
        return gr.I18n(**per_language)
