"""The tabs of the app and the contract each one follows.

app.py builds the header (model picker, language switch, device line; explorer/ui/shell.py)
and then one gr.Tab per module listed in TAB_MODULES, in that order. A module that does not
exist yet is left out; a module that exists but fails to import is an error (a broken tab must
not disappear silently).

Contract for a tab module `explorer/ui/<topic>.py`:

    import gradio as gr
    from explorer.ui import TabContext

    TITLE = "generate.tab"          # key, in STRINGS, of the tab's title
    STRINGS = {                     # every visible text of the tab, in both languages
        "generate.tab": {"en": "Generate", "zh": "生成"},
        "generate.prompt": {"en": "Prompt", "zh": "提示词"},
        "generate.run": {"en": "Generate", "zh": "生成"},
        "generate.speed": {"en": "{rate:.1f} tokens/s", "zh": "每秒 {rate:.1f} 个词元"},
    }

    def build(ctx: TabContext) -> None:
        '''Called inside `with gr.Tab(...)`: create components, wire events.'''
        prompt = gr.Textbox(label=ctx.t("generate.prompt"))
        run = gr.Button(ctx.t("generate.run"), variant="primary")
        speed = gr.Markdown()

        def generate(model_name, lang, text, progress=gr.Progress()):
            if not isinstance(text, str) or not text.strip():
                raise gr.Error("Type a prompt first.")          # validate every input here
            loaded = ctx.load(model_name, progress)            # gr.Error on a bad name
            ...                                                # loaded.model, .tokenizer, .config
            return ctx.t.text("generate.speed", lang, rate=rate)

        run.click(generate, [ctx.model, ctx.lang, prompt], speed,
                  api_name="generate", **ctx.model_event)

and one line in TAB_MODULES below (tests/example_tab.py is this example, run end to end by
tests/test_app_shell.py). Rules:
- Keys are prefixed with the module's topic ("generate.") and unique across the app; every key
  has non-empty "en" and "zh" text (checked at start-up).
- `ctx.t("key")` is for static text (labels, titles, Markdown written once): the browser
  translates it and follows the language switch by itself (Gradio shows custom strings as
  written: braces and LaTeX are safe).
- Text a handler computes uses `ctx.t.text("key", lang, **fields)` with `ctx.lang` among the
  event's inputs. To re-render it when the visitor switches language, also wire
  `ctx.lang.change(...)`; to follow the model picker, wire `ctx.model.change(...)`; for a
  first render when the page opens, `ctx.demo.load(...)`. Components a handler updates get
  plain strings (`ctx.t.text`), not `ctx.t(...)` markers.
- Every event that runs a forward pass passes `**ctx.model_event` (one shared concurrency
  group, so the machine runs one forward pass at a time, whoever asked). Merely loading a
  model (`ctx.load`) is thread-safe by itself and needs no group.
- Per-visitor data lives in gr.State, never at module level or on ctx.runtime's objects; the
  loaded models are shared by every visitor and must not be modified.
- Formulas go in gr.Markdown (`$...$`), not in Plotly titles (no MathJax offline).
"""
from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import gradio as gr

from explorer.i18n import Translator
from explorer.runtime import LoadedModel, Runtime, UnknownModelError

# The tabs, in display order. Adding a tab = adding its module here.
TAB_MODULES: tuple[str, ...] = (
    "explorer.ui.generate",
    "explorer.ui.attention",
    "explorer.ui.rope",
    "explorer.ui.about",
)

# All events that run a model share this concurrency group (limit 1): on a 2-core CPU two
# forward passes at once only make both slower, and on a GPU they would fight for memory.
MODEL_CONCURRENCY_ID = "model"


@dataclass(frozen=True)
class TabContext:
    demo: gr.Blocks           # the app, for demo.load(...) (the first render of a tab)
    runtime: Runtime          # shared, lazily loaded models
    model: gr.Dropdown        # the header's model picker; its value is a registry name
    lang: gr.Radio            # the header's language switch; its value is "en" or "zh"
    t: Translator             # t("key") static text; t.text("key", lang, **fields) server text
    tabs: tuple[ModuleType, ...] = ()  # the tab modules of this app, in display order
    concurrency_id: str = MODEL_CONCURRENCY_ID

    @property
    def model_event(self) -> dict[str, Any]:
        """Keyword arguments for every event listener that runs a model."""
        return {"concurrency_id": self.concurrency_id, "concurrency_limit": 1}

    def load(self, model_name: Any, progress: Any = None) -> LoadedModel:
        """The loaded model named by the picker's value; gr.Error in plain words otherwise.
        `progress` may be a gr.Progress: the first load converts/loads with a visible bar."""
        return load_or_error(self.runtime, model_name, progress)


def load_or_error(runtime: Runtime, model_name: Any, progress: Any = None) -> LoadedModel:
    try:
        return runtime.get(model_name, progress=progress)
    except UnknownModelError as error:
        raise gr.Error(str(error)) from None
    except ValueError as error:  # CheckpointError, CheckpointLoadError, UnsupportedModelError
        raise gr.Error(f"The model could not be loaded: {error}") from None


def available_tabs(names: Sequence[str] = TAB_MODULES) -> list[ModuleType]:
    """The tab modules that exist, imported and checked against the contract."""
    tabs = []
    for name in names:
        if importlib.util.find_spec(name) is None:
            continue  # not written yet
        module = importlib.import_module(name)
        for attribute in ("TITLE", "STRINGS", "build"):
            if not hasattr(module, attribute):
                raise TypeError(f"tab module {name} has no {attribute} (see explorer/ui/__init__.py)")
        if module.TITLE not in module.STRINGS:
            raise TypeError(f"tab module {name}: TITLE {module.TITLE!r} is not a key of its STRINGS")
        tabs.append(module)
    return tabs


def build_translator(tabs: Sequence[ModuleType]) -> Translator:
    """All UI strings: the shell's, then each tab's. Raises on a duplicate or missing text."""
    from explorer.ui import shell

    return Translator([(shell.__name__, shell.STRINGS)] + [(m.__name__, m.STRINGS) for m in tabs])


def tab_id(module: ModuleType) -> str:
    """Stable id of a tab ("generate"), used for elem_id and tests."""
    return module.__name__.rsplit(".", 1)[-1]
