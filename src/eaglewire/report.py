"""Terminal rendering (rich). The library returns dataclasses; this module and cli.py are the only printers."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

STATUS_STYLE = {"ok": "bold green", "mismatch": "bold red", "fails": "bold red", "unknown": "yellow"}
SEVERITY_STYLE = {"problem": "bold red", "warning": "yellow", "info": "dim"}


def console(stderr: bool = False) -> Console:
    return Console(stderr=stderr, highlight=False, soft_wrap=False, width=120)


def print_json(data: Any) -> None:
    print(json.dumps(data, indent=2, default=str))


def _ids(v) -> str:
    return "-" if v is None else "[" + ", ".join(str(x) for x in v) + "]"


def render_check(rep, out: Console) -> None:
    t = rep.target
    out.print(f"[bold]drafter[/] {escape(rep.drafter)} ({rep.format} format)")
    out.print(f"[bold]target[/]  {t.architecture} ({t.family}, L={t.num_layers}, hidden {t.hidden_size}, vocab {t.vocab_size})")
    tr = rep.trained
    taps = str(tr.wiring) if tr.wiring else "unknown"
    human = f"  = {tr.wiring.human(t.num_layers)}" if tr.wiring else ""
    out.print(f"[bold]trained on[/] {taps}{human}  [dim](from {escape(tr.basis)}; confidence: {tr.confidence})[/]")
    table = Table(show_lines=False, header_style="bold")
    for col in ("engine", "reads", "ids", "served taps", "verdict"):
        table.add_column(col)
    for v in rep.verdicts:
        s = v.served
        served = Text(str(s.taps)) if s.taps else Text("fails (below)", style="red")
        table.add_row(Text(v.engine), Text(s.source_key or "(default)"), _ids(s.ids), served,
                      Text(v.status, STATUS_STYLE.get(v.status, "")))
    out.print(table)
    for v in rep.verdicts:
        if v.served.failure:
            out.print(Text(f"{v.engine}: {v.served.failure}", "red"))
        if v.fix is not None:
            if v.fix.expressible:
                out.print(Text.assemble(("fix", "bold green"), f" for {v.engine}: set ", (str(v.fix.key), "bold"),
                                        f" = {_ids(v.fix.value)} in config.json"))
                for n in v.fix.notes:
                    out.print(Text(f"    {n}", "dim"))
            else:
                out.print(Text.assemble(("no fix", "bold red"), f" for {v.engine}: {v.fix.reason}"))
        for f in v.findings:
            out.print(Text(f"{f.severity}: [{v.engine}] {f.message}", SEVERITY_STYLE[f.severity]))
    for f in rep.findings:
        out.print(Text(f"{f.severity}: {f.message}", SEVERITY_STYLE[f.severity]))
    verdict = "PROBLEM: the engine will not feed this drafter what it was trained on" if rep.has_problem else "OK: every engine feeds the trained taps"
    out.print(Text(verdict, "bold red" if rep.has_problem else "bold green"))


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
        out.print(f"  vocab map: {state} (d2t {'yes' if v.has_d2t else 'no'}, t2d {'yes' if v.has_t2d else 'no'})")
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
            out.print(Text(f"  trained on: {tr.wiring or 'unknown'} (from {tr.basis}; confidence {tr.confidence})"))
        table = Table(header_style="bold")
        for col in ("engine", "reads", "ids", "served taps"):
            table.add_column(col)
        for s in ins.served:
            table.add_row(Text(s.label), Text(s.source_key or "(default)"), _ids(s.ids),
                          Text(s.taps) if s.taps else Text(s.failure or "-", style="red"))
        out.print(table)


def render_lint(rep, out: Console) -> None:
    d = rep.to_dict()
    ver = d.get("version")
    out.print(f"[bold]{d.get('engine')}[/] {ver or ''}{' (assumed newest)' if d.get('version_defaulted') else ''}")
    eff = d.get("effective") or {}
    out.print("effective: " + ", ".join(f"{k}={v}" for k, v in eff.items() if v is not None))
    for c in d.get("changes", []):
        sev = c.get("severity", "info")
        out.print(Text(f"{sev}: {c.get('flag')}: {c.get('given')} -> {c.get('effective')}  ({c.get('rule')}; {c.get('source')})",
                       SEVERITY_STYLE.get(sev, "")))
        if c.get("message"):
            out.print(f"    {c['message']}")
    for f in d.get("fixes", []):
        out.print(f"[bold green]fix[/]: {f.get('description') or f}")
        if f.get("flags"):
            out.print(f"    {' '.join(f['flags']) if isinstance(f['flags'], list) else f['flags']}")
    if d.get("fixed_argv"):
        out.print("[bold]fixed command[/]: " + " ".join(d["fixed_argv"]))
    ok = not rep.has_problem
    out.print(Text("OK: no silent override of the speculative settings" if ok else "PROBLEM: the engine silently changes your speculative settings",
                   "bold green" if ok else "bold red"))


def render_convert(res, out: Console) -> None:
    out.print(f"wrote {res.destination} ({res.format} format) from {res.source} ({res.source_format})")
    out.print(f"  taps {res.taps} (from {res.taps_basis}); ids written: {_ids(res.ids)}")
    for k, v in res.extra_keys.items():
        out.print(f"  also {k} = {_ids(v)} (for vLLM)")
    for n in res.notes:
        out.print(Text(f"  note: {n}", "dim"))
