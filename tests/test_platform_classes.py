"""A vLLM package that picks its implementation by platform (vllm/models/deepseek_v32, deepseek_v4) serves a target
on a CPU with another class than on a GPU: the model-code records run the V1 request again on the CPU platform's own
class (`platform: cpu` entries), and the table holds a V1 row of the CPU's own there. What the CPU does is not what
the CUDA row says: DeepSeek-V3.2's CPU class is deepseek_v2.py's generic one (id L captured, id 0 raises), DeepSeek-V4
fails at load on a CPU at 0.25-0.29 (nvidia/model.py builds CUDA streams) and captures as on CUDA from 0.30."""

from __future__ import annotations

import pytest
from packaging.version import Version

from eaglewire.engines import runners
from eaglewire.engines.observed import records
from eaglewire.engines.table import parse_spec
from eaglewire.jobs.check import check
from eaglewire.taps import Wiring
from eaglewire.targets import TargetInfo

from fixtures import config_only_drafter

L = 61
VLLM = {
    Version(r["engine"].split("==")[1]): r for r in records("model-code") if r["engine"].startswith("vllm==")
}


def _cases(rec: dict, arch: str, platform: str | None) -> dict[tuple, dict]:
    """(ids, config key) -> case, of one architecture's cases on the platform (None: the GPU server's), of the
    runner a CPU runs (V1; MRV2 from 0.34.0, which has no V1)."""
    runner = next(c["runner"] for c in rec["covers"] if c["platform"] == "cpu")
    out = {}
    for values in rec["cases"]:
        c = dict(zip(rec["columns"], values, strict=True))
        if c["arch"] == arch and c["runner"] == runner and (c.get("platform") or None) == platform:
            out[(tuple(c["ids"]) if c["ids"] is not None else None, c["config_key"])] = c
    return out


def _cpu_entry(rec: dict, family: str) -> dict:
    (entry,) = [f for f in rec["families"] if f["family"] == family and f.get("platform") == "cpu"]
    return entry


@pytest.mark.parametrize("version", [v for v in VLLM if v >= Version("0.29.0")], ids=str)
def test_deepseek_v32_on_a_cpu_runs_the_generic_deepseek_class(version):
    rec = VLLM[version]
    entry = _cpu_entry(rec, "deepseek_v32")
    assert entry["claims"] == entry["agree"] == entry["cases"] > 0 and entry["built"], entry
    assert "deepseek_v32" in next(c for c in rec["covers"] if c["platform"] == "cpu")["families"]
    cpu, gpu = _cases(rec, "DeepseekV32ForCausalLM", "cpu"), _cases(rec, "DeepseekV32ForCausalLM", None)
    # the cases whose ids the runner read (V1: both keys; MRV2, the CPU's from 0.34.0: the top-level key only)
    last = [c for (ids, _), c in cpu.items() if ids == (L,) and c["ids_read"]]
    first = [c for (ids, _), c in cpu.items() if ids == (0,) and c["ids_read"] is not None]
    assert last and all(c["forward_taps"] == [L] for c in last)  # h_L reached on the CPU ...
    assert all(
        not gpu[k]["forward_taps"] for k, c in cpu.items() if k[0] == (L,) and c["ids_read"]
    )  # not CUDA
    assert first and all("TypeError" in (c["error"] or "") and c["forward_taps"] is None for c in first)


@pytest.mark.parametrize("version", [v for v in VLLM if v >= Version("0.25.0")], ids=str)
def test_deepseek_v4_on_a_cpu_fails_at_load_until_its_cpu_class(version):
    rec = VLLM[version]
    entry = _cpu_entry(rec, "deepseek_v4")
    assert entry["claims"] == entry["agree"] == entry["cases"] > 0, entry
    cases = _cases(rec, "DeepseekV4ForCausalLM", "cpu").values()
    if version < Version("0.30.0"):  # nvidia/model.py on a CPU: CUDA streams in DeepseekV4Model.__init__
        assert not entry["built"] and "requires CUDA support" in entry["build_stop"]
        assert all(c["forward_taps"] is None and "fails at load" in c["error"] for c in cases)
    else:  # cpu/model.py: captures as the CUDA decoder does (1..L, never h0)
        gpu = _cases(rec, "DeepseekV4ForCausalLM", None)
        assert entry["built"]
        assert all(c["forward_taps"] == gpu[(tuple(c["ids"]) if c["ids"] is not None else None,
                                             c["config_key"])]["forward_taps"] for c in cases)  # fmt: skip


