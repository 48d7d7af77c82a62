"""Views: a section's settings as a link, and a link opening that section with its settings.

A tab registers each section a visitor may link to (`ctx.view(...)` in its build): a short key
("attention.map"), the section's controls under the names they take in a link ("layer",
"head", ...), the button that runs it, its run event and the gr.State keeping its result. A link
is the page's address with a query string:

    ?view=attention.map&model=smollm2&layer=5&head=2&mask=window&window=16
    ?lesson=kv-cache&step=2            (explorer/ui/page/lessons.py)
    &present=1                          presenter mode, &lang=zh the page's language

`read_link` turns a query string into a Plan: every value checked on the server before it
reaches a control (a slider's own range, a choice among the control's choices, a number of the
model's layers for a layer, a text's length), each refused value named in a note and replaced
by the control's default, never an error page and never a value past the server's limits.
`link_of` writes the query string of a section's current settings (the "copy link" of every
section, and the link the exports name).
"""
from __future__ import annotations

import json
import math
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Optional

import gradio as gr

from explorer.locales import has

# A link longer than this, or with more parameters, is not read at all (a note says so): the
# longest text control a view links (a prompt) fits, and nothing a page sends is larger.
MAX_QUERY_CHARS = 8192
MAX_PARAMETERS = 40
MAX_LINK_TEXT = 2000    # a text control's value in a link (prompts, bases)
# Names a link uses besides a view's controls.
RESERVED = ("view", "model", "run", "lesson", "step", "present", "lang")


@dataclass(frozen=True)
class Control:
    """One control of a view as it appears in a link. `kind` and its bounds come from the
    component (a Slider's range, a Radio's choices, a Textbox's length) unless given;
    `check(value, config)` adds what depends on the model (a layer below its layer count)."""
    name: str
    component: Any
    kind: str                              # "int" | "float" | "choice" | "text" | "bool"
    low: Optional[float] = None
    high: Optional[float] = None
    choices: tuple = ()
    max_chars: int = MAX_LINK_TEXT
    check: Optional[Callable[[Any, Any], bool]] = None

    @property
    def default(self) -> Any:
        return self.component.value

    def parse(self, raw: str, config: Any = None) -> Any:
        """The value `raw` (a link's text) stands for; ValueError when it is not one this
        control takes."""
        if self.kind == "text":
            if len(raw) > self.max_chars:
                raise ValueError("too long")
            value: Any = raw
        elif self.kind == "bool":
            if raw not in ("0", "1", "true", "false"):
                raise ValueError("not a switch")
            value = raw in ("1", "true")
        elif self.kind == "choice":
            matches = [c for c in self.choices if str(c) == raw]
            if not matches:
                raise ValueError("not a choice")
            value = matches[0]
        else:
            if len(raw) > 32:
                raise ValueError("too long")
            number = float(raw)
            if not math.isfinite(number):
                raise ValueError("not finite")
            if self.kind == "int":
                if number != int(number):
                    raise ValueError("not whole")
                number = int(number)
            if (self.low is not None and number < self.low) or \
               (self.high is not None and number > self.high):
                raise ValueError("out of range")
            value = number
        if self.check is not None and config is not None and not self.check(value, config):
            raise ValueError("not valid for this model")
        return value

    def same(self, value: Any, wanted: Any) -> bool:
        """Whether the control's value `value` is `wanted`: numbers as numbers (a slider sends
        32.0 for 32), texts up to their whitespace (a text box may change line ends)."""
        if self.kind in ("int", "float"):
            try:
                return float(value) == float(wanted)
            except (TypeError, ValueError):
                return False
        if self.kind == "bool":
            return bool(value) == bool(wanted)
        if self.kind == "text":
            return isinstance(value, str) and value.split() == str(wanted).split()
        return str(value) == str(wanted)

    def write(self, value: Any) -> Optional[str]:
        """The link's text for `value`; None when the value is not one a link can carry."""
        try:
            raw = ("1" if value else "0") if self.kind == "bool" else str(value)
            if self.kind in ("int", "float") and isinstance(value, float) and value == int(value):
                raw = str(int(value)) if self.kind == "int" else repr(value)
            self.parse(raw)
        except (ValueError, TypeError, OverflowError):
            return None
        return raw


