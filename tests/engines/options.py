"""Each engine release's launch parser, executed: every option string, how many words it takes, and whether
argparse takes an unambiguous prefix of it (the releases' parsers all do: `allow_abbrev`), recorded per release in
src/eaglewire/engines/<engine>/data/options.json. `lint` parses a command as that parser does: `--speculative-algo`
is `--speculative-algorithm`, an ambiguous prefix or an unknown flag stops the launch at argparse.

    cd tests && python -m engines.options --engine sglang --python ../.venv-engines/model-code-sglang/bin/python
    cd tests && python -m engines.options --engine vllm --python ../.venv-engines/model-code-vllm/bin/python

Every release the argument scan read (rules/scanned.py), oldest first; resumable (a release in the file is kept
unless named with --release and --force). Each release's wheel is installed without dependencies over the venv
(model_code.install) and its own launch function runs until it parses (options_probe.py)."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import tempfile
import time
from pathlib import Path

from packaging.version import Version

from eaglewire.rules import scanned
from engines.model_code import install

ROOT = Path(__file__).resolve().parents[2]
PROBE = Path(__file__).with_name("options_probe.py")


def out_path(engine: str) -> Path:
    return ROOT / f"src/eaglewire/engines/{engine}/data/options.json"


# what a vLLM release's `serve` entry point imports before it parses (its API server's dependencies), beyond
# requirements/vllm-model-code.txt: a module missing is installed (no dependencies) and the parse run again
MISSING = re.compile(r"ModuleNotFoundError: No module named '([A-Za-z0-9_]+)")
DISTRIBUTIONS = {"lmformatenforcer": "lm-format-enforcer"}


def observe(python: str, engine: str, release: str) -> dict:
    """One release's parser: {"version", "parser", "allow_abbrev", "python", "options", "seconds"}."""
    t0 = time.time()
    install(python, engine, release)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "options.json"
        for _ in range(8):
            done = subprocess.run([python, str(PROBE), engine, str(out)], capture_output=True, text=True,
                                  timeout=900)  # fmt: skip
            missing = MISSING.search(done.stderr)
            if out.is_file() or not missing:
                break
            name = DISTRIBUTIONS.get(missing.group(1), missing.group(1).replace("_", "-"))
            print(json.dumps({"release": release, "installs": name}), flush=True)
            subprocess.run([python, "-m", "pip", "install", "--quiet", "--no-deps", name], check=True,
                           capture_output=True, timeout=600)  # fmt: skip
        if not out.is_file():
            raise RuntimeError(f"{engine} {release}: {done.stderr.strip().splitlines()[-3:]}")
        found = json.loads(out.read_text())
    assert Version(found["version"]) == Version(release), (found["version"], release)
    return found | {"seconds": round(time.time() - t0, 1)}


def pack(engine: str, per_release: dict[str, dict]) -> dict:
    """The file: releases oldest first, each option's kind as spans of consecutive releases that define it."""
    releases = sorted(per_release, key=Version)
    options: dict[str, list[list[str]]] = {}
    for i, release in enumerate(releases):
        for flag, kind in per_release[release]["options"].items():
            spans = options.setdefault(flag, [])
            previous = releases[i - 1] if i else None
            if spans and spans[-1][0] == kind and spans[-1][2] == previous:
                spans[-1][2] = release
            else:
                spans.append([kind, release, release])
    return {
        "engine": engine,
        "source": "tests/engines/options.py (each release's own launch parser, executed: options_probe.py)",
        "releases": {r: {k: per_release[r][k] for k in ("parser", "allow_abbrev", "python", "seconds")}
                     for r in releases},
        "options": dict(sorted(options.items())),
    }  # fmt: skip


def unpack(data: dict) -> dict[str, dict]:
    """Inverse of `pack`: release -> {..., "options": {flag: kind}}."""
    releases = list(data["releases"])
    out = {r: dict(data["releases"][r], options={}) for r in releases}
    for flag, spans in data["options"].items():
        for kind, first, last in spans:
            for r in releases[releases.index(first) : releases.index(last) + 1]:
                out[r]["options"][flag] = kind
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--engine", choices=("sglang", "vllm"), required=True)
    ap.add_argument(
        "--python", required=True, help="the engine venv's python (its engine package is replaced)"
    )
    ap.add_argument("--release", action="append", default=[])
    ap.add_argument("--force", action="store_true")
    args = ap.parse_args()
    path = out_path(args.engine)
    have = unpack(json.loads(path.read_text())) if path.exists() else {}
    for release in args.release or scanned.releases(args.engine):
        if release in have and not args.force:
            continue
        try:
            have[release] = observe(args.python, args.engine, release)
        except Exception as exc:  # logged, not fatal: the next release goes on
            print(
                json.dumps({"release": release, "error": f"{type(exc).__name__}: {exc}"[-800:]}), flush=True
            )
            continue
        path.write_text(json.dumps(pack(args.engine, have), indent=1) + "\n")
        print(json.dumps({"release": release, "options": len(have[release]["options"]),
                          "allow_abbrev": have[release]["allow_abbrev"],
                          "seconds": have[release]["seconds"]}), flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
