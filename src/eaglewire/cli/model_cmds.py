"""The commands that run a model or talk to a live server (`capture`, `train`, `test`, `doctor`, `probe`,
`generate`), registered by cli/app.py."""

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
    DTYPE_FP32,
    DUMP,
    DUMP_CONFIG,
    DUMP_IDS,
    ENGINE,
    JSON,
    PLATFORM,
    RUNNER,
    SERVED_BY,
    STRICT,
    TAPS,
    TARGET_DIR,
    exit_with,
    one_dump,
    one_of,
    probe_samples,
    samples_for,
    wiring,
)
from eaglewire.errors import InputError


def capture(
    target: Path = TARGET_DIR,
    data: Path = typer.Option(
        ..., "--data", help='Text file, folder of text files, or JSONL ({"text"} or chat {"messages"}).'
    ),
    out: Path = typer.Option(..., "--out", help="Capture folder (resumable: complete shards are skipped)."),
    taps: str = typer.Option(
        "all", "--taps", help="Taps to store: all, or e.g. h0,h3,h31 (h_L is always stored)."
    ),
    max_len: int = typer.Option(512, "--max-len", help="Tokens per sample (longer texts are split)."),
    samples_per_shard: int = typer.Option(32, "--samples-per-shard"),
    fp32: bool = typer.Option(False, "--fp32", help="Store float32 instead of bfloat16."),
    trust_remote_code: bool = typer.Option(False, "--trust-remote-code"),
    device: str = DEVICE,
    dtype: str = DTYPE_FP32,
    json_out: bool = JSON,
) -> None:
    """Run the target once per sample and store every tap it needs (h_L pre-norm), as safetensors shards."""
    from eaglewire.capture import capture_job
    from eaglewire.data import file_samples

    with render.ProgressBar("capture", enabled=not json_out) as bar:
        res = capture_job(
            target, file_samples(data), out, taps, max_len, samples_per_shard, fp32, trust_remote_code, bar,
            device=device, dtype=dtype,
        )  # fmt: skip
    render.show(res, json_out, render.render_capture)


def train(
    target: Path = TARGET_DIR,
    out: Path = typer.Option(
        ..., "--out", help="Drafter folder (EAGLE/SGLang format + provenance); resumes from out/checkpoint."
    ),
    taps: str = typer.Option(..., "--taps", help="Training wiring, e.g. h2,h4,h5 or embed,out(L2),out(L30)."),
    data: Path | None = typer.Option(None, "--data", help="Training text/JSONL (the target runs online)."),
    captured: Path | None = typer.Option(
        None, "--captured", help="An `eaglewire capture` folder instead of --data (same as --dump)."
    ),
    dump: Path | None = DUMP,
    dump_ids: str | None = DUMP_IDS,
    dump_config: Path | None = DUMP_CONFIG,
    val_fraction: float = typer.Option(
        0.05, "--val-fraction", help="Share of samples held out for validation."
    ),
    draft_vocab: int | None = typer.Option(
        None, "--draft-vocab", help="Draft vocabulary size (default: the target's)."
    ),
    layers: int = typer.Option(1, "--layers", help="Drafter decoder layers."),
    ttt_steps: int = typer.Option(7, "--ttt-steps", help="Training-time-test unroll length."),
    step_decay: float = typer.Option(0.8, "--step-decay", help="Loss weight of step k is decay^k."),
    steps: int = typer.Option(1000, "--steps", help="Optimizer steps."),
    batch_size: int = typer.Option(8, "--batch-size", help="Samples per optimizer step (global)."),
    lr: float = typer.Option(1e-3, "--lr"),
    warmup: int = typer.Option(50, "--warmup"),
    grad_clip: float = typer.Option(0.5, "--grad-clip"),
    bf16: bool = typer.Option(False, "--bf16", help="bfloat16 autocast (fp32 master weights)."),
    max_len: int = typer.Option(512, "--max-len"),
    norm_before_residual: bool = typer.Option(False, "--norm-before-residual"),
    checkpoint_every: int = typer.Option(100, "--checkpoint-every"),
    eval_every: int = typer.Option(100, "--eval-every"),
    seed: int = typer.Option(0, "--seed"),
    export: str | None = typer.Option(
        None, "--export", help="Also write a copy in this format (speculators)."
    ),
    device: str = DEVICE,
    dtype: str = DTYPE_FP32,
    json_out: bool = JSON,
) -> None:
    """Train an EAGLE-3 drafter (training-time test); the checkpoint records its taps and target."""
    from eaglewire.data import file_samples
    from eaglewire.jobs.evaluate import parse_ids
    from eaglewire.jobs.train import TrainConfig, train_job
    from eaglewire.jobs.train_state import world

    cfg = TrainConfig(
        taps=str(wiring(taps)), draft_vocab_size=draft_vocab, num_layers=layers, ttt_steps=ttt_steps,
        step_decay=step_decay, steps=steps, batch_size=batch_size, lr=lr, warmup_steps=warmup,
        grad_clip=grad_clip, bf16=bf16, checkpoint_every=checkpoint_every, eval_every=eval_every, seed=seed,
        norm_before_residual=norm_before_residual,
    )  # fmt: skip
    loader = file_samples(data) if data is not None else None
    with render.ProgressBar("train", enabled=not json_out and world()[0] == 0) as bar:
        res = train_job(
            target, out, cfg, data=loader, dump=one_dump(dump, captured=captured), dump_ids=parse_ids(dump_ids),
            dump_config=dump_config, max_len=max_len, val_fraction=val_fraction, export=export, progress=bar,
            device=device, dtype=dtype,
        )  # fmt: skip
    if world()[0] == 0:  # under torchrun only rank 0 renders (the rank is known once the job has started)
        render.show(res, json_out, render.render_train)


