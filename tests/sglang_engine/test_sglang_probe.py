"""`eaglewire probe --launch -- python -m sglang.launch_server ...` against SGLang 0.5.23 on the CPU, as a user runs
it: the diagnoses on live servers (served as trained, the Kimi-K2.5 wiring fault and its `check --fix-into` copy,
the flag fault of the case, a weak drafter), each read from what SGLang returns (its per-request counters, server
info, metrics with --enable-metrics), and nothing of the engine left after success, failure and SIGINT.

The case end to end in its own engine: the custom-taps drafter with its id lists removed (SGLang feeds its default
taps: the collapse), the copy `check --fix-into` writes (restored), and the flag fault (`--speculative-num-steps 1
--speculative-eagle-topk 1 --speculative-num-draft-tokens 16`: SGLang's own log line, one draft per verify). Each
case adds itself to the record (EAGLEWIRE_SGLANG_OUT/sglang-probe.json; committed as
tests/sglang_engine/records/sglang-0.5.23-cpu-probe.json).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from interrupt import interruptible
from real_engine.probe_table import case_of, write_case
from real_engine.test_probe import _gone, _left_in_shm, _wait_for, ids_removed

from eaglewire import zoo
from eaglewire.jobs.probe import ProbeOptions
from eaglewire.server import shm

from .conftest import ENGINE
from .sglang_side import HARNESS, has_avx512

pytestmark = pytest.mark.sglang_engine

SRC = Path(__file__).resolve().parents[2] / "src"
REQUESTS = 8
ORDER = ["default-k3", "custom-taps-no-ids-k3", "custom-taps-fixed-k3", "default-flag-fault", "weak-k3"]
ADJUSTED = "speculative_num_draft_tokens is adjusted to speculative_num_steps + 1"  # SGLang's own words


def serve_argv(
    python: Path, drafter: Path | None, steps: int, topk: int = 1, draft_tokens: int | None = None
):
    """The launch line of ../shared/reference/sglang-cpu.md, metrics on; the harness only where the CPU lacks
    AVX-512 (it swaps SGLang's packed GEMM for torch's there)."""
    env = ["SGLANG_USE_CPU_ENGINE=1", "SGL_TEST_FORCE_AMX=1", "HF_HUB_OFFLINE=1"]
    if not has_avx512():
        env += [f"PYTHONPATH={HARNESS}", "EAGLEWIRE_SGLANG_NO_AVX512=1"]
    argv = [*env, str(python), "-m", "sglang.launch_server", "--model-path", str(zoo.target_dir()),
            "--device", "cpu", "--dtype", "bfloat16", "--attention-backend", "intel_amx", "--disable-cuda-graph",
            "--mem-fraction-static", "0.1", "--max-total-tokens", "8192", "--random-seed", "0",
            "--enable-metrics"]  # fmt: skip
    if drafter is not None:
        argv += ["--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", str(drafter),
                 "--speculative-num-steps", str(steps), "--speculative-eagle-topk", str(topk),
                 "--speculative-num-draft-tokens", str(draft_tokens or steps + 1)]  # fmt: skip
    return argv


def launch(argv: list[str], *extra: str) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "eaglewire.cli", "probe", "--launch", "--requests", str(REQUESTS), *extra, "--",
           *argv]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(SRC), "COLUMNS": "400"}
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=interruptible)  # fmt: skip


def run(tmp: Path, argv: list[str]) -> tuple[dict, str, int]:
    """probe --launch to its end: (report.json, stdout, exit code); the engine gone."""
    proc = launch(argv, "--report", str(tmp / "report"))
    pid = int(_wait_for(proc, r"healthy at \S+ \(pid (\d+)\)", 600).group(1))
    out, err = proc.communicate(timeout=900)
    assert "Traceback" not in err, err[-3000:]
    assert _gone(pid), "the engine's process group outlived probe --launch"
    return json.loads((tmp / "report" / "report.json").read_text()), out, proc.returncode


def record(name: str, description: str, report: dict, rc: int) -> None:
    """Add this case to the tier's probe record, with SGLang's own words about its settings and probe's exit code."""
    out = Path(os.environ.get("EAGLEWIRE_SGLANG_OUT", "sglang-results")) / "sglang-probe.json"
    opts = ProbeOptions()
    header = {"engine": ENGINE, "server": "SGLang 0.5.23 on the CPU (test harness: ../shared/sglang-cpu) serving the "
              "zoo target in bfloat16, intel_amx attention",
              "workload": {"prompts": REQUESTS, "prompt_len": opts.prompt_len, "new_tokens": opts.new_tokens}}  # fmt: skip
    case = case_of(name, description, report) | {"engine_said": report["launched"]["engine_said"],
                                                 "exit_code": rc}  # fmt: skip
    write_case(out, header, case, ORDER, "tests/sglang_engine/test_sglang_probe.py")


def show(report: dict) -> str:
    line = json.dumps({"diagnosis": report["diagnosis"], "summary": report["summary"],
                       "measured": report["measured"]["accept_length"],
                       "per_position": report["measured"].get("per_position_acceptance"),
                       "platform": report.get("platform"), "assumed": report.get("assumed")})  # fmt: skip
    print("\nPROBE", line)
    return line


def assert_read_from_sglang(report: dict) -> None:
    """The engine, its version and the platform come from the server itself; the window holds our requests."""
    assert report["server"]["engine"] == "sglang" and report["server"]["version"] == "0.5.23", report[
        "server"
    ]
    assert (report["platform"]["value"], report["platform"]["source"]) == ("cpu", "server"), report[
        "platform"
    ]
    assert len(report["measured"]["requests"]) == REQUESTS, report["measured"]["requests"]


