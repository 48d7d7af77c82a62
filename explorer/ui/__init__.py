"""The contract every tab follows (explorer/README.md is the guide, with a worked example).

The UI is three layers, each importing only from those below it: this contract; the page's
shared parts (explorer/ui/page/: header, lessons panel, class bar, links, first answers); the
tabs (explorer/ui/tabs/, listed in TAB_MODULES there). app.py builds the header and then one
gr.Tab per module of that list, in that order; a name that cannot be imported stops the start.

A tab module `explorer/ui/tabs/<topic>.py` has `TITLE` (the locale key of its title) and
`build(ctx: TabContext)`, which does layout and wiring only: each experiment is one section
(`with ctx.section("rope.freq.heading"):` a sub-tab a visitor can jump to), whose handler is a
module-level function calling the experiment's `run` and `figures`, decorated with
`@visitor_errors`, and whose result is kept in a gr.State registered with
`ctx.redraw_on_language(state, outputs, draw)`: the shell's one language switch redraws every
section from its stored result, without running the model. Rules:
- Every visitor-facing string is in explorer/locales/en/ and zh/ (one module per key prefix).
  `ctx.t("key")` is static text that the browser translates (labels, fixed Markdown); text a
  handler computes uses `text("key", lang, **fields)` with `ctx.lang` among the event's inputs.
- Every event that runs a forward pass passes `**ctx.model_event` (one shared concurrency
  group, so the machine runs one forward pass at a time, whoever asked), or `**ctx.long_event`
  for a run of minutes (its own group beside it, so that it holds no one's short forward; the
  run ends itself by a deadline of its own). Every other queued event joins the cheap group
  (app.py). Merely loading a model (`ctx.load`) is thread-safe by itself and needs no group.
- Per-visitor data lives in gr.State, never at module level or on ctx.runtime's objects; the
  loaded models are shared by every visitor and must not be modified. Client-sent values
  (a gr.JSON, a Dataframe) are never read back as state.
- Formulas go in gr.Markdown (`$...$`, with `latex_delimiters=LATEX`), not in Plotly titles (no
  MathJax offline).
- The page runs the listeners of one trigger one after another, in the order they were
  registered, each to its end (a stream until it stops): a listener that must act at once
  (clearing a note, loading the model) is registered before a long one on the same trigger.
- A long run's Stop button raises a flag (explorer/web/stopping.py: the handler wrapped by
  `Stops.stoppable`, the button wired to `Stops.on_stop`, queue=False, no outputs), and the run
  ends itself with its last message; not `cancels=`, whose cancel races the page (Gradio's
  "Error" badge, a note that disagrees with the last message).
"""
from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import gradio as gr

from explorer.i18n import Translator
from explorer.inputs import InputError
from explorer.locales import normalize_language, text
from explorer.runtime import LoadedModel, Runtime, UnknownModelError
from explorer.web.groups import LONG_CONCURRENCY_ID, MODEL_CONCURRENCY_ID
from explorer.web.stopping import argument_reader

log = logging.getLogger(__name__)

# A component in the page whose events fire but which no one sees (static/classroom.css): Gradio
# 6 renders no component built with visible=False, and so fires none of its events.
HIDDEN = "explorer-hidden"
# The delimiters of every gr.Markdown that holds a formula: $$...$$ displayed, $...$ inline.
LATEX = [{"left": "$$", "right": "$$", "display": True}, {"left": "$", "right": "$", "display": False}]


@dataclass(frozen=True)
class Redraw:
    """One section's language redraw: `draw(result, lang)` returns the values of `outputs`
    from the result stored in `state` (None: nothing drawn yet, the outputs stay as they are)."""
    state: gr.State
    outputs: tuple
    draw: Callable[[Any, str], Any]


