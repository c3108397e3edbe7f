"""CONTRIBUTING.md's two recipes, followed: "Add a release" on a made-up vLLM 0.35.0 whose code did not change, and
"Add a target family" on a made-up `llama5` that vLLM serves through its llama-style capture. Each runs in a copy of
the package (src/eaglewire and tools/), step by step as a contributor would, and is judged through the public CLI:
what `check` and `lint` say before and after, and which files the steps changed (a new release touches one folder).
The steps followed are the ones that change the package; `make docs`, `make test` and observing a running engine are
the suite's and the real engine's business.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
VLLM = "src/eaglewire/engines/vllm/"


def run(root: Path, *args) -> subprocess.CompletedProcess:
    """`python ARGS` on the copy at `root` (its package and its tools/ first on the path), from outside any checkout."""
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(root / "src"), str(root)]),
        PYTHONDONTWRITEBYTECODE="1",
        COLUMNS="200",
    )
    return subprocess.run([sys.executable, *map(str, args)], capture_output=True, text=True, env=env,
                          cwd=root.parent, timeout=300)  # fmt: skip


def cli(root: Path, *args) -> tuple[int, dict]:
    out = run(root, "-m", "eaglewire.cli", *args)
    assert out.returncode in (0, 1, 3), out.stderr
    return out.returncode, json.loads(out.stdout)


def hashes(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in root.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }


def changed(before: dict[str, str], after: dict[str, str]) -> set[str]:
    return {f for f in before.keys() | after.keys() if before.get(f) != after.get(f)}


@pytest.fixture
def copy(tmp_path) -> Path:
    root = tmp_path / "repo"
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(ROOT / "src" / "eaglewire", root / "src" / "eaglewire", ignore=ignore)
    shutil.copytree(ROOT / "tools", root / "tools", ignore=ignore)
    where = run(root, "-c", "import eaglewire, tools.ledger as t; print(eaglewire.__file__, t.__file__)")
    assert where.stdout.split() == [str(root / "src/eaglewire/__init__.py"), str(root / "tools/ledger.py")]
    return root


def engine_verdict(report: dict) -> dict:
    (verdict,) = report["engines"]
    return verdict


def test_add_a_release_touches_one_folder(copy):
    zoo = copy / "src/eaglewire/zoo"
    check = ("check", zoo / "drafters/default", "--target", zoo / "target",
             "--engine", "vllm==0.35.0", "--json")  # fmt: skip
    config = {"method": "eagle3", "model": str(zoo / "drafters/default"), "num_speculative_tokens": 3}
    lint = ("lint", "--gpu", "h100", "--json", "--", "vllm", "serve", zoo / "target", "--speculative-config",
            json.dumps(config))  # fmt: skip
    before = hashes(copy)

    # Before: 0.35.0 lies beyond the newest release read, so the newest rows are an assumption, and no command
    # defaults to it.
    code, report = cli(copy, *check)
    verdict = engine_verdict(report)
    assert code == 3 and verdict["status"] == "unverified" and not verdict["verified_version"], verdict
    assert any("vllm==0.35.0 was not read at source" in u for u in verdict["unknowns"]), verdict["unknowns"]
    code, report = cli(copy, *lint)
    assert report["version"] == "0.34.0" and report["version_defaulted"], report["version"]
    assert "engine version not given: assumed vllm 0.34.0, the newest encoded" in report["notes"]

    # 1. List it (offline: the release named instead of asking the index).
    listed = run(copy, "-m", "tools.ledger", "--root", copy, "--engine", "vllm", "--versions", "0.35.0")
    assert listed.returncode == 0, listed.stderr
    # 2. Scan it. For a release whose code did not change, scripts/engine_registries.py and
    # scripts/speculative_args.py write the previous release's entries again under the new version: that is what
    # is written here by hand.
    data = copy / VLLM / "data"
    for name in ("registry.json", "arguments.json"):
        table = json.loads((data / name).read_text())
        table["releases"]["0.35.0"] = {**table["releases"]["0.34.0"]}
        if "version" in table["releases"]["0.35.0"]:
            table["releases"]["0.35.0"]["version"] = "0.35.0"
        (data / name).write_text(json.dumps(table, indent=1) + "\n")
    # 3-5. Read the capture, launch-flag and structure code: unchanged, so the newest rows (open above) hold as they
    # are, and no argument is new.
    # 6. Mark it read.
    marked = run(copy, "-m", "tools.ledger", "--root", copy, "--engine", "vllm",
                 "--read", "taps", "0.35.0", "--read", "flags", "0.35.0", "--read", "structure", "0.35.0")  # fmt: skip
    assert marked.returncode == 0, marked.stderr

    # After: the check is decided at 0.35.0 as read, and 0.35.0 is every command's default.
    code, report = cli(copy, *check)
    verdict = engine_verdict(report)
    assert code == 0 and verdict["engine"].startswith("vllm==0.35.0"), verdict
    assert verdict["status"] == "ok" and verdict["verified_version"] and verdict["exact_version_row"], verdict
    assert not verdict["unknowns"] and not report["unknowns"], report["unknowns"]
    code, report = cli(copy, *lint)
    assert report["version"] == "0.35.0", report["version"]
    assert "engine version not given: assumed vllm 0.35.0, the newest encoded" in report["notes"]
    default = run(copy, "-c", "from eaglewire.engines.arguments import enumerated, rows_for\n"
                  "from eaglewire.engines.table import default_spec\n"
                  "names = enumerated('vllm', '0.35.0')\n"
                  "assert names and all(len(rows_for('vllm', n, '0.35.0')) == 1 for n in names)\n"
                  "print(default_spec('vllm'))")  # fmt: skip
    assert default.stdout.strip() == "vllm==0.35.0", default.stderr  # and every argument of it is classified

    # A new release touches one folder.
    touched = changed(before, hashes(copy))
    assert touched and all(f.startswith(VLLM) for f in touched), sorted(touched)
    assert touched == {VLLM + "data/" + n for n in ("ledger.json", "registry.json", "arguments.json")}


LLAMA5_TARGET = {"architectures": ["Llama5ForCausalLM"], "model_type": "llama5", "num_hidden_layers": 32,
                 "hidden_size": 64, "vocab_size": 300}  # fmt: skip
DRAFTER = {"architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama", "hidden_size": 64,
           "intermediate_size": 128, "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 2,
           "vocab_size": 300, "draft_vocab_size": 120, "eagle_aux_hidden_state_layer_ids": [2, 16, 29]}  # fmt: skip


def test_add_a_target_family(copy, tmp_path):
    for name, cfg in (("llama5", LLAMA5_TARGET), ("drafter", DRAFTER)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text(json.dumps(cfg))
    check = ("check", tmp_path / "drafter", "--target", tmp_path / "llama5", "--engine", "vllm",
             "--trained-on", "h2,h16,h29", "--json")  # fmt: skip
    before = hashes(copy)

    # Before: an architecture nobody knows, which the release read does not serve either.
    code, report = cli(copy, *check)
    assert report["target"]["family"] == "generic" and engine_verdict(report)["status"] == "fails", report

    # 2. Registry data: what scripts/engine_registries.py writes for a release whose llama5.py serves
    # Llama5ForCausalLM with EAGLE-3 through capture code of its own.
    registry = copy / VLLM / "data/registry.json"
    table = json.loads(registry.read_text())
    table["releases"]["0.34.0"]["eagle3"]["Llama5ForCausalLM"] = {
        "class": "Llama5ForCausalLM",
        "file": "vllm/model_executor/models/llama5.py:470",
        "eagle3": "vllm/model_executor/models/interfaces.py:1728 SupportsEagle3.set_aux_hidden_state_layers",
        "registry": "vllm/model_executor/models/registry.py:156",
        "capture": "own",
        "capture_source": "vllm/model_executor/models/llama5.py:431",
    }
    registry.write_text(json.dumps(table, indent=1) + "\n")
    # vLLM serves it, with capture code eaglewire has no row for: the family is unknown, the verdict unverified.
    code, report = cli(copy, *check)
    verdict = engine_verdict(report)
    assert code == 3 and report["target"]["family"] == "generic", report["target"]
    assert verdict["status"] == "unverified", verdict
    assert any("not in eaglewire's table" in u for u in verdict["unknowns"]), verdict["unknowns"]

    # 1. The family in targets.FAMILIES.
    targets = copy / "src/eaglewire/targets.py"
    text = targets.read_text()
    llama = '    "llama": _f({"LlamaForCausalLM"}, {"llama"}),\n'
    assert text.count(llama) == 1
    targets.write_text(text.replace(llama, llama + '    "llama5": _f({"Llama5ForCausalLM"}, {"llama5"}),\n'))
    # 3. llama5.py's capture code read: llama-style, the model file whose rows are llama's.
    taps = copy / VLLM / "taps.py"
    text = taps.read_text()
    model_files = "MODEL_FILES: dict[str, str] = {\n"
    assert text.count(model_files) == 1
    taps.write_text(text.replace(model_files, model_files + '    "llama5": "llama",\n'))

    # After: the check decides for vLLM, on the llama rows at the release read.
    code, report = cli(copy, *check)
    verdict = engine_verdict(report)
    assert code == 0 and report["target"]["family"] == "llama5", report["target"]
    assert verdict["status"] == "ok" and verdict["verified_version"] and not verdict["unknowns"], verdict
    assert verdict["row"].startswith("vllm-llama-"), verdict["row"]

    touched = changed(before, hashes(copy))
    assert touched == {"src/eaglewire/targets.py", VLLM + "taps.py", VLLM + "data/registry.json"}, touched
