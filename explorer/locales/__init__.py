"""Every text a visitor reads, in each language: explorer/locales/en/ and zh/, one module per
topic. A module is named for the prefix of its keys ("rope.freq.run" lives in en/rope.py and
zh/rope.py) and holds one flat dict STRINGS {key: text}. Texts are `str.format` templates
("{rate:.1f} tokens/s"; Plotly's own placeholders are written doubled, "%{{x}}", since every
text goes through format), with one addition for plurals: "{n:head/heads}" writes "head" when
n is 1 and "heads" otherwise, so English picks its ending from the count; Chinese has no plural
and writes "{n} 个头".

At import, both languages must have the same keys, every text must be non-empty, and a text may
use only {fields} its English text uses (Chinese can leave one out), so a missing translation or
a misspelt field fails at start-up, never in front of a visitor. Texts of a tab module that lives
outside the app (tests) join through `Catalog.extended`, checked the same way.

    from explorer.locales import text
    text("rope.freq.line", lang, base=..., pairs=...)   # the visitor's language, formatted
"""
from __future__ import annotations

import copy
import importlib
import pkgutil
import string
from collections.abc import Mapping
from typing import Any, Optional

# Language codes the app offers, with the name each language has in itself (the switch shows
# these). "zh" is Simplified Chinese: the browser's zh-CN / zh-SG / zh resolve to it.
LANGUAGES: dict[str, str] = {"en": "English", "zh": "中文"}
DEFAULT_LANGUAGE = "en"

# One module per topic in each language's package, named for its keys' prefix.
TOPICS = ("shell", "inputs", "generate", "attention", "masks", "rope", "claims", "about", "flash",
          "moe", "arch", "link", "lesson", "export", "a11y", "serving", "classroom", "precision",
          "next", "game")


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


def _plural_specs(template: str) -> list[str]:
    """The plural format specs of a template ("{n:head/heads}" -> ["head/heads"])."""
    return [spec for _, name, spec, _ in string.Formatter().parse(template)
            if name and spec and "/" in spec]


class _Formatter(string.Formatter):
    """`str.format`, plus plural forms: a field formatted as {n:one/other} writes `one` when the
    count is 1 and `other` for every other count (English: "1 head", "0 heads", "2 heads")."""

    def format_field(self, value: Any, format_spec: str) -> str:
        if "/" in format_spec:
            one, other = format_spec.split("/")
            return one if value == 1 else other
        return format(value, format_spec)


_FORMATTER = _Formatter()


def check_catalog(catalog: Mapping[str, Mapping[str, str]], owner: str = "explorer/locales") -> None:
    """Raise ValueError unless the catalog ({lang: {key: text}}) has exactly the LANGUAGES, every
    language the same keys (non-empty str), every text is non-empty, formats only fields its
    English text formats, and writes each plural as two forms ("{n:head/heads}")."""
    unknown = set(catalog) - set(LANGUAGES)
    if unknown:
        raise ValueError(f"{owner}: unknown languages {sorted(unknown)}")
    reference = catalog.get(DEFAULT_LANGUAGE, {})
    for lang in LANGUAGES:
        strings = catalog.get(lang, {})
        missing, extra = set(reference) - set(strings), set(strings) - set(reference)
        if missing or extra:
            raise ValueError(f"{owner}: locale {lang} is missing {sorted(missing)[:5]}, "
                             f"has extra {sorted(extra)[:5]}")
        for key, template in strings.items():
            if not isinstance(key, str) or not key:
                raise ValueError(f"{owner}: string keys must be non-empty str, got {key!r}")
            if not isinstance(template, str) or not template.strip():
                raise ValueError(f"{owner}: string {key!r} has no text for {lang}")
            mine, theirs = fields_of(template), fields_of(reference[key])
            if (mine is None) != (theirs is None) or (mine is not None and not mine <= theirs):
                raise ValueError(f"{owner}: locale {lang}: {key!r} formats {mine}, "
                                 f"{DEFAULT_LANGUAGE} formats {theirs}")
            for spec in _plural_specs(template) if mine is not None else ():
                if spec.count("/") != 1 or not all(spec.split("/")):
                    raise ValueError(f"{owner}: locale {lang}: {key!r} has plural {{:{spec}}}; "
                                     "write it as {n:one/other}")