@dataclass
class TabContext:
    demo: gr.Blocks           # the app, for demo.load(...) (the first render of a tab)
    runtime: Runtime          # shared, lazily loaded models
    model: gr.Dropdown        # the header's model picker; its value is a registry name
    lang: gr.Radio            # the header's language switch; its value is "en" or "zh"
    t: Translator             # t("key") static text; t.text("key", lang, **fields) server text
    tabs: tuple[ModuleType, ...] = ()  # the tab modules of this app, in display order
    concurrency_id: str = MODEL_CONCURRENCY_ID
    redraws: list = field(default_factory=list)  # Redraw entries, wired once by the shell
    sections: list = field(default_factory=list)  # (section tab, title key): titles follow the switch
    views: Any = None         # explorer.ui.page.views.Views: the sections a link can open
    place: dict = field(default_factory=dict)  # {"tab": id, "section": elem_id} being built
    # called once every tab is built, with the top-level gr.Tabs and [(its gr.Tab, the tab's
    # module)]: wiring that needs the other tabs (a section's timer stopped when another opens)
    after_tabs: list = field(default_factory=list)
    # the Class tab's controls (explorer/ui/page/classroom.py Tab), set by its build: the class bar's
    # wiring (app.py, after the lessons') needs them
    class_tab: Any = None
    class_game: Any = None    # the class game's panel (explorer/ui/page/class_game.py Panel)

    def section(self, title_key: str, elem_id: str | None = None) -> gr.Tab:
        """A sub-tab of the current tab holding one experiment: `with ctx.section(key): ...`."""
        tab = gr.Tab(self.t(title_key), elem_id=elem_id or "section-" + title_key.replace(".", "-"))
        resize_charts_on_select(tab)
        self.sections.append((tab, title_key))
        self.place.update(section=tab.elem_id, title=title_key)
        return tab

    def view(self, key: str, controls: Sequence[Any], *, run: Any = None, event: Any = None,
             state: Any = None) -> Any:
        """Make the current section linkable (explorer/ui/page/views.py): `controls` are
        views.control(...) entries, `run` its run button, `event` the run's event (what a
        lesson follows) and `state` its stored result. Adds the section's "copy link"."""
        if self.views is None:
            return None
        return self.views.open(self, key, controls, run=run, event=event, state=state)

    def redraw_on_language(self, state: gr.State, outputs: Sequence[Any],
                           draw: Callable[[Any, str], Any]) -> None:
        """Register a section: on a language switch, outputs = draw(state's value, lang)."""
        self.redraws.append(Redraw(state, tuple(outputs), draw))

    @property
    def model_event(self) -> dict[str, Any]:
        """Keyword arguments for every event listener that runs a model."""
        return {"concurrency_id": self.concurrency_id, "concurrency_limit": 1}

    @property
    def long_event(self) -> dict[str, Any]:
        """Keyword arguments for every event listener that runs a model for minutes."""
        return {"concurrency_id": LONG_CONCURRENCY_ID, "concurrency_limit": 1}

    def load(self, model_name: Any, progress: Any = None) -> LoadedModel:
        """The loaded model named by the picker's value; gr.Error in plain words otherwise.
        `progress` may be a gr.Progress: the first load converts/loads with a visible bar."""
        return load_or_error(self.runtime, model_name, progress)


# Plotly sizes a chart to its container when drawn; a chart redrawn while its tab or section is
# hidden (a language switch seen from elsewhere) gets no width, so showing a tab sends the
# window resize that Plotly's responsive charts listen to.
RESIZE_JS = ("() => { for (const ms of [50, 300, 1000]) "
             "setTimeout(() => window.dispatchEvent(new Event('resize')), ms); }")


def resize_charts_on_select(tab: gr.Tab) -> None:
    tab.select(None, None, None, js=RESIZE_JS, queue=False)


def keep_or_reset(current: Any, valid: Callable[[Any], bool], reset: Any) -> dict:
    """The value part of a control's update when the model changes: nothing when the current
    value is still valid for the new model (a link or a lesson may have just set it, and this
    update must not race it back to a default), `reset` otherwise."""
    try:
        if valid(current):
            return {}
    except (TypeError, ValueError):
        pass
    return {"value": reset}


def load_or_error(runtime: Runtime, model_name: Any, progress: Any = None) -> LoadedModel:
    try:
        return runtime.get(model_name, progress=progress)
    except UnknownModelError as error:
        raise gr.Error(str(error), print_exception=False) from None
    except ValueError as error:  # CheckpointError, CheckpointLoadError, UnsupportedModelError
        log.warning("model %r could not be loaded: %s", model_name, error)
        raise gr.Error(f"The model could not be loaded: {error}", print_exception=False) from None


