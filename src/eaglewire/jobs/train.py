"""Train an EAGLE-3 drafter with training-time test (`ttt.py`), recording its wiring in the checkpoint.

`train` is the loop (resumable, torchrun-ready); `train_drafter` is the job: a target and a sample source in, a
drafter folder (EAGLE/SGLang format + provenance, optionally a speculators copy) out.

Data parallel: under `torchrun` every rank takes every world-th sample of the global batch and gradients are
summed across ranks; losses are normalised by the global token count, so N processes give the same steps as one.
Each rank runs on `device` (cuda:LOCAL_RANK when the caller picks a GPU), NCCL on GPUs, gloo on CPUs.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
import torch.distributed as dist

from eaglewire import __version__
from eaglewire.capture import SampleSource
from eaglewire.data import SampleLoader
from eaglewire.drafter import Eagle3Drafter
from eaglewire.dumps import require_taps
from eaglewire.errors import InputError
from eaglewire.formats import DrafterCheckpoint, Provenance, write_drafter
from eaglewire.formats.convert import format_config
from eaglewire.jobs.train_state import all_sum, init_distributed, load_state, same_config, save_state, world
from eaglewire.jobs.ttt import DrafterShape, StepMetrics, evaluate_ttt, new_drafter, token_counts, ttt_loss
from eaglewire.jsonio import read_json, read_json_object, write_json
from eaglewire.metrics import StepCounts
from eaglewire.taps import Wiring
from eaglewire.targets import TargetInfo


@dataclass
class TrainConfig:
    """Every hyper-parameter in one place (recorded in the checkpoint's provenance)."""

    taps: str  # the wiring, e.g. "h0,h3,h31"
    draft_vocab_size: int | None = None  # None = the target vocabulary (no reduction)
    num_layers: int = 1
    intermediate_size: int | None = None  # default: the target's
    num_heads: int | None = None
    num_kv_heads: int | None = None
    norm_before_residual: bool = False
    ttt_steps: int = 7
    step_decay: float = 0.8
    steps: int = 1000  # optimizer steps
    batch_size: int = 8  # samples per optimizer step (global, across ranks and accumulation)
    grad_accum: int = 1
    lr: float = 1e-3
    warmup_steps: int = 50
    min_lr_ratio: float = 0.1
    weight_decay: float = 0.0
    grad_clip: float = 0.5
    bf16: bool = False
    eval_every: int = 100
    checkpoint_every: int = 100
    seed: int = 0
    threads: int | None = None
    init_from: str | None = None  # continue from this drafter's weights and vocabulary map (a second phase)


@dataclass
class TrainResult:
    out: Path
    steps: int
    history: list[dict]
    val: StepMetrics | None
    train_seconds: float
    tokens_per_second: float
    resumed_from: int = 0
    model: Eagle3Drafter | None = None  # the trained drafter (None when the run was already complete on disk)
    t2d: torch.Tensor | None = None
    world_size: int = 1
    finished_before: bool = False  # `out` already held this exact run: nothing was trained
    notes: list[str] = field(default_factory=list)
    taps: str = ""  # the training wiring, ascending

    def to_dict(self) -> dict:
        val = self.val
        return {
            "out": str(self.out),
            "steps": self.steps,
            "resumed_from": self.resumed_from,
            "world_size": self.world_size,
            "tokens_per_second": round(self.tokens_per_second, 1),
            "held_out": None if val is None else {"acc": val.acc, "cond_acc": val.cond_acc, "loss": val.loss},
            "notes": self.notes,
        }


# ---- the loop ----------------------------------------------------------------------------------------------


def lr_at(step: int, cfg: TrainConfig) -> float:
    """Linear warmup, then cosine down to min_lr_ratio * lr."""
    if step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / cfg.warmup_steps
    progress = min(1.0, (step - cfg.warmup_steps) / max(1, cfg.steps - cfg.warmup_steps))
    return cfg.lr * (cfg.min_lr_ratio + (1 - cfg.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress)))


def batch_indices(step: int, n: int, cfg: TrainConfig) -> list[int]:
    """The global batch of `step`: a seeded permutation per epoch, so a resumed run sees the same order."""
    per_epoch = max(1, n // cfg.batch_size)
    epoch, k = divmod(step, per_epoch)
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(cfg.seed * 100003 + epoch)).tolist()
    return perm[k * cfg.batch_size : (k + 1) * cfg.batch_size]


