"""Terminal rendering of the static reports (check, inspect, lint, convert): configs in, verdicts out."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

STATUS_STYLE = {"ok": "bold green", "mismatch": "bold red", "fails": "bold red", "unverified": "bold yellow"}
SEVERITY_STYLE = {"problem": "bold red", "warning": "yellow", "info": "dim", "unverified": "yellow"}


def ids_text(v) -> str:
    return "-" if v is None else "[" + ", ".join(str(x) for x in v) + "]"


def fix_line(fix, who: str, after: str = "") -> Text:
    """`fix for ENGINE: set KEY = [ids] in config.json`, or why no value can."""
    if not fix.expressible:
        return Text.assemble(("no fix", "bold red"), f" {who}: {fix.reason}")
    return Text.assemble(
        ("fix", "bold green"),
        f" {who}: set ",
        (str(fix.key), "bold"),
        f" = {ids_text(fix.value)} in config.json{after}",
    )


def render_check(rep, out: Console) -> None:
    t = rep.target
    out.print(f"[bold]drafter[/] {escape(rep.drafter)} ({rep.format} format)")
    out.print(
        f"[bold]target[/]  {t.architecture} ({t.family}, L={t.num_layers}, hidden {t.hidden_size}, vocab {t.vocab_size})"
    )
    tr = rep.trained
    taps = str(tr.wiring) if tr.wiring else "the final state" if tr.final_state else "unknown"
    human = f"  = {tr.wiring.human(t.num_layers)}" if tr.wiring and tr.known else ""
    out.print(
        f"[bold]trained on[/] {taps}{human}  [dim](from {escape(tr.basis)}; confidence: {tr.confidence})[/]"
    )
    if len(tr.options) > 1:
        for o in tr.options:
            out.print(Text(f"  or {o}", "yellow"))
    table = Table(show_lines=False, header_style="bold")
    for col in ("engine", "reads", "ids", "served taps", "verdict"):
        table.add_column(col)
    for v in rep.verdicts:
        for name, s, status, style in [
            (v.engine, v.served, v.status, STATUS_STYLE.get(v.status, "")),
            *((f"  {a.engine}", a.served, f"({a.status})", "dim") for a in v.alternatives),
        ]:
            served = (
                Text(str(s.taps))
                if s.taps
                else Text("fails (below)", style="red")
                if s.failure or not s.notes
                else Text(s.notes[0])  # an EAGLE-1-style head: what it is fed, no taps
            )
            table.add_row(
                Text(name), Text(s.source_key or "(default)"), ids_text(s.ids), served, Text(status, style)
            )
    out.print(table)
    for v in rep.verdicts:
        if v.served.failure:
            out.print(Text(f"{v.engine}: {v.served.failure}", "red"))
        if v.fix is not None:
            out.print(fix_line(v.fix, f"for {v.engine}"))
            for n in v.fix.notes if v.fix.expressible else ():
                out.print(Text(f"    {n}", "dim"))
        for a in v.alternatives:
            if a.served.failure:
                out.print(Text(f"{a.engine} ({a.when}): {a.served.failure}", "dim"))
            if a.fix is not None and a.fix.expressible:
                out.print(fix_line(a.fix, f"for {a.engine} ({a.when})"))
        for f in v.findings:
            if f.severity != "unverified":  # those are the verdict's unknowns, printed below
                out.print(Text(f"{f.severity}: [{v.engine}] {f.message}", SEVERITY_STYLE.get(f.severity, "")))
    for f in rep.findings:
        out.print(Text(f"{f.severity}: {f.message}", SEVERITY_STYLE.get(f.severity, "")))
    for a in rep.assumptions:
        out.print(Text(f"assumed: {a}", "cyan"))
    for u in rep.unknowns:
        out.print(Text(f"unknown: {u}", "yellow"))
    for v in rep.verdicts:
        if v.evidence:
            out.print(
                Text(
                    f"evidence [{v.engine}]: {v.evidence['basis']}"
                    + ("" if "decided_by" in v.evidence else "; structure and flag rules read at source"),
                    "dim",
                )
            )
    verdict = {
        "problem": (
            "PROBLEM: the engine will not feed this drafter what it was trained on"
            if any(v.status == "mismatch" or v.served.failure is not None for v in rep.verdicts)
            else "PROBLEM: the engine does not serve this head as it was trained, on the final state (see 'problem' "
            "above)"
            if rep.trained.final_state
            else "PROBLEM: the engine's taps are the trained ones, but it refuses this drafter or serves it otherwise "
            "than it was trained (see 'problem' above)",
            "bold red",
        ),
        "unverified": (
            "UNVERIFIED: the evidence does not decide the verdict (see 'unknown' above for what settles it)",
            "bold yellow",
        ),
        "ok": (
            "OK: every engine feeds the trained taps"
            + (" (under the assumptions above)" if rep.assumptions else ""),
            "bold green",
        ),
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
            out.print(Text(f"      {f.severity}: {f.message}", SEVERITY_STYLE.get(f.severity, "")))
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
                ids_text(s.ids),
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
    if rep.evidence:
        out.print(Text(f"evidence [{rep.engine} {rep.version}]: {rep.evidence['basis']}", "dim"))
    ok = not rep.has_problem
    verdict = (
        "OK: no silent override of the speculative settings"
        if ok
        else "PROBLEM: the engine refuses this launch"
        if not rep.starts
        else "PROBLEM: the engine silently changes your speculative settings"
    )
    if rep.verdict == "unverified":
        why = rep.unread or "whether the server starts depends on the GPU (pass --gpu)"
        out.print(Text(f"UNVERIFIED: {why}", "bold yellow"))
        verdict = "no silent override by the rules of the releases read" if ok and rep.unread else verdict
    out.print(Text(verdict, "bold green" if ok else "bold red"))


def render_convert(res, out: Console) -> None:
    out.print(f"wrote {res.destination} ({res.format} format) from {res.source} ({res.source_format})")
    out.print(f"  taps {res.taps} (from {res.taps_basis}); ids written: {ids_text(res.ids)}")
    for k, v in res.extra_keys.items():
        out.print(f"  also {k} = {ids_text(v)} (for vLLM)")
    for n in res.notes:
        out.print(Text(f"  note: {n}", "dim"))
