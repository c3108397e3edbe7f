"""What eaglewire knows per engine x release x target family x platform, and how (`eaglewire coverage`), and
docs/coverage.md built from it and from the rows themselves (`make docs` rewrites it; a test keeps it in sync).

Every cell's evidence level is computed, never typed, strongest first (`rules.row.LEVELS`):
- `engine`: a running engine's record covers the release, the platform and the family (the ledger's `observed`
  entries and the committed records of `engines/<engine>/data/observed/`), or the release's run showed that the
  platform serves no EAGLE-3 drafter beside any target (a serving-failure row for every family, observed there: the
  verdict of every family is that failure, whatever the family's own code would do);
- `model-code`: a record of the release's own model code, executed, covers them (the ledger's `observed` entries);
- `read`: a serving row for the family's engine model file, holding on the platform, was read at source in that
  release's own files (the release is in the row's `checked`, or the ledger lists the release as read for taps),
  or a serving-failure row for every family on the platform was (its `checked`);
- `none`: nothing above. A release bracketed by two read ones with identical code is `none` here even where `check`
  counts it verified by the bracket: coverage says what was looked at, release by release.

A record names the family it covers (`family`, `families`, a `target` with a family or architecture, or entries
that do); a record that names none is the real-engine tier's, which serves the bundled zoo target: its family is
read from the zoo target's config (package data, read as a file).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from functools import cache, cached_property

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from eaglewire.engines.fitted import fitting_rows
from eaglewire.engines.models import MODEL_FILES
from eaglewire.engines.observed import observed_for, records, target_ran
from eaglewire.engines.runners import PLATFORMS, RUNNERS, select_rows
from eaglewire.engines.serving import ROWS as SERVING_FAILURES
from eaglewire.engines.table import ENGINES, ROWS, parse_spec
from eaglewire.errors import InputError
from eaglewire.rules import ENGINES_DIR, engine_data
from eaglewire.rules.builds import differs
from eaglewire.rules.ledger import Release, ledger
from eaglewire.rules.row import LEVELS, Spec, match
from eaglewire.rules.taps import _is_version
from eaglewire.targets import FAMILIES, GENERIC, read_target

# the bundled zoo target (package data): the target of a record that names none (the real-engine tier serves it)
ZOO_TARGET = ENGINES_DIR.parent / "zoo" / "target" / "config.json"


@dataclass(frozen=True)
class Cell:
    """The evidence for one engine release, target family and platform."""

    engine: str
    release: str
    family: str
    platform: str
    level: str  # one of rules.row.LEVELS
    record: str | None = None  # the record behind an engine / model-code level (path under src/eaglewire/)
    rows: tuple[str, ...] = ()  # the serving rows read at this release for the family's model file

    def to_dict(self) -> dict:
        return {
            "engine": self.engine,
            "release": self.release,
            "family": self.family,
            "platform": self.platform,
            "level": self.level,
            "record": self.record,
            "rows": list(self.rows),
        }


@dataclass
class Coverage:
    cells: list[Cell]
    notes: dict[str, str] = field(default_factory=dict)  # engine -> what its levels rest on, where it matters
    # targets the table does not list, run by a release's model-code record (`generic_targets`)
    generic: list[dict] = field(default_factory=list)
    _index: dict[tuple[str, str, str, str], Cell] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._index = {(c.engine, c.release, c.family, c.platform): c for c in self.cells}

    def cell(self, engine: str, release: str, family: str, platform: str) -> Cell | None:
        return self._index.get((engine, str(Version(release)), family, platform))

    @property
    def counts(self) -> dict[str, dict[str, int]]:
        """engine -> level -> cells (each with its `total`), and the same over every engine under `total`."""
        out: dict[str, dict[str, int]] = {}
        for engine in dict.fromkeys(c.engine for c in self.cells):
            n = Counter(c.level for c in self.cells if c.engine == engine)
            out[engine] = {lv: n[lv] for lv in LEVELS} | {"total": sum(n.values())}
        n = Counter(c.level for c in self.cells)
        out["total"] = {lv: n[lv] for lv in LEVELS} | {"total": len(self.cells)}
        return out

    def to_dict(self) -> dict:
        return {
            "levels": list(LEVELS),
            "platforms": sorted(PLATFORMS),
            "rows": [c.to_dict() for c in self.cells],
            "counts": self.counts,
            "notes": self.notes,
            "generic": self.generic,
        }


def _family_of(target: object) -> str | None:
    """The family a record's `target` names: its family, or the family of its architecture / model_type."""
    if not isinstance(target, dict):
        return None
    if target.get("family") in FAMILIES:
        return target["family"]
    archs = target.get("architectures") or [target.get("architecture")]
    for name, fam in FAMILIES.items():
        if target.get("model_type") in fam.model_types or any(a in fam.architectures for a in archs):
            return name
    return None


@cache
def zoo_family() -> str:
    """The bundled zoo target's family (the real-engine tier serves it)."""
    return read_target(ZOO_TARGET).family


def record_families(rec: dict) -> frozenset[str]:
    """The target families a record covers (module docstring): its own `family` or `target`, its `families`, its
    `targets`, and those its entries (`variants`) name; none named: the zoo target's."""
    found: set[str] = set()
    lists = [x for key in ("families", "targets", "variants") for x in rec.get(key, ()) or ()
             if key != "families" or not isinstance(x, dict) or target_ran(x)]  # fmt: skip
    for entry in (rec, *lists):
        if isinstance(entry, str):
            found.add(entry)
        elif isinstance(entry, dict):
            fam = entry.get("family") if isinstance(entry.get("family"), str) else None
            fam = fam or _family_of(entry.get("target")) or (_family_of(entry) if entry is not rec else None)
            if fam:
                found.add(fam)
    return frozenset(found or {zoo_family()})


