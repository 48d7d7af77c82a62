"""The header every tab shares: title, language switch, model picker, device line, the note on
where the weights come from, and the selected model's licence notice."""
from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import gradio as gr

from explorer.i18n import LANGUAGES, Translator, normalize_language
from explorer.locales import text
from explorer.runtime import Runtime
from explorer.ui import Redraw, load_or_error, visitor_errors
from explorer.web import exports

log = logging.getLogger(__name__)


# Gradio 6 translates gr.I18n text in the browser (svelte-i18n) and picks the browser's
# language, but gives no public API to change it from a component: its own Settings panel calls
# `changeLocale` exported by the frontend's core bundle. We import that same module (same URL,
# so the same instance and the same locale store) and call it. gradio is pinned; the browser
# test fails if a new version moves it. The choice is remembered in localStorage.
_HEAD = """
<script>
window.explorerLanguage = function () {
  const saved = window.localStorage && localStorage.getItem("explorer-language");
  if (saved === "en" || saved === "zh") return saved;
  const browser = (navigator.languages && navigator.languages[0]) || navigator.language || "en";
  return browser.toLowerCase().startsWith("zh") ? "zh" : "en";
};
window.explorerSetLanguage = async function (lang, remember) {
  if (lang !== "en" && lang !== "zh") return;
  if (remember && window.localStorage) localStorage.setItem("explorer-language", lang);
  try {
    const entry = document.querySelector('script[type="module"][src*="/assets/index-"]');
    const core = await import(new URL(__CORE__, entry.src).href);
    core.changeLocale(lang === "zh" ? "zh-CN" : "en");
  } catch (error) {
    console.warn("Transformer Explorer: cannot switch Gradio's language", error);
  }
};
</script>
""" + """
<script>
// Links "#open=<tab id>/<section elem_id>" (the claims board, About) open a tab and a section.
// Gradio 6 gives the button of a gr.Tab with elem_id X the id "X-button" and draws a tab's
// content (its panel, id X, and its sections) only once the tab is shown. A tab pushed into
// the "More tabs" menu has no button: it is found by its label, read at its index among its
// siblings in the app's layout (window.gradio_config).
(function () {
  const sleep = (ms) => new Promise((done) => setTimeout(done, ms));
  async function poll(find, ms) {
    for (let waited = 0; waited <= ms; waited += 100) {
      const found = find();
      if (found) return found;
      await sleep(100);
    }
    return null;
  }
  function indexAmongTabs(elemId) {
    const config = window.gradio_config;
    if (!config) return -1;
    const byId = new Map(config.components.map((c) => [c.id, c]));
    const item = config.components.find((c) => c.type === "tabitem" && c.props.elem_id === elemId);
    const parentOf = (node) => {
      for (const child of node.children || []) {
        if (item && child.id === item.id) return node;
        const found = parentOf(child);
        if (found) return found;
      }
      return null;
    };
    const parent = item && parentOf(config.layout);
    if (!parent) return -1;
    const siblings = parent.children.map((n) => byId.get(n.id))
      .filter((c) => c && c.type === "tabitem" && c.props.visible !== false);
    return siblings.indexOf(item);
  }
  async function selectTab(container, elemId) {
    const button = document.getElementById(elemId + "-button");
    if (button && button.offsetParent !== null) {
      button.click();
    } else {
      const labels = container.querySelectorAll(
        ":scope > .tab-wrapper > .tab-container.visually-hidden > button");
      const label = labels[indexAmongTabs(elemId)];
      const menu = container.querySelector(":scope > .tab-wrapper > .overflow-menu > button");
      if (!label || !menu) return null;
      menu.click();
      const item = await poll(() => Array.from(container.querySelectorAll(
        ":scope > .tab-wrapper .overflow-dropdown button"))
        .find((b) => b.innerText.trim() === label.innerText.trim()), 2000);
      if (!item) return null;
      item.click();
    }
    return poll(() => document.getElementById(elemId), 10000);
  }
  window.explorerOpen = async function (target) {
    const [tab, section] = decodeURIComponent(target).split("/");
    if (!/^[\\w-]+$/.test(tab) || (section && !/^[\\w-]+$/.test(section))) return false;
    const top = await poll(() => document.getElementById("explorer-tabs"), 10000);
    let shown = top && await selectTab(top, "tab-" + tab);
    let bar = shown;   // scrolled to: the section bar when there is one, so it stays in sight
    if (shown && section) {
      bar = await poll(() => shown.querySelector(".tabs"), 10000);
      shown = bar && await selectTab(bar, section);
    }
    if (shown) bar.scrollIntoView({block: "start"});
    return Boolean(shown);
  };
  // Opened on mousedown: a table (gr.Dataframe) redraws the cell under the pointer on
  // mousedown, so the click that follows no longer lands on the link. A click with no mouse
  // behind it (detail 0: the keyboard) opens it too.
  const linkOf = (event) => event.target.closest && event.target.closest('a[href^="#open="]');
  const open = (link) => window.explorerOpen(link.getAttribute("href").slice("#open=".length));
  document.addEventListener("mousedown", (event) => {
    const link = linkOf(event);
    if (!link || event.button !== 0) return;
    event.preventDefault();
    event.stopPropagation();
    open(link);
  }, true);
  document.addEventListener("click", (event) => {
    const link = linkOf(event);
    if (!link) return;
    event.preventDefault();
    event.stopPropagation();
    if (event.detail === 0) open(link);
  }, true);
  const fromAddress = () => {
    if (location.hash.startsWith("#open=")) window.explorerOpen(location.hash.slice(6));
  };
  window.addEventListener("hashchange", fromAddress);
  window.addEventListener("load", fromAddress);
})();
</script>
"""


