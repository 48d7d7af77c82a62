"""Checkpoints the person running the app adds to its model list by configuration: the
environment variable EXPLORER_EXTRA_MODELS, a comma-separated list of local checkpoint folders
(config.json + safetensors + tokenizer files) or Hugging Face Hub ids pinned to a commit
(owner/name@<40 hex digits>: what is downloaded is that commit's files, never whatever the
repository holds later; an unpinned id is refused), read when the Runtime is made. A visitor
only picks among the names listed; nothing a visitor types becomes a path or a Hub id here.

    EXPLORER_EXTRA_MODELS=explorer/moe/checkpoints/aux,/data/Mixtral-tiny,allenai/OLMoE-1B-7B-0924@<commit> make serve

Each entry is listed under its folder's name (a Hub id under the id itself, without the pin). The folder is
checked (validate_folder: pickle refused, safetensors headers) and a Hub id downloaded (JSON,
safetensors and tokenizer files only) when the model is first loaded, through resolve()."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Optional

from .conversion import prepare_embedded
from .errors import CheckpointError, without_paths
from .hub import resolve, split_revision
from .progress import Progress
from .registry import EMBEDDED

ENV = "EXPLORER_EXTRA_MODELS"
EXTRA_NOTE = "added by configuration (EXPLORER_EXTRA_MODELS): the checkpoint's own weights"


@dataclass(frozen=True)
class ExtraCheckpoint:
    """A configured folder or Hub id, with the fields the UI reads from a registry entry."""

    name: str          # what the model list shows: the folder's name, or the Hub id
    source: str        # the folder or Hub id as configured
    title: str
    description: str
    licence: str = "the checkpoint's own (see its folder or Hub page)"
    notice: str = ""
    source_note: str = EXTRA_NOTE
    default: bool = False
    folder: Optional[Path] = field(default=None, repr=False)  # local folders only

    def licence_text(self) -> str:
        """The folder's LICENSE file, if it has one (a Hub id's is not fetched for this)."""
        for candidate in ("LICENSE", "LICENSE.md", "LICENSE.txt"):
            if self.folder is not None and (self.folder / candidate).is_file():
                return (self.folder / candidate).read_text(encoding="utf-8", errors="replace")
        return ""

    def prepare(self, progress: Optional[Progress] = None) -> Path:
        """The checked checkpoint folder (a Hub id is downloaded the first time)."""
        return resolve(self.source, progress)


def _describe(folder: Path) -> str:
    """One line from config.json: architecture, layers, experts (no weights read)."""
    try:
        hf = json.loads((folder / "config.json").read_text())
    except (OSError, ValueError):
        return "a local checkpoint folder (its config.json is checked when it is loaded)"
    arch = (hf.get("architectures") or [hf.get("model_type", "?")])[0]
    text = f"{arch}: {hf.get('num_hidden_layers', '?')} layers, d_model {hf.get('hidden_size', '?')}"
    experts = hf.get("num_local_experts") or hf.get("num_experts")
    if experts:
        text += f", {hf.get('num_experts_per_tok', '?')} of {experts} experts per token"
    return text + "."


def extra_checkpoints(value: Optional[str] = None) -> dict[str, ExtraCheckpoint]:
    """The entries of EXPLORER_EXTRA_MODELS (or `value`), by name, in the order given.
    CheckpointError for a name listed twice or taken by an embedded checkpoint."""
    value = os.environ.get(ENV, "") if value is None else value
    out: dict[str, ExtraCheckpoint] = {}
    for entry in (part.strip() for part in value.split(",")):
        if not entry:
            continue
        local = Path(entry).expanduser()
        if local.is_dir():
            folder = local.resolve()
            spec = ExtraCheckpoint(name=folder.name, source=str(folder), title=folder.name,
                                   description=_describe(folder), folder=folder)
        else:  # a Hub id (or a folder that is missing: resolve() says which when it is loaded)
            repo_id, revision = split_revision(entry)
            if revision is None:
                raise CheckpointError(
                    f"{ENV}: {without_paths(entry)!r} is not an existing folder; a Hugging Face Hub "
                    "id must be pinned to a commit, owner/name@<40-hex commit> (a branch can "
                    "change under the server)")
            spec = ExtraCheckpoint(name=repo_id, source=entry, title=repo_id,
                                   description=f"{repo_id} from the Hugging Face Hub at commit "
                                               f"{revision[:12]} (downloaded when first loaded).")
        if spec.name in out or spec.name in EMBEDDED:
            raise CheckpointError(f"{ENV}: the name {without_paths(spec.name)!r} is listed twice "
                                  "(or is an embedded checkpoint's); rename one of the folders")
        out[spec.name] = spec
    return out


def model_registry(value: Optional[str] = None) -> dict:
    """The app's model list: the embedded checkpoints, the MoE models this project trained
    (folders shipped in explorer/moe/checkpoints), then the configured extra ones."""
    from explorer.checkpoints.shipped import shipped_entries

    return {**EMBEDDED, **shipped_entries(), **extra_checkpoints(value)}


def prepare_listed(name: str, progress: Optional[Progress] = None,
                   registry: Optional[Mapping] = None) -> Path:
    """The checkpoint folder of a listed model: an embedded one converted on first use, an
    extra one checked (or downloaded), a shipped one (explorer.checkpoints.shipped) as it is."""
    spec = (registry if registry is not None else model_registry()).get(name)
    if spec is not None and hasattr(spec, "prepare"):
        return spec.prepare(progress)
    return prepare_embedded(name, progress)
