"""Hidden states a training pipeline already wrote, read back as test and training data (no target layers).

Three layouts, told apart by `detect` (facts and sources: docs/data-formats.md A1-A3):

- speculators 0.9 (`speculators generate-offline-data`; vLLM's ExampleHiddenStatesConnector writes each file with
  `save_file({"hidden_states": [T, n_slots, H], "token_ids": [T] int64})`, speculators moves it to
  `hs_<i>.safetensors`, i = the row of the prepared dataset). Slot j holds the j-th smallest id, vLLM id = tap,
  the last slot h_L pre-norm. The FP8 backend adds `hidden_states_scales` [T, 1, 1]. The loss mask is in the
  prepared dataset (`<prep>/`, files in `<prep>/hidden_states/`). No file records the ids: they come from
  `--dump-ids` or speculators' training config `run.yaml` (`target_layer_ids`; absent = its default), with L
  appended as launch_vllm.py does.
- SpecForge (`scripts/prepare_hidden_states.py`): `rows_<a>-<b>/data_<i>.ckpt` (`.ckpt.gz` compressed), each a
  `torch.save`d dict {input_ids [T], loss_mask [T], aux_hidden_state [1, T, n*H] (SGLang's capture, ascending),
  hidden_state [1, T, H] post-norm}. Read with `torch.load(weights_only=True)` only. The ids (the script's
  `--aux-hidden-states-layers`) come from `--dump-ids` and become taps by SpecForge's row of the convention
  table; the target's logits are its lm_head applied to `hidden_state` (no norm), as SpecForge's TargetHead does.
- eaglewire's own capture (`capture.CaptureReader`): the taps and the target's head are in the folder.

Every reader says which taps it holds; `require_taps` refuses a wiring outside them with that list. The target
only lends its head (and, for a drafter without one, its embedding), read by name (`partial.PartialTarget`).
"""

from __future__ import annotations

import gzip
import io
import os
import pickle
import re
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors import safe_open
from safetensors.torch import load_file

from eaglewire.capture import CapturedSample, CaptureReader, SampleSource, TargetHead
from eaglewire.data import Sample
from eaglewire.engines import table
from eaglewire.errors import InputError
from eaglewire.rules import taps as conv
from eaglewire.taps import Wiring

KINDS = ("eaglewire", "speculators", "specforge")
_HS = re.compile(r"hs_(\d+)\.safetensors")
_SF_SUFFIXES = (".ckpt", ".ckpt.gz")


def detect(path: Path | str) -> str:
    """Which pipeline wrote the dump at `path` (InputError when none of the three)."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: dump not found")
    if (path / "manifest.json").is_file():
        return "eaglewire"
    if _hs_files(path) or _hs_files(path / "hidden_states"):
        return "speculators"
    if _ckpt_files(path):
        return "specforge"
    raise InputError(
        f"{path}: not a dump eaglewire reads: expected an eaglewire capture (manifest.json), speculators offline "
        "samples (hs_<i>.safetensors) or SpecForge offline data (*.ckpt)"
    )


def _hs_files(folder: Path) -> dict[int, Path]:
    if not folder.is_dir():
        return {}
    return {int(m.group(1)): p for p in folder.iterdir() if (m := _HS.fullmatch(p.name))}


def _ckpt_files(folder: Path) -> list[Path]:
    """SpecForge's order: every feature file under `folder`, sorted by path (offline_reader.list_feature_files);
    a single file is itself."""
    if folder.is_file():
        return [folder.absolute()] if folder.name.endswith(_SF_SUFFIXES) else []
    out = []
    for root, _dirs, names in os.walk(folder):
        out += [Path(root, n).absolute() for n in names if n.endswith(_SF_SUFFIXES)]
    return sorted(out, key=str)


def require_taps(source: SampleSource, wiring: Wiring, what: str = "the wiring") -> None:
    """Refuse a wiring the source does not hold, listing what it holds."""
    held = set(source.taps.indices)
    missing = [t for t in wiring.served() if t.index not in held]
    if missing:
        where = getattr(source, "path", "the data")
        kind = getattr(source, "kind", "samples")
        raise InputError(
            f"{where}: {what} {wiring} needs {','.join(map(str, missing))}; this {kind} dump holds only "
            f"{source.taps}"
        )


@dataclass(frozen=True)
class DumpIds:
    """The layer ids a peer's dump was written with, the taps they are, and where that was read from."""

    ids: tuple[int, ...]
    taps: Wiring
    basis: str


