"""The training corpus of the project's own MoE models: Python's standard library sources.

The file list is pinned in corpus_files.txt (paths relative to the stdlib folder), so the corpus
does not drift with the Python version: a listed file that is missing raises, an unlisted file is
ignored. The texts are read at run time from `sysconfig.get_paths()["stdlib"]`; nothing of the
corpus is committed. Licence of the texts: the Python Software Foundation License (PSF-2.0).

Left out of the list: `encodings/` (repetitive code-page tables), `test/` and other test suites,
`site-packages/`, `idlelib/`. Split by file: every HELD_OUT_EVERY-th file of the sorted list is
held out, so no held-out text was seen in training, not even a neighbouring line.
"""
from __future__ import annotations

import hashlib
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

LIST_FILE = Path(__file__).with_name("corpus_files.txt")
HELD_OUT_EVERY = 20
LICENCE = "Python Software Foundation License (PSF-2.0): the texts are CPython's standard library sources"
EXCLUDED_PARTS = {"encodings", "test", "tests", "idle_test", "site-packages", "idlelib", "__pycache__"}


class CorpusError(RuntimeError):
    """The pinned corpus cannot be read here (a listed file is missing)."""


def stdlib_dir() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def discover(root: Optional[Path] = None) -> list[str]:
    """The files that would be listed today (used once to write corpus_files.txt)."""
    root = root or stdlib_dir()
    out = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if EXCLUDED_PARTS & set(rel.parts[:-1]) or rel.name.startswith("test_"):
            continue
        out.append(rel.as_posix())
    return out


def pinned_files() -> list[str]:
    return [line.strip() for line in LIST_FILE.read_text().splitlines()
            if line.strip() and not line.startswith("#")]


@dataclass(frozen=True)
class Corpus:
    train: tuple[str, ...]      # texts, one per file
    held_out: tuple[str, ...]
    train_files: tuple[str, ...]
    held_out_files: tuple[str, ...]
    digest: str                 # sha256 over the file names and contents, in list order


def split(files: list[str]) -> tuple[list[str], list[str]]:
    held = [f for i, f in enumerate(files) if i % HELD_OUT_EVERY == HELD_OUT_EVERY // 2]
    held_set = set(held)
    return [f for f in files if f not in held_set], held


def load(root: Optional[Path] = None, files: Optional[list[str]] = None) -> Corpus:
    root = root or stdlib_dir()
    files = files if files is not None else pinned_files()
    missing = [f for f in files if not (root / f).is_file()]
    if missing:
        raise CorpusError(f"{len(missing)} pinned corpus files are missing under {root} "
                          f"(first: {missing[0]}); the corpus needs the CPython 3.11 standard library")
    digest = hashlib.sha256()
    texts = {}
    for f in files:
        data = (root / f).read_bytes()
        digest.update(f.encode() + b"\0" + data)
        texts[f] = data.decode("utf-8", errors="replace")
    train, held = split(files)
    return Corpus(tuple(texts[f] for f in train), tuple(texts[f] for f in held),
                  tuple(train), tuple(held), digest.hexdigest())


if __name__ == "__main__":  # python -m explorer.moe.corpus > explorer/moe/corpus_files.txt
    print("# Python standard library files of the MoE training corpus (relative to the stdlib folder)")
    print("\n".join(discover()))


# ---------------------------------------------------------------------------------------------
# The tokenizer: byte-level BPE trained on the training files only (tokenizers package).

def train_tokenizer(texts, vocab_size: int):
    """A byte-level BPE of `vocab_size` tokens (256 bytes + merges + <|endoftext|>), trained on
    `texts` deterministically (the tokenizers trainer breaks ties by pair order)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=[EOT],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(list(texts), trainer=trainer)
    return tok


EOT = "<|endoftext|>"


def encode(tok, texts) -> "list[int]":
    """All texts as one stream of ids, each file followed by <|endoftext|>."""
    eot = tok.token_to_id(EOT)
    ids: list[int] = []
    for enc in tok.encode_batch(list(texts)):
        ids.extend(enc.ids)
        ids.append(eot)
    return ids
