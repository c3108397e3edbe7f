"""`make demo`: the Kimi-K2.5 case from configs alone, found, fixed and checked again.

Runs the real CLI commands a user would type (printed before each), on the bundled example: a 61-layer
Kimi-K2.5 target config, a drafter folder whose speculators training config says h0,h3,h31 while SGLang would
feed its default taps, and an SGLang 0.5.23 launch whose top-k 1 silently turns 16 draft tokens into 2.
"""

from __future__ import annotations

import shlex
import sys
import tempfile
from importlib import resources
from pathlib import Path

from rich.console import Console
from rich.rule import Rule

from eaglewire import cli, flags


def example_dir() -> Path:
    return Path(str(resources.files("eaglewire") / "examples" / "kimi-k25"))


def run(out: Console, argv: list[str]) -> int:
    out.print(Rule(style="dim"))
    out.print("[bold]$ eaglewire " + " ".join(shlex.quote(a) for a in argv) + "[/]")
    sys.stdout.flush()
    rc = cli.main(argv)
    out.print(f"[dim](exit code {rc})[/]")
    return rc


def main() -> int:
    out = Console(highlight=False)
    ex = example_dir()
    target, drafter = ex / "target", ex / "drafter"
    launch = (ex / "launch.txt").read_text().strip().format(target=target, drafter=drafter)
    out.print(
        "[bold]The Kimi-K2.5 case[/]: a drafter trained on [embedding, out(layer 2), out(layer 30)] served by "
        "SGLang 0.5.23 with --speculative-num-steps 1 --speculative-eagle-topk 1 --speculative-num-draft-tokens 16."
    )
    engine = "sglang==0.5.23"
    with tempfile.TemporaryDirectory(prefix="eaglewire-demo-") as tmp:
        fixed = Path(tmp) / "drafter-fixed"
        rc_check = run(
            out,
            ["check", str(drafter), "--target", str(target), "--engine", engine, "--fix-into", str(fixed)],
        )
        rc_lint = run(out, ["lint", "--engine", engine, "--", *shlex.split(launch)])
        report = flags.lint(shlex.split(launch), engine="sglang", engine_version="0.5.23")
        fixed_launch = report.fixed_argv or shlex.split(launch)
        out.print(Rule("after applying the printed fixes", style="bold"))
        rc_check2 = run(out, ["check", str(fixed), "--target", str(target), "--engine", engine])
        rc_lint2 = run(out, ["lint", "--engine", engine, "--", *fixed_launch])
    story = (rc_check, rc_lint, rc_check2, rc_lint2) == (1, 1, 0, 0)
    out.print(Rule(style="dim"))
    if story:
        out.print("[bold green]Both faults found (exit 1), both fixed (exit 0).[/]")
    else:
        out.print(f"[bold red]Unexpected exit codes {rc_check, rc_lint, rc_check2, rc_lint2}[/]")
    return 0 if story else 1


if __name__ == "__main__":
    sys.exit(main())
