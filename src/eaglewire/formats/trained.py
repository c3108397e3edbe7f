"""The taps a drafter was trained on, read from the checkpoint alone, and whether that is a known fact.

Known: given by the user (`--trained-on`), recorded by eaglewire's own trainer, or read from a trainer's record
whose version a verified convention row covers (a speculators training config with its `speculators_version`,
`--trained-with specforge==X`). A trainer named without a version is known when every version read agrees.
Anything else (no ids anywhere, ids whose writer is unknown, a version nobody read) is an inference: the taps are
still computed where possible, `known` is False and `unknown` says what would settle it. A missing id list never
silently means "the default".
"""

from __future__ import annotations

from dataclasses import dataclass, field

from eaglewire import conventions as conv
from eaglewire.conventions.table import TRAINERS
from eaglewire.errors import InputError
from eaglewire.formats.checkpoint import DrafterCheckpoint
from eaglewire.taps import Wiring
from eaglewire.targets import FAMILIES, GENERIC, TargetInfo

# The convention a format's own id list is written in: its primary reader/producer.
NATIVE = {"speculators": "speculators", "modelopt": "modelopt", "eagle": "sglang"}
CONFIDENCE = ("certain", "high", "medium", "low")

SETTLE = "pass --trained-on h<a>,h<b>,... or --trained-with TRAINER==VERSION"


@dataclass
class TrainedTaps:
    wiring: Wiring | None
    basis: str  # where the answer comes from
    confidence: str  # one of CONFIDENCE (for people); `known` decides verdicts
    ids: list[int] | None = None
    key: str | None = None
    row: str | None = None
    known: bool = False  # every fact behind `wiring` is known
    unknown: str | None = None  # what is not known, and what would settle it
    candidates: dict[str, str] = field(default_factory=dict)  # trainer -> the taps it would have captured


def target_from_provenance(ckpt: DrafterCheckpoint) -> TargetInfo | None:
    t = ckpt.provenance.target if ckpt.provenance else None
    if not isinstance(t, dict) or not isinstance(t.get("family"), str):
        return None
    family = t["family"] if t["family"] in FAMILIES else GENERIC
    return TargetInfo(
        architecture=t.get("architecture", ""),
        text_architecture=t.get("architecture", ""),
        model_type=t["family"],
        family=family,
        num_layers=int(t["num_layers"]),
        hidden_size=int(t["hidden_size"]),
        vocab_size=int(t["vocab_size"]),
        source="provenance",
        tokenizer_sha256=t.get("tokenizer_sha256"),
    )


def native_row(fmt: str, family: str) -> conv.Convention:
    spec = conv.parse_spec(NATIVE[fmt])
    return conv.rows_for(spec, family)[0].row


def trained_taps(
    ckpt: DrafterCheckpoint,
    target: TargetInfo,
    trained_on: Wiring | None = None,
    trained_with: str | None = None,
) -> TrainedTaps:
    """The training taps: given, recorded, or inferred from the checkpoint, with whether they are known."""
    L = target.num_layers
    if trained_on is not None:
        return TrainedTaps(trained_on.validate(L).served(), "--trained-on", "certain", known=True)
    if trained_with is not None:
        spec = conv.parse_spec(trained_with)
        if spec.framework not in TRAINERS:
            raise InputError(
                f"--trained-with {trained_with}: not a trainer eaglewire knows ({', '.join(TRAINERS)})"
            )
        return from_trainer(ckpt, target, spec, f"--trained-with {trained_with}")
    prov = ckpt.provenance
    if prov and prov.taps:
        return _from_provenance(prov, L)
    for name, cfg in ckpt.configs.items():
        if name != "config.json" and cfg.get("speculators_model_type") == "eagle3":
            spec = conv.parse_spec(_speculators_spec(cfg))
            return from_trainer(
                ckpt, target, spec, f"{name} (the speculators training config in the folder)", cfg
            )
    if ckpt.format == "speculators":
        spec = conv.parse_spec(_speculators_spec(ckpt.config))
        return from_trainer(ckpt, target, spec, "speculators format (written by the speculators library)")
    if ckpt.format == "modelopt":
        return from_trainer(ckpt, target, conv.parse_spec("modelopt"), "modelopt export")
    return _writer_unknown(ckpt, target)


def _speculators_spec(cfg: dict) -> str:
    version = cfg.get("speculators_version")
    return f"speculators=={version}" if isinstance(version, str) and version.strip() else "speculators"


def _from_provenance(prov, L: int) -> TrainedTaps:
    taps = Wiring.parse(prov.taps).validate(L).served()
    writer = prov.written_by or "eaglewire"
    if prov.taps_known is None and writer.startswith("eaglewire train"):
        return TrainedTaps(taps, "eaglewire provenance (recorded by the trainer)", "certain", known=True)
    if prov.taps_known is True:
        basis = f"eaglewire provenance ({writer}, from {prov.taps_basis or 'a known record'})"
        return TrainedTaps(taps, basis, "high", known=True)
    basis = f"eaglewire provenance ({writer}, from {prov.taps_basis or 'an unrecorded basis'})"
    return TrainedTaps(taps, basis, "low", known=False, unknown=f"{writer} recorded inferred taps; {SETTLE}")