@dataclass(frozen=True)
class _Seen:
    release: str
    platform: str
    level: str
    record: str  # path under src/eaglewire/
    families: frozenset[str]
    runner: str = ""  # the model runner whose code ran ("": the platform's own)
    ran_on: str = ""  # the platform the record ran on (a model-code entry can cover another)
    # a model-code record (its decoder loop run with stand-in layers), not an engine run's
    stand_ins: bool = False
    speculates: bool = True  # an engine record: the engine got past its refusals to speculation
    draft_build: bool = False  # a draft-settings record: the release's own draft build and loader, executed
    # model-code families decided by the release's real decoder layers (it captures inside them), and by its model
    # registry refusing the architecture (no capture code ran)
    real_layers: frozenset[str] = frozenset()
    refused: frozenset[str] = frozenset()
    gated: frozenset[str] = frozenset()  # families vLLM's eagle3 model_type gate refused (its config check)
    # model-code families whose real decoder the release's own __init__ built
    built: frozenset[str] = frozenset()
    build: str = ""  # the build that ran, where its Python source is the release's (rules.builds)


def _observations(engine: str) -> list[_Seen]:
    """Every record of a running engine or of a release's model code, from the ledger and the committed records."""
    # (release, platform, record, runner) -> (level, the build that ran it where not the release: rules.builds)
    pairs: dict[tuple[str, str, str, str], tuple[str, str]] = {}
    for rel, o in ledger(engine).observed():
        pairs[(rel.version, o.platform, o.record, o.runner)] = (o.level, o.build)
    for rec in records(None):
        name, _, version = rec["engine"].partition("==")
        if name == engine and "covers" not in rec:  # a record with `covers` is entered by the ledger per item
            pairs.setdefault(
                (version, rec["platform"], f"observed/{rec['file']}", ""), (rec.get("level", "engine"), "")
            )
    out = []
    for (version, platform, record, runner), (level, build) in pairs.items():
        path = engine_data(engine, record)
        if not path.is_file():
            continue  # a ledger entry without its record is no evidence
        rec = json.loads(path.read_text())
        where = str(path.relative_to(ENGINES_DIR.parent))
        if "covers" in rec:  # a model-code record: the families it covers on that platform, for that runner
            item = next(
                (c for c in rec["covers"] if (c["platform"], c["runner"]) == (platform, runner)), None
            )
            fams = frozenset(item["families"]) if item else frozenset()
        elif level == "model-code":  # an engine record's forward, seen where the engine then failed
            fams = model_code_families(rec)
        else:
            fams = record_families(rec)
        draft_build = record.startswith("draft-settings/")
        real, refused, gated, built = _how_decided(rec, runner)
        out.append(_Seen(str(Version(version)), platform, level, where, fams, runner, rec["platform"],
                         "covers" in rec and not draft_build, rec.get("speculates", True) is not False,
                         draft_build, real, refused, gated, built, build))  # fmt: skip
    return out


# SGLang's CUDA graphs capture the configured ids from this release on (sglang PR #22836); before it, the graph
# runner's own call sets the default before its capture, so a record speaks for CUDA there only with the cases run
# as a CUDA launch makes both calls (tests/engines/model_code.py covers(): `platform: cuda`)
SGLANG_GRAPHS_AS_EAGER = Version("0.5.11")

# the engines' own words when their model registry does not list an architecture (registry.py
# _raise_for_unsupported, vLLM and SGLang alike)
REGISTRY_REFUSES = ("are not supported for now", "is not supported anymore")


def _how_decided(rec: dict, runner: str) -> tuple[frozenset[str], ...]:
    """(families its real decoder layers decided, families its registry refused, families vLLM's eagle3 model_type
    gate refused, families whose real decoder the release built) in a model-code record, for the runner, as its
    family entries say (`layers: real`; `refused`: every case the registry's error; `gate`: every case the gate's,
    run by the draft-settings record; `built`)."""
    if "covers" not in rec:
        return frozenset(), frozenset(), frozenset(), frozenset()
    fams = [f for f in rec.get("families", ()) if f.get("runner", "") == runner]
    return (frozenset(f["family"] for f in fams if f.get("layers") == "real"),
            frozenset(f["family"] for f in fams if f.get("refused")),
            frozenset(f["family"] for f in fams if f.get("gate")),
            # `built`: every architecture of the family built
            frozenset(f["family"] for f in fams) - {f["family"] for f in fams if not f.get("built")})  # fmt: skip


def model_code_families(rec: dict) -> frozenset[str]:
    """The families an engine record saw the release's model code capture for, where the engine itself did not
    serve (its `model_code` entries: the target's forward in the engine's own profile run before warm-up failed)."""
    found = {f["family"] for f in rec.get("families", ()) if f.get("model_code")}
    if any(v.get("model_code") for v in rec.get("variants", ())):
        found.add(zoo_family())
    return frozenset(found)


@cache
def _runs_on(engine: str, version: str, family: str, platform: str, runner: str) -> bool:
    """Whether a plain launch of the family at the release on the platform uses `runner` (evidence of one runner's
    code covers the cells of that runner only; "" : any)."""
    return not runner or _plain_runner(engine, version, family, platform) == runner