def _row(framework: str, target) -> conv.Convention:
    """The writer's current row for this target's family: a dump does not say which release wrote it, so the
    rows of today's code apply; the basis names the row."""
    return table.current_rows(framework, target.info.family)[0].row


def _default_ids(framework: str, target) -> tuple[int, ...]:
    """The writer's default ids for this target (its table row resolved with no ids configured)."""
    return tuple(conv.resolve(_row(framework, target), {}, target.info.num_layers).ids or ())


def _ids_to_taps(framework: str, ids: tuple[int, ...], target, basis: str) -> DumpIds:
    """The writer's ids as taps, by the writer's row of the convention table (docs/conventions.md)."""
    row = _row(framework, target)
    res = conv.resolve_ids(row, ids, target.info.num_layers)
    if res.taps is None:
        raise InputError(f"--dump-ids {','.join(map(str, ids))}: {res.failure}")
    return DumpIds(ids, res.taps, f"{basis} ({row.framework} {row.rule.value})")


def speculators_ids(path: Path, target, ids: list[int] | None = None, config: Path | None = None) -> DumpIds:
    """The slot ids of speculators samples: `ids` as given (incl. L), else speculators' training config run.yaml
    (given, or beside the dump): its `target_layer_ids` (absent: speculators' default) plus L, which
    launch_vllm.py appends (--include-last-layer, on by default)."""
    L = target.info.num_layers
    if ids:
        return _ids_to_taps("speculators", tuple(ids), target, "--dump-ids")
    candidates = [config] if config else [path / "run.yaml", path.parent / "run.yaml"]
    found = next((c for c in candidates if c is not None and Path(c).is_file()), None)
    if found is None:
        hint = ",".join(map(str, (*_default_ids("speculators", target), L)))
        raise InputError(
            f"{path}: speculators samples do not record their layer ids; pass --dump-ids (the ids vLLM was "
            f"launched with, incl. {L}; speculators' default for this target is {hint}) or --dump-config run.yaml"
        )
    listed = _yaml_key(Path(found), "target_layer_ids")
    if listed is None:
        listed = list(_default_ids("speculators", target))
        basis = f"{found}: no target_layer_ids (speculators' default)"
    else:
        basis = f"{found}: target_layer_ids"
    return _ids_to_taps("speculators", (*listed, L), target, basis + f" + {L} appended by launch_vllm.py")


def _yaml_key(path: Path, key: str) -> list[int] | None:
    """`key` anywhere in a YAML mapping (run.yaml nests it under train.<group>), as a list of ints."""
    import yaml

    try:
        doc = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as e:
        raise InputError(f"{path}: cannot read the YAML ({str(e).splitlines()[0]})") from None

    def walk(node):
        if isinstance(node, dict):
            if key in node:
                return node[key]
            for v in node.values():
                found = walk(v)
                if found is not None:
                    return found
        return None

    value = walk(doc)
    if value is not None and (
        not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)
    ):
        raise InputError(f"{path}: key {key!r} must be a list of integers, found {value!r}")
    return value


class _PeerDump:
    """What both peers' readers share: the target that lends its head, the taps held, one cached head."""

    kind = ""
    normed_final = False  # the dump's final state is post-norm (SpecForge): the head is the lm_head alone

    def __init__(self, path: Path, target, held: DumpIds):
        self.path, self.target, self.ids = path, target, held
        self.taps = held.taps
        self.last_tap = target.info.num_layers
        self._head: TargetHead | None = None

    def target_head(self) -> TargetHead:
        """The target's lm_head (and final norm for a pre-norm h_L), read once by name from its checkpoint."""
        if self._head is None:
            self._head = TargetHead.for_target(self.target, normed_input=self.normed_final)
        return self._head

    def _check(self, where: Path, ids: torch.Tensor, hidden: int) -> None:
        info = self.target.info
        if hidden != info.hidden_size:
            raise InputError(f"{where}: hidden size {hidden}, the target's is {info.hidden_size}")
        if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= info.vocab_size):
            raise InputError(f"{where}: token ids outside the target's vocabulary of {info.vocab_size}")


