"""The `eaglewire` command: parse arguments, call the library, render. Exit 0 = fine, 1 = problem found,
2 = bad input (one line on stderr naming the file, key or flag)."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from eaglewire import report
from eaglewire.errors import EXIT_BAD_INPUT, EXIT_OK, EXIT_PROBLEM, InputError
from eaglewire.taps import Wiring

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="EAGLE-3 drafters, wired right: check which target hidden states (taps) each engine feeds a drafter, "
    "lint launch flags, test drafters standalone, train, convert and benchmark them.",
    pretty_exceptions_enable=False,
)

JSON = typer.Option(False, "--json", help="Print the result as JSON instead of tables.")


def _exit(problem: bool) -> None:
    raise typer.Exit(EXIT_PROBLEM if problem else EXIT_OK)


def _wiring(text: str | None) -> Wiring | None:
    return Wiring.parse(text) if text else None


@app.command()
def inspect(
    drafter: Path = typer.Argument(..., help="Drafter folder (EAGLE/SGLang, speculators or modelopt format)."),
    target: Path | None = typer.Option(None, "--target", help="Target config.json or folder: show the taps each engine feeds."),
    json_out: bool = JSON,
) -> None:
    """Show a drafter's format, shapes, vocab-map health and declared ids; with --target, the served taps."""
    from eaglewire.inspection import inspect_drafter

    ins = inspect_drafter(drafter, target)
    if json_out:
        report.print_json(ins.to_dict())
    else:
        report.render_inspection(ins, report.console())
    _exit(ins.vocab is not None and not ins.vocab.ok)


@app.command()
def check(
    drafter: Path = typer.Argument(..., help="Drafter folder."),
    target: Path | None = typer.Option(None, "--target", help="Target config.json or folder (optional if the drafter has provenance)."),
    engine: list[str] = typer.Option(None, "--engine", help="Engine and version, e.g. sglang==0.5.23 or vllm==0.33.0 (repeatable; default: newest of both)."),
    trained_on: str | None = typer.Option(None, "--trained-on", help="Taps the drafter was trained on, e.g. h0,h3,h31."),
    trained_with: str | None = typer.Option(None, "--trained-with", help="Trainer whose convention the checkpoint ids follow: speculators, specforge, modelopt or eagle."),
    fix_into: Path | None = typer.Option(None, "--fix-into", help="Write a copy of the drafter with the fixed config.json into this new folder."),
    json_out: bool = JSON,
) -> None:
    """Verdict: does each engine feed the taps the drafter was trained on? Prints the exact fix."""
    from eaglewire.check import check as run_check
    from eaglewire.check import write_fixed
    from eaglewire.formats import read_drafter

    if trained_on and trained_with:
        raise InputError("--trained-on and --trained-with are alternatives: give one")
    ckpt = read_drafter(drafter)
    rep = run_check(ckpt, target, engine or ["sglang", "vllm"], _wiring(trained_on), trained_with)
    if fix_into is not None:
        write_fixed(ckpt, rep, fix_into)
    if json_out:
        data = rep.to_dict()
        if fix_into is not None:
            data["fixed_copy"] = str(fix_into)
        report.print_json(data)
    else:
        out = report.console()
        report.render_check(rep, out)
        if fix_into is not None:
            out.print(f"wrote a fixed copy to {fix_into}")
    _exit(rep.has_problem)


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def lint(
    command: list[str] = typer.Argument(None, help="The launch command, after --."),
    engine: str | None = typer.Option(None, "--engine", help="Force the engine (sglang or vllm), optionally with ==VERSION."),
    target_arch: str | None = typer.Option(None, "--target-arch", help="Target architecture when --model-path is not a local folder."),
    json_out: bool = JSON,
) -> None:
    """Apply SGLang's / vLLM's own adjustment rules to a launch command; report every silent override."""
    from eaglewire import flags

    if not command:
        raise InputError("give the launch command after --, e.g. eaglewire lint -- python -m sglang.launch_server ...")
    name, version = (engine.split("==", 1) + [None])[:2] if engine else (None, None)
    rep = flags.lint(list(command), engine=name, engine_version=version, target_arch=target_arch)
    if json_out:
        report.print_json(rep.to_dict())
    else:
        report.render_lint(rep, report.console())
    _exit(rep.has_problem)


@app.command()
def convert(
    src: Path = typer.Argument(..., help="Source drafter folder."),
    dst: Path = typer.Argument(..., help="New destination folder."),
    to: str = typer.Option(..., "--to", help="Destination format: eagle, speculators or modelopt."),
    target: Path | None = typer.Option(None, "--target", help="Target config.json or folder (optional with provenance)."),
    trained_on: str | None = typer.Option(None, "--trained-on", help="Taps the source was trained on, if its ids do not say."),
    json_out: bool = JSON,
) -> None:
    """Convert between formats, rewriting the id list so the drafter is fed the same taps."""
    from eaglewire.convert import convert as run_convert

    res = run_convert(src, dst, to, target, _wiring(trained_on))
    if json_out:
        report.print_json({**res.__dict__, "taps": str(res.taps)})
    else:
        report.render_convert(res, report.console())


def main(argv: list[str] | None = None) -> int:
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
    except Exception as e:  # click usage errors and the like
        import click

        if isinstance(e, click.exceptions.ClickException):
            e.show()
            return EXIT_BAD_INPUT
        if isinstance(e, click.exceptions.Abort):
            return 130
        raise
    return rc if isinstance(rc, int) else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
