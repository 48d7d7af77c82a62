"""Text inside figures (titles, axes, legends, hover), in the app's languages.

Figure modules declare their strings as {key: {"en": ..., "zh": ...}} next to the code that
draws them, and the tab that shows them merges the dict into its STRINGS, so a missing
language fails at start-up like any other UI string (explorer.i18n.check_strings). Plotly
text is drawn on the server, so the handler passes the visitor's language in."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Optional


def figure_template(strings: Mapping[str, Mapping[str, str]], key: str, lang: Optional[str] = "en") -> str:
    """strings[key] in `lang` ("zh..." -> Chinese, anything else -> English), not formatted: for
    a hover text formatted once per cell of a large heatmap, looked up once."""
    return strings[key]["zh" if (lang or "").startswith("zh") else "en"]


def figure_text(strings: Mapping[str, Mapping[str, str]], key: str, lang: Optional[str] = "en",
                **fields) -> str:
    """strings[key] in `lang`, formatted. Always formatted, even without fields, so that a
    Plotly placeholder is written %{{x}} in every string alike (a text without fields used to
    come back with its braces still doubled)."""
    return figure_template(strings, key, lang).format(**fields)
