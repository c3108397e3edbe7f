"""A pretend GPU on a CPU-only machine, to catch tensors made on the wrong device without a GPU.

`FakeCuda` is a TorchFunctionMode. Inside it `torch.device("cuda")` works: a tensor moved or created there is
really computed on the CPU but marked as on the device (by its storage), reports `device == cuda:0`, and every
torch call is checked the way CUDA would check it. Everything not put on the device is on the host, as on a real
machine. A call that mixes a device tensor with a host tensor of more than 0 dims (what fails with "Expected all
tensors to be on the same device"), indexes a host tensor with device indices, turns a device tensor into numpy,
or samples device probabilities with a CPU generator is recorded with the eaglewire line that made it. Moves
(`.to`, `.cpu()`, `copy_`) and device tensors indexed by host indices are allowed, as on CUDA.

Not modelled: speed, memory, streams, NCCL, anything in torch.cuda (the fixture stubs is_available,
device_count, synchronize and set_device).
"""

from __future__ import annotations

import contextlib
import traceback

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_flatten

FACTORIES = {
    "tensor", "as_tensor", "asarray", "arange", "zeros", "ones", "full", "empty", "rand", "randn", "randint",
    "randperm", "eye", "linspace", "logspace", "scalar_tensor", "tril_indices", "triu_indices",
}  # fmt: skip
LIKE = {"zeros_like", "ones_like", "full_like", "empty_like", "rand_like", "randn_like", "randint_like"}
MOVES = {"copy_", "to", "cpu", "cuda", "__setitem__", "__getitem__", "set_", "__set__", "_has_compatible_shallow_copy_type"}  # fmt: skip
CUDA = torch.device("cuda", 0)


def _is_cuda(d) -> bool:
    return (isinstance(d, torch.device) and d.type == "cuda") or (isinstance(d, str) and d.startswith("cuda"))


def _is_device_arg(d) -> bool:
    """A host or pretend-GPU device. Others (meta, above all: transformers builds models on it before loading)
    pass through untouched; read as the host, meta tensors would be real uninitialised memory."""
    if isinstance(d, torch.device):
        return d.type in ("cpu", "cuda")
    return isinstance(d, str) and (d == "cpu" or d.startswith("cuda"))


def _basic_index(idx) -> bool:
    items = idx if isinstance(idx, tuple) else (idx,)
    return all(isinstance(i, (int, slice, type(None), type(Ellipsis))) for i in items)


class FakeCuda(TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.on_device: set[int] = set()  # storage data_ptrs of tensors on the device
        self.violations: list[str] = []

    @contextlib.contextmanager
    def paused(self):
        """Plain host torch inside (a reference computed the CPU way, while the mode stays installed)."""
        with torch.overrides._pop_mode_temporarily() as mode:
            assert mode is self
            yield

    # ---- bookkeeping ----------------------------------------------------------------------------------------

    def _key(self, t: torch.Tensor) -> int | None:
        try:
            ptr = t.untyped_storage().data_ptr()
        except (RuntimeError, NotImplementedError):
            return None
        return ptr or None

    def dev(self, t) -> bool:
        return isinstance(t, torch.Tensor) and (k := self._key(t)) is not None and k in self.on_device

    def _mark(self, out, on_device: bool):
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor) and (k := self._key(t)) is not None:
                (self.on_device.add if on_device else self.on_device.discard)(k)
        return out

    def _report(self, func, why: str) -> None:
        """One line per distinct violation: the eaglewire frames that led to it, innermost first."""
        frames = [
            f
            for f in traceback.extract_stack()[:-3]
            if "/eaglewire/" in f.filename or "/tests/" in f.filename
        ]
        where = (
            " <- ".join(f"{f.filename.rsplit('/', 1)[-1]}:{f.lineno}" for f in reversed(frames[-3:])) or "?"
        )
        line = f"{where}: {getattr(func, '__name__', func)}: {why}"
        if line not in self.violations:
            self.violations.append(line)

    # ---- the mode ----------------------------------------------------------------------------------------------

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        name = getattr(func, "__name__", "")
        owner = getattr(func, "__self__", None)
        if owner is torch.Tensor.device or func == torch.Tensor.device.__get__:
            return CUDA if self.dev(args[0]) else func(*args, **kwargs)
        if owner is torch.Tensor.is_cuda or func == torch.Tensor.is_cuda.__get__:
            return self.dev(args[0])
        if name == "get_device":
            return 0 if self.dev(args[0]) else -1
        if name in ("to", "cpu", "cuda", "pin_memory") and args and isinstance(args[0], torch.Tensor):
            return self._move(func, name, args, kwargs)
        want = kwargs.get("device")
        if _is_device_arg(want):
            kwargs["device"] = "cpu"
        tensors = [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)]
        devs = [self.dev(t) for t in tensors]
        self._check(func, name, args, kwargs, tensors, devs)
        out = func(*args, **kwargs)
        if want is not None and _is_device_arg(want):
            on_device = _is_cuda(want)
        elif name in LIKE and tensors:
            on_device = devs[0]
        elif name in FACTORIES:
            on_device = False
        else:
            on_device = any(devs)
        if name in ("__setitem__", "copy_", "set_", "__set__"):
            return out
        return self._mark(out, on_device)

    def _move(self, func, name, args, kwargs):
        src = args[0]
        if name == "cuda":
            target = True
        elif name in ("cpu", "pin_memory"):
            target = False
        else:
            target = self.dev(src)
            rest = list(args[1:])
            for i, a in enumerate(rest):
                if isinstance(a, torch.Tensor):
                    target = self.dev(a)
                    rest[i] = a.dtype  # .to(other): its dtype (and device, tracked here)
                elif _is_device_arg(a):
                    target, rest[i] = _is_cuda(a), "cpu"
            if _is_device_arg(kwargs.get("device")):
                target, kwargs["device"] = _is_cuda(kwargs["device"]), "cpu"
            args = (src, *rest)
        out = src.to(*args[1:], **kwargs) if name == "to" else src
        if target != self.dev(src) and self._key(out) == self._key(src):
            out = out.clone()  # a real move is a copy: the two sides must not share a storage here
        return self._mark(out, target)

    def _check(self, func, name, args, kwargs, tensors, devs) -> None:
        gen = kwargs.get("generator")
        if (
            isinstance(gen, torch.Generator)
            and gen.device.type == "cpu"
            and (any(devs) or _is_cuda(kwargs.get("device")))
        ):
            if not (name in FACTORIES and not _is_cuda(kwargs.get("device"))):
                self._report(func, "a CPU generator with device tensors")
        if name == "numpy" and any(devs):
            self._report(func, "numpy() of a device tensor")
        if not any(devs) or name in MOVES - {"__getitem__", "__setitem__"}:
            return
        host = [t for t, d in zip(tensors, devs, strict=True) if not d and t.dim() > 0 and t.numel() > 0]
        if name == "__getitem__":
            if not self.dev(args[0]) and any(self.dev(t) for t in tensors[1:]):
                self._report(func, "a host tensor indexed by device indices")
            return
        if name == "__setitem__":
            value = args[2] if len(args) > 2 else None
            if not _basic_index(args[1]) and isinstance(value, torch.Tensor) and value.dim() > 0:
                if self.dev(value) != self.dev(args[0]):
                    self._report(func, "an indexed assignment across devices")
            return
        if host:
            shapes = ", ".join(str(list(t.shape)) for t in host[:3])
            self._report(func, f"device tensors mixed with host tensors {shapes}")
