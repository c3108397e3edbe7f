"""What makes training resumable and parallel: the resume state on disk (safetensors + JSON, no pickle, atomic),
the settings check that decides resume vs refuse vs no-op, and the torchrun process group."""

from __future__ import annotations

import os
from dataclasses import asdict, fields
from pathlib import Path

import torch
import torch.distributed as dist
from safetensors.torch import load_file, save

from eaglewire.drafter import Eagle3Drafter
from eaglewire.errors import InputError
from eaglewire.jsonio import atomic_write_bytes, read_json_object, write_json


def save_state(
    path: Path,
    model: Eagle3Drafter,
    opt: torch.optim.Optimizer,
    step: int,
    history: list,
    cfg,
    t2d: torch.Tensor,
) -> None:
    """Resume state: weights and AdamW moments in one safetensors file, the rest in JSON. Atomic."""
    tensors = {f"model.{k}": v.detach().cpu().clone() for k, v in model.canonical_state().items()}
    tensors["t2d"] = t2d.cpu()
    names = {id(p): n for n, p in model.named_parameters()}
    steps = {}
    for group in opt.param_groups:
        for p in group["params"]:
            st = opt.state.get(p)
            if st:
                n = names[id(p)]
                tensors[f"opt.{n}.exp_avg"] = st["exp_avg"].cpu()
                tensors[f"opt.{n}.exp_avg_sq"] = st["exp_avg_sq"].cpu()
                steps[n] = float(st["step"])
    path.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path / "state.safetensors", save(tensors))
    write_json(
        path / "state.json", {"step": step, "history": history, "config": asdict(cfg), "adam_steps": steps}
    )


def load_state(path: Path, model: Eagle3Drafter, opt: torch.optim.Optimizer, cfg):
    """Load what `save_state` wrote into `model` and `opt`: (step, history, t2d). Other settings are refused."""
    meta = read_json_object(path / "state.json", "training state")
    if not same_config(meta.get("config"), cfg):
        raise InputError(
            f"{path}: the checkpoint was made with other settings; use a new --out or the same ones"
        )
    device = next(model.parameters()).device
    t = {k: v.to(device) for k, v in load_file(str(path / "state.safetensors")).items()}
    model.load_canonical({k[len("model.") :]: v for k, v in t.items() if k.startswith("model.")})
    for n, p in model.named_parameters():
        if f"opt.{n}.exp_avg" in t:
            opt.state[p] = {
                "step": torch.tensor(meta["adam_steps"][n]),
                "exp_avg": t[f"opt.{n}.exp_avg"].clone(),
                "exp_avg_sq": t[f"opt.{n}.exp_avg_sq"].clone(),
            }
    return int(meta["step"]), list(meta["history"]), t["t2d"].cpu()


def same_config(stored: dict | None, cfg) -> bool:
    """Equal settings; a field added since `stored` was written counts as equal when it holds its default."""
    if not isinstance(stored, dict):
        return False
    defaults = {f.name: f.default for f in fields(cfg)}
    return all(stored.get(k, defaults.get(k)) == v for k, v in asdict(cfg).items())


# ---- torchrun ------------------------------------------------------------------------------------------------


def world() -> tuple[int, int]:
    """(rank, world size); (0, 1) outside torchrun."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def init_distributed(device: torch.device) -> None:
    """Join the torchrun group when launched by torchrun: NCCL when this rank runs on a GPU (its own,
    cuda:LOCAL_RANK, made current first so NCCL binds to it), gloo on CPU."""
    if int(os.environ.get("WORLD_SIZE", "1")) > 1 and not dist.is_initialized():
        if device.type == "cuda":
            torch.cuda.set_device(device)
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")


def all_sum(values: list[float], device: torch.device | None = None) -> list[float]:
    """Sum a list of numbers over the ranks (a no-op for one process)."""
    if world()[1] == 1:
        return values
    t = torch.tensor(values, dtype=torch.float64, device=device)
    dist.all_reduce(t)
    return t.tolist()
