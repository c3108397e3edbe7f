"""`make demo`: the Kimi-K2.5 case, reproduced end to end on the bundled model.

1. From configs alone (the bundled 61-layer Kimi-K2.5 example): `check` finds the wiring fault, `lint` finds
   the draft-token override, both fixes are applied and both commands pass.
2. On the real zoo model: the `custom-taps` drafter (trained on embed, out(L0), out(L3), the Kimi pattern) is
   exported the way the Kimi drafter was (no id list in config.json, no wiring recorded; its training accuracy
   kept), and `doctor` runs it as SGLang's newest release read would serve it with the Kimi launch flags:
   accuracy collapses under the served default taps, the wiring search pinpoints the trained taps, the fix is
   printed, and the accuracy is restored once the fix is applied.
"""

from __future__ import annotations

import json
import shlex
import shutil
import sys
import tempfile
from importlib import resources
from pathlib import Path

from rich.console import Console
from rich.rule import Rule

from eaglewire import zoo
from eaglewire.cli import app as cli
from eaglewire.engines.table import default_spec
from eaglewire.jobs.lint import lint
from eaglewire.rules.ledger import ledger

# The demo tells the Kimi-K2.5 story at SGLang's newest release read (its ledger): the default of every command,
# so the demo follows the ledger rather than naming a release.
ENGINE = default_spec("sglang")


def example_dir() -> Path:
    return Path(str(resources.files("eaglewire") / "examples" / "kimi-k25"))


def run(out: Console, argv: list[str]) -> int:
    out.print(Rule(style="dim"))
    out.print("[bold]$ eaglewire " + " ".join(shlex.quote(a) for a in argv) + "[/]")
    sys.stdout.flush()
    rc = cli.main(argv)
    out.print(f"[dim](exit code {rc})[/]")
    return rc


def export_like_kimi(src: Path, dst: Path) -> Path:
    """A copy of a drafter without its wiring: no id list, no recorded taps (training metrics kept)."""
    shutil.copytree(src, dst)
    cfg = json.loads((dst / "config.json").read_text())
    cfg.pop("eagle_aux_hidden_state_layer_ids", None)
    (cfg.get("eagle_config") or {}).pop("eagle_aux_hidden_state_layer_ids", None)
    prov = (cfg.get("eaglewire") or {}).get("provenance") or {}
    prov.pop("taps", None)
    (dst / "config.json").write_text(json.dumps(cfg, indent=2))
    return dst


def configs_only(out: Console, tmp: Path) -> bool:
    ex = example_dir()
    target, drafter = ex / "target", ex / "drafter"
    launch = shlex.split((ex / "launch.txt").read_text().strip().format(target=target, drafter=drafter))
    engine = ENGINE
    fixed = tmp / "kimi-drafter-fixed"
    rcs = [
        run(
            out,
            ["check", str(drafter), "--target", str(target), "--engine", engine, "--fix-into", str(fixed)],
        ),
        run(out, ["lint", "--engine", engine, "--", *launch]),
    ]
    report = lint(launch, engine="sglang", engine_version=ledger("sglang").newest)
    out.print(Rule("after applying the printed fixes", style="bold"))
    rcs += [
        run(out, ["check", str(fixed), "--target", str(target), "--engine", engine]),
        run(out, ["lint", "--engine", engine, "--", *(report.fixed_argv or launch)]),
    ]
    return rcs == [1, 1, 0, 0]


def on_the_zoo(out: Console, tmp: Path, report: Path) -> bool:
    target = zoo.target_dir()
    drafter = export_like_kimi(zoo.drafter_dir("custom-taps"), tmp / "custom-taps-exported")
    launch = [
        "python",
        "-m",
        "sglang.launch_server",
        "--model-path",
        str(target),
        "--speculative-algorithm",
        "EAGLE3",
        "--speculative-draft-model-path",
        str(drafter),
        "--speculative-num-steps",
        "1",
        "--speculative-eagle-topk",
        "1",
        "--speculative-num-draft-tokens",
        "16",
    ]
    rc = run(
        out,
        [
            "doctor",
            str(drafter),
            "--target",
            str(target),
            "--engine",
            ENGINE,
            "--report",
            str(report),
            "--",
            *launch,
        ],
    )
    return rc == 1


REPORT = Path("demo-report")  # in the current folder: it outlives the demo, for the reader to open


def main() -> int:
    out = Console(highlight=False)
    report = REPORT
    with tempfile.TemporaryDirectory(prefix="eaglewire-demo-") as t:
        tmp = Path(t)
        out.print(Rule("[bold]1. The Kimi-K2.5 case from configs alone[/]"))
        ok = configs_only(out, tmp)
        if zoo.is_built() and (zoo.drafter_dir("custom-taps") / "config.json").exists():
            out.print(
                Rule("[bold]2. The same fault on a real model: doctor on the zoo's custom-taps drafter[/]")
            )
            if report.exists():
                shutil.rmtree(report)
            ok = on_the_zoo(out, tmp, report) and ok
        else:
            out.print("[yellow]zoo drafters not built yet: run `make zoo` for part 2[/]")
    out.print(Rule(style="dim"))
    out.print(
        "[bold green]Demo complete: faults found and fixed.[/]"
        if ok
        else "[bold red]Unexpected exit codes above.[/]"
    )
    if (report / "index.html").exists():
        out.print(
            f"The doctor's report (plots and JSON) is in {report}/: open {report / 'index.html'} in a browser."
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