def _init_from(model: Eagle3Drafter, path: str, wiring: Wiring) -> torch.Tensor:
    """Load an earlier drafter (same shape, same taps) to continue training it; returns its t2d."""
    from eaglewire.formats import read_drafter
    from eaglewire.formats.vocab import t2d_from_d2t

    ckpt = read_drafter(path)
    if ckpt.provenance and ckpt.provenance.taps and Wiring.parse(ckpt.provenance.taps).served() != wiring:
        raise InputError(
            f"{path}: trained on {ckpt.provenance.taps}, not {wiring}; continue with the same taps"
        )
    if ckpt.arch is None or ckpt.arch.draft_vocab_size != model.arch.draft_vocab_size:
        raise InputError(f"{path}: not the same drafter shape (draft vocab, layers) as this run")
    model.load_canonical({k: v.float() if v.is_floating_point() else v for k, v in ckpt.tensors.items()})
    return ckpt.tensors.get("t2d", t2d_from_d2t(model.d2t, model.arch.vocab_size)).bool()


def train(
    cfg: TrainConfig,
    source: SampleSource,
    target: TargetInfo,
    out: Path | str,
    *,
    embed: torch.Tensor,
    shape: DrafterShape,
    val_source: SampleSource | None = None,
    val_indices: list[int] | None = None,
    train_indices: list[int] | None = None,
    progress: Callable[[int, int, dict], None] | None = None,
    stop_after: int | None = None,
    device: torch.device | str = "cpu",
) -> TrainResult:
    """Train (or resume) into `out`; `out/checkpoint` holds the resume state, the drafter goes to `out`."""
    device = torch.device(device)
    init_distributed(device)
    rank, size = world()
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    out = Path(out)
    wiring = Wiring.parse(cfg.taps).validate(target.num_layers).served()
    require_taps(source, wiring, "--taps")
    train_indices = train_indices if train_indices is not None else list(range(len(source)))
    val_indices = val_indices or []
    val_source = val_source or source
    head = source.target_head()
    counts = token_counts(source, train_indices, target.vocab_size)
    model, t2d = new_drafter(cfg, target, wiring, counts, head, embed, shape)
    if cfg.init_from:
        t2d = _init_from(model, cfg.init_from, wiring)
    model, head = model.to(device), head.to(device)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=cfg.lr, betas=(0.9, 0.95), weight_decay=cfg.weight_decay)
    ckpt_dir = out / "checkpoint"
    start, history = 0, []
    if (ckpt_dir / "state.json").exists():
        start, history, t2d = load_state(ckpt_dir, model, opt, cfg)

    def held_out() -> StepMetrics:
        return evaluate_ttt(
            model, _on(val_source, device), val_indices, wiring, head, cfg.ttt_steps, cfg.step_decay
        )

    model.train()
    t0, tokens_seen = time.perf_counter(), 0
    step = start
    for step in range(start, cfg.steps):
        if stop_after is not None and step >= stop_after:
            break
        for g in opt.param_groups:
            g["lr"] = lr_at(step, cfg)
        batch = batch_indices(step, len(train_indices), cfg)
        mine = [train_indices[j] for pos, j in enumerate(batch) if pos % size == rank]
        samples = [source[i].to(device) for i in mine]
        global_tokens = all_sum([float(sum(int(s.loss_mask[2:].sum()) for s in samples))], device)[0]
        opt.zero_grad(set_to_none=True)
        loss_sum, counts = 0.0, StepCounts.zeros(cfg.ttt_steps)
        for s in samples:
            r = ttt_loss(model, s, wiring, head, cfg.ttt_steps, cfg.step_decay, cfg.bf16)
            if r is None:
                continue
            (r.loss / max(1.0, global_tokens)).backward()
            loss_sum += float(r.loss.detach())
            counts = counts + r.counts
        if size > 1:
            for p in params:
                if p.grad is None:
                    p.grad = torch.zeros_like(p)
                dist.all_reduce(p.grad)
        torch.nn.utils.clip_grad_norm_(params, cfg.grad_clip)
        opt.step()
        summed = all_sum([loss_sum, *counts.as_list()], device)
        m = StepMetrics.of(summed[0], int(global_tokens), StepCounts.from_list(summed[1:]))
        tokens_seen += int(global_tokens)
        done = step + 1
        rec = {
            "step": done,
            "loss": round(m.loss, 6),
            "acc": [round(a, 4) for a in m.acc],
            "lr": lr_at(step, cfg),
        }
        if val_indices and (done % cfg.eval_every == 0 or done == cfg.steps):
            v = held_out()
            rec["val"] = {
                "loss": round(v.loss, 6),
                "acc": [round(a, 4) for a in v.acc],
                "cond_acc": [round(a, 4) for a in v.cond_acc],
            }
        history.append(rec)
        if progress and rank == 0:
            progress(done, cfg.steps, rec)
        if rank == 0 and (done % cfg.checkpoint_every == 0) and done < cfg.steps:
            save_state(ckpt_dir, model, opt, done, history, cfg, t2d)
    elapsed = time.perf_counter() - t0
    final = step + 1 if cfg.steps > start else start
    val = held_out() if val_indices else None
    return TrainResult(
        out,
        final,
        history,
        val,
        elapsed,
        tokens_seen / elapsed if elapsed > 0 else 0.0,
        start,
        model=model,
        t2d=t2d,
        world_size=size,
        taps=str(wiring),
    )


