"""The draft vocabulary: build d2t/t2d from token counts, and validate a checkpoint's maps.

Every framework agrees: `target_id = draft_id + d2t[draft_id]` (offsets, zeros = identity), and `t2d` is a bool
mask over the target vocabulary with exactly `draft_vocab_size` Trues at those target ids (SpecForge
data/preprocessing.py:760-765; SGLang `hot_token_id = d2t + arange`; vLLM `arange + draft_id_to_target_id`).
The named bugs are ones users actually shipped (docs/engine-facts.md section 5, items 11-14).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import torch

from eaglewire.errors import InputError

if TYPE_CHECKING:
    from eaglewire.formats.checkpoint import DrafterCheckpoint


@dataclass
class VocabFinding:
    code: str  # stable name of the bug
    severity: str  # "problem" | "warning"
    message: str


@dataclass
class VocabReport:
    vocab_size: int
    draft_vocab_size: int
    has_d2t: bool
    has_t2d: bool
    findings: list[VocabFinding] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not any(f.severity == "problem" for f in self.findings)

    @property
    def reduced(self) -> bool:
        return self.draft_vocab_size < self.vocab_size


def build_maps(counts: torch.Tensor, draft_vocab_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Top-N target ids by (-count, id), padded with the lowest unused ids, sorted: (d2t int64, t2d bool).

    Same rule as speculators train/vocab_mapping.py:74-106 (and SpecForge's zero-frequency padding)."""
    vocab = counts.numel()
    if not 0 < draft_vocab_size <= vocab:
        raise InputError(f"draft vocab size {draft_vocab_size} must be in 1..{vocab} (the target vocabulary)")
    order = sorted(range(vocab), key=lambda i: (-int(counts[i]), i))
    chosen = torch.tensor(sorted(order[:draft_vocab_size]), dtype=torch.long)
    d2t = chosen - torch.arange(draft_vocab_size, dtype=torch.long)
    t2d = torch.zeros(vocab, dtype=torch.bool)
    t2d[chosen] = True
    return d2t, t2d


def to_target(draft_ids: torch.Tensor, d2t: torch.Tensor | None) -> torch.Tensor:
    """The one draft-to-target id map: target = draft + d2t[draft] (identity when there is no map)."""
    return draft_ids if d2t is None else draft_ids + d2t.to(torch.long)[draft_ids]


def draft_to_target(d2t: torch.Tensor | None, draft_vocab_size: int) -> torch.Tensor:
    """Target id of every draft id."""
    return to_target(torch.arange(draft_vocab_size, dtype=torch.long), d2t)


def check_vocab_tensors(ckpt: DrafterCheckpoint) -> None:
    """Structural errors that make the maps unreadable: wrong length or dtype. Raise InputError."""
    arch = ckpt.arch
    assert arch is not None
    where = ckpt.where(ckpt.weight_files[0] if ckpt.weight_files else "weights")
    d2t, t2d = ckpt.tensors.get("d2t"), ckpt.tensors.get("t2d")
    if d2t is not None:
        if d2t.dim() != 1 or d2t.numel() != arch.draft_vocab_size:
            raise InputError(
                f"{where}: d2t has length {d2t.numel()}, expected draft_vocab_size {arch.draft_vocab_size}"
            )
        if d2t.is_floating_point() or d2t.dtype == torch.bool:
            raise InputError(f"{where}: d2t must hold integer offsets, found dtype {d2t.dtype}")
    if t2d is not None and (t2d.dim() != 1 or t2d.numel() != arch.vocab_size):
        raise InputError(
            f"{where}: t2d has length {t2d.numel()}, expected the target vocab size {arch.vocab_size}"
        )


DEFAULT_MAP = (
    "the draft vocabulary is the first {n} target ids ({how}) and nothing in the checkpoint records how it was "
    "built: the signature of training code that fell back to a default map instead of token counts (verl-SpeCo "
    "llama_eagle.py:1497-1501 before PR #67 set t2d[:N] = True; NeMo Automodel PR #2447: the frequency maps lived "
    "in a side file and vLLM served the first N ids, acceptance collapsed). Right only if training used this map "
    "too: `eaglewire test` on the target, or the trainer's vocabulary-mapping file, settles it"
)


def checkpoint_vocab_report(ckpt: DrafterCheckpoint) -> VocabReport:
    """`vocab_report` for a checkpoint with its arch and weights, with how its map was built when recorded."""
    arch = ckpt.arch
    assert arch is not None
    prov = ckpt.provenance.draft_vocab if ckpt.provenance else None
    built = prov.get("built_from") if isinstance(prov, dict) else None
    return vocab_report(ckpt.tensors.get("d2t"), ckpt.tensors.get("t2d"), arch.vocab_size, arch.draft_vocab_size,
                        built_from=built if isinstance(built, str) else None)  # fmt: skip


