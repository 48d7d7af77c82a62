"""Whatever a user names as a checkpoint (an embedded name, a local folder, a Hugging Face Hub
id) turned into a validated checkpoint folder. huggingface_hub is optional and imported only
when a Hub id is asked for; only JSON, safetensors and tokenizer files are ever fetched."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

from .conversion import prepare_embedded
from .errors import CheckpointError, without_paths
from .progress import Progress, report
from .registry import EMBEDDED
from .validation import validate_folder

# Never *.bin/*.pt (pickle) and never *.py (remote code).
HUB_PATTERNS = ["*.json", "*.safetensors", "tokenizer*", "*.model", "*.txt"]
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")
# A Hub id pinned to one commit: "owner/name@<40 hex digits>" (a branch or tag can move).
PINNED = re.compile(r"^(?P<repo>[^@\s]+)@(?P<revision>[0-9a-f]{40})$")


def split_revision(source: str) -> tuple[str, Optional[str]]:
    """("owner/name", commit) of "owner/name@commit"; (source, None) without a pin."""
    match = PINNED.match(source)
    return (match["repo"], match["revision"]) if match else (source, None)


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
    repo_id, revision = split_revision(source)
    if not _HUB_ID.match(repo_id) or repo_id.startswith((".", "~", "/")):
        raise CheckpointError(
            f"{without_paths(source)!r} is not an embedded checkpoint ({', '.join(EMBEDDED)}), "
            "an existing folder, or a Hugging Face Hub id like 'owner/name'"
        )
    return validate_folder(_download(repo_id, progress, revision)).path


def _download(repo_id: str, progress: Optional[Progress], revision: Optional[str] = None) -> Path:
    try:
        import huggingface_hub
        from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError
    except ImportError:  # optional: the app works offline without it
        raise CheckpointError(
            f"cannot fetch {repo_id!r}: huggingface_hub is not installed; use a local folder "
            f"or an embedded checkpoint ({', '.join(EMBEDDED)})"
        ) from None

    report(progress, 0.0, f"{repo_id}: downloading from the Hugging Face Hub")
    try:
        # Nothing here passes trust_remote_code.
        folder = huggingface_hub.snapshot_download(repo_id, revision=revision,
                                                   allow_patterns=HUB_PATTERNS)
    except GatedRepoError:  # subclass of RepositoryNotFoundError: test it first
        raise CheckpointError(
            f"{repo_id!r} is gated on the Hub: accept its licence there and log in "
            "(HF_TOKEN), or use a local folder"
        ) from None
    except RepositoryNotFoundError:
        raise CheckpointError(f"{repo_id!r} was not found on the Hugging Face Hub (or is private)") from None
    except Exception as error:  # connection, DNS, timeout, offline mode, proxy, HTTP 5xx
        # huggingface_hub's messages run over several lines; the first names the cause.
        cause = without_paths((str(error).strip().splitlines() or [""])[0][:200])
        raise CheckpointError(
            f"cannot download {repo_id!r}: the Hugging Face Hub is unreachable "
            f"({type(error).__name__}: {cause}). Use a local checkpoint folder or an "
            f"embedded checkpoint ({', '.join(EMBEDDED)})"
        ) from None
    report(progress, 1.0, f"{repo_id}: downloaded")
    return Path(folder)
