"""Train an EAGLE-3 drafter with training-time test (TTT), recording its wiring in the checkpoint.

The recipe (engine-facts.md section 4): per step k = 0..K-1 the drafter gets the true next token (teacher
forcing) and its OWN hidden state from step k-1; the step-k attention sees the causal step-0 prefix plus the same
position of earlier steps; RoPE is offset by k. Targets are the target's distribution restricted to the draft
vocabulary (positions whose target top-1 is outside it get no loss); step k is weighted 0.8^k.

Row t of a sample (ids x, taps h, target logits z): step 0 takes (h_t, x_{t+1}) and is scored against z_{t+1}
(the distribution of x_{t+2}); step k takes x_{t+1+k} and is scored against z_{t+1+k}.

Data parallel: under `torchrun` every rank takes every world-th sample of the global batch and gradients are
summed across ranks; losses are normalised by the global token count, so N processes give the same steps as one.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

import torch
import torch.distributed as dist
from safetensors.torch import load_file, save

from eaglewire import __version__
from eaglewire.capture import CapturedSample, TargetHead
from eaglewire.drafter import Eagle3Drafter, init_weights
from eaglewire.errors import InputError
from eaglewire.formats import DrafterArch, DrafterCheckpoint, Provenance
from eaglewire.formats.vocab import build_maps, draft_to_target
from eaglewire.jsonio import atomic_write_bytes, read_json, read_json_object, write_json
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
class StepMetrics:
    loss: float
    acc: list[float]  # unconditional top-1 agreement with the target's greedy token, per step
    cond_acc: list[float]  # conditional on every earlier step agreeing
    tokens: int


@dataclass
class TrainResult:
    out: Path
    steps: int
    history: list[dict]
    val: StepMetrics | None
    train_seconds: float
    tokens_per_second: float
    resumed_from: int = 0
    extra: dict = field(default_factory=dict)


# ---- the loss ---------------------------------------------------------------------------------------------


def ttt_loss(
    model: Eagle3Drafter,
    sample: CapturedSample,
    wiring: Wiring,
    head: TargetHead,
    targets: torch.Tensor,
    steps: int,
    decay: float,
    bf16: bool = False,
):
    """(summed weighted loss, count of scored step-0 tokens, per-step correct / valid / cond counts)."""
    ids = sample.input_ids
    T = ids.numel()
    if T < 3:
        return None
    aux = sample.aux(wiring)[: T - 1][None]
    with torch.no_grad():
        z = sample.logits if sample.logits is not None else head(sample.hidden[max(sample.hidden)])
        z = z[1:T].float()  # row r predicts x_{r+2}
        greedy = z.argmax(-1)
        zd = z[:, targets]  # restricted to the draft vocabulary
        p = torch.softmax(zd, -1)
        in_vocab = torch.zeros(z.shape[-1], dtype=torch.bool)
        in_vocab[targets] = True
        in_vocab = in_vocab[greedy]
    mask = sample.loss_mask[2:T].clone()  # predicted token of row r (step 0) is x_{r+2}
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        out = model.unroll(aux, ids[1:T][None], steps, feed="teacher")
    total = torch.zeros(())
    correct, valid, cond = [], [], []
    all_ok = None
    n = T - 2  # rows with a predicted token
    for k, logits in enumerate(out.logits):
        rows = n - k
        if rows <= 0:
            correct.append(0), valid.append(0), cond.append(0)
            continue
        lg = logits[0, :rows].float()
        m = mask[k : k + rows]
        scored = m & in_vocab[k : k + rows]
        ce = -(p[k : k + rows] * torch.log_softmax(lg, -1)).sum(-1)
        total = total + (decay**k) * (ce * scored).sum()
        with torch.no_grad():
            hit = draft_to_target_ids(lg.argmax(-1), targets) == greedy[k : k + rows]
            all_ok = hit if all_ok is None else (all_ok[:rows] & hit)
            correct.append(int((hit & m).sum()))
            valid.append(int(m.sum()))
            cond.append(int((all_ok & m).sum()))
    return total, int(mask[:n].sum()), correct, valid, cond


def draft_to_target_ids(draft_ids: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    return targets[draft_ids]


def summarize(totals: dict) -> StepMetrics:
    acc = [c / v if v else 0.0 for c, v in zip(totals["correct"], totals["valid"], strict=True)]
    cond = []
    for k, c in enumerate(totals["cond"]):
        base = totals["valid"][0] if k == 0 else totals["cond"][k - 1]
        cond.append(c / base if base else 0.0)
    return StepMetrics(totals["loss"] / max(1, totals["tokens"]), acc, cond, totals["tokens"])


# ---- distributed helpers ------------------------------------------------------------------------------------


def world() -> tuple[int, int]:
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def init_distributed() -> None:
    """Join the torchrun group when launched by torchrun (gloo on CPU, NCCL on GPU)."""
    if int(os.environ.get("WORLD_SIZE", "1")) > 1 and not dist.is_initialized():
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")


def all_sum(values: list[float]) -> list[float]:
    if world()[1] == 1:
        return values
    t = torch.tensor(values, dtype=torch.float64)
    dist.all_reduce(t)
    return t.tolist()


# ---- the drafter to train -----------------------------------------------------------------------------------


def new_drafter(
    cfg: TrainConfig,
    target: TargetInfo,
    wiring: Wiring,
    counts: torch.Tensor,
    head: TargetHead,
    embed: torch.Tensor,
    rope: dict,
    max_pos: int,
    target_inter: int | None,
    target_heads: int | None,
    target_kv: int | None,
):
    """A fresh drafter shaped like the target's layers; embedding copied (frozen), lm_head from the target rows."""
    h = target.hidden_size
    heads = cfg.num_heads or target_heads or max(1, h // 64)
    dv = cfg.draft_vocab_size or target.vocab_size
    arch = DrafterArch(
        hidden_size=h,
        intermediate_size=cfg.intermediate_size or target_inter or 4 * h,
        num_layers=cfg.num_layers,
        num_heads=heads,
        num_kv_heads=cfg.num_kv_heads or target_kv or heads,
        head_dim=h // heads,
        rms_norm_eps=1e-6,
        vocab_size=target.vocab_size,
        draft_vocab_size=dv,
        target_hidden_size=h,
        n_aux=len(wiring),
        max_position_embeddings=max_pos,
        rope_parameters=dict(rope),
        norm_before_residual=cfg.norm_before_residual,
    )
    model = init_weights(Eagle3Drafter(arch), seed=cfg.seed)
    d2t, t2d = build_maps(counts, dv)
    with torch.no_grad():
        model.embed_tokens.weight.copy_(embed)
        model.d2t.copy_(d2t)
        model.lm_head.weight.copy_(head.lm_head[draft_to_target(d2t, dv)])
    model.embed_tokens.weight.requires_grad_(False)
    return model, t2d


def token_counts(source, indices: list[int], vocab: int) -> torch.Tensor:
    counts = torch.zeros(vocab, dtype=torch.long)
    for i in indices:
        s = source.sample_meta(i) if hasattr(source, "sample_meta") else source[i]
        ids, m = s.input_ids, s.loss_mask
        counts += torch.bincount(ids[m], minlength=vocab)[:vocab]
    return counts


# ---- checkpoints (safetensors + JSON; no pickle) -----------------------------------------------------------


def save_state(
    path: Path,
    model: Eagle3Drafter,
    opt: torch.optim.Optimizer,
    step: int,
    history: list,
    cfg: TrainConfig,
    t2d: torch.Tensor,
) -> None:
    """Resume state: weights and AdamW moments in one safetensors file, the rest in JSON. Atomic."""
    tensors = {f"model.{k}": v.detach().clone() for k, v in model.canonical_state().items()}
    tensors["t2d"] = t2d
    names = {id(p): n for n, p in model.named_parameters()}
    steps = {}
    for group in opt.param_groups:
        for p in group["params"]:
            st = opt.state.get(p)
            if st:
                n = names[id(p)]
                tensors[f"opt.{n}.exp_avg"] = st["exp_avg"]
                tensors[f"opt.{n}.exp_avg_sq"] = st["exp_avg_sq"]
                steps[n] = float(st["step"])
    path.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path / "state.safetensors", save(tensors))
    write_json(
        path / "state.json", {"step": step, "history": history, "config": asdict(cfg), "adam_steps": steps}
    )