def test_cmd(
    drafter: Path = DRAFTER,
    target: Path = TARGET_DIR,
    data: Path | None = DATA,
    dump: Path | None = DUMP,
    dump_ids: str | None = DUMP_IDS,
    dump_config: Path | None = DUMP_CONFIG,
    captured: Path | None = typer.Option(None, "--captured", help="Same as --dump (an eaglewire capture)."),
    speculators_samples: Path | None = typer.Option(
        None, "--speculators-samples", help="Same as --dump (speculators offline samples)."
    ),
    speculators_ids: str | None = typer.Option(None, "--speculators-ids", help="Same as --dump-ids."),
    taps: str | None = TAPS,
    engine: str | None = SERVED_BY,
    platform: str | None = PLATFORM,
    runner: str | None = RUNNER,
    steps: int = typer.Option(5, "--steps", help="Draft steps K."),
    samples: int = typer.Option(12, "--samples", help="Prompts (chain mode) or samples (teacher mode)."),
    prompt_len: int = typer.Option(64, "--prompt-len"),
    new_tokens: int = typer.Option(
        96, "--new-tokens", help="Greedy tokens generated by the target per prompt."
    ),
    tree: list[str] = typer.Option(
        None,
        "--tree",
        help="SGLang tree setting steps,topk,draft_tokens (repeatable; default 3,1,4 5,1,6 5,4,8: SGLang's auto choices).",
    ),
    teacher: bool = typer.Option(
        True,
        "--teacher/--no-teacher",
        help="Also report teacher-forced acc on the data (comparable with training logs).",
    ),
    run_search: bool = typer.Option(False, "--search", help="Also run the wiring search."),
    temperature: float = typer.Option(
        0.0, "--temperature", help="> 0: walk continuations sampled from the target (measured over --seeds)."
    ),
    top_p: float = typer.Option(1.0, "--top-p", help="With --temperature: nucleus sampling."),
    seeds: int = typer.Option(4, "--seeds", help="With --temperature: sampled continuations per prompt."),
    device: str = DEVICE,
    dtype: str = DTYPE_FP32,
    json_out: bool = JSON,
) -> None:
    """Standalone drafter test: per-step acceptance and predicted accept length against the real target.

    With --dump: teacher-forced on hidden states already on disk, without loading the target's layers."""
    from eaglewire.jobs.evaluate import (
        DEFAULT_TREES,
        StandaloneOptions,
        parse_ids,
        parse_sampling,
        parse_tree,
        standalone_test,
    )

    opts = StandaloneOptions(
        taps=taps, engine=engine, platform=platform, runner=runner, steps=steps, samples=samples,
        prompt_len=prompt_len, new_tokens=new_tokens,
        trees=tuple(parse_tree(t) for t in tree) if tree else DEFAULT_TREES, teacher=teacher, search=run_search,
        dump=one_dump(dump, captured=captured, speculators_samples=speculators_samples),
        dump_ids=parse_ids(dump_ids or speculators_ids), dump_config=dump_config, device=device, dtype=dtype,
        sampling=parse_sampling(temperature, top_p, seeds),
    )  # fmt: skip
    rep = standalone_test(drafter, target, opts, samples_for(target, data))
    render.show(rep, json_out, render.render_standalone)


