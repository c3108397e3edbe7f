"""Training and evaluation text: plain text files, folders of them, or JSONL (`{"text"}` or chat `{"messages"}`).

A sample is token ids plus a loss mask (which tokens a drafter is scored on): every token for plain text, the
assistant turns for chat data (through the tokenizer's own chat template).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from eaglewire.errors import InputError

TEXT_SUFFIXES = (".txt", ".py", ".md", ".text")


@dataclass
class Sample:
    input_ids: torch.Tensor  # int64 [T]
    loss_mask: torch.Tensor  # bool [T]
    source: str = ""


def _windows(ids: list[int], mask: list[bool], max_len: int, min_len: int, source: str) -> list[Sample]:
    out = []
    for start in range(0, len(ids), max_len):
        chunk = ids[start : start + max_len]
        if len(chunk) < min_len:
            continue
        m = mask[start : start + max_len]
        if not any(m):
            continue
        out.append(
            Sample(
                torch.tensor(chunk, dtype=torch.long), torch.tensor(m, dtype=torch.bool), f"{source}@{start}"
            )
        )
    return out


def text_samples(texts: list[tuple[str, str]], tokenizer, max_len: int, min_len: int = 16) -> list[Sample]:
    """(source, text) pairs -> consecutive max_len windows of each text (every token in the loss)."""
    out = []
    for source, text in texts:
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        out += _windows(ids, [True] * len(ids), max_len, min_len, source)
    return out


def chat_sample(messages, tokenizer, where: str) -> tuple[list[int], list[bool]]:
    if not isinstance(messages, list) or not all(
        isinstance(m, dict) and "role" in m and "content" in m for m in messages
    ):
        raise InputError(f"{where}: 'messages' must be a list of {{role, content}} objects")
    if not getattr(tokenizer, "chat_template", None):
        raise InputError(f"{where}: chat data needs a tokenizer with a chat template")
    try:
        enc = tokenizer.apply_chat_template(
            messages, tokenize=True, return_dict=True, return_assistant_tokens_mask=True
        )
    except Exception as e:  # template errors are the user's data or template
        raise InputError(f"{where}: chat template failed ({e.__class__.__name__}: {str(e)[:120]})") from None
    ids = list(enc["input_ids"])
    mask = [bool(x) for x in enc.get("assistant_masks") or []]
    if len(mask) != len(ids) or not any(mask):
        raise InputError(
            f"{where}: the chat template marks no assistant tokens (it needs {{% generation %}} blocks)"
        )
    return ids, mask


def load_samples(
    path: Path | str, tokenizer, max_len: int = 512, min_len: int = 16, limit: int | None = None
) -> list[Sample]:
    """Samples from a text file, a folder of text files (sorted), or a JSONL file."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: data not found")
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in (*TEXT_SUFFIXES, ".jsonl"))
        if not files:
            raise InputError(f"{path}: no .txt/.py/.md/.jsonl files in this folder")
    else:
        files = [path]
    out: list[Sample] = []
    for f in files:
        if f.suffix == ".jsonl":
            out += _jsonl(f, tokenizer, max_len, min_len)
        else:
            try:
                text = f.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                raise InputError(f"{f}: not UTF-8 text") from None
            out += text_samples([(str(f), text)], tokenizer, max_len, min_len)
        if limit is not None and len(out) >= limit:
            return out[:limit]
    if not out:
        raise InputError(f"{path}: no sample with at least {min_len} tokens")
    return out


def _jsonl(f: Path, tokenizer, max_len: int, min_len: int) -> list[Sample]:
    out = []
    with f.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            where = f"{f}:{n}"
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise InputError(f"{where}: not valid JSON ({e.msg})") from None
            if not isinstance(row, dict):
                raise InputError(f"{where}: each line must be a JSON object with 'text' or 'messages'")
            if "messages" in row:
                ids, mask = chat_sample(row["messages"], tokenizer, where)
            elif isinstance(row.get("text"), str):
                ids = tokenizer(row["text"], add_special_tokens=False)["input_ids"]
                mask = [True] * len(ids)
            else:
                raise InputError(f"{where}: each line needs a string 'text' or a list 'messages'")
            out += _windows(ids, mask, max_len, min_len, where)
    return out


# (tokenizer, max_len, limit) -> samples: how a job gets its data without knowing where it lives. The CLI picks
# a file (`file_samples`) or, for the bundled target, the zoo's held-out files.
SampleLoader = Callable[[Any, int, "int | None"], list[Sample]]


@dataclass(frozen=True)
class FileSamples:
    """A SampleLoader over a text file, a folder of them, or JSONL (see `load_samples`)."""

    path: Path

    def __call__(self, tokenizer, max_len: int, limit: int | None) -> list[Sample]:
        return load_samples(self.path, tokenizer, max_len=max_len, limit=limit)


def file_samples(path: Path | str) -> SampleLoader:
    return FileSamples(Path(path))
