"""Rendering of `coverage` (the evidence per engine x release x family x platform) and `matrix` (every drafter at
every release): terminal tables, and the matrix's one self-contained HTML page (a colour grid, no external assets)."""

from __future__ import annotations

import html
import json
import re
from collections import Counter
from itertools import groupby
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from eaglewire.rules.row import LEVELS

STATUS_STYLE = {"ok": "green", "mismatch": "yellow", "fails": "bold red", "unverified": "blue"}
LEVEL_HELP = {
    "engine": "a running engine's record covers this release, platform and family",
    "model-code": "the release's own model code, executed, covers them",
    "read": "the row was read at source in this very release",
    "none": "nothing looked at this release: its verdict applies the rows read around it",
}
LEVEL_MARK = {"engine": "E", "model-code": "M", "read": "R", "none": "·"}


# ------------------------------------------------------------------------------------------------------ coverage


def _summary(cells) -> str:
    """e.g. `engine llama · read 20`: the nonzero levels over a release's families on one platform."""
    by = {lv: [c.family for c in cells if c.level == lv] for lv in LEVELS}
    parts = [f"{lv} {', '.join(fs)}" for lv, fs in by.items() if fs and lv in LEVELS[:2]]
    parts += [f"{lv} {len(fs)}" for lv, fs in by.items() if fs and lv not in LEVELS[:2]]
    return " · ".join(parts)


def render_coverage(cov, out: Console) -> None:
    t = Table(title="evidence cells (engine x release x family x platform)", header_style="bold")
    t.add_column("")
    for lv in LEVELS:
        t.add_column(lv, justify="right")
    t.add_column("cells", justify="right")
    for engine, n in cov.counts.items():
        t.add_row(
            "[bold]all[/]" if engine == "total" else engine, *[str(n[lv]) for lv in LEVELS], str(n["total"])
        )
    out.print(t)
    for engine in dict.fromkeys(c.engine for c in cov.cells):
        cells = [c for c in cov.cells if c.engine == engine]
        nfam = len({c.family for c in cells})
        t = Table(title=f"{engine}: families per release ({nfam} in its model table)", header_style="bold")
        t.add_column("releases")
        for platform in sorted({c.platform for c in cells}):
            t.add_column(platform)
        rows = []
        for release in dict.fromkeys(c.release for c in cells):
            mine = [c for c in cells if c.release == release]
            rows.append((release, tuple(_summary([c for c in mine if c.platform == p]) for p in sorted(
                {c.platform for c in mine}))))  # fmt: skip
        for key, group in groupby(rows, key=lambda r: r[1]):
            names = [r[0] for r in group]
            span = names[0] if len(names) == 1 else f"{names[0]} .. {names[-1]} ({len(names)})"
            t.add_row(span, *[escape(s) for s in key])
        out.print(t)
        if engine in cov.notes:
            out.print(f"[dim]{engine}: {escape(cov.notes[engine])}[/]")
    if cov.generic:  # targets the table does not list, run by the model-code records
        by = Counter((g["engine"], g["outcome"]) for g in cov.generic)
        said = "; ".join(f"{e}: " + ", ".join(f"{n} {o}" for (e2, o), n in sorted(by.items()) if e2 == e)
                         for e in dict.fromkeys(g["engine"] for g in cov.generic))  # fmt: skip
        out.print(f"targets the table does not list, run in the model-code records (release x runner): {said} "
                  "(--json: `generic`; docs/coverage.md)")  # fmt: skip
    out.print("[dim]levels: " + "; ".join(f"{lv}: {h}" for lv, h in LEVEL_HELP.items()) + "[/]")


# -------------------------------------------------------------------------------------------------------- matrix


def fix_text(fix: dict | None) -> str:
    if not fix:
        return ""
    if fix["expressible"]:
        return f"fix: set {fix['key']} = {json.dumps(fix['value'])}"
    return f"no fix: {fix['reason']}"


def what(c) -> str:
    """What the engine feeds: the taps, or where it fails before feeding any."""
    if c.taps:
        return c.taps
    return f"at {c.stage}" if c.stage else "no taps"


def reason(c) -> str:
    """The line under a verdict that is not ok: the fix, else the problem, else why no fix, else what is unknown."""
    if c.status == "ok":
        return ""
    if c.fix and c.fix["expressible"]:
        return fix_text(c.fix)
    first = [*c.problems, fix_text(c.fix), c.failure or "", *c.unknowns]
    return next((x for x in first if x), "")


def _aside(text: str, release: str) -> str:
    """`text` with the release's own number left out (cells of two releases agree when only that differs)."""
    return re.sub(rf"(?<![\w.-]){re.escape(release)}(?![\w.-])", "", text)


