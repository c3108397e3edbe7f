"""One diagnosis from the live measurement against the predictions: which cause explains the accept length.

- `served-as-trained`: the measured accept length matches the prediction under the trained taps (exit 0);
- `wiring`: it matches the prediction under the taps the engine feeds, which are not the trained ones (the `check`
  fix);
- `flags`: the effective launch settings cap it: lint found the engine overriding what was asked, or one draft
  token per verify where more are predicted to be accepted (the lint fix / the draft setting);
- `weak-drafter`: it matches the trained-taps prediction and that is low: the first draft token is accepted less
  than `WEAK_FIRST_POSITION` of the time, or the drafter scores far below its recorded training accuracy on this
  workload (a data, domain or template question, not wiring);
- `unexplained`: it matches no prediction: the numbers that disagree and by how much;
- `unverified` (exit 3): nothing to compare with (no drafter or target): the measured numbers against the flag
  ceiling, and what would let it decide.

Decide first, then write: `decide` compares the measurement with the predictions and returns a `Decision`
(an outcome key, the numbers and comparisons it rests on, the further causes and remarks) with no word in it;
`write` words it from `OUTCOMES`, one row per outcome key (the diagnosis it gives, its exit code, its sentence),
and `REMARKS` (the notes and clauses that never name the diagnosis).

Tolerance. The measurement and the predictions are on the same prompts and the same greedy continuation, so
sampling error is common to both; what separates them is the prediction's model error, taken as `MODEL_ERROR` of
the predicted accept length (the bound the walk prediction is held to against vLLM in the real-engine tests,
issue 15). When the measured window is not the probe's own requests (other traffic, or the server's lifetime
counters against a prediction on other prompts), the measurement's 95% interval half-width is added. Two
predictions are told apart only when they differ by more than both tolerances together.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from eaglewire.errors import EXIT_OK, EXIT_PROBLEM, EXIT_UNVERIFIED
from eaglewire.jobs.predict import Curve, Prediction
from eaglewire.rules.launch import Change, Edit, LintReport
from eaglewire.rules.taps import ConfigFix
from eaglewire.server.measure import Measurement

MODEL_ERROR = 0.03
WEAK_FIRST_POSITION = 0.4
DIAGNOSES = ("served-as-trained", "wiring", "flags", "weak-drafter", "unexplained", "unverified")


@dataclass(frozen=True)
class Outcome:
    """One row of the outcome table: the diagnosis an outcome gives, its exit code, its sentence (a `str.format`
    template over the facts of the decision) and what would let it decide."""

    name: str
    exit_code: int
    sentence: str
    needs: tuple[str, ...] = ()


_PREDICTIONS = "--drafter DIR and --target DIR (the target's weights): the predictions to compare with"
_WEIGHTS = "--target DIR with the target's weights (a dump predicts no accept length)"
_DATA = "--data FILE when the target is not the bundled zoo (the prompts to send and predict on)"
_MEASURED = "measured accept length {tau:.2f} of at most {ceiling}"
_NOTHING = _MEASURED + " the flags allow; nothing to compare with"
_OVERRIDE = "the engine changes the speculative settings that were asked for"

# Every outcome, keyed. The first group ends the decision before the wiring is settled; the causes
# (`flag-override` to `one-draft-token`) are found once it is: they name the diagnosis when the wiring is as
# trained, and are notes besides `wiring` (or besides the cause that names the diagnosis).
OUTCOMES: dict[str, Outcome] = {
    "unmeasured": Outcome("unverified", EXIT_UNVERIFIED, "no speculative verify step was measured"),
    "no-drafter": Outcome("unverified", EXIT_UNVERIFIED, _NOTHING, (_PREDICTIONS, _DATA)),
    "no-drafter-flags": Outcome("flags", EXIT_PROBLEM, _MEASURED + ": " + _OVERRIDE, (_PREDICTIONS, _DATA)),
    "dump-only": Outcome("unverified", EXIT_UNVERIFIED, _NOTHING, (_WEIGHTS, _DATA)),
    "dump-only-flags": Outcome("flags", EXIT_PROBLEM, _MEASURED + ": " + _OVERRIDE, (_WEIGHTS, _DATA)),
    "no-served-prediction": Outcome(
        "unverified", EXIT_UNVERIFIED, "no prediction under the served taps (see notes)",
        ("a drafter whose served taps the table resolves (see `eaglewire check`)",),
    ),
    "untrained-flags": Outcome("flags", EXIT_PROBLEM, "measured {tau:.2f}: " + _OVERRIDE),
    "untrained": Outcome(
        "unverified", EXIT_UNVERIFIED,
        "measured {tau:.2f}; the drafter's training taps are unknown, so served-as-trained is undecidable",
        ("the training taps: a checkpoint with eaglewire provenance or a trainer record (see check)",),
    ),
    "wiring": Outcome(
        "wiring", EXIT_PROBLEM,
        "measured {tau:.2f} matches the prediction under the served taps {served.taps} "
        "({served.predicted:.2f}), not under the trained taps {trained.taps} ({trained.predicted:.2f}): "
        "{runner} feeds the drafter other hidden states than it was trained on",
    ),
    "served-as-trained": Outcome(
        "served-as-trained", EXIT_OK,
        "measured {tau:.2f} matches the prediction under the trained taps {trained.taps} "
        "({trained.predicted:.2f}): served as trained",
    ),
    "flag-override": Outcome("flags", EXIT_PROBLEM, _OVERRIDE + ": {change}"),
    "weak-first-position": Outcome(
        "weak-drafter", EXIT_PROBLEM,
        "the drafter's first draft token is accepted at {first:.0%} of verifies (< {weak:.0%}) under its "
        "trained taps {wiring}",
    ),
    "weak-against-record": Outcome(
        "weak-drafter", EXIT_PROBLEM,
        "on this workload the drafter scores {acc:.3f} teacher-forced against {recorded:.3f} recorded at "
        "training time: a data, domain or template question",
    ),
    "one-draft-token": Outcome(
        "flags", EXIT_PROBLEM,
        "one draft token per verify caps the accept length at 2; with {more} draft tokens the prediction is "
        "{predicted:.2f} (the drafter was trained to draft {steps} steps)",
    ),
    "table-mismatch": Outcome(
        "unexplained", EXIT_PROBLEM,
        "measured {tau:.2f} matches the trained taps {trained.taps}, but eaglewire's table says {runners} "
        "feeds {served_taps}: the table row may not fit this server, or it runs another drafter",
    ),
    "no-match": Outcome("unexplained", EXIT_PROBLEM, "measured {tau:.2f} matches no prediction: {gaps}"),
    "lossy-verify": Outcome(
        "unverified", EXIT_UNVERIFIED,
        "measured {tau:.2f} under a lossy verify, which no prediction models: {change}",
        ("the same launch with the lossless verify (rejection_sample_method unset or 'standard')",),
    ),
}  # fmt: skip
# lint rows that say the server's counters do not measure the drafter (a lossy verify)
LOSSY_VERIFY = ("vllm.lossy_verify",)

# The sentences that never name the diagnosis: notes, clauses of another sentence, the tolerance, the fixes.
REMARKS: dict[str, str] = {
    "launch-flag": "launch flags: {change}",
    "prediction-note": "{note}",
    "wiring-unchecked": "the drafter's training taps are unknown: the wiring is not checked",
    "within-tolerance": "on this workload the served taps cost less than the tolerance "
    "({served.predicted:.2f} vs {trained.predicted:.2f}); the static check still finds the mismatch",
    "fits-runners": "the measurement fits {runners} (the runner rows that feed the trained taps)",
    "gap": "{c.label} {c.taps}: predicted {c.predicted:.2f}, off by {c.difference:+.2f} ({relative:+.0%}, "
    "tolerance {c.tolerance:.2f})",
    "steps-unknown": "an unknown number of",
    "tolerance": "match: |measured - predicted| <= {error:.0%} of predicted (the walk prediction's bound)",
    "tolerance-window": " + {extra:.3f} (half the measured 95% interval: the window is not only the "
    "probe's prompts)",
    "lint-fix": "{flags}  ({description})",
    "more-drafts": "{edits}  (more draft tokens per verify; `eaglewire advise` prices the choice on your "
    "hardware)",
}  # fmt: skip

EXIT_CODES = {o.name: o.exit_code for o in OUTCOMES.values()}


@dataclass
class Comparison:
    label: str
    taps: str
    predicted: float
    measured: float
    tolerance: float

    @property
    def difference(self) -> float:
        return self.measured - self.predicted

    @property
    def matches(self) -> bool:
        return abs(self.difference) <= self.tolerance

    def to_dict(self) -> dict:
        return {
            "label": self.label,
            "taps": self.taps,
            "predicted": round(self.predicted, 4),
            "measured": round(self.measured, 4),
            "difference": round(self.difference, 4),
            "relative": round(self.difference / self.predicted, 4) if self.predicted else None,
            "tolerance": round(self.tolerance, 4),
            "matches": self.matches,
        }


@dataclass(frozen=True)
class Finding:
    """An `OUTCOMES` or `REMARKS` key and the facts its sentence is written from (a fact that is a finding is
    written as its sentence; a list of findings as their sentences joined by "; ", a list of names by ", ")."""

    key: str
    facts: dict[str, Any] = field(default_factory=dict)


@dataclass
class Decision:
    """What the measurement says against the predictions, before any word: `decide`'s answer."""

    outcome: Finding  # an OUTCOMES key: the diagnosis
    ceiling: int | None  # the most tokens one verify can yield under the effective settings
    extra: float  # the measurement's half-width added to the tolerance (0: the window is the probe's prompts)
    comparisons: list[Comparison] = field(default_factory=list)
    causes: list[str] = field(default_factory=list)  # the causes found once the wiring is settled, ranked
    notes: list[Finding] = field(default_factory=list)  # remarks and further causes, in order
    config_fix: ConfigFix | None = (
        None  # wiring: the config value that makes the engine feed the trained taps
    )
    fix_engine: str | None = None
    more_drafts: int | None = None  # one draft token: the draft tokens per verify the prediction favours