def load_state(path: Path, model: Eagle3Drafter, opt: torch.optim.Optimizer, cfg: TrainConfig):
    meta = read_json_object(path / "state.json", "training state")
    if not same_config(meta.get("config"), cfg):
        raise InputError(
            f"{path}: the checkpoint was made with other settings; use a new --out or the same ones"
        )
    t = load_file(str(path / "state.safetensors"))
    model.load_canonical({k[len("model.") :]: v for k, v in t.items() if k.startswith("model.")})
    for n, p in model.named_parameters():
        if f"opt.{n}.exp_avg" in t:
            opt.state[p] = {
                "step": torch.tensor(meta["adam_steps"][n]),
                "exp_avg": t[f"opt.{n}.exp_avg"].clone(),
                "exp_avg_sq": t[f"opt.{n}.exp_avg_sq"].clone(),
            }
    return int(meta["step"]), list(meta["history"]), t["t2d"]


# ---- the loop ----------------------------------------------------------------------------------------------


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


def lr_at(step: int, cfg: TrainConfig) -> float:
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


@torch.no_grad()
def evaluate_ttt(
    model: Eagle3Drafter,
    source,
    indices: list[int],
    wiring: Wiring,
    head: TargetHead,
    targets: torch.Tensor,
    steps: int,
    decay: float,
) -> StepMetrics:
    """Teacher-forced TTT metrics (what EAGLE/SpecForge/speculators log as acc_k) on held-out samples."""
    model.eval()
    totals = {"loss": 0.0, "tokens": 0, "correct": [0] * steps, "valid": [0] * steps, "cond": [0] * steps}
    for i in indices:
        r = ttt_loss(model, source[i], wiring, head, targets, steps, decay)
        if r is None:
            continue
        loss, n, c, v, cd = r
        totals["loss"] += float(loss)
        totals["tokens"] += n
        for k in range(steps):
            totals["correct"][k] += c[k]
            totals["valid"][k] += v[k]
            totals["cond"][k] += cd[k]
    model.train()
    return summarize(totals)