def doctor(
    drafter: Path = DRAFTER,
    target: Path = typer.Option(
        ...,
        "--target",
        help="Target folder (config only: static check; with weights: also the standalone test).",
    ),
    engine: str = ENGINE,
    launch: list[str] = typer.Argument(
        None, help="Optional launch command after --, linted with the engine's rules."
    ),
    data: Path | None = DATA,
    samples: int = typer.Option(12, "--samples"),
    steps: int = typer.Option(5, "--steps"),
    search_mode: str = typer.Option(
        "auto", "--search", help="auto (when served taps test far below trained), always, never."
    ),
    report_dir: Path | None = typer.Option(
        None, "--report", help="Write PNGs, report.json and index.html here."
    ),
    dump: Path | None = DUMP,
    dump_ids: str | None = DUMP_IDS,
    dump_config: Path | None = DUMP_CONFIG,
    server: str | None = typer.Option(
        None,
        "--server",
        help="A live server running this drafter (URL): its measured acceptance joins the report.",
    ),
    platform: str | None = PLATFORM,
    runner: str | None = RUNNER,
    strict: bool = STRICT,
    device: str = DEVICE,
    dtype: str = DTYPE_FP32,
    json_out: bool = JSON,
) -> None:
    """Everything in one report: static wiring check, flags lint, standalone test, wiring search, the fix.

    With --dump (the drafter's training data): its score there says weights fine or broken, without loading the
    target's layers."""
    from eaglewire.cli.plots import doctor_report
    from eaglewire.jobs.doctor import DoctorOptions
    from eaglewire.jobs.doctor import doctor as run_doctor
    from eaglewire.jobs.evaluate import parse_ids

    one_of("--search", search_mode, ("auto", "always", "never"))
    opts = DoctorOptions(
        engine=engine, launch=list(launch) if launch else None,
        data=None if dump is not None else samples_for(target, data), samples=samples, steps=steps,
        search=search_mode, dump=dump, dump_ids=parse_ids(dump_ids), dump_config=dump_config, device=device,
        dtype=dtype, server=server, platform=platform, runner=runner, strict=strict,
    )  # fmt: skip
    rep = run_doctor(drafter, target, opts, progress=None if json_out else render.say)
    render.show_report(rep, json_out, render.render_doctor, report_dir, doctor_report)
    exit_with(rep.verdict)