def control(name: str, component: Any, *, low: Optional[float] = None,
            high: Optional[float] = None, check: Optional[Callable[[Any, Any], bool]] = None,
            max_chars: int = MAX_LINK_TEXT) -> Control:
    """A Control whose kind and bounds are read from the component (given bounds narrow them)."""
    if isinstance(component, gr.Checkbox):
        return Control(name, component, "bool", check=check)
    if isinstance(component, (gr.Radio, gr.Dropdown)):
        values = tuple(c[1] if isinstance(c, (tuple, list)) else c for c in component.choices)
        return Control(name, component, "choice", choices=values, check=check)
    if isinstance(component, gr.Textbox):
        limit = min(max_chars, component.max_length or max_chars)
        return Control(name, component, "text", max_chars=limit, check=check)
    if isinstance(component, (gr.Slider, gr.Number)):
        lo = low if low is not None else getattr(component, "minimum", None)
        hi = high if high is not None else getattr(component, "maximum", None)
        if lo is None or hi is None:
            raise TypeError(f"link control {name!r}: give the number's bounds (low=, high=)")
        whole = (getattr(component, "precision", None) == 0 or
                 (isinstance(component, gr.Slider) and float(component.step).is_integer()
                  and float(lo).is_integer()))
        return Control(name, component, "int" if whole else "float", low=lo, high=hi, check=check)
    raise TypeError(f"link control {name!r}: no link form for {type(component).__name__}")


@dataclass
class View:
    """A section a link can open (see the module's doc)."""
    key: str                                # "attention.map"
    tab: str                                # tab id ("attention")
    section: str                            # the section's elem_id
    controls: tuple[Control, ...]
    title: str = ""                         # locale key of the section's (or tab's) title
    suffix: str = ""                        # "-2" for a section's second view (two runs in one)
    run: Optional[Any] = None               # the button that runs the section (None: runs on load)
    event: Optional[Any] = None             # its run event (the lessons follow it with `.then`)
    state: Optional[Any] = None             # the gr.State holding its result
    link_box: Optional[Any] = None          # the hidden box with the section's current link
    make_link: Optional[Callable[..., str]] = None   # (model, lang, *values) -> the link
    link_inputs: list = field(default_factory=list)  # [model, lang, *controls]

    @property
    def target(self) -> str:
        """What the page opens: "tab/section", or the tab alone for a tab without sections."""
        return f"{self.tab}/{self.section}" if self.section else self.tab

    @property
    def box_id(self) -> str:
        """The elem_id of the view's link box: "link-<section elem_id>" (the exports read it;
        a section's second view adds "-2")."""
        return f"link-{self.section or 'tab-' + self.tab}{self.suffix}"

    @property
    def run_id(self) -> str:
        return getattr(self.run, "elem_id", None) or ""

    def control(self, name: str) -> Control:
        return next(c for c in self.controls if c.name == name)