@lru_cache(maxsize=1)
def _gradio_core_bundle() -> str:
    """File name of the gradio frontend module exporting changeLocale ("" if not found)."""
    assets = Path(gr.__file__).parent / "templates" / "frontend" / "assets"
    for path in sorted(assets.glob("core-*.js")):
        if "as changeLocale" in path.read_text(encoding="utf-8", errors="ignore"):
            return path.name
    return ""


TOAST_KINDS = ("error", "warning", "info", "success")


def toast_titles_css() -> str:
    """Gradio 6.31's toast heads its messages with their kind, capitalised from its own code
    ("Error", "Warning"), in every language; it never draws a title given to gr.Error or
    gr.Warning. On a page in another language this style writes the kind in that language (the
    html element's lang follows the language switch: Gradio's changeLocale sets it); the
    message under it is ours, already in the page's language."""
    rules = []
    for lang in LANGUAGES:
        if lang == "en":
            continue
        heads = ", ".join(f"html:lang({lang}) .toast-title.{kind}" for kind in TOAST_KINDS)
        rules.append(f"{heads} {{ font-size: 0; }}")
        rules.append(", ".join(f"html:lang({lang}) .toast-title.{kind} > *" for kind in TOAST_KINDS)
                     + " { font-size: 1rem; }")
        for kind in TOAST_KINDS:
            word = json.dumps(text(f"shell.toast.{kind}", lang), ensure_ascii=False)
            rules.append(f"html:lang({lang}) .toast-title.{kind}::before {{ content: {word}; font-size: 1rem; }}")
    return "<style>\n" + "\n".join(rules) + "\n</style>\n"


def head_html() -> str:
    # the export toolbar of every figure (explorer/web/exports.py), the page's one watch over
    # its charts (static/charts.js: each figure's text alternative as its aria-label, the logit
    # lens's cell texts cut to the drawn chart's width) and the reports of what the page has
    # drawn of a stream, which pace it (static/pace.js) come with the header
    static = Path(__file__).resolve().parents[3] / "static"
    return (_HEAD.replace("__CORE__", json.dumps("./" + _gradio_core_bundle())) + exports.head()
            + toast_titles_css()
            + "".join("<script>" + (static / name).read_text() + "</script>"
                      for name in ("charts.js", "pace.js")))


@dataclass(frozen=True)
class Header:
    model: gr.Dropdown
    lang: gr.Radio
    status: gr.Markdown
    notice: gr.Markdown


def _title(spec: Any, name: str) -> str:
    return getattr(spec, "title", None) or name


def render_status(runtime: Runtime, t: Translator, model_name: Any, lang: Any) -> tuple[str, Any]:
    """(status Markdown, notice update) for the header, in `lang`. Loads nothing."""
    name = runtime.check_name(model_name)
    spec = runtime.spec(name)
    loaded = runtime.get(name) if runtime.is_loaded(name) else None
    lines = [t.text("shell.device", lang, device=runtime.device_label_of(loaded))]
    if loaded is not None:
        params = sum(p.numel() for p in loaded.model.parameters()) / 1e6
        lines.append(t.text("shell.loaded", lang, title=_title(spec, name),
                            layers=loaded.config.n_layers, params=params))
    else:
        lines.append(t.text("shell.not_loaded", lang, title=_title(spec, name)))
    notice = getattr(spec, "notice", "") or ""
    notice_update = gr.update(value=t.text("shell.notice", lang, notice=notice) if notice else "",
                              visible=bool(notice))
    return "  \n".join(lines), notice_update


