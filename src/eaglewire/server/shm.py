"""Shared-memory segments an engine leaves in /dev/shm when it is stopped by a signal.

SGLang's CPU server maps a 66 MB all-reduce buffer (`deepspeed_allreduce_buffer_*`) and `sglang_loads_*`, and
leaves them and a multiprocessing semaphore when it is stopped by SIGTERM (vLLM 0.32.0's server removes its own
`psm_*` then; older vLLM CPU builds' killed workers left their all-reduce buffers). /dev/shm is memory that outlives
every process: a day of engine runs left 16 GB on a 24 GB machine, and every later engine swapped. So whoever stops
an engine by signal removes what its processes held, once no live process holds it.

Linux only (/proc and /dev/shm); elsewhere every function returns an empty set and removes nothing.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from pathlib import Path

SHM = Path("/dev/shm")
_PROC = Path("/proc")


def names() -> set[str]:
    """The segments in /dev/shm now."""
    return {p.name for p in SHM.iterdir()} if SHM.is_dir() else set()


def held(pids: Iterable[int] | None = None) -> set[str]:
    """The /dev/shm segments these processes (default: every process this user can read) map or hold open."""
    if not _PROC.is_dir():
        return set()
    dirs = [_PROC / str(p) for p in pids] if pids is not None else list(_PROC.glob("[0-9]*"))
    out: set[str] = set()
    for d in dirs:
        with contextlib.suppress(OSError):
            out |= {line.split("/dev/shm/", 1)[1].removesuffix(" (deleted)")
                    for line in (d / "maps").read_text().splitlines() if "/dev/shm/" in line}  # fmt: skip
        with contextlib.suppress(OSError):
            for fd in (d / "fd").iterdir():
                with contextlib.suppress(OSError):
                    target = os.readlink(fd)
                    if target.startswith("/dev/shm/"):
                        out.add(target[len("/dev/shm/") :].removesuffix(" (deleted)"))
    return out


# Python multiprocessing's named semaphores (`sem.mp-*`, multiprocessing/synchronize.py): the creating process holds
# one from creation on and its resource tracker unlinks it; one nobody holds was orphaned by a killed tracker (SGLang's
# server leaves one per launch), and nothing can open it again meaningfully
ORPHAN_PREFIXES = ("sem.mp-",)


def orphans(names: Iterable[str]) -> set[str]:
    """Of these segments, the ones only a killed process could have left (`ORPHAN_PREFIXES`), whoever made them:
    `remove_unheld` still keeps any some live process holds."""
    return {n for n in names if n.startswith(ORPHAN_PREFIXES)}


def remove_unheld(candidates: Iterable[str]) -> list[str]:
    """Unlink the candidates that still exist, belong to this user and that no live process maps or holds open;
    the names removed, sorted. A segment some process still uses is never touched."""
    present = [n for n in candidates if "/" not in n and (SHM / n).exists()]
    if not present:
        return []
    in_use = held()
    uid = os.getuid()
    gone = []
    for name in sorted(present):
        path = SHM / name
        with contextlib.suppress(OSError):
            if name not in in_use and path.stat().st_uid == uid:
                path.unlink()
                gone.append(name)
    return gone
