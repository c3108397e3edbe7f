"""A partial target: config, tokenizer hash and the few tensors a job on a dump needs (input embedding, final
norm, lm_head), each read by name through the safetensors index, so a trillion-parameter target's layers are never
opened: memory O(vocab x hidden) whatever the layer count."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from eaglewire.errors import InputError
from eaglewire.jsonio import read_json_object
from eaglewire.targets import TargetInfo, config_path, read_target, text_section

# Where the tensors a dump-based job needs live in the checkpoints of the families eaglewire knows: Llama-style
# and DeepSeek-V3 (`model.*`), transformers 5 VL wrappers (`model.language_model.*`) and Kimi-K2.5's
# `language_model.*` (DeepSeek-V3's text model inside KimiK25ForConditionalGeneration).
HEAD_TENSORS = {
    "embed": (
        "model.embed_tokens.weight",
        "model.language_model.embed_tokens.weight",
        "language_model.model.embed_tokens.weight",
    ),
    "norm": ("model.norm.weight", "model.language_model.norm.weight", "language_model.model.norm.weight"),
    "lm_head": ("lm_head.weight", "language_model.lm_head.weight"),
}


class TensorIndex:
    """Which file of a checkpoint holds each tensor: the weight_map of `*.safetensors.index.json` (sharded) or
    the header of the one `model.safetensors`. A tensor is then read alone, by name, from its shard; the others
    (a trillion-parameter target's layers) are never opened. `read` records every tensor read, with its bytes."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self.source: Path | None = None
        self.weight_map: dict[str, str] = {}
        self.read: list[tuple[str, int]] = []
        indexes = sorted(self.folder.glob("*.safetensors.index.json"))
        if len(indexes) > 1:
            raise InputError(
                f"{self.folder}: several safetensors indexes ({', '.join(p.name for p in indexes)})"
            )
        if indexes:
            self.source = indexes[0]
            wm = read_json_object(self.source, "safetensors index").get("weight_map")
            if not isinstance(wm, dict) or not all(isinstance(v, str) for v in wm.values()):
                raise InputError(f"{self.source}: key 'weight_map' must map tensor names to shard file names")
            self.weight_map = dict(wm)
        elif (self.folder / "model.safetensors").is_file():
            from safetensors import safe_open

            self.source = self.folder / "model.safetensors"
            try:
                with safe_open(str(self.source), "pt") as f:
                    self.weight_map = {k: self.source.name for k in f.keys()}
            except Exception as e:  # safetensors raises its own error types for a torn header
                raise InputError(f"{self.source}: not a readable safetensors file ({e})") from None

    def find(self, names: tuple[str, ...]) -> str | None:
        return next((n for n in names if n in self.weight_map), None)

    def get(self, name: str):
        """One tensor, as stored (dtype and all), read from its shard alone."""
        from safetensors import safe_open

        if name not in self.weight_map:
            raise InputError(f"{self.source or self.folder}: no tensor {name!r}")
        shard = self.folder / self.weight_map[name]
        if Path(self.weight_map[name]).name != self.weight_map[name]:
            raise InputError(
                f"{self.source}: shard name {self.weight_map[name]!r} must be a file in the folder"
            )
        if not shard.is_file():
            raise InputError(f"{shard}: shard missing (the index puts {name!r} there)")
        try:
            with safe_open(str(shard), "pt") as f:
                t = f.get_tensor(name)
        except Exception as e:
            raise InputError(f"{shard}: cannot read tensor {name!r} ({str(e)[:200]})") from None
        self.read.append((name, t.numel() * t.element_size()))
        return t


@dataclass
class PartialTarget:
    """A target as a job on a dump needs it, without its layers: the config (shapes, RoPE, norm eps), the
    tokenizer's hash (in `info`), and the input embedding, final norm and lm_head, each read by name when first
    asked for. Memory O(vocab x hidden) whatever the layer count."""

    info: TargetInfo
    path: Path
    config: dict  # the text model's section of config.json
    top_config: dict
    index: TensorIndex
    device: object = None
    tokenizer: object | None = None

    def text_config(self):
        """The text model's config as transformers reads it (RoPE normalised as for a loaded target), or the
        config.json section as attributes for a model type transformers does not know (Kimi-K2's)."""
        from types import SimpleNamespace

        from transformers import CONFIG_MAPPING

        cls = CONFIG_MAPPING.get(self.config.get("model_type", ""))
        if cls is not None:
            try:
                return cls(**self.config)
            except (TypeError, ValueError, KeyError):
                pass
        return SimpleNamespace(**self.config)

    @property
    def tensors_read(self) -> list[tuple[str, int]]:
        return list(self.index.read)

    def _need(self, role: str, why: str) -> str:
        name = self.index.find(HEAD_TENSORS[role])
        if name is not None:
            return name
        if self.index.source is None:
            raise InputError(
                f"{self.path}: no weights in the target folder (no model.safetensors or *.safetensors.index.json); "
                f"{why} needs its {role} ({' or '.join(HEAD_TENSORS[role])})"
            )
        raise InputError(
            f"{self.index.source}: no {role} tensor (looked for {', '.join(HEAD_TENSORS[role])})"
        )

    def _tied(self) -> bool:
        return bool(self.config.get("tie_word_embeddings", self.top_config.get("tie_word_embeddings", False)))

    def input_embedding(self):
        """[vocab, hidden] as stored (for a drafter whose checkpoint has no embedding of its own)."""
        return self.index.get(self._need("embed", "a drafter without embed_tokens"))

    def lm_head(self):
        """[vocab, hidden] as stored (the embedding itself when the config ties them)."""
        name = self.index.find(HEAD_TENSORS["lm_head"])
        if name is None and self._tied():
            return self.input_embedding()
        return self.index.get(name or self._need("lm_head", "the target's logits"))

    def final_norm(self):
        """(final RMSNorm weight [hidden], eps from the config)."""
        eps = self.config.get("rms_norm_eps", self.top_config.get("rms_norm_eps"))
        if not isinstance(eps, (int, float)) or isinstance(eps, bool) or eps <= 0:
            raise InputError(
                f"{self.info.source}: key 'rms_norm_eps' must be a positive number, found {eps!r}"
            )
        return self.index.get(self._need("norm", "the target's logits from h_L")), float(eps)


def load_partial_target(path: Path | str, device: str | object = "cpu") -> PartialTarget:
    """The target folder as a PartialTarget (no tensor is read until a job asks for one)."""
    from eaglewire.devices import resolve_device

    path = Path(path)
    info = read_target(path)
    folder = path if path.is_dir() else path.parent
    cfg = read_json_object(config_path(path), "target config")
    return PartialTarget(info, folder, text_section(cfg), cfg, TensorIndex(folder), resolve_device(device))
