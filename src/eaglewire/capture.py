"""Capture target hidden states once, read them back many times.

`capture()` runs the target once per sample and stores the chosen taps (and always h_L, the pre-norm output of
the last layer, from which the target's distribution is recomputed) as safetensors shards, with a manifest that
records the target's identity and the tokenizer hash. Shards are written atomically (temp file + rename), so a
shard that exists is complete and a killed capture resumes where it stopped.

Readers give one interface, `CapturedSample`, over: eaglewire captures, a live target (online), and the
speculators library's offline samples (`hs_<i>.safetensors` written by vLLM's extract_hidden_states).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import torch
from safetensors import safe_open
from safetensors.torch import load_file, save

from eaglewire import __version__
from eaglewire.data import Sample, SampleLoader
from eaglewire.errors import InputError
from eaglewire.jsonio import atomic_write_bytes, read_json_object, write_json
from eaglewire.taps import Wiring
from eaglewire.targets import LoadedTarget, final_norm_and_head, forward_taps, load_target

MANIFEST = "manifest.json"
HEAD = "target_head.safetensors"
FORMAT = "eaglewire-capture/1"


@dataclass
class CapturedSample:
    input_ids: torch.Tensor  # int64 [T]
    loss_mask: torch.Tensor  # bool [T]
    hidden: dict[int, torch.Tensor]  # tap index -> [T, H]
    logits: torch.Tensor | None = None  # [T, V] when the target ran live

    def to(self, device) -> CapturedSample:
        """The same sample with its tensors on `device`."""
        return CapturedSample(
            self.input_ids.to(device),
            self.loss_mask.to(device),
            {t: h.to(device) for t, h in self.hidden.items()},
            None if self.logits is None else self.logits.to(device),
        )

    def aux(self, wiring: Wiring) -> torch.Tensor:
        """cat(taps) in the order engines concatenate them (ascending), [T, n * H]."""
        missing = [t for t in wiring.served() if t.index not in self.hidden]
        if missing:
            raise InputError(f"the captured data has no {missing[0]} (it holds {sorted(self.hidden)})")
        return torch.cat([self.hidden[t.index] for t in wiring.served()], dim=-1)


class SampleSource(Protocol):
    """What capture, the standalone test and training read samples from: an eaglewire capture folder, a live
    target, or a training pipeline's dump. `taps` lists the taps it holds (always h_L); `target_head` turns h_L
    into the target's logits when samples carry none; `sample_meta` gives ids and loss mask without hidden
    states (the draft vocabulary is counted from those)."""

    taps: Wiring
    last_tap: int

    def __len__(self) -> int: ...

    def __getitem__(self, i: int) -> CapturedSample: ...

    def target_head(self) -> TargetHead: ...

    def sample_meta(self, i: int) -> Sample: ...


class TargetHead(torch.nn.Module):
    """The target's final norm + lm_head: logits from the pre-norm h_L (RMSNorm, as Llama and DeepSeek)."""

    def __init__(self, norm_weight: torch.Tensor, eps: float, lm_head: torch.Tensor):
        super().__init__()
        self.register_buffer("norm_weight", norm_weight.float())
        self.register_buffer("lm_head", lm_head.float())
        self.eps = eps

    @torch.no_grad()
    def forward(self, last: torch.Tensor) -> torch.Tensor:
        x = last.float()
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return (self.norm_weight * x) @ self.lm_head.T

    @classmethod
    def of(cls, target: LoadedTarget) -> TargetHead:
        norm, head = final_norm_and_head(target.model)
        eps = getattr(norm, "variance_epsilon", None) or getattr(norm, "eps", 1e-6)
        return cls(norm.weight.detach(), float(eps), head.weight.detach())


def data_sha256(samples: list[Sample]) -> str:
    h = hashlib.sha256()
    for s in samples:
        h.update(s.input_ids.numpy().tobytes())
        h.update(s.loss_mask.numpy().tobytes())
    return h.hexdigest()


@dataclass
class CaptureResult:
    out: Path
    shards_written: int
    shards_skipped: int
    samples: int
    tokens: int
    taps: Wiring

    def to_dict(self) -> dict:
        return {
            "out": str(self.out),
            "samples": self.samples,
            "tokens": self.tokens,
            "taps": str(self.taps),
            "shards_written": self.shards_written,
            "shards_skipped": self.shards_skipped,
        }