class SpeculatorsDump(_PeerDump):
    """speculators' offline samples (see the module docstring): one `hs_<i>.safetensors` per dataset row."""

    kind = "speculators"

    def __init__(self, path: Path | str, target, held: DumpIds):
        path = Path(path)
        folder = path / "hidden_states" if _hs_files(path / "hidden_states") else path
        files = _hs_files(folder)
        if not files:
            raise InputError(f"{path}: no hs_<i>.safetensors files (speculators offline samples)")
        super().__init__(path, target, held)
        self.folder = folder
        self.rows = sorted(
            files
        )  # the dataset row of each sample (missing files are normal: failed requests)
        self.files = [files[r] for r in self.rows]
        self.loss_masks, self.mask_note = _speculators_loss_masks(folder)

    def __len__(self) -> int:
        return len(self.files)

    def _mask(self, i: int, n: int) -> torch.Tensor:
        mask = self.loss_masks.get(self.rows[i]) if self.loss_masks else None
        if mask is None or mask.numel() != n:
            return torch.ones(n, dtype=torch.bool)
        return mask

    def sample_meta(self, i: int) -> Sample:
        with safe_open(str(self.files[i]), "pt") as f:
            if "token_ids" not in f.keys():
                raise InputError(
                    f"{self.files[i]}: no token_ids (speculators samples hold token_ids and hidden_states)"
                )
            ids = f.get_tensor("token_ids").long()
        return Sample(ids, self._mask(i, ids.numel()))

    def __getitem__(self, i: int) -> CapturedSample:
        f = self.files[i]
        try:
            t = load_file(str(f))
        except Exception as e:  # a torn file: safetensors raises its own error types
            raise InputError(f"{f}: not a readable safetensors file ({str(e)[:200]})") from None
        if "hidden_states" not in t or "token_ids" not in t:
            raise InputError(f"{f}: expected keys hidden_states and token_ids, found {sorted(t)}")
        hs, ids = t["hidden_states"], t["token_ids"].long()
        if "hidden_states_scales" in t:  # the FP8 backend: dequantised as hs_connectors' FP8Transfer does
            hs = hs.to(torch.bfloat16) * t["hidden_states_scales"].to(torch.bfloat16)
        n = len(self.taps)
        if hs.dim() != 3 or hs.shape[1] != n or hs.shape[0] != ids.numel():
            raise InputError(
                f"{f}: hidden_states shape {list(hs.shape)} does not match {n} slots ({self.ids.basis}) and "
                f"{ids.numel()} tokens"
            )
        self._check(f, ids, hs.shape[2])
        hidden = {tap: hs[:, j].float() for j, tap in enumerate(self.taps.indices)}
        return CapturedSample(ids, self._mask(i, ids.numel()), hidden).finite(str(f))


def _speculators_loss_masks(hs_dir: Path) -> tuple[dict[int, torch.Tensor] | None, str]:
    """Row -> loss mask from the prepared dataset beside the hidden states (speculators' `prepare-data`)."""
    prep = hs_dir.parent
    if not (prep / "dataset_info.json").exists():
        return None, "no prepared dataset beside the samples: every token is scored"
    try:
        from datasets import load_from_disk
    except ImportError:
        return None, "the `datasets` package is not installed: every token is scored"
    ds = load_from_disk(str(prep))
    if "loss_mask" not in ds.column_names:
        raise InputError(f"{prep}: the prepared dataset has no loss_mask column")
    return {i: torch.as_tensor(m).bool() for i, m in enumerate(ds["loss_mask"])}, f"loss mask from {prep}"