class _on:
    """A sample source whose samples are moved to `device` as they are read."""

    def __init__(self, source: SampleSource, device: torch.device):
        self.source, self.device = source, device

    def __len__(self) -> int:
        return len(self.source)

    def __getitem__(self, i: int):
        return self.source[i].to(self.device)


def to_checkpoint(
    model: Eagle3Drafter,
    t2d: torch.Tensor,
    cfg: TrainConfig,
    target: TargetInfo,
    result: TrainResult,
    data_note: str = "",
) -> DrafterCheckpoint:
    """The trained drafter as an in-memory checkpoint with full provenance."""
    tensors = {k: v.detach().cpu().clone().contiguous() for k, v in model.canonical_state().items()}
    tensors["t2d"] = t2d.cpu()
    val = result.val
    prov = Provenance(
        taps=str(Wiring.parse(cfg.taps).served()),
        target=target.identity(),
        draft_vocab={
            "size": model.arch.draft_vocab_size,
            "built_from": "loss-masked token counts of the training data",
        },
        training={
            "trainer": f"eaglewire {__version__}",
            "config": asdict(cfg),
            "steps": result.steps,
            "data": data_note,
            "held_out": None
            if val is None
            else {
                "acc": [round(a, 4) for a in val.acc],
                "cond_acc": [round(a, 4) for a in val.cond_acc],
                "loss": round(val.loss, 5),
                "tokens": val.tokens,
                "accuracy_convention": "top-1 agreement with the target's greedy token, teacher-forced TTT; acc is "
                "unconditional, cond_acc is conditional on all earlier steps agreeing",
            },
        },
        written_by=f"eaglewire train {__version__}",
    )
    return DrafterCheckpoint(format="eagle", arch=model.arch, tensors=tensors, config={}, provenance=prov)


# ---- the whole job: a target folder + data -> a drafter folder ----------------------------------------------


def _finished(out: Path, cfg: TrainConfig) -> TrainResult | None:
    """The result of a run already completed in `out` with these exact settings (so a rerun is a no-op)."""
    if not (out / "config.json").exists() or not (out / "model.safetensors").exists():
        return None
    prov = Provenance.from_config(read_json_object(out / "config.json", "drafter config"))
    training = (prov.training or {}) if prov else {}
    if not same_config(training.get("config"), cfg):
        return None
    held = training.get("held_out")
    val = None if not held else StepMetrics(held["loss"], held["acc"], held["cond_acc"], held["tokens"])
    history = (
        read_json(out / "train_history.json", "training history")
        if (out / "train_history.json").exists()
        else []
    )
    steps = training.get("steps", cfg.steps)
    taps = str(Wiring.parse(cfg.taps).served())
    return TrainResult(out, steps, history, val, 0.0, 0.0, cfg.steps, finished_before=True, taps=taps)


def split_indices(n: int, val_fraction: float) -> tuple[list[int], list[int]]:
    """Every k-th sample held out (k = 1/val_fraction): deterministic and spread over the data."""
    if val_fraction <= 0 or n < 2:
        return list(range(n)), []
    k = max(2, round(1 / val_fraction))
    val = [i for i in range(n) if i % k == k - 1]
    return [i for i in range(n) if i % k != k - 1], val


