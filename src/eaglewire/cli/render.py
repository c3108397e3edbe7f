"""Terminal rendering (rich) and JSON output. The library returns dataclasses; cli/ is the only printer."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from eaglewire.cli.render_static import fix_line, render_check, render_lint


def console(stderr: bool = False) -> Console:
    return Console(stderr=stderr, highlight=False, soft_wrap=False, width=120)


def strict(data: Any) -> Any:
    """JSON-ready data with NaN and infinities as null (RFC 8259 has no NaN; JS, Go and Rust parsers refuse it)."""
    if isinstance(data, float):
        return data if math.isfinite(data) else None
    if isinstance(data, dict):
        return {k: strict(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [strict(v) for v in data]
    return data


def print_json(data: Any) -> None:
    print(json.dumps(strict(data), indent=2, default=str, allow_nan=False))


def show(result: Any, json_out: bool, draw: Callable[[Any, Console], None]) -> None:
    """A command's result: its `to_dict()` as strict JSON, or drawn for the terminal."""
    if json_out:
        print_json(result.to_dict())
    else:
        draw(result, console())


def show_report(
    result: Any,
    json_out: bool,
    draw: Callable[[Any, Console], None],
    folder: Path | None,
    write: Callable[[Any, Path], Any],
) -> None:
    """`show`, after writing the report folder (plots, report.json, index.html) with `write` when one is asked for;
    the terminal is told where it is."""
    if folder is not None:
        write(result, folder)
    show(result, json_out, draw)
    if folder is not None and not json_out:
        console().print(f"report: {folder / 'index.html'}")


def say(message: str) -> None:
    """A progress line on stderr (the library's `progress` callbacks)."""
    console(stderr=True).print(f"[dim]... {message}[/]")


def stream(text: str) -> None:
    """Generated text as it is committed."""
    sys.stdout.write(text)
    sys.stdout.flush()


class ProgressBar:
    """A rich progress bar usable as a library callback: `cb(done, total, fields=None)`."""

    def __init__(self, description: str, enabled: bool = True):
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        self.enabled = enabled
        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
            TextColumn("{task.fields[info]}"),
            console=console(stderr=True),
            transient=False,
        )
        self.description = description
        self.task = None

    def __enter__(self):
        if self.enabled:
            self.progress.start()
        return self

    def __exit__(self, *exc):
        if self.enabled:
            self.progress.stop()

    def __call__(self, done: int, total: int, fields: dict | None = None) -> None:
        if not self.enabled:
            return
        if self.task is None:
            self.task = self.progress.add_task(self.description, total=total, info="")
        info = ""
        if fields:
            parts = []
            for k, v in fields.items():
                if k in ("step", "lr", "val"):
                    continue
                if isinstance(v, list):
                    v = "/".join(f"{x:.2f}" for x in v[:4])
                elif isinstance(v, float):
                    v = f"{v:.3f}"
                parts.append(f"{k} {v}")
            info = "  ".join(parts)
        self.progress.update(self.task, completed=done, total=total, info=info)


def _fmt(values: list[float]) -> str:
    return " ".join(f"{v:.3f}" for v in values)


def render_evaluation(ev, out: Console, title: str = "", recorded: dict | None = None) -> None:
    mode = (
        "chain on the target's greedy continuations, own tokens fed back"
        if ev.mode == "chain"
        else "teacher-forced on the data"
    )
    out.print(Text.assemble((title or f"taps {ev.wiring}", "bold"), f"  ({mode}; {ev.rows} positions)"))
    table = Table(header_style="bold")
    table.add_column("step k")
    for k in range(ev.steps):
        table.add_column(str(k))
    table.add_row("acc, every position (what training logs)", *[f"{a:.3f}" for a in ev.acc])
    table.add_row("alpha, every position (conditional)", *[f"{a:.3f}" for a in ev.cond_acc])
    if ev.walks:
        table.add_row("accept length, k+1 drafts (engine's walk)", *[f"{a:.2f}" for a in ev.tau])
        table.add_row(
            f"accepted at position k / drafts (K={ev.steps})", *[f"{a:.3f}" for a in ev.per_position]
        )
    if recorded and recorded.get("acc"):
        rec = recorded["acc"][: ev.steps]
        table.add_row(
            "recorded at training (teacher-forced, held-out text)",
            *[f"{a:.3f}" for a in rec] + [""] * (ev.steps - len(rec)),
        )
    out.print(table)
    for setting, value in ev.tree.items():
        out.print(f"  SGLang tree {setting}: accept length {value:.2f} (engine's walk)")
    if ev.walks:
        out.print(
            Text(
                f"  accept length includes the bonus token (vLLM 1 + accepted/drafts, SGLang completion_tokens/"
                f"verify_ct), walked as an engine drafts: K tokens after each verify ({ev.walks[-1].drafts} drafts "
                f"at K={ev.steps})",
                "dim",
            )
        )


