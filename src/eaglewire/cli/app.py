"""The `eaglewire` command: parse arguments, call the library, render. Exit 0 = fine, 1 = problem found,
2 = bad input (one line on stderr naming the file, key or flag)."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from eaglewire.cli import render as report
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
DTYPE = typer.Option(
    "auto", "--dtype", help="Target dtype: auto (as stored if bf16, else float32), float32 or bfloat16."
)


def _exit(problem: bool) -> None:
    raise typer.Exit(EXIT_PROBLEM if problem else EXIT_OK)


def _wiring(text: str | None) -> Wiring | None:
    return Wiring.parse(text) if text else None


@app.command()
def inspect(
    drafter: Path = typer.Argument(
        ..., help="Drafter folder (EAGLE/SGLang, speculators or modelopt format)."
    ),
    target: Path | None = typer.Option(
        None, "--target", help="Target config.json or folder: show the taps each engine feeds."
    ),
    json_out: bool = JSON,
) -> None:
    """Show a drafter's format, shapes, vocab-map health and declared ids; with --target, the served taps."""
    from eaglewire.formats.inspection import inspect_drafter

    ins = inspect_drafter(drafter, target)
    if json_out:
        report.print_json(ins.to_dict())
    else:
        report.render_inspection(ins, report.console())
    _exit(ins.vocab is not None and not ins.vocab.ok)


@app.command()
def check(
    drafter: Path = typer.Argument(..., help="Drafter folder."),
    target: Path | None = typer.Option(
        None, "--target", help="Target config.json or folder (optional if the drafter has provenance)."
    ),
    engine: list[str] = typer.Option(
        None,
        "--engine",
        help="Engine and version, e.g. sglang==0.5.23 or vllm==0.33.0 (repeatable; default: newest of both).",
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
    json_out: bool = JSON,
) -> None:
    """Verdict: does each engine feed the taps the drafter was trained on? Prints the exact fix."""
    from eaglewire.formats import read_drafter
    from eaglewire.jobs.check import check as run_check
    from eaglewire.jobs.check import write_fixed

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
    engine: str | None = typer.Option(
        None, "--engine", help="Force the engine (sglang or vllm), optionally with ==VERSION."
    ),
    target_arch: str | None = typer.Option(
        None, "--target-arch", help="Target architecture when --model-path is not a local folder."
    ),
    json_out: bool = JSON,
) -> None:
    """Apply SGLang's / vLLM's own adjustment rules to a launch command; report every silent override."""
    from eaglewire import flags

    if not command:
        raise InputError(
            "give the launch command after --, e.g. eaglewire lint -- python -m sglang.launch_server ..."
        )
    name, version = ([*engine.split("==", 1), None])[:2] if engine else (None, None)
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
    target: Path | None = typer.Option(
        None, "--target", help="Target config.json or folder (optional with provenance)."
    ),
    trained_on: str | None = typer.Option(
        None, "--trained-on", help="Taps the source was trained on, if its ids do not say."
    ),
    json_out: bool = JSON,
) -> None:
    """Convert between formats, rewriting the id list so the drafter is fed the same taps."""
    from eaglewire.formats.convert import convert as run_convert

    res = run_convert(src, dst, to, target, _wiring(trained_on))
    if json_out:
        report.print_json({**res.__dict__, "taps": str(res.taps)})
    else:
        report.render_convert(res, report.console())


@app.command()
def capture(
    target: Path = typer.Option(
        ..., "--target", help="Target model folder (transformers weights + tokenizer)."
    ),
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
    json_out: bool = JSON,
) -> None:
    """Run the target once per sample and store every tap it needs (h_L pre-norm), as safetensors shards."""
    import torch

    from eaglewire.capture import capture as run_capture
    from eaglewire.data import load_samples
    from eaglewire.targets import load_target

    tgt = load_target(target, trust_remote_code=trust_remote_code)
    if tgt.tokenizer is None:
        raise InputError(f"{target}: no tokenizer in the target folder")
    samples = load_samples(data, tgt.tokenizer, max_len)
    wiring = None if taps == "all" else Wiring.parse(taps)
    with report.ProgressBar("capture", enabled=not json_out) as bar:
        res = run_capture(
            tgt, samples, out, wiring, samples_per_shard, torch.float32 if fp32 else torch.bfloat16, bar
        )
    info = {
        "out": str(res.out),
        "samples": res.samples,
        "tokens": res.tokens,
        "taps": str(res.taps),
        "shards_written": res.shards_written,
        "shards_skipped": res.shards_skipped,
    }
    if json_out:
        report.print_json(info)
    else:
        report.console().print(
            f"captured {res.samples} samples ({res.tokens} tokens), taps {res.taps} -> {res.out} "
            f"({res.shards_written} shards written, {res.shards_skipped} already complete)"
        )


