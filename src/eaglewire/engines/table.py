"""The table over every framework: every tap row, the frameworks, each engine's default release (from its ledger),
and the lookup from an engine spec and a target family to the rows that answer it.

New engine releases are new rows in that engine's folder and a line in its ledger, not new if-branches here."""

from __future__ import annotations

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from eaglewire.engines import registries
from eaglewire.engines.models import REGISTRY_CAPTURE, model_file
from eaglewire.engines.sglang import taps as sglang
from eaglewire.engines.trtllm import taps as trtllm
from eaglewire.engines.vllm import taps as vllm
from eaglewire.errors import InputError
from eaglewire.rules.ledger import ledger
from eaglewire.rules.row import Spec, match
from eaglewire.rules.taps import Convention, EngineSpec, RowMatch, Rule
from eaglewire.trainers import taps as trainers

ROWS: tuple[Convention, ...] = (*sglang.ROWS, *vllm.ROWS, *trtllm.ROWS, *trainers.ROWS)

ENGINES = ("sglang", "vllm", "trtllm")
FRAMEWORKS = (*ENGINES, *trainers.TRAINERS)
# The newest release read of each framework: engines from their ledgers (trtllm: repository snapshots, no release)
NEWEST = {e: ledger(e).newest for e in ("sglang", "vllm")} | trainers.NEWEST


def default_spec(engine: str) -> str:
    """The spec a command uses when the user names no release, e.g. `sglang==0.5.23`."""
    return ledger(engine).default


def parse_spec(text: str) -> EngineSpec:
    """`sglang==0.5.23`, `vllm==0.33.0`, `specforge==0.2.0`, `speculators` (no version: see `rows_for`)."""
    name, _, ver = text.strip().partition("==")
    name = name.strip().lower()
    if name not in FRAMEWORKS:
        raise InputError(
            f"unknown framework {name!r} in {text!r}: use one of {', '.join(FRAMEWORKS)} (e.g. sglang==0.5.23)"
        )
    try:
        version = Version(ver.strip()) if ver.strip() else None
    except InvalidVersion:
        raise InputError(f"cannot read version {ver!r} in {text!r} (e.g. sglang==0.5.23)") from None
    return EngineSpec(name, version)


def rows_for(
    spec: EngineSpec, family: str, architecture: str | None = None, model_type: str = ""
) -> list[RowMatch]:
    """The rows for a framework at a version and a target family (vLLM: both runners). No version given: the
    newest version read. No row covering the version: the nearest rows, marked not exact. A family the
    engine's model table does not list: its generic rows, marked `model_known=False`, unless the engine's own
    registry (given the target's `architecture`) serves it through capture code whose taps are known
    (`models.REGISTRY_CAPTURE`); either way `basis` says what the registry says."""
    model, known = model_file(spec.framework, family)
    basis = None
    if not known and architecture:
        served = registries.lookup(spec.framework, spec.version, architecture, model_type)
        if served is not None and served.serves:
            basis = f"{served.reason} [{served.source}]"
            if (spec.framework, served.capture) in REGISTRY_CAPTURE:
                model, known = REGISTRY_CAPTURE[(spec.framework, served.capture)], True
    cands = [r for r in ROWS if r.framework == spec.framework and r.covers_model(model)]
    if not cands:
        return []
    version = spec.version or (Version(NEWEST[spec.framework]) if spec.framework in NEWEST else None)
    if version is None:
        return [RowMatch(r, True, True, model, known, basis) for r in cands]
    exact = match(cands, Spec(spec.framework, version))
    if (exact and known and architecture and all(r.rule is Rule.UNSUPPORTED for r in exact)
            and not any(r.refused_at == "capture" for r in exact)):  # fmt: skip
        # the family's rows refuse it, the release's registry serves this architecture (e.g. a text-only class
        # beside the wrapper the rows were read for): the table's refusal is not this architecture's, unless the
        # rows say the class takes the ids (what the registry sees) and captures nothing
        served = registries.lookup(spec.framework, version, architecture, model_type)
        if served is not None and served.serves:
            known, basis = (
                False,
                f"{served.reason} [{served.source}], where eaglewire's {family} rows refuse it",
            )
    if exact:
        return [RowMatch(r, True, r.verified(version), model, known, basis) for r in exact]
    best = min(r.distance(version) for r in cands)
    return [RowMatch(r, False, False, model, known, basis) for r in cands if r.distance(version) == best]


def current_rows(framework: str, family: str) -> list[RowMatch]:
    """The rows of today's code: the newest version read where the table names one, else the rows open above
    (`rows_for` with no version lists every row of a framework whose versions are commits, oldest first)."""
    version = None if framework in NEWEST else Version("9999")
    return rows_for(EngineSpec(framework, version), family)


def first_serving(row: Convention) -> str | None:
    """For a row that refuses a target (Rule.UNSUPPORTED), the first release above its range whose rows of the same
    model files and runner capture for it (on its platform, where it holds on one); None where no later row does
    (or the row is not a refusal)."""
    if row.rule is not Rule.UNSUPPORTED:
        return None
    top = max(
        (Version(s.version) for s in SpecifierSet(row.versions) if s.operator in ("<", "<=")), default=None
    )
    if top is None:
        return None
    later = []
    for r in ROWS:
        if (r.framework != row.framework or r.rule is Rule.UNSUPPORTED or (r.runner or "") != (row.runner or "")
                or not set(r.models) & set(row.models)
                or (row.platform is not None and r.platform not in (None, row.platform))):  # fmt: skip
            continue
        lows = [Version(s.version) for s in SpecifierSet(r.versions) if s.operator in (">=", ">")]
        if lows and min(lows) >= top:
            later.append(min(lows))
    return str(min(later)) if later else None