def train_drafter(
    target,
    source: SampleSource,
    out: Path | str,
    cfg: TrainConfig,
    *,
    val_source: SampleSource | None = None,
    val_fraction: float = 0.05,
    export_speculators: bool = False,
    data_note: str = "",
    progress: Callable[[int, int, dict], None] | None = None,
    stop_after: int | None = None,
    save_dtype: torch.dtype | None = None,
    device: torch.device | str = "cpu",
) -> TrainResult:
    """Train on `source` for the target `target` (a LoadedTarget or PartialTarget: its config shapes the
    drafter, its embedding is copied); write the drafter (EAGLE/SGLang format + provenance, optionally a speculators copy) into `out`."""
    out = Path(out)
    finished = _finished(out, cfg)
    if finished is not None:
        return finished
    if val_source is None:
        train_idx, val_idx = split_indices(len(source), val_fraction)
    else:
        train_idx, val_idx = list(range(len(source))), list(range(len(val_source)))
    res = train(
        cfg,
        source,
        target.info,
        out,
        embed=target.input_embedding().to("cpu", torch.float32),
        shape=drafter_shape(target.text_config()),
        val_source=val_source,
        val_indices=val_idx,
        train_indices=train_idx,
        progress=progress,
        stop_after=stop_after,
        device=device,
    )
    if res.steps < cfg.steps or world()[0] != 0:
        return res
    model, t2d = res.model, res.t2d
    if save_dtype is not None and save_dtype != torch.float32:
        # ship rounded weights, and record the held-out numbers of exactly those weights
        with torch.no_grad():
            for p in model.parameters():
                p.copy_(p.to(save_dtype).float())
        if val_idx:
            vs = _on(val_source or source, torch.device(device))
            head = (val_source or source).target_head().to(device)
            wiring = Wiring.parse(cfg.taps).served()
            res.val = evaluate_ttt(model, vs, val_idx, wiring, head, cfg.ttt_steps, cfg.step_decay)
    ckpt = to_checkpoint(model, t2d, cfg, target.info, res, data_note)
    if save_dtype is not None:
        ckpt.tensors = {
            k: (v.to(save_dtype) if v.is_floating_point() else v) for k, v in ckpt.tensors.items()
        }
    taps = Wiring.parse(ckpt.provenance.taps)
    config, ids, _, notes = format_config(ckpt, "eagle", taps, target.info, strict=False)
    write_drafter(
        ckpt,
        out,
        "eagle",
        ids,
        config=config,
        may_exist=("checkpoint", "train_history.json", "README.md", "speculators"),
    )
    write_json(out / "train_history.json", res.history)
    if export_speculators:
        sconfig, sids, _, _ = format_config(ckpt, "speculators", taps, target.info, strict=False)
        write_drafter(
            ckpt, out / "speculators", "speculators", sids, config=sconfig, may_exist=("checkpoint",)
        )
    res.notes = notes
    return res


def drafter_shape(text_cfg) -> DrafterShape:
    """The target config fields a fresh drafter copies (RoPE, context, layer widths)."""
    rope = dict(
        getattr(text_cfg, "rope_parameters", None)
        or {"rope_type": "default", "rope_theta": getattr(text_cfg, "rope_theta", 10000.0)}
    )
    return DrafterShape(
        rope=rope,
        max_position_embeddings=int(getattr(text_cfg, "max_position_embeddings", 4096)),
        intermediate_size=getattr(text_cfg, "intermediate_size", None),
        num_heads=getattr(text_cfg, "num_attention_heads", None),
        num_kv_heads=getattr(text_cfg, "num_key_value_heads", None),
    )


def train_job(
    target: Path | str,
    out: Path | str,
    cfg: TrainConfig,
    *,
    data: SampleLoader | None = None,
    captured: Path | None = None,
    dump: Path | None = None,
    dump_ids: list[int] | None = None,
    dump_config: Path | None = None,
    max_len: int = 512,
    val_fraction: float = 0.05,
    export: str | None = None,
    progress: Callable[[int, int, dict], None] | None = None,
    device: torch.device | str = "cpu",
    dtype: str = "float32",
) -> TrainResult:
    """`eaglewire train`: online (the target runs on `data`, on `device` in `dtype`) or from a dump (an eaglewire
    capture, speculators' or SpecForge's offline data), where the target is partial: no layers are loaded, only
    its embedding and head are read by name. Under torchrun `device` cuda means this rank's GPU."""
    from eaglewire.capture import OnlineSource
    from eaglewire.devices import resolve_device
    from eaglewire.dumps import open_dump
    from eaglewire.partial import load_partial_target
    from eaglewire.targets import load_target, resolve_dtype

    dump = dump or captured
    if (data is None) == (dump is None):
        raise InputError("give exactly one of --data (online) or --dump (hidden states already on disk)")
    if export not in (None, "speculators"):
        raise InputError(f"--export {export!r}: only speculators is supported")
    wiring = Wiring.parse(cfg.taps)
    dev = resolve_device(device)
    if dump is not None:
        tgt = load_partial_target(target, dev)
        source: SampleSource = open_dump(dump, tgt, dump_ids, dump_config)
    else:
        tgt = load_target(target, dtype=resolve_dtype(target, dtype), device=dev)
        if tgt.tokenizer is None:
            raise InputError(f"{target}: no tokenizer in the target folder")
        source = OnlineSource(tgt, data(tgt.tokenizer, max_len, None), wiring)
    return train_drafter(
        tgt,
        source,
        out,
        cfg,
        val_fraction=val_fraction,
        export_speculators=export == "speculators",
        data_note=str(dump or getattr(data, "path", "") or "data"),
        progress=progress,
        device=dev,
    )