def render_search(res, out: Console, num_layers: int | None = None) -> None:
    b = res.best
    out.print(
        Text.assemble(
            ("wiring search", "bold"), f": {res.evaluated} candidates scored by step-0 cross-entropy"
        )
    )
    table = Table(header_style="bold")
    for col in ("rank", "taps", "human", "CE", "acc0"):
        table.add_column(col)
    for i, c in enumerate(res.ranked[:6], 1):
        table.add_row(str(i), str(c.wiring), c.wiring.human(num_layers), f"{c.ce:.4f}", f"{c.acc0:.3f}")
    out.print(table)
    tied = ", ".join(str(c.wiring) for c in res.tied)
    out.print(f"  best {b.wiring}; statistically indistinguishable (95% paired bootstrap): {tied}")
    if res.served is not None and res.served_gap is not None:
        m, lo, hi = res.served_gap
        out.print(
            f"  served {res.served.wiring} loses {m:+.3f} step-0 accuracy against the best (95% CI {lo:+.3f}..{hi:+.3f})"
        )


def render_doctor(rep, out: Console) -> None:
    render_check(rep.static, out)
    if rep.lint is not None:
        out.print(Rule("launch flags", style="dim"))
        render_lint(rep.lint, out)
    L = rep.static.target.num_layers
    for name in ("served", "trained", "fixed"):
        if name in rep.evals:
            out.print(Rule(f"standalone test: {name} taps", style="dim"))
            render_evaluation(rep.evals[name], out, f"{name} taps {rep.evals[name].wiring}")
    if "served-teacher" in rep.evals and rep.recorded and rep.recorded.get("acc"):
        tf = rep.evals["served-teacher"]
        out.print(
            f"teacher-forced step-0 acc under the served taps: {tf.acc[0]:.3f} vs {rep.recorded['acc'][0]:.3f} "
            f"recorded at training time ({tf.rows} positions)"
        )
    if rep.search is not None:
        out.print(Rule("wiring search", style="dim"))
        render_search(rep.search, out, L)
    if rep.weights is not None:
        out.print(Rule("on the training data (dump)", style="dim"))
        render_evaluation(
            rep.evals["trained-on-dump"], out, f"trained taps {rep.weights.wiring}", rep.recorded
        )
        if "served-on-dump" in rep.evals:
            render_evaluation(
                rep.evals["served-on-dump"], out, f"served taps {rep.evals['served-on-dump'].wiring}"
            )
    if rep.live is not None:
        from eaglewire.cli.render_probe import render_live

        out.print(Rule(f"live server {rep.live.server.url}", style="dim"))
        render_live(rep.live, out)
    out.print(Rule("verdict", style="bold"))
    if rep.weights is not None:
        w = rep.weights
        style = {"fine": "bold green", "broken": "bold red"}.get(w.status, "bold yellow")
        out.print(Text(f"weights: {w.message}", style))
        served = f"{rep.engine} feeds {rep.served}" if rep.served is not None else f"{rep.engine} fails"
        out.print(f"wiring: {served}; trained on {rep.trained}")
    if rep.fix is not None:
        out.print(fix_line(rep.fix, f"({rep.engine})", f"  -> feeds {rep.fixed_taps}"))
    if "served" in rep.evals and "fixed" in rep.evals:
        s, f = rep.evals["served"], rep.evals["fixed"]
        out.print(
            f"  step-0 acc {s.acc[0]:.3f} -> {f.acc[0]:.3f}; predicted accept length ({s.steps} drafts, engine's "
            f"walk) {s.tau[-1]:.2f} -> {f.tau[-1]:.2f}"
        )
    for n in rep.notes:
        out.print(Text(f"note: {n}", "dim"))
    for p in rep.problems:
        out.print(Text(f"problem: {p}", "bold red"))
    for a in rep.assumptions:
        out.print(Text(f"assumed: {a}", "cyan"))
    for u in rep.unknowns:
        out.print(Text(f"unknown: {u}", "yellow"))
    ev = rep.static.verdicts[0].evidence if rep.static.verdicts else None
    if ev:
        out.print(Text(f"evidence: {ev['basis']}", "dim"))
    style = {"problem": "bold red", "unverified": "bold yellow", "ok": "bold green"}[rep.verdict]
    out.print(Text(f"VERDICT: {rep.verdict.upper()}", style))


def render_capture(res, out: Console) -> None:
    out.print(
        f"captured {res.samples} samples ({res.tokens} tokens), taps {res.taps} -> {res.out} "
        f"({res.shards_written} shards written, {res.shards_skipped} already complete)"
    )


def render_train(res, out: Console) -> None:
    out.print(f"wrote {res.out} (taps {res.taps}, {res.steps} steps, {res.tokens_per_second:.0f} tokens/s)")
    if res.val is not None:
        out.print("held-out acc per step: " + " ".join(f"{a:.3f}" for a in res.val.acc))
        out.print("held-out conditional acc: " + " ".join(f"{a:.3f}" for a in res.val.cond_acc))
    for n in res.notes:
        out.print(Text(f"note: {n}", "dim"))


