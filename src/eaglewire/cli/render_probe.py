"""Terminal rendering of `eaglewire probe`: what the server is, what it measured, what was predicted, the cause."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from eaglewire.cli.render_static import fix_line

STYLE = {
    "served-as-trained": "bold green",
    "wiring": "bold red",
    "flags": "bold red",
    "weak-drafter": "bold red",
    "unexplained": "bold red",
    "unverified": "bold yellow",
}


def _ci(ci) -> str:
    return f" (95% CI {ci[0]:.2f}..{ci[1]:.2f})" if ci else ""


def render_measurement(m, out: Console) -> None:
    w = m.window
    scope = "the probe's requests" if m.scope == "workload" else "everything since the server started"
    if m.accept_length is None:
        out.print(
            Text.assemble(("measured", "bold"), f" over {scope}: no speculative verify step counted yet")
        )
        return
    out.print(
        Text.assemble(
            ("measured", "bold"),
            f" over {scope}: accept length {m.accept_length:.3f}{_ci(m.accept_length_ci)}",
            f"; {len(m.requests)} requests, {w.drafts:.0f} verify steps" if m.requests else "",
        )
    )
    if w.accepted is not None:
        out.print(
            f"  engine counters over the window: drafts {w.drafts:.0f}, draft tokens "
            f"{'-' if w.draft_tokens is None else f'{w.draft_tokens:.0f}'}, accepted {w.accepted:.0f}, "
            f"generated {w.generated:.0f}, finished requests {w.requests:.0f}"
        )
    if m.per_position:
        cis = m.per_position_ci or [None] * len(m.per_position)
        cells = [
            f"{p:.3f}" + (f" [{c[0]:.2f}..{c[1]:.2f}]" if c else "")
            for p, c in zip(m.per_position, cis, strict=True)
        ]
        out.print("  per-position acceptance: " + "  ".join(cells))


def _fact(name: str, fact) -> str:
    value = fact.value or "unknown"
    return (
        f"{name} {value} ({fact.source}: {fact.basis})"
        if fact.source != "assumed"
        else f"{name} {value} (assumed)"
    )


def render_facts(rep, out: Console) -> None:
    """Where the server runs and which runner it uses, each with where that came from; an `assumed:` line for
    what nothing said (and what would settle it)."""
    for name, fact in (("platform", rep.platform), ("runner", rep.runner)):
        if fact is not None:
            out.print(Text(f"  {_fact(name, fact)}", "dim"))
    for a in rep.assumed:
        out.print(Text(f"assumed: {a}", "cyan"))


def render_probe(rep, out: Console) -> None:
    s = rep.server
    out.print(
        Text.assemble(
            ("server", "bold"), f" {s.url}: {s.engine} {s.version or '(version unknown)'}, model {s.model}",
            f" ({s.model_path})" if s.model_path and s.model_path != s.model else "",
        )
    )  # fmt: skip
    if s.draft_model:
        out.print(f"  draft model {escape(s.draft_model)}")
    out.print(
        f"  draft tokens per verify: {s.k if s.k is not None else 'unknown'}; speculative settings {s.settings}"
    )
    if rep.launched:
        out.print(Text(f"  launched: {' '.join(rep.launched['command'])} (pid {rep.launched['pid']})", "dim"))
        for line in rep.launched.get("engine_said") or []:
            out.print(Text(f"  the engine said: {line}", "dim"))
    render_facts(rep, out)
    out.print(Text(f"regime: {rep.regime}", "dim"))
    render_measurement(rep.measurement, out)
    d = rep.diagnosis
    if rep.lint is not None:
        e = rep.lint.effective
        out.print(
            f"flags ({rep.lint.engine} {rep.lint.version}): {e.proposed_drafts_per_verify} draft tokens per "
            f"verify, accept length at most {e.max_accept_length}"
        )
    elif d.ceiling:
        out.print(f"flags: at most {d.ceiling} tokens per verify (from the server's counters)")
    p = rep.prediction
    if p is not None:
        out.print(
            Rule(
                f"predicted on the same {p.prompts} prompts ({p.engine}; {', '.join(p.runners)})", style="dim"
            )
        )
        table = Table(header_style="bold")
        for col in ("taps", "as", "accept length at the server's K", "vs measured", "match", "per position"):
            table.add_column(col)
        for c in d.comparisons:
            curve = next((x for x in p.curves.values() if str(x.wiring) == c.taps), None)
            pos = " ".join(f"{x:.2f}" for x in (curve.per_position or [])) if curve else ""
            table.add_row(
                c.taps, c.label, f"{c.predicted:.3f}", f"{c.difference:+.3f} ({c.difference / c.predicted:+.1%})",
                Text("yes" if c.matches else "no", "green" if c.matches else "red"), pos,
            )  # fmt: skip
        out.print(table)
        if p.recorded and p.recorded.get("acc"):
            out.print(f"recorded training accuracy (step 0, teacher-forced): {p.recorded['acc'][0]:.3f}")
            for c in p.curves.values():
                if c.teacher_acc:
                    out.print(f"  on this workload under {c.wiring} ({c.label}): {c.teacher_acc[0]:.3f}")
        for n in p.notes:
            out.print(Text(f"note: {n}", "dim"))
    out.print(Text(d.tolerance, "dim"))
    out.print(Rule("diagnosis", style="bold"))
    if d.config_fix is not None:
        out.print(fix_line(d.config_fix, f"for {d.fix_engine}"))
    for f in d.flag_fixes:
        out.print(Text.assemble(("fix", "bold green"), f" (flags): {f}"))
    if d.fixed_command:
        out.print(Text.assemble(("fixed command", "bold"), f": {d.fixed_command}"))
    for n in [*rep.measurement.notes, *d.notes, *rep.notes]:
        out.print(Text(f"note: {n}", "dim"))
    for n in d.needs:
        out.print(Text(f"to decide: {n}", "yellow"))
    out.print(Text(d.summary))
    more = [c for c in d.causes if c != d.name]
    out.print(Text(f"DIAGNOSIS: {d.name}" + (f" (also: {', '.join(more)})" if more else ""), STYLE[d.name]))


def render_live(rep, out: Console) -> None:
    """The probe's part of the doctor's report: what the server measured, against what, and the cause."""
    s = rep.server
    out.print(f"{s.engine} {s.version or ''} serving {s.model}, {s.k} draft tokens per verify")
    render_facts(rep, out)
    render_measurement(rep.measurement, out)
    for c in rep.diagnosis.comparisons:
        out.print(
            f"  predicted under {c.label} {c.taps}: {c.predicted:.3f} ({'matches' if c.matches else 'differs'})"
        )
    d = rep.diagnosis
    out.print(Text(f"live diagnosis: {d.name}: {d.summary}", STYLE[d.name]))
