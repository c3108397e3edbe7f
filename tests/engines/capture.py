"""The tap convention table checked against the engines' own capture code (capture_probe.py).

For every architecture in `targets.FAMILIES` (each one the engines' registries serve), on generated id lists (the
default, empty, L, L-1, -1, 0, unsorted, repeated, first id 1, and random lists), the engine's own entry point
leaves layer indices on the inner decoder; that decoder's forward loop, read at source below (`LOOPS`), says which
taps those indices capture. In every loop here index k is the tap h_k (h_0 = the embedding output, h_k = the output
of decoder layer k-1, before the final norm); what differs is where the loop looks for the indices and which k it
reaches:

- SGLang 0.5.23 captures at the input of decoder layer k, before its input norm (the embeddings at layer 0), through
  `attn_boundary.prepare(capture=...)` or `capture_gathered=` (layers/layer_boundary/stage.py:407-485): k in 0..L-1;
  gpt_oss also captures k = L at the final norm. The qwen3_moe and qwen3_next decoders read per-layer flags.
- vLLM 0.33.0's EagleModelMixin decoders capture k = 0 before the first layer and k = idx + 1 after layer idx
  (models/interfaces.py:1639-1648): k in 0..L, sorted and unique (interfaces.py:1616-1620). The three DeepSeek
  decoders each reach a different range (below).

The capture places are tested against tiny transformers models in test_capture_semantics.py (part of `make test`);
here the engines' own functions are the oracle of the table's rows.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from hypothesis import strategies as st

from eaglewire.engines import registries
from eaglewire.engines.fitted import NESTED, TOP, case_config
from eaglewire.engines.table import parse_spec, rows_for
from eaglewire.rules.taps import resolve
from eaglewire.targets import FAMILIES, GENERIC, _family_of
from engines.generate import draw_commands

PROBE = Path(__file__).with_name("capture_probe.py")


@dataclass(frozen=True)
class Loop:
    """What one inner decoder's forward loop does with the indices its model's capture setter left on it."""

    source: str  # the forward loop, file:line in the installed engine
    reads: str = (
        "list"  # "list": `k in layers_to_capture` / `aux_hidden_state_layers`; "flags": per-layer flags
    )
    highest: str = "L-1"  # the largest k the loop captures ("L": after the last layer, before the final norm)
    lowest: int = 0  # the smallest k it captures (1: the embeddings are never captured)
    zero_crash: str | None = None  # k = 0 raises instead


SGL = "layers/layer_boundary/stage.py:407-485"
MIXIN = "models/interfaces.py:1639-1648 (_maybe_add_hidden_state)"
LOOPS: dict[str, dict[str, Loop]] = {
    "sglang": {  # sglang/srt/..., 0.5.23
        "llama.LlamaModel": Loop(f"models/llama.py:485-495, 394-404; {SGL}"),
        "llama4.Llama4Model": Loop(f"models/llama4.py:521-531, 449-458; {SGL}"),
        "qwen2.Qwen2Model": Loop(f"models/qwen2.py:455-464, 329-338; {SGL}"),
        "qwen3.Qwen3Model": Loop(f"models/qwen3.py:523-532, 446-458; {SGL}"),
        "qwen3_moe.Qwen3MoeModel": Loop(
            f"models/qwen2_moe.py:1153-1156 (flags), 1188-1202 (Qwen2MoeModel.forward); qwen3_moe.py:888-902; {SGL}",
            reads="flags"),
        "qwen3_next.Qwen3NextModel": Loop(f"models/qwen3_next.py:954-957, 982-994, 877-888; {SGL}", reads="flags"),
        "qwen3_vl.Qwen3LLMModel": Loop(f"models/qwen3_vl.py:1229-1262; {SGL}"),
        "qwen3_vl_moe.Qwen3MoeLLMModel": Loop(  # set through Qwen2MoeModel's setter (flags too), read as a list
            f"models/qwen3_vl_moe.py:106-136; qwen2_moe.py:1153-1156; {SGL}"),
        "gpt_oss.GptOssModel": Loop(
            f"models/gpt_oss.py:708-737 (k = L at the final norm: layer_boundary/residual/access.py:40-52); {SGL}",
            highest="L"),
        "deepseek_v2.DeepseekV2Model": Loop(
            f"models/deepseek_v2.py:3175-3199; layers/aux_hidden_states.py:29-93 (exactly len(layers_to_capture) "
            f"captures, else RuntimeError); {SGL}"),
        "glm4_moe.Glm4MoeModel": Loop(f"models/glm4_moe.py:948-959, 836-849; {SGL}"),
        "minimax_m2.MiniMaxM2Model": Loop(f"models/minimax_m2.py:980-1005, 878-892; {SGL}"),
    },
    "vllm": {  # vllm/model_executor/..., 0.33.0
        "llama.LlamaModel": Loop(f"models/llama.py:428-441; {MIXIN}", highest="L"),
        "llama4.Llama4Model": Loop(f"models/llama4.py:384 (LlamaModel.forward); {MIXIN}", highest="L"),
        "mistral.MistralModel": Loop(f"models/mistral.py:217-233 (LlamaModel.forward); {MIXIN}", highest="L"),
        "qwen2.Qwen2Model": Loop(f"models/qwen2.py:421-433; {MIXIN}", highest="L"),
        "qwen3.Qwen3Model": Loop(f"models/qwen3.py:269 (Qwen2Model.forward); {MIXIN}", highest="L"),
        "qwen3_moe.Qwen3MoeModel": Loop(f"models/qwen3_moe.py:505-515; {MIXIN}", highest="L"),
        "qwen3_next.Qwen3NextModel": Loop(f"models/qwen3_next.py:721-734; {MIXIN}", highest="L"),
        "qwen3_vl.Qwen3LLMModel": Loop(  # after deepstack embeddings are added to the layer output
            f"models/qwen3_vl.py:1869-1888; {MIXIN}", highest="L"),
        "qwen3_vl_moe.Qwen3MoeLLMModel": Loop(f"models/qwen3_vl_moe.py:126-147; {MIXIN}", highest="L"),
        "gpt_oss.GptOssModel": Loop(f"models/gpt_oss.py:526-532; {MIXIN}", highest="L"),
        "minimax_m2.MiniMaxM2Model": Loop(f"models/minimax_m2.py:403-411; {MIXIN}", highest="L"),
        "deepseek_v2.DeepseekV2Model": Loop(  # before layer k as hidden_states + residual; k = L after the loop
            "models/deepseek_v2.py:1545-1571, 1586-1587 (the setter keeps the ids as given: 1955-1956)",
            highest="L", zero_crash="index 0: hidden_states + residual with residual None (TypeError)"),
        "vllm.models.deepseek_v32.nvidia.model.DeepseekV32Model": Loop(  # before layer k; no capture after the loop
            "vllm/models/deepseek_v32/nvidia/model.py:284-293 (k = 0: the embeddings, residual None), 295-323"),
        "vllm.models.deepseek_v4.nvidia.model.DeepseekV4Model": Loop(  # k = idx + 1 after layer idx, mHC streams
            "vllm/models/deepseek_v4/nvidia/model.py:993-1020 (the mean of the reconstructed hyper-connection "
            "streams; k = 0 is never captured)", highest="L", lowest=1),
    },
}  # fmt: skip


def archs(engine: str | None = None, version: str | None = None) -> list[tuple[str, str]]:
    """(architecture, family) for every architecture `targets.FAMILIES` names, and every target architecture the
    engine's own registry serves with EAGLE-3 at `version` (engines/<engine>/data/registry.json; family `generic` for the
    ones eaglewire's table does not list): the family picks the table's rows. (kimi_k2 names no architecture of its
    own: its checkpoints are DeepseekV3ForCausalLM.)"""
    out = []
    for fam in FAMILIES.values():
        for arch in fam.architectures:
            family = _family_of([arch], "")
            assert family in FAMILIES, f"{arch}: not in targets.FAMILIES"
            out.append((arch, family))
    named = {a for a, _ in out}
    if engine is not None:
        out += [(a, GENERIC) for a in registries.targets(engine, version) or () if a not in named]
    return sorted(out)


def registry_module(engine: str, version: str, arch: str) -> str | None:
    """The engine module that defines an architecture's class (from the registry data), for the probe."""
    rel = registries.data(engine)["releases"].get(version)
    entry = (rel or {}).get("eagle3", {}).get(arch)
    return None if entry is None else entry["file"].split(":")[0].removesuffix(".py").replace("/", ".")


