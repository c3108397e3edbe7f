"""Checkpoint structure rows: what a row is and what it is checked against, and the helpers rows of several engines
share; no engine's rows (docs/engine-facts.md; docs/conventions.md (b), (c)).

Where the wiring table says which taps an engine feeds, structure rows say what else silently changes the drafter's
numbers or stops it loading: which `architectures` the engine routes to its EAGLE-3 class, where it takes the fc
width, which norm options it honours and from which key, what it does with `tie_word_embeddings`, a missing
lm_head or embed_tokens, the draft's RoPE, context and sliding window. Each engine's rows live in
`eaglewire.engines.<engine>.structure`, the engine-agnostic ones and the ordered table in
`eaglewire.engines.structure`; `jobs.structure.findings_for` applies them. Severity "unverified" marks a user report
whose cause is not established: it keeps a verdict from being `ok` without calling it a fault.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from packaging.version import Version

from eaglewire.rules.row import Row

NEXTN_SUFFIXES = ("NextN", "MTP")  # MTP/NextN draft layers (DeepseekV3ForCausalLMNextN): not EAGLE-3 heads


@dataclass
class Context:
    """What a structure row is checked against. Typed loosely so this layer imports no checkpoint or target code:

    - `ckpt`: the drafter checkpoint (a `formats.DrafterCheckpoint`: `config`, `arch`, `tensors`, `format`,
      `fc_in_width`, `has_weights`, `provenance`);
    - `target`: the target model (a `targets.TargetInfo`: `hidden_size`, `config`, `family`);
    - `engine`, `version`: the engine and the release checked;
    - `row`: the engine's tap row for this target (a `rules.taps.Convention`);
    - `served`: what that row makes of the drafter's config (a `rules.taps.Resolution`).
    """

    ckpt: Any
    target: Any
    engine: str
    version: Version
    row: Any
    served: Any

    @property
    def cfg(self) -> dict:
        return self.ckpt.config

    @property
    def nested(self) -> dict:
        ec = self.cfg.get("eagle_config")
        return ec if isinstance(ec, dict) else {}

    def flag(self, key: str) -> bool:
        """A norm option as the drafter means it (top-level or under eagle_config, or in the parsed arch)."""
        arch = self.ckpt.arch
        return bool(
            self.cfg.get(key) is True or self.nested.get(key) is True or (arch and getattr(arch, key, False))
        )

    @property
    def architecture(self) -> str:
        archs = self.cfg.get("architectures")
        return archs[0] if isinstance(archs, list) and archs and isinstance(archs[0], str) else ""

    def has_tensor(self, name: str) -> bool:
        return name in self.ckpt.tensors

    @property
    def reduced_vocab(self) -> bool:
        arch = self.ckpt.arch
        dv, v = self.cfg.get("draft_vocab_size"), self.cfg.get("vocab_size")
        if arch is not None:
            return arch.draft_vocab_size < arch.vocab_size
        return isinstance(dv, int) and isinstance(v, int) and dv < v

    @property
    def speculators(self) -> bool:
        return self.ckpt.format == "speculators"

    @property
    def draft_layers(self) -> int:
        """The drafter's decoder layers as the engines read them: num_hidden_layers (the speculators format's
        transformer_layer_config), 1 when unset."""
        arch = self.ckpt.arch
        if arch is not None:
            return self.ckpt.config_layers or arch.num_layers
        dcfg = (self.cfg.get("transformer_layer_config") or {}) if self.speculators else self.cfg
        n = dcfg.get("num_hidden_layers", 1)
        return n if isinstance(n, int) and not isinstance(n, bool) else 1

    @property
    def held_layers(self) -> int | None:
        """The decoder layers the checkpoint's weights hold (None with no weights, or a layout not read here)."""
        return self.ckpt.arch.num_layers if self.ckpt.has_weights and self.ckpt.arch is not None else None


