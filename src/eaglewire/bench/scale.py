"""The standalone test at Kimi-K2.5's scale on a laptop: a partial target of 163,840 x 7,168 and 61 layers.

`write_case(folder)` writes, mostly as sparse files (holes read as zeros and take no disk):
- `target/`: Kimi-K2.5's config (examples/kimi-k25: KimiK25ForConditionalGeneration around a 61-layer
  DeepSeek-V3 text model) and a sharded checkpoint whose index names every tensor of all 61 layers. The three
  tensors a test on a dump reads (`language_model.model.embed_tokens.weight`, `language_model.model.norm.weight`,
  `language_model.lm_head.weight`) sit in real safetensors shards, zero except the rows of the tokens the samples
  use. The layer shards are sparse files with a header no safetensors reader accepts: opening one fails, so a run
  that succeeds read none of them.
- `drafter/`: an EAGLE-3 drafter at the target's hidden size with no embedding of its own (the target's is read),
  a small MLP, random bf16 weights.
- `dump/hidden_states/hs_<i>.safetensors`: speculators-layout samples for ids 2,30,58 + 61 (random states).

`measure(folder)` runs `eaglewire test` on the case in a child process and reports its wall time and peak RSS
(from wait4) against the bytes of the three tensors (the goal: at most 1.5x).
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors.torch import save_file

VOCAB, HIDDEN, LAYERS = 163_840, 7_168, 61
IDS = (2, 30, 58, 61)  # speculators/vLLM ids of the dump: taps h2, h30, h58 and h_L
EMBED = "language_model.model.embed_tokens.weight"
NORM = "language_model.model.norm.weight"
HEAD = "language_model.lm_head.weight"


@dataclass(frozen=True)
class Case:
    root: Path
    vocab: int
    hidden: int
    layers: int
    samples: int

    @property
    def target(self) -> Path:
        return self.root / "target"

    @property
    def drafter(self) -> Path:
        return self.root / "drafter"

    @property
    def dump(self) -> Path:
        return self.root / "dump"

    @property
    def head_bytes(self) -> int:
        """The bytes of the three tensors the test reads (bf16): embedding, final norm, lm_head."""
        return 2 * (2 * self.vocab * self.hidden + self.hidden)


def _bf16_bytes(t: torch.Tensor) -> bytes:
    return t.to(torch.bfloat16).contiguous().view(torch.int16).numpy().tobytes()


def sparse_safetensors(
    path: Path, shapes: dict[str, tuple[int, ...]], rows: dict[str, dict[int, torch.Tensor]]
) -> None:
    """A bf16 safetensors file whose data is zero (a hole) except `rows[name][i]`, written in place."""
    header, offset = {}, 0
    for name, shape in shapes.items():
        n = 2
        for d in shape:
            n *= d
        header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [offset, offset + n]}
        offset += n
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    start = 8 + len(text)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        f.truncate(start + offset)
        for name, by_row in rows.items():
            shape = shapes[name]
            row_bytes = 2 * (shape[1] if len(shape) > 1 else shape[0])
            for i, values in by_row.items():
                f.seek(start + header[name]["data_offsets"][0] + i * row_bytes)
                f.write(_bf16_bytes(values))


def _kimi_config(vocab: int, hidden: int, layers: int) -> dict:
    text = {
        "architectures": ["DeepseekV3ForCausalLM"],
        "model_type": "kimi_k2",
        "vocab_size": vocab,
        "hidden_size": hidden,
        "intermediate_size": 18432,
        "moe_intermediate_size": 2048,
        "num_hidden_layers": layers,
        "num_attention_heads": 64,
        "num_key_value_heads": 64,
        "n_routed_experts": 384,
        "n_shared_experts": 1,
        "num_experts_per_tok": 8,
        "first_k_dense_replace": 1,
        "kv_lora_rank": 512,
        "q_lora_rank": 1536,
        "qk_nope_head_dim": 128,
        "qk_rope_head_dim": 64,
        "v_head_dim": 128,
        "rms_norm_eps": 1e-05,
        "rope_theta": 50000.0,
        "max_position_embeddings": 262144,
        "torch_dtype": "bfloat16",
    }
    return {
        "architectures": ["KimiK25ForConditionalGeneration"],
        "model_type": "kimi_k25",
        "tie_word_embeddings": False,
        "text_config": text,
    }


def _write_target(
    folder: Path, vocab: int, hidden: int, layers: int, hot: list[int], g: torch.Generator
) -> None:
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(_kimi_config(vocab, hidden, layers), indent=2))
    weight_map = {}
    first, last = "model-00001-of-00063.safetensors", "model-00063-of-00063.safetensors"
    sparse_safetensors(
        folder / first,
        {EMBED: (vocab, hidden)},
        {EMBED: {t: torch.randn(hidden, generator=g) * 0.02 for t in hot}},
    )
    sparse_safetensors(
        folder / last,
        {NORM: (hidden,), HEAD: (vocab, hidden)},
        {NORM: {0: torch.ones(hidden)}, HEAD: {t: torch.randn(hidden, generator=g) * 0.05 for t in hot}},
    )
    weight_map.update({EMBED: first, NORM: last, HEAD: last})
    per_layer = ("self_attn.q_a_proj.weight", "self_attn.kv_a_proj_with_mqa.weight", "mlp.gate.weight")
    for i in range(layers):
        shard = f"model-{i + 2:05d}-of-00063.safetensors"
        with open(folder / shard, "wb") as f:  # ~16 GiB apparent, no disk: a header no reader accepts
            f.write(struct.pack("<Q", 2**62))
            f.truncate(2**34)
        weight_map.update({f"language_model.model.layers.{i}.{p}": shard for p in per_layer})
    index = {"metadata": {"total_size": layers * 2**34}, "weight_map": weight_map}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index, indent=1))


def _write_drafter(folder: Path, vocab: int, hidden: int, hot: list[int], g: torch.Generator) -> None:
    """EAGLE/SGLang layout (LlamaForCausalLMEagle3, midlayer.*), no embed_tokens: the target lends its own."""
    folder.mkdir(parents=True)
    heads, kv, hd, inter, dv = 2, 1, 112 if hidden % 112 == 0 else hidden // 2, 256, min(2048, len(hot))
    r = lambda *shape: (torch.randn(*shape, generator=g) * 0.02).to(torch.bfloat16)  # noqa: E731
    one = lambda n: torch.ones(n, dtype=torch.bfloat16)  # noqa: E731
    chosen = torch.tensor(sorted(hot[:dv]))
    t2d = torch.zeros(vocab, dtype=torch.bool)
    t2d[chosen] = True
    tensors = {
        "midlayer.self_attn.q_proj.weight": r(heads * hd, 2 * hidden),
        "midlayer.self_attn.k_proj.weight": r(kv * hd, 2 * hidden),
        "midlayer.self_attn.v_proj.weight": r(kv * hd, 2 * hidden),
        "midlayer.self_attn.o_proj.weight": r(hidden, heads * hd),
        "midlayer.mlp.gate_proj.weight": r(inter, hidden),
        "midlayer.mlp.up_proj.weight": r(inter, hidden),
        "midlayer.mlp.down_proj.weight": r(hidden, inter),
        "midlayer.input_layernorm.weight": one(hidden),
        "midlayer.hidden_norm.weight": one(hidden),
        "midlayer.post_attention_layernorm.weight": one(hidden),
        "fc.weight": r(hidden, 3 * hidden),
        "norm.weight": one(hidden),
        "lm_head.weight": r(dv, hidden),
        "d2t": chosen - torch.arange(dv),
        "t2d": t2d,
    }
    cfg = {
        "architectures": ["LlamaForCausalLMEagle3"],
        "model_type": "llama",
        "hidden_size": hidden,
        "intermediate_size": inter,
        "num_hidden_layers": 1,
        "num_attention_heads": heads,
        "num_key_value_heads": kv,
        "head_dim": hd,
        "hidden_act": "silu",
        "rms_norm_eps": 1e-05,
        "max_position_embeddings": 4096,
        "rope_theta": 50000.0,
        "vocab_size": vocab,
        "draft_vocab_size": dv,
        "target_hidden_size": hidden,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
    }
    (folder / "config.json").write_text(json.dumps(cfg, indent=2))
    save_file(tensors, str(folder / "model.safetensors"))


def write_case(
    root: Path | str,
    vocab: int = VOCAB,
    hidden: int = HIDDEN,
    layers: int = LAYERS,
    samples: int = 2,
    seq: int = 32,
    seed: int = 0,
) -> Case:
    """Write the whole case under `root` (see the module docstring)."""
    root = Path(root)
    g = torch.Generator().manual_seed(seed)
    hot = sorted(torch.randperm(vocab, generator=g)[:512].tolist())
    _write_target(root / "target", vocab, hidden, layers, hot, g)
    _write_drafter(root / "drafter", vocab, hidden, hot, g)
    hs_dir = root / "dump" / "hidden_states"
    hs_dir.mkdir(parents=True)
    for i in range(samples):
        ids = torch.tensor(hot)[torch.randint(0, len(hot), (seq,), generator=g)]
        hs = (torch.randn(seq, len(IDS), hidden, generator=g)).to(torch.bfloat16)
        save_file({"hidden_states": hs, "token_ids": ids}, str(hs_dir / f"hs_{i}.safetensors"))
    return Case(root, vocab, hidden, layers, samples)


def test_command(case: Case, steps: int = 2) -> list[str]:
    """The `eaglewire test` line the case is measured with (bf16: the dtype the checkpoint is stored in)."""
    return [
        sys.executable, "-m", "eaglewire.cli", "test", str(case.drafter), "--target", str(case.target),
        "--dump", str(case.dump), "--dump-ids", ",".join(map(str, IDS)), "--taps", "h2,h30,h58",
        "--samples", str(case.samples), "--steps", str(steps), "--dtype", "bfloat16", "--device", "cpu", "--json",
    ]  # fmt: skip


def measure(case: Case, steps: int = 2) -> dict:
    """Run the test in a child process: wall time, peak RSS (wait4: this child alone), what it read."""
    import tempfile

    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(test_command(case, steps), stdout=out, stderr=err, text=True)
        _pid, status, usage = os.wait4(p.pid, 0)
        seconds = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0), err.seek(0)
        stdout, stderr = out.read(), err.read()
    if p.returncode != 0:
        raise RuntimeError(f"eaglewire test failed ({p.returncode}): {stderr.strip()[-500:]}")
    report = json.loads(stdout)
    peak = usage.ru_maxrss * 1024  # kilobytes on Linux
    return {
        "vocab": case.vocab,
        "hidden": case.hidden,
        "layers_declared": case.layers,
        "samples": case.samples,
        "three_tensors_bytes": case.head_bytes,
        "peak_rss_bytes": peak,
        "peak_rss_over_three_tensors": round(peak / case.head_bytes, 3),
        "goal_ratio": 1.5,
        "seconds": round(seconds, 2),
        "tensors_read": report["target_tensors_read"],
        "acc": report["evaluations"]["teacher"]["acc"],
    }