def probe(
    args: list[str] = typer.Argument(
        None, help="The server URL (http://127.0.0.1:8000); with --launch, the serve command after --."
    ),
    launch: bool = typer.Option(
        False, "--launch", help="Start the engine from the serve command after --, probe it, stop it."
    ),
    drafter: Path | None = typer.Option(
        None, "--drafter", help="The drafter the server runs (for predictions)."
    ),
    target: Path | None = typer.Option(
        None,
        "--target",
        help="The target folder (weights and tokenizer): the predictions and token-id prompts.",
    ),
    dump: Path | None = DUMP,
    dump_ids: str | None = DUMP_IDS,
    data: Path | None = DATA,
    requests: int = typer.Option(
        8, "--requests", help="Prompts to send (one at a time; 0: read the counters only)."
    ),
    prompt_len: int = typer.Option(64, "--prompt-len", help="Prompt tokens per request."),
    new_tokens: int = typer.Option(
        96, "--new-tokens", help="Tokens generated per request (greedy, to the end)."
    ),
    time_limit: float = typer.Option(300.0, "--time-limit", help="Seconds the whole workload may take."),
    model: str | None = typer.Option(
        None, "--model", help="Served model name, when the server serves several."
    ),
    platform: str | None = typer.Option(
        None,
        "--platform",
        help="Where the server runs: cpu or cuda (vLLM's runner depends on it; default: read from the server, "
        "else CUDA assumed and said).",
    ),
    runner: str | None = RUNNER,
    startup_timeout: float = typer.Option(
        600.0, "--startup-timeout", help="--launch: seconds to wait for health."
    ),
    engine: str | None = typer.Option(
        None, "--engine", help="--launch with a wrapper script: the engine it starts (vllm or sglang)."
    ),
    report_dir: Path | None = typer.Option(
        None, "--report", help="Write the per-position plot, report.json and index.html here."
    ),
    device: str = DEVICE,
    json_out: bool = JSON,
) -> None:
    """A live server's own acceptance beside the prediction, and the cause: wiring, flags or the drafter."""
    from eaglewire.cli.plots import probe_report
    from eaglewire.cli.render_probe import render_probe
    from eaglewire.jobs.evaluate import parse_ids
    from eaglewire.jobs.probe import ProbeOptions

    words = list(args or [])
    one_of("--platform", platform, ("cpu", "cuda"))
    one_of("--runner", runner, ("v1", "mrv2"))
    if dump is not None and target is None:
        raise InputError("--dump needs --target (the target's config and head tensors)")
    opts = ProbeOptions(
        drafter=drafter, target=target, dump=dump,
        data=probe_samples(target, data, words if launch else None, engine), dump_ids=parse_ids(dump_ids),
        requests=requests, prompt_len=prompt_len, new_tokens=new_tokens, time_limit=time_limit, model=model,
        platform=platform, runner=runner, device=device,
    )  # fmt: skip
    rep = _probe(words, launch, opts, startup_timeout, engine, None if json_out else render.say)
    render.show_report(rep, json_out, render_probe, report_dir, probe_report)
    raise typer.Exit(rep.exit_code)


def generate(
    target: Path = TARGET_DIR,
    drafter: Path = DRAFTER_OPT,
    prompt: str = typer.Option(..., "--prompt", help="Prompt text."),
    steps: int = typer.Option(4, "--steps", help="Draft depth (SGLang --speculative-num-steps)."),
    topk: int = typer.Option(1, "--topk", help="Branching (SGLang --speculative-eagle-topk); 1 = chain."),
    draft_tokens: int | None = typer.Option(
        None, "--draft-tokens", help="Verified tokens incl. the root (SGLang --speculative-num-draft-tokens)."
    ),
    temperature: float = typer.Option(
        0.0, "--temperature", help="0 = greedy (output identical to the target's greedy decoding)."
    ),
    top_p: float = typer.Option(1.0, "--top-p"),
    top_k: int = typer.Option(0, "--top-k"),
    max_new_tokens: int = typer.Option(128, "--max-new-tokens"),
    seed: int | None = typer.Option(None, "--seed"),
    taps: str | None = TAPS,
    dtype: str = DTYPE,
    device: str = DEVICE,
    json_out: bool = JSON,
) -> None:
    """Speculative generation with the reference decoder: streams the text, then one line of stats."""
    from eaglewire.jobs.decode import DecodeConfig, generate_text
    from eaglewire.jobs.pair import load_pair

    cfg = DecodeConfig(
        steps=steps, topk=topk, draft_tokens=draft_tokens, temperature=temperature, top_p=top_p, top_k=top_k,
        max_new_tokens=max_new_tokens, seed=seed,
    )  # fmt: skip
    pair = load_pair(target, drafter, taps, dtype=dtype, device=device)
    gen = generate_text(pair, prompt, cfg, None if json_out else render.stream)
    render.show(gen, json_out, render.render_generation)


def _probe(words: list[str], launch: bool, opts, startup_timeout: float, engine: str | None, say):
    """--launch: start the serve command after --, probe it, stop it; else probe the one server URL given."""
    from eaglewire.jobs.probe import probe, probe_launch

    if launch:
        if not words:
            raise InputError(
                "--launch: give the serve command after --, e.g. -- vllm serve MODEL --speculative-config ..."
            )
        return probe_launch(words, opts, startup_timeout, say, engine)
    if len(words) != 1:
        raise InputError("give one server URL (or --launch -- <serve command>)")
    return probe(words[0], opts, say)