@dataclass
class Views:
    """Every view of the app, in registration order (one per section that has one)."""
    items: list[View] = field(default_factory=list)

    def open(self, ctx: Any, key: str, controls: Sequence[Any], *, run: Any = None,
             event: Any = None, state: Any = None) -> View:
        """The view of the section being built (ctx.place; TabContext.view's work), with its
        "copy link" row under it."""
        place = ctx.place
        section, tab = place.get("section", ""), place.get("tab", "")
        before = sum(v.section == section and v.tab == tab for v in self.items)
        view = View(key=key, tab=tab, suffix=f"-{before + 1}" if before else "", section=section,
                    controls=tuple(controls), title=place.get("title", ""),
                    run=run, event=event, state=state)
        add_link_row(ctx, view)
        return self.add(view)

    def add(self, view: View) -> View:
        if any(v.key == view.key for v in self.items):
            raise ValueError(f"view {view.key!r} registered twice")
        names = [c.name for c in view.controls]
        if len(set(names)) != len(names) or set(names) & set(RESERVED):
            raise ValueError(f"view {view.key!r}: control names must be distinct and not {RESERVED}")
        self.items.append(view)
        return view

    def get(self, key: str) -> Optional[View]:
        return next((v for v in self.items if v.key == key), None)

    def components(self) -> list:
        """Every linked control of every view, once, in a fixed order (the outputs of a plan)."""
        seen: dict[int, Any] = {}
        for view in self.items:
            for c in view.controls:
                seen.setdefault(id(c.component), c.component)
        return list(seen.values())


@dataclass(frozen=True)
class Plan:
    """What a link asks for, every value checked: the view and its values (by control name),
    the model, whether to run, a lesson step, presenter mode, the language, and the notes on
    what was refused (locale key, fields)."""
    view: Optional[str] = None
    model: Optional[str] = None
    values: Mapping[str, Any] = field(default_factory=dict)
    run: bool = True
    lesson: Optional[str] = None
    step: int = 0
    present: bool = False
    lang: Optional[str] = None
    notes: tuple[tuple[str, Mapping[str, Any]], ...] = ()


def parse_query(query: Any) -> tuple[dict[str, str], list]:
    """(parameters, notes) of a query string or mapping: the first value of each name, at most
    MAX_PARAMETERS; nothing at all from a query past MAX_QUERY_CHARS."""
    if isinstance(query, Mapping):
        pairs = [(str(k), str(v)) for k, v in list(query.items())[:MAX_PARAMETERS + 1]]
        size = sum(len(k) + len(v) + 2 for k, v in pairs)
    else:
        query = str(query or "").lstrip("?")
        size = len(query)
        pairs = urllib.parse.parse_qsl(query[:MAX_QUERY_CHARS + 1], keep_blank_values=True,
                                       max_num_fields=None) if size <= MAX_QUERY_CHARS else []
    if size > MAX_QUERY_CHARS or len(pairs) > MAX_PARAMETERS:
        return {}, [("link.too_long", {})]
    params: dict[str, str] = {}
    for key, value in pairs:
        params.setdefault(key, value)
    return params, []


def read_link(query: Any, views: Views, model_names: Sequence[str], default_model: str,
              config_of: Callable[[str], Any], lessons: Optional[Mapping[str, int]] = None) -> Plan:
    """The Plan of a link (see the module's doc). `config_of(name)` gives a model's config for
    the checks that depend on it; `lessons` maps each lesson's key to its number of steps."""
    params, notes = parse_query(query)
    if not params:
        return Plan(notes=tuple(notes))
    model = params.get("model")
    if model is not None and model not in model_names:
        notes.append(("link.bad_model", {"value": _shown(model)}))
        model = None
    lang = params.get("lang") if params.get("lang") in ("en", "zh") else None
    present = params.get("present") in ("1", "true")
    run = params.get("run", "1") not in ("0", "false")
    lesson, step = None, 0
    if "lesson" in params:
        if lessons is not None and params["lesson"] in lessons:
            lesson = params["lesson"]
            raw = params.get("step", "1")
            if raw.isdigit() and 1 <= int(raw) <= lessons[lesson]:
                step = int(raw) - 1
            else:
                notes.append(("link.bad_step", {"value": _shown(raw), "n": lessons[lesson]}))
        else:
            notes.append(("link.bad_lesson", {"value": _shown(params["lesson"])}))
    view_key = params.get("view")
    view = views.get(view_key) if view_key else None
    if view_key and view is None:
        notes.append(("link.bad_view", {"value": _shown(view_key)}))
    values: dict[str, Any] = {}
    if view is not None:
        config = None
        for c in view.controls:
            if c.name not in params:
                continue
            if c.check is not None and config is None:
                config = config_of(model or default_model)
            try:
                values[c.name] = c.parse(params[c.name], config)
            except (ValueError, OverflowError):
                notes.append(("link.bad_value", {"name": c.name, "value": _shown(params[c.name])}))
        known = {c.name for c in view.controls} | set(RESERVED)
        unknown = sorted(set(params) - known)
        if unknown:
            notes.append(("link.unknown", {"names": _shown(", ".join(unknown))}))
    return Plan(view=view.key if view else None, model=model, values=values, run=run,
                lesson=lesson, step=step, present=present, lang=lang, notes=tuple(notes))


