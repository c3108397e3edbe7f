"""The `eaglewire` command: parse arguments, call one library function, render. The static commands (configs in,
verdicts out) are here; the model-running ones in model_cmds.py, the benchmarks in bench_cmds.py. Exit codes of
every command:
0 = ok, 1 = a problem found, 2 = bad input (one line on stderr naming the file, key or flag), 3 = unverified (the
evidence does not decide; the report names what settles it)."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from eaglewire.cli import bench_cmds, model_cmds, render, render_matrix, render_static
from eaglewire.cli.options import (
    DRAFTER,
    EXIT_HELP,
    JSON,
    PLATFORM,
    RUNNER,
    STRICT,
    TARGET_CONFIG,
    exit_with,
    inspection_verdict,
    wiring,
)
from eaglewire.engines.table import default_spec
from eaglewire.errors import EXIT_BAD_INPUT, EXIT_OK, InputError

# lint and probe take a command after --, flags and all
PASS_THROUGH = {"allow_extra_args": True, "ignore_unknown_options": True}

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="EAGLE-3 drafters, wired right: check which target hidden states (taps) each engine feeds a drafter, "
    "lint launch flags, test drafters standalone, train, convert and benchmark them. " + EXIT_HELP,
    pretty_exceptions_enable=False,
)


@app.command(epilog=EXIT_HELP)
def inspect(
    drafter: Path = DRAFTER,
    target: Path | None = typer.Option(
        None, "--target", help="Target config.json or folder: show the taps each engine feeds."
    ),
    json_out: bool = JSON,
) -> None:
    """Show a drafter's format, shapes, vocab-map health and declared ids; with --target, the served taps."""
    from eaglewire.formats.inspection import inspect_drafter

    ins = inspect_drafter(drafter, target)
    render.show(ins, json_out, render_static.render_inspection)
    exit_with(inspection_verdict(ins))  # the drafter part is printed first; a bad --target exits 2


@app.command(epilog=EXIT_HELP)
def check(
    drafter: Path = DRAFTER,
    target: Path | None = TARGET_CONFIG,
    engine: list[str] = typer.Option(
        None,
        "--engine",
        help=f"Engine and version, e.g. {default_spec('sglang')} or {default_spec('vllm')} (repeatable; default: "
        "newest of both).",
    ),
    trained_on: str | None = typer.Option(
        None, "--trained-on", help="Taps the drafter was trained on, e.g. h0,h3,h31."
    ),
    trained_with: str | None = typer.Option(
        None,
        "--trained-with",
        help="Trainer whose convention the checkpoint ids follow: speculators, specforge, modelopt or eagle.",
    ),
    fix_into: Path | None = typer.Option(
        None,
        "--fix-into",
        help="Write a copy of the drafter with the fixed config.json into this new folder.",
    ),
    platform: str | None = PLATFORM,
    runner: str | None = RUNNER,
    strict: bool = STRICT,
    json_out: bool = JSON,
) -> None:
    """Verdict: does each engine feed the taps the drafter was trained on? Prints the exact fix.

    The verdict is worked out under every candidate for what is not known (trainer and version, vLLM runner and
    platform): ok, mismatch or fails when they agree, with an 'assumed:' line; unverified when they disagree,
    naming what settles it."""
    from eaglewire.jobs.check import check_job

    rep = check_job(drafter, target, engine or ["sglang", "vllm"], wiring(trained_on), trained_with, fix_into,
                    platform=platform, runner=runner, strict=strict)  # fmt: skip
    render.show(rep, json_out, render_static.render_check)
    exit_with(rep.verdict)


@app.command(context_settings=PASS_THROUGH, epilog=EXIT_HELP)
def lint(
    command: list[str] = typer.Argument(None, help="The launch command, after --."),
    engine: str | None = typer.Option(
        None, "--engine", help="Force the engine (sglang or vllm), optionally with ==VERSION."
    ),
    target_arch: str | None = typer.Option(
        None, "--target-arch", help="Target architecture when --model-path is not a local folder."
    ),
    gpu: str = typer.Option(
        "local",
        "--gpu",
        help="GPU the server runs on: h100, h200, b200, gb200, b300, a100, unknown, or local (default: the local "
        "GPU if any, else unknown, which lists the verdicts that depend on it).",
    ),
    engine_code: bool = typer.Option(
        False, "--engine-code", help="Also run the installed engine's own argument resolution and compare."
    ),
    engine_python: str | None = typer.Option(
        None,
        "--engine-python",
        help="Python of the environment the engine is installed in (default: this one).",
    ),
    json_out: bool = JSON,
) -> None:
    """Apply SGLang's / vLLM's own adjustment rules to a launch command; report every silent override."""
    from eaglewire.jobs.lint import lint_job, lint_verdict

    rep = lint_job(command, engine, target_arch=target_arch, gpu=gpu, engine_code=engine_code,
                   engine_python=engine_python)  # fmt: skip
    render.show(rep, json_out, render_static.render_lint)
    exit_with(lint_verdict(rep))


