"""The command line: the only layer that prints. `app.py` parses and calls one library function per command,
`render.py` draws reports (rich, JSON), `plots.py` writes PNG/HTML, `demo.py` is `make demo`."""


def main(argv: list[str] | None = None) -> int:
    from eaglewire.cli.app import main as run

    return run(argv)
