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

from eaglewire.conventions import ConfigFix
from eaglewire.errors import EXIT_OK, EXIT_PROBLEM, EXIT_UNVERIFIED
from eaglewire.flags.values import Change, Edit, LintReport
from eaglewire.probe.measure import Measurement
from eaglewire.probe.predict import Curve, Prediction

MODEL_ERROR = 0.03
WEAK_FIRST_POSITION = 0.4
DIAGNOSES = ("served-as-trained", "wiring", "flags", "weak-drafter", "unexplained", "unverified")


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
        if self.name == "served-as-trained":
            return EXIT_OK
        return EXIT_UNVERIFIED if self.name == "unverified" else EXIT_PROBLEM

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
    tau = m.accept_length
    ceiling = (lint.effective.max_accept_length if lint is not None else None) or ((k + 1) if k else None)
    extra = m.half_width if (m.scope != "workload" or m.other_traffic) else 0.0
    tol_text = (
        f"match: |measured - predicted| <= {MODEL_ERROR:.0%} of predicted (the walk prediction's bound)"
    )
    if extra:
        tol_text += (
            f" + {extra:.3f} (half the measured 95% interval: the window is not only the probe's prompts)"
        )
    lint_problems = [c for c in (lint.problems if lint is not None else [])]
    flag_fixes = [f"{f.flags}  ({f.description})" for f in (lint.fixes if lint is not None else [])]
    fixed_command = lint.fixed_command if lint is not None else None
    d = Diagnosis("unverified", "", ceiling=ceiling, tolerance=tol_text, flag_fixes=flag_fixes,
                  fixed_command=fixed_command)  # fmt: skip
    if lint_problems:
        d.notes += [f"launch flags: {c.message}" for c in lint_problems]
    if tau is None:
        d.summary = "no speculative verify step was measured"
        return d
    if pred is None or not pred.walk:
        if lint_problems:
            d.name, d.causes = "flags", ["flags"]
            d.summary = (
                f"measured accept length {tau:.2f} of at most {ceiling}: the engine changes the speculative "
                "settings that were asked for"
            )
        else:
            d.summary = f"measured accept length {tau:.2f} of at most {ceiling} the flags allow; nothing to compare with"
        if pred is None:
            d.needs.append(
                "--drafter DIR and --target DIR (the target's weights): the predictions to compare with"
            )
        else:
            d.needs.append("--target DIR with the target's weights (a dump predicts no accept length)")
        d.needs.append(
            "--data FILE when the target is not the bundled zoo (the prompts to send and predict on)"
        )
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
        d.summary = "no prediction under the served taps (see notes)"
        d.needs.append("a drafter whose served taps the table resolves (see `eaglewire check`)")
        d.notes += pred.notes
        return d
    differ = {lab: c for lab, c in served.items() if c is not None and pred.trained is not None
              and not pred.served[lab].same_set(pred.trained)}  # fmt: skip
    same = {lab: c for lab, c in served.items() if c is not None and lab not in differ}
    if trained is None:
        if lint_problems:
            d.name, d.causes = "flags", ["flags"]
            d.summary = f"measured {tau:.2f}: the engine changes the speculative settings that were asked for"
            d.notes.append("the drafter's training taps are unknown: the wiring is not checked")
            return d
        d.summary = f"measured {tau:.2f}; the drafter's training taps are unknown, so served-as-trained is undecidable"
        d.needs.append(
            "the training taps: a checkpoint with eaglewire provenance or a trainer record (see check)"
        )
        return d
    wired = [lab for lab, c in differ.items() if c.matches]
    if wired and not (trained.matches and same):
        lab = wired[0]
        c = differ[lab]
        d.name, d.causes = "wiring", ["wiring"]
        apart = abs(trained.predicted - c.predicted) > tol(trained.predicted) + tol(c.predicted)
        d.summary = (
            f"measured {tau:.2f} matches the prediction under the served taps {c.taps} ({c.predicted:.2f}), "
            f"not under the trained taps {trained.taps} ({trained.predicted:.2f}): {lab} feeds the drafter other "
            "hidden states than it was trained on"
        )
        if not apart:
            d.notes.append(
                f"on this workload the served taps cost less than the tolerance ({c.predicted:.2f} vs "
                f"{trained.predicted:.2f}); the static check still finds the mismatch"
            )
        verdict = next((v for v in pred.verdicts if v.engine == lab), None)
        if verdict is not None:
            d.config_fix, d.fix_engine = verdict.fix, lab
        _other_causes(d, pred, trained_curve(pred), lint_problems, k, engine, tol, primary=False)
        return d
    if trained.matches and (same or not differ):
        if len(served) > 1 and same:
            d.notes.append(
                f"the measurement fits {', '.join(same)} (the runner rows that feed the trained taps)"
            )
        _other_causes(d, pred, trained_curve(pred), lint_problems, k, engine, tol, primary=True)
        if not d.causes:
            d.name, d.causes = "served-as-trained", []
            d.summary = (
                f"measured {tau:.2f} matches the prediction under the trained taps {trained.taps} "
                f"({trained.predicted:.2f}): served as trained"
            )
        return d
    d.name, d.causes = "unexplained", ["unexplained"]
    parts = [f"{c.label} {c.taps}: predicted {c.predicted:.2f}, off by {c.difference:+.2f} "
             f"({c.difference / c.predicted:+.0%}, tolerance {c.tolerance:.2f})" for c in d.comparisons]  # fmt: skip
    if trained.matches and differ and not same:
        d.summary = (
            f"measured {tau:.2f} matches the trained taps {trained.taps}, but eaglewire's table says "
            f"{', '.join(differ)} feeds {', '.join(c.taps for c in differ.values())}: the table row may not fit "
            "this server, or it runs another drafter"
        )
    else:
        d.summary = f"measured {tau:.2f} matches no prediction: " + "; ".join(parts)
    return d


