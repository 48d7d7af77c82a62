"""About, two sections: which tab demonstrates each claim of the syllabus (with a pointer to the
Claims tab, which checks them live), and the model card of the selected model (numbers read from
the loaded config and weights: explorer/about/card.py)."""
from __future__ import annotations

import re
from pathlib import Path

import gradio as gr

from explorer.about import card as model_card
from explorer.claims.registry import CLAIMS
from explorer.locales import normalize_language, text
from explorer.ui import LATEX, TabContext, bind, load_or_error, tab_id, visitor_errors

CLAIMS_FILE = Path(__file__).resolve().parents[3] / "docs" / "CLAIMS.md"

# Where each claim is shown: tab module ids, the main one first (explorer/claims/registry.py).
CLAIM_PLACES = {entry.claim: entry.places for entry in CLAIMS}
# Names of planned tabs (a tab that exists is named by its own title).
PLACE_KEYS = {
    "generate": "about.place.generate", "attention": "about.place.attention",
    "rope": "about.place.rope", "moe": "about.place.moe",
    "flash": "about.place.flash", "architecture": "about.place.architecture",
    "next_token": "about.place.next_token",
}

TITLE = "about.tab"


def claim_ids() -> list[str]:
    """Claim ids in the order of docs/CLAIMS.md (C1 ... C19)."""
    claims = CLAIMS_FILE.read_text(encoding="utf-8")
    return re.findall(r"^\|\s*(C\d+)\s*\|", claims, flags=re.MULTILINE)


def draw_claims(built_tabs: dict[str, str], lang: str) -> str:
    """Markdown table of the claims; `built_tabs` maps the ids of existing tabs to the locale
    key of their title."""
    header = (f"| {text('about.col.id', lang)} | {text('about.col.claim', lang)} | "
              f"{text('about.col.where', lang)} |\n|---|---|---|")
    rows = []
    for cid in claim_ids():
        places = []
        for place in CLAIM_PLACES.get(cid, ()):
            if place in built_tabs:  # a link the page's head script opens (explorer/ui/page/shell.py)
                named = text("about.tab_named", lang, title=text(built_tabs[place], lang))
                places.append(f"[{named}](#open={place})")
            else:
                places.append(text("about.planned", lang, place=text(PLACE_KEYS[place], lang)))
        where = text("about.list_separator", lang).join(places) or "—"
        rows.append(f"| {cid} | {text('about.c.' + cid, lang)} | {where} |")
    return "\n".join([header, *rows])


@visitor_errors
def show_card(runtime, model_name, lang, progress=gr.Progress()):
    """(card Markdown, the card's numbers, licence text, the card) of the selected model."""
    lang = normalize_language(lang)
    loaded = load_or_error(runtime, model_name, progress)
    card = model_card.run(loaded, runtime.device_label_of(loaded))
    spec = loaded.spec
    licence_text = spec.licence_text() if hasattr(spec, "licence_text") else ""
    return model_card.summary(card, lang), card.as_dict(), licence_text, card


def model_info(runtime, model_name: str) -> dict:
    """Config numbers of the named embedded model, read from the loaded model."""
    loaded = load_or_error(runtime, model_name)
    return model_card.run(loaded, runtime.device_label_of(loaded)).as_dict()


def build(ctx: TabContext) -> None:
    t = ctx.t
    built_tabs = {tab_id(m): m.TITLE for m in ctx.tabs}
    gr.Markdown(t("about.intro"))
    with ctx.section("about.section.claims"):
        gr.Markdown(t("about.claims_heading"))
        if "claims" in built_tabs:
            gr.Markdown(t("about.claims_pointer"), elem_id="claims-pointer")
        claims = gr.Markdown(draw_claims(built_tabs, "en"), elem_id="claims-table")
        with gr.Accordion(t("about.claims_full"), open=False):
            gr.Markdown(CLAIMS_FILE.read_text(encoding="utf-8"))
        claims_state = gr.State(built_tabs)
        ctx.redraw_on_language(claims_state, [claims], draw_claims)
        ctx.view("about.claims", [], state=claims_state)
    with ctx.section("about.section.card"):
        gr.Markdown(t("about.card_heading"))
        card = gr.Markdown(elem_id="model-card", latex_delimiters=LATEX)
        with gr.Accordion(t("about.raw"), open=False):
            raw = gr.JSON(show_label=False)
        with gr.Accordion(t("about.licence_full"), open=False):
            licence = gr.Markdown()
        card_state = gr.State(None)
        # No forward pass here, so these events stay out of the "model" concurrency group.
        handler = bind(show_card, ctx.runtime)
        outputs = [card, raw, licence, card_state]
        drawn = (ctx.demo.load(handler, [ctx.model, ctx.lang], outputs, api_visibility="private"),
                 ctx.model.change(handler, [ctx.model, ctx.lang], outputs, api_visibility="private"))
        ctx.redraw_on_language(card_state, [card], model_card.summary)
        ctx.view("about.card", [], event=drawn, state=card_state)
    # API only: the model card's numbers as data.
    @visitor_errors
    def info(model_name: str) -> dict:
        """Config numbers of the named embedded model, read from the loaded model."""
        return model_info(ctx.runtime, model_name)

    gr.api(info, api_name="model_info")