@dataclass
class Diagnosis:
    name: str
    summary: str
    causes: list[str] = field(default_factory=list)  # every cause found, the diagnosis first
    comparisons: list[Comparison] = field(default_factory=list)
    ceiling: int | None = None  # the most tokens one verify can yield under the effective settings
    config_fix: ConfigFix | None = (
        None  # wiring: the config value that makes the engine feed the trained taps
    )
    fix_engine: str | None = None
    flag_fixes: list[str] = field(default_factory=list)  # flags: what to change in the launch
    fixed_command: str | None = None
    needs: list[str] = field(default_factory=list)  # unverified: what would let it decide
    notes: list[str] = field(default_factory=list)
    tolerance: str = ""

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.name]

    def to_dict(self) -> dict:
        fix = None
        if self.config_fix is not None:
            f = self.config_fix
            fix = {"engine": self.fix_engine, "expressible": f.expressible, "key": f.key, "value": f.value,
                   "reason": f.reason}  # fmt: skip
        return {
            "diagnosis": self.name,
            "summary": self.summary,
            "causes": self.causes,
            "comparisons": [c.to_dict() for c in self.comparisons],
            "ceiling": self.ceiling,
            "config_fix": fix,
            "flag_fixes": self.flag_fixes,
            "fixed_command": self.fixed_command,
            "needs": self.needs,
            "notes": self.notes,
            "tolerance": self.tolerance,
        }


