"""vLLM's V0 engine (before 0.10.0): which launches run on it, and that an EAGLE-3 head does not load there.

The facts were executed, not only read: engines/vllm/data/draft-settings/vllm-V.json hold, per release 0.8.5-0.9.2,
the release's own choice of engine per launch and V0's draft build refusing the EAGLE-3 head's fc
(tests/test_draft_settings_records.py replays them against lint and the rows). Here: `check`, `test --engine` and
the runner choice say so on the zoo drafter, and say what launches V1 instead.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from eaglewire import zoo
from eaglewire.engines.runners import serving_row
from eaglewire.engines.table import parse_spec
from eaglewire.errors import InputError
from eaglewire.jobs.check import check
from eaglewire.rules.taps import config_value_for
from eaglewire.taps import Wiring


@pytest.mark.parametrize(
    ("version", "platform", "runner", "alternative"),
    [("0.8.5", None, "v0", "v1"), ("0.8.5", "cuda", "v0", "v1"), ("0.8.5.post2", "cpu", "v0", None),
     ("0.9.0.1", "cpu", "v0", None), ("0.9.0.1", "cuda", "v1", "v0"), ("0.9.1", "cpu", "v1", None),
     ("0.9.2", None, "v1", "v0"), ("0.10.0", None, "v1", None)],
)  # fmt: skip
def test_the_engine_a_plain_launch_runs(version, platform, runner, alternative):
    choice = serving_row(parse_spec(f"vllm=={version}"), "llama", platform)
    assert choice.runner == runner, choice.why
    assert [a.match.row.runner for a in choice.alternatives] == ([alternative] if alternative else [])


def test_check_says_fails_at_0_8_5_with_the_launch_that_serves_it():
    (v,) = check(zoo.drafter_dir("default"), zoo.target_dir(), ["vllm==0.8.5"]).verdicts
    assert v.status == "fails" and v.row_key == "vllm-llama-v0" and v.problem
    assert "EAGLEModel" in v.served.failure and "VLLM_USE_V1=1" in v.fix.reason
    (alt,) = v.alternatives
    assert alt.status == "ok" and "VLLM_USE_V1=1" in alt.when
    assert v.evidence["level"] == "model-code" and "draft-settings/vllm-0.8.5.json" in v.evidence["basis"]
    (v1,) = check(zoo.drafter_dir("default"), zoo.target_dir(), ["vllm==0.8.5"], runner="v1").verdicts
    assert v1.status == "ok"
    # from 0.9.0 V1 is the default: V0 is only the alternative a VLLM_USE_V1=0 launch meets
    (later,) = check(zoo.drafter_dir("default"), zoo.target_dir(), ["vllm==0.9.2"]).verdicts
    assert later.row_key.startswith("vllm-llama-v1") and [a.status for a in later.alternatives] == ["fails"]
    # ... or, before 0.9.2, a float32 one: V1 takes float16 and bfloat16 only there (vllm-0.9.1.post2-cpu.json: the
    # float32 zoo drafters failed in V0's EAGLE-1 wrapper, the bfloat16 family targets on V1)
    (v091,) = check(zoo.drafter_dir("default"), zoo.target_dir(), ["vllm==0.9.1"]).verdicts
    assert [("float32" in a.when, a.status) for a in v091.alternatives] == [(True, "fails")]
    assert not any("float32" in a.when for a in later.alternatives)


def test_no_v0_runner_after_0_10():
    with pytest.raises(InputError, match="no v0 runner"):
        serving_row(parse_spec("vllm==0.10.0"), "llama", None, "v0")


def test_the_cli_exits_1_and_test_names_the_runner_that_serves_it():
    run = [sys.executable, "-m", "eaglewire.cli"]
    drafter, target = str(zoo.drafter_dir("default")), str(zoo.target_dir())
    out = subprocess.run([*run, "check", drafter, "--target", target, "--engine", "vllm==0.8.5", "--json"],
                         capture_output=True, text=True)  # fmt: skip
    assert out.returncode == 1, out.stderr
    doc = json.loads(out.stdout)
    (engine,) = doc["engines"]
    assert engine["status"] == "fails" and engine["evidence"]["level"] == "model-code"
    got = subprocess.run([*run, "test", drafter, "--target", target, "--engine", "vllm==0.8.5", "--samples", "2"],
                         capture_output=True, text=True)  # fmt: skip
    assert got.returncode == 2
    (line,) = got.stderr.strip().splitlines()[-1:]
    assert "EAGLEModel" in line and "pass --runner v1" in line and "Traceback" not in got.stderr


def test_the_v0_rows_fix_is_the_launch_for_check_and_doctor_alike():
    """Both check and doctor take the fix from the row (`config_value_for`): a launch on V1, not a value."""
    row = serving_row(parse_spec("vllm==0.8.5"), "llama", None).match.row
    fix = config_value_for(row, Wiring.parse("h2,h4,h5"), 8)
    assert not fix.expressible and "VLLM_USE_V1=1" in fix.reason