class Term(str):
    """A field value that is itself a locale key, translated when the text is formatted:
    text("inputs.whole_number", lang, name=Term("rope.qk.head"), ...)."""


class Catalog:
    """Every visitor text of one app, {lang: {key: text}}, checked when built. `text` is the
    one function that turns a key into what a visitor reads."""

    def __init__(self, strings: Mapping[str, Mapping[str, str]], owner: str = "explorer/locales"):
        check_catalog(strings, owner)
        self._strings = {lang: dict(strings[lang]) for lang in LANGUAGES}
        self._owners = dict.fromkeys(self._strings[DEFAULT_LANGUAGE], owner)

    def extended(self, owner: str, strings: Mapping[str, Mapping[str, str]]) -> Catalog:
        """This catalog plus `owner`'s texts, given per key ({key: {lang: text}}: the form a
        tab module outside the app declares), checked like the locale files. A key that is
        already here raises."""
        per_language: dict[str, dict[str, str]] = {lang: {} for lang in LANGUAGES}
        for key, texts in strings.items():
            for lang in set(LANGUAGES) | set(texts):
                per_language.setdefault(lang, {})[key] = texts.get(lang) or ""
        addition = Catalog(per_language, owner)
        for key in addition._owners:
            if key in self._owners:
                raise ValueError(f"string {key!r} is declared by both {self._owners[key]} and {owner}")
        merged = copy.copy(self)
        merged._strings = {lang: {**self._strings[lang], **addition._strings[lang]} for lang in LANGUAGES}
        merged._owners = {**self._owners, **addition._owners}
        return merged

    def has(self, key: str) -> bool:
        return key in self._owners

    def keys(self) -> list[str]:
        return sorted(self._owners)

    def strings(self, lang: str) -> dict[str, str]:
        """Every text of one language, {key: text}."""
        return dict(self._strings[lang])

    def template(self, key: str, lang: Optional[str] = DEFAULT_LANGUAGE) -> str:
        """The unformatted text of `key` in `lang` (for a hover template filled per cell)."""
        try:
            return self._strings[normalize_language(lang)][key]
        except KeyError:
            topic = key.split(".")[0]
            raise KeyError(f"no visitor string {key!r}: add it to explorer/locales/en/{topic}.py "
                           f"and zh/{topic}.py") from None

    def text(self, key: str, lang: Optional[str] = DEFAULT_LANGUAGE, **fields: Any) -> str:
        """`key` in the visitor's language (any browser locale or switch value), formatted with
        `fields`. A template is always formatted, so doubled braces come out single whether or
        not there are fields; a static text (not a template, see fields_of) comes back as
        written."""
        raw = self.template(key, lang)
        if fields_of(raw) is None:
            if fields:
                raise ValueError(f"visitor string {key!r} is static text and takes no fields")
            return raw
        fields = {name: self.text(value, lang) if isinstance(value, Term) else value
                  for name, value in fields.items()}
        return _FORMATTER.vformat(raw, (), fields)


def merged_strings(package: str, path) -> dict[str, str]:
    """The STRINGS of every module of a topic that is a package (the lessons: one module per
    lesson), merged; a key defined twice is an error."""
    strings: dict[str, str] = {}
    for name in sorted(m.name for m in pkgutil.iter_modules(path)):
        for key, value in importlib.import_module(f"{package}.{name}").STRINGS.items():
            if key in strings:
                raise ValueError(f"{package}: text {key!r} defined twice")
            strings[key] = value
    return strings


def _assemble(lang: str) -> dict[str, str]:
    """One language's texts from its topic modules; a key lives in the module its prefix names."""
    package = importlib.import_module(f"explorer.locales.{lang}")
    found = {module.name for module in pkgutil.iter_modules(package.__path__)}
    if found != set(TOPICS):
        raise ValueError(f"locale {lang}: topic modules {sorted(found)}, expected {sorted(TOPICS)}")
    strings: dict[str, str] = {}
    for topic in TOPICS:
        for key, value in importlib.import_module(f"explorer.locales.{lang}.{topic}").STRINGS.items():
            if key.split(".")[0] != topic:
                raise ValueError(f"locale {lang}: {key!r} is in {topic}.py, not in the module its "
                                 "prefix names")
            strings[key] = value
    return strings


CATALOG = Catalog({lang: _assemble(lang) for lang in LANGUAGES})
has, template, text = CATALOG.has, CATALOG.template, CATALOG.text
