"""The project's own MoE checkpoints, shipped in the repo (explorer/moe/checkpoints/<name>/,
written by `python -m explorer.moe.train`): names, folders, model cards, and their entries in
the app's model list (explorer.checkpoints.model_registry). They need no conversion: the
folder is the checkpoint. Standard library only (explorer.checkpoints must not import torch)."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

CHECKPOINTS = Path(__file__).resolve().parents[1] / "moe" / "checkpoints"
NAMES = {"none": "explorer-moe-none", "aux": "explorer-moe-aux", "bias": "explorer-moe-bias",
         "dense": "explorer-dense"}
# the three routers, in the order the tab compares them
VARIANTS = ("none", "aux", "bias")
MOE_NAMES = tuple(NAMES[v] for v in VARIANTS)
DENSE_NAME = NAMES["dense"]


def folder(name: str) -> Path:
    return CHECKPOINTS / name


def card(name: str, base: Optional[Path] = None) -> Optional[dict]:
    """The figures of a shipped model's card (card.json), None for a model without one."""
    path = (base or CHECKPOINTS) / name / "card.json"
    return json.loads(path.read_text()) if path.is_file() else None


def variant_of(name: str) -> Optional[str]:
    return next((v for v, n in NAMES.items() if n == name), None)


def is_moe_folder(path: Optional[Path]) -> bool:
    """Whether a checkpoint folder's config.json names routed experts (no weights read)."""
    try:
        hf = json.loads((Path(path) / "config.json").read_text())
    except (OSError, TypeError, ValueError):
        return False
    return bool(hf.get("num_local_experts") or hf.get("num_experts") or hf.get("n_routed_experts"))


def moe_model_names(runtime) -> list[str]:
    """The MoE models the tab offers: the shipped variants in the runtime's list, then any
    other listed checkpoint whose local folder is an MoE (one added by configuration,
    EXPLORER_EXTRA_MODELS)."""
    names = [n for n in MOE_NAMES if n in runtime.names()]
    others = [n for n in runtime.names() if n not in names and n != DENSE_NAME
              and is_moe_folder(getattr(runtime.spec(n), "folder", None))]
    return names + others


@dataclass(frozen=True)
class ShippedCheckpoint:
    """A registry entry for a model whose checkpoint folder ships in the repo."""
    name: str
    title: str
    description: str
    licence: str
    notice: str
    folder: Path
    default: bool = False
    source_note: str = "trained by this project (python -m explorer.moe.train), bf16 safetensors"

    def licence_text(self) -> str:
        """The model card (corpus, licence of the corpus, training, measured figures)."""
        card_path = self.folder / "MODEL_CARD.md"
        return card_path.read_text() if card_path.is_file() else ""

    def prepare(self, progress=None) -> Path:
        """The checkpoint folder itself: nothing to convert or download."""
        return self.folder


TITLES = {"none": "Explorer MoE, no balancing", "aux": "Explorer MoE, auxiliary loss",
          "bias": "Explorer MoE, bias balancing", "dense": "Explorer dense baseline"}


def shipped_entries() -> dict[str, ShippedCheckpoint]:
    """Registry entries of the shipped models whose folders exist."""
    out = {}
    for variant, name in NAMES.items():
        path = folder(name)
        if not (path / "config.json").is_file():
            continue
        c = card(name) or {}
        s = c.get("settings", {})
        what = (f"{s.get('n_layers')} layers, d_model {s.get('d_model')}, "
                + (f"{s.get('n_experts')} experts top-{s.get('top_k')}" if variant != "dense" else "dense MLP"))
        out[name] = ShippedCheckpoint(
            name=name, title=TITLES[variant],
            description=f"A small model trained by this project on Python's standard library: {what}.",
            licence="trained here; corpus: PSF-2.0",
            notice="Trained by this project on CPython's standard library sources "
                   "(Python Software Foundation License).",
            folder=path)
    return out