def from_trainer(
    ckpt: DrafterCheckpoint,
    target: TargetInfo,
    spec: conv.EngineSpec,
    basis: str,
    cfg: dict | None = None,
) -> TrainedTaps:
    """The taps `spec`'s trainer captured for the ids in `cfg` (default: config.json). With a version: known when
    a verified row covers it. Without: known when every row of that trainer agrees on this target."""
    cfg = ckpt.config if cfg is None else cfg
    L = target.num_layers
    if spec.version is not None:
        matches = [m for m in conv.rows_for(spec, target.family) if m.row.role == "train"]
    else:
        model, known_model = conv.model_file(spec.framework, target.family)
        matches = [
            conv.RowMatch(r, True, True, model, known_model)
            for r in conv.ROWS
            if r.framework == spec.framework and r.role == "train" and r.covers_model(model)
        ]
    if not matches:
        raise InputError(f"{basis}: no convention row for {spec} on a {target.family} target")
    results = {m.row.key: conv.resolve(m.row, cfg, L) for m in matches}
    first = matches[0]
    res = results[first.row.key]
    taps_by_row = {k: str(r.taps) if r.taps else f"fails: {r.failure}" for k, r in results.items()}
    agree = len(set(taps_by_row.values())) == 1
    ids = list(res.ids or [])
    if not res.ok:
        return TrainedTaps(None, f"{basis}: {res.failure}", "low", ids, res.source_key, first.row.key,
                           unknown=f"{spec.framework} could not have captured these ids; {SETTLE}")  # fmt: skip
    unknown = None
    if spec.version is None and not agree:
        spread = "; ".join(f"{k}: {v}" for k, v in taps_by_row.items())
        unknown = f"the {spec.framework} version decides the taps ({spread}); pass --trained-with {spec.framework}==X"
    elif spec.version is not None and first.assumed:
        unknown = (
            f"{spec} is not a version whose source was read (row {first.row.key}, read at "
            f"{', '.join(first.row.checked)}); pass --trained-on if you know the taps"
        )
    if res.source_key is None and not first.row.records_ids and unknown is None:
        unknown = (
            f"{first.row.key} never wrote the ids it trained on into the checkpoint: with its defaults it captured "
            f"{res.taps}, with a run override anything else; {SETTLE}"
        )
    if spec.framework == "speculators" and ids and sorted(ids) == sorted(conv._default("1,L//2-1,L-4", L)):
        unknown = (
            f"ids {ids} are the output-of-layer default of SpecForge/modelopt/AngelSlim ([1, L//2-1, L-4]), not "
            "speculators' ([2, L//2, L-3]): a `speculators convert` output copies ids verbatim, so if this was "
            f"converted from such a drafter it was trained one tap higher; {SETTLE}"
        )
    if res.source_key is None:
        basis += " (no ids: the trainer's default)"
    confidence = "high" if unknown is None else "low"
    return TrainedTaps(res.taps, basis, confidence, ids, res.source_key, first.row.key,
                       known=unknown is None, unknown=unknown)  # fmt: skip


def _writer_unknown(ckpt: DrafterCheckpoint, target: TargetInfo) -> TrainedTaps:
    """An EAGLE/SGLang-format checkpoint with no record of its trainer: compute what each trainer that writes
    this format would have captured for its ids; the answer is the one they agree on, never known."""
    L = target.num_layers
    nested = conv.get_path(ckpt.config, "eagle_config.eagle_aux_hidden_state_layer_ids")
    top = conv.get_path(ckpt.config, "eagle_aux_hidden_state_layer_ids")
    candidates: dict[str, str] = {}
    for trainer in ("specforge", "modelopt", "eagle"):
        rows = [r for r in conv.ROWS if r.framework == trainer and r.role == "train"]
        model, _ = conv.model_file(trainer, target.family)
        for r in rows:
            if r.covers_model(model):
                res = conv.resolve(r, ckpt.config, L)
                candidates[r.key] = str(res.taps) if res.taps else f"fails: {res.failure}"
    sglang = conv.resolve(native_row("eagle", target.family), ckpt.config, L)
    if not nested and not top:
        unknown = (
            "the checkpoint records no layer ids and no trainer: engines feed their default taps, which is right "
            f"only if it was trained on them; {SETTLE}"
        )
        return TrainedTaps(None, "no ids and no trainer record in the checkpoint", "low", None, None, None,
                           unknown=unknown, candidates=candidates)  # fmt: skip
    wiring = sglang.taps
    basis = "eagle_config ids read the way SGLang (this format's engine) reads them"
    if not nested and top:
        vllm = conv.resolve(conv.rows_for(conv.parse_spec("vllm"), target.family)[0].row, ckpt.config, L)
        wiring, basis = (
            vllm.taps,
            "top-level ids read the way vLLM (the only engine that reads them) reads them",
        )
    unknown = f"no trainer recorded: the ids' convention is the trainer's ({_spread(candidates)}); {SETTLE}"
    return TrainedTaps(wiring, basis, "low", list(nested or top), None, None, unknown=unknown,
                       candidates=candidates)  # fmt: skip


def _spread(candidates: dict[str, str]) -> str:
    return "; ".join(f"{k} would give {v}" for k, v in candidates.items()) or "no trainer row applies"