def capture(
    target: LoadedTarget,
    samples: list[Sample],
    out: Path | str,
    taps: Wiring | None = None,
    samples_per_shard: int = 32,
    dtype: torch.dtype = torch.bfloat16,
    progress: Callable[[int, int], None] | None = None,
) -> CaptureResult:
    """Capture `taps` (None = all, h0..h_L) for every sample into `out`. Resumable."""
    out = Path(out)
    L = target.info.num_layers
    wiring = (taps or Wiring.of(range(L + 1))).validate(L)
    stored = sorted(set(wiring.indices) | {L})
    manifest = {
        "format": FORMAT,
        "written_by": f"eaglewire {__version__}",
        "target": target.info.identity() | {"path": str(target.path)},
        "taps": str(Wiring.of(stored)),
        "last_tap": L,
        "last_tap_is": "pre-norm output of the last decoder layer (the engines' h_L)",
        "dtype": str(dtype).replace("torch.", ""),
        "samples_per_shard": samples_per_shard,
        "num_samples": len(samples),
        "data_sha256": data_sha256(samples),
    }
    if (out / MANIFEST).exists():
        old = read_json_object(out / MANIFEST, "capture manifest")
        keep = ("target", "taps", "dtype", "samples_per_shard", "num_samples", "data_sha256")
        diff = [k for k in keep if old.get(k) != manifest[k]]
        if diff:
            raise InputError(f"{out}: holds a different capture ({diff[0]} differs); use a new --out folder")
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / MANIFEST, manifest | {"complete": False})
    head = TargetHead.of(target)
    atomic_write_bytes(
        out / HEAD,
        save(
            {"norm.weight": head.norm_weight, "lm_head.weight": head.lm_head}, metadata={"eps": str(head.eps)}
        ),
    )
    n_shards = (len(samples) + samples_per_shard - 1) // samples_per_shard
    written = skipped = tokens = 0
    for i in range(n_shards):
        path = out / f"shard-{i:05d}.safetensors"
        part = samples[i * samples_per_shard : (i + 1) * samples_per_shard]
        tokens += sum(len(s.input_ids) for s in part)
        if path.exists():
            skipped += 1
        else:
            atomic_write_bytes(path, save(_shard(target, part, stored, dtype)))
            written += 1
        if progress:
            progress(i + 1, n_shards)
    write_json(out / MANIFEST, manifest | {"complete": True, "shards": n_shards, "tokens": tokens})
    return CaptureResult(out, written, skipped, len(samples), tokens, Wiring.of(stored))


