"""Bad input: one line naming the problem, exit code 2, and the input folder left byte-identical.

Every case runs the real `eaglewire` CLI in a subprocess.
"""

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from fixtures import eagle_drafter, target_config
from peers import speculators_drafter


def run_cli(*args, cwd=None):
    env = dict(os.environ, COLUMNS="200")
    return subprocess.run(
        [sys.executable, "-m", "eaglewire.cli", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=300,
    )


def tree_hash(path: Path) -> str:
    h = hashlib.sha256()
    if path.is_file():
        h.update(path.read_bytes())
        return h.hexdigest()
    for p in sorted(path.rglob("*")):
        h.update(str(p.relative_to(path)).encode())
        if p.is_file():
            h.update(p.read_bytes())
    return h.hexdigest()


def edit_config(d: Path, **changes):
    cfg = json.loads((d / "config.json").read_text())
    for k, v in changes.items():
        if v is None:
            cfg.pop(k, None)
        else:
            cfg[k] = v
    (d / "config.json").write_text(json.dumps(cfg))


def edit_tensors(d: Path, fn):
    t = load_file(str(d / "model.safetensors"))
    fn(t)
    save_file(t, str(d / "model.safetensors"))


def make(case: str, tmp: Path):
    """Build the broken input; return (folder to hash, argv, substring the error line must contain)."""
    d = tmp / "drafter"
    tgt = target_config(tmp / "target", "llama", layers=12)
    if case == "missing-dir":
        return tmp, ["inspect", tmp / "nope"], "not found"
    if case == "missing-config":
        eagle_drafter(d, [1, 5, 8])
        (d / "config.json").unlink()
        return d, ["inspect", d], "config.json"
    if case == "config-not-json":
        eagle_drafter(d, [1, 5, 8])
        (d / "config.json").write_text("{not json")
        return d, ["inspect", d], "not valid JSON"
    if case == "config-not-object":
        eagle_drafter(d, [1, 5, 8])
        (d / "config.json").write_text("[1, 2]")
        return d, ["inspect", d], "JSON object"
    if case == "architectures-not-a-list":  # a drafter config's architectures a bool (found by the fuzzer)
        speculators_drafter(d, ids=[1, 3, 5, 7])
        cfg = json.loads((d / "config.json").read_text())
        (d / "config.json").write_text(json.dumps(cfg | {"architectures": True}))
        return d, ["check", d, "--target", tgt, "--engine", "vllm==0.32.0"], "architectures"
    if case == "missing-weights":
        eagle_drafter(d, [1, 5, 8])
        (d / "model.safetensors").unlink()
        return d, ["convert", d, tmp / "out", "--to", "speculators", "--target", tgt], "no weights"
    if case == "fc-width":
        speculators_drafter(d, ids=[1, 3, 5, 7])
        edit_tensors(d, lambda t: t.update({"fc.weight": t["fc.weight"][:, : 3 * 64].contiguous()}))
        return d, ["inspect", d], "fc.weight"
    if case == "d2t-length":
        eagle_drafter(d, [1, 5, 8])
        edit_tensors(d, lambda t: t.update({"d2t": t["d2t"][:-3].contiguous()}))
        return d, ["inspect", d], "d2t"
    if case == "t2d-length":
        eagle_drafter(d, [1, 5, 8])
        edit_tensors(d, lambda t: t.update({"t2d": t["t2d"][:-1].contiguous()}))
        return d, ["inspect", d], "t2d"
    if case == "nan-weights":
        eagle_drafter(d, [1, 5, 8])
        edit_tensors(d, lambda t: t["fc.weight"].__setitem__((0, 0), float("nan")))
        return d, ["inspect", d], "NaN"
    if case == "no-layer-count":  # an unknown architecture reads as generic, but needs its layer count
        eagle_drafter(d, [1, 5, 8])
        (tmp / "target" / "config.json").write_text(
            json.dumps({"architectures": ["SomeNewForCausalLM"], "hidden_size": 64, "vocab_size": 300})
        )
        return tmp, ["check", d, "--target", tmp / "target"], "num_hidden_layers"
    if case == "taps-out-of-range":
        eagle_drafter(d, [1, 5, 8])
        return tmp, ["check", d, "--target", tgt, "--trained-on", "h0,h3,h99"], "out of range"
    if case == "bad-taps-text":
        eagle_drafter(d, [1, 5, 8])
        return tmp, ["check", d, "--target", tgt, "--trained-on", "layer3"], "layer3"
    if case == "truncated-safetensors":
        eagle_drafter(d, [1, 5, 8])
        blob = (d / "model.safetensors").read_bytes()
        (d / "model.safetensors").write_bytes(blob[: len(blob) // 2])
        return d, ["inspect", d], "truncated"
    if case == "malformed-safetensors-header":
        eagle_drafter(d, [1, 5, 8])
        (d / "model.safetensors").write_bytes((20).to_bytes(8, "little") + b"{{{{not json at all}")
        return d, ["inspect", d], "header"
    if case == "pickle-bin":
        eagle_drafter(d, [1, 5, 8])
        (d / "model.safetensors").unlink()

        class Evil:
            def __reduce__(self):
                return (os.system, ("echo pwned",))

        torch.save({"fc.weight": Evil()}, d / "pytorch_model.bin")
        return d, ["inspect", d], "weights-only"
    if case == "unparseable-flags":
        return (
            tmp,
            [
                "lint",
                "--",
                "python",
                "-m",
                "sglang.launch_server",
                "--model-path",
                "x",
                "--speculative-num-steps",
                "abc",
            ],
            "--speculative-num-steps",
        )
    if case == "bad-speculative-config-json":
        return (
            tmp,
            ["lint", "--", "vllm", "serve", "x", "--speculative-config", "{method: eagle3"],
            "--speculative-config",
        )
    if case == "unsupported-speculators-type":
        speculators_drafter(d)
        edit_config(d, speculators_model_type="medusa")
        return d, ["inspect", d], "speculators_model_type"
    if case == "tensor-shape":
        eagle_drafter(d, [1, 5, 8])
        edit_tensors(d, lambda t: t.update({"midlayer.self_attn.q_proj.weight": torch.zeros(64, 64)}))
        return d, ["inspect", d], "midlayer.self_attn.q_proj.weight"
    if case == "missing-tensor":
        eagle_drafter(d, [1, 5, 8])
        edit_tensors(d, lambda t: t.pop("norm.weight"))
        return d, ["inspect", d], "norm.weight"
    if case == "bad-engine":
        eagle_drafter(d, [1, 5, 8])
        return tmp, ["check", d, "--target", tgt, "--engine", "tgi==1.0"], "tgi"
    if case == "target-missing-layers":
        eagle_drafter(d, [1, 5, 8])
        cfg = json.loads((tmp / "target" / "config.json").read_text())
        del cfg["num_hidden_layers"]
        (tmp / "target" / "config.json").write_text(json.dumps(cfg))
        return tmp, ["check", d, "--target", tmp / "target"], "num_hidden_layers"
    if case == "target-quantization-not-object":
        eagle_drafter(d, [1, 5, 8])
        cfg = json.loads((tmp / "target" / "config.json").read_text())
        cfg["quantization_config"] = "fp8"
        (tmp / "target" / "config.json").write_text(json.dumps(cfg))
        return tmp, ["check", d, "--target", tmp / "target"], "quantization_config"
    if case == "target-not-found":
        eagle_drafter(d, [1, 5, 8])
        return tmp, ["check", d, "--target", tmp / "no-target"], "not found"
    if case == "unknown-format":
        eagle_drafter(d, [1, 5, 8])
        return tmp, ["convert", d, tmp / "out", "--to", "gguf", "--target", tgt], "gguf"
    if case == "ids-not-a-list":
        eagle_drafter(d, None, extra_config={"eagle_config": {"eagle_aux_hidden_state_layer_ids": "0,3,31"}})
        return tmp, ["check", d, "--target", tgt], "eagle_aux_hidden_state_layer_ids"
    if case == "missing-shard":
        eagle_drafter(d, [1, 5, 8])
        (d / "model.safetensors").unlink()
        (d / "model.safetensors.index.json").write_text(
            json.dumps({"weight_map": {"fc.weight": "model-00001-of-00002.safetensors"}})
        )
        return d, ["inspect", d], "model-00001-of-00002.safetensors"
    if case == "bad-hidden-size":
        eagle_drafter(d, [1, 5, 8])
        edit_config(d, hidden_size="64")
        return d, ["inspect", d], "hidden_size"
    if case == "destination-not-empty":
        eagle_drafter(d, [1, 5, 8])
        (tmp / "out").mkdir()
        (tmp / "out" / "keep.txt").write_text("mine")
        return tmp, ["convert", d, tmp / "out", "--to", "speculators", "--target", tgt], "not empty"
    if case == "not-a-drafter":
        return tmp, ["inspect", tgt], "not an EAGLE-3 drafter"
    if case == "both-trained-options":
        eagle_drafter(d, [1, 5, 8])
        return (
            tmp,
            ["check", d, "--target", tgt, "--trained-on", "h0,h1,h2", "--trained-with", "speculators"],
            "--trained-on",
        )
    raise AssertionError(case)


CASES = [
    "missing-dir",
    "missing-config",
    "config-not-json",
    "config-not-object",
    "missing-weights",
    "fc-width",
    "d2t-length",
    "t2d-length",
    "nan-weights",
    "no-layer-count",
    "taps-out-of-range",
    "bad-taps-text",
    "truncated-safetensors",
    "malformed-safetensors-header",
    "pickle-bin",
    "unparseable-flags",
    "bad-speculative-config-json",
    "unsupported-speculators-type",
    "tensor-shape",
    "missing-tensor",
    "bad-engine",
    "target-missing-layers",
    "target-quantization-not-object",
    "target-not-found",
    "unknown-format",
    "ids-not-a-list",
    "missing-shard",
    "bad-hidden-size",
    "destination-not-empty",
    "not-a-drafter",
    "both-trained-options",
    "architectures-not-a-list",
]


@pytest.mark.parametrize("case", CASES)
def test_bad_input(tmp_path, case):
    folder, argv, needle = make(case, tmp_path)
    before = tree_hash(folder)
    r = run_cli(*argv)
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert r.returncode == 2, (r.returncode, r.stdout[-2000:], r.stderr[-2000:])
    assert len(lines) == 1, r.stderr
    assert needle.lower() in lines[0].lower(), lines[0]
    assert "Traceback" not in r.stderr
    assert tree_hash(folder) == before
    assert "pwned" not in r.stdout
