"""Which target architectures each SGLang and vLLM release serves with EAGLE-3, read from the release's own wheel.

    python scripts/engine_registries.py                      # every release the ledger marks read for taps
    python scripts/engine_registries.py --engine vllm --release 0.34.0   # add a release
    python scripts/engine_registries.py --sources /tmp/engine-src         # keep the unzipped sources for a rerun

For every release: `pip download ENGINE==V --no-deps` into a temporary folder, the engine's Python files read out of
the wheel with zipfile, the wheel deleted; then the engine's own model registry and interface classes are read with
`ast` (the engine is never imported) by `tools.registry_scan`, and the result is written, with the
file:line of every fact, to src/eaglewire/engines/<engine>/data/registry.json (keyed by release). A release
already in that file is kept unless named with --release or --rescan.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

from tools import registry_scan  # noqa: E402

PACKAGE = {"sglang": "sglang", "vllm": "vllm"}


def wheel_sources(engine: str, version: str, cache: Path | None) -> tuple[str, dict[str, str]]:
    """The wheel's name and every .py file of the release's package (path inside the wheel -> text); from
    `cache` when kept there (its `.complete` file holds the wheel's name)."""
    if cache is not None:
        kept = cache / f"{engine}-{version}"
        if (kept / ".complete").is_file():
            files = {
                str(p.relative_to(kept)): p.read_text(encoding="utf-8", errors="replace")
                for p in kept.rglob("*.py")
            }
            return (kept / ".complete").read_text().strip(), files
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "pip", "download", f"{engine}=={version}", "--no-deps", "--no-cache-dir",
               "--only-binary=:all:", "-d", tmp, "-q"]  # fmt: skip
        proc = subprocess.run(cmd, capture_output=True, text=True)
        wheels = list(Path(tmp).glob("*.whl"))
        if not wheels:
            raise SystemExit(f"pip download {engine}=={version} gave no wheel: {proc.stderr.strip()[-400:]}")
        out: dict[str, str] = {}
        wheel = wheels[0].name
        with zipfile.ZipFile(wheels[0]) as zf:
            for info in zf.infolist():
                name = info.filename
                if name.startswith(PACKAGE[engine] + "/") and name.endswith(".py"):
                    out[name] = zf.read(info).decode("utf-8", errors="replace")
        for w in wheels:
            w.unlink()  # vLLM wheels are hundreds of MB: gone as soon as read
    if cache is not None:
        kept = cache / f"{engine}-{version}"
        for name, text in out.items():
            path = kept / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        (kept / ".complete").write_text(wheel)
    return wheel, out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--engine", choices=sorted(PACKAGE), action="append")
    ap.add_argument("--release", action="append", help="a release to (re)scan; default: every release read")
    ap.add_argument("--rescan", action="store_true", help="rescan releases already in the data file")
    ap.add_argument("--sources", type=Path, help="keep (and reuse) the unzipped sources here")
    ap.add_argument(
        "--fetch-only", action="store_true", help="only download and keep the sources (needs --sources)"
    )
    args = ap.parse_args(argv)
    for engine in args.engine or sorted(PACKAGE):
        releases = args.release or list(registry_scan.releases_read(engine))
        data = registry_scan.load_raw(engine)
        for version in releases:
            if version in data["releases"] and not (args.rescan or args.release) and not args.fetch_only:
                continue
            wheel, files = wheel_sources(engine, version, args.sources)
            if args.fetch_only:
                print(f"{engine} {version}: {len(files)} files", flush=True)
                continue
            data["releases"][version] = registry_scan.scan(engine, version, files, wheel)
            summary = data["releases"][version]
            print(f"{engine} {version}: {len(summary['eagle3'])} EAGLE-3 architectures", flush=True)
        if not args.fetch_only:
            registry_scan.write_raw(engine, data)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
