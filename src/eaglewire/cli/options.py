"""The options every command shares (one spelling, one help text) and the few choices only the CLI makes: which
data a job runs on when none is given (the bundled zoo's held-out files for the zoo target) and the exit code."""

from __future__ import annotations

from pathlib import Path

import typer

from eaglewire.data import SampleLoader, file_samples
from eaglewire.engines.table import default_spec
from eaglewire.errors import EXIT_CODES, InputError
from eaglewire.taps import Wiring

JSON = typer.Option(
    False, "--json", help="Print the result as JSON (strict RFC 8259: no NaN) instead of tables."
)
TARGET_DIR = typer.Option(..., "--target", help="Target model folder (transformers weights + tokenizer).")
TARGET_CONFIG = typer.Option(
    None, "--target", help="Target config.json or folder (optional when the drafter has provenance)."
)
DRAFTER = typer.Argument(..., help="Drafter folder (EAGLE/SGLang, speculators or modelopt format).")
DRAFTER_OPT = typer.Option(..., "--drafter", help="Drafter folder.")
# The default release is the newest one read in the engine's ledger, never a literal here
ENGINE = typer.Option(default_spec("sglang"), "--engine", help="Engine and version that will serve it.")
SERVED_BY = typer.Option(
    None, "--engine", help=f"Feed the taps this engine would feed, e.g. {default_spec('sglang')}."
)
TAPS = typer.Option(None, "--taps", help="Feed these taps instead of the trained ones, e.g. h0,h3,h31.")
PLATFORM = typer.Option(
    None,
    "--platform",
    help="Where the engine runs: cuda or cpu. vLLM on CPU runs its V1 model runner (MRV2 from 0.34.0, which has "
    "no V1); on CUDA the version's default runner. SGLang before 0.5.11: CUDA graphs feed the default taps, a CPU "
    "does not. Not given: CUDA, said as an assumption where it changes the verdict.",
)
RUNNER = typer.Option(
    None,
    "--runner",
    help="vLLM model runner: v1 or mrv2, or v0 for the old engine before 0.10.0 (settles the runner whatever the "
    "platform; VLLM_USE_V2_MODEL_RUNNER=0 is v1, VLLM_USE_V1=0 is v0).",
)
STRICT = typer.Option(
    False, "--strict", help="Count every assumption as unverified (exit 3) instead of deciding under it."
)


def _device(value: str) -> str:
    """Refuse a device that is not here before any work starts (one line, exit 2)."""
    from eaglewire.devices import resolve_device

    resolve_device(value)
    return value


def _dtype(value: str) -> str:
    from eaglewire.devices import parse_dtype

    parse_dtype(value)
    return value


DEVICE = typer.Option(
    "cpu",
    "--device",
    callback=_device,
    help="Where the model runs: cpu, cuda (this rank's GPU under torchrun), cuda:N, or auto (a GPU if torch sees "
    "one; a target too big for one GPU is spread over all of them with accelerate).",
)
DTYPE = typer.Option(
    "auto",
    "--dtype",
    callback=_dtype,
    help="Target dtype: auto (as stored if bf16, else float32), float32, bfloat16 or float16.",
)
DTYPE_FP32 = typer.Option(
    "float32",
    "--dtype",
    callback=_dtype,
    help="What the model computes in: float32 (exact, the default), bfloat16, float16, or auto (as the target "
    "is stored if bf16, else float32).",
)
DUMP = typer.Option(
    None,
    "--dump",
    help="Hidden states already on disk: an `eaglewire capture` folder, speculators offline samples "
    "(hs_<i>.safetensors) or SpecForge offline data (*.ckpt). The target's layers are never loaded.",
)
DUMP_IDS = typer.Option(
    None,
    "--dump-ids",
    help="The layer ids the dump was written with, in its writer's numbering: speculators/vLLM ids incl. L "
    "(e.g. 2,4,5,8); SpecForge's --aux-hidden-states-layers (e.g. 1,3,4).",
)
DUMP_CONFIG = typer.Option(
    None,
    "--dump-config",
    help="speculators' training config run.yaml (its target_layer_ids give the dump's ids).",
)
DATA = typer.Option(
    None,
    "--data",
    help="Text file, folder or JSONL to take prompts from (default for the zoo target: held-out stdlib).",
)


def wiring(text: str | None) -> Wiring | None:
    return Wiring.parse(text) if text else None


def one_of(flag: str, value: str | None, allowed: tuple[str, ...]) -> str | None:
    """`value` when it is None or one of `allowed`; else bad input naming the flag."""
    if value is not None and value not in allowed:
        raise InputError(f"{flag} {value!r}: use {', '.join(allowed[:-1])} or {allowed[-1]}")
    return value


def one_dump(dump: Path | None, **aliases: Path | None) -> Path | None:
    """--dump, or the one older flag naming the same thing (--captured, --speculators-samples)."""
    given = {"--dump": dump} | {"--" + k.replace("_", "-"): v for k, v in aliases.items()}
    named = [(k, v) for k, v in given.items() if v is not None]
    if len(named) > 1:
        raise InputError(f"{named[0][0]} and {named[1][0]} both name the data: give one")
    return named[0][1] if named else None


def samples_for(target: Path, data: Path | None) -> SampleLoader | None:
    """The data a job runs on: `--data`, or for the bundled zoo target its held-out files (None: the job asks)."""
    if data is not None:
        return file_samples(data)
    from eaglewire import zoo
    from eaglewire.targets import read_target

    return zoo.held_out_samples if zoo.is_zoo_target(read_target(target)) else None


def probe_samples(
    target: Path | None, data: Path | None, launch_words: list[str] | None, engine: str | None
) -> SampleLoader | None:
    """The prompts `probe` sends: as `samples_for` for --target, or (with --launch) for the target the serve
    command names when it is local; else --data, or None (the job builds token-id prompts)."""
    if target is None and launch_words:
        from eaglewire.jobs.probe import launch_paths

        target = launch_paths(launch_words, engine)[1]
    if target is not None:
        return samples_for(target, data)
    return file_samples(data) if data else None


EXIT_HELP = (
    "Exit codes: 0 ok; 1 a problem was found (mismatch, fails, bad flags, broken weights); 2 bad input (one line on "
    "stderr naming the file, key or flag); 3 unverified (the evidence does not decide: the report names what "
    "settles it)."
)


def exit_with(verdict: str) -> None:
    """Exit with the verdict's code: "ok" 0, "problem" 1, "unverified" 3 (CI gates on them)."""
    raise typer.Exit(EXIT_CODES[verdict])


def inspection_verdict(ins) -> str:
    """`inspect`'s verdict: "problem" when the vocab map is broken. A bad --target is bad input, raised after the
    drafter part is printed."""
    if ins.target_error:
        raise InputError(ins.target_error)
    return "problem" if ins.vocab is not None and not ins.vocab.ok else "ok"