@app.command()
def train(
    target: Path = typer.Option(..., "--target", help="Target model folder."),
    out: Path = typer.Option(
        ..., "--out", help="Drafter folder (EAGLE/SGLang format + provenance); resumes from out/checkpoint."
    ),
    taps: str = typer.Option(..., "--taps", help="Training wiring, e.g. h2,h4,h5 or embed,out(L2),out(L30)."),
    data: Path | None = typer.Option(None, "--data", help="Training text/JSONL (the target runs online)."),
    captured: Path | None = typer.Option(
        None, "--captured", help="An `eaglewire capture` folder instead of --data."
    ),
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
    json_out: bool = JSON,
) -> None:
    """Train an EAGLE-3 drafter (training-time test); the checkpoint records its taps and target."""
    from eaglewire.capture import CaptureReader, OnlineSource
    from eaglewire.data import load_samples
    from eaglewire.jobs.train import TrainConfig, train_drafter
    from eaglewire.jobs.train_state import world
    from eaglewire.targets import load_target

    if (data is None) == (captured is None):
        raise InputError("give exactly one of --data (online) or --captured (an eaglewire capture folder)")
    if export not in (None, "speculators"):
        raise InputError(f"--export {export!r}: only speculators is supported")
    wiring = Wiring.parse(taps)
    tgt = load_target(target)
    if captured is not None:
        source = CaptureReader(captured)
        if source.manifest["target"].get("num_layers") != tgt.info.num_layers:
            raise InputError(f"{captured}: captured from another target than {target}")
    else:
        if tgt.tokenizer is None:
            raise InputError(f"{target}: no tokenizer in the target folder")
        source = OnlineSource(tgt, load_samples(data, tgt.tokenizer, max_len), wiring)
    cfg = TrainConfig(
        taps=str(wiring),
        draft_vocab_size=draft_vocab,
        num_layers=layers,
        ttt_steps=ttt_steps,
        step_decay=step_decay,
        steps=steps,
        batch_size=batch_size,
        lr=lr,
        warmup_steps=warmup,
        grad_clip=grad_clip,
        bf16=bf16,
        checkpoint_every=checkpoint_every,
        eval_every=eval_every,
        seed=seed,
        norm_before_residual=norm_before_residual,
    )
    with report.ProgressBar("train", enabled=not json_out and world()[0] == 0) as bar:
        res = train_drafter(
            tgt,
            source,
            out,
            cfg,
            val_fraction=val_fraction,
            export_speculators=export == "speculators",
            data_note=str(data or captured),
            progress=bar,
        )
    if world()[0] != 0:
        return
    val = res.val
    info = {
        "out": str(out),
        "steps": res.steps,
        "resumed_from": res.resumed_from,
        "world_size": res.world_size,
        "tokens_per_second": round(res.tokens_per_second, 1),
        "held_out": None if val is None else {"acc": val.acc, "cond_acc": val.cond_acc, "loss": val.loss},
    }
    if json_out:
        report.print_json(info)
    else:
        c = report.console()
        c.print(
            f"wrote {out} (taps {wiring.served()}, {res.steps} steps, {res.tokens_per_second:.0f} tokens/s)"
        )
        if val is not None:
            c.print("held-out acc per step: " + " ".join(f"{a:.3f}" for a in val.acc))
            c.print("held-out conditional acc: " + " ".join(f"{a:.3f}" for a in val.cond_acc))