@dataclass(frozen=True)
class StructureRule(Row):
    """A structure row (a `Row`): one behaviour of one engine ("*": every engine) in one version range; `check`
    returns the finding's message when the checkpoint shows it, else None."""

    code: str
    engine: str
    versions: str  # PEP 440 specifier set ("" = every version)
    severity: str  # problem | warning | info | unverified
    source: str = field()  # required here (`Row.source` defaults to "")
    check: Callable[[Context], str | None]
    observed: str | None = None  # the record that showed the row (rules.row.Row.observed)

    def evidence(self, message: str, version: Version) -> dict[str, str]:
        """What a finding of this row at `version` rests on: the record that showed it (the message's own where the
        condition picked one of several rows, `Said`) where it covers that release (a record per release, `-V.json`,
        or one named for it), else its sources, read (the message ends with them)."""
        seen = getattr(message, "observed", None) or self.observed
        if seen and seen_at(seen, version):
            level = "model-code" if seen.startswith("model-code") else "engine"
            return {"level": level, "basis": f"observed: {seen}"}
        also = f"; observed at another release: {seen}" if seen else ""
        return {"level": "read", "basis": f"read at source (the finding's sources){also}"}


# a record file named for its release: vllm-0.32.0-cpu-draft-head.json, sglang-0.5.23-cpu-draft-weights.json
_RECORD_RELEASE = re.compile(r"(?:vllm|sglang)-(\d+(?:\.\d+)+(?:\.post\d+)?)(?:-|\.json)")


def seen_at(observed: str, version: Version) -> bool:
    """The records `observed` names cover `version`: one per release (`-V.json`), or one named for that release (a
    CPU build's `.postN` is its release's code)."""
    if "-V.json" in observed:
        return True
    return any(Version(v).release == version.release for v in _RECORD_RELEASE.findall(observed))


class Said(str):
    """A row's message together with the record that showed the fact it states, where the condition picks the fact
    from rows of its own (a release's draft-head, embedding or context row), each with its own evidence."""

    observed: str | None

    def __new__(cls, message: str, observed: str | None) -> Said:
        out = super().__new__(cls, message)
        out.observed = observed
        return out


def rule(
    into: list[StructureRule],
    code: str,
    engine: str,
    versions: str,
    severity: str,
    source: str,
    observed: str | None = None,
):
    """Make the decorated condition one row, appended to `into` (its module's `RULES`); the name becomes the row."""

    def add(check: Callable[[Context], str | None]) -> StructureRule:
        row = StructureRule(code, engine, versions, severity, source, check, observed)
        into.append(row)
        return row

    return add


# ---- helpers rows of several engines share ----------------------------------------------------------------------


def unhonoured(c: Context, key: str, honoured: bool) -> str | None:
    if c.flag(key) and not honoured:
        return f"the drafter uses {key}, which {c.engine} {c.version} ignores here: its draft numerics differ from training"
    return None


NORM_OUTPUT_MEANING = (
    "norm_output is true in an EAGLE-format config: the trainer's meaning decides what must be fed back. SpecForge "
    "(whose eagle3.1 configs set it) trains with the pre-norm state fed back and uses it only for the final norm "
    "before lm_head; {engine} feeds the post-norm state back. Trained by SpecForge, the drafter gets other "
    "inputs than in training; `eaglewire doctor` on the target measures which"
)


def norm_output_meaning(c: Context, engine: str, honoured: bool) -> str | None:
    """SpecForge's norm_output differs from the engines' (docs/conventions.md (c) 2, inferred from source)."""
    if not honoured or c.speculators or c.ckpt.provenance is not None or not c.flag("norm_output"):
        return None
    return NORM_OUTPUT_MEANING.format(engine=engine)


def copied(c: Context) -> str:
    """What a layer count equal to the target's most likely is (a clause, or nothing)."""
    n, held = c.draft_layers, c.held_layers
    if held is not None and held < n:
        return f"the weights hold {held} layer(s): set num_hidden_layers to {held}; "
    if n > 1 and n == c.target.num_layers:
        return (f"{n} is the target's own layer count: a config copied from the target, if the checkpoint holds "
                "one layer (set num_hidden_layers to 1); ")  # fmt: skip
    return ""


def sliding(c: Context) -> bool:
    dcfg = (c.cfg.get("transformer_layer_config") or {}) if c.speculators else c.cfg
    types = dcfg.get("layer_types")
    return bool(dcfg.get("sliding_window")) and (
        dcfg.get("use_sliding_window", True) is not False
        or (isinstance(types, list) and "sliding_attention" in types)
    )
