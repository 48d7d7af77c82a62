"""About: what the app is, which tab demonstrates each claim of the syllabus, and the model card
of the selected model (numbers read from the loaded config and weights)."""
from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

import gradio as gr

from explorer.i18n import normalize_language
from explorer.runtime import LoadedModel
from explorer.ui import TabContext, tab_id

CLAIMS_FILE = Path(__file__).resolve().parents[2] / "docs" / "CLAIMS.md"

# Where each claim is (or will be) shown: tab module ids, or topics of tabs not written yet.
# A claim may need several places (C6: the calculator row exists, the MLA module is planned).
CLAIM_PLACES = {
    "C1": ("generate",), "C2": ("generate",), "C3": ("generate",), "C4": ("generate",),
    "C5": ("generate", "attention"), "C6": ("generate", "mla"), "C7": ("mla",),
    "C8": ("attention",), "C9": ("generate", "attention"), "C10": ("attention",),
    "C11": ("rope",), "C12": ("rope",), "C13": ("rope",), "C14": ("moe",), "C15": ("moe",),
    "C16": ("flash",), "C17": ("flash",), "C18": ("architecture",), "C19": ("architecture",),
}
# Names of planned tabs (a tab that exists is named by its own title).
PLACE_KEYS = {
    "generate": "about.place.generate", "attention": "about.place.attention",
    "rope": "about.place.rope", "mla": "about.place.mla", "moe": "about.place.moe",
    "flash": "about.place.flash", "architecture": "about.place.architecture",
}

TITLE = "about.tab"

LATEX = [{"left": "$$", "right": "$$", "display": True}, {"left": "$", "right": "$", "display": False}]


def claim_ids() -> list[str]:
    """Claim ids in the order of docs/CLAIMS.md (C1 ... C19)."""
    text = CLAIMS_FILE.read_text(encoding="utf-8")
    return re.findall(r"^\|\s*(C\d+)\s*\|", text, flags=re.MULTILINE)


def claims_table(t, lang: str, built_tabs: dict[str, str]) -> str:
    """Markdown table of the claims; `built_tabs` maps the ids of existing tabs to the
    STRINGS key of their title."""
    header = (f"| {t.text('about.col.id', lang)} | {t.text('about.col.claim', lang)} | "
              f"{t.text('about.col.where', lang)} |\n|---|---|---|")
    rows = []
    for cid in claim_ids():
        places = []
        for place in CLAIM_PLACES.get(cid, ()):
            if place in built_tabs:
                places.append(t.text("about.tab_named", lang, title=t.text(built_tabs[place], lang)))
            else:
                places.append(t.text("about.planned", lang, place=t.text(PLACE_KEYS[place], lang)))
        where = t.text("about.list_separator", lang).join(places) or "—"
        rows.append(f"| {cid} | {t.text('about.c.' + cid, lang)} | {where} |")
    return "\n".join([header, *rows])


def model_info(loaded: LoadedModel) -> dict[str, Any]:
    """The numbers of the model card, read from the loaded config and modules."""
    config = loaded.config
    spec = loaded.spec
    element_bytes = torch_dtype_bytes(loaded.dtype)
    layer_types = list(getattr(config, "layer_types", []) or [])
    return {
        "name": loaded.name,
        "title": getattr(spec, "title", loaded.name),
        "family": config.family,
        "n_layers": config.n_layers,
        "layer_types": dict(Counter(layer_types)),
        "sliding_window": config.sliding_window,
        "d_model": config.d_model,
        "n_heads": config.n_heads,
        "n_kv_heads": config.n_kv_heads,
        "head_dim": config.head_dim,
        "d_ff": config.d_ff,
        "vocab_size": config.vocab_size,
        "rope_theta": config.rope_theta,
        "rope_local_theta": config.rope_local_theta,
        "tie_embeddings": config.tie_embeddings,
        "hidden_act": config.hidden_act,
        "parameters": sum(p.numel() for p in loaded.model.parameters()),
        "kv_cache_bytes_per_token": 2 * config.n_layers * config.n_kv_heads * config.head_dim * element_bytes,
        "device": str(loaded.device),
        "dtype": str(loaded.dtype).removeprefix("torch."),
        "source_note": getattr(spec, "source_note", ""),
        "licence": getattr(spec, "licence", ""),
        "notice": getattr(spec, "notice", ""),
    }


def torch_dtype_bytes(dtype) -> int:
    import torch

    return torch.empty((), dtype=dtype).element_size()