@app.command("test")
def test_cmd(
    drafter: Path = typer.Argument(..., help="Drafter folder."),
    target: Path = typer.Option(..., "--target", help="Target model folder (weights + tokenizer)."),
    data: Path | None = typer.Option(
        None,
        "--data",
        help="Text/JSONL to take prompts from (default for the zoo target: held-out stdlib files).",
    ),
    captured: Path | None = typer.Option(
        None, "--captured", help="An `eaglewire capture` folder (teacher-forced on that data)."
    ),
    speculators_samples: Path | None = typer.Option(
        None, "--speculators-samples", help="speculators offline samples (hs_<i>.safetensors)."
    ),
    speculators_ids: str | None = typer.Option(
        None, "--speculators-ids", help="Layer ids the samples were generated with, incl. L (e.g. 2,4,5,8)."
    ),
    taps: str | None = typer.Option(None, "--taps", help="Feed these taps (default: the trained taps)."),
    engine: str | None = typer.Option(
        None, "--engine", help="Feed the taps this engine would feed, e.g. sglang==0.5.23."
    ),
    steps: int = typer.Option(5, "--steps", help="Draft steps K."),
    samples: int = typer.Option(12, "--samples", help="Prompts (chain mode) or samples (teacher mode)."),
    prompt_len: int = typer.Option(64, "--prompt-len"),
    new_tokens: int = typer.Option(
        96, "--new-tokens", help="Greedy tokens generated by the target per prompt."
    ),
    tree: list[str] = typer.Option(
        None,
        "--tree",
        help="SGLang tree setting steps,topk,draft_tokens (repeatable; default 3,1,4 5,1,6 5,4,8 6,4,16).",
    ),
    teacher: bool = typer.Option(
        True,
        "--teacher/--no-teacher",
        help="Also report teacher-forced acc on the data (comparable with training logs).",
    ),
    run_search: bool = typer.Option(False, "--search", help="Also run the wiring search."),
    json_out: bool = JSON,
) -> None:
    """Standalone drafter test: per-step acceptance and predicted accept length against the real target."""
    from eaglewire.capture import CaptureReader, SpeculatorsSamples, TargetHead
    from eaglewire.drafter import Eagle3Drafter
    from eaglewire.formats import read_drafter
    from eaglewire.jobs.check import check as run_check
    from eaglewire.jobs.evaluate import DEFAULT_TREES, TreeSetting, chain_data, evaluate, prompt_samples
    from eaglewire.jobs.search import search
    from eaglewire.taps import default_wiring
    from eaglewire.targets import load_target

    if taps and engine:
        raise InputError("--taps and --engine are alternatives: give one")
    ckpt = read_drafter(drafter)
    tgt = load_target(target)
    L = tgt.info.num_layers
    static = run_check(ckpt, tgt.info, [engine] if engine else ["sglang"])
    if taps:
        wiring = Wiring.parse(taps).validate(L)
    elif engine:
        served = static.verdicts[0].served
        if served.taps is None:
            raise InputError(f"--engine {engine}: {served.failure}")
        wiring = served.taps
    elif static.trained.wiring is not None:
        wiring = static.trained.wiring
    else:
        raise InputError(f"{drafter}: cannot tell its training taps ({static.trained.basis}); pass --taps")
    settings = DEFAULT_TREES
    if tree:
        try:
            settings = tuple(TreeSetting(*(int(x) for x in t.split(","))) for t in tree)
        except (TypeError, ValueError):
            raise InputError(f"--tree {tree}: write steps,topk,draft_tokens e.g. 5,4,8") from None
    model = Eagle3Drafter.from_checkpoint(ckpt, embed_tokens=tgt.model.get_input_embeddings().weight.detach())
    recorded = (ckpt.provenance.training or {}).get("held_out") if ckpt.provenance else None
    results: dict = {
        "taps": str(wiring),
        "basis": "--taps" if taps else (f"served by {engine}" if engine else static.trained.basis),
    }
    evals = {}
    if captured is not None or speculators_samples is not None:
        if captured is not None:
            src = CaptureReader(captured)
            head = src.target_head()
        else:
            if not speculators_ids:
                raise InputError("--speculators-samples needs --speculators-ids (the layer ids incl. L)")
            src = SpeculatorsSamples(speculators_samples, [int(x) for x in speculators_ids.split(",")], L)
            head = TargetHead.of(tgt)
        items = [src[i] for i in range(min(samples, len(src)))]
        evals["teacher"] = evaluate(model, items, wiring, steps, "teacher", head=head)
        data_chain = None
    else:
        base = prompt_samples(tgt, data, limit=samples, max_len=max(512, prompt_len + new_tokens))
        data_chain = chain_data(tgt, base, list(range(L + 1)), prompt_len, new_tokens)
        evals["chain"] = evaluate(model, data_chain, wiring, steps, "chain", trees=settings)
        if teacher:
            from eaglewire.jobs.evaluate import captured as capture_all

            evals["teacher"] = evaluate(
                model, capture_all(tgt, base, wiring.indices), wiring, steps, "teacher"
            )
    search_res = None
    if run_search:
        items = data_chain if data_chain is not None else items
        search_res = search(
            model, items, L, [wiring, default_wiring(L)], head=None if data_chain is not None else head
        )
    results["evaluations"] = {k: v.to_dict() for k, v in evals.items()}
    results["recorded_training_metrics"] = recorded
    if search_res is not None:
        results["search"] = search_res.to_dict()
    if json_out:
        report.print_json(results)
        return
    out = report.console()
    out.print(f"[bold]{drafter}[/] fed {wiring} ({results['basis']})")
    for name, ev in evals.items():
        report.render_evaluation(
            ev, out, f"{name}: taps {ev.wiring}", recorded if name == "teacher" else None
        )
    if search_res is not None:
        report.render_search(search_res, out, L)