def test_a_launch_on_a_cpu_takes_the_cpu_row_and_an_unknown_platform_lists_it():
    spec = parse_spec("vllm==0.31.0")
    (cpu,) = runners.select_rows(spec, "deepseek_v32", "cpu")
    assert cpu.match.row.platform == "cpu" and cpu.match.row.highest_tap == "L"
    (gpu,) = runners.select_rows(spec, "deepseek_v32", None)
    assert gpu.match.row.platform in (None, "cuda") and gpu.assumed
    assert [a.match.row.platform for a in gpu.alternatives if a.match.row.platform == "cpu"] == ["cpu"]


@pytest.mark.parametrize(
    ("version", "platform", "status"),
    [("0.31.0", "cuda", "fails"), ("0.31.0", "cpu", "ok"), ("0.33.0", "cpu", "ok")],
)
def test_check_decides_a_deepseek_v32_head_trained_on_the_last_layer_per_platform(
    tmp_path, version, platform, status
):
    """Ids 2,30,61: CUDA's DSA decoder never captures h61 (the drafter's fc gets two states of three); the CPU's
    generic DeepSeek class does."""
    target = TargetInfo("DeepseekV32ForCausalLM", "DeepseekV32ForCausalLM", "deepseek_v32", "deepseek_v32", L,
                        7168, 129280, source="test")  # fmt: skip
    drafter = config_only_drafter(tmp_path / "d", 129280, [2, 30, L])
    verdicts = check(drafter, target, [f"vllm=={version}"], Wiring.of([2, 30, L]), platform=platform).verdicts
    assert {v.status for v in verdicts} == {status}, [(v.engine, v.status) for v in verdicts]
    assert all(v.evidence["level"] == "model-code" for v in verdicts)


def test_check_says_a_cpu_launch_of_deepseek_v4_fails_at_load_and_when_it_serves(tmp_path):
    target = TargetInfo("DeepseekV4ForCausalLM", "DeepseekV4ForCausalLM", "deepseek_v4", "deepseek_v4", L, 4096,
                        129280, source="test")  # fmt: skip
    drafter = config_only_drafter(tmp_path / "d", 129280, [2, 30, 58])
    (v,) = check(drafter, target, ["vllm==0.27.0"], Wiring.of([2, 30, 58]), platform="cpu").verdicts
    assert v.status == "fails" and "fails at load" in v.served.failure
    assert v.engine.endswith("v1 on cpu") and "0.30.0 is the first release" in v.fix.reason
    # (0.30.0 on a CPU serves no EAGLE-3 drafter at all: its engine record)
    (v,) = check(drafter, target, ["vllm==0.31.0"], Wiring.of([2, 30, 58]), platform="cpu").verdicts
    assert v.status == "ok" and v.evidence["level"] == "model-code"


def test_check_says_a_cpu_launch_fails_where_the_class_needs_cuda_for_a_target_the_table_does_not_list(
    tmp_path,
):
    """Kimi-Linear (no row of its own; vLLM 0.28.0-0.30.0 serve it with vllm/models/kimi_k3's NVIDIA class on every
    platform but ROCm): KimiLinearModel.__init__ builds CUDA streams, so a CPU launch fails at load whatever the
    ids; the record's CPU entry says so, and check decides from it (it said `ok` there, from the GPU run)."""
    target = TargetInfo("KimiLinearForCausalLM", "KimiLinearForCausalLM", "generic", "kimi_linear", 27, 2304,
                        163840, source="test")  # fmt: skip
    drafter = config_only_drafter(tmp_path / "d", 163840, [2, 13, 24])
    (v,) = check(drafter, target, ["vllm==0.29.0"], Wiring.of([2, 13, 24]), platform="cpu").verdicts
    assert v.status == "fails" and "fails at load" in v.served.failure and v.served.stage == "load"
    assert v.evidence["level"] == "model-code" and "vllm-0.29.0-model-code.json" in v.evidence["basis"]
    (gpu,) = check(drafter, target, ["vllm==0.29.0"], Wiring.of([2, 13, 24]), platform="cuda").verdicts
    assert gpu.status != "fails" or "fails at load" not in (gpu.served.failure or "")
