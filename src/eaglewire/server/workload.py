"""The probe's workload: prompts built from `--data` and sent through the server's OpenAI-compatible API.

With the target's tokenizer the prompts are token ids (`/v1/completions` takes a list of ids in both engines), so
the server sees exactly the tokens the prediction walks; chat data goes through the target's chat template with
the generation prompt (the conversation up to the last assistant turn). Without a tokenizer the server tokenizes:
text through `/v1/completions`, chat through `/v1/chat/completions` (the server's template).

Every request is greedy (temperature 0) and runs to `max_tokens` (`ignore_eos`, a sampling extension both engines
accept), so the engine verifies against the target's greedy continuation of a known length: the positions the
prediction walks. SGLang is asked for its per-request speculative details (`return_spec_tokens_details`,
sglang 0.5.23 srt/entrypoints/openai/protocol.py:393, :456-467; answered in `sglext.spec_tokens_details`).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eaglewire.data import TEXT_SUFFIXES, FileSamples, SampleLoader
from eaglewire.errors import InputError
from eaglewire.server.counters import SpecCounters
from eaglewire.server.http import Http

# Every probe request is greedy: the workload and the prediction beside it are in the same regime (a sampled
# workload would need a sampled prediction, and vLLM's CPU build cannot be trusted there: docs/sampled-acceptance.md)
TEMPERATURE = 0.0
REGIME = "greedy (temperature 0): the workload sent and the walk predicted are greedy"


@dataclass(frozen=True)
class Prompt:
    ids: tuple[int, ...] | None = None  # token ids (the target's tokenizer, chat template applied)
    text: str | None = None  # plain text, tokenized by the server
    messages: tuple[dict, ...] | None = None  # chat, templated by the server
    source: str = ""


@dataclass
class Completion:
    prompt_tokens: int | None
    completion_tokens: int
    seconds: float
    spec: SpecCounters | None = None  # SGLang: the request's own speculative details


def _chat_rows(path: Path, limit: int) -> list[tuple[str, list[dict]]] | None:
    """(where, messages up to the last assistant turn) for a JSONL file of chats; None when it holds none."""
    rows = []
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise InputError(f"{path}:{n}: not valid JSON ({e.msg})") from None
            msgs = row.get("messages") if isinstance(row, dict) else None
            if not isinstance(msgs, list):
                continue
            if not all(isinstance(m, dict) and "role" in m and "content" in m for m in msgs):
                raise InputError(f"{path}:{n}: 'messages' must be a list of {{role, content}} objects")
            last = max((i for i, m in enumerate(msgs) if m["role"] == "assistant"), default=len(msgs))
            if last > 0:
                rows.append((f"{path}:{n}", msgs[:last]))
            if len(rows) >= limit:
                break
    return rows or None


def _text_files(path: Path) -> list[Path]:
    if not path.exists():
        raise InputError(f"{path}: data not found")
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in TEXT_SUFFIXES)
        if not files:
            raise InputError(f"{path}: no .txt/.py/.md files in this folder")
        return files
    return [path]


def build_prompts(data: SampleLoader | None, tokenizer: Any, n: int, prompt_len: int) -> list[Prompt]:
    """Up to `n` prompts of about `prompt_len` tokens. `tokenizer` None: the server tokenizes (text or chat)."""
    if data is None:
        raise InputError("give --data (text, folder or JSONL) for the probe's requests")
    path = data.path if isinstance(data, FileSamples) else None
    if path is not None and path.suffix == ".jsonl" and path.is_file():
        chats = _chat_rows(path, n)
        if chats is not None:
            if tokenizer is None:
                return [Prompt(messages=tuple(m), source=w) for w, m in chats]
            if not getattr(tokenizer, "chat_template", None):
                raise InputError(f"{path}: chat data, but the target's tokenizer has no chat template")
            out = []
            for where, msgs in chats:
                try:
                    ids = tokenizer.apply_chat_template(msgs, tokenize=True, add_generation_prompt=True)
                except Exception as e:  # the user's template or data
                    raise InputError(f"{where}: chat template failed ({e.__class__.__name__})") from None
                ids = ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids
                out.append(Prompt(ids=tuple(int(t) for t in ids), source=where))
            return out
    if tokenizer is None:
        if path is None:
            raise InputError("without the target's tokenizer (--target), --data must be a file or folder")
        prompts = []
        for f in _text_files(path):
            try:
                text = f.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                raise InputError(f"{f}: not UTF-8 text") from None
            width = 4 * prompt_len  # characters: a few per token
            for start in range(0, len(text) - width + 1, 2 * width):
                prompts.append(Prompt(text=text[start : start + width], source=f"{f}@{start}"))
                if len(prompts) >= n:
                    return prompts
        if not prompts:
            raise InputError(f"{path}: no text of {4 * prompt_len} characters to prompt with")
        return prompts
    samples = data(tokenizer, max(512, prompt_len), n)
    return [
        Prompt(ids=tuple(int(t) for t in s.input_ids[:prompt_len].tolist()), source=s.source) for s in samples
    ]


# SGLang's OpenAI API returns the request's speculative details from 0.5.19 (return_spec_tokens_details); before, its
# native /generate is where a request's own counts are (meta_info.spec_verify_ct from 0.4.5)
SGLANG_DETAILS_FROM = "0.5.19"


def sglang_without_details(version: str | None) -> bool:
    """An SGLang release whose OpenAI API returns no speculative details (before 0.5.19; an unknown version: no)."""
    from packaging.version import InvalidVersion, Version

    try:
        return version is not None and Version(version) < Version(SGLANG_DETAILS_FROM)
    except InvalidVersion:
        return False


def native(engine: str, version: str | None, prompt: Prompt) -> bool:
    """Whether the request goes to SGLang's native /generate: a release whose OpenAI API gives no speculative
    details, and a prompt /generate takes (token ids or text; a chat needs the server's template)."""
    return engine == "sglang" and prompt.messages is None and sglang_without_details(version)


def request(
    engine: str, model: str, prompt: Prompt, max_tokens: int, *, generate: bool = False
) -> tuple[str, dict]:
    """(path, body) of one greedy request that runs to `max_tokens` (`generate`: SGLang's native /generate)."""
    if generate:
        sampling = {"max_new_tokens": max_tokens, "temperature": TEMPERATURE, "ignore_eos": True}
        key, value = ("input_ids", list(prompt.ids)) if prompt.ids is not None else ("text", prompt.text)
        return "/generate", {key: value, "sampling_params": sampling}
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": max_tokens,
        "temperature": TEMPERATURE,
        "ignore_eos": True,
    }
    if engine == "sglang":
        body["return_spec_tokens_details"] = True
    if prompt.messages is not None:
        return "/v1/chat/completions", body | {"messages": list(prompt.messages)}
    return "/v1/completions", body | {"prompt": list(prompt.ids) if prompt.ids is not None else prompt.text}