@app.command()
def doctor(
    drafter: Path = typer.Argument(..., help="Drafter folder."),
    target: Path = typer.Option(
        ...,
        "--target",
        help="Target folder (config only: static check; with weights: also the standalone test).",
    ),
    engine: str = typer.Option("sglang==0.5.23", "--engine", help="Engine and version that will serve it."),
    launch: list[str] = typer.Argument(
        None, help="Optional launch command after --, linted with the engine's rules."
    ),
    data: Path | None = typer.Option(
        None, "--data", help="Prompts for the standalone test (default for the zoo target: held-out stdlib)."
    ),
    samples: int = typer.Option(12, "--samples"),
    steps: int = typer.Option(5, "--steps"),
    search_mode: str = typer.Option(
        "auto", "--search", help="auto (when served taps test far below trained), always, never."
    ),
    report_dir: Path | None = typer.Option(
        None, "--report", help="Write PNGs, report.json and index.html here."
    ),
    json_out: bool = JSON,
) -> None:
    """Everything in one report: static wiring check, flags lint, standalone test, wiring search, the fix."""
    from eaglewire.jobs.doctor import DoctorOptions
    from eaglewire.jobs.doctor import doctor as run_doctor

    if search_mode not in ("auto", "always", "never"):
        raise InputError(f"--search {search_mode!r}: use auto, always or never")
    opts = DoctorOptions(
        engine=engine,
        launch=list(launch) if launch else None,
        data=data,
        samples=samples,
        steps=steps,
        search=search_mode,
    )
    err = report.console(stderr=True)
    rep = run_doctor(
        drafter, target, opts, progress=None if json_out else (lambda msg: err.print(f"[dim]... {msg}[/]"))
    )
    if report_dir is not None:
        from eaglewire.cli.plots import doctor_report

        doctor_report(rep, report_dir)
    if json_out:
        report.print_json(rep.to_dict())
    else:
        report.render_doctor(rep, report.console())
        if report_dir is not None:
            report.console().print(f"report: {report_dir / 'index.html'}")
    _exit(rep.has_problem)


def _load_pair(target: Path, drafter: Path, taps: str | None, dtype: str = "float32"):
    """Target and drafter (both in `dtype`, as engines serve them) + the wiring to feed (given, or the
    drafter's trained taps)."""
    from eaglewire.drafter import Eagle3Drafter
    from eaglewire.formats import read_drafter
    from eaglewire.jobs.check import trained_taps
    from eaglewire.targets import load_target, resolve_dtype

    tgt = load_target(target, dtype=resolve_dtype(target, dtype))
    ckpt = read_drafter(drafter)
    if taps:
        wiring = Wiring.parse(taps).validate(tgt.info.num_layers)
    else:
        tr = trained_taps(ckpt, tgt.info)
        if tr.wiring is None:
            raise InputError(f"{drafter}: cannot tell its training taps ({tr.basis}); pass --taps")
        wiring = tr.wiring
    embed = tgt.model.get_input_embeddings().weight.detach().float()
    model = Eagle3Drafter.from_checkpoint(ckpt, embed_tokens=embed).to(next(tgt.model.parameters()).dtype)
    return tgt, model, wiring