def test_served_as_trained(sglang_python, tmp_path):
    report, _, rc = run(tmp_path, serve_argv(sglang_python, zoo.drafter_dir("default"), 3))
    show(report)
    record("default-k3", "`default` drafter, chain 3 steps", report, rc)
    assert_read_from_sglang(report)
    assert report["diagnosis"] == "served-as-trained" and rc == 0, show(report)


@pytest.fixture(scope="module")
def no_ids(tmp_path_factory) -> Path:
    return ids_removed(tmp_path_factory.mktemp("no-ids"))


def test_the_case_collapse_diagnosed(sglang_python, no_ids, tmp_path):
    """The id-less custom-taps drafter: SGLang feeds its default taps; probe says wiring and gives the fix."""
    report, out, rc = run(tmp_path, serve_argv(sglang_python, no_ids, 3))
    show(report)
    record("custom-taps-no-ids-k3", "`custom-taps`, id lists removed (the case)", report, rc)
    assert_read_from_sglang(report)
    assert report["diagnosis"] == "wiring", show(report)
    pred = report["predicted"]
    assert set(pred["served_taps"].values()) != {pred["trained_taps"]} and pred["trained_taps"] == "h0,h1,h4"
    assert "eagle_aux_hidden_state_layer_ids" in out


def test_the_fixed_copy_restores_it(sglang_python, no_ids, tmp_path):
    """`check --fix-into` on the id-less drafter for sglang==0.5.23; the copy served: as trained."""
    fixed = tmp_path / "fixed"
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    done = subprocess.run([sys.executable, "-m", "eaglewire.cli", "check", str(no_ids), "--target",
                           str(zoo.target_dir()), "--engine", ENGINE, "--fix-into", str(fixed)],
                          env=env, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert fixed.joinpath("config.json").exists(), done.stdout + done.stderr
    report, _, rc = run(tmp_path, serve_argv(sglang_python, fixed, 3))
    show(report)
    record("custom-taps-fixed-k3", "the `check --fix-into` copy of the id-less drafter", report, rc)
    assert_read_from_sglang(report)
    assert report["diagnosis"] == "served-as-trained" and rc == 0, show(report)


def test_the_case_flag_fault(sglang_python, tmp_path):
    """16 draft tokens asked with one step and top-k 1: SGLang says it adjusts them to 2 and drafts one per
    verify; probe says flags and names the settings that give the drafter its steps."""
    argv = serve_argv(sglang_python, zoo.drafter_dir("default"), 1, 1, 16)
    report, out, rc = run(tmp_path, argv)
    show(report)
    record("default-flag-fault", "`default`, --speculative-num-steps 1 --speculative-eagle-topk 1 "
           "--speculative-num-draft-tokens 16 (the case's flags)", report, rc)  # fmt: skip
    assert_read_from_sglang(report)
    said = report["launched"]["engine_said"]
    assert any(ADJUSTED in line for line in said) and ADJUSTED in out, said
    assert report["server"]["draft_tokens_per_verify"] == 1, report["server"]
    assert report["diagnosis"] == "flags" and rc == 1, show(report)
    assert "speculative-num-steps" in out or "speculative_num_steps" in out


def test_weak_drafter(sglang_python, tmp_path, weak_drafter):
    report, _, rc = run(tmp_path, serve_argv(sglang_python, weak_drafter, 3))
    show(report)
    record("weak-k3", "a drafter trained for 6 steps", report, rc)
    assert_read_from_sglang(report)
    assert report["diagnosis"] == "weak-drafter", show(report)


def test_server_without_speculation_fails_cleanly(sglang_python):
    """`probe --launch` of a server without speculation: one line, exit 2, the engine stopped, and nothing of it left
    in /dev/shm (SGLang's CPU server leaves a 66 MB all-reduce buffer, `sglang_loads_*` and a semaphore unless the
    launch removes them)."""
    shm_before = shm.names()
    proc = launch(serve_argv(sglang_python, None, 0))
    pid = int(_wait_for(proc, r"healthy at \S+ \(pid (\d+)\)", 600).group(1))
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 2, err[-2000:]
    errors = [line for line in err.splitlines() if line.startswith("eaglewire: error:")]
    assert len(errors) == 1 and "without speculative decoding" in errors[0], err[-2000:]
    assert _gone(pid) and not _left_in_shm(shm_before)


def test_sigint_stops_the_engine(sglang_python):
    """Ctrl-C while `probe --launch` measures: exit 130 and no process of SGLang's group left (the tokenizer,
    scheduler and detokenizer processes included)."""
    shm_before = shm.names()
    proc = launch(serve_argv(sglang_python, zoo.drafter_dir("default"), 3))
    pid = int(_wait_for(proc, r"healthy at \S+ \(pid (\d+)\)", 600).group(1))
    from eaglewire.server.launch import group_members

    assert len(group_members(pid)) >= 2
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=120)
    assert proc.returncode == 130
    assert _gone(pid) and not _left_in_shm(shm_before)


def test_no_case_writes_an_engine_path(tmp_path):
    """The record names drafters by case, never by a folder of this machine."""
    out = Path(os.environ.get("EAGLEWIRE_SGLANG_OUT", "sglang-results")) / "sglang-probe.json"
    if out.exists():
        assert not re.search(r"/tmp/|pytest-of", out.read_text())