def _sglang_details(data: dict) -> SpecCounters | None:
    """SGLang's per-request speculative details (SpecTokensDetails): verify steps, accepted drafts and the
    histogram of accepted drafts per verify, turned into vLLM's counters (accepted at position i = verifies that
    accepted more than i drafts)."""
    ext = data.get("sglext") or {}
    det = ext.get("spec_tokens_details") if isinstance(ext, dict) else None
    if isinstance(det, list):
        det = det[0] if det else None
    if not isinstance(det, dict) or not det.get("spec_verify_ct"):
        return None
    verify = float(det["spec_verify_ct"])
    hist = [int(x) for x in det.get("spec_correct_drafts_histogram") or []]
    per_pos = [float(sum(hist[i + 1 :])) for i in range(len(hist) - 1)] if hist else None
    usage = data.get("usage") or {}
    return SpecCounters(
        "sglang",
        verify,
        float(usage.get("completion_tokens") or 0),
        1.0,
        float(det.get("spec_num_proposed_drafts") or 0) or None,
        float(det.get("spec_num_correct_drafts") or 0),
        per_pos,
        {"source": "sglext.spec_tokens_details"},
    )


def _sglang_meta(meta: dict) -> SpecCounters | None:
    """A native /generate answer's meta_info: verify steps (spec_verify_ct, 0.4.5+), accepted drafts where the
    release counts them (spec_accept_token_num 0.5.8-0.5.10, spec_accepted_drafts 0.5.11, spec_num_correct_drafts
    0.5.12+) and the histogram of accepted drafts per verify (spec_correct_drafts_histogram, 0.5.12+). Without a
    count of accepted drafts the accept length is SGLang's own, completion tokens / verify steps."""
    verify = meta.get("spec_verify_ct")
    if not isinstance(verify, (int, float)) or isinstance(verify, bool) or verify <= 0:
        return None
    accepted = next((meta[k] for k in ("spec_num_correct_drafts", "spec_accepted_drafts", "spec_accept_token_num")
                     if isinstance(meta.get(k), (int, float)) and not isinstance(meta.get(k), bool)), None)  # fmt: skip
    hist = meta.get("spec_correct_drafts_histogram")
    hist = [int(x) for x in hist] if isinstance(hist, list) and hist else None
    per_pos = [float(sum(hist[i + 1 :])) for i in range(len(hist) - 1)] if hist else None
    return SpecCounters("sglang", float(verify), float(meta.get("completion_tokens") or 0), 1.0, None,
                        float(accepted) if accepted is not None else None, per_pos,
                        {"source": "meta_info (native /generate)"})  # fmt: skip


def send(
    http: Http,
    engine: str,
    model: str,
    prompt: Prompt,
    max_tokens: int,
    timeout: float,
    *,
    generate: bool = False,
) -> Completion:
    """One request (`generate`: SGLang's native /generate); a refused request is bad input naming the server's
    reason."""
    path, body = request(engine, model, prompt, max_tokens, generate=generate)
    start = time.monotonic()
    reply = http.post(path, body, timeout=timeout)
    seconds = time.monotonic() - start
    if reply.status != 200:
        detail = reply.body.strip().replace("\n", " ")[:200]
        raise InputError(f"{http.base}{path}: HTTP {reply.status} ({detail})")
    data = http.json(reply, path)
    if generate:
        data = data[0] if isinstance(data, list) and data else data
        meta = data.get("meta_info") if isinstance(data, dict) else None
        if not isinstance(meta, dict) or "completion_tokens" not in meta:
            raise InputError(f"{http.base}{path}: the answer has no meta_info.completion_tokens")
        return Completion(
            meta.get("prompt_tokens"), int(meta["completion_tokens"]), seconds, _sglang_meta(meta)
        )
    usage = data.get("usage") if isinstance(data, dict) else None
    if not isinstance(usage, dict) or "completion_tokens" not in usage:
        raise InputError(f"{http.base}{path}: the answer has no usage.completion_tokens")
    spec = _sglang_details(data) if engine == "sglang" else None
    return Completion(usage.get("prompt_tokens"), int(usage["completion_tokens"]), seconds, spec)