@app.command()
def generate(
    target: Path = typer.Option(..., "--target", help="Target model folder."),
    drafter: Path = typer.Option(..., "--drafter", help="Drafter folder."),
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
    taps: str | None = typer.Option(None, "--taps", help="Feed these taps instead of the trained ones."),
    dtype: str = DTYPE,
    json_out: bool = JSON,
) -> None:
    """Speculative generation with the reference decoder: streams the text, then one line of stats."""
    from eaglewire.jobs.decode import DecodeConfig, DecodeStats, SpeculativeDecoder

    tgt, model, wiring = _load_pair(target, drafter, taps, dtype)
    if tgt.tokenizer is None:
        raise InputError(f"{target}: no tokenizer in the target folder")
    if topk > 1 and draft_tokens is None:
        raise InputError("--topk > 1 needs --draft-tokens (e.g. --steps 5 --topk 4 --draft-tokens 8)")
    cfg = DecodeConfig(
        steps=steps,
        topk=topk,
        draft_tokens=draft_tokens,
        temperature=temperature,
        top_p=top_p,
        top_k=top_k,
        max_new_tokens=max_new_tokens,
        eos_token_id=tgt.tokenizer.eos_token_id,
        seed=seed,
    )
    ids = tgt.tokenizer(prompt, return_tensors="pt", add_special_tokens=False)["input_ids"][0]
    if ids.numel() == 0:
        raise InputError("--prompt is empty after tokenization")
    stats = DecodeStats()
    dec = SpeculativeDecoder(tgt.model, model, wiring)
    tokens: list[int] = []
    printed = ""
    for chunk in dec.stream(ids, cfg, stats):
        tokens += chunk.tolist()
        if not json_out:
            text = tgt.tokenizer.decode(tokens)
            sys.stdout.write(text[len(printed) :])
            sys.stdout.flush()
            printed = text
    info = {
        "tau": round(stats.tau, 3),
        "tokens_per_second": round(stats.tokens_per_second, 1),
        "new_tokens": stats.new_tokens,
        "verify_steps": stats.verify_steps,
        "target_forwards": stats.target_forwards,
        "draft_forwards": stats.draft_forwards,
        "taps": str(wiring),
    }
    if json_out:
        report.print_json({"text": tgt.tokenizer.decode(tokens), **info})
    else:
        print()
        report.console(stderr=True).print(
            f"[dim]tau {stats.tau:.2f} (accepted drafts + bonus per verify) | {stats.tokens_per_second:.1f} tokens/s | "
            f"{stats.new_tokens} tokens, {stats.verify_steps} verify steps, {stats.target_forwards} target forwards[/]"
        )