def render_standalone(rep, out: Console) -> None:
    out.print(f"[bold]{escape(rep.drafter)}[/] fed {rep.wiring} ({escape(rep.basis)})")
    if rep.data is not None:
        read = ", ".join(f"{n} ({b / 2**20:.1f} MiB)" for n, b in rep.target_reads or []) or "nothing"
        out.print(
            f"data: {rep.data['kind']} dump {escape(rep.data['path'])} ({rep.data['samples']} samples, holds "
            f"{rep.data['taps']}); read from the target: {escape(read)}; no target layers loaded"
        )
    for name, ev in rep.evaluations.items():
        render_evaluation(ev, out, f"{name}: taps {ev.wiring}", rep.recorded if name == "teacher" else None)
    if rep.search is not None:
        render_search(rep.search, out, rep.num_layers)


def render_generation(gen, out: Console) -> None:
    s = gen.stats
    print()
    console(stderr=True).print(
        f"[dim]tau {s.tau:.2f} (accepted drafts + bonus per verify) | {s.tokens_per_second:.1f} tokens/s | "
        f"{s.new_tokens} tokens, {s.verify_steps} verify steps, {s.target_forwards} target forwards[/]"
    )


def render_bench(rep, out: Console, folder: Path) -> None:
    data = rep.to_dict()
    t = Table(header_style="bold")
    for col in ("method", "tokens/s", "speed-up", "tau", "speed-up/tau", "non-loop speed-up", "= plain"):
        t.add_column(col)
    for r in data["methods"]:
        t.add_row(
            r["method"],
            f"{r['tokens_per_second_median']:.1f}",
            f"{r['speedup']:.2f}x",
            "-" if r["tau_median"] is None else f"{r['tau_median']:.2f}",
            "-" if r["efficiency_speedup_per_tau"] is None else f"{r['efficiency_speedup_per_tau']:.2f}",
            "-" if r["non_loop_prompts"]["speedup"] is None else f"{r['non_loop_prompts']['speedup']:.2f}x",
            r["outputs_identical_to_plain_greedy"],
        )
    out.print(t)
    out.print(
        f"baseline: {data['baseline']}; loop prompts: {data['loop_prompts']}; target {data['target_dtype']}, "
        f"drafter {data['drafter_dtype']}; '= plain': outputs identical to the plain loop's (bf16 verify forwards "
        f"round differently from one-token forwards, so near-ties can flip); wrote {folder / 'decode.json'} and "
        f"{folder / 'decode.png'}"
    )


def render_advice(adv, out: Console) -> None:
    t = Table(
        header_style="bold",
        title="predicted (measured costs on this machine; tau simulated on greedy continuations)",
    )
    for col in ("steps", "topk", "draft tokens", "tau", "speed-up"):
        t.add_column(col)
    for o in sorted(adv.options, key=lambda o: -o.speedup)[:12]:
        t.add_row(str(o.steps), str(o.topk), str(o.draft_tokens), f"{o.tau:.2f}", f"{o.speedup:.2f}x")
    out.print(t)
    out.print(f"SGLang: {adv.sglang_flags}")
    out.print(f"vLLM:   --speculative-config '{adv.vllm_config}'")
    for n in adv.notes:
        out.print(f"[dim]note: {n}[/]")


def render_bench_all(results: dict, out: Console, folder: Path) -> None:
    if "train" in results:
        t = results["train"]
        out.print(
            f"capture: {t['capture_all_taps_tokens_per_second']} tokens/s (all taps); "
            f"training: {t['train_tokens_per_second']} tokens/s"
        )
    s = results["search"]
    out.print(
        f"search on a 61-layer target: {s['search_cost_multiple']}x one standalone evaluation (goal <= 10x)"
    )
    e = s["eval_vs_speculators"]
    if "ratio" in e:
        out.print(f"evaluation throughput vs speculators' forward: {e['ratio']}x (goal >= 1.0x)")
    if "scale" in results:
        k = results["scale"]
        out.print(
            f"test on a dump, Kimi-K2.5-shaped partial target ({k['vocab']:,} x {k['hidden']:,}, {k['layers_declared']} "
            f"layers declared): {k['seconds']} s, peak RSS {k['peak_rss_bytes'] / 2**30:.2f} GiB = "
            f"{k['peak_rss_over_three_tensors']}x the three tensors read (goal <= {k['goal_ratio']}x)"
        )
    if "decode" in results:
        render_bench(results["decode"], out, folder)


def render_zoo_cards(cards: dict, out: Console) -> None:
    for name, card in cards.items():
        loss = card.get("held_out_loss")
        acc = (card.get("held_out") or {}).get("acc")
        out.print(f"{name}: " + (f"held-out loss {loss:.4f}" if loss is not None else f"held-out acc {acc}"))


class ProgressBars:
    """One progress bar per stage, all closed together (`new(name)` is the library's per-stage callback)."""

    def __init__(self, prefix: str):
        self.prefix, self.bars = prefix, []

    def new(self, name: str) -> ProgressBar:
        bar = ProgressBar(f"{self.prefix} {name}")
        bar.__enter__()
        self.bars.append(bar)
        return bar

    def __enter__(self) -> ProgressBars:
        return self

    def __exit__(self, *exc) -> None:
        for b in self.bars:
            b.__exit__(None, None, None)