def train(
    cfg: TrainConfig,
    source,
    target: TargetInfo,
    out: Path | str,
    *,
    embed: torch.Tensor,
    rope: dict,
    max_position_embeddings: int,
    target_layer_shape: dict | None = None,
    val_source=None,
    val_indices: list[int] | None = None,
    train_indices: list[int] | None = None,
    progress: Callable[[int, int, dict], None] | None = None,
    stop_after: int | None = None,
) -> TrainResult:
    """Train (or resume) into `out`; `out/checkpoint` holds the resume state, the drafter goes to `out`."""
    init_distributed()
    rank, size = world()
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    out = Path(out)
    wiring = Wiring.parse(cfg.taps).validate(target.num_layers).served()
    if target.num_layers not in source.taps.indices or not set(wiring.indices) <= set(source.taps.indices):
        raise InputError(
            f"the training data holds taps {source.taps}; training on {wiring} also needs h{target.num_layers}"
        )
    train_indices = train_indices if train_indices is not None else list(range(len(source)))
    val_indices = val_indices or []
    val_source = val_source or source
    head = source.target_head()
    shape = target_layer_shape or {}
    counts = token_counts(source, train_indices, target.vocab_size)
    model, t2d = new_drafter(
        cfg,
        target,
        wiring,
        counts,
        head,
        embed,
        rope,
        max_position_embeddings,
        shape.get("intermediate_size"),
        shape.get("num_heads"),
        shape.get("num_kv_heads"),
    )
    if cfg.init_from:
        t2d = _init_from(model, cfg.init_from, wiring)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=cfg.lr, betas=(0.9, 0.95), weight_decay=cfg.weight_decay)
    ckpt_dir = out / "checkpoint"
    start, history = 0, []
    if (ckpt_dir / "state.json").exists():
        start, history, t2d = load_state(ckpt_dir, model, opt, cfg)
    targets = draft_to_target(model.d2t, model.arch.draft_vocab_size)
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
        samples = [source[i] for i in mine]
        local_tokens = sum(int(s.loss_mask[2:].sum()) for s in samples)
        global_tokens = all_sum([float(local_tokens)])[0]
        opt.zero_grad(set_to_none=True)
        totals = [0.0] + [0.0] * (3 * cfg.ttt_steps)
        for s in samples:
            r = ttt_loss(model, s, wiring, head, targets, cfg.ttt_steps, cfg.step_decay, cfg.bf16)
            if r is None:
                continue
            loss, _, c, v, cd = r
            (loss / max(1.0, global_tokens)).backward()
            totals[0] += float(loss.detach())
            for k in range(cfg.ttt_steps):
                totals[1 + k] += c[k]
                totals[1 + cfg.ttt_steps + k] += v[k]
                totals[1 + 2 * cfg.ttt_steps + k] += cd[k]
        if size > 1:
            for p in params:
                if p.grad is None:
                    p.grad = torch.zeros_like(p)
                dist.all_reduce(p.grad)
        torch.nn.utils.clip_grad_norm_(params, cfg.grad_clip)
        opt.step()
        totals = all_sum(totals)
        K = cfg.ttt_steps
        m = summarize(
            {
                "loss": totals[0],
                "tokens": int(global_tokens),
                "correct": totals[1 : 1 + K],
                "valid": totals[1 + K : 1 + 2 * K],
                "cond": totals[1 + 2 * K :],
            }
        )
        tokens_seen += int(global_tokens)
        done = step + 1
        rec = {
            "step": done,
            "loss": round(m.loss, 6),
            "acc": [round(a, 4) for a in m.acc],
            "lr": lr_at(step, cfg),
        }
        if val_indices and (done % cfg.eval_every == 0 or done == cfg.steps):
            v = evaluate_ttt(
                model, val_source, val_indices, wiring, head, targets, cfg.ttt_steps, cfg.step_decay
            )
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
    val = None
    if val_indices:
        val = evaluate_ttt(
            model, val_source, val_indices, wiring, head, targets, cfg.ttt_steps, cfg.step_decay
        )
    result = TrainResult(
        out, final, history, val, elapsed, tokens_seen / elapsed if elapsed > 0 else 0.0, start
    )
    result.extra["model"] = model
    result.extra["t2d"] = t2d
    result.extra["world_size"] = size
    return result