def _brief(c) -> str:
    """A cell for the terminal: verdict, taps (or how it fails), evidence level."""
    style = STATUS_STYLE.get(c.status, "")
    return f"[{style}]{c.status}[/] {escape(what(c))} [dim]{LEVEL_MARK[c.level]}[/]"


def render_matrix(m, out: Console) -> None:
    target = m.drafters[0].target if m.drafters else {}
    out.print(
        f"[bold]target[/] {target.get('architecture')} ({target.get('family')}, L={target.get('num_layers')})"
    )
    for d in m.drafters:
        out.print(
            f"[bold]{escape(d.name)}[/] {escape(d.path)} ({d.format}; trained on {d.trained or 'unknown'})"
        )
        for p in d.problems:
            out.print(f"  [red]problem[/] {escape(p)}")
    out.print(f"[dim]{escape(m.platform_note)}[/]")
    t = Table(header_style="bold")
    t.add_column("engine")
    t.add_column("releases")
    for d in m.drafters:
        t.add_column(escape(d.name))
    notes: dict[str, tuple[str, dict, dict]] = {}  # reason (release aside) -> (text, drafters, where)

    def key(r):
        return r.engine, tuple((c.status, what(c), c.level, _aside(reason(c), r.release)) for c in r.cells)

    for (engine, _), group in groupby(m.releases, key=key):
        rels = list(group)
        span = rels[0].release if len(rels) == 1 else f"{rels[0].release} .. {rels[-1].release} ({len(rels)})"
        t.add_row(engine, span, *[_brief(c) for c in rels[0].cells])
        for c in rels[0].cells:
            if reason(c):
                text, drafters, where = notes.setdefault(_aside(reason(c), c.release), (reason(c), {}, {}))
                drafters[c.drafter] = where[f"{engine} {span}"] = None
    out.print(t)
    for text, drafters, where in notes.values():
        out.print(f"[bold]{escape(', '.join(drafters))}[/] at {escape('; '.join(where))}: {escape(text)}")
    counts = ", ".join(f"{d}: " + " ".join(f"{s} {n}" for s, n in c.items()) for d, c in m.counts.items())
    out.print(
        f"[dim]{len(m.releases)} releases x {len(m.drafters)} drafters in {m.seconds:.1f} s ({m.checks} checks "
        f"run); {escape(counts)}. Evidence: E engine run, M model code, R read at source, · none.[/]"
    )


COLOURS = {"ok": "#c8efc4", "mismatch": "#ffe08a", "fails": "#f6a6a6", "unverified": "#cfdcf5"}
BORDER = {"ok": "#3c9a35", "mismatch": "#c79100", "fails": "#c62828", "unverified": "#4a6fb5"}
CSS = """
body { font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px; color: #1d1d1f; }
h1 { font-size: 20px; margin: 0 0 6px; } h2 { font-size: 16px; margin: 0 0 8px; }
.meta { color: #444; margin: 2px 0; } .note { background: #f4f4f6; padding: 6px 10px; border-radius: 4px; }
.engines { display: flex; flex-wrap: wrap; gap: 28px; align-items: flex-start; margin-top: 18px; }
table.grid { border-collapse: separate; border-spacing: 3px; }
table.grid th { text-align: left; font-weight: 600; padding: 4px 8px; position: sticky; top: 0; background: #fff; }
table.grid td { padding: 3px 8px; vertical-align: top; border-radius: 4px; width: 230px; max-width: 230px; }
table.grid td.rel { font-family: ui-monospace, Menlo, Consolas, monospace; white-space: nowrap;
  background: #f4f4f6; width: auto; }
table.grid td.rel.unread { color: #888; font-style: italic; }
.st { font-weight: 700; } .taps { font-family: ui-monospace, Menlo, Consolas, monospace; }
.lv { float: right; font: 600 11px ui-monospace, Menlo, Consolas, monospace; border: 1px solid #0004;
  border-radius: 3px; padding: 0 4px; margin-left: 8px; background: #fffa; }
.lv.engine { background: #1b5e20; color: #fff; } .lv.model-code { background: #5e35b1; color: #fff; }
.lv.none { color: #777; border-style: dashed; background: transparent; }
.why { font-size: 12px; line-height: 1.3; color: #333; overflow: hidden; display: -webkit-box; word-break: break-word;
  -webkit-line-clamp: 2; -webkit-box-orient: vertical; }
.legend span { display: inline-block; padding: 1px 10px; margin-right: 6px; border-radius: 4px; }
table.drafters td, table.drafters th { padding: 2px 14px 2px 0; text-align: left; }
"""


