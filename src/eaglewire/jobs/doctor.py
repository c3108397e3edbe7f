"""`eaglewire doctor`: the static check, the flags lint, the standalone test under the served taps, and the
wiring search when the served taps test far below the trained ones, in one report and one exit code.

With a dump of the drafter's training data (`--dump`), the runtime part is the scale story instead: the drafter
scored on that data under its trained taps against the accuracy recorded at training time ("weights fine" or
"weights broken"), next to the static served-vs-trained verdict; the target lends only its head, read by name.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from eaglewire.data import SampleLoader
from eaglewire.dumps import describe, open_dump, require_taps
from eaglewire.engines import table
from eaglewire.formats import DrafterCheckpoint, read_drafter
from eaglewire.jobs.check import CheckReport, check, with_key
from eaglewire.jobs.evaluate import (
    DEFAULT_TREES,
    Evaluation,
    captured,
    chain_data,
    evaluate,
    samples_for_test,
)
from eaglewire.jobs.lint import lint
from eaglewire.jobs.pair import drafter_for, served_context, served_embedding, served_head
from eaglewire.jobs.search import SearchResult, search
from eaglewire.partial import load_partial_target
from eaglewire.rules import taps as conv
from eaglewire.rules.draft_weights import REFUSED
from eaglewire.rules.launch import LintReport
from eaglewire.rules.taps import ConfigFix
from eaglewire.taps import Wiring, default_wiring
from eaglewire.targets import load_target, read_target, resolve_dtype


@dataclass
class DoctorOptions:
    engine: str = field(default_factory=lambda: table.default_spec("sglang"))  # the newest release read
    launch: list[str] | None = None
    data: SampleLoader | None = None  # prompts for the standalone test (the CLI picks the zoo's for the zoo)
    samples: int = 12
    prompt_len: int = 64
    new_tokens: int = 96
    steps: int = 5
    search: str = "auto"  # auto | always | never
    drop_threshold: float = 0.05  # acc0 drop (absolute) that triggers the search
    dump: Path | None = (
        None  # the drafter's training data as a pipeline dumped it: test it there, no target layers
    )
    dump_ids: list[int] | None = None
    dump_config: Path | None = None
    device: str = "cpu"
    dtype: str = "float32"
    server: str | None = None  # a live server (URL) serving this drafter: its measurement joins the report
    platform: str | None = None  # cuda | cpu: picks vLLM's model runner (conventions.select_rows)
    runner: str | None = None  # v0 | v1 | mrv2: settles it directly
    strict: bool = False  # every assumption of the static check counts as unverified


@dataclass(frozen=True)
class Problem:
    code: str  # what kind: "wiring", "engine-fails", "static", "launch-flags", "search-disagrees", "tests-better"
    message: str


@dataclass
class WeightsVerdict:
    """Part one of the scale story: the drafter on its own training data (a dump), teacher-forced as training
    logs it, against the accuracy recorded at training time. `fine` and `broken` need the recorded number."""

    status: str  # "fine" | "broken" | "unverified"
    wiring: Wiring  # the taps it was fed: the trained ones
    acc: list[float]  # per step, teacher-forced
    recorded: list[float] | None
    rows: int
    tolerance: float  # how far below the recorded step-0 acc still counts as fine
    data: dict  # dumps.describe
    target_reads: list[tuple[str, int]]  # tensors read from the target (name, bytes): never its layers

    @property
    def message(self) -> str:
        rec = f"{self.recorded[0]:.3f}" if self.recorded else "unknown"
        what = {
            "fine": "weights fine",
            "broken": "weights broken",
            "unverified": "weights unverified (no training accuracy recorded in the checkpoint to compare with)",
        }[self.status]
        return f"on its training data the drafter scores {self.acc[0]:.3f} (recorded {rec}): {what}"

    def to_dict(self) -> dict:
        return {
            "status": self.status,
            "message": self.message,
            "taps": str(self.wiring),
            "acc": [round(a, 4) for a in self.acc],
            "recorded_acc": self.recorded,
            "rows": self.rows,
            "tolerance": round(self.tolerance, 4),
            "dump": self.data,
            "target_tensors_read": [{"name": n, "bytes": b} for n, b in self.target_reads],
        }


@dataclass
class DoctorReport:
    drafter: str
    engine: str
    static: CheckReport
    lint: LintReport | None
    served: Wiring | None
    trained: Wiring | None
    trained_basis: str
    evals: dict[str, Evaluation] = field(
        default_factory=dict
    )  # "served", "trained", "fixed", "served-teacher"
    search: SearchResult | None = None
    fix: ConfigFix | None = None  # the engine's config value for the best-supported taps
    fixed_config: dict | None = None  # config.json with the fix applied
    fixed_taps: Wiring | None = None  # what the engine feeds after the fix
    recorded: dict | None = None
    weights: WeightsVerdict | None = None  # with a dump: the drafter on its training data
    problem_list: list[Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    unknowns: list[str] = field(default_factory=list)  # facts the static check could not establish, unsettled
    live: Any = None  # `--server`: the probe's report (jobs.probe.ProbeReport) on the live server
    assumptions: list[str] = field(
        default_factory=list
    )  # what the static verdict assumed (and what breaks it)

    @property
    def verdict(self) -> str:
        return "problem" if self.has_problem else "unverified" if self.unknowns else "ok"

    @property
    def has_problem(self) -> bool:
        return bool(self.problem_list)

    @property
    def problems(self) -> list[str]:
        return [p.message for p in self.problem_list]

    def add_problem(self, code: str, message: str) -> None:
        problem = Problem(code, message)
        if problem not in self.problem_list:
            self.problem_list.append(problem)

    def fix_dict(self) -> dict | None:
        if self.fix is None:
            return None
        if not self.fix.expressible:
            return {"expressible": False, "reason": self.fix.reason}
        return {
            "expressible": True,
            "key": self.fix.key,
            "value": self.fix.value,
            "notes": self.fix.notes,
            "config": self.fixed_config,
        }

    def to_dict(self) -> dict:
        return {
            "drafter": self.drafter,
            "engine": self.engine,
            "verdict": self.verdict,
            "unknowns": self.unknowns,
            "assumptions": self.assumptions,
            "problems": self.problems,
            "served_taps": str(self.served) if self.served else None,
            "trained_taps": str(self.trained) if self.trained else None,
            "trained_basis": self.trained_basis,
            "fix": self.fix_dict(),
            "fixed_taps": str(self.fixed_taps) if self.fixed_taps else None,
            "evaluations": {k: v.to_dict() for k, v in self.evals.items()},
            "recorded_training_metrics": self.recorded,
            "search": self.search.to_dict() if self.search else None,
            "static": self.static.to_dict(),
            # what the verdict on the served taps rests on (the static check's, for the engine launched)
            "evidence": self.static.verdicts[0].evidence if self.static.verdicts else None,
            "lint": self.lint.to_dict() if self.lint is not None else None,
            "weights": self.weights.to_dict() if self.weights is not None else None,
            "live_server": self.live.to_dict() if self.live is not None else None,
            "notes": self.notes,
        }


def doctor(drafter: Path | str, target: Path | str, opts: DoctorOptions, progress=None) -> DoctorReport:
    ckpt: DrafterCheckpoint = read_drafter(drafter)
    tinfo = read_target(target)
    static = check(ckpt, tinfo, [opts.engine], platform=opts.platform, runner=opts.runner, strict=opts.strict)
    primary = static.verdicts[0]  # the row a launch uses on the platform given (conventions.select_rows)
    served = primary.served.taps
    # a path that feeds the default whatever the ids (SGLang's CUDA graphs before 0.5.11): the walk feeds what its
    # replayed steps get, every verify after the first prefill (the verdict still fails)
    both = conv.replayed(primary.served.row, ckpt.config, tinfo.num_layers) if served is None else None
    served = both[0] if both is not None else served
    trained = static.trained.wiring
    rep = DoctorReport(
        str(drafter),
        primary.engine,
        static,
        None,
        served,
        trained,
        f"{static.trained.basis} (confidence {static.trained.confidence})",
    )
    rep.recorded = (ckpt.provenance.training or {}).get("held_out") if ckpt.provenance else None
    if both is not None:
        rep.notes.append(
            f"walked as served on the replayed steps: {both[0]} (the prefill alone gets {both[1]})"
        )
    rep.unknowns = list(static.unknowns)
    rep.assumptions = list(static.assumptions)
    if primary.served.failure:
        rep.add_problem("engine-fails", f"{primary.engine}: {primary.served.failure}")
    elif primary.status == "mismatch":
        rep.add_problem(
            "wiring-mismatch",
            f"{primary.engine} feeds {served} but the drafter was trained on {trained} ({static.trained.basis})",
        )
    for f in static.findings + primary.findings:
        if f.severity == "problem":
            rep.add_problem(f"finding:{f.code}", f.message)
    if opts.launch:
        name, _, version = opts.engine.partition("==")
        rep.lint = lint(
            opts.launch, engine=name, engine_version=version or None, target_arch=tinfo.architecture
        )
        for c in rep.lint.changes:
            if c.severity == "problem":
                rep.add_problem(f"launch-flags:{c.rule}", f"launch flags: {c.message}")
    tdir = Path(target)
    weights = tdir.is_dir() and any(tdir.glob("*.safetensors"))
    if opts.dump is not None:
        _weights_on_dump(rep, ckpt, tdir, opts, progress)
        _set_fix(rep, primary.row_key, trained, ckpt)
    elif not weights:
        rep.notes.append("target folder has no weights: static check and lint only (no standalone test)")
        _set_fix(rep, primary.row_key, trained, ckpt)
    else:
        _runtime(rep, ckpt, tdir, opts, primary.row_key, progress)
    if opts.server:
        _live(rep, Path(drafter), tdir, opts, progress)
    return rep


def _live(rep: DoctorReport, drafter: Path, target: Path, opts: DoctorOptions, progress) -> None:
    """`--server URL`: the live server's own counters on the doctor's prompts, beside the prediction on the same
    prompts (`eaglewire probe`), folded into the report: its diagnosis is one more finding."""
    from eaglewire.jobs.probe import ProbeOptions, probe

    popts = ProbeOptions(
        drafter=drafter, target=target, data=opts.data, requests=opts.samples, prompt_len=opts.prompt_len,
        new_tokens=opts.new_tokens, launch=opts.launch, platform=opts.platform, device=opts.device,
    )  # fmt: skip
    rep.live = probe(opts.server, popts, progress)
    d = rep.live.diagnosis
    served_by = f"{rep.live.server.engine}=={rep.live.server.version}"
    if not rep.engine.startswith(served_by):
        rep.notes.append(f"the live server runs {served_by}; the static check assumed {rep.engine}")
    where = f"live server {rep.live.server.url}"
    if d.name == "unverified":
        rep.unknowns.append(f"{where}: {d.summary} ({'; '.join(d.needs)})")
    elif d.name == "served-as-trained":
        rep.notes.append(f"{where}: {d.summary}")
    else:
        rep.add_problem(f"live:{d.name}", f"{where}: {d.name}: {d.summary}")


def _weights_on_dump(
    rep: DoctorReport, ckpt: DrafterCheckpoint, tdir: Path, opts: DoctorOptions, progress
) -> None:
    """The drafter on a dump of its training data under its trained taps, with a partial target (its lm_head
    and final norm read by name, never its layers): the Kimi-K2.5 diagnosis at full scale."""
    say = progress or (lambda *_: None)
    tgt = load_partial_target(tdir, opts.device)
    model = drafter_for(ckpt, tgt, resolve_dtype(tdir, opts.dtype))
    if rep.trained is None:
        rep.notes.append("training taps unknown: the drafter cannot be scored on its training data")
        return
    if len(rep.trained) != model.arch.n_aux:
        rep.notes.append(
            f"the inferred training taps {rep.trained} do not fit the drafter's fc ({model.arch.n_aux} taps)"
        )
        return
    src = open_dump(opts.dump, tgt, opts.dump_ids, opts.dump_config)
    require_taps(src, rep.trained, "the drafter's training taps")
    say("teacher-forced test on the dump under the trained taps")
    items = [src[i] for i in range(min(opts.samples, len(src)))]
    head = src.target_head()
    ev = evaluate(model, items, rep.trained, opts.steps, "teacher", head=head)
    rep.evals["trained-on-dump"] = ev
    recorded = (rep.recorded or {}).get("acc") or None
    tol = max(opts.drop_threshold, 3 * math.sqrt(0.25 / max(1, ev.rows)))
    status = "unverified" if not recorded else ("fine" if ev.acc[0] >= recorded[0] - tol else "broken")
    rep.weights = WeightsVerdict(
        status, rep.trained, ev.acc, recorded, ev.rows, tol, describe(src), tgt.tensors_read
    )
    if status == "broken":
        rep.add_problem("weights-broken", rep.weights.message)
    if rep.served is not None and rep.served != rep.trained and len(rep.served) == model.arch.n_aux:
        held = set(src.taps.indices)
        if set(rep.served.indices) <= held:
            say("teacher-forced test on the dump under the served taps")
            rep.evals["served-on-dump"] = evaluate(model, items, rep.served, opts.steps, "teacher", head=head)
        else:
            rep.notes.append(f"the dump does not hold the served taps {rep.served} (it holds {src.taps})")


def _runtime(
    rep: DoctorReport, ckpt: DrafterCheckpoint, tdir: Path, opts: DoctorOptions, row_key: str, progress
) -> None:
    tgt = load_target(tdir, dtype=resolve_dtype(tdir, opts.dtype), device=opts.device)
    L = tgt.info.num_layers
    # the drafter as the engine computes it (the embedding the release feeds it: rules/draft_weights.py), and as
    # trained (its own); the taps are judged on the first, the training record and the search on the second
    embedding, fed = served_embedding(ckpt, tgt, rep.engine)
    head, head_fed = served_head(ckpt, tgt, rep.engine)
    as_trained = drafter_for(ckpt, tgt)
    # the release refuses the drafter, or scores garbage: check's problem says which
    refused = head in REFUSED
    if refused:
        head = "own"
        rep.notes.append(f"not tested as served: {head_fed}")
    # where the release stops drafting past the drafter's context: both walks are the engine's
    gate, gate_note = served_context(ckpt, tgt, rep.engine, opts.platform, opts.runner)
    if gate_note:
        rep.notes.append(f"walked as served: {gate_note}")
    same = embedding == "own" and head == "own"
    model = as_trained if same else drafter_for(ckpt, tgt, embedding=embedding, head=head)
    replaced = [
        (w, f) for w, f, h in (("embedding", fed, embedding), ("lm_head", head_fed, head)) if h != "own"
    ]
    samples = samples_for_test(tgt, opts.data, opts.samples, opts.prompt_len + opts.new_tokens)
    data = chain_data(
        tgt, samples, list(range(L + 1)), opts.prompt_len, opts.new_tokens, max(opts.steps, 5) + 1
    )
    say = progress or (lambda *_: None)
    n_aux = model.arch.n_aux
    if rep.served is not None and len(rep.served) == n_aux and not refused:
        say("test under the served taps")
        rep.evals["served"] = evaluate(
            model, data, rep.served, opts.steps, "chain", trees=DEFAULT_TREES[:2], gate=gate
        )
        if replaced:
            _replaced(rep, as_trained, data, opts, replaced, say)
        if gate is not None:
            _gated(rep, gate)
    if rep.trained is not None and len(rep.trained) == n_aux and rep.trained != rep.served:
        say("test under the trained taps")
        rep.evals["trained"] = evaluate(
            model, data, rep.trained, opts.steps, "chain", trees=DEFAULT_TREES[:2], gate=gate
        )
    # evidence that the served taps are wrong: the trained taps test better on the same data, or the served taps
    # test (teacher-forced, as training logs it) far below the accuracy recorded at training time
    drops = []
    if "served" in rep.evals and "trained" in rep.evals:
        e = rep.evals["served"]
        drops.append((rep.evals["trained"].acc[0] - e.acc[0], e.rows))
    if rep.recorded and rep.recorded.get("acc") and rep.served is not None and len(rep.served) == n_aux:
        say("teacher-forced check against the recorded training accuracy")
        natural = captured(tgt, samples, list(rep.served.indices))
        tf = evaluate(as_trained, natural, rep.served, 1, "teacher")
        rep.evals["served-teacher"] = tf
        drops.append((rep.recorded["acc"][0] - tf.acc[0], tf.rows))
    far = any(d > max(opts.drop_threshold, 3 * math.sqrt(0.25 / max(1, n))) for d, n in drops)
    if drops and not far and rep.unknowns:
        rep.notes.append(
            "the standalone test settles what the static check could not: under the served taps the drafter "
            "tests as well as it did in training"
        )
        rep.unknowns = []
    served_acc = rep.evals["served"].acc[0] if "served" in rep.evals else 0.0
    want_search = opts.search == "always" or (
        opts.search == "auto" and (far or rep.trained is None or "served" not in rep.evals)
    )
    best = rep.trained
    if want_search:
        say("wiring search")
        seeds = [w for w in (rep.served, rep.trained, default_wiring(L)) if w is not None]
        rep.search = search(model, data, L, seeds, served=rep.served)
        best = rep.search.best.wiring
        tied = {str(c.wiring) for c in rep.search.tied}
        if rep.served is not None and str(rep.served) in tied and rep.unknowns:
            rep.notes.append(
                f"the wiring search settles it: the served taps {rep.served} are among the best fits"
            )
            rep.unknowns = []
        if rep.trained is not None and str(rep.trained) in tied:
            best = rep.trained  # the search agrees with what the checkpoint says
        elif rep.trained is not None and rep.trained != rep.served:
            rep.add_problem(
                "search-disagrees",
                f"the wiring search finds {best} fits the drafter better than the inferred {rep.trained}",
            )
        elif rep.trained is not None and rep.static.trained.assumptions and str(rep.trained) not in tied:
            # the static check assumed the training taps (the served ones, here): the measurement refutes it
            taps_assumed = {str(a) for a in rep.static.trained.assumptions}
            rep.assumptions = [a for a in rep.assumptions if a not in taps_assumed]
            rep.notes.append(
                f"the static check assumed training taps {rep.trained} (nothing recorded); the wiring search "
                f"refutes it: {best} fits the drafter better"
            )
        else:
            rep.notes.append(f"training taps unknown: the search says {best}")
            if len(tied) == 1 and rep.unknowns:
                rep.unknowns = [u for u in rep.unknowns if u != rep.static.trained.unknown]
                rep.notes.append(f"the wiring search settles the training taps: {best} alone fits best")
        if (
            "served" in rep.evals
            and rep.served is not None
            and str(rep.served) not in tied
            and best != rep.served
        ):
            rep.add_problem(
                "tests-better",
                f"the drafter tests far better under {best} than under the served {rep.served} "
                f"(step-0 acc {rep.search.best.acc0:.3f} vs {served_acc:.3f})",
            )
    _set_fix(rep, row_key, best, ckpt)
    if rep.fixed_taps is not None and len(rep.fixed_taps) == n_aux and rep.fixed_taps != rep.served:
        say("test with the fix applied")
        rep.evals["fixed"] = evaluate(
            model, data, rep.fixed_taps, opts.steps, "chain", trees=DEFAULT_TREES[:2]
        )


def _replaced(rep: DoctorReport, as_trained, data, opts: DoctorOptions, replaced: list, say) -> None:
    """The release computes the draft with the target's embedding or lm_head in place of its own (`replaced`:
    (weight, what the release feeds)): the same served taps with the drafter's own weights, beside; a collapse is a
    problem (the engine serves it silently)."""
    weights = " and ".join(w for w, _ in replaced)
    say(f"test under the served taps with the drafter's own {weights}")
    own = evaluate(as_trained, data, rep.served, opts.steps, "chain", trees=DEFAULT_TREES[:2])
    rep.evals[f"served-own-{weights.replace(' and ', '-')}"] = own
    served = rep.evals["served"]
    drop = own.acc[0] - served.acc[0]
    noise = max(opts.drop_threshold, 3 * math.sqrt(0.25 / max(1, served.rows)))
    fed = "; ".join(f for _, f in replaced)
    said = (f"{rep.engine} computes the draft with {fed}: step-0 acc {served.acc[0]:.3f} (accept length "
            f"{served.tau[-1]:.2f}) against {own.acc[0]:.3f} ({own.tau[-1]:.2f}) with the drafter's own {weights}, "
            f"same taps {rep.served}")  # fmt: skip
    if drop > noise:
        if replaced[-1][0] == "lm_head":
            fix = ("set draft_vocab_size in config.json to the vocabulary size (SGLang then keeps the drafter's own "
                   "lm_head)" if rep.engine.startswith("sglang") else "serve vLLM >= 0.11.1, which keeps a distinct "
                   "lm_head")  # fmt: skip
            rep.add_problem("head-replaced", said + f": its own {weights} is not the target's; {fix}")
        else:
            rep.add_problem("embedding-replaced", said + f": its own {weights} is not the target's; serve a release "
                            "that keeps it (vLLM >= 0.11.1) or train the drafter on a frozen copy of the target's")  # fmt: skip
    elif -drop > noise:
        rep.notes.append(said + f": the target's serves it better than its own {weights}")
    else:
        rep.notes.append(said + ": the same, within noise")


def _gated(rep: DoctorReport, gate) -> None:
    """The release stops drafting past the drafter's context (check's draft-context problem says why and the fix):
    the same walk without the gate, beside (evaluated with the served one), is what the fix serves."""
    served = rep.evals["served"]
    full = replace(served, walks=served.ungated, ungated=[])
    rep.evals["served-full-context"] = full
    rep.notes.append(f"{rep.engine} stops the drafter past {gate.limit} tokens: accept length {served.tau[-1]:.2f} on "
                     f"these prompts, against {full.tau[-1]:.2f} with the drafter's context raised to the served "
                     f"length (the fix)")  # fmt: skip


def _set_fix(rep: DoctorReport, row_key: str, taps: Wiring | None, ckpt: DrafterCheckpoint) -> None:
    """The engine's config value for `taps`, the fixed config.json, and the taps the engine then feeds."""
    if taps is None or (rep.served is not None and taps == rep.served):
        return
    row = next(r for r in table.ROWS if r.key == row_key)
    rep.fix = conv.config_value_for(row, taps, rep.static.target.num_layers)
    if not rep.fix.expressible:
        return
    rep.fixed_config = with_key(ckpt.config, rep.fix.key, list(rep.fix.value or []))
    rep.fixed_taps = conv.resolve(row, rep.fixed_config, rep.static.target.num_layers).taps