@cache
def _plain_runner(engine: str, version: str, family: str, platform: str) -> str | None:
    """The runner a plain launch of the family uses (select_rows), where the table has runner rows for it."""
    try:
        choice = select_rows(parse_spec(f"{engine}=={version}"), family, platform, None)
    except InputError:
        return None
    return choice[0].runner if choice else None


def _runner(release: Release, platform: str, engine: str, family: str) -> str | None:
    """The one model runner the release runs on `platform`: the one a plain launch of the family picks, else the
    ledger's (None: more than one, or no runners)."""
    runner = _plain_runner(engine, release.version, family, platform) or release.default_runner.get(platform)
    return runner if runner in RUNNERS else None


@cache
def _serving_rows(engine: str, model: str, platform: str, runner: str | None) -> tuple:
    """The engine's serving rows for a model file that hold on the platform and runner (`rules.row.match`, any
    release), each with its version set parsed once (`Row.covers` parses it per call: seconds over 5000 cells)."""
    rows = match(
        (r for r in ROWS if r.role == "serve" and r.covers_model(model)), Spec(engine, None, platform, runner)
    )
    return tuple((r, SpecifierSet(r.versions)) for r in rows if r.framework == engine)


def _read_rows(engine: str, release: Release, family: str, platform: str) -> tuple[str, ...]:
    """The serving rows for the family's model file, holding on the platform, read at this very release."""
    version = Version(release.version)
    read_here = "taps" in release.read
    rows = _serving_rows(
        engine, MODEL_FILES[engine][family], platform, _runner(release, platform, engine, family)
    )
    return tuple(
        r.key
        for r, versions in rows
        if versions.contains(version, prereleases=True)  # = r.covers(version)
        and (read_here or release.version in r.checked)
    )


@cache
def _platform_failure(engine: str, version: str, platform: str) -> tuple[str, str | None, tuple] | None:
    """(level, record, rows) where the release cannot serve any EAGLE-3 drafter on the platform beside any target
    (the same for every family: computed once per release and platform), by a serving-failure row for every target (`families` "*", no drafter or quantization condition) that this
    very release showed: the engine's run (its `observed`), the release's model code (its `model_code`), or its
    own files read (its `checked`)."""
    for row in SERVING_FAILURES:
        if not (row.engine == engine and row.platform == platform and "*" in row.families and row.covers(version)
                and not row.unless_drafter and not row.quantized_target):  # fmt: skip
            continue
        if name := row.observed_record(version):  # its own run, or a build verified to be its code
            rec = ENGINES_DIR / engine / "data" / "observed" / name
            if rec.is_file():
                return "engine", str(rec.relative_to(ENGINES_DIR.parent)), ()
        if code := row.model_code_at(version):
            return "model-code", code, ()
        if row.read_at(version):
            return "read", None, (row.name,)
    return None


def _cell(engine: str, release: Release, family: str, platform: str, seen: list[_Seen]) -> Cell:
    version = str(Version(release.version))
    failure = _platform_failure(engine, version, platform)
    for level in LEVELS[:2]:  # engine, then model-code
        hit = next(
            (s for s in seen if s.level == level and s.release == version and s.platform == platform
             and family in s.families and _runs_on(engine, version, family, platform, s.runner)), None,
        )  # fmt: skip
        if hit is not None:
            return Cell(engine, version, family, platform, level, hit.record)
        if failure is not None and failure[0] == level:
            return Cell(engine, version, family, platform, *failure)
    if failure is not None:  # read: the release's own files show that the platform serves no drafter at all
        return Cell(engine, version, family, platform, *failure)
    rows = _read_rows(engine, release, family, platform)
    return Cell(engine, version, family, platform, "read" if rows else "none", None, rows)


def _note(engine: str) -> str | None:
    """Where an engine's rows were read outside any release (TensorRT-LLM: repository snapshots)."""
    commits = sorted(
        {c for r in ROWS if r.framework == engine for c in r.checked if c and not _is_version(c)}
    )
    if commits and not ledger(engine).read("taps"):
        return (
            f"no release read: the rows were read in repository snapshots ({', '.join(commits)}), which are not "
            "releases, so every release is `none`"
        )
    return None


@cache
def coverage() -> Coverage:
    """The evidence per engine x EAGLE-3 release x target family (the engine's model table) x platform."""
    cells: list[Cell] = []
    notes: dict[str, str] = {}
    for engine in ENGINES:
        seen = _observations(engine)
        for release in (r for r in ledger(engine).releases if r.eagle3):
            for family in MODEL_FILES[engine]:
                for platform in sorted(PLATFORMS):
                    cells.append(_cell(engine, release, family, platform, seen))
        if note := _note(engine):
            notes[engine] = note
    return Coverage(cells, notes, generic_targets())


def generic_targets() -> list[dict]:
    """Every target the table does not list that a release's model-code record ran, per engine, release and runner:
    `holds` (its capture is the generic one in every case: `check` decides), `captures nothing` (`check`: fails),
    `refused` (every case ended in one error of the engine's own code, whatever the ids: `check`: fails),
    `as listed families` (every case is what the table's rows for some listed families say, `fits`: `check` decides
    from them where they answer a drafter alike), `as listed families inside the loop` (every case asking ids
    inside 1..L-1 is: likewise, for a drafter whose ids are), `differs at the edges` (only where an id list asked
    for an id outside 1..L-1 or the forward returned h0 or h_L: `check` decides for a drafter whose ids ask for
    none and who is served neither), `no forward ran` (only the capture request's failures for some ids: `check`:
    unverified, naming the record) or `differs` (`check`: unverified, naming the record)."""
    out = []
    for engine in ENGINES:
        for (release, arch, runner), run in sorted(_generic_runs(engine).items(),
                                                   key=lambda kv: (Version(kv[0][0]), kv[0][1:])):  # fmt: skip
            outcome = ("holds" if run.holds else "captures nothing" if run.captures_nothing
                       else "refused" if run.refused else "no forward ran" if not run.forward_ran
                       else "as listed families" if run.fits
                       else "as listed families inside the loop" if run.fits_inside
                       else "differs at the edges" if run.edges_only else "differs")  # fmt: skip
            out.append({"engine": engine, "release": release, "architecture": arch, "runner": runner,
                        "outcome": outcome, "cases": run.claims, "agree": run.agree,
                        "fits": list(run.fits or run.fits_inside), "record": run.record})  # fmt: skip
    return out