def _cell_html(c) -> str:
    e = html.escape
    tip = [f"{c.label}: {c.status}", f"row {c.row}", f"evidence: {c.level} ({LEVEL_HELP[c.level]})"]
    tip += [f"record {c.record}"] if c.record else []
    tip += [f"fails ({c.stage or 'stage unknown'}): {c.failure}"] if c.failure else []
    tip += [fix_text(c.fix)] if c.fix else []
    tip += [f"problem: {p}" for p in c.problems] + [f"unknown: {u}" for u in c.unknowns]
    tip += [f"assumed: {a}" for a in c.assumptions]
    why = f"<div class='why'>{e(reason(c))}</div>" if reason(c) else ""
    style = f"background:{COLOURS.get(c.status, '#eee')};border-left:4px solid {BORDER.get(c.status, '#999')}"
    return (
        f"<td style='{style}' title='{e(chr(10).join(tip), quote=True)}'>"
        f"<span class='lv {e(c.level)}'>{e(c.level)}</span>"
        f"<span class='st'>{e(c.status)}</span> <span class='taps'>{e(what(c))}</span>{why}</td>"
    )


def _legend() -> str:
    chips = "".join(
        f"<span style='background:{COLOURS[s]};border-left:4px solid {BORDER[s]}'>{s}</span>" for s in COLOURS
    )
    levels = "; ".join(
        f"<span class='lv {lv}' style='float:none'>{lv}</span> {html.escape(h)}"
        for lv, h in LEVEL_HELP.items()
    )
    return (
        f"<p class='legend'>Verdict (<code>eaglewire check</code> at that release): {chips}<br>"
        f"Evidence, in each cell's corner: {levels}.<br>Hover a cell for the row, the failure, the fix and what "
        "was assumed.</p>"
    )


def matrix_html(m) -> str:
    e = html.escape
    target = m.drafters[0].target if m.drafters else {}
    releases = (
        "every EAGLE-3 release on the index (releases not read at source in grey italics)"
        if m.all_releases
        else "the EAGLE-3 releases whose capture code was read at source (<code>--all-releases</code>: every one)"
    )
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>eaglewire matrix: {e(', '.join(d.name for d in m.drafters))}</title><style>{CSS}</style>",
        "</head><body>",
        f"<h1>Which taps each engine release feeds: {len(m.drafters)} drafter(s) x {len(m.releases)} releases</h1>",
        f"<p class='meta'>Target <b>{e(str(target.get('architecture')))}</b> ({e(str(target.get('family')))}, "
        f"{e(str(target.get('num_layers')))} layers); engines {e(', '.join(m.engines))}; releases: {releases}.</p>",
        f"<p class='meta note'>Platform: {e(m.platform_note)}.</p>",
        "<table class='drafters'><tr><th>drafter</th><th>trained on</th><th>format</th><th>path</th></tr>",
    ]
    for d in m.drafters:
        problems = "".join(f"<br><span style='color:#c62828'>problem: {e(p)}</span>" for p in d.problems)
        parts.append(
            f"<tr><td><b>{e(d.name)}</b></td><td class='taps'>{e(d.trained or 'unknown')}</td>"
            f"<td>{e(d.format)}</td><td>{e(d.path)}{problems}</td></tr>"
        )
    parts += ["</table>", _legend(), "<div class='engines'>"]
    for engine in m.engines:
        rels = [r for r in m.releases if r.engine == engine]
        parts.append(f"<div><h2>{e(engine)} ({len(rels)} releases)</h2>")
        if not rels:
            parts.append(
                "<p class='meta'>No release read at source (<code>--all-releases</code>: every one).</p></div>"
            )
            continue
        parts.append("<table class='grid'><tr><th>release</th>")
        parts += [f"<th>{e(d.name)}</th>" for d in m.drafters]
        parts.append("</tr>")
        for r in rels:
            cls = "rel" if r.read else "rel unread"
            tip = f"{engine} {r.release}: " + ("read at source" if r.read else "not read") + (
                f"; {m.evidence_platform}: {r.platform_status}" if r.platform_status else "")  # fmt: skip
            parts.append(f"<tr><td class='{cls}' title='{e(tip, quote=True)}'>{e(r.release)}</td>")
            parts += [_cell_html(c) for c in r.cells]
            parts.append("</tr>")
        parts.append("</table></div>")
    parts.append(
        f"</div><p class='meta'>{len(m.releases) * len(m.drafters)} cells in {m.seconds:.1f} s. Made by "
        "<code>eaglewire matrix</code>; <code>--json</code> gives the same data.</p></body></html>"
    )
    return "\n".join(parts)


def write_matrix_html(m, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(matrix_html(m))
    return path