def _drop_tolerance(rows: int) -> float:
    """How far below the recorded step-0 accuracy still counts as the same drafter (doctor's rule)."""
    return max(0.05, 3 * math.sqrt(0.25 / max(1, rows)))


def _first_position(curve: Curve) -> float | None:
    if curve.per_position:
        return curve.per_position[0]
    return curve.tau[0] - 1 if curve.tau else None


def _more_drafts(engine: str, k: int) -> list[Edit]:
    if engine == "sglang":
        return [
            Edit("--speculative-num-steps", k),
            Edit("--speculative-eagle-topk", 1),
            Edit("--speculative-num-draft-tokens", k + 1),
        ]
    return [Edit("--speculative-config", k, key="num_speculative_tokens")]


def diagnose(
    m: Measurement, pred: Prediction | None, lint: LintReport | None, engine: str, k: int | None
) -> Diagnosis:
    """The diagnosis of measurement `m` against the predictions `pred` and the launch's lint, written."""
    return write(decide(m, pred, lint, k), lint, engine)


def decide(m: Measurement, pred: Prediction | None, lint: LintReport | None, k: int | None) -> Decision:
    """Which outcome the measurement gives against the predictions, and the numbers it rests on (no words)."""
    tau = m.accept_length
    ceiling = (lint.effective.max_accept_length if lint is not None else None) or ((k + 1) if k else None)
    extra = m.half_width if (m.scope != "workload" or m.other_traffic) else 0.0
    problems = list(lint.problems) if lint is not None else []
    d = Decision(Finding("unmeasured"), ceiling, extra)
    d.notes += [Finding("launch-flag", {"change": c.message}) for c in problems]
    if tau is None:
        return d
    measured = {"tau": tau, "ceiling": ceiling}
    # synthetic rates or FLy's deferred rejections: comparing with the walk would name a false cause
    lossy = [c for c in (lint.changes if lint is not None else []) if c.rule in LOSSY_VERIFY]
    if lossy:
        d.outcome = Finding("lossy-verify", measured | {"change": lossy[0].message})
        return d
    if pred is None or not pred.walk:
        key = "no-drafter" if pred is None else "dump-only"
        d.outcome = Finding(key + "-flags" if problems else key, measured)
        return d

    def tol(x: float) -> float:
        return MODEL_ERROR * x + extra

    curves = {str(c.wiring): c for c in pred.curves.values()}
    for c in curves.values():
        v = c.at(pred.k)
        if v is not None:
            d.comparisons.append(Comparison(c.label, str(c.wiring), v, tau, tol(v)))
    by_taps = {c.taps: c for c in d.comparisons}
    trained = by_taps.get(str(pred.trained)) if pred.trained is not None else None
    served = {label: by_taps.get(str(w)) for label, w in pred.served.items()}
    if not served or all(c is None for c in served.values()):
        d.outcome = Finding("no-served-prediction", measured)
        d.notes += [Finding("prediction-note", {"note": n}) for n in pred.notes]
        return d
    differ = {lab: c for lab, c in served.items() if c is not None and pred.trained is not None
              and not pred.served[lab].same_set(pred.trained)}  # fmt: skip
    same = {lab: c for lab, c in served.items() if c is not None and lab not in differ}
    if trained is None:
        d.outcome = Finding("untrained-flags" if problems else "untrained", measured)
        if problems:
            d.notes.append(Finding("wiring-unchecked"))
        return d
    wired = [lab for lab, c in differ.items() if c.matches]
    if wired and not (trained.matches and same):
        lab = wired[0]
        c = differ[lab]
        d.outcome = Finding("wiring", measured | {"served": c, "trained": trained, "runner": lab})
        if abs(trained.predicted - c.predicted) <= tol(trained.predicted) + tol(c.predicted):
            d.notes.append(Finding("within-tolerance", {"served": c, "trained": trained}))
        verdict = next((v for v in pred.verdicts if v.engine == lab), None)
        if verdict is not None:
            d.config_fix, d.fix_engine = verdict.fix, lab
        found = _other_causes(d, pred, trained_curve(pred), problems, k, tol)
        d.notes += found
        return d
    if trained.matches and (same or not differ):
        if len(served) > 1 and same:
            d.notes.append(Finding("fits-runners", {"runners": list(same)}))
        found = _other_causes(d, pred, trained_curve(pred), problems, k, tol)
        if d.causes:
            top = d.causes[0]
            d.outcome = next(f for f in found if OUTCOMES[f.key].name == top)
            d.notes += [f for f in found if OUTCOMES[f.key].name != top]
        else:
            d.outcome = Finding("served-as-trained", measured | {"trained": trained})
        return d
    if trained.matches and differ and not same:
        taps = [c.taps for c in differ.values()]
        d.outcome = Finding(
            "table-mismatch", measured | {"trained": trained, "runners": list(differ), "served_taps": taps}
        )
    else:
        gaps = [Finding("gap", {"c": c, "relative": c.difference / c.predicted}) for c in d.comparisons]
        d.outcome = Finding("no-match", measured | {"gaps": gaps})
    return d