class SpecForgeDump(_PeerDump):
    """SpecForge's offline data (see the module docstring): one torch.save dict per sample."""

    kind = "specforge"
    normed_final = True
    KEYS = ("input_ids", "loss_mask", "aux_hidden_state", "hidden_state")

    def __init__(self, path: Path | str, target, held: DumpIds):
        path = Path(path)
        files = _ckpt_files(path)
        if not files:
            raise InputError(f"{path}: no *.ckpt files (SpecForge offline data)")
        super().__init__(path, target, held)
        self.files = files
        self.mask_note = "loss mask from each file"

    def __len__(self) -> int:
        return len(self.files)

    def _load(self, i: int) -> dict:
        f = self.files[i]
        try:
            if f.name.endswith(".gz"):
                with gzip.open(f, "rb") as fh:
                    d = torch.load(io.BytesIO(fh.read()), map_location="cpu", weights_only=True)
            else:
                d = torch.load(f, map_location="cpu", weights_only=True, mmap=True)
        except (pickle.UnpicklingError, RuntimeError, OSError, EOFError, ValueError) as e:
            first = str(e).strip().splitlines()[0][:160] if str(e).strip() else type(e).__name__
            raise InputError(
                f"{f}: not a tensor dict torch.load(weights_only=True) accepts ({first})"
            ) from None
        if not isinstance(d, dict) or any(k not in d or not torch.is_tensor(d[k]) for k in self.KEYS):
            found = sorted(d) if isinstance(d, dict) else type(d).__name__
            raise InputError(f"{f}: expected tensors {', '.join(self.KEYS)}, found {found}")
        return d

    def sample_meta(self, i: int) -> Sample:
        d = self._load(i)
        return Sample(d["input_ids"].reshape(-1).long(), d["loss_mask"].reshape(-1).bool())

    def __getitem__(self, i: int) -> CapturedSample:
        f, d = self.files[i], self._load(i)
        ids, mask = d["input_ids"].reshape(-1).long(), d["loss_mask"].reshape(-1).bool()
        aux, final = d["aux_hidden_state"], d["hidden_state"]
        T, n, H = ids.numel(), len(self.taps), final.shape[-1]
        if aux.dim() != 3 or final.dim() != 3 or aux.shape[:2] != (1, T) or final.shape[:2] != (1, T):
            raise InputError(
                f"{f}: aux_hidden_state {list(aux.shape)} and hidden_state {list(final.shape)} must be [1, {T}, ...]"
            )
        if aux.shape[2] != n * H or mask.numel() != T:
            raise InputError(
                f"{f}: aux_hidden_state is {aux.shape[2]} wide, {n} taps ({self.ids.basis}) of {H} make {n * H}"
            )
        self._check(f, ids, H)
        chunks = aux[0].float().split(H, dim=-1)
        hidden = {tap: c for tap, c in zip(self.taps.indices, chunks, strict=True)}
        return CapturedSample(ids, mask, hidden, final=final[0].float()).finite(str(f))


def open_dump(
    path: Path | str, target=None, ids: list[int] | None = None, config: Path | None = None
) -> SampleSource:
    """The dump at `path` as a SampleSource. `target` (a PartialTarget or LoadedTarget) gives the layer count
    and, for the peers' dumps, the head; `ids` are the writer's own layer ids (`--dump-ids`)."""
    path = Path(path)
    kind = detect(path)
    if kind == "eaglewire":
        reader = CaptureReader(path)
        if target is not None:
            _same_target(reader, target)
        return reader
    if target is None:
        raise InputError(f"{path}: a {kind} dump needs the target (its config and lm_head)")
    if kind == "speculators":
        return SpeculatorsDump(path, target, speculators_ids(path, target, ids, config))
    if not ids:
        hint = ",".join(map(str, _default_ids("specforge", target)))
        raise InputError(
            f"{path}: SpecForge offline data does not record its layer ids; pass --dump-ids (the "
            f"--aux-hidden-states-layers given to prepare_hidden_states.py; its default for this target is {hint})"
        )
    return SpecForgeDump(path, target, _ids_to_taps("specforge", tuple(ids), target, "--dump-ids"))


def _same_target(reader: CaptureReader, target) -> None:
    """An eaglewire capture records its target's identity: refuse another target."""
    rec, info = reader.manifest.get("target", {}), target.info
    for key in ("num_layers", "hidden_size", "vocab_size", "tokenizer_sha256"):
        want = getattr(info, key)
        if rec.get(key) is not None and want is not None and rec.get(key) != want:
            raise InputError(
                f"{reader.path / 'manifest.json'}: captured from another target ({key} {rec.get(key)}, "
                f"{info.source} has {want})"
            )


def describe(source: SampleSource) -> dict:
    """What a report says about the data: kind, path, samples, taps held and where they were read from."""
    out = {
        "kind": getattr(source, "kind", "online"),
        "path": str(getattr(source, "path", "")),
        "samples": len(source),
        "taps": str(source.taps),
    }
    if isinstance(source, _PeerDump):
        out["ids"] = list(source.ids.ids)
        out["ids_from"] = source.ids.basis
        out["loss_mask"] = source.mask_note
    return out
