"""What the live server should measure: the engine-walk prediction (jobs/evaluate.py) on the probe's own prompts,
under the taps the engine feeds and under the taps the drafter was trained on, for the server's draft settings.

The served taps come from the convention table through `check` (the same resolution `check` and `doctor` use) for
the engine and version the server reports. vLLM's runner depends on the platform, not only the version, and is
picked the way `check` picks it (`engines/runners.py` `select_rows`): the runner given (read from the server, or
--runner), else V1 on a CPU, else the version's CUDA default for the target. Where the runner was not given (the
platform assumed, or CUDA without a word on the runner), every other runner row of that version is a candidate
too, each wiring gets its own prediction, and the measurement says which one is served; `Prediction.runner` says
which row was picked and why.

With a dump instead of the target's weights (`--dump`) there is no target to walk: the drafter is scored
teacher-forced on the dump under both wirings (what training logs), which tells wiring apart but predicts no
accept length.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import torch
from packaging.version import InvalidVersion, Version

from eaglewire.data import Sample
from eaglewire.dumps import open_dump
from eaglewire.engines.runners import PLATFORMS
from eaglewire.errors import InputError
from eaglewire.formats import read_drafter
from eaglewire.jobs.check import CheckReport, EngineVerdict, check
from eaglewire.jobs.evaluate import Evaluation, TreeSetting, chain_data, evaluate
from eaglewire.jobs.pair import drafter_for, served_context
from eaglewire.partial import load_partial_target
from eaglewire.server.workload import Prompt
from eaglewire.taps import Wiring
from eaglewire.targets import load_target, read_target, resolve_dtype


@dataclass
class Curve:
    """The prediction under one wiring: accept length along the engine's walk for K = 1..steps drafts."""

    label: str  # "served (vllm==0.32.0 v1)", "trained", or both
    wiring: Wiring
    tau: list[float]
    per_position: list[float] | None  # at the server's K (engine's counting), where the evaluation gives it
    tree: float | None = None  # SGLang tree setting's accept length, when the server drafts a tree
    teacher_acc: list[float] | None = (
        None  # teacher-forced per-step acc on the same tokens (dump: the only number)
    )

    def at(self, k: int) -> float | None:
        if self.tree is not None:
            return self.tree
        return self.tau[k - 1] if 0 < k <= len(self.tau) else None

    def to_dict(self) -> dict:
        return {
            "label": self.label,
            "taps": str(self.wiring),
            "predicted_tau": [round(x, 4) for x in self.tau],
            "per_position_acceptance": [round(x, 4) for x in self.per_position]
            if self.per_position
            else None,
            "tree_accept_length": self.tree,
            "teacher_forced_acc": [round(x, 4) for x in self.teacher_acc] if self.teacher_acc else None,
        }


@dataclass
class Prediction:
    k: int  # the server's draft tokens per verify
    engine: str  # e.g. vllm==0.32.0
    runners: list[str]  # the runner rows considered
    served: dict[str, Wiring]  # runner label -> taps the engine feeds
    trained: Wiring | None
    trained_basis: str
    curves: dict[str, Curve]  # str(wiring) -> curve
    static: CheckReport
    verdicts: list[EngineVerdict]  # the rows considered
    recorded: dict | None  # training metrics recorded in the checkpoint (provenance)
    ttt_steps: int | None  # the drafter's training unroll, where recorded
    prompts: int = 0
    new_tokens: int = 0
    tree: TreeSetting | None = None
    walk: bool = True  # False with a dump: teacher-forced only, no accept length
    runner: str | None = None  # vLLM: the runner of the row picked first (the others are candidates too)
    runner_why: str | None = None  # why that row: given, V1 on CPU, or the CUDA default (select_rows' words)
    notes: list[str] = field(default_factory=list)

    def curve(self, wiring: Wiring | None) -> Curve | None:
        return self.curves.get(str(wiring)) if wiring is not None else None

    @property
    def served_curves(self) -> dict[str, Curve]:
        return {label: c for label, w in self.served.items() if (c := self.curve(w)) is not None}

    def to_dict(self) -> dict:
        return {
            "engine": self.engine,
            "runners": self.runners,
            "draft_tokens_per_verify": self.k,
            "tree": str(self.tree) if self.tree else None,
            "served_taps": {k: str(v) for k, v in self.served.items()},
            "trained_taps": str(self.trained) if self.trained else None,
            "trained_basis": self.trained_basis,
            "curves": {k: c.to_dict() for k, c in self.curves.items()},
            "recorded_training_metrics": self.recorded,
            "ttt_steps": self.ttt_steps,
            "prompts": self.prompts,
            "new_tokens": self.new_tokens,
            "engine_walk": self.walk,
            "runner": self.runner,
            "runner_why": self.runner_why,
            "static": self.static.to_dict(),
            "notes": self.notes,
        }


def engine_spec(engine: str, version: str | None) -> str:
    """`vllm==0.32.0` from what the server reports (a local build suffix dropped); the newest row without one."""
    if not version:
        return engine
    try:
        return f"{engine}=={Version(version).base_version}"
    except InvalidVersion:
        return engine


def candidate_verdicts(
    ckpt, tinfo, spec: str, engine: str, platform: str | None, runner: str | None
) -> tuple[CheckReport, list[EngineVerdict], str]:
    """(the check report, the verdict rows the server may be using, why): the row `check` picks for the platform
    and runner given, and, where the runner was not given and vLLM may run another one (not on a CPU), every
    other runner row of the version (each a candidate: the measurement says which one is served)."""
    vllm = engine == "vllm"
    row_platform = platform if vllm and platform in PLATFORMS else None
    static = check(ckpt, tinfo, [spec], platform=row_platform, runner=runner if vllm else None)
    picked = list(static.verdicts)
    if not vllm or runner is not None or row_platform == "cpu":
        return static, picked, ""
    for v in static.verdicts:
        for alt in v.alternatives:
            other = alt.served.row.runner
            if other and all(p.row_key != alt.row_key for p in picked):
                picked += check(ckpt, tinfo, [spec], platform=row_platform, runner=other).verdicts
    if len(picked) == len(static.verdicts):
        return static, picked, ""
    why = (
        f"the runner not given: {', '.join(p.engine for p in picked)} predicted (the measurement says which)"
    )
    return static, picked, why


