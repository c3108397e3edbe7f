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

STATUS_STYLE = {"ok": "bold green", "mismatch": "bold red", "fails": "bold red", "unverified": "bold yellow"}
SEVERITY_STYLE = {"problem": "bold red", "warning": "yellow", "info": "dim"}


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


def say(message: str) -> None:
    """A progress line on stderr (the library's `progress` callbacks)."""
    console(stderr=True).print(f"[dim]... {message}[/]")


def stream(text: str) -> None:
    """Generated text as it is committed."""
    sys.stdout.write(text)
    sys.stdout.flush()


def _ids(v) -> str:
    return "-" if v is None else "[" + ", ".join(str(x) for x in v) + "]"


def _fix_line(fix, who: str, after: str = "") -> Text:
    """`fix for ENGINE: set KEY = [ids] in config.json`, or why no value can."""
    if not fix.expressible:
        return Text.assemble(("no fix", "bold red"), f" {who}: {fix.reason}")
    return Text.assemble(
        ("fix", "bold green"),
        f" {who}: set ",
        (str(fix.key), "bold"),
        f" = {_ids(fix.value)} in config.json{after}",
    )


def render_check(rep, out: Console) -> None:
    t = rep.target
    out.print(f"[bold]drafter[/] {escape(rep.drafter)} ({rep.format} format)")
    out.print(
        f"[bold]target[/]  {t.architecture} ({t.family}, L={t.num_layers}, hidden {t.hidden_size}, vocab {t.vocab_size})"
    )
    tr = rep.trained
    taps = str(tr.wiring) if tr.wiring else "unknown"
    human = f"  = {tr.wiring.human(t.num_layers)}" if tr.wiring else ""
    out.print(
        f"[bold]trained on[/] {taps}{human}  [dim](from {escape(tr.basis)}; confidence: {tr.confidence})[/]"
    )
    table = Table(show_lines=False, header_style="bold")
    for col in ("engine", "reads", "ids", "served taps", "verdict"):
        table.add_column(col)
    for v in rep.verdicts:
        s = v.served
        served = Text(str(s.taps)) if s.taps else Text("fails (below)", style="red")
        table.add_row(
            Text(v.engine),
            Text(s.source_key or "(default)"),
            _ids(s.ids),
            served,
            Text(v.status, STATUS_STYLE.get(v.status, "")),
        )
    out.print(table)
    for v in rep.verdicts:
        if v.served.failure:
            out.print(Text(f"{v.engine}: {v.served.failure}", "red"))
        if v.fix is not None:
            out.print(_fix_line(v.fix, f"for {v.engine}"))
            for n in v.fix.notes if v.fix.expressible else ():
                out.print(Text(f"    {n}", "dim"))
        for f in v.findings:
            out.print(Text(f"{f.severity}: [{v.engine}] {f.message}", SEVERITY_STYLE[f.severity]))
    for f in rep.findings:
        out.print(Text(f"{f.severity}: {f.message}", SEVERITY_STYLE[f.severity]))
    for u in rep.unknowns:
        out.print(Text(f"unknown: {u}", "yellow"))
    verdict = {
        "problem": ("PROBLEM: the engine will not feed this drafter what it was trained on", "bold red"),
        "unverified": (
            "UNVERIFIED: not every fact behind the verdict is known (see 'unknown' above)",
            "bold yellow",
        ),
        "ok": ("OK: every engine feeds the trained taps", "bold green"),
    }[rep.verdict]
    out.print(Text(*verdict))
    if getattr(rep, "fixed_copy", None) is not None:
        out.print(f"wrote a fixed copy to {rep.fixed_copy}")


