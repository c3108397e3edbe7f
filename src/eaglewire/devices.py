"""Where a job runs: `--device` and `--dtype` read once, the same way for every command that runs a model.

`--device` is cpu, cuda (this process's GPU: cuda:LOCAL_RANK under torchrun, else cuda:0), cuda:N, or auto (a
GPU when torch sees one, else the CPU). A GPU that is not there is refused here, in one line, before anything
loads. `--dtype` is the dtype the model computes in (auto: as the target is stored when that is bf16, else fp32:
fp16 matmuls are slow on CPUs and bf16 on CPUs without AVX512-BF16).

Nothing here changes what CPU users get: `cpu` is the default and means exactly what it meant before.
"""

from __future__ import annotations

import os

import torch

from eaglewire.errors import InputError

DEVICE_CHOICES = "cpu, cuda, cuda:N or auto"
DTYPES = ("auto", "float32", "bfloat16", "float16")


def local_rank() -> int | None:
    """This process's rank on its node under torchrun (LOCAL_RANK), else None."""
    value = os.environ.get("LOCAL_RANK")
    return int(value) if value not in (None, "") and value.isdigit() else None


def resolve_device(name: str | torch.device | None = "cpu") -> torch.device:
    """The torch device `--device NAME` means on this machine (InputError when it is not here)."""
    if isinstance(name, torch.device):
        return name
    text = (name or "cpu").strip().lower()
    if text == "cpu":
        return torch.device("cpu")
    if text == "auto":
        return resolve_device("cuda") if torch.cuda.is_available() else torch.device("cpu")
    if text == "cuda" or (text.startswith("cuda:") and text[5:].isdigit()):
        if not torch.cuda.is_available():
            raise InputError(
                f"--device {name}: torch {torch.__version__} sees no CUDA device here; use --device cpu"
            )
        index = int(text[5:]) if ":" in text else (local_rank() or 0)
        count = torch.cuda.device_count()
        if index >= count:
            raise InputError(
                f"--device {name}: this machine has {count} CUDA device(s) (cuda:0..cuda:{count - 1})"
            )
        return torch.device("cuda", index)
    raise InputError(f"--device {name!r}: use {DEVICE_CHOICES}")


def parse_dtype(name: str | None) -> torch.dtype | None:
    """`--dtype` as a torch dtype; None for auto (the caller decides from the checkpoint)."""
    text = (name or "auto").strip().lower()
    if text not in DTYPES:
        raise InputError(f"--dtype {name!r}: use one of {', '.join(DTYPES)}")
    return None if text == "auto" else getattr(torch, text)


def autocast_type(device: torch.device) -> str:
    """The device type torch.autocast takes for tensors on `device` (cuda, cpu, ...)."""
    return torch.device(device).type


def accelerate_installed() -> bool:
    """transformers spreads a model over devices (device_map) only through accelerate."""
    import importlib.util

    return importlib.util.find_spec("accelerate") is not None


def free_bytes(device: torch.device) -> int | None:
    """Free memory on a GPU (None on the CPU: the OS decides)."""
    if device.type != "cuda":
        return None
    free, _total = torch.cuda.mem_get_info(device)
    return int(free)