def _samples(prompts: list[Prompt]) -> list[Sample]:
    out = []
    for p in prompts:
        if p.ids is None:
            raise InputError("the prediction needs token-id prompts (give --target with its tokenizer)")
        ids = torch.tensor(p.ids, dtype=torch.long)
        out.append(Sample(ids, torch.ones(ids.numel(), dtype=torch.bool), p.source))
    return out


def _per_position(ev: Evaluation, k: int) -> list[float] | None:
    """Per-position acceptance as the engine counts it, with k drafts (the walk's counts, where the standalone
    test gives them)."""
    walks = getattr(ev, "walks", None)
    if walks and len(walks) >= k:
        return list(walks[k - 1].per_position)
    return None


def predict(
    drafter: Path | str,
    target: Path | str,
    prompts: list[Prompt],
    new_tokens: int,
    engine: str,
    version: str | None,
    k: int,
    platform: str | None = None,
    tree: TreeSetting | None = None,
    dump: Path | None = None,
    dump_ids: list[int] | None = None,
    device: str = "cpu",
    progress=None,
    runner: str | None = None,
) -> Prediction:
    """Predictions under every candidate served wiring and the trained wiring, on the probe's prompts. `platform`
    and `runner` are what is known of the server (None: not known)."""
    say = progress or (lambda *_: None)
    ckpt = read_drafter(drafter)
    tinfo = read_target(target)
    spec = engine_spec(engine, version)
    static, verdicts, why = candidate_verdicts(ckpt, tinfo, spec, engine, platform, runner)
    served = {v.engine: v.served.taps for v in verdicts if v.served.taps is not None}
    trained = static.trained.wiring
    prov = ckpt.provenance.training if ckpt.provenance else None
    recorded = (prov or {}).get("held_out")
    ttt = ((prov or {}).get("config") or {}).get("ttt_steps")
    pred = Prediction(
        k, spec, [v.engine for v in verdicts], served, trained,
        f"{static.trained.basis} (confidence {static.trained.confidence})", {}, static, verdicts, recorded,
        ttt if isinstance(ttt, int) else None, len(prompts), new_tokens, tree,
    )  # fmt: skip
    if engine == "vllm" and static.verdicts:
        pred.runner = static.verdicts[0].served.row.runner
        pred.runner_why = static.verdicts[0].runner
    if why:
        pred.notes.append(why)
    for v in verdicts:
        if v.served.failure:
            pred.notes.append(f"{v.engine}: {v.served.failure}")
    steps = max(k, 3, pred.ttt_steps or 0)
    wirings: dict[str, tuple[Wiring, list[str]]] = {}
    for label, w in served.items():
        wirings.setdefault(str(w), (w, []))[1].append(f"served ({label})")
    if trained is not None:
        wirings.setdefault(str(trained), (trained, []))[1].append("trained")
    if dump is not None:
        tgt = load_partial_target(Path(target), device)
        model = drafter_for(ckpt, tgt, resolve_dtype(target, "float32"))
        src = open_dump(dump, tgt, dump_ids, None)
        items = [src[i] for i in range(min(len(prompts) or 12, len(src)))]
        head = src.target_head()
        pred.walk = False
        held = set(src.taps.indices)
        for key, (w, labels) in wirings.items():
            if len(w) != model.arch.n_aux or not set(w.indices) <= held:
                pred.notes.append(f"{' and '.join(labels)} taps {w}: not in the dump (it holds {src.taps})")
                continue
            say(f"teacher-forced on the dump under {w}")
            ev = evaluate(model, items, w, steps, "teacher", head=head)
            pred.curves[key] = Curve(" and ".join(labels), w, [], None, teacher_acc=ev.acc)
        pred.notes.append(
            "with a dump: teacher-forced accuracy on the training data, no engine-walk accept length"
        )
        return pred
    tgt = load_target(Path(target), dtype=resolve_dtype(target, "float32"), device=device)
    model = drafter_for(ckpt, tgt)
    # the release's runner stops drafting past the drafter's context (each request walked on its own)
    gate, gate_note = served_context(ckpt, tgt, str(spec), platform, pred.runner)
    if gate_note:
        pred.notes.append(f"walked as served: {gate_note}")
    samples = _samples(prompts)
    prompt_len = max(s.input_ids.numel() for s in samples)
    say(f"the target's greedy continuations of {len(samples)} prompts ({new_tokens} tokens each)")
    items = chain_data(tgt, samples, list(range(tinfo.num_layers + 1)), prompt_len, new_tokens)
    for key, (w, labels) in wirings.items():
        if len(w) != model.arch.n_aux:
            pred.notes.append(
                f"{' and '.join(labels)} taps {w}: {len(w)} taps, the drafter's fc takes {model.arch.n_aux}"
            )
            continue
        say(f"engine walk under {' and '.join(labels)} taps {w}")
        ev = evaluate(model, items, w, steps, "chain", trees=(tree,) if tree else (), gate=gate)
        teacher = evaluate(model, items, w, 1, "teacher")
        pred.curves[key] = Curve(
            " and ".join(labels), w, list(ev.tau), _per_position(ev, k),
            ev.tree.get(str(tree)) if tree else None, teacher.acc,
        )  # fmt: skip
    return pred