def _number(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return f"{value:,}" if isinstance(value, int) else str(value)


def model_card(t, lang: str, info: dict[str, Any], runs_on: str, description: str) -> str:
    yes_no = {True: t.text("about.yes", lang), False: t.text("about.no", lang)}
    kinds = []
    for kind, count in info["layer_types"].items():
        label = (t.text("about.sliding", lang, window=info["sliding_window"])
                 if kind == "sliding_attention" else t.text("about.full_attention", lang))
        kinds.append(f"{count} × {label}")
    rope = _number(info["rope_theta"])
    if info["rope_local_theta"] and info["rope_local_theta"] != info["rope_theta"]:
        rope = t.text("about.local_theta", lang, theta=rope, local=_number(info["rope_local_theta"]))
    element_bytes = info["kv_cache_bytes_per_token"] // (2 * info["n_layers"] * info["n_kv_heads"] * info["head_dim"])
    cache = t.text("about.cache_formula", lang, layers=info["n_layers"], kv_heads=info["n_kv_heads"],
                   head_dim=info["head_dim"], bytes=element_bytes,
                   total=info["kv_cache_bytes_per_token"], dtype=info["dtype"])
    rows = [
        ("about.row.family", f"{info['family']} ({info['hidden_act']})"),
        ("about.row.layers", _number(info["n_layers"])),
        ("about.row.layer_types", ", ".join(kinds)),
        ("about.row.d_model", _number(info["d_model"])),
        ("about.row.heads", f"{info['n_heads']} : {info['n_kv_heads']}"),
        ("about.row.head_dim", _number(info["head_dim"])),
        ("about.row.d_ff", _number(info["d_ff"])),
        ("about.row.vocab", _number(info["vocab_size"])),
        ("about.row.rope", rope),
        ("about.row.tied", yes_no[bool(info["tie_embeddings"])]),
        ("about.row.params", f"{info['parameters']:,} ({info['parameters'] / 1e6:.1f}M)"),
        ("about.row.cache", cache),
        ("about.row.runs_on", runs_on),
        ("about.row.weights", info["source_note"]),
        ("about.row.licence", info["licence"]),
    ]
    table = "\n".join(f"| {t.text(key, lang)} | {value} |" for key, value in rows)
    head = f"| {t.text('about.col.quantity', lang)} | {t.text('about.col.value', lang)} |"
    return f"### {info['title']}\n{description}\n\n{head}\n|---|---|\n{table}"


def build(ctx: TabContext) -> None:
    t = ctx.t
    built_tabs = {tab_id(m): m.TITLE for m in ctx.tabs}
    gr.Markdown(t("about.intro"))
    gr.Markdown(t("about.claims_heading"))
    claims = gr.Markdown(claims_table(t, "en", built_tabs), elem_id="claims-table")
    with gr.Accordion(t("about.claims_full"), open=False):
        gr.Markdown(CLAIMS_FILE.read_text(encoding="utf-8"))
    gr.Markdown(t("about.card_heading"))
    card = gr.Markdown(elem_id="model-card", latex_delimiters=LATEX)
    with gr.Accordion(t("about.raw"), open=False):
        raw = gr.JSON(show_label=False)
    with gr.Accordion(t("about.licence_full"), open=False):
        licence = gr.Markdown()

    def info(model_name: str) -> dict:
        """Config numbers of the named embedded model, read from the loaded model."""
        return model_info(ctx.load(model_name))

    def card_and_licence(model_name, lang, progress=gr.Progress()):
        lang = normalize_language(lang)
        loaded = ctx.load(model_name, progress)
        spec = loaded.spec
        text = model_card(t, lang, model_info(loaded), ctx.runtime.device_label,
                          getattr(spec, "description", ""))
        licence_text = spec.licence_text() if hasattr(spec, "licence_text") else ""
        return text, model_info(loaded), licence_text

    def claims_in(lang):
        return claims_table(t, normalize_language(lang), built_tabs)

    # No forward pass here, so these events stay out of the "model" concurrency group.
    outputs = [card, raw, licence]
    ctx.demo.load(card_and_licence, [ctx.model, ctx.lang], outputs, api_visibility="private")
    ctx.model.change(card_and_licence, [ctx.model, ctx.lang], outputs, api_visibility="private")
    ctx.lang.change(card_and_licence, [ctx.model, ctx.lang], outputs, api_visibility="private")
    ctx.lang.change(claims_in, [ctx.lang], [claims], api_visibility="private")
    # API only: the model card's numbers as data.
    gr.api(info, api_name="model_info")