def engine_version(python: str, engine: str) -> str:
    out = subprocess.run([python, "-c", f"import importlib.metadata as m; print(m.version('{engine}'))"],
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    return out.stdout.strip()


def mixin_loop(engine: str, version: str, arch: str) -> bool:
    """vLLM: the registry scan found the shared EagleModelMixin capture for this architecture (the protocol's own
    setter, the decoder calling `_maybe_add_hidden_state` at `self.start_layer` and `idx + 1`)."""
    rel = registries.data(engine)["releases"].get(version) or {}
    return (rel.get("eagle3", {}).get(arch) or {}).get("capture") == "mixin"


def num_layers(family: str) -> int:
    return 61 if family.startswith(("deepseek", "kimi")) else 32


FIXED = 16  # the hand-picked id lists at the head of `id_lists`


def id_lists(num_layers: int) -> list[list[int] | None]:
    n = num_layers
    fixed: list[list[int] | None] = [
        None, [], [n], [n - 1], [-1], [0], [1], [2, n // 2, n - 3], [1, n // 2 - 1, n - 4], [n // 2, 2, n - 3],
        [n - 4, n // 2 - 1, 1], [3, 3, 5], [0, n // 2, n], [0, 3, n - 1], [-1, 2, n - 2], [1, 2, 3, 4],
    ]  # fmt: skip
    assert len(fixed) == FIXED
    drawn = draw_commands(st.lists(st.integers(-1, n + 1), min_size=1, max_size=4), 24)
    return [*fixed, *[d for d in drawn if d not in fixed]]


def configs(engine: str, ids: list[int] | None) -> list[tuple[str, dict]]:
    """The drafter configs that carry `ids`: the nested key and the top-level one (SGLang reads only the nested
    key, so a top-level list must give its default; vLLM's readers differ by runner)."""
    keys = ("no ids",) if ids is None else (TOP, NESTED)
    return [(key, case_config(engine, ids, key)) for key in keys]  # as a record's cases are replayed


def read_indices(engine: str, entry: dict) -> list[int] | None:
    """The indices the inner decoder's forward loop looks at: its list, or its per-layer flags."""
    loop = LOOPS[engine].get(entry.get("inner") or "")
    return entry.get("flags") if loop is not None and loop.reads == "flags" else entry.get("captured")


def engine_taps(engine: str, entry: dict, num_layers: int) -> tuple[list[int] | None, str]:
    """What the inner decoder's forward loop captures for the indices the engine left on it: taps, or why the
    drafter does not get one state per id (its fc is as wide as the ids it was trained with)."""
    if "error" in entry:
        return None, entry["error"]
    loop = LOOPS[engine].get(entry["inner"])
    if loop is None and entry.get("mixin"):  # the shared EagleModelMixin loop (registry scan)
        loop = Loop(f"{entry['inner']}.forward; {MIXIN}", highest="L")
    if loop is None:
        return None, f"no forward loop read for {entry['inner']} (add it to engines/capture.py LOOPS)"
    indices = read_indices(engine, entry)
    if loop.zero_crash and 0 in indices:
        return None, loop.zero_crash
    if not indices:
        return None, "nothing captured"
    top = num_layers if loop.highest == "L" else num_layers - 1
    outside = [i for i in indices if not loop.lowest <= i <= top]
    if outside:
        return None, f"index {outside[0]} is never captured (captures {loop.lowest}..{top})"
    ids = entry.get("ids") if engine == "sglang" else entry.get("from_config")
    wanted = len(ids) if ids else len(entry["captured"])
    if len(set(indices)) < wanted:
        return None, f"repeated index: {len(set(indices))} states for {wanted} ids"
    return sorted(set(indices)), ""


CHUNK = 1500  # cases per probe process (each pays the engine's import once)


def run_probe(python: str, engine: str, cases: list[dict], first_on_path: str | None = None) -> dict:
    """The probe over `cases`, in chunks (one engine process each); `first_on_path`: a folder whose packages win
    over the venv's (a release's own transformers: model_code.transformers_overlay)."""
    parts = [_probe(python, engine, cases[i : i + CHUNK], first_on_path) for i in range(0, len(cases), CHUNK)]
    return {**parts[0], "results": [r for p in parts for r in p["results"]]}


def _probe(python: str, engine: str, cases: list[dict], first_on_path: str | None = None) -> dict:
    env = os.environ | {"PYTHONPATH": first_on_path} if first_on_path else None
    with tempfile.TemporaryDirectory() as tmp:
        req, res = Path(tmp) / "req.json", Path(tmp) / "res.json"
        req.write_text(json.dumps({"engine": engine, "cases": cases}))
        proc = subprocess.run(
            [python, str(PROBE), str(req), str(res)], capture_output=True, text=True, timeout=3600, env=env
        )
        if not res.is_file():
            raise RuntimeError(f"capture probe failed: {proc.stderr.strip().splitlines()[-1:]}")
        return json.loads(res.read_text())


def runner_results(engine: str, result: dict) -> list[tuple[str, dict]]:
    """(runner, result) pairs of one probe case: SGLang has one runner; vLLM's probe answers for V1 and MRV2."""
    return [("", result)] if engine == "sglang" else list(result.items())


def compare_capture(engine: str, python: str) -> dict:
    """Every (architecture, id list, config shape[, runner]): the engine's taps beside the table's."""
    cases, meta = [], []
    wanted = engine_version(python, engine)
    for arch, family in archs(engine, wanted):
        n = num_layers(family)
        module = registry_module(engine, wanted, arch)
        # registry targets: the fixed lists where the table claims their capture (vLLM's EagleModelMixin), else
        # the default and one explicit list (the engine's setter runs; what its loop captures nobody read)
        lists = id_lists(n)
        if family == GENERIC:
            lists = lists[:FIXED] if mixin_loop(engine, wanted, arch) else [None, [2, n // 2, n - 3]]
        for ids in lists:
            for shape, config in configs(engine, ids):
                cases.append({"arch": arch, "num_layers": n, "config": config, "module": module})
                meta.append((arch, family, n, ids, shape, config))
    data = run_probe(python, engine, cases)
    version = data["version"]
    out = []
    for (arch, family, n, ids, shape, config), result in zip(meta, data["results"], strict=True):
        runs = runner_results(engine, result)
        # the oracle runs the CUDA branch of a package that picks by platform: the rows a GPU server uses
        matches = [
            m for m in rows_for(parse_spec(f"{engine}=={version}"), family, arch) if m.row.holds_on("cuda")
        ]
        rows = {m.row.runner or "": m.row for m in matches}
        claims = all(m.model_known for m in matches)  # a registry target whose capture nobody read: no claim
        for runner, entry in runs:
            entry = {**entry, "mixin": family == GENERIC and mixin_loop(engine, version, arch)}
            row = rows.get(runner)
            e_taps, e_why = engine_taps(engine, entry, n)
            record = {"arch": arch, "num_layers": n, "ids": ids, "config_key": shape, "runner": runner or None,
                      "inner": entry.get("inner"), "engine_indices": read_indices(engine, entry),
                      "engine_taps": e_taps, "engine_failure": e_why or None}  # fmt: skip
            if row is None:
                record.update(table_row=None, agree=False, why="no table row for this version and class")
            else:
                res = resolve(row, config, n)
                t_taps = list(res.taps.indices) if res.taps is not None else None
                record.update(table_row=row.key, table_taps=t_taps, table_failure=res.failure)
                record["agree"] = t_taps == e_taps if (t_taps is not None or e_taps is not None) else True
                if not claims:
                    record["agree"] = None  # recorded, not compared: the table claims nothing for it
            out.append(record)
    return {"engine": engine, "version": version, "cases": out}


def summary(results: list[dict]) -> list[str]:
    """One line per disagreement, grouped (architecture, version, ids in, engine's layers out, eaglewire's taps)."""
    lines = []
    for run in results:
        for c in run["cases"]:
            if c["agree"] or c["agree"] is None:
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