def render_inspection(ins, out: Console) -> None:
    out.print(f"[bold]{escape(ins.path)}[/]  format: [bold]{ins.format}[/]")
    for name, reader in ins.readers.items():
        out.print(f"  {name}: {reader}")
        for key, value in ins.configs.get(name, {}).items():
            out.print(f"      {key} = {value}")
        if not ins.configs.get(name):
            out.print("      (no id keys: engines use their default)")
    if ins.arch:
        a = ins.arch
        out.print(
            f"  drafter: {a['num_layers']} layer(s), hidden {a['hidden_size']}, heads {a['num_heads']}/{a['num_kv_heads']}, "
            f"fc {a['n_aux']} x {a['target_hidden_size']} -> {a['hidden_size']}, draft vocab {a['draft_vocab_size']} of {a['vocab_size']}"
        )
        flags = [k for k in ("norm_before_residual", "fc_norm", "norm_before_fc", "norm_output") if a.get(k)]
        out.print(f"  options: {', '.join(flags) if flags else 'none'}")
    if ins.weight_files:
        out.print(f"  weights: {', '.join(ins.weight_files)} ({len(ins.tensors)} tensors)")
        for name, shape, dtype in ins.tensors:
            if name.split(".")[0] in ("fc", "lm_head", "d2t", "t2d", "embed_tokens") or ".q_proj." in name:
                out.print(f"      {name} {shape} {dtype}")
    else:
        out.print("  weights: none (config-only)")
    if ins.vocab is not None:
        v = ins.vocab
        state = "ok" if v.ok else "PROBLEM"
        out.print(
            f"  vocab map: {state} (d2t {'yes' if v.has_d2t else 'no'}, t2d {'yes' if v.has_t2d else 'no'})"
        )
        for f in v.findings:
            out.print(Text(f"      {f.severity}: {f.message}", SEVERITY_STYLE[f.severity]))
    if ins.provenance:
        out.print(f"  provenance: taps {ins.provenance.get('taps')}, target {ins.provenance.get('target')}")
    for n in ins.notes:
        out.print(Text(f"  note: {n}", "dim"))
    if ins.target is not None:
        t = ins.target
        tr = ins.trained
        out.print(f"[bold]target[/] {t.architecture} ({t.family}, L={t.num_layers})")
        if tr is not None:
            out.print(
                Text(f"  trained on: {tr.wiring or 'unknown'} (from {tr.basis}; confidence {tr.confidence})")
            )
        table = Table(header_style="bold")
        for col in ("engine", "reads", "ids", "served taps"):
            table.add_column(col)
        for s in ins.served:
            table.add_row(
                Text(s.label),
                Text(s.source_key or "(default)"),
                _ids(s.ids),
                Text(s.taps) if s.taps else Text(s.failure or "-", style="red"),
            )
        out.print(table)


def render_lint(rep, out: Console) -> None:
    assumed = " (not given: assumed the newest encoded)" if rep.version_defaulted else ""
    out.print(Text.assemble((rep.engine, "bold"), f" {rep.version}{assumed}", f", GPU {rep.gpu}"))
    g, e = rep.given, rep.effective
    fields = ("algorithm", "num_steps", "topk", "num_draft_tokens", "num_speculative_tokens", "method",
              "draft_tensor_parallel_size")  # fmt: skip
    check = rep.engine_code if rep.engine_code and not rep.engine_code.get("unavailable") else None
    table = Table(header_style="bold")
    for col in ("setting", "you gave", "the engine uses"):
        table.add_column(col)
    if check:
        table.add_column(f"{rep.engine} {check['version']} (its own code)")
    theirs = {d["setting"]: d["engine"] for d in check["differences"]} if check else {}
    for f in fields:
        a, b = getattr(g, f, None), getattr(e, f, None)
        if a is None and b is None:
            continue
        style = "bold red" if a is not None and a != b else ""
        row = [f, "-" if a is None else str(a), Text("-" if b is None else str(b), style)]
        if check:
            other = theirs.get(f, b) if check["starts"] else "-"
            row.append(Text("-" if other is None else str(other), "bold red" if f in theirs else ""))
        table.add_row(*row)
    table.add_row("draft tokens per verify", "", str(e.proposed_drafts_per_verify), *([""] if check else []))
    table.add_row("max accept length (incl. bonus)", "", str(e.max_accept_length), *([""] if check else []))
    if check:
        engine_starts = (
            "starts" if check["starts"] else f"refuses: {(check['error'] or {}).get('message', '')}"
        )
        table.add_row("startup", "", "starts" if rep.starts_args else "refuses", engine_starts)
    out.print(table)
    for c in rep.changes:
        given = "unset" if c.given is None else c.given
        out.print(
            Text(
                f"{c.severity}: {c.flag} {given} -> {c.effective}: {c.message}",
                SEVERITY_STYLE.get(c.severity, ""),
            )
        )
        out.print(Text(f"    rule {c.rule}; {c.citation}", "dim"))
    for f in rep.fixes:
        out.print(Text.assemble(("fix", "bold green"), f": {f.description}"))
        if f.alternative:
            out.print(Text(f"     {f.alternative}", "dim"))
    if rep.fixed_argv:
        out.print(Text.assemble(("fixed command", "bold"), f": {rep.fixed_command}"))
    for n in rep.notes:
        out.print(Text(f"note: {n}", "dim"))
    for d in rep.gpu_dependent:
        out.print(Text(f"depends on the GPU: {d}", "yellow"))
    if rep.engine_code is not None:
        agrees = rep.engine_code["agrees"]
        answered = rep.engine_code["gpu_answered"]
        how = (
            f" (GPU queries answered as {answered})"
            if answered and not rep.engine_code["unavailable"]
            else ""
        )
        out.print(Text(rep.engine_code["verdict"] + how, "green" if agrees else "bold red"))
    ok = not rep.has_problem
    verdict = (
        "OK: no silent override of the speculative settings"
        if ok
        else "PROBLEM: the engine silently changes your speculative settings"
    )
    if ok and any("refused" in d for d in rep.gpu_dependent):
        out.print(
            Text("UNVERIFIED: whether the server starts depends on the GPU (pass --gpu)", "bold yellow")
        )
    out.print(Text(verdict, "bold green" if ok else "bold red"))