def trained_curve(pred: Prediction) -> Curve | None:
    return pred.curve(pred.trained)


def _other_causes(
    d: Diagnosis,
    pred: Prediction,
    curve: Curve | None,
    lint_problems: list[Change],
    k: int | None,
    engine: str,
    tol: Callable[[float], float],
    primary: bool,
) -> None:
    """Flags and drafter strength, once the wiring is settled. `primary`: they name the diagnosis."""
    causes: list[str] = []
    messages: list[str] = []
    if lint_problems:
        causes.append("flags")
        messages.append(
            "the engine changes the speculative settings that were asked for: " + lint_problems[0].message
        )
    weak_msg = None
    if curve is not None:
        first = _first_position(curve)
        if first is not None and first < WEAK_FIRST_POSITION:
            weak_msg = (
                f"the drafter's first draft token is accepted at {first:.0%} of verifies (< "
                f"{WEAK_FIRST_POSITION:.0%}) under its trained taps {curve.wiring}"
            )
        rec = (pred.recorded or {}).get("acc")
        if weak_msg is None and rec and curve.teacher_acc:
            rows = pred.prompts * pred.new_tokens
            if curve.teacher_acc[0] < rec[0] - _drop_tolerance(rows):
                weak_msg = (
                    f"on this workload the drafter scores {curve.teacher_acc[0]:.3f} teacher-forced against "
                    f"{rec[0]:.3f} recorded at training time: a data, domain or template question"
                )
        if weak_msg:
            causes.append("weak-drafter")
            messages.append(weak_msg)
        if k == 1 and pred.tree is None and not weak_msg:
            more = max(2, min(pred.ttt_steps or 3, len(curve.tau)))
            gain = curve.at(more) - curve.at(1) if curve.at(more) is not None else 0.0
            if gain > tol(curve.at(more) or 0.0) + tol(curve.at(1)):
                causes.append("flags")
                messages.append(
                    f"one draft token per verify caps the accept length at 2; with {more} draft tokens the "
                    f"prediction is {curve.at(more):.2f} (the drafter was trained to draft "
                    f"{pred.ttt_steps or 'an unknown number of'} steps)"
                )
                d.flag_fixes.append(
                    " ".join(e.render() for e in _more_drafts(engine, more))
                    + "  (more draft tokens per verify; `eaglewire advise` prices the choice on your hardware)"
                )
    # a flag override lint found is a definite fault; otherwise a weak drafter explains more than its K
    order = {"flags": 0, "weak-drafter": 1} if lint_problems else {"weak-drafter": 0, "flags": 1}
    ranked = sorted(dict.fromkeys(causes), key=lambda c: order.get(c, 9))
    if primary and ranked:
        d.name = ranked[0]
        d.causes = ranked
        d.summary = messages[causes.index(ranked[0])]
        d.notes += [msg for c, msg in zip(causes, messages, strict=True) if c != ranked[0]]
    else:
        d.causes += [c for c in ranked if c not in d.causes]
        d.notes += messages