HEAD = """# What eaglewire knows, and what it assumes

Built from the convention table (`src/eaglewire/engines/`) and the engines' release ledgers by `make docs` (the
same data as `eaglewire coverage --json`); do not edit by hand.

A verdict is `ok` only when its row was read at source for the engine version asked (between the oldest and newest
release read, bracketed by identical code) and the target family is in the engine's table. Versions outside a
row's read range, rows read only in repository snapshots (no release), and families not listed are applied as
**assumed**, and the verdict is `unverified`. Facts and sources: docs/conventions.md.

Per row below, strongest first: **observed** (a running engine served the zoo target over a matrix of id
variants and captured exactly the taps the row predicts, or failed where it says: tests/real_engine, the record in
`src/eaglewire/engines/<engine>/data/observed/`), **verified** (read at source in the releases listed), **assumed**.
Per release and family, at the end: the evidence levels of `eaglewire coverage` (engine, model-code, read, none);
`eaglewire matrix` shows the level behind each drafter's verdict at each release.
"""

SYMBOL = {"engine": "**E**", "model-code": "**M**", "read": "R", "none": "·"}

EVIDENCE_HEAD = """## Evidence per release and family

One cell per engine x EAGLE-3 release (every one on the package index) x target family (the engine's model table)
x platform (`eaglewire coverage --json` lists them). Levels, strongest first: **E** `engine` (a running engine's
record covers the release, platform and family, or showed that the release serves no drafter on that platform beside
any target), **M** `model-code` (the release's own model code, executed), R
`read` (a serving row for the family's model file was read at source in that very release), · `none` (nothing:
a release between two read ones is applied through their rows, but was not itself looked at). A grid cell shows
one symbol when both platforms agree, else `cpu / cuda`.
"""


def _symbol(cells: list[Cell]) -> str:
    by = {c.platform: SYMBOL[c.level] for c in cells}
    return by["cpu"] if len(set(by.values())) == 1 else f"{by['cpu']} / {by['cuda']}"


def evidence_markdown(cov: Coverage | None = None) -> str:
    cov = cov or coverage()
    counts = cov.counts
    lines = [
        EVIDENCE_HEAD,
        "| | " + " | ".join(LEVELS) + " | cells |",
        "|---" * (len(LEVELS) + 2) + "|",
    ]
    for engine, n in counts.items():
        name = "**all**" if engine == "total" else engine
        lines.append(f"| {name} | " + " | ".join(str(n[lv]) for lv in LEVELS) + f" | {n['total']} |")
    lines.append("")
    records = sorted({c.record for c in cov.cells if c.record})
    if records:
        lines += ["Records behind **E** and **M**: " + ", ".join(f"`src/eaglewire/{r}`" for r in records), ""]
    for engine in dict.fromkeys(c.engine for c in cov.cells):
        cells = [c for c in cov.cells if c.engine == engine]
        families = list(dict.fromkeys(c.family for c in cells))
        lines += [f"### {engine}", ""]
        if engine in cov.notes:
            lines += [f"{engine}: {cov.notes[engine]}.", ""]
        lines += ["| release | " + " | ".join(families) + " |", "|---" * (len(families) + 1) + "|"]
        grid: dict[tuple[str, str], list[Cell]] = {}
        for c in cells:
            grid.setdefault((c.release, c.family), []).append(c)
        for release in dict.fromkeys(c.release for c in cells):
            row = [_symbol(grid[(release, f)]) for f in families]
            lines.append(f"| {release} | " + " | ".join(row) + " |")
        lines.append("")
    return "\n".join(lines)


GENERIC_HEAD = """## Targets the table does not list

Every text-generating target a release's registry serves with EAGLE-3 but eaglewire's table does not list (or a
listed family's class its rows do not name, such as SGLang 0.4.5-0.4.8's Llama4ForCausalLM) is run by that
release's model-code record (its capture request and decoder loop, on the same id lists as the families),
beside the generic capture `check` would otherwise assume. Per engine, the newest release with such runs: **holds**
(its capture is the generic one in every case: `check` decides from the record), **captures nothing** (`check`
says `fails`: no config value helps), **as listed families** (every case is what the table's rows for some listed
families say, such as a decoder borrowed from DeepSeek or Qwen: `check` serves the drafter by those rows where they
answer it alike), **as listed families inside the loop** (the same for every case asking ids inside 1..L-1, the
decoder differing from every row at id 0 or id L: decided so for a drafter whose ids are inside, else `unverified`),
**differs at the edges** (it captured otherwise only where an id list asked for
an id outside 1..L-1, such as id 0 crashing or id L never captured, or where the forward returned h0 or h_L, such as
SGLang's Gemma decoders appending the last layer's output after their loop: `check` decides for a drafter whose ids
ask for none and who is served neither, and otherwise stays `unverified` naming the record), **no forward ran** (its claims are
only the capture request failing for some ids: `check` stays `unverified` and names the record), **differs** (`check`
stays `unverified` and names the record). A target the probe could not build is not listed (the record's `not_run` says why): `check` assumes its
generic capture.
"""