def to_checkpoint(
    model: Eagle3Drafter,
    t2d: torch.Tensor,
    cfg: TrainConfig,
    target: TargetInfo,
    result: TrainResult,
    data_note: str = "",
) -> DrafterCheckpoint:
    """The trained drafter as an in-memory checkpoint with full provenance."""
    tensors = {k: v.detach().clone().contiguous() for k, v in model.canonical_state().items()}
    tensors["t2d"] = t2d
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


__all__ = ["StepMetrics", "TrainConfig", "TrainResult", "evaluate_ttt", "to_checkpoint", "train", "ttt_loss"]


# ---- the whole job: a target folder + data -> a drafter folder ----------------------------------------------


def same_config(stored: dict | None, cfg: TrainConfig) -> bool:
    """Equal settings; a field added since `stored` was written counts as equal when it holds its default."""
    if not isinstance(stored, dict):
        return False
    defaults = {f.name: f.default for f in fields(TrainConfig)}
    return all(stored.get(k, defaults.get(k)) == v for k, v in asdict(cfg).items())


def _finished(out: Path, cfg: TrainConfig) -> TrainResult | None:
    """The result of a run already completed in `out` with these exact settings (so a rerun is a no-op)."""
    from eaglewire.formats import Provenance

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
    return TrainResult(
        out, training.get("steps", cfg.steps), history, val, 0.0, 0.0, cfg.steps, {"finished": True}
    )


def split_indices(n: int, val_fraction: float) -> tuple[list[int], list[int]]:
    """Every k-th sample held out (k = 1/val_fraction): deterministic and spread over the data."""
    if val_fraction <= 0 or n < 2:
        return list(range(n)), []
    k = max(2, round(1 / val_fraction))
    val = [i for i in range(n) if i % k == k - 1]
    return [i for i in range(n) if i % k != k - 1], val


def train_drafter(
    target,
    source,
    out: Path | str,
    cfg: TrainConfig,
    *,
    val_source=None,
    val_fraction: float = 0.05,
    export_speculators: bool = False,
    data_note: str = "",
    progress: Callable[[int, int, dict], None] | None = None,
    stop_after: int | None = None,
    save_dtype: torch.dtype | None = None,
) -> TrainResult:
    """Train on `source` (CaptureReader, OnlineSource, ...) for the LoadedTarget `target`; write the drafter
    (EAGLE/SGLang format + provenance, optionally a speculators copy) into `out`."""
    from eaglewire.formats import write_drafter
    from eaglewire.formats.convert import format_config

    out = Path(out)
    finished = _finished(out, cfg)
    if finished is not None:
        return finished
    tcfg = target.model.config
    text_cfg = getattr(tcfg, "text_config", None) or tcfg
    if val_source is None:
        train_idx, val_idx = split_indices(len(source), val_fraction)
    else:
        train_idx, val_idx = list(range(len(source))), list(range(len(val_source)))
    rope = dict(
        getattr(text_cfg, "rope_parameters", None)
        or {"rope_type": "default", "rope_theta": getattr(text_cfg, "rope_theta", 10000.0)}
    )
    shape = {
        "intermediate_size": getattr(text_cfg, "intermediate_size", None),
        "num_heads": getattr(text_cfg, "num_attention_heads", None),
        "num_kv_heads": getattr(text_cfg, "num_key_value_heads", None),
    }
    res = train(
        cfg,
        source,
        target.info,
        out,
        embed=target.model.get_input_embeddings().weight.detach().float(),
        rope=rope,
        max_position_embeddings=int(getattr(text_cfg, "max_position_embeddings", 4096)),
        target_layer_shape=shape,
        val_source=val_source,
        val_indices=val_idx,
        train_indices=train_idx,
        progress=progress,
        stop_after=stop_after,
    )
    if res.steps < cfg.steps or world()[0] != 0:
        return res
    model, t2d = res.extra["model"], res.extra["t2d"]
    if save_dtype is not None and save_dtype != torch.float32:
        # ship rounded weights, and record the held-out numbers of exactly those weights
        with torch.no_grad():
            for p in model.parameters():
                p.copy_(p.to(save_dtype).float())
        if val_idx:
            head = (val_source or source).target_head()
            targets = draft_to_target(model.d2t, model.arch.draft_vocab_size)
            wiring = Wiring.parse(cfg.taps).served()
            res.val = evaluate_ttt(
                model, val_source or source, val_idx, wiring, head, targets, cfg.ttt_steps, cfg.step_decay
            )
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
    res.extra["notes"] = notes
    return res
