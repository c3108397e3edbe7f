"""Known exceptions to what a checkpoint says about its training taps, each with its source.

A verdict built on the trainer's record (or on every trainer that writes a format agreeing) assumes the record is
the whole story. These rows say where it is known not to be. An `observed` row is a class of published heads
measured to break the assumption: a checkpoint of that shape is `unverified` whatever the candidates say. The
other rows are mechanisms read at source with no published failure: a decided verdict names them on its
`assumed:` line as what would break it (`--strict` turns them into `unverified`).

`when` is "no-ids" (the checkpoint carries no layer ids) or "ids" (it does); `trainer` is a framework of the
convention table, or "unknown" for a checkpoint that records no trainer.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class KnownException:
    key: str
    trainer: str  # a trainer framework, or "unknown" (no trainer recorded)
    when: str  # "no-ids" | "ids"
    observed: bool  # True: published heads of this shape are measured to break the assumption
    text: str
    source: str

    def applies(self, trainer: str, has_ids: bool) -> bool:
        return self.trainer == trainer and self.when == ("ids" if has_ids else "no-ids")

    def __str__(self) -> str:
        return f"{self.text} [{self.source}]"


EXCEPTIONS: tuple[KnownException, ...] = (
    KnownException(
        "modelopt-export-without-ids", "modelopt", "no-ids", True,
        "it is a modelopt export without layer ids: nvidia/Llama-3.3-70B-Instruct-Eagle3, one such export, was "
        "trained on other taps than the default (served the default (2, 40, 77) it reached accept length 1.036, "
        "acceptance 1.21%)",
        "vllm-project/vllm PR #50170; docs/versions.md 2.9",
    ),
    KnownException(
        "specforge-run-override-not-written", "specforge", "no-ids", False,
        "the SpecForge run was given model.aux_hidden_state_layer_ids, which it trains on and never writes",
        "sgl-project/SpecForge@a6b6b02 algorithms/model_providers.py:188-211, export/to_sglang.py:86",
    ),
    KnownException(
        "automodel-ids-not-written", "automodel", "no-ids", False,
        "the NeMo Automodel run was given aux_layer_ids, which it never writes to the draft config",
        "NVIDIA-NeMo/Automodel recipes/llm/train_eagle3.py:543-570",
    ),
    KnownException(
        "speculators-0.3-datagen", "speculators", "no-ids", False,
        "it was trained by speculators 0.3-0.4, which wrote no ids and captured after layer v: one tap above "
        "what engines feed an id-less config",
        "vllm-project/speculators v0.3.0 data_generation/custom_worker.py:44-52, scripts/train.py:120-146",
    ),
    KnownException(
        "input-of-layer-numbering", "unknown", "ids", False,
        "its trainer numbered the ids as layer inputs (HF hidden-state indices, as vLLM-captured data and "
        "lightseekorg's 'input-to-layer' Kimi heads do): it then trained one tap lower",
        "sgl-project/sglang PR #25454; docs/versions.md 4.8",
    ),
)  # fmt: skip


def exceptions_for(trainers: list[str] | tuple[str, ...], has_ids: bool) -> list[KnownException]:
    """The rows that apply to a checkpoint written by one of `trainers`, with or without ids."""
    return [e for e in EXCEPTIONS if any(e.applies(t, has_ids) for t in trainers)]
