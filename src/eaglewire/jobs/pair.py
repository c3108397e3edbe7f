"""A target and a drafter ready to run together, and the wiring to feed: the one place a checkpoint becomes a
runnable drafter on a given target (its embedding filled in from the target when the checkpoint has none), on
one device and in one dtype. With a dump the target is partial: no layers, only the tensors a job asks for."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from eaglewire.drafter import Eagle3Drafter
from eaglewire.errors import InputError
from eaglewire.formats import DrafterCheckpoint, read_drafter
from eaglewire.formats.trained import trained_taps
from eaglewire.metrics import ContextGate
from eaglewire.partial import PartialTarget, load_partial_target
from eaglewire.rules.draft_weights import REFUSED
from eaglewire.taps import Wiring
from eaglewire.targets import LoadedTarget, load_target, resolve_dtype


@dataclass
class Pair:
    target: LoadedTarget | PartialTarget  # PartialTarget: a job on a dump (no target layers)
    checkpoint: DrafterCheckpoint
    drafter: Eagle3Drafter
    wiring: Wiring  # the taps fed to the drafter's fc
    basis: str  # where that wiring comes from ("--taps", "served by sglang==0.5.23", the training record...)
    gate: ContextGate | None = (
        None  # where the release stops drafting past the draft's context (served_context)
    )


def drafter_for(
    ckpt: DrafterCheckpoint,
    target: LoadedTarget | PartialTarget,
    dtype: torch.dtype | None = None,
    device: torch.device | None = None,
    embedding: str = "own",
    head: str = "own",
) -> Eagle3Drafter:
    """The checkpoint as a drafter for this target, on the target's device, in `dtype` (default: the target's).
    The target's embedding is read when the checkpoint has none (modelopt exports, EAGLE drafters), or where
    `embedding` is "target": the engine release replaces the drafter's own (rules.draft_weights). `head` is the
    lm_head it scores with (`served_head`): its own, the target's (also where the checkpoint has none), or the
    embedding it computes with (tied)."""
    dtype = dtype or getattr(target, "dtype", torch.float32)
    own = "embed_tokens.weight" in ckpt.tensors and embedding == "own"
    embed = None if own else target.input_embedding()
    lm_head = None
    if head == "own" and "lm_head.weight" not in ckpt.tensors:
        head = "target"  # like the embedding: a checkpoint without one scores with the target's
    if head == "target":
        lm_head = target.lm_head()
    elif head == "embedding":  # tied: the embedding's first draft_vocab_size rows score the draft vocabulary
        rows = ckpt.arch.draft_vocab_size if ckpt.arch is not None else None
        lm_head = (embed if embed is not None else ckpt.tensors["embed_tokens.weight"])[:rows]
    elif head != "own":
        raise InputError(f"{ckpt.where()}: no lm_head to score drafts with ({head})")
    model = Eagle3Drafter.from_checkpoint(ckpt, embed_tokens=embed, dtype=dtype, lm_head=lm_head)
    return model.to(device or target.device).eval()


def feed_wiring(
    ckpt: DrafterCheckpoint,
    target: LoadedTarget | PartialTarget,
    taps: str | None = None,
    engine: str | None = None,
    platform: str | None = None,
    runner: str | None = None,
) -> tuple[Wiring, str]:
    """The taps to feed: `taps` as given, what `engine` would serve (on `platform`, with `runner`: the row
    `conventions.serving_row` picks, as `check` and `doctor` do), or the training taps (refused if unknown)."""
    L = target.info.num_layers
    if taps and engine:
        raise InputError("--taps and --engine are alternatives: give one")
    if taps:
        return Wiring.parse(taps).validate(L), "--taps"
    if engine:
        from eaglewire.engines import runners, table
        from eaglewire.rules import taps as conv

        info = target.info
        choice = runners.serving_row(table.parse_spec(engine), info.family, platform, runner,
                                  architecture=info.architecture, model_type=info.model_type)  # fmt: skip
        row = choice.match.row
        served = conv.resolve(row, ckpt.config, L)
        assumed = f"; {choice.assumed}" if choice.assumed else ""
        if (both := conv.replayed(row, ckpt.config, L)) is not None:
            # a path that feeds the default whatever the ids (SGLang's CUDA graphs before 0.5.11): every step it
            # replays, every verify of a single sequence after the first prefill, gets the default's taps
            default, eager = both
            if eager is not None and len(eager) != len(default):  # the union of flags: more than the fc takes
                raise InputError(f"--engine {engine}: {row.ignores_ids}: the prefill gets {eager}, "
                                 f"{len(eager)} states where the draft's fc takes {len(default)}")  # fmt: skip
            return default, (f"served by {engine} on its replayed steps ({row.ignores_ids}): the walk feeds "
                             f"{default}, the prefill alone {eager}{assumed}")  # fmt: skip
        if served.taps is None:
            other = "".join(
                f"; {a.when} vLLM runs {r.upper()}: pass --runner {r}" if (r := a.match.row.runner)
                else f"; {a.when}: pass --platform cpu"
                for a in choice.alternatives if a.match.row.rule is not conv.Rule.UNSUPPORTED)  # fmt: skip
            raise InputError(f"--engine {engine}: {served.failure}{other}")
        runner_note = f", {choice.why}" if choice.runner else ""
        return served.taps, f"served by {engine}{runner_note}{assumed}"
    tr = trained_taps(ckpt, target.info)
    if tr.wiring is None:
        raise InputError(f"{ckpt.where()}: cannot tell its training taps ({tr.basis}); pass --taps")
    return tr.wiring, tr.basis


def load_pair(
    target: Path | str,
    drafter: Path | str,
    taps: str | None = None,
    engine: str | None = None,
    dtype: str = "float32",
    device: str = "cpu",
    partial: bool = False,
    platform: str | None = None,
    runner: str | None = None,
) -> Pair:
    """Target and drafter, both in `dtype` (`auto`: as the target is stored, as engines serve it), on `device`.
    `partial`: the target without its layers (a job on a dump): config and the tensors asked for, by name."""
    run_dtype = resolve_dtype(target, dtype)
    if partial:
        tgt: LoadedTarget | PartialTarget = load_partial_target(target, device)
    else:
        tgt = load_target(target, dtype=run_dtype, device=device)
    ckpt = read_drafter(drafter)
    wiring, basis = feed_wiring(ckpt, tgt, taps, engine, platform, runner)
    embedding, note = served_embedding(ckpt, tgt, engine)
    head, head_note = served_head(ckpt, tgt, engine)
    if head in REFUSED:  # the release refuses the drafter, or scores garbage: no walk stands for it
        raise InputError(f"--engine {engine}: {head_note}")
    gate, gate_note = served_context(ckpt, tgt, engine, platform, runner)
    for said in (note, head_note, gate_note):
        if said:
            basis = f"{basis}; {said}"
    model = drafter_for(ckpt, tgt, run_dtype, embedding=embedding, head=head)
    return Pair(tgt, ckpt, model, wiring, basis, gate)


def served_embedding(
    ckpt: DrafterCheckpoint, target: LoadedTarget | PartialTarget, engine: str | None
) -> tuple[str, str | None]:
    """The token embedding the drafter computes with when `engine` serves it ("own" or "target"), and what to say
    where it is not the checkpoint's own. Only a checkpoint that carries its own embed_tokens can have it replaced,
    and one that carries an exact copy of the target's (as SpecForge and speculators train them) computes the same
    either way: "own", and nothing is built twice."""
    if engine is None or "embed_tokens.weight" not in ckpt.tensors:
        return "own", None
    from eaglewire.engines import table
    from eaglewire.engines.draft_weights import ROWS, draft_embedding
    from eaglewire.rules.ledger import ledger

    spec = table.parse_spec(
        engine.split()[0]
    )  # "vllm==0.32.0 mrv2": the runner does not change the embedding
    if spec.framework not in {r.engine for r in ROWS}:
        return "own", None
    version = str(spec.version) if spec.version else ledger(spec.framework).newest()
    choice = draft_embedding(spec.framework, version, ckpt.config, target.info.hidden_size)
    if not choice.replaced or _same_values(ckpt.tensors["embed_tokens.weight"], target.input_embedding()):
        return "own", None
    return (
        "target",
        f"the target's embedding in place of the drafter's own ({choice.row.name}: {choice.row.source})",
    )


def served_head(
    ckpt: DrafterCheckpoint, target: LoadedTarget | PartialTarget, engine: str | None
) -> tuple[str, str | None]:
    """The lm_head the drafter scores with when `engine` serves it (rules.draft_weights.HEADS), and what to say
    where it is not the checkpoint's own. An own lm_head that is an exact copy of the target's (a release that
    replaces it changes nothing) is "own"."""
    if engine is None:
        return "own", None
    from eaglewire.engines import table
    from eaglewire.engines.draft_weights import HEAD_ROWS, checkpoint_cases, draft_head
    from eaglewire.rules.ledger import ledger

    spec = table.parse_spec(engine.split()[0])
    if spec.framework not in {r.engine for r in HEAD_ROWS}:
        return "own", None
    version = str(spec.version) if spec.version else ledger(spec.framework).newest()
    has_head = "lm_head.weight" in ckpt.tensors
    choice = draft_head(spec.framework, version, checkpoint_cases(ckpt))
    row = choice.row
    if row is None or choice.head == "own":
        return "own", None
    cite = f"({row.name}: {row.source})"
    if choice.refused:
        return choice.head, choice.refusal(f"{spec.framework} {version}")
    if choice.head == "target":
        if has_head and _same_values(ckpt.tensors["lm_head.weight"], target.lm_head()):
            return "own", None
        whose = "in place of the drafter's own" if has_head else "(the drafter has none)"
        return "target", f"the target's lm_head {whose} {cite}"
    return "embedding", f"its embedding as the lm_head (tied) {cite}"


def served_context(
    ckpt: DrafterCheckpoint,
    target: LoadedTarget | PartialTarget,
    engine: str | None,
    platform: str | None = None,
    runner: str | None = None,
) -> tuple[ContextGate | None, str | None]:
    """Where `engine` (on `platform`, with `runner`: the row `check` picks) stops drafting once a sequence
    outgrows the drafter's context (rules.draft_context), served at the target's own length; and what to say."""
    if engine is None:
        return None, None
    from eaglewire.engines import runners, table
    from eaglewire.engines.draft_weights import CONTEXT_ROWS, draft_context
    from eaglewire.rules.draft_context import PAST_WORDS, model_length
    from eaglewire.rules.ledger import ledger

    text, *named = engine.split()  # "vllm==0.32.0 v1": a verdict's label names its runner
    spec = table.parse_spec(text)
    if spec.framework not in {r.engine for r in CONTEXT_ROWS}:
        return None, None
    info = target.info
    choice = runners.serving_row(spec, info.family, platform, runner or (named[0] if named else None),
                                 architecture=info.architecture, model_type=info.model_type)  # fmt: skip
    version = str(spec.version) if spec.version else ledger(spec.framework).newest()
    served = model_length(info.config)
    found = draft_context(spec.framework, version, choice.match.row.runner, ckpt.config, served)
    gate = found.gate()
    if gate is None or found.row is None:
        return None, None
    return gate, (
        f"past the draft's context {gate.limit}: {PAST_WORDS[found.row.past]}"
        f"{', for the whole batch' if gate.batch else ''} ({found.row.name})"
    )


def _same_values(a: torch.Tensor, b: torch.Tensor, rows: int = 8192) -> bool:
    """Two [vocab, hidden] matrices hold the same values, compared in fp32 a block of rows at a time (a 163,840-row
    embedding is never copied whole)."""
    if tuple(a.shape) != tuple(b.shape):
        return False
    return all(
        torch.equal(a[i : i + rows].float().cpu(), b[i : i + rows].float().cpu())
        for i in range(0, a.shape[0], rows)
    )
