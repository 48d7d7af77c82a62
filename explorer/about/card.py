"""The model card: the numbers of the loaded model, read from its config and its weights, and
the card in the visitor's language. The KV bytes per token are ModelConfig's formula."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Optional

from explorer.locales import text


@dataclass(frozen=True)
class ModelCard:
    name: str
    title: str
    family: str
    hidden_act: str
    n_layers: int
    layer_types: tuple          # ((layer type, count), ...) in order of first appearance
    sliding_window: Optional[int]
    d_model: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    d_ff: int
    vocab_size: int
    rope_theta: float
    rope_local_theta: Optional[float]
    tie_embeddings: bool
    parameters: int
    element_bytes: int
    kv_cache_bytes_per_token: int
    device: str
    dtype: str
    runs_on: str                # the runtime's device line
    description: str
    source_note: str
    licence: str
    notice: str

    def as_dict(self) -> dict[str, Any]:
        """The card's numbers as data (the /model_info API)."""
        keys = ("name", "title", "family", "n_layers", "sliding_window", "d_model", "n_heads",
                "n_kv_heads", "head_dim", "d_ff", "vocab_size", "rope_theta", "rope_local_theta",
                "tie_embeddings", "hidden_act", "parameters", "kv_cache_bytes_per_token", "device",
                "dtype", "source_note", "licence", "notice")
        info = {key: getattr(self, key) for key in keys}
        info["layer_types"] = dict(self.layer_types)
        return info


def run(loaded, runs_on: str = "") -> ModelCard:
    """The card of a loaded model (explorer.runtime.LoadedModel)."""
    config, spec = loaded.config, loaded.spec
    element_bytes = loaded.model.element_size()
    layer_types = tuple(Counter(list(getattr(config, "layer_types", []) or [])).items())
    return ModelCard(
        name=loaded.name, title=getattr(spec, "title", loaded.name), family=config.family,
        hidden_act=config.hidden_act, n_layers=config.n_layers, layer_types=layer_types,
        sliding_window=config.sliding_window, d_model=config.d_model, n_heads=config.n_heads,
        n_kv_heads=config.n_kv_heads, head_dim=config.head_dim, d_ff=config.d_ff,
        vocab_size=config.vocab_size, rope_theta=config.rope_theta,
        rope_local_theta=config.rope_local_theta, tie_embeddings=config.tie_embeddings,
        parameters=sum(p.numel() for p in loaded.model.parameters()), element_bytes=element_bytes,
        kv_cache_bytes_per_token=config.kv_bytes_per_token(element_bytes),
        device=str(loaded.device), dtype=str(loaded.dtype).removeprefix("torch."), runs_on=runs_on,
        description=getattr(spec, "description", ""), source_note=getattr(spec, "source_note", ""),
        licence=getattr(spec, "licence", ""), notice=getattr(spec, "notice", ""))


def _number(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return f"{value:,}" if isinstance(value, int) else str(value)


def summary(card: ModelCard, lang: str = "en") -> str:
    """The card as Markdown in `lang`: a heading, the description and a table of numbers."""
    yes_no = {True: text("about.yes", lang), False: text("about.no", lang)}
    kinds = []
    for kind, count in card.layer_types:
        label = (text("about.sliding", lang, window=card.sliding_window)
                 if kind == "sliding_attention" else text("about.full_attention", lang))
        kinds.append(f"{count} × {label}")
    rope = _number(card.rope_theta)
    if card.rope_local_theta and card.rope_local_theta != card.rope_theta:
        rope = text("about.local_theta", lang, theta=rope, local=_number(card.rope_local_theta))
    cache = text("about.cache_formula", lang, layers=card.n_layers, kv_heads=card.n_kv_heads,
                 head_dim=card.head_dim, bytes=card.element_bytes,
                 total=card.kv_cache_bytes_per_token, dtype=card.dtype)
    rows = [
        ("about.row.family", f"{card.family} ({card.hidden_act})"),
        ("about.row.layers", _number(card.n_layers)),
        ("about.row.layer_types", ", ".join(kinds)),
        ("about.row.d_model", _number(card.d_model)),
        ("about.row.heads", f"{card.n_heads} : {card.n_kv_heads}"),
        ("about.row.head_dim", _number(card.head_dim)),
        ("about.row.d_ff", _number(card.d_ff)),
        ("about.row.vocab", _number(card.vocab_size)),
        ("about.row.rope", rope),
        ("about.row.tied", yes_no[bool(card.tie_embeddings)]),
        ("about.row.params", f"{card.parameters:,} ({card.parameters / 1e6:.1f}M)"),
        ("about.row.cache", cache),
        ("about.row.runs_on", card.runs_on),
        ("about.row.weights", card.source_note),
        ("about.row.licence", card.licence),
    ]
    table = "\n".join(f"| {text(key, lang)} | {value} |" for key, value in rows)
    head = f"| {text('about.col.quantity', lang)} | {text('about.col.value', lang)} |"
    return f"### {card.title}\n{card.description}\n\n{head}\n|---|---|\n{table}"
