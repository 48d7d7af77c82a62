"""The app's two paths for visitor text, both reading explorer/locales/ (en/, zh/: one module
per topic).

- Static text (labels, tab titles, button captions, fixed Markdown) uses `t("key")`, which
  returns a Gradio `I18nData` marker. Gradio's frontend translates it in the browser, following
  the browser's language and the language switch in the header; no server round trip.
- Text a handler computes (a model card, a status line, a figure) uses `t.text("key", lang,
  **fields)` (`explorer.locales.Catalog.text`, the same function as `explorer.locales.text`) on
  the server; the handler takes the header's language component as an input, so it always knows
  which language the visitor has chosen.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping

import gradio as gr
from gradio.i18n import I18nData

from explorer import locales
from explorer.locales import DEFAULT_LANGUAGE, LANGUAGES, normalize_language  # noqa: F401 (re-exported)


class Translator:
    """All visitor strings of one app instance: the locale files, plus `extra` sources
    ({key: {lang: text}} per owner) for tab modules that live outside the app (tests).
    Immutable after construction."""

    def __init__(self, extra: Iterable[tuple[str, Mapping[str, Mapping[str, str]]]] = ()):
        catalog = locales.CATALOG
        for owner, strings in extra:
            catalog = catalog.extended(owner, strings)
        self._catalog = catalog
        # Text computed on the server, in `lang` (any browser locale or switch value).
        self.text = catalog.text

    def __contains__(self, key: str) -> bool:
        return self._catalog.has(key)

    def keys(self) -> list[str]:
        return self._catalog.keys()

    def __call__(self, key: str) -> I18nData:
        """Static text, translated in the browser. Unknown keys raise at build time."""
        self._catalog.template(key, DEFAULT_LANGUAGE)
        return I18nData(key)

    def gradio_i18n(self) -> gr.I18n:
        """The gr.I18n to pass to launch(). "zh" also serves zh-CN, zh-TW, ... in the browser."""
        return gr.I18n(**{lang: self._catalog.strings(lang) for lang in LANGUAGES})