def render_convert(res, out: Console) -> None:
    out.print(f"wrote {res.destination} ({res.format} format) from {res.source} ({res.source_format})")
    out.print(f"  taps {res.taps} (from {res.taps_basis}); ids written: {_ids(res.ids)}")
    for k, v in res.extra_keys.items():
        out.print(f"  also {k} = {_ids(v)} (for vLLM)")
    for n in res.notes:
        out.print(Text(f"  note: {n}", "dim"))


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
    table.add_row("acc (unconditional)", *[f"{a:.3f}" for a in ev.acc])
    table.add_row("alpha (conditional)", *[f"{a:.3f}" for a in ev.cond_acc])
    table.add_row("predicted tau, k+1 steps", *[f"{a:.2f}" for a in ev.tau])
    if recorded and recorded.get("acc"):
        rec = recorded["acc"][: ev.steps]
        table.add_row(
            "recorded at training (teacher-forced, held-out text)",
            *[f"{a:.3f}" for a in rec] + [""] * (ev.steps - len(rec)),
        )
    out.print(table)
    for setting, value in ev.tree.items():
        out.print(f"  SGLang tree {setting}: simulated accept length {value:.2f}")
    out.print(
        Text(
            "  tau includes the bonus token (SGLang completion_tokens/verify_ct; vLLM 1 + accepted/drafts)",
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
    out.print(Rule("verdict", style="bold"))
    if rep.weights is not None:
        w = rep.weights
        style = {"fine": "bold green", "broken": "bold red"}.get(w.status, "bold yellow")
        out.print(Text(f"weights: {w.message}", style))
        served = f"{rep.engine} feeds {rep.served}" if rep.served is not None else f"{rep.engine} fails"
        out.print(f"wiring: {served}; trained on {rep.trained}")
    if rep.fix is not None:
        out.print(_fix_line(rep.fix, f"({rep.engine})", f"  -> feeds {rep.fixed_taps}"))
    if "served" in rep.evals and "fixed" in rep.evals:
        s, f = rep.evals["served"], rep.evals["fixed"]
        out.print(
            f"  step-0 acc {s.acc[0]:.3f} -> {f.acc[0]:.3f}; predicted tau ({s.steps} steps) {s.tau[-1]:.2f} -> {f.tau[-1]:.2f}"
        )
    for n in rep.notes:
        out.print(Text(f"note: {n}", "dim"))
    for p in rep.problems:
        out.print(Text(f"problem: {p}", "bold red"))
    for u in rep.unknowns:
        out.print(Text(f"unknown: {u}", "yellow"))
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