def vocab_report(
    d2t: torch.Tensor | None,
    t2d: torch.Tensor | None,
    vocab_size: int,
    draft_vocab_size: int,
    built_from: str | None = None,
) -> VocabReport:
    """Health of the draft-vocab maps, naming known bugs. `built_from`: how the map was built, when a record says
    (eaglewire provenance); a reduced map that is the first N ids with no such record is reported."""
    rep = VocabReport(vocab_size, draft_vocab_size, d2t is not None, t2d is not None)
    add = rep.findings.append
    reduced = draft_vocab_size < vocab_size
    if draft_vocab_size > vocab_size:
        add(
            VocabFinding(
                "draft-vocab-too-large",
                "problem",
                f"draft_vocab_size {draft_vocab_size} exceeds the target vocab {vocab_size}",
            )
        )
        return rep
    if d2t is None:
        if reduced:
            add(
                VocabFinding(
                    "reduced-vocab-without-d2t",
                    "problem",
                    f"draft vocab {draft_vocab_size} < target vocab {vocab_size} but no d2t: engines map draft id i to "
                    f"target id i (vLLM initialises draft_id_to_target_id to zeros) and acceptance collapses "
                    "(NVIDIA-NeMo/Automodel#2447)",
                )
            )
        return rep
    d2t = d2t.to(torch.long)
    targets = draft_to_target(d2t, draft_vocab_size)
    absolute = (
        d2t.numel() > 1
        and bool((d2t[1:] > d2t[:-1]).all())
        and int(d2t.min()) >= 0
        and int(d2t.max()) < vocab_size
    )
    out_of_range = int(targets.min()) < 0 or int(targets.max()) >= vocab_size
    unsorted = targets.numel() > 1 and not bool((targets[1:] > targets[:-1]).all())
    if (
        absolute
        and bool((d2t == torch.arange(d2t.numel())).all())
        and not (out_of_range or unsorted or (t2d is not None and not _agrees(targets, t2d)))
    ):
        add(
            VocabFinding(
                "arange-d2t",
                "warning",
                "d2t is arange(draft_vocab_size): valid as offsets (draft id i -> target 2i), but that is what a "
                "d2t of absolute ids looks like (verl-project/verl-SpeCo#67); if the draft vocabulary is the first "
                "N target ids, d2t must be all zeros",
            )
        )
    if absolute and (out_of_range or unsorted or (t2d is not None and not _agrees(targets, t2d))):
        add(
            VocabFinding(
                "absolute-ids-as-offsets",
                "problem",
                "d2t holds absolute target ids where offsets belong (target = draft + d2t[draft]): draft id i maps to "
                "d2t[i] + i, often out of range (verl-project/verl-SpeCo#67); store d2t[i] = target_id - i",
            )
        )
        return rep
    if out_of_range:
        add(
            VocabFinding(
                "d2t-out-of-range",
                "problem",
                f"draft + d2t maps into [{int(targets.min())}, {int(targets.max())}], outside the target "
                f"vocab [0, {vocab_size})",
            )
        )
    if unsorted:
        add(
            VocabFinding(
                "d2t-not-sorted",
                "problem",
                "draft + d2t is not strictly increasing: target ids must be sorted and unique",
            )
        )
    if t2d is None:
        if reduced and not bool(d2t.any()) and built_from is None:
            add(
                VocabFinding(
                    "all-zero-d2t",
                    "warning",
                    f"d2t is all zeros with a reduced vocab: draft ids map to the first {draft_vocab_size} target ids; "
                    "right only if the drafter was trained that way (SafeAILab/EAGLE#222); "
                    + DEFAULT_MAP.format(n=draft_vocab_size, how="d2t all zeros, no t2d"),
                )
            )
        return rep
    t2d_bool = t2d.to(torch.bool)
    n_true = int(t2d_bool.sum())
    if reduced and n_true == 0:
        add(
            VocabFinding(
                "all-zero-t2d",
                "problem",
                "t2d is all False: speculators refuses to load it (model.py:172-177) and the map carries no information",
            )
        )
    elif n_true != draft_vocab_size:
        add(
            VocabFinding(
                "t2d-count",
                "problem",
                f"t2d has {n_true} True entries, expected draft_vocab_size {draft_vocab_size}",
            )
        )
    elif not (out_of_range or unsorted) and not _agrees(targets, t2d_bool):
        add(
            VocabFinding(
                "t2d-disagrees",
                "problem",
                "t2d marks other target ids than draft + d2t: the two maps disagree",
            )
        )
    elif reduced and built_from is None and not bool(d2t.any()) and not (out_of_range or unsorted):
        how = f"d2t all zeros, t2d the first {draft_vocab_size} ids"
        add(VocabFinding("default-vocab-map", "warning", DEFAULT_MAP.format(n=draft_vocab_size, how=how)))
    return rep


def _agrees(targets: torch.Tensor, t2d: torch.Tensor) -> bool:
    if int(targets.min()) < 0 or int(targets.max()) >= t2d.numel():
        return False
    marked = torch.nonzero(t2d.to(torch.bool)).flatten()
    return marked.numel() == targets.numel() and bool((marked == targets).all())


def t2d_from_d2t(d2t: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """Rebuild t2d (formats that store only d2t, e.g. the modelopt export)."""
    t2d = torch.zeros(vocab_size, dtype=torch.bool)
    t2d[draft_to_target(d2t, d2t.numel())] = True
    return t2d
