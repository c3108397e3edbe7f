"""The tap convention table checked against the engines' own capture functions (capture_probe.py).

For every model class the table covers (`targets.FAMILIES`: llama-class and deepseek-class architectures), on
generated id lists (the default, empty, L, L-1, -1, 0, unsorted, repeated, first id 1, and random lists), the
engine's function returns the layer indices it captures; the forward loop of each model file says what an index
means:

- SGLang 0.5.23 (llama.py:485-495, deepseek_v2.py:3175-3199, layer_boundary/stage.py:421-432): index i is
  captured at the input of decoder layer i, before its input norm = tap h_i, for i in 0..L-1 (the loop runs over
  the layers only: i >= L is never captured; a repeated index is captured once).
- vLLM 0.33.0 llama-style models (llama.py:428-441): index 0 is the embedding output (start_layer), index k the
  output of layer k-1 (`idx + 1`) = tap h_k, for k in 0..L. DeepSeek-style (deepseek_v2.py:1545-1587): index k
  < L is captured before layer k as hidden_states + residual (k = 0: residual is None, TypeError), k = L after
  the loop. Indices are sorted and deduplicated (interfaces.py:1616-1620).

The two capture places are tested against tiny transformers models in test_capture_semantics.py (part of
`make test`); here the engines' own functions are the oracle of the table's rows.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path

from hypothesis import strategies as st

from eaglewire.conventions import parse_spec, resolve, rows_for
from eaglewire.targets import FAMILIES, _family_of
from engines.generate import draw_commands

PROBE = Path(__file__).with_name("capture_probe.py")
LAYERS = {"llama": 32, "deepseek": 61}


# The architectures capture_probe.py builds (its SGLANG_MODULES; vLLM resolves them through its registry).
PROBED = [
    "LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM", "Qwen3MoeForCausalLM",
    "DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM", "DeepseekV32ForCausalLM", "KimiK25ForConditionalGeneration",
]  # fmt: skip


def archs() -> list[tuple[str, str, str]]:
    """(architecture, family, capture class) for every probed architecture: the family picks the table's rows,
    the capture class ("llama" or "deepseek") the forward loop that says what an index means."""
    out = []
    for arch in PROBED:
        family = _family_of([arch], "")
        assert family in FAMILIES, f"{arch}: not in targets.FAMILIES"
        out.append((arch, family, "deepseek" if family.startswith(("deepseek", "kimi")) else "llama"))
    return sorted(out)


def id_lists(num_layers: int) -> list[list[int] | None]:
    n = num_layers
    fixed: list[list[int] | None] = [
        None, [], [n], [n - 1], [-1], [0], [1], [2, n // 2, n - 3], [1, n // 2 - 1, n - 4], [n // 2, 2, n - 3],
        [n - 4, n // 2 - 1, 1], [3, 3, 5], [0, n // 2, n], [0, 3, n - 1], [-1, 2, n - 2], [1, 2, 3, 4],
    ]  # fmt: skip
    drawn = draw_commands(st.lists(st.integers(-1, n + 1), min_size=1, max_size=4), 24)
    return [*fixed, *[d for d in drawn if d not in fixed]]


def configs(engine: str, ids: list[int] | None) -> list[tuple[str, dict]]:
    """The drafter configs that carry `ids`: SGLang reads the nested key only; vLLM readers differ by runner."""
    if ids is None:
        return [("no ids", {"architectures": ["LlamaForCausalLMEagle3"]})]
    nested = {
        "architectures": ["LlamaForCausalLMEagle3"],
        "eagle_config": {"eagle_aux_hidden_state_layer_ids": ids},
    }
    if engine == "sglang":
        return [("eagle_config.eagle_aux_hidden_state_layer_ids", nested)]
    top = {"architectures": ["Eagle3Speculator"], "eagle_aux_hidden_state_layer_ids": ids}
    return [
        ("eagle_aux_hidden_state_layer_ids", top),
        ("eagle_config.eagle_aux_hidden_state_layer_ids", nested),
    ]


def engine_taps(
    engine: str, engine_class: str, captured: list[int], num_layers: int, ids: list[int] | None
) -> tuple[list[int] | None, str]:
    """What the forward loop captures for these indices: taps, or why the drafter does not get one state per id
    (its fc is as wide as the ids it was trained with)."""
    if engine == "sglang":
        valid = range(0, num_layers)
    elif engine_class == "deepseek":
        if 0 in captured:
            return None, "index 0: hidden_states + residual with residual None (TypeError)"
        valid = range(1, num_layers + 1)
    else:
        valid = range(0, num_layers + 1)
    if not captured:
        return None, "nothing captured"
    outside = [i for i in captured if i not in valid]
    if outside:
        return None, f"index {outside[0]} is never captured (captures {valid.start}..{valid.stop - 1})"
    wanted = len(ids) if ids else len(captured)
    if len(set(captured)) < wanted:
        return None, f"repeated index: {len(set(captured))} states for {wanted} ids"
    return sorted(captured), ""


def run_probe(python: str, engine: str, cases: list[dict]) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        req, res = Path(tmp) / "req.json", Path(tmp) / "res.json"
        req.write_text(json.dumps({"engine": engine, "cases": cases}))
        proc = subprocess.run(
            [python, str(PROBE), str(req), str(res)], capture_output=True, text=True, timeout=1800
        )
        if not res.is_file():
            raise RuntimeError(f"capture probe failed: {proc.stderr.strip().splitlines()[-1:]}")
        return json.loads(res.read_text())


def compare_capture(engine: str, python: str) -> dict:
    """Every (architecture, id list, config shape[, runner]): the engine's taps beside the table's."""
    cases, meta = [], []
    for arch, family, engine_class in archs():
        n = LAYERS[engine_class]
        for ids in id_lists(n):
            for shape, config in configs(engine, ids):
                cases.append({"arch": arch, "num_layers": n, "config": config})
                meta.append((arch, family, engine_class, n, ids, shape, config))
    data = run_probe(python, engine, cases)
    version = data["version"]
    out = []
    for (arch, family, engine_class, n, ids, shape, config), result in zip(
        meta, data["results"], strict=True
    ):
        runs = [("", result)] if engine == "sglang" else list(result.items())
        rows = {m.row.runner or "": m.row for m in rows_for(parse_spec(f"{engine}=={version}"), family)}
        for runner, entry in runs:
            row = rows.get(runner)
            if "error" in entry:
                e_taps, e_why = None, entry["error"]
            else:
                read = entry.get("ids") if engine == "sglang" else entry.get("from_config")
                e_taps, e_why = engine_taps(engine, engine_class, entry["captured"], n, read)
            record = {"arch": arch, "num_layers": n, "ids": ids, "config_key": shape, "runner": runner or None,
                      "engine_indices": entry.get("captured"), "engine_taps": e_taps, "engine_failure": e_why or None}  # fmt: skip
            if row is None:
                record.update(table_row=None, agree=False, why="no table row for this version and class")
            else:
                res = resolve(row, config, n)
                t_taps = list(res.taps.indices) if res.taps is not None else None
                record.update(table_row=row.key, table_taps=t_taps, table_failure=res.failure)
                record["agree"] = t_taps == e_taps if (t_taps is not None or e_taps is not None) else True
            out.append(record)
    return {"engine": engine, "version": version, "cases": out}


def summary(results: list[dict]) -> list[str]:
    """One line per disagreement, grouped (architecture, version, ids in, engine's layers out, eaglewire's taps)."""
    lines = []
    for run in results:
        for c in run["cases"]:
            if c["agree"]:
                continue
            engine = c["engine_taps"] if c["engine_taps"] is not None else f"fails: {c['engine_failure']}"
            table = (
                c.get("table_taps") if c.get("table_taps") is not None else f"fails: {c.get('table_failure')}"
            )
            runner = f" {c['runner']}" if c["runner"] else ""
            lines.append(
                f"{run['engine']} {run['version']}{runner} {c['arch']} (L={c['num_layers']}) {c['config_key']}="
                f"{c['ids']}: engine indices {c['engine_indices']} -> taps {engine}; table {c.get('table_row')} "
                f"-> {table}"
            )
    return lines
