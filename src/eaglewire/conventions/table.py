"""Every convention row, and the frameworks they cover."""

from __future__ import annotations

from eaglewire.conventions import sglang, trainers, trtllm, vllm
from eaglewire.conventions.model import Convention

ROWS: tuple[Convention, ...] = (*sglang.ROWS, *vllm.ROWS, *trtllm.ROWS, *trainers.ROWS)

ENGINES = ("sglang", "vllm", "trtllm")
TRAINERS = ("speculators", "specforge", "modelopt", "eagle", "angelslim", "automodel")
FRAMEWORKS = (*ENGINES, *TRAINERS)
NEWEST = {"sglang": "0.5.23", "vllm": "0.33.0", "speculators": "0.9.0", "modelopt": "0.47.0"}