@app.command()
def bench(
    target: Path = typer.Option(..., "--target", help="Target model folder."),
    drafter: Path = typer.Option(..., "--drafter", help="Drafter folder."),
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
    json_out: bool = JSON,
) -> None:
    """tokens/s and tau: plain greedy, eaglewire chain/tree, assisted generation, prompt lookup (interleaved runs)."""
    from transformers import AutoModelForCausalLM

    from eaglewire import zoo
    from eaglewire.bench.decode import run_bench
    from eaglewire.cli.plots import bar_plot
    from eaglewire.jobs.decode import DecodeConfig
    from eaglewire.jobs.evaluate import prompt_samples

    tgt, model, wiring = _load_pair(target, drafter, None, dtype)
    samples = prompt_samples(tgt, prompts, limit=n_prompts, max_len=prompt_len)
    ids = [s.input_ids[:prompt_len] for s in samples]
    configs = []
    for text in setting or ["3", "4", "5", "6", "7", "5,2,12", "5,4,8"]:
        try:
            parts = [int(x) for x in text.split(",")]
        except ValueError:
            raise InputError(f"--setting {text!r}: write steps or steps,topk,draft_tokens") from None
        configs.append(
            DecodeConfig(
                steps=parts[0],
                topk=parts[1] if len(parts) > 1 else 1,
                draft_tokens=parts[2] if len(parts) > 2 else None,
            )
        )
    helper = None
    apath = assistant or (zoo.zoo_dir() / "assistant" if zoo.is_zoo_target(tgt.info) else None)
    if apath is not None and (apath / "config.json").exists():
        helper = AutoModelForCausalLM.from_pretrained(
            str(apath), local_files_only=True, dtype=next(tgt.model.parameters()).dtype
        ).eval()
    with report.ProgressBar("bench", enabled=not json_out) as bar:
        res = run_bench(tgt.model, model, wiring, ids, max_new_tokens, configs, helper, progress=bar)
    data = res.to_dict()
    data["target_dtype"] = str(next(tgt.model.parameters()).dtype).removeprefix("torch.")
    data["drafter_dtype"] = str(next(model.parameters()).dtype).removeprefix("torch.")
    out.mkdir(parents=True, exist_ok=True)
    (out / "decode.json").write_text(__import__("json").dumps(data, indent=2))
    rows = data["methods"]
    bar_plot(
        out / "decode.png",
        [r["method"] for r in rows],
        [r["tokens_per_second_median"] for r in rows],
        "tokens/s (median)",
        f"Greedy decoding on {target.name} ({data['target_dtype']}): {data['prompts']} prompts, "
        f"{max_new_tokens} new tokens, {data['threads']} threads",
        [
            f"{r['tokens_per_second_median']:.0f} ({r['speedup']:.2f}x)\n"
            + (f"tau {r['tau_median']:.2f}" if r["tau_median"] else "")
            for r in rows
        ],
    )
    if json_out:
        report.print_json(data)
        return
    c = report.console()
    from rich.table import Table

    t = Table(header_style="bold")
    for col in ("method", "tokens/s", "speed-up", "tau", "speed-up/tau", "non-loop speed-up", "= plain"):
        t.add_column(col)
    for r in rows:
        t.add_row(
            r["method"],
            f"{r['tokens_per_second_median']:.1f}",
            f"{r['speedup']:.2f}x",
            "-" if r["tau_median"] is None else f"{r['tau_median']:.2f}",
            "-" if r["efficiency_speedup_per_tau"] is None else f"{r['efficiency_speedup_per_tau']:.2f}",
            "-" if r["non_loop_prompts"]["speedup"] is None else f"{r['non_loop_prompts']['speedup']:.2f}x",
            r["outputs_identical_to_plain_greedy"],
        )
    c.print(t)
    c.print(
        f"baseline: {data['baseline']}; loop prompts: {data['loop_prompts']}; target {data['target_dtype']}, "
        f"drafter {data['drafter_dtype']}; '= plain': outputs identical to the plain loop's (bf16 verify forwards "
        f"round differently from one-token forwards, so near-ties can flip); wrote {out / 'decode.json'} and "
        f"{out / 'decode.png'}"
    )