def generic_markdown(cov: Coverage | None = None) -> str:
    cov = cov or coverage()
    lines = [GENERIC_HEAD]
    for engine in dict.fromkeys(g["engine"] for g in cov.generic):
        mine = [g for g in cov.generic if g["engine"] == engine]
        newest = max((g["release"] for g in mine), key=Version)
        releases = len({g["release"] for g in mine})
        lines += [f"### {engine} {newest} ({releases} release{'s' if releases > 1 else ''} with such runs)", "",
                  "| architecture | runner | outcome | cases as the generic capture |", "|---|---|---|---|"]  # fmt: skip
        for g in (g for g in mine if g["release"] == newest):
            fams = sorted({m for r in ROWS if r.key in g["fits"] for m in r.models})
            outcome = g["outcome"] + (f" ({', '.join(fams)})" if fams else "")
            lines.append(
                f"| {g['architecture']} | {g['runner'] or '-'} | {outcome} | {g['agree']}/{g['cases']} |"
            )
        lines.append("")
    return "\n".join(lines)


def markdown() -> str:
    lines = [HEAD]
    for framework in dict.fromkeys(r.framework for r in ROWS):
        lines += [
            f"## {framework}",
            "",
            "| row | versions | model files | rule | read at | status |",
            "|---|---|---|---|---|---|",
        ]
        for r in (r for r in ROWS if r.framework == framework):
            read = [v for v in r.checked if _is_version(v)]
            if r.verified_all:
                status = "verified (one snapshot covers the row)"
            elif read:
                bounded = "<" in r.versions or r.versions.startswith("==")
                status = f"verified {read[0]}..{read[-1]}" + ("" if bounded else "; newer assumed")
            else:
                status = "assumed (no release read)"
            seen = observed_for(r)
            if seen:
                o = seen[0]
                ran = f"{o.platform.upper()}, {o.runner} runner" if o.runner else o.platform.upper()
                status = (
                    f"observed running ({o.framework} {o.version} on the {ran}: "
                    f"{o.variants} id variants, {o.failures} failing as predicted); {status}"
                )
            runner = f" ({r.runner})" if r.runner else ""
            rule = (r.unsupported and "no EAGLE-3") or r.rule.value
            lines.append(
                f"| {r.key}{runner} | `{r.versions or 'any'}` | {', '.join(r.models)} | {rule} | "
                f"{', '.join(r.checked[:3])}{' ...' if len(r.checked) > 3 else ''} | {status} |"
            )
        lines.append("")
    lines.append(evidence_markdown())
    lines.append(generic_markdown())
    return "\n".join(lines)


@cache
def _seen(engine: str) -> tuple[_Seen, ...]:
    return tuple(_observations(engine))


def executed_at(engine: str, version: str, family: str, runner: str | None) -> str | None:
    """A record of the release's own code run for the family by the row's runner (its model code executed for that
    runner, or a running engine, whose CPU runner is V1's), or None: where one exists, the row's rule at that
    release was seen, not assumed from the releases read around it."""
    version = str(Version(version))
    for s in _seen(engine):
        same = (s.runner or "") == (runner or "") or (s.level == "engine" and runner in (None, "v1"))
        if s.release == version and s.level in LEVELS[:2] and family in s.families and same:
            if s.level == "engine" and not s.speculates:
                continue  # the engine refused before any capture: its run says nothing of the ids
            return s.record
    return None


# what a verdict on a target whose capture differed from the generic one at the edges rests on
EDGES = (
    "it captured otherwise only where an id list asked for an id outside 1..L-1 or where it returned h0 or h_L, "
    "which this drafter asks for none of and is served neither"
)