def _visitor_error(error: Exception, lang: Any) -> gr.Error:
    # print_exception=False: Gradio would print a traceback for every refusal, and a hostile
    # client's stream of refused requests would fill the log (about 90 MB in a 30-minute siege)
    if isinstance(error, InputError):
        return gr.Error(error.message(normalize_language(lang)), print_exception=False)
    log.exception("handler failed")  # the traceback goes to the server log, never to the page
    return gr.Error(text("inputs.internal", normalize_language(lang)), print_exception=False)


def takes(inputs: type) -> Callable[[Callable], Callable]:
    """For a handler `def h(<leading parameters>, *values: Inputs, <trailing>)` taking a section's
    inputs as the values of a NamedTuple: the signature Gradio reads (how many inputs, the API's
    parameter names), its leading parameters, then one per field of `inputs` with the field's
    default, then its keyword-only parameters with a default (`progress=gr.Progress()`).

    Gradio passes a gr.Progress positionally, at its parameter's place after the inputs; a
    handler with such trailing parameters is wrapped so that what comes after the fields reaches
    them by name (a generator function stays one, for @visitor_errors and Stop)."""
    def decorate(handler: Callable) -> Callable:
        parameters = inspect.signature(handler).parameters.values()
        leading = [p for p in parameters if p.kind is p.POSITIONAL_OR_KEYWORD]
        trailing = [p.replace(kind=p.POSITIONAL_OR_KEYWORD) for p in parameters
                    if p.kind is p.KEYWORD_ONLY and p.default is not p.empty]
        defaults = getattr(inputs, "_field_defaults", {})
        fields = [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                    default=defaults.get(name, inspect.Parameter.empty))
                  for name in inputs._fields]
        signature = inspect.Signature([*leading, *fields, *trailing])
        if not trailing:
            handler.__signature__ = signature
            return handler
        n_values = len(leading) + len(fields)
        names = [p.name for p in trailing]

        def split(args: tuple, kwargs: dict) -> tuple[tuple, dict]:
            return args[:n_values], {**dict(zip(names, args[n_values:])), **kwargs}

        if inspect.isgeneratorfunction(handler):
            def named(*args, **kwargs):
                values, by_name = split(args, kwargs)
                yield from handler(*values, **by_name)
        else:
            def named(*args, **kwargs):
                values, by_name = split(args, kwargs)
                return handler(*values, **by_name)
        functools.update_wrapper(named, handler)
        named.__signature__ = signature
        return named
    return decorate


def bind(handler: Callable, *args: Any, **kwargs: Any) -> functools.partial:
    """functools.partial(handler, *args, **kwargs) that keeps the handler's docstring: Gradio
    describes an API endpoint with its function's docstring, and a bare partial's is the
    partial class's own ("partial(func, *args, **keywords) - new function with ...")."""
    bound = functools.partial(handler, *args, **kwargs)
    bound.__doc__ = handler.__doc__
    return bound


def visitor_errors(handler: Callable) -> Callable:
    """The one input-error adapter, for every handler (plain or streaming): InputError becomes
    gr.Error in the visitor's language (read from the handler's `lang` argument); gr.Error
    passes as it is; any other exception is logged and answered with a generic message, so no
    traceback or server path reaches the page."""
    lang_of = argument_reader(handler, "lang")
    if inspect.isgeneratorfunction(handler):
        @functools.wraps(handler)
        def streaming(*args, **kwargs):
            try:
                yield from handler(*args, **kwargs)
            except gr.Error:
                raise
            except Exception as error:
                raise _visitor_error(error, lang_of(args, kwargs)) from None
        return streaming

    @functools.wraps(handler)
    def plain(*args, **kwargs):
        try:
            return handler(*args, **kwargs)
        except gr.Error:
            raise
        except Exception as error:
            raise _visitor_error(error, lang_of(args, kwargs)) from None
    return plain


def build_translator(tabs: Sequence[ModuleType]) -> Translator:
    """All visitor strings: the locale files, plus the STRINGS of a tab module that lives outside
    the app (a test's example tab). Raises on a duplicate or missing text, or a tab whose TITLE
    has no text."""
    translator = Translator([(m.__name__, m.STRINGS) for m in tabs if hasattr(m, "STRINGS")])
    for module in tabs:
        if module.TITLE not in translator:
            raise TypeError(f"tab module {module.__name__}: TITLE {module.TITLE!r} has no text")
    return translator


def tab_id(module: ModuleType) -> str:
    """Stable id of a tab ("generate"), used for elem_id and tests."""
    return module.__name__.rsplit(".", 1)[-1]