@app.command()
def advise(
    drafter: Path = typer.Argument(..., help="Drafter folder."),
    target: Path = typer.Option(..., "--target", help="Target model folder."),
    data: Path | None = typer.Option(
        None, "--data", help="Prompts (default for the zoo target: held-out stdlib)."
    ),
    samples: int = typer.Option(8, "--samples"),
    max_steps: int = typer.Option(7, "--max-steps"),
    dtype: str = DTYPE,
    json_out: bool = JSON,
) -> None:
    """Predict tau and speed-up over (steps, top-k, draft tokens); recommend SGLang and vLLM launch settings."""
    import copy

    import torch

    from eaglewire.bench.advise import advise as run_advise
    from eaglewire.bench.advise import measure_costs
    from eaglewire.jobs.evaluate import chain_data, prompt_samples
    from eaglewire.targets import resolve_dtype

    tgt, model, wiring = _load_pair(target, drafter, None)  # acceptance measured in fp32
    base = prompt_samples(tgt, data, limit=samples)
    items = chain_data(tgt, base, list(wiring.indices), 64, 96)
    run_dtype = resolve_dtype(target, dtype)  # costs measured in the dtype it would be served in
    if run_dtype == torch.float32:
        costs = measure_costs(tgt.model, model, wiring)
    else:
        costs = measure_costs(
            copy.deepcopy(tgt.model).to(run_dtype), copy.deepcopy(model).to(run_dtype), wiring
        )
    adv = run_advise(model, items, wiring, costs, max_steps, draft_path=str(drafter), target_path=str(target))
    if json_out:
        report.print_json(adv.to_dict())
        return
    from rich.table import Table

    c = report.console()
    t = Table(
        header_style="bold",
        title="predicted (measured costs on this machine; tau simulated on greedy continuations)",
    )
    for col in ("steps", "topk", "draft tokens", "tau", "speed-up"):
        t.add_column(col)
    for o in sorted(adv.options, key=lambda o: -o.speedup)[:12]:
        t.add_row(str(o.steps), str(o.topk), str(o.draft_tokens), f"{o.tau:.2f}", f"{o.speedup:.2f}x")
    c.print(t)
    c.print(f"SGLang: {adv.sglang_flags}")
    c.print(f"vLLM:   --speculative-config '{adv.vllm_config}'")
    for n in adv.notes:
        c.print(f"[dim]note: {n}[/]")


@app.command("bench-all")
def bench_all(
    out: Path = typer.Option(Path("bench-results"), "--out", help="Folder for the JSON results and plots."),
    decode: bool = typer.Option(
        True, "--decode/--no-decode", help="Also run the decoding benchmark on the zoo."
    ),
) -> None:
    """Every benchmark (`make bench`): training/capture throughput, search cost, evaluation speed, decoding."""
    from eaglewire import zoo
    from eaglewire.bench.suite import run_all

    err = report.console(stderr=True)
    results = run_all(out, progress=lambda msg: err.print(f"[dim]... {msg}[/]"))
    c = report.console()
    if "train" in results:
        t = results["train"]
        c.print(
            f"capture: {t['capture_all_taps_tokens_per_second']} tokens/s (all taps); training: {t['train_tokens_per_second']} tokens/s"
        )
    s = results["search"]
    c.print(
        f"search on a 61-layer target: {s['search_cost_multiple']}x one standalone evaluation (goal <= 10x)"
    )
    e = s["eval_vs_speculators"]
    if "ratio" in e:
        c.print(f"evaluation throughput vs speculators' forward: {e['ratio']}x (goal >= 1.0x)")
    if decode and zoo.is_built() and (zoo.drafter_dir("default") / "config.json").exists():
        err.print("[dim]... decoding benchmark[/]")
        bench(
            target=zoo.target_dir(),
            drafter=zoo.drafter_dir("default"),
            prompts=None,
            n_prompts=8,
            prompt_len=96,
            max_new_tokens=128,
            assistant=None,
            setting=None,
            out=out,
            dtype="auto",
            json_out=False,
        )


zoo_app = typer.Typer(
    help="The bundled zoo: a small real target, a tiny DeepSeek-V3, an assistant LM and drafters."
)
app.add_typer(zoo_app, name="zoo")


@zoo_app.command("build")
def zoo_build(
    stage: list[str] = typer.Option(
        None, "--stage", help="target, deepseek, assistant, drafters (default: all, in order)."
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
    from eaglewire.zoo.build import build

    stages = tuple(stage) if stage else ("target", "deepseek", "assistant", "drafters")
    bad = [s for s in stages if s not in ("target", "deepseek", "assistant", "drafters")]
    if bad:
        raise InputError(f"--stage {bad[0]!r}: use target, deepseek, assistant or drafters")
    bars = []

    def progress(name):
        bar = report.ProgressBar(f"zoo {name}")
        bar.__enter__()
        bars.append(bar)
        return bar

    try:
        cards = build(
            into or zoo.zoo_dir(), work, stages, progress, drafters=tuple(drafter) if drafter else None
        )
    finally:
        for b in bars:
            b.__exit__(None, None, None)
    for name, card in cards.items():
        loss = card.get("held_out_loss")
        acc = (card.get("held_out") or {}).get("acc")
        report.console().print(
            f"{name}: " + (f"held-out loss {loss:.4f}" if loss is not None else f"held-out acc {acc}")
        )


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
