"""Hub names: `--target meta-llama/Llama-3.1-8B-Instruct` or a drafter `org/name` resolve to a local folder through
huggingface_hub, from the local HF cache when offline (HF_HUB_OFFLINE=1) or by fetching only the JSON files (configs,
the safetensors index) when online: the static check needs no weights. Never downloads weights."""

from __future__ import annotations

import re
from pathlib import Path

from eaglewire.errors import InputError

REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
PATTERNS = ["*.json", "*.jinja", "tokenizer.model"]


def looks_like_repo_id(text: str) -> bool:
    return bool(REPO_ID.match(text)) and not Path(text).exists()


def resolve(path: Path | str, what: str) -> Path:
    """A local folder for `path`: itself when it exists, else the cached (or fetched) snapshot of a hub repo."""
    p = Path(path)
    if p.exists() or not looks_like_repo_id(str(path)):
        return p
    try:
        from huggingface_hub import constants, snapshot_download
    except ImportError:  # pragma: no cover - transformers depends on it
        raise InputError(f"{path}: not a local {what} folder, and huggingface_hub is not installed") from None
    offline = bool(constants.HF_HUB_OFFLINE)
    try:
        local = snapshot_download(str(path), allow_patterns=PATTERNS, local_files_only=offline)
    except Exception as e:  # not cached offline, no network, unknown repo: one line naming the repo
        how = (
            "not in the local Hugging Face cache (HF_HUB_OFFLINE is set)" if offline else "cannot be fetched"
        )
        raise InputError(
            f"{path}: not a local {what} folder, and the hub repo {how} ({e.__class__.__name__})"
        ) from None
    return Path(local)