@app.command(epilog=EXIT_HELP)
def convert(
    src: Path = typer.Argument(..., help="Source drafter folder."),
    dst: Path = typer.Argument(..., help="New destination folder."),
    to: str = typer.Option(..., "--to", help="Destination format: eagle, speculators or modelopt."),
    target: Path | None = TARGET_CONFIG,
    trained_on: str | None = typer.Option(
        None, "--trained-on", help="Taps the source was trained on, if its ids do not say."
    ),
    json_out: bool = JSON,
) -> None:
    """Convert between formats, rewriting the id list so the drafter is fed the same taps."""
    from eaglewire.jobs.check import convert_job

    res = convert_job(src, dst, to, target, wiring(trained_on))
    render.show(res, json_out, render_static.render_convert)


@app.command("coverage", epilog=EXIT_HELP)
def coverage_cmd(json_out: bool = JSON) -> None:
    """The evidence per engine x release x target family x platform: a running engine, the release's model code,
    read at source in that release, or none; and the targets outside eaglewire's table whose capture a release's
    model code ran (JSON `generic`, each with its outcome: holds, as listed families (`fits` names their rows), as
    listed families inside the loop, differs at the edges, differs, or captures nothing). docs/coverage.md is built
    from the same data."""
    from eaglewire.jobs.coverage import coverage

    render.show(coverage(), json_out, render_matrix.render_coverage)


@app.command("matrix", epilog=EXIT_HELP)
def matrix_cmd(
    drafters: list[Path] = typer.Argument(..., help="Drafter folders (one column each)."),
    target: Path | None = TARGET_CONFIG,
    engine: list[str] = typer.Option(
        None, "--engine", help="Engine name, every release of it (repeatable; default: sglang and vllm)."
    ),
    platform: str | None = PLATFORM,
    all_releases: bool = typer.Option(
        False, "--all-releases", help="Every EAGLE-3 release on the index, not only those read at source."
    ),
    html: Path | None = typer.Option(
        None, "--html", help="Also write the grid as one self-contained HTML page."
    ),
    json_out: bool = JSON,
) -> None:
    """Before an upgrade: each drafter at every release of each engine, with the taps served, the verdict, the
    evidence level and the fix. Exits 0 once the matrix is made (its cells carry the verdicts)."""
    from eaglewire.jobs.matrix import matrix

    m = matrix(drafters, target, engine, platform, all_releases)
    if html is not None:
        render.say(f"matrix page: {render_matrix.write_matrix_html(m, html)}")
    render.show(m, json_out, render_matrix.render_matrix)


app.command(epilog=EXIT_HELP)(model_cmds.capture)
app.command(epilog=EXIT_HELP)(model_cmds.train)
app.command("test", epilog=EXIT_HELP)(model_cmds.test_cmd)
app.command(epilog=EXIT_HELP)(model_cmds.doctor)
app.command(context_settings=PASS_THROUGH, epilog=EXIT_HELP)(model_cmds.probe)
app.command(epilog=EXIT_HELP)(model_cmds.generate)
app.command(epilog=EXIT_HELP)(bench_cmds.bench)
app.command(epilog=EXIT_HELP)(bench_cmds.advise)
app.command("bench-all", epilog=EXIT_HELP)(bench_cmds.bench_all)
app.add_typer(bench_cmds.zoo_app, name="zoo")


def _click_exceptions() -> list:
    """click's exception modules: the installed click's, and the copy newer typer releases vendor as typer._click."""
    import importlib

    found = []
    for name in ("click.exceptions", "typer._click.exceptions"):
        try:
            found.append(importlib.import_module(name))
        except ImportError:
            pass
    return found


def main(argv: list[str] | None = None) -> int:
    """Run one command (`argv`, or the process's own arguments when None); its exit code. A Ctrl-C anywhere in it
    (the command, its error handling) is exit 130. As the process's own command, once the code is known a further
    Ctrl-C is ignored: the work is done and every engine the command started is stopped, and Python's shutdown,
    which restores the default action for SIGINT, would otherwise end the process killed by the signal (exit -2 to
    its parent) instead of with its code."""
    try:
        rc = _run(argv)
    except KeyboardInterrupt:
        rc = 130
    if argv is None:
        _hold_interrupts()
    return rc


def _hold_interrupts() -> None:
    import signal
    import threading

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def _run(argv: list[str] | None) -> int:
    try:
        rc = app(args=argv, standalone_mode=False)
    except InputError as e:
        print(f"eaglewire: error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except typer.Exit as e:
        return e.exit_code
    except KeyboardInterrupt:
        print("eaglewire: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # click usage errors and the like (typer >= 0.20 raises its own vendored click's)
        kinds = _click_exceptions()
        if any(isinstance(e, k.ClickException) for k in kinds):
            e.show()
            return EXIT_BAD_INPUT
        # typer's vendored copy has no Abort (typer._click.exceptions): only the modules that define one
        if any(isinstance(e, k.Abort) for k in kinds if hasattr(k, "Abort")):
            return 130
        raise
    if rc == 130:  # typer turns a Ctrl-C into Exit(130) and returns its code silently
        print("eaglewire: interrupted", file=sys.stderr)
    return rc if isinstance(rc, int) else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