def evidence(
    engine: str,
    version: str,
    family: str,
    platform: str | None,
    read: bool,
    generic: GenericRun | None = None,
    architecture: str | None = None,
    row: str | None = None,
) -> dict[str, str]:
    """The evidence a verdict on the served taps rests on, strongest first: a running engine of that release on
    that platform showed it for the family (`engine`), the release's model code did (`model-code`; for an
    architecture the table does not list, its own record `generic`, passed where it settles the verdict:
    `GenericRun.settles`, or the `row` serving it is one every case of that run fits; a running engine's record
    that served that `architecture` is `engine`), its capture code was read (`read`: `read` says the row covers a
    release read), or nothing (`none`: assumed)."""
    version = str(Version(version))
    ran = (
        _engine_ran(engine).get((version, platform or "", architecture or "")) if family == GENERIC else None
    )
    if ran is not None:  # a running engine of that release served this very architecture, as the verdict says
        return {
            "level": "engine",
            "basis": f"observed: {engine} {version} {platform.upper()} engine run ({ran})",
        }
    if generic is not None:
        where = platform or "cuda"
        # what a model-code record covers (tests/engines/model_code.py covers())
        eager = engine == "sglang" and (where == "cpu" or Version(version) >= SGLANG_GRAPHS_AS_EAGER)
        if generic.holds or generic.captures_nothing or generic.refused:
            how = ""
        elif row in generic.fits:
            how = f"; it captured as row {row} says in every case"
        elif row in generic.fits_inside:
            how = f"; it captured as row {row} says in every case asking ids inside 1..L-1, as this drafter's are"
        else:
            how = f"; {EDGES}"
        if eager or (engine == "vllm" and (where == "cuda" or generic.cpu)):
            return {"level": "model-code", "basis": (
                f"observed: {engine} {version} {where.upper()} model code, executed (capture request and decoder "
                f"loop for this architecture, which the table does not list{how}) ({generic.record})")}  # fmt: skip
    for level in LEVELS[:2]:
        # a verdict without a platform is worked out for CUDA: model code executed for CUDA's runner covers it
        where = platform or ("cuda" if level == "model-code" else None)
        hit = next(
            (s for s in _seen(engine) if s.level == level and s.release == version and s.platform == where
             and family in s.families and _runs_on(engine, version, family, where, s.runner)), None,
        )  # fmt: skip
        if hit is not None:
            kind = "engine" if hit.runner == "v0" else "runner"  # V0 is vLLM's old engine, not a model runner
            runner = f"the {hit.runner.upper()} {kind}'s " if hit.runner else ""
            if level == "model-code" and where == "cpu" and hit.runner in ("v1", "mrv2") and engine == "vllm":
                runner = f"the CPU build's {hit.runner.upper()} runner (the GPU runner's request): "
            # SGLang before 0.5.11 on CUDA: the record's cases as a CUDA launch makes both calls (`platform: cuda`)
            graphs = level == "model-code" and where == "cuda" and engine == "sglang" \
                and Version(version) < SGLANG_GRAPHS_AS_EAGER  # fmt: skip
            loop = "the CUDA-graph runner's own capture call, then the model runner's " if graphs else runner
            if level == "engine":
                changed = differs(engine, hit.build or version)
                what = "engine run" + (
                    f" of build {hit.build}, whose Python source is {version}'s" if hit.build else
                    f" of its CPU build, whose code differs from the release's in {', '.join(changed)}" if changed
                    else "")  # fmt: skip
            elif hit.draft_build:  # the release's draft build, its loader handed an EAGLE-3 head
                what = f"model code, executed ({runner}draft build and weight loader)"
            elif family in hit.gated:  # refused by the engine config's eagle3 gate, before any model code
                what = ("model code, executed (the engine config's eagle3 model_type gate, run by "
                        f"draft-settings/{engine}-{version}.json)")  # fmt: skip
            elif family in hit.refused:  # the release's model registry does not list the architecture
                what = f"model code, executed ({runner}model registry: the architecture is not listed)"
            elif family in hit.real_layers:  # a release that captures inside its decoder layers
                what = (f"model code, executed ({loop}capture request and real decoder layers, stand-in "
                        "attention and MLP blocks)")  # fmt: skip
            elif hit.stand_ins:  # the release's capture request and decoder loop, with stand-in layers
                what = (f"model code, executed ({loop}capture request and decoder loop, stand-in layers"
                        f"{'; the real decoder built' if family in hit.built else ''})")  # fmt: skip
            elif hit.ran_on != where:
                what = f"model code, executed ({runner}in the {hit.ran_on.upper()} build's profile run)"
            else:
                what = "model code, executed"
            return {
                "level": level,
                "basis": f"observed: {engine} {version} {where.upper()} {what} ({hit.record})",
            }
    if read:
        return {"level": "read", "basis": f"read at source ({engine} {version})"}
    return {"level": "none", "basis": f"assumed: {engine} {version} was not read at source"}


@cache
def _engine_ran(engine: str) -> dict[tuple[str, str, str], str]:
    """(release, platform, architecture) -> record, for every target the table does not list that a running engine's
    record served with the zoo drafter (its family targets: Gemma-3, MiniCPM, MiMo) where check's verdict agreed
    with what the engine did."""
    out = {}
    for rec in records("engine"):
        name, _, version = rec["engine"].partition("==")
        if name != engine:
            continue
        for row in rec.get("families", ()):
            listed = _family_of(row.get("config") or {"architecture": row.get("architecture")})
            if listed is None and row.get("agree") is True and target_ran(row):
                where = f"engines/{engine}/data/observed/{rec['file']}"
                out[(str(Version(version)), rec["platform"], row["architecture"])] = where
    return out


# the functions of a runner's capture request (vLLM `set_aux_hidden_state_layers`, SGLang
# `set_eagle3_layers_to_capture`), named by an error the request raised (the probe's "raised in A > B")
CAPTURE_REQUEST = ("set_aux_hidden_state_layers", "set_eagle3_layers_to_capture")
# the probe's words for an error of the release's config loader (tests/engines/capture_probe.py LOADER_WORDS)
CONFIG_LOADER = "in the release's config loader, under the transformers it pins"
# the probe's words where a CPU launch builds a class whose __init__ needs CUDA (capture_probe._on_this_cpu)
CPU_BUILD_FAILS = "a CPU launch builds this class: it fails at load"


