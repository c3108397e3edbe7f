"""Model-code records: each SGLang release's own capture code, executed, for every EAGLE-3 target it lists.

    cd tests && python -m engines.model_code --python VENV/bin/python [--release V ...] [--out DIR]

For each release (default: every SGLang release on the index from 0.4.5 with EAGLE-3, the ledger's), install that
release's wheel without dependencies into the given engine venv (one venv holding what SGLang's model files import
on a CPU machine: `make .venv-engines/sglang-0.5.23/.installed`), then run capture_probe.py there over every target
architecture the table names and the release's registry serves, on the fixed id lists of capture.py: the release's
own capture request (its model runner's entry, by what the release has: capture_probe._sglang_request_capture) and
its decoder's own forward loop, run on three tokens with stand-in layers whose outputs are the taps they make
(capture_probe._forward_taps). What the forward returned is set beside the taps the table gives for that release.

One record per release, `engines/sglang/data/observed/sglang-V-model-code.json` (level `model-code`): the families
whose decoder ran (a family whose module the release lacks, or whose forward needs more than the stand-ins, makes
no claim and is listed apart), per case the forward's taps or the loop's own error beside the table's. The
forward runs the way SGLang's CPU engine runs it (no CUDA graphs): the record covers the CPU, and CUDA from
0.5.11 on, where graph-replayed steps capture what eager ones do (before it they capture the default ids:
sglang PR #22836, a row of the table).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

from packaging.version import Version

from eaglewire.engines import registries
from eaglewire.engines.table import parse_spec, rows_for
from eaglewire.rules.ledger import ledger
from eaglewire.rules.taps import resolve
from engines.capture import FIXED, archs, configs, id_lists, num_layers, registry_module, run_probe

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "src/eaglewire/engines/sglang/data/observed"
GRAPHS_AS_EAGER = Version("0.5.11")  # sglang PR #22836: CUDA graphs capture the configured ids from here on
PROBE_FAILED = "probe could not build the model"


def releases() -> list[str]:
    """Every SGLang release with EAGLE-3 in the ledger, oldest first."""
    return [r.version for r in ledger("sglang").releases if r.eagle3]


def install(python: str, release: str) -> None:
    """The release's wheel, no dependencies, over what the venv holds (its model files' imports)."""
    cmd = [python, "-m", "pip", "install", "--quiet", "--no-deps", "--force-reinstall", f"sglang=={release}"]
    subprocess.run(cmd, check=True, capture_output=True, timeout=900)


def cases_for(release: str) -> tuple[list[dict], list[tuple]]:
    """The probe's cases (every architecture, each fixed id list in each config shape, with the forward) and what
    the table needs to judge each."""
    cases, meta = [], []
    for arch, family in archs("sglang", release):
        n = num_layers(family)
        module = registry_module("sglang", release, arch)
        for ids in id_lists(n)[:FIXED]:
            for shape, config in configs("sglang", ids):
                cases.append({"arch": arch, "num_layers": n, "config": config, "module": module, "forward": True})
                meta.append((arch, family, n, ids, shape, config))
    return cases, meta


def table_taps(release: str, family: str, arch: str, config: dict, n: int) -> dict:
    """The table's answer at the release: its row, taps, failure (the release's registry refusing the
    architecture first)."""
    refused = registries.refusal("sglang", release, arch, "")
    if refused is not None:
        return {"row": None, "taps": None, "failure": refused.reason, "claims": True, "graphs_differ": False}
    matches = rows_for(parse_spec(f"sglang=={release}"), family, arch)
    if not matches:
        return {"row": None, "taps": None, "failure": "no row"}
    row = matches[0].row
    # the eager forward's taps: a row whose CUDA-graph path feeds other taps (before 0.5.11) is asked for the
    # eager ones here; its graph path is not what ran (the record then covers the CPU only)
    res = resolve(replace(row, ignores_ids=None), config, n)
    return {"row": row.key, "taps": list(res.taps.indices) if res.taps is not None else None,
            "failure": res.failure, "claims": all(m.model_known for m in matches),
            "graphs_differ": row.ignores_ids is not None}  # fmt: skip


def agrees(result: dict, table: dict) -> bool | None:
    """The forward's taps against the table's: equal taps; or both fail (the loop's own error, the table's
    failure). None where the probe made no claim."""
    if "forward_taps" in result:
        taps = result["forward_taps"]
        if not taps:  # nothing captured: the drafter's fc gets none of its inputs
            return table["taps"] is None
        wanted = len(result["ids"]) if result.get("ids") else None
        # the fc gets one state per id it was trained on: fewer states than ids is the table's failure
        if wanted is not None and len(set(taps)) < wanted:
            return table["taps"] is None
        return table["taps"] == sorted(set(taps)) and table["failure"] is None
    if "forward_error" in result and not result["forward_error"].startswith(PROBE_FAILED):
        return table["taps"] is None
    if "set_eagle3_layers_to_capture" in (result.get("error") or ""):  # the runner's call fails: no capture
        return table["taps"] is None
    return None


def observe(python: str, release: str) -> dict:
    """One release's record: the cases the forward decided (each with the table's agreement; the replay in
    tests/test_model_code.py recomputes the table's side), a summary per family, and the architectures that made no
    claim with the first reason."""
    t0 = time.time()
    install(python, release)
    cases, meta = cases_for(release)
    data = run_probe(python, "sglang", cases)
    assert data["version"] == release, (data["version"], release)
    rows, fams, why, entries = [], {}, {}, set()
    for (arch, family, n, ids, shape, config), res in zip(meta, data["results"], strict=True):
        table = table_taps(release, family, arch, config, n)
        agree = agrees(res, table) if table.get("claims", True) else None
        f = fams.setdefault((family, arch), {"cases": 0, "claims": 0, "agree": 0, "graphs_differ": False})
        f["cases"] += 1
        if agree is None:
            said = res.get("forward_error") or res.get("error")
            if not said:
                said = ("the table claims nothing for this architecture" if not table.get("claims", True)
                        else f"no forward ran: {sorted(res)}")  # fmt: skip
            why.setdefault(f"{family} ({arch})", said[:300])
            continue
        entries.add(res.get("entry"))
        f["claims"] += 1
        f["agree"] += agree
        f["graphs_differ"] |= table["graphs_differ"]
        rows.append([arch, n, ids, shape, res.get("forward_taps"), res.get("forward_error") or res.get("error"),
                     agree])  # fmt: skip
    ran = [{"family": fam, "architecture": arch, "engine": {"stage": None}, **c}
           for (fam, arch), c in sorted(fams.items()) if c["claims"]]  # fmt: skip
    platforms = ["cpu"] + (["cuda"] if Version(release) >= GRAPHS_AS_EAGER else [])
    return {
        "engine": f"sglang=={release}", "platform": "cpu", "level": "model-code", "covers_platforms": platforms,
        "what": "the release's own capture request and decoder forward loop, executed with stand-in layers",
        "entry": sorted(e for e in entries if e), "families": ran,
        "not_run": {k: v for k, v in sorted(why.items()) if k.split(" ")[0] not in {f["family"] for f in ran}
                    or k.split("(")[1].rstrip(")") not in {f["architecture"] for f in ran}},
        "columns": ["arch", "num_layers", "ids", "config_key", "forward_taps", "error", "agree"],
        "cases": rows,
        "provenance": {"probe": "tests/engines/capture_probe.py", "sglang": data["version"],
                       "python": sys.version.split()[0], "seconds": round(time.time() - t0, 1)},
    }  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--python", required=True, help="the engine venv's python (its sglang is replaced)")
    ap.add_argument("--release", action="append", default=[])
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--force", action="store_true")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for v in args.release or releases():
        path = args.out / f"sglang-{v}-model-code.json"
        if path.exists() and not args.force:
            continue
        try:
            rec = observe(args.python, v)
        except Exception as exc:  # recorded in the log, not fatal: the next release goes on
            print(json.dumps({"release": v, "error": f"{type(exc).__name__}: {exc}"[-1500:]}), flush=True)
            continue
        path.write_text(json.dumps(rec, indent=None, separators=(",", ":")) + "\n")
        wrong = sum(1 for r in rec["cases"] if r[-1] is False)  # every case kept made a claim
        print(json.dumps({"release": v, "families": len(rec["families"]), "not_run": len(rec["not_run"]),
                          "cases": len(rec["cases"]), "disagree": wrong,
                          "seconds": rec["provenance"]["seconds"]}), flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
