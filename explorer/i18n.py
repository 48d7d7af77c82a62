"""UI text in English and Simplified Chinese.

Every module with visible text declares it once, as a constant dict next to the code that uses it:

    STRINGS = {
        "generate.prompt": {"en": "Prompt", "zh": "提示词"},
        "generate.tokens_per_s": {"en": "{rate:.1f} tokens/s", "zh": "每秒 {rate:.1f} 个词元"},
    }

`explorer.ui.build_translator()` merges the dicts of the shell and of every tab into one
`Translator` (duplicate or incomplete keys raise at start-up, not in front of a visitor).

Two kinds of text, two paths:
- Static text (labels, tab titles, button captions, fixed Markdown) uses `t("key")`, which
  returns a Gradio `I18nData` marker. Gradio's frontend translates it in the browser, following
  the browser's language and the language switch in the header; no server round trip.
- Text a handler computes (a model card, a status line) uses `t.text("key", lang, **fields)`
  on the server; the handler takes the header's language component as an input, so it always
  knows which language the visitor has chosen.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping

import gradio as gr
from gradio.i18n import I18nData

# Language codes the app offers, with the name each language has in itself (the switch shows
# these). "zh" is Simplified Chinese: the browser's zh-CN / zh-SG / zh resolve to it.
LANGUAGES: dict[str, str] = {"en": "English", "zh": "中文"}
DEFAULT_LANGUAGE = "en"


def normalize_language(lang: str | None) -> str:
    """Map a browser locale ("zh-CN", "en-GB", ...) or a switch value to one of LANGUAGES."""
    if not isinstance(lang, str) or not lang.strip():
        return DEFAULT_LANGUAGE
    base = lang.strip().replace("_", "-").split("-")[0].lower()
    return base if base in LANGUAGES else DEFAULT_LANGUAGE


def check_strings(strings: Mapping[str, Mapping[str, str]], owner: str = "?") -> None:
    """Raise ValueError unless every key has a non-empty text in every language."""
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
    """All UI strings of one app instance. Immutable after construction."""

    def __init__(self, sources: Iterable[tuple[str, Mapping[str, Mapping[str, str]]]]):
        merged: dict[str, dict[str, str]] = {}
        owners: dict[str, str] = {}
        for owner, strings in sources:
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

    def __call__(self, key: str) -> I18nData:
        """Static text, translated in the browser. Unknown keys raise at build time."""
        if key not in self._strings:
            raise KeyError(f"no UI string {key!r}; declare it in the module's STRINGS")
        return I18nData(key)

    def text(self, key: str, lang: str | None, **fields) -> str:
        """Text computed on the server, in `lang` (any browser locale or switch value)."""
        if key not in self._strings:
            raise KeyError(f"no UI string {key!r}; declare it in the module's STRINGS")
        template = self._strings[key][normalize_language(lang)]
        return template.format(**fields) if fields else template

    def gradio_i18n(self) -> gr.I18n:
        """The gr.I18n to pass to launch(). "zh" also serves zh-CN, zh-TW, ... in the browser."""
        per_language = {lang: {k: v[lang] for k, v in self._strings.items()} for lang in LANGUAGES}
        return gr.I18n(**per_language)
