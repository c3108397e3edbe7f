"""Capture target hidden states once, read them back many times.

`capture()` runs the target once per sample and stores the chosen taps (and always h_L, the pre-norm output of
the last layer, from which the target's distribution is recomputed) as safetensors shards, with a manifest that
records the target's identity and the tokenizer hash. Shards are written atomically (temp file + rename), so a
shard that exists is complete and a killed capture resumes where it stopped.

Readers give one interface, `CapturedSample` behind the `SampleSource` protocol, over: eaglewire captures and a
live target (online) here, and the training pipelines' dumps (speculators, SpecForge) in `dumps.py`.
"""

from __future__ import annotations

import hashlib
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
from eaglewire.partial import PartialTarget
from eaglewire.taps import Wiring
from eaglewire.targets import (
    LoadedTarget,
    final_norm_and_head,
    forward_taps,
    load_target,
    resolve_dtype,
)

MANIFEST = "manifest.json"
HEAD = "target_head.safetensors"
FORMAT = "eaglewire-capture/1"


@dataclass
class CapturedSample:
    input_ids: torch.Tensor  # int64 [T]
    loss_mask: torch.Tensor  # bool [T]
    hidden: dict[int, torch.Tensor]  # tap index -> [T, H]
    logits: torch.Tensor | None = None  # [T, V] when the target ran live
    final: torch.Tensor | None = None  # [T, H] the post-norm final state, when that is what a dump holds

    def finite(self, where: str) -> CapturedSample:
        """This sample, or an error naming the first tap holding NaN/Inf: a non-finite state trains to NaN and
        scores NaN logits as agreeing (argmax picks the NaN), so it must stop here, not in the numbers."""
        taps = sorted(self.hidden)
        flags = [torch.isfinite(self.hidden[t]).all() for t in taps]
        ok = torch.stack(flags).tolist() if flags else []  # one device sync for every tap
        for tap, fine in zip(taps, ok, strict=True):
            if not fine:
                raise InputError(
                    f"{where}: tap h{tap} holds NaN or Inf values (overflow in the target's forward? try --dtype "
                    "bfloat16 or float32)"
                )
        if self.final is not None and not bool(torch.isfinite(self.final).all()):
            raise InputError(f"{where}: the final hidden state holds NaN or Inf values")
        return self

    def to(self, device) -> CapturedSample:
        """The same sample with its tensors on `device`."""
        move = lambda t: None if t is None else t.to(device)  # noqa: E731
        return CapturedSample(
            self.input_ids.to(device),
            self.loss_mask.to(device),
            {t: h.to(device) for t, h in self.hidden.items()},
            move(self.logits),
            move(self.final),
        )

    def target_logits(self, head: TargetHead | None) -> torch.Tensor:
        """The target's logits [T, V] in fp32: as captured live, else the head applied to the final state."""
        if self.logits is not None:
            return self.logits.float()
        if head is None:
            raise InputError("samples without logits need the target's final norm and lm_head")
        return head(self.final if self.final is not None else self.hidden[max(self.hidden)])

    def aux(self, wiring: Wiring) -> torch.Tensor:
        """cat(taps) in the order engines concatenate them (ascending), [T, n * H]."""
        missing = [t for t in wiring.served() if t.index not in self.hidden]
        if missing:
            held = Wiring.of(sorted(self.hidden))
            raise InputError(f"the captured data has no {missing[0]} (it holds {held})")
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
    """The target's final norm + lm_head: logits from the pre-norm h_L (RMSNorm, as Llama and DeepSeek), or from
    an already normed final state (`norm_weight` None: SpecForge's `hidden_state`). The lm_head stays in the dtype
    it was stored in (a Kimi-K2.5 head is 163,840 x 7,168: 2.3 GB in bf16, twice that in fp32) and is applied in
    fp32 a block of vocabulary rows at a time."""

    ROWS = 16384  # vocabulary rows per block: 16384 x 7168 fp32 = 470 MB at Kimi-K2.5 scale

    def __init__(self, norm_weight: torch.Tensor | None, eps: float, lm_head: torch.Tensor):
        super().__init__()
        self.register_buffer("lm_head", lm_head.detach())
        self.register_buffer("norm_weight", None if norm_weight is None else norm_weight.detach().float())
        self.eps = eps

    @property
    def normed_input(self) -> bool:
        """True when the input is the post-norm final state (no norm applied here)."""
        return self.norm_weight is None

    @torch.no_grad()
    def forward(self, last: torch.Tensor) -> torch.Tensor:
        x = last.float().to(self.lm_head.device)
        if self.norm_weight is not None:
            x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
            x = self.norm_weight * x
        if self.lm_head.dtype == torch.float32:
            return x @ self.lm_head.T
        return torch.cat([x @ w.float().T for w in self.lm_head.split(self.ROWS)], dim=-1)

    @classmethod
    def of(cls, target: LoadedTarget) -> TargetHead:
        norm, head = final_norm_and_head(target.model)
        eps = getattr(norm, "variance_epsilon", None) or getattr(norm, "eps", 1e-6)
        return cls(norm.weight.detach(), float(eps), head.weight.detach())

    @classmethod
    def for_target(cls, target: LoadedTarget | PartialTarget, normed_input: bool = False) -> TargetHead:
        """The head of a loaded or a partial target (only its lm_head, and its norm unless `normed_input`, are
        read), on the target's device."""
        if isinstance(target, LoadedTarget):
            full = cls.of(target)
            head = cls(None, 0.0, full.lm_head) if normed_input else full
        else:
            lm = target.lm_head()
            head = cls(None, 0.0, lm) if normed_input else cls(*target.final_norm(), lm)
        return head.to(target.device)


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
            {"norm.weight": head.norm_weight.cpu(), "lm_head.weight": head.lm_head.cpu().contiguous()},
            metadata={"eps": str(head.eps)},
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
    *,
    device: str = "cpu",
    dtype: str = "float32",
) -> CaptureResult:
    """`eaglewire capture`: load the target on `device` in `dtype`, read the data, capture `taps` ("all" or e.g.
    h0,h3,h31); the shards store bf16 (fp32 with `fp32`) on the CPU whatever the device."""
    tgt = load_target(
        target, dtype=resolve_dtype(target, dtype), trust_remote_code=trust_remote_code, device=device
    )
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
    for n, s in enumerate(part):
        hidden, _ = forward_taps(target, s.input_ids[None], stored)
        CapturedSample(
            s.input_ids, s.loss_mask, dict(zip(stored, (h[0] for h in hidden), strict=True))
        ).finite(f"{target.path}: capture sample {n} of its shard")
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

    kind = "eaglewire"

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
        sample = CapturedSample(t["input_ids"][a:b], t["loss_mask"][a:b].bool(), hidden)
        return sample.finite(f"{self.path / f'shard-{shard:05d}.safetensors'}: sample {j}")


class OnlineSource:
    """Samples computed by a live target on demand (no disk): same interface as CaptureReader."""

    kind = "online"

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
        ).finite(f"{self.target.path}: sample {i}")
