"""Every command's --json is strict JSON (RFC 8259): parsed with a parser that refuses NaN and Infinity, as
JavaScript, Go and Rust parsers do. Real subprocesses on the bundled zoo model."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from eaglewire import zoo
from eaglewire.rules.row import LEVELS

pytestmark = pytest.mark.skipif(not zoo.is_built(), reason="the zoo is not built")


def _refuse(constant: str):
    raise ValueError(f"non-standard JSON constant {constant}")


def strict_json(text: str):
    return json.loads(text, parse_constant=_refuse)


def run_json(*args) -> dict:
    args = [str(a) for a in args]
    cut = args.index("--") if "--" in args else len(args)  # --json goes before a launch command
    r = subprocess.run(
        [sys.executable, "-m", "eaglewire.cli", *args[:cut], "--json", *args[cut:]],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode in (0, 1, 3), r.stderr[
        -2000:
    ]  # ok, a problem, unverified: a verdict, never bad input
    return strict_json(r.stdout)


def test_strict_parser_refuses_nan():
    with pytest.raises(ValueError):
        strict_json('{"x": NaN}')


@pytest.fixture(scope="module")
def paths(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("json")
    data = tmp / "code.py"
    data.write_text((zoo.target_dir() / "README.md").read_text() * 3)
    return {
        "target": zoo.target_dir(),
        "drafter": zoo.drafter_dir("default"),
        "tmp": tmp,
        "data": data,
    }


def test_static_commands(paths):
    t, d, tmp = paths["target"], paths["drafter"], paths["tmp"]
    assert run_json("inspect", d, "--target", t)["format"] == "eagle"
    assert run_json("check", d, "--target", t)["engines"]
    launch = ["--", "python", "-m", "sglang.launch_server", "--speculative-algorithm", "EAGLE3"]
    linted = run_json("lint", *launch)
    assert linted["engine"] == "sglang" and linted["evidence"]["level"] in LEVELS
    assert run_json("convert", d, tmp / "conv", "--to", "speculators")["format"] == "speculators"


def test_verdict_commands_on_the_model(paths):
    t, d = paths["target"], paths["drafter"]
    out = run_json("test", d, "--target", t, "--samples", "2", "--new-tokens", "24", "--search")
    assert out["search"]["heatmap_acc0"]  # untried cells are null, not NaN
    assert any(v is None for row in out["search"]["heatmap_acc0"] for v in row)
    # the search's JSON (heatmap cells null) is the same object in doctor: checked above, not paid for twice
    out = run_json("doctor", d, "--target", t, "--samples", "2", "--steps", "2", "--search", "never")
    assert out["verdict"] in ("ok", "problem", "unverified")
    assert out["evidence"]["level"] in LEVELS and out["evidence"]["basis"]  # what the verdict rests on
    assert out["lint"] is None or out["lint"]["evidence"]["level"] in LEVELS


@pytest.mark.slow  # ~70 s of model loads: the strict-JSON pass over the job commands runs in make test-all
def test_job_commands_on_the_model(paths):
    t, d, tmp, data = paths["target"], paths["drafter"], paths["tmp"], paths["data"]
    out = run_json(
        "generate", "--target", t, "--drafter", d, "--prompt", "def main(", "--max-new-tokens", "8"
    )
    assert out["new_tokens"] == 8
    out = run_json(
        "bench", "--target", t, "--drafter", d, "--n-prompts", "1", "--max-new-tokens", "8", "--setting", "2",
        "--out", tmp / "bench",
    )  # fmt: skip
    assert out["methods"]
    out = run_json("capture", "--target", t, "--data", data, "--out", tmp / "cap", "--max-len", "64")
    assert out["samples"] > 0
    out = run_json(
        "train", "--target", t, "--captured", tmp / "cap", "--out", tmp / "drafter", "--taps", "h2,h4,h5",
        "--steps", "2", "--batch-size", "2", "--ttt-steps", "2", "--draft-vocab", "512", "--val-fraction", "0.3",
    )  # fmt: skip
    assert out["steps"] == 2
    out = run_json(
        "advise", d, "--target", t, "--samples", "1", "--max-steps", "2", "--context", "32", "--repeats", "2"
    )
    assert out["options"]