def trained_curve(pred: Prediction) -> Curve | None:
    return pred.curve(pred.trained)


def _other_causes(
    d: Decision,
    pred: Prediction,
    curve: Curve | None,
    lint_problems: list[Change],
    k: int | None,
    tol: Callable[[float], float],
) -> list[Finding]:
    """Flags and drafter strength, once the wiring is settled: the findings, in the order found. Their causes go
    to `d.causes`, ranked (a flag override lint found is a definite fault; otherwise a weak drafter explains more
    than its K), and the draft tokens per verify to propose to `d.more_drafts`."""
    found: list[Finding] = []
    if lint_problems:
        found.append(Finding("flag-override", {"change": lint_problems[0].message}))
    weak = None
    if curve is not None:
        first = _first_position(curve)
        if first is not None and first < WEAK_FIRST_POSITION:
            weak = Finding(
                "weak-first-position", {"first": first, "weak": WEAK_FIRST_POSITION, "wiring": curve.wiring}
            )
        rec = (pred.recorded or {}).get("acc")
        if weak is None and rec and curve.teacher_acc:
            rows = pred.prompts * pred.new_tokens
            if curve.teacher_acc[0] < rec[0] - _drop_tolerance(rows):
                weak = Finding("weak-against-record", {"acc": curve.teacher_acc[0], "recorded": rec[0]})
        if weak is not None:
            found.append(weak)
        if k == 1 and pred.tree is None and weak is None:
            more = max(2, min(pred.ttt_steps or 3, len(curve.tau)))
            gain = curve.at(more) - curve.at(1) if curve.at(more) is not None else 0.0
            if gain > tol(curve.at(more) or 0.0) + tol(curve.at(1)):
                steps = pred.ttt_steps or Finding("steps-unknown")
                found.append(
                    Finding("one-draft-token", {"more": more, "predicted": curve.at(more), "steps": steps})
                )
                d.more_drafts = more
    order = {"flags": 0, "weak-drafter": 1} if lint_problems else {"weak-drafter": 0, "flags": 1}
    names = dict.fromkeys(OUTCOMES[f.key].name for f in found)
    d.causes = sorted(names, key=lambda c: order.get(c, 9))
    return found


