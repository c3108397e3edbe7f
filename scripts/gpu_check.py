"""The GPU check (`scripts/gpu-check.sh`): every command that runs a model, on CUDA and on the CPU, compared.

On the zoo target (a real 8-layer Llama) and its default drafter, in fp32: capture, test (chain + teacher),
test on the capture with the wiring search, doctor on the capture, a short train from the capture (one process,
and two under torchrun when there are two GPUs), generate, bench (eaglewire's chain and tree against plain greedy; the assisted-generation baseline is left out). Each
runs once with `--device cuda` and once
with `--device cpu`; the check passes when the same taps come back (same tap set and ids, values within 1e-3),
every accuracy is within 0.01 per step, the search picks the same wiring, and greedy output is token-identical.

`--dry-run` runs the same steps with the CPU on both sides and smaller sizes: it proves the script itself works
(it is part of `make test`). Commands run in this process (one import of torch) except torchrun's.

Writes OUT/summary.json (OUT: --out, default gpu-check-results/, which git ignores) and prints one line per check; exit 0 = all passed, 1 = a check failed.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ACC_TOL, TAP_TOL = 0.01, 1e-3
# Ignored by git (.gitignore): a run never writes into the tracked tree.
DEFAULT_OUT = Path("gpu-check-results")


def run(argv: list[str], log: Path) -> dict:
    """One eaglewire command in this process; its --json output."""
    from eaglewire.cli.app import main

    out, err = io.StringIO(), io.StringIO()
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main([*map(str, argv), "--json"])
    seconds = time.perf_counter() - t0
    with log.open("a") as f:
        f.write(
            f"$ eaglewire {' '.join(map(str, argv))}  # rc {rc}, {seconds:.1f} s\n{err.getvalue()[-2000:]}\n"
        )
    if rc not in (0, 1):
        raise SystemExit(f"eaglewire {argv[0]} failed (rc {rc}): {err.getvalue().strip()[-500:]}")
    return json.loads(out.getvalue())


def torchrun(argv: list[str], log: Path, nproc: int) -> dict:
    exe = shutil.which("torchrun", path=os.path.dirname(sys.executable)) or "torchrun"
    cmd = [exe, "--nproc-per-node", str(nproc), "-m", "eaglewire.cli", *map(str, argv), "--json"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    with log.open("a") as f:
        f.write(f"$ {' '.join(cmd)}  # rc {r.returncode}\n{r.stderr[-2000:]}\n")
    if r.returncode != 0:
        raise SystemExit(f"torchrun train failed (rc {r.returncode}): {r.stderr.strip()[-500:]}")
    return json.loads(r.stdout)


def held_out_text(path: Path, chars: int) -> Path:
    from eaglewire.zoo import corpus

    _, held = corpus.split(corpus.collect())
    path.write_text("\n".join(corpus.read_text(f) for f in held[:6])[:chars])
    return path


# ---- comparisons -----------------------------------------------------------------------------------------------


def close(a: list[float], b: list[float], tol: float = ACC_TOL) -> tuple[bool, float]:
    gap = max((abs(x - y) for x, y in zip(a, b, strict=True)), default=0.0)
    return len(a) == len(b) and gap <= tol, gap


def same_capture(a: Path, b: Path) -> tuple[bool, str]:
    import torch

    from eaglewire.capture import CaptureReader

    ra, rb = CaptureReader(a), CaptureReader(b)
    if str(ra.taps) != str(rb.taps) or len(ra) != len(rb):
        return False, f"taps {ra.taps} vs {rb.taps}, {len(ra)} vs {len(rb)} samples"
    worst = 0.0
    for i in range(len(ra)):
        x, y = ra[i], rb[i]
        if not torch.equal(x.input_ids, y.input_ids):
            return False, f"sample {i}: different token ids"
        for t in x.hidden:
            scale = float(x.hidden[t].abs().max()) or 1.0
            worst = max(worst, float((x.hidden[t] - y.hidden[t]).abs().max()) / scale)
    return worst <= TAP_TOL, f"taps {ra.taps}, max relative difference {worst:.2e}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--dry-run", action="store_true", help="CPU on both sides, small sizes (proves the script)"
    )
    ap.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, help=f"output folder, emptied first (default {DEFAULT_OUT}/)"
    )
    args = ap.parse_args()
    import torch

    from eaglewire import zoo

    dry = args.dry_run
    if not dry and not torch.cuda.is_available():
        print("gpu-check: torch sees no CUDA device here; use --dry-run to check the script on the CPU")
        return 2
    if not zoo.is_built():
        print("gpu-check: the zoo is not built (make zoo)")
        return 2
    dev = "cpu" if dry else "cuda"
    gpus = 0 if dry else torch.cuda.device_count()
    sz = (
        {"chars": 4000, "len": 64, "samples": 2, "steps": 2, "train": 2, "new": 12, "prompts": 1}
        if dry
        else {"chars": 60000, "len": 256, "samples": 8, "steps": 4, "train": 20, "new": 64, "prompts": 4}
    )
    out = args.out
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    log = out / "commands.log"
    target, drafter = zoo.target_dir(), zoo.drafter_dir("default")
    data = held_out_text(out / "held-out.txt", sz["chars"])
    t0 = time.perf_counter()
    res: dict[str, dict] = {"cpu": {}, dev + ("-dry" if dry else ""): {}}
    sides = [("cpu", "cpu"), (dev, list(res)[1])]
    for device, side in sides:
        d, r = out / side, res[side]
        d.mkdir()
        r["capture"] = run(["capture", "--target", target, "--data", data, "--out", d / "cap", "--max-len", sz["len"],
                            "--fp32", "--device", device], log)  # fmt: skip
        common = ["--samples", sz["samples"], "--steps", sz["steps"], "--device", device]
        r["test"] = run(["test", drafter, "--target", target, "--prompt-len", 32, "--new-tokens", 2 * sz["new"],
                         "--tree", "5,4,8", *common], log)  # fmt: skip
        r["test_dump"] = run(
            ["test", drafter, "--target", target, "--dump", d / "cap", "--search", *common], log
        )
        r["doctor_dump"] = run(["doctor", drafter, "--target", target, "--dump", d / "cap", *common], log)
        train = ["train", "--target", target, "--dump", out / "cpu" / "cap", "--taps", "h2,h4,h5", "--steps",
                 sz["train"], "--batch-size", 2, "--ttt-steps", 3, "--draft-vocab", 1024, "--warmup", 1,
                 "--checkpoint-every", sz["train"], "--eval-every", sz["train"], "--val-fraction", 0.25]  # fmt: skip
        r["train"] = run([*train, "--out", d / "train", "--device", device], log)
        if gpus > 1 and device == "cuda":
            r["train_2proc"] = torchrun([*train, "--out", d / "train2", "--device", "cuda"], log, 2)
        r["generate"] = run(["generate", "--target", target, "--drafter", drafter, "--prompt", "def main(argv):",
                             "--max-new-tokens", sz["new"], "--dtype", "float32", "--device", device], log)  # fmt: skip
        r["bench"] = run(["bench", "--target", target, "--drafter", drafter, "--n-prompts", sz["prompts"],
                          "--max-new-tokens", sz["new"], "--setting", "3", "--setting", "5,2,6", "--dtype", "float32",
                          "--assistant", out / "no-assistant", "--out", d / "bench", "--device", device], log)  # fmt: skip
    a, b = res["cpu"], res[sides[1][1]]
    checks = []

    def check(name: str, ok: bool, detail: str) -> None:
        checks.append({"check": name, "ok": bool(ok), "detail": detail})

    check("capture: same taps", *same_capture(out / "cpu" / "cap", out / sides[1][1] / "cap"))
    for mode in ("chain", "teacher"):
        ok, gap = close(a["test"]["evaluations"][mode]["acc"], b["test"]["evaluations"][mode]["acc"])
        check(f"test ({mode}): acc per step", ok, f"max gap {gap:.4f} (tolerance {ACC_TOL})")
    ok, gap = close(
        a["test_dump"]["evaluations"]["teacher"]["acc"], b["test_dump"]["evaluations"]["teacher"]["acc"]
    )
    check("test --dump: acc per step", ok, f"max gap {gap:.4f}")
    sa, sb = a["test_dump"]["search"]["best"]["taps"], b["test_dump"]["search"]["best"]["taps"]
    check("search: same best wiring", sa == sb, f"{sa} vs {sb}")
    wa, wb = a["doctor_dump"]["weights"], b["doctor_dump"]["weights"]
    ok, gap = close(wa["acc"], wb["acc"])
    check(
        "doctor --dump: weights verdict",
        ok and wa["status"] == wb["status"],
        f"{wa['status']}, max gap {gap:.4f}",
    )
    ok, gap = close(a["train"]["held_out"]["acc"], b["train"]["held_out"]["acc"])
    check("train: held-out acc", ok, f"max gap {gap:.4f}")
    if "train_2proc" in b:
        ok, gap = close(b["train"]["held_out"]["acc"], b["train_2proc"]["held_out"]["acc"])
        check(
            "train under torchrun (2 GPUs) = 1 GPU",
            ok and b["train_2proc"]["world_size"] == 2,
            f"gap {gap:.4f}",
        )
    check("generate: greedy tokens identical (fp32)", a["generate"]["text"] == b["generate"]["text"],
          f"{a['generate']['new_tokens']} tokens, tau {a['generate']['tau']} vs {b['generate']['tau']}")  # fmt: skip
    ma = {m["method"]: m for m in a["bench"]["methods"]}
    mb = {m["method"]: m for m in b["bench"]["methods"]}
    lossless = lambda m: len(set(m["outputs_identical_to_plain_greedy"].split("/"))) == 1  # noqa: E731  ("n/n")
    same = all(lossless(m) for m in [*ma.values(), *mb.values()] if m["kind"] == "eaglewire")
    taus = [(ma[k]["tau_median"], mb[k]["tau_median"]) for k in ma if ma[k]["kind"] == "eaglewire"]
    near = all(
        x is not None and y is not None and abs(x - y) <= 0.05 for x, y in taus
    )  # drafter near-ties may flip
    check("bench: lossless on both, tau within 0.05", same and near, f"tau {taus}")
    seconds = time.perf_counter() - t0
    if not dry:
        check("under 8 minutes", seconds < 480, f"{seconds:.0f} s")
    summary = {
        "dry_run": dry, "device": dev, "gpus": gpus, "seconds": round(seconds, 1),
        "passed": all(c["ok"] for c in checks), "checks": checks,
        "gpu_name": torch.cuda.get_device_name(0) if gpus else None,
    }  # fmt: skip
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    (out / "results.json").write_text(json.dumps(res, indent=1))
    for c in checks:
        print(f"{'PASS' if c['ok'] else 'FAIL'}  {c['check']}: {c['detail']}")
    print(
        f"{'all passed' if summary['passed'] else 'FAILED'} in {seconds:.0f} s ({dev}{', dry run' if dry else ''})"
    )
    return 0 if summary["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