def build_header(runtime: Runtime, t: Translator) -> Header:
    with gr.Row(elem_id="explorer-header", equal_height=False):
        with gr.Column(scale=5):
            gr.Markdown(t("shell.heading"), elem_id="explorer-heading")
        with gr.Column(scale=1, min_width=200):
            lang = gr.Radio(
                choices=[(label, code) for code, label in LANGUAGES.items()],
                value="en", label=t("shell.language"), elem_id="language-switch",
            )
    with gr.Row(elem_id="model-row", equal_height=True):
        model = gr.Dropdown(
            choices=[(_title(runtime.spec(name), name), name) for name in runtime.names()],
            value=runtime.default_name, label=t("shell.model"), elem_id="model-picker",
            filterable=False, scale=1, min_width=260,
        )
        # Tall enough from the start: Gradio draws the first load's progress bar over it.
        status = gr.Markdown("\u00a0", elem_id="model-status", min_height=80)
    gr.Markdown(t("shell.weights_note"), elem_id="weights-note")
    notice = gr.Markdown(visible=False, elem_id="model-notice")
    return Header(model=model, lang=lang, status=status, notice=notice)


def wire_header(demo: gr.Blocks, header: Header, runtime: Runtime, t: Translator) -> None:
    @visitor_errors
    def load_model(model_name, lang, progress=gr.Progress()):
        load_or_error(runtime, model_name, progress)
        return render_status(runtime, t, model_name, lang)

    def status(model_name, lang):
        try:
            return render_status(runtime, t, model_name, normalize_language(lang))
        except ValueError as error:
            raise gr.Error(str(error), print_exception=False) from None

    outputs = [header.status, header.notice]
    # Loading is in the cheap group (app.GROUPS), not the "model" one: Runtime serialises loads
    # itself, and the header must not wait behind someone else's forward pass.
    # On page load: take the saved or browser language, then load the selected model with a
    # progress bar (the very first load also converts the checkpoint).
    # The locale is set here too: the radio starts at "en", so choosing "en" fires no change
    # event, yet Gradio may have picked the browser's Chinese on its own.
    detect = "() => { const l = window.explorerLanguage(); window.explorerSetLanguage(l, false); return l; }"
    demo.load(None, None, [header.lang], js=detect).then(
        load_model, [header.model, header.lang], outputs, api_name="load_model")
    header.model.change(load_model, [header.model, header.lang], outputs,
                        api_visibility="private")
    header.lang.change(None, [header.lang], None,
                       js="(lang) => { window.explorerSetLanguage(lang, false); }")
    header.lang.input(None, [header.lang], None,
                      js="(lang) => { window.explorerSetLanguage(lang, true); }")
    header.lang.change(status, [header.model, header.lang], outputs, api_name="header_status")


def wire_tab_titles(header: Header, tabs: list[tuple[gr.Tab, str]], t: Translator) -> None:
    """Tab and section titles follow the language switch from the server: Gradio 6.31
    re-translates only the selected tab's title when the browser's locale changes at run time
    (the others keep the language the page was first drawn in)."""
    def titles(lang):
        lang = normalize_language(lang)
        return [gr.Tab(label=t.text(key, lang)) for _, key in tabs]

    header.lang.change(titles, [header.lang], [tab for tab, _ in tabs], api_visibility="private",
                       queue=False)


def wire_language_redraw(header: Header, redraws: Sequence[Redraw]) -> None:
    """The one language switch of the app: every section registered with
    ctx.redraw_on_language is redrawn from its stored result in the new language, in one event,
    without running the model. A section with nothing stored keeps its outputs."""
    if not redraws:
        return
    states = [entry.state for entry in redraws]
    outputs = [output for entry in redraws for output in entry.outputs]

    @visitor_errors
    def redraw_all(lang, *results):
        lang = normalize_language(lang)
        values: list[Any] = []
        for entry, result in zip(redraws, results):
            drawn = None
            if result is not None:
                try:
                    drawn = entry.draw(result, lang)
                except Exception:  # one broken section must not keep the others in the old language
                    log.exception("language redraw failed")
            if drawn is None:
                values.extend(gr.skip() for _ in entry.outputs)
            else:
                drawn = drawn if isinstance(drawn, (tuple, list)) else (drawn,)
                if len(drawn) != len(entry.outputs):
                    raise TypeError(f"a redraw returned {len(drawn)} values for {len(entry.outputs)} outputs")
                values.extend(drawn)
        return values

    header.lang.change(redraw_all, [header.lang, *states], outputs, api_visibility="private")