@dataclass(frozen=True)
class GenericRun:
    """A model-code record's cases for an architecture the table does not list (family `generic`, its generic
    capture assumed) at one release and runner: whether the release's own code captured as assumed."""

    engine: str
    release: str
    record: str  # path under src/eaglewire/
    claims: int
    agree: int
    # every forward returned no aux state at all: the drafter's fc gets none of its inputs
    captures_nothing: bool
    cpu: bool = False  # vLLM: the CPU build's runner made the same request (the record's `cpu`)
    # every case that captured otherwise asked for an edge of the loop or beyond, an id outside 1..L-1 (id 0 the
    # embeddings, id L the last layer's output, a negative id), and the engine's default ids held
    edges_only: bool = False
    cases: tuple[dict, ...] = field(default=(), compare=False, repr=False)  # the record's cases, by column
    asked: int = 0  # the cases the record ran (those that made no claim too)

    @cached_property
    def refused(self) -> str | None:
        """The engine's own error where every case the record ran (each a claim) ended in that one error and none
        ran a forward: the release fails for this architecture whatever ids a drafter asks for (vLLM 0.13-0.23's
        Transformers modeling backend, which asks for transformers 5 under a pin below it, as the target loads).
        None otherwise."""
        errors = {c["error"] for c in self.cases}
        if len(self.cases) != self.asked or len(errors) != 1 or None in errors or self.forward_ran:
            return None
        return errors.pop()

    @property
    def refused_at_load(self) -> bool:
        """Whether the refusal comes as the target loads: from the runner's capture request, which runs then, from
        building the model (`refused_building`), or from the release's config loader (`refused_loading`)."""
        return self.refused is not None and (
            any(w in self.refused for w in CAPTURE_REQUEST) or self.refused_building or self.refused_loading
        )

    @property
    def refused_loading(self) -> bool:
        """Whether the refusal was raised by the release's own config loader on the target's config.json, under the
        transformers it pins (the probe says so: SGLang 0.5.22-0.5.23 on a Gemma-4 text config), before any model
        is built."""
        return self.refused is not None and CONFIG_LOADER in self.refused

    @property
    def refused_building(self) -> bool:
        """Whether the refusal was raised building the model (an `__init__` of the release's own, as the probe
        names where it was raised: SGLang 0.5.21+ handing Intern-S1-Pro's layers an argument they do not take)."""
        built = self.refused is not None and (
            re.search(r"\(raised in [^()]*\.__init__", self.refused) is not None
            or CPU_BUILD_FAILS in self.refused
        )
        return bool(built)

    @property
    def forward_ran(self) -> bool:
        """Whether any case ran the loop's forward (else its claims are only the capture request failing for some
        ids: SGLang's Qwen4-Exp, vLLM's HunYuan-VL, whose forwards the probe could not run)."""
        return _ran(self.cases)

    @property
    def holds(self) -> bool:
        """Every claim agreed and a forward ran: claims made only by the capture request failing at the loop's edges
        (ids L-1, L on per-layer flags; SGLang 0.5.23's Qwen4-Exp, whose forward the probe could not run) say
        nothing of what the loop captures for any other ids."""
        return self.claims > 0 and self.agree == self.claims and self.forward_ran

    @cached_property
    def fits(self) -> tuple[str, ...]:
        """The table's rows at this release and runner (any family's) that every case of a run that captured
        otherwise fits (engines/fitted.py): the decoder captures as those families' do. Empty where the generic
        capture held or nothing was captured."""
        return self._fitting(self.cases)

    @cached_property
    def fits_inside(self) -> tuple[str, ...]:
        """The rows every case fits that asked for no id outside 1..L-1 (the engine's default ids included): what
        a drafter whose ids are all inside is served by, where the decoder differs from every row at its edges
        (SGLang's GLM-4.7-Flash: DeepSeek's capture, but id 0 crashes)."""
        return self._fitting(tuple(c for c in self.cases if inside_loop(_asked(c), c["num_layers"])))

    def _fitting(self, cases: tuple[dict, ...]) -> tuple[str, ...]:
        # cases whose forward never ran (only the capture request's errors at an edge id: HunYuan-VL, whose forward
        # the probe could not run) say nothing of what the loop captures: they fit any row that fails there
        if self.holds or self.captures_nothing or self.refused or not _ran(cases):
            return ()
        runner = cases[0]["runner"] or ""
        return tuple(r.key for r in fitting_rows(self.engine, self.release, runner, list(cases)))

    def settles(self, ids: tuple[int, ...] | None, num_layers: int, taps: tuple[int, ...] | None) -> bool:
        """Whether the run decides what a drafter served these ids (None: the engine's default) is fed on an
        L-layer target: the capture held in every case or captured nothing in any, or it differed only at the
        loop's edges (`_edges_only`) and these ask for none, nor are served one (`taps`, the generic row's answer;
        None where that answer is a failure, which an edge may be: id L-1 is h_L, which SGLang's Gemma decoders
        capture and the generic row drops); the generic capture then holds for them, as in every case of the
        record that asked for none."""
        if self.holds or self.captures_nothing or self.refused:
            return True
        inside = taps is not None and all(0 < t < num_layers for t in taps)
        return self.edges_only and inside_loop(ids, num_layers) and inside


@cache
def _generic_runs(engine: str, platform: str = "") -> dict[tuple[str, str, str], GenericRun]:
    """(release, architecture, runner) -> the record's run of a generic target (or an `assumed` class): as a GPU
    server runs it (platform ""), or on the CPU platform's own class, where it is another (platform "cpu": the
    record's `platform` entries, of the runner a CPU runs: V1, MRV2 from 0.34.0)."""
    out: dict[tuple[str, str, str], GenericRun] = {}
    for rec in records("model-code"):
        name, _, version = rec["engine"].partition("==")
        if name != engine:
            continue
        where = f"engines/{engine}/data/observed/{rec['file']}"
        col = {c: i for i, c in enumerate(rec["columns"])}
        at = col.get("platform")  # a case of the CPU platform's own class (records from its column on)
        for fam in rec["families"]:
            # a generic target, or a listed family's class its rows do not name (`assumed`: the row's capture tested)
            if not (fam["family"] == "generic" or fam.get("assumed")) or not fam["claims"]:
                continue
            if fam.get("platform", "") != platform:
                continue
            arch, runner = fam["architecture"], fam.get("runner", "")
            cases = tuple(dict(zip(rec["columns"], c, strict=True)) for c in rec["cases"]
                          if c[col["arch"]] == arch and (c[col["runner"]] or "") == runner
                          and ((c[at] or "") if at is not None else "") == platform)  # fmt: skip
            nothing = _captures_nothing(cases)
            release = str(Version(version))
            out[(release, arch, runner)] = GenericRun(
                engine,
                release,
                where,
                fam["claims"],
                fam["agree"],
                nothing,
                bool(fam.get("cpu")) or platform == "cpu",
                _edges_only(cases),
                cases,
                fam["cases"],
            )
    return out


