"""The benchmark and zoo commands (`bench`, `advise`, `bench-all`, `zoo build`), registered by cli/app.py."""

from __future__ import annotations

from pathlib import Path

import typer

from eaglewire.cli import render
from eaglewire.cli.options import (
    DATA,
    DEVICE,
    DRAFTER,
    DRAFTER_OPT,
    DTYPE,
    EXIT_HELP,
    JSON,
    TARGET_DIR,
    samples_for,
)
from eaglewire.errors import InputError


def bench(
    target: Path = TARGET_DIR,
    drafter: Path = DRAFTER_OPT,
    prompts: Path | None = typer.Option(
        None, "--prompts", help="JSONL/text prompts (default for the zoo target: held-out stdlib code)."
    ),
    n_prompts: int = typer.Option(8, "--n-prompts"),
    prompt_len: int = typer.Option(96, "--prompt-len"),
    max_new_tokens: int = typer.Option(128, "--max-new-tokens"),
    assistant: Path | None = typer.Option(
        None,
        "--assistant",
        help="Small draft LM for transformers' assisted generation (default for the zoo: the bundled one).",
    ),
    setting: list[str] = typer.Option(
        None,
        "--setting",
        help="steps[,topk,draft_tokens] (repeatable); default 3 4 5 6 7 and trees 5,2,12 5,4,8.",
    ),
    out: Path = typer.Option(Path("bench-results"), "--out", help="Folder for decode.json and decode.png."),
    dtype: str = DTYPE,
    device: str = DEVICE,
    json_out: bool = JSON,
) -> None:
    """tokens/s and tau: plain greedy, eaglewire chain/tree, assisted generation, prompt lookup (interleaved runs)."""
    from eaglewire.bench.decode import bench_decoding
    from eaglewire.cli.plots import bench_plot

    with render.ProgressBar("bench", enabled=not json_out) as bar:
        rep = bench_decoding(
            target, drafter, samples_for(target, prompts), n_prompts=n_prompts, prompt_len=prompt_len,
            max_new_tokens=max_new_tokens, settings=setting, assistant=assistant or _zoo_assistant(target),
            dtype=dtype, progress=bar, device=device,
        )  # fmt: skip
    bench_plot(rep, out)
    render.show(rep, json_out, lambda r, c: render.render_bench(r, c, out))


def advise(
    drafter: Path = DRAFTER,
    target: Path = TARGET_DIR,
    data: Path | None = DATA,
    samples: int = typer.Option(8, "--samples"),
    max_steps: int = typer.Option(7, "--max-steps"),
    context: int = typer.Option(256, "--context", help="Cached tokens before each timed forward."),
    repeats: int = typer.Option(15, "--repeats", help="Timings per cost (the median is used)."),
    dtype: str = DTYPE,
    device: str = DEVICE,
    json_out: bool = JSON,
) -> None:
    """Predict tau and speed-up over (steps, top-k, draft tokens); recommend SGLang and vLLM launch settings."""
    from eaglewire.bench.advise import advise_drafter

    loader = samples_for(target, data)
    adv = advise_drafter(drafter, target, loader, samples, max_steps, dtype, context, repeats, device)
    render.show(adv, json_out, render.render_advice)


def bench_all(
    out: Path = typer.Option(Path("bench-results"), "--out", help="Folder for the JSON results and plots."),
    decode: bool = typer.Option(
        True, "--decode/--no-decode", help="Also run the decoding benchmark on the zoo."
    ),
) -> None:
    """Every benchmark (`make bench`): training/capture throughput, search cost, evaluation speed, decoding."""
    from eaglewire.bench.suite import run_all
    from eaglewire.cli.plots import bench_plot

    results = run_all(out, progress=render.say, decode=decode)
    if "decode" in results:
        bench_plot(results["decode"], out)
    render.render_bench_all(results, render.console(), out)


def _zoo_assistant(target: Path) -> Path | None:
    """The bundled assistant LM, when the target is the bundled one (the assisted-generation baseline)."""
    from eaglewire import zoo
    from eaglewire.targets import read_target

    return zoo.zoo_dir() / "assistant" if zoo.is_zoo_target(read_target(target)) else None


zoo_app = typer.Typer(
    help="The bundled zoo: a small real target, a tiny DeepSeek-V3, an assistant LM and drafters."
)


@zoo_app.command("build", epilog=EXIT_HELP)
def zoo_build(
    stage: list[str] = typer.Option(
        None,
        "--stage",
        help="target, deepseek, assistant, drafters (default: all, in order); cards re-measures the drafter cards.",
    ),
    work: Path = typer.Option(Path("runs/zoo-build"), "--work", help="Resumable work folder."),
    into: Path | None = typer.Option(
        None, "--into", help="Write the artifacts here instead of the package's zoo/ folder."
    ),
    drafter: list[str] = typer.Option(
        None, "--drafter", help="Only these drafters (default, custom-taps) in the drafters stage."
    ),
) -> None:
    """Rebuild the zoo from scratch with fixed seeds (about 2-3 hours on 2 CPU cores)."""
    from eaglewire import zoo
    from eaglewire.zoo.build import STAGES, build

    stages = tuple(stage) if stage else STAGES
    bad = [s for s in stages if s not in (*STAGES, "cards")]
    if bad:
        raise InputError(f"--stage {bad[0]!r}: use {', '.join(STAGES)} or cards")
    with render.ProgressBars("zoo") as bars:
        cards = build(
            into or zoo.zoo_dir(), work, stages, bars.new, drafters=tuple(drafter) if drafter else None
        )
    render.render_zoo_cards(cards, render.console())