def link_of(view: View, model: Any, values: Sequence[Any], lang: Optional[str] = None) -> str:
    """The query string opening `view` with `values` (one per control, in order); a value a
    link cannot carry (a text past its length) is left out, so the link opens its default."""
    params = [("view", view.key)]
    if isinstance(model, str) and model:
        params.append(("model", model))
    for c, value in zip(view.controls, values):
        raw = c.write(value)
        if raw is not None:
            params.append((c.name, raw))
    if lang in ("en", "zh"):
        params.append(("lang", lang))
    return "?" + urllib.parse.urlencode(params, quote_via=urllib.parse.quote)


I18N_PREFIX = "__i18n__"


def label_key(label: Any) -> Optional[str]:
    """The locale key of a component's label or caption: Gradio keeps a `t(key)` label as the
    I18nData marker, and a button's caption as the marker's JSON text (None for any other)."""
    key = getattr(label, "key", None)
    if key is None and isinstance(label, str) and label.startswith(I18N_PREFIX):
        try:
            key = json.loads(label[len(I18N_PREFIX):]).get("key")
        except (ValueError, AttributeError):
            key = None
    return key if isinstance(key, str) and has(key) else None


def plain(value: str) -> str:
    """`value` shown as itself in Markdown: every ASCII punctuation character escaped, so a
    visitor's text (a link's refused value, a nickname) never becomes a link, an image,
    emphasis or an autolink (`http\\://`, `www\\.`) in the app's own words."""
    return "".join("\\" + ch if ch in _PUNCTUATION else ch for ch in str(value))


_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


def _shown(value: str, limit: int = 40) -> str:
    return value if len(value) <= limit else value[:limit - 1] + "…"


# The page copies a link with the page's own address in front of the query string, and shows it
# in the box too (a browser may refuse the clipboard outside https or without a gesture).
COPY_JS = """(query) => {
  const url = location.origin + location.pathname + query;
  if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(url).catch(() => {});
  return url;
}"""


def add_link_row(ctx: Any, view: View) -> None:
    """The section's "copy link" button and the box holding its link: the query string of the
    section's last run (kept for the exports after every run), the whole address once copied."""

    with gr.Row(elem_classes="explorer-link-row"):
        copy = gr.Button(ctx.t("link.copy"), size="sm", variant="secondary", scale=0,
                         min_width=120, elem_id="copy-" + view.box_id[len("link-"):])
        box = gr.Textbox(show_label=False, interactive=False, max_lines=1, container=False,
                         max_length=MAX_QUERY_CHARS + 200, scale=4, elem_id=view.box_id,
                         elem_classes="explorer-link")
    view.link_box = box
    components = [c.component for c in view.controls]

    def make_link(model, lang, *values):
        return link_of(view, model, values)

    inputs = [ctx.model, ctx.lang, *components]
    # queued (the cheap group): every event with server code passes the queue's admission
    copy.click(make_link, inputs, [box], api_visibility="private").then(
        None, [box], [box], js=COPY_JS, queue=False)
    view.make_link, view.link_inputs = make_link, inputs


def events_of(view: View) -> tuple:
    """The view's run events (a section drawn by several triggers has several)."""
    if view.event is None:
        return ()
    return view.event if isinstance(view.event, tuple) else (view.event,)
