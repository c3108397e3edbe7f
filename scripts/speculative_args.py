"""Every launch argument that touches speculative decoding or the draft model, per SGLang and vLLM release, read
from the release's own wheel (never written by hand).

    python scripts/speculative_args.py                                 # every release the ledger marks read for taps
    python scripts/speculative_args.py --engine vllm --release 0.34.0  # add a release
    python scripts/speculative_args.py --sources /tmp/engine-src       # unzipped sources, kept for a rerun

For every release: `pip download ENGINE==V --no-deps` into a temporary folder, the package's Python files unzipped
(only the ones the scan reads), the wheel deleted; then `tools.arg_scan` reads the argument definitions
and the resolution code with `ast` (the engine is never imported) and the result is written, with the file:line of
every fact, to src/eaglewire/engines/<engine>/data/arguments.json (keyed by release). A release already in the file is
kept unless named with --release or --rescan. `engines/arguments.py` classifies every argument found; tests/
test_flags_arguments.py fails for an argument the table does not cover.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

from eaglewire.engines.sglang import taps as sglang_conventions  # noqa: E402
from eaglewire.engines.vllm import taps as vllm_conventions  # noqa: E402
from tools.arg_scan import scan  # noqa: E402

OUT = ROOT / "src/eaglewire/engines"
RELEASES = {"sglang": sglang_conventions.ALL, "vllm": vllm_conventions.READ}
# What the scan reads (prefixes inside the wheel): the Python source of the package.
KEEP = {
    "sglang": ("sglang/srt/",),
    "vllm": ("vllm/",),
}


def unpack(engine: str, version: str, dest: Path) -> None:
    """The release's wheel from the index, only the files the scan reads unzipped into `dest`."""
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", f"{engine}=={version}", "--no-deps", "-d", tmp, "-q"],
            check=True,
        )
        wheels = sorted(Path(tmp).glob("*.whl"))
        if not wheels:
            raise SystemExit(f"{engine} {version}: no wheel on the index")
        with zipfile.ZipFile(wheels[0]) as zf:
            for name in zf.namelist():
                if name.endswith(".py") and name.startswith(KEEP[engine]):
                    zf.extract(name, dest)


def dump(data: dict) -> str:
    """One argument per line: the file stays small to read and its diffs show what a release changed."""
    lines = ["{", f' "engine": {json.dumps(data["engine"])},', f' "source": {json.dumps(data["source"])},',
             ' "releases": {']  # fmt: skip
    releases = list(data["releases"].items())
    for i, (version, found) in enumerate(releases):
        lines.append(f"  {json.dumps(version)}: {{")
        lines.append('   "arguments": [')
        args = found["arguments"]
        lines += [f"    {json.dumps(a)}" + ("," if j < len(args) - 1 else "") for j, a in enumerate(args)]
        lines.append("   ],")
        lines.append('   "draft_settings": [')
        draft = found["draft_settings"]
        lines += [f"    {json.dumps(d)}" + ("," if j < len(draft) - 1 else "") for j, d in enumerate(draft)]
        lines.append("   ]")
        lines.append("  }" + ("," if i < len(releases) - 1 else ""))
    lines += [" }", "}", ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", choices=sorted(RELEASES), action="append")
    parser.add_argument("--release", action="append", help="scan this release (again); repeatable")
    parser.add_argument("--rescan", action="store_true", help="scan every release again")
    parser.add_argument(
        "--sources", type=Path, help="folder of unzipped releases (<engine>-<version>/), kept"
    )
    args = parser.parse_args()
    for engine in args.engine or sorted(RELEASES):
        path = OUT / engine / "data/arguments.json"
        data = json.loads(path.read_text()) if path.is_file() else {"releases": {}}
        data["engine"] = engine
        data["source"] = "scripts/speculative_args.py (tools.arg_scan over the wheel from PyPI)"
        wanted = list(args.release or RELEASES[engine])
        for version in wanted:
            if version in data["releases"] and not (args.rescan or args.release):
                continue
            if args.sources is not None:
                folder = args.sources / f"{engine}-{version}"
                if not folder.is_dir():
                    unpack(engine, version, folder)
                found = scan(engine, folder)
            else:
                folder = Path(tempfile.mkdtemp())
                try:
                    unpack(engine, version, folder)
                    found = scan(engine, folder)
                finally:
                    shutil.rmtree(folder, ignore_errors=True)
            data["releases"][version] = found
            print(f"{engine} {version}: {len(found['arguments'])} arguments", file=sys.stderr)
        from packaging.version import Version

        data["releases"] = dict(sorted(data["releases"].items(), key=lambda kv: Version(kv[0])))
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(dump(data))
        tmp.replace(path)


if __name__ == "__main__":
    main()
