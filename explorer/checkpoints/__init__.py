"""Where the weights come from: embedded checkpoints, local folders, the Hugging Face Hub.

Everything the rest of the app loads is a *checkpoint folder*: ``config.json`` plus
``*.safetensors`` (and tokenizer files). This package produces and checks such folders, one
module per part:

    registry.py      the embedded checkpoints (EMBEDDED): where each GGUF is, titles,
                     licences and the notices the UI shows
    licence_page.py  the text of a licence shipped as a saved web page (Gemma's terms)
    conversion.py    prepare_embedded: GGUF -> fp32 safetensors in <cache>/<name>/, once,
                     under a file lock, installed by an atomic rename
    validation.py    validate_folder: the file checks of models.safetensors_files (pickle
                     refused, safetensors headers against file sizes) plus notes for users
    hub.py           resolve: an embedded name, a local folder or a Hub id -> a checked folder
    extra.py         EXPLORER_EXTRA_MODELS: folders or Hub ids the operator adds to the model
                     list (model_registry, prepare_listed)
    errors.py        CheckpointError, whose messages carry no file-system paths
    progress.py      the progress(fraction, message) callable slow steps report to
    __main__.py      python -m explorer.checkpoints list | prepare [--all] [NAME ...]

Heavy imports (torch, transformers, huggingface_hub) happen inside the functions that need
them, so listing the registry or validating a folder stays instant. No Gradio here: the UI
passes a ``progress(fraction, message)`` callable, the CLI a text bar.
"""
from models.paths import cache_dir

from .conversion import FORMAT_VERSION, MARKER_FILE, is_complete, prepare_embedded
from .errors import CheckpointError, without_paths
from .extra import ExtraCheckpoint, extra_checkpoints, model_registry, prepare_listed
from .hub import resolve
from .progress import Progress
from .registry import DEFAULT_EMBEDDED, EMBEDDED, GEMMA_NOTICE, SOURCE_NOTE, EmbeddedCheckpoint
from .validation import INDEX_FILE, FolderReport, safetensors_header, validate_folder

__all__ = [
    "CheckpointError", "DEFAULT_EMBEDDED", "EMBEDDED", "EmbeddedCheckpoint", "ExtraCheckpoint",
    "FORMAT_VERSION", "extra_checkpoints", "model_registry", "prepare_listed",
    "FolderReport", "GEMMA_NOTICE", "INDEX_FILE", "MARKER_FILE", "Progress", "SOURCE_NOTE",
    "cache_dir", "is_complete", "prepare_embedded", "resolve", "safetensors_header",
    "validate_folder", "without_paths",
]
