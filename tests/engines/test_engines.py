"""The engines' own argument code as the oracle of `lint` (`make test-engines`; marker `engines`, not in make test).

Runs a few hundred generated launch commands per engine (and per GPU profile for SGLang) through the installed
engines and through `lint`, writes the agreement per field as JSON (EAGLEWIRE_ENGINES_OUT, default
bench-results/engines.json) and asserts 100% on the fields and verdicts the engines' argument code decides.
The engine venvs are named by EAGLEWIRE_SGLANG_PYTHON / EAGLEWIRE_VLLM_PYTHON (os.pathsep-separated for several
versions: the pinned one first, then newer ones); a missing interpreter skips.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from engines.generate import draw_commands, fill, sglang_commands, vllm_commands, write_models
from engines.oracle import compare_engine

pytestmark = pytest.mark.engines

N = int(os.environ.get("EAGLEWIRE_ENGINES_N", "320"))
DEFAULT_PYTHON = {
    "sglang": ".venv-engines/sglang-0.5.23/bin/python",
    "vllm": ".venv-engines/vllm-0.33.0/bin/python",
}
GPUS = {"sglang": ("h200", "b200"), "vllm": ("h200",)}  # vLLM's speculative config does not ask the GPU
REQUIRED = {
    "sglang": ("starts", "algorithm", "num_steps", "topk", "num_draft_tokens", "draft_model"),
    "vllm": ("starts", "method", "num_speculative_tokens", "draft_model", "draft_tensor_parallel_size"),
}


def pythons(engine: str) -> list[str]:
    text = os.environ.get(f"EAGLEWIRE_{engine.upper()}_PYTHON", DEFAULT_PYTHON[engine])
    return [p for p in text.split(os.pathsep) if p]


@pytest.fixture(scope="module")
def oracle(tmp_path_factory) -> dict:
    models = write_models(tmp_path_factory.mktemp("models"))
    runs = []
    for engine, strategy in (("sglang", sglang_commands()), ("vllm", vllm_commands())):
        commands = [fill(c, models) for c in draw_commands(strategy, N)]
        for python in pythons(engine):
            if not Path(python).exists():
                runs.append(
                    {"engine": engine, "python": python, "error": f"{python} not found (make test-engines)"}
                )
                continue
            for gpu in GPUS[engine]:
                runs.append(compare_engine(engine, commands, python, gpu, models))
    out = Path(os.environ.get("EAGLEWIRE_ENGINES_OUT", "bench-results/engines.json"))
    out.parent.mkdir(parents=True, exist_ok=True)
    summary = {
        f"{r['engine']} {r.get('version')} {r.get('gpu', '')}".strip(): {
            "commands": r.get("commands"), **{k: v["rate"] for k, v in r.get("fields", {}).items()}
        }
        for r in runs
    }  # fmt: skip
    out.write_text(json.dumps({"suite": "engines", "summary": summary, "runs": runs}, indent=1))
    return {"runs": runs}


@pytest.mark.parametrize("engine", ["sglang", "vllm"])
def test_lint_agrees_with_the_engines_argument_code(oracle, engine):
    runs = [r for r in oracle["runs"] if r["engine"] == engine]
    ran = [r for r in runs if "error" not in r]
    if not ran:
        pytest.skip("; ".join(r["error"] for r in runs))
    pinned = ran[0]["version"]
    for run in ran:
        assert run["commands"] >= min(N, 300)
        rates = {f: run["fields"][f] for f in REQUIRED[engine]}
        broken = {f: r for f, r in rates.items() if r["agree"] != r["compared"]}
        if run["version"] == pinned:
            shown = [d for d in run["differences"]][:5]
            assert not broken, f"{engine} {run['version']} {run['gpu']}: {broken}; e.g. {shown}"
        elif broken:  # version drift: name the rules that disagree with the newer release
            rules = sorted({r for d in run["differences"] for r in d.get("rules", [])})
            pytest.fail(f"{engine} {run['version']} changed a rule: fields {sorted(broken)}; rules {rules}")


CAPTURE_OUT = Path(__file__).with_name("capture_oracle.json")


def capture_json(results: list[dict]) -> str:
    """One line per case (columns named once): small enough to commit, and diffs by case."""
    columns = ["arch", "num_layers", "config_key", "runner", "ids", "inner", "engine_indices", "engine_taps",
               "engine_failure", "table_row", "table_taps", "table_failure", "agree"]  # fmt: skip
    lines = ['{"columns": ' + json.dumps(columns) + ', "engines": [']
    for i, run in enumerate(results):
        lines.append(f'{{"engine": "{run["engine"]}", "version": "{run["version"]}", "cases": [')
        rows = [json.dumps([c.get(k) for k in columns]) for c in run["cases"]]
        lines.append(",\n".join(rows))
        lines.append("]}" + ("," if i + 1 < len(results) else ""))
    lines.append("]}")
    return "\n".join(lines) + "\n"


def test_the_convention_table_against_the_engines_capture_functions():
    """Records every case in tests/engines/capture_oracle.json and its disagreements in capture_disagreements.txt.

    The table (conventions.py) is owned elsewhere: this test reports, it does not gate (a disagreement is a row to
    fix, listed by architecture, version, ids in, engine's layers out and the table's taps)."""
    from engines.capture import compare_capture, summary

    results = []
    for engine in ("sglang", "vllm"):
        python = pythons(engine)[0]
        if Path(python).exists():
            results.append(compare_capture(engine, python))
    if not results:
        pytest.skip("no engine venv (make test-engines)")
    CAPTURE_OUT.write_text(capture_json(results))
    lines = summary(results)
    CAPTURE_OUT.with_name("capture_disagreements.txt").write_text("\n".join(lines) + "\n")
    assert sum(len(r["cases"]) for r in results) > 0


@pytest.mark.parametrize("gpu", ["h200", "b200"])
def test_lint_engine_code_on_the_kimi_k25_launch(gpu):
    """`lint --engine-code` in the tests' environment: SGLang's own code beside eaglewire's table, in agreement."""
    import subprocess
    import sys

    import eaglewire

    python = pythons("sglang")[0]
    if not Path(python).exists():
        pytest.skip(f"{python} not found (make test-engines)")
    example = Path(eaglewire.__file__).parent / "examples" / "kimi-k25"
    text = (example / "launch.txt").read_text().strip()
    argv = text.format(target=example / "target", drafter=example / "drafter").split()
    tree = [*argv[:-6], "--speculative-num-steps", "3", "--speculative-eagle-topk", "2",
            "--speculative-num-draft-tokens", "6"]  # fmt: skip
    for command in (argv, tree):
        proc = subprocess.run(
            [sys.executable, "-m", "eaglewire.cli", "lint", "--gpu", gpu, "--engine-python", python, "--json", "--",
             *command], capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        data = json.loads(proc.stdout)
        check = data["engine_code"]
        assert check["agrees"], check["verdict"]
        assert check["version"] == "0.5.23" and check["gpu_answered"] == gpu
        assert check["starts"] == data["starts_args"]
    assert check["starts"] is (gpu == "h200")  # the tree: starts on an H200, refused on a B200