@cache
def _not_run(engine: str) -> dict[tuple[str, str], dict[str, tuple[str, str]]]:
    """(release, architecture) -> runner label ("" where the record names none) -> (why its model-code record did
    not run it, the record)."""
    out: dict[tuple[str, str], dict[str, tuple[str, str]]] = {}
    for rec in records("model-code"):
        name, _, version = rec["engine"].partition("==")
        if name != engine:
            continue
        for label, why in rec.get("not_run", {}).items():
            arch = label.partition("(")[2].partition(")")[0]
            if arch and "not a text-generating target" not in why:
                # the probe's own prefix and its note to its authors
                why = re.sub(
                    r" \(add it to capture_probe\.\w+\)",
                    "",
                    why.removeprefix("probe could not build the model: "),
                )
                runner = label.rpartition(")")[2].strip()
                out.setdefault((str(Version(version)), arch), {}).setdefault(
                    runner, (why, f"engines/{engine}/data/observed/{rec['file']}")
                )
    return out


def generic_not_run(
    engine: str, version: str, arch: str | None, runner: str | None = None
) -> tuple[str, str] | None:
    """(why, record) where the release's model-code record lists a text-generating architecture it could not run
    (the probe's reason, such as a decoder whose captured state stand-in layers cannot tell apart), for the runner
    asked where the record names one (else the first it names)."""
    found = _not_run(engine).get((str(Version(version)), arch)) if arch else None
    if not found:
        return None
    return found.get(runner or "") or next(iter(found.values()))


def _ran(cases: tuple[dict, ...]) -> bool:
    """Whether any of the cases ran the loop's forward (returned taps, even none)."""
    return any(c["forward_taps"] is not None for c in cases)


def _captures_nothing(cases: tuple[dict, ...]) -> bool:
    """Whether the decoder never captures: every forward that ran returned no aux state, and every case that ran none
    is the release's capture request refusing those ids (vLLM's Transformers backend asking `_layer_names[-1]` for id
    0: VibeVoice-ASR, whose transformers wrapper records none of the states it is asked for)."""
    ran = [c for c in cases if c["forward_taps"] is not None]
    refused = all(c["forward_taps"] is not None or any(w in (c["error"] or "") for w in CAPTURE_REQUEST)
                  for c in cases)  # fmt: skip
    return bool(ran) and all(c["forward_taps"] == [] for c in ran) and refused


def inside_loop(ids: list[int] | tuple[int, ...] | None, num_layers: int) -> bool:
    """Whether an id list asks for no edge of the loop or beyond: every id in 1..L-1 (None: the engine's
    default, which asks for none)."""
    return ids is None or (bool(ids) and all(0 < i < num_layers for i in ids))


def _asked(case: dict) -> list[int] | None:
    """The ids a case asked for, as the release's runner read them (None: the engine's default)."""
    ids = case["ids_read"] if case["ids_read"] is not None else case["ids"]
    return ids or None


def _edges_only(cases: tuple[dict, ...]) -> bool:
    """Whether every case that captured otherwise than the generic capture asked for an id outside 1..L-1 (ids as
    the release's runner read them) or captured an edge of the loop itself (h0, the embeddings, or h_L, the last
    layer's output: SGLang's Gemma-4 appends h_L after its loop where the generic capture has no such line), and
    every case on the engine's default ids held, where a forward ran on ids inside the loop."""
    differ = [c for c in cases if c["agree"] is False]
    edges = all(not inside_loop(_asked(c), c["num_layers"]) or _at_edge(c) for c in differ)
    # and some case inside the loop ran a forward: else nothing says what the loop captures there
    ran = _ran(tuple(c for c in cases if inside_loop(_asked(c), c["num_layers"])))
    return bool(differ) and edges and ran and all(c["agree"] is True for c in cases if _asked(c) is None)


def _at_edge(case: dict) -> bool:
    """Whether a case's forward returned the state before the first layer or after the last (h0 or h_L)."""
    return any(t in (0, case["num_layers"]) for t in case["forward_taps"] or ())


def generic_run(
    engine: str, version: str, arch: str | None, runner: str | None, platform: str | None = None
) -> GenericRun | None:
    """The release's own capture code, executed for an architecture the table does not list (tests/engines/
    model_code.py runs every text-generating target the release's registry serves with EAGLE-3), for the runner
    (None: the engine's one runner, or where the runners agree). On a CPU, the run of the CPU platform's own class
    where the record has one (a package that picks its class by platform, or a class that needs CUDA to build)."""
    if not arch:
        return None
    key = str(Version(version))
    if (
        platform == "cpu"
        and runner in ("v1", "mrv2")  # the CPU build's runner: V1, MRV2 from 0.34.0
        and (own := _generic_runs(engine, "cpu").get((key, arch, runner)))
    ):
        return own
    runs = _generic_runs(engine)
    if runner:
        return runs.get((key, arch, runner))
    found = [r for (v, a, _), r in runs.items() if v == key and a == arch]
    return found[0] if found and len({(r.holds, r.captures_nothing) for r in found}) == 1 else None