def capture_job(
    target: Path | str,
    data: SampleLoader,
    out: Path | str,
    taps: str = "all",
    max_len: int = 512,
    samples_per_shard: int = 32,
    fp32: bool = False,
    trust_remote_code: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> CaptureResult:
    """`eaglewire capture`: load the target, read the data, capture `taps` ("all" or e.g. h0,h3,h31)."""
    tgt = load_target(target, trust_remote_code=trust_remote_code)
    if tgt.tokenizer is None:
        raise InputError(f"{target}: no tokenizer in the target folder")
    wiring = None if taps == "all" else Wiring.parse(taps)
    dtype = torch.float32 if fp32 else torch.bfloat16
    return capture(tgt, data(tgt.tokenizer, max_len, None), out, wiring, samples_per_shard, dtype, progress)


def _shard(
    target: LoadedTarget, part: list[Sample], stored: list[int], dtype: torch.dtype
) -> dict[str, torch.Tensor]:
    cols: dict[str, list[torch.Tensor]] = {f"h{t}": [] for t in stored}
    ids, masks, offsets = [], [], [0]
    for s in part:
        hidden, _ = forward_taps(target, s.input_ids[None], stored)
        for t, h in zip(stored, hidden, strict=True):
            cols[f"h{t}"].append(h[0].to("cpu", dtype))
        ids.append(s.input_ids)
        masks.append(s.loss_mask.to(torch.uint8))
        offsets.append(offsets[-1] + len(s.input_ids))
    tensors = {k: torch.cat(v).contiguous() for k, v in cols.items()}
    tensors.update(
        {"input_ids": torch.cat(ids), "loss_mask": torch.cat(masks), "offsets": torch.tensor(offsets)}
    )
    return tensors


class CaptureReader:
    """Samples of an eaglewire capture folder (only complete shards are ever read)."""

    def __init__(self, path: Path | str):
        self.path = Path(path)
        self.manifest = read_json_object(self.path / MANIFEST, "capture manifest")
        if self.manifest.get("format") != FORMAT:
            raise InputError(
                f"{self.path / MANIFEST}: not an eaglewire capture (format {self.manifest.get('format')!r})"
            )
        if not self.manifest.get("complete"):
            raise InputError(
                f"{self.path}: capture is incomplete; run `eaglewire capture` again to finish it"
            )
        self.taps = Wiring.parse(self.manifest["taps"])
        self.last_tap = int(self.manifest["last_tap"])
        self.per_shard = int(self.manifest["samples_per_shard"])
        self.n = int(self.manifest["num_samples"])
        self._cache: tuple[int, dict] | None = None

    def __len__(self) -> int:
        return self.n

    def target_head(self) -> TargetHead:
        path = self.path / HEAD
        with safe_open(str(path), "pt") as f:
            eps = float((f.metadata() or {}).get("eps", 1e-6))
        t = load_file(str(path))
        return TargetHead(t["norm.weight"], eps, t["lm_head.weight"])

    def _load(self, shard: int) -> dict:
        if self._cache is None or self._cache[0] != shard:
            path = self.path / f"shard-{shard:05d}.safetensors"
            if not path.exists():
                raise InputError(f"{path}: shard missing from a capture marked complete")
            self._cache = (shard, load_file(str(path)))
        return self._cache[1]

    def sample_meta(self, i: int) -> Sample:
        shard, j = divmod(i, self.per_shard)
        t = self._load(shard)
        a, b = int(t["offsets"][j]), int(t["offsets"][j + 1])
        return Sample(t["input_ids"][a:b], t["loss_mask"][a:b].bool())

    def __getitem__(self, i: int) -> CapturedSample:
        shard, j = divmod(i, self.per_shard)
        t = self._load(shard)
        a, b = int(t["offsets"][j]), int(t["offsets"][j + 1])
        hidden = {tap.index: t[f"h{tap.index}"][a:b].float() for tap in self.taps}
        return CapturedSample(t["input_ids"][a:b], t["loss_mask"][a:b].bool(), hidden)


class OnlineSource:
    """Samples computed by a live target on demand (no disk): same interface as CaptureReader."""

    def __init__(self, target: LoadedTarget, samples: list[Sample], taps: Wiring | None = None):
        self.target, self.samples = target, samples
        L = target.info.num_layers
        self.last_tap = L
        self.taps = Wiring.of(sorted(set((taps or Wiring.of(range(L + 1))).indices) | {L}))

    def __len__(self) -> int:
        return len(self.samples)

    def target_head(self) -> TargetHead:
        return TargetHead.of(self.target)

    def sample_meta(self, i: int) -> Sample:
        """Token ids and loss mask without running the target (draft-vocabulary counts need only these)."""
        return self.samples[i]

    def __getitem__(self, i: int) -> CapturedSample:
        s = self.samples[i]
        hidden, logits = forward_taps(self.target, s.input_ids[None], self.taps.indices)
        return CapturedSample(
            s.input_ids,
            s.loss_mask,
            {t: h[0] for t, h in zip(self.taps.indices, hidden, strict=True)},
            logits[0].float(),
        )


class SpeculatorsSamples:
    """The speculators library's offline data: `hs_<i>.safetensors` with `hidden_states` [T, n_slots, H]
    (slot j = the j-th smallest configured id, vLLM semantics h = id; the last slot is h_L) and `token_ids` [T].
    The loss mask comes from the prepared dataset beside it when `datasets` is installed, else every token."""

    def __init__(
        self, path: Path | str, layer_ids: list[int], num_layers: int, head: TargetHead | None = None
    ):
        self.path = Path(path)
        self.head = head
        files = [
            p for p in self.path.glob("hs_*.safetensors") if re.fullmatch(r"hs_\d+\.safetensors", p.name)
        ]
        if not files:
            raise InputError(f"{self.path}: no hs_<i>.safetensors files (speculators offline samples)")
        self.files = sorted(files, key=lambda p: int(p.stem.split("_")[1]))
        ids = sorted(set(layer_ids))
        if num_layers not in ids:
            raise InputError(
                f"{self.path}: the slot ids must include {num_layers} (h_L, the training target), got {ids}"
            )
        self.slots = ids
        self.taps = Wiring.of(ids)
        self.last_tap = num_layers
        self.loss_masks = _speculators_loss_masks(self.path)

    def __len__(self) -> int:
        return len(self.files)

    def target_head(self) -> TargetHead:
        """The dump holds no logits: the target's final norm and lm_head, given by the caller."""
        if self.head is None:
            raise InputError(
                f"{self.path}: speculators samples hold no logits; the target's final norm and lm_head are needed"
            )
        return self.head

    def sample_meta(self, i: int) -> Sample:
        s = self[i]
        return Sample(s.input_ids, s.loss_mask)

    def __getitem__(self, i: int) -> CapturedSample:
        f = self.files[i]
        t = load_file(str(f))
        if "hidden_states" not in t or "token_ids" not in t:
            raise InputError(f"{f}: expected keys hidden_states and token_ids")
        hs = t["hidden_states"]
        if hs.dim() != 3 or hs.shape[1] != len(self.slots) or hs.shape[0] != t["token_ids"].numel():
            raise InputError(
                f"{f}: hidden_states shape {list(hs.shape)} does not match {len(self.slots)} slots and "
                f"{t['token_ids'].numel()} tokens"
            )
        idx = int(f.stem.split("_")[1])
        mask = self.loss_masks.get(idx) if self.loss_masks else None
        if mask is None or mask.numel() != hs.shape[0]:
            mask = torch.ones(hs.shape[0], dtype=torch.bool)
        return CapturedSample(
            t["token_ids"].long(), mask, {s: hs[:, j].float() for j, s in enumerate(self.slots)}
        )


def _speculators_loss_masks(hs_dir: Path) -> dict[int, torch.Tensor] | None:
    prep = hs_dir.parent
    if not (prep / "dataset_info.json").exists():
        return None
    try:
        from datasets import load_from_disk
    except ImportError:
        return None
    ds = load_from_disk(str(prep))
    return {i: torch.as_tensor(row["loss_mask"]).bool() for i, row in enumerate(ds)}
