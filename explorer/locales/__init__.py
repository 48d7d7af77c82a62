"""Every text a visitor reads, one file per language: en.py and zh.py, each one flat dict
{key: text}. Keys are prefixed with the topic that shows them ("rope.freq.run"); texts are
`str.format` templates ("{rate:.1f} tokens/s"; Plotly's own placeholders are written doubled,
"%{{x}}", since every text goes through format).

At import, both files must have the same keys, every text must be non-empty, and a text may use
only {fields} its English text uses (Chinese can leave one out, e.g. a plural ending), so a
missing translation or a misspelt field fails at start-up, never in front of a visitor.

    from explorer.locales import text
    text("rope.freq.line", lang, base=..., pairs=...)   # the visitor's language, formatted
"""
from __future__ import annotations

import string
from collections.abc import Mapping
from typing import Any, Optional

from explorer.locales import en, zh

# Language codes the app offers, with the name each language has in itself (the switch shows
# these). "zh" is Simplified Chinese: the browser's zh-CN / zh-SG / zh resolve to it.
LANGUAGES: dict[str, str] = {"en": "English", "zh": "中文"}
DEFAULT_LANGUAGE = "en"

CATALOG: dict[str, Mapping[str, str]] = {"en": en.STRINGS, "zh": zh.STRINGS}


def normalize_language(lang: Any) -> str:
    """Map a browser locale ("zh-CN", "en-GB", ...) or a switch value to one of LANGUAGES."""
    if not isinstance(lang, str) or not lang.strip():
        return DEFAULT_LANGUAGE
    base = lang.strip().replace("_", "-").split("-")[0].lower()
    return base if base in LANGUAGES else DEFAULT_LANGUAGE


def fields_of(template: str) -> Optional[set[str]]:
    """The {field} names a template formats ("{rate:.1f} tokens/s" -> {"rate"}); None for a
    static text that is not a template (Markdown with LaTeX braces, shown as written)."""
    try:
        return {name.split(".")[0].split("[")[0]
                for _, name, _, _ in string.Formatter().parse(template) if name}
    except ValueError:
        return None


def check_catalog(catalog: Mapping[str, Mapping[str, str]]) -> None:
    """Raise ValueError unless every language has the same keys, every text is non-empty and
    formats only fields its English text formats."""
    reference = catalog[DEFAULT_LANGUAGE]
    for lang, strings in catalog.items():
        missing, extra = set(reference) - set(strings), set(strings) - set(reference)
        if missing or extra:
            raise ValueError(f"locale {lang}: missing {sorted(missing)[:5]}, extra {sorted(extra)[:5]}")
        for key, template in strings.items():
            if not isinstance(template, str) or not template.strip():
                raise ValueError(f"locale {lang}: {key!r} has no text")
            mine, theirs = fields_of(template), fields_of(reference[key])
            if (mine is None) != (theirs is None) or (mine is not None and not mine <= theirs):
                raise ValueError(f"locale {lang}: {key!r} formats {fields_of(template)}, "
                                 f"{DEFAULT_LANGUAGE} formats {fields_of(reference[key])}")


check_catalog(CATALOG)


def has(key: str) -> bool:
    return key in CATALOG[DEFAULT_LANGUAGE]


def template(key: str, lang: Optional[str] = DEFAULT_LANGUAGE) -> str:
    """The unformatted text of `key` in `lang` (for a hover template filled per cell)."""
    try:
        return CATALOG[normalize_language(lang)][key]
    except KeyError:
        raise KeyError(f"no visitor string {key!r}: add it to explorer/locales/en.py and zh.py") from None


class Term(str):
    """A field value that is itself a locale key, translated when the text is formatted:
    text("inputs.whole_number", lang, name=Term("rope.qk.head"), ...)."""


def text(key: str, lang: Optional[str] = DEFAULT_LANGUAGE, **fields: Any) -> str:
    """`key` in the visitor's language, formatted with `fields`. A template is always formatted,
    so doubled braces come out single whether or not there are fields; a static text (not a
    template, see fields_of) comes back as written."""
    raw = template(key, lang)
    if fields_of(raw) is None:
        if fields:
            raise ValueError(f"visitor string {key!r} is static text and takes no fields")
        return raw
    fields = {name: text(value, lang) if isinstance(value, Term) else value
              for name, value in fields.items()}
    return raw.format(**fields)