def _value(v: Any) -> Any:
    if isinstance(v, Finding):
        return _sentence(v)
    if isinstance(v, list):
        return "; ".join(map(_value, v)) if v and isinstance(v[0], Finding) else ", ".join(map(str, v))
    return v


def _sentence(f: Finding) -> str:
    template = OUTCOMES[f.key].sentence if f.key in OUTCOMES else REMARKS[f.key]
    return template.format(**{name: _value(v) for name, v in f.facts.items()})


def write(d: Decision, lint: LintReport | None, engine: str) -> Diagnosis:
    """The diagnosis a decision gives, in words: every sentence from `OUTCOMES` and `REMARKS`."""
    row = OUTCOMES[d.outcome.key]
    causes = [row.name] if row.exit_code == EXIT_PROBLEM else []
    tolerance = REMARKS["tolerance"].format(error=MODEL_ERROR)
    if d.extra:
        tolerance += REMARKS["tolerance-window"].format(extra=d.extra)
    flag_fixes = [REMARKS["lint-fix"].format(flags=f.flags, description=f.description)
                  for f in (lint.fixes if lint is not None else [])]  # fmt: skip
    if d.more_drafts is not None:
        edits = " ".join(e.render() for e in _more_drafts(engine, d.more_drafts))
        flag_fixes.append(REMARKS["more-drafts"].format(edits=edits))
    return Diagnosis(
        row.name,
        _sentence(d.outcome),
        causes + [c for c in d.causes if c not in causes],
        d.comparisons,
        d.ceiling,
        d.config_fix,
        d.fix_engine,
        flag_fixes,
        lint.fixed_command if lint is not None else None,
        list(row.needs),
        [_sentence(f) for f in d.notes],
        tolerance,
    )
