"""The README's live-server table (`eaglewire probe` against the real vLLM CPU build) from the probe record, never
typed: the record is what tests/real_engine/test_probe.py wrote from each probe report (`case_of`), the README
section between the markers is `render(record)`, and tests/test_probe.py holds the README to it.

    make test-real-engine                                    # writes real-engine-results/vllm-probe.json
    cp real-engine-results/vllm-probe.json tests/real_engine/records/vllm-0.32.0-cpu-probe.json
    python tests/real_engine/probe_table.py                  # rewrites the README section from the record

A record: {"engine", "workload", "written_by", "provenance", "cases": [case, ...]}; a case: the drafter and K, the
diagnosis, platform and runner as the report states them (value, source, basis), the engine's counters over the
probe's window (accept length, 95% interval, per position, the raw counters), each predicted curve (taps, whether
served and/or trained, accept length by K, per position at the server's K) and the K the flags fix proposes.
"""

from __future__ import annotations

import json
import re
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RECORD = ROOT / "tests" / "real_engine" / "records" / "vllm-0.32.0-cpu-probe.json"
README = ROOT / "README.md"
BEGIN = (
    "<!-- probe-table: rendered from tests/real_engine/records/vllm-0.32.0-cpu-probe.json by "
    "tests/real_engine/probe_table.py; edit the record, not this -->"
)
END = "<!-- /probe-table -->"
RAW = (
    "drafts",
    "draft_tokens",
    "accepted_tokens",
    "accepted_per_position",
    "generated_tokens",
    "finished_requests",
)


def _r(x: float | None, nd: int = 4) -> float | None:
    return None if x is None else round(x, nd)


def case_of(name: str, description: str, report: dict) -> dict:
    """One case of the record from a probe report (`ProbeReport.to_dict()`, or the report.json of `--report`)."""
    m = report["measured"]
    pred = report.get("predicted") or {}
    served = set((pred.get("served_taps") or {}).values())
    trained = pred.get("trained_taps")
    k = pred.get("draft_tokens_per_verify") or report["server"]["draft_tokens_per_verify"]
    curves = []
    for c in (pred.get("curves") or {}).values():
        curves.append({
            "label": c["label"], "taps": c["taps"], "served": c["taps"] in served, "trained": c["taps"] == trained,
            "accept_length": {str(i + 1): _r(t) for i, t in enumerate(c["predicted_tau"])},
            "per_position": c["per_position_acceptance"],
        })  # fmt: skip
    fixes = " ".join(report["details"].get("flag_fixes") or [])
    more = re.search(r"num_speculative_tokens\D{0,40}?(\d+)", fixes)
    counters = m.get("counters") or {}
    return {
        "case": name, "description": description, "k": k, "diagnosis": report["diagnosis"],
        "summary": report["summary"], "platform": report.get("platform"), "runner": report.get("runner"),
        "assumed": report.get("assumed") or [],
        "measured": {"accept_length": _r(m["accept_length"]),
                     "ci95": [_r(x, 3) for x in m["accept_length_ci95"] or []],
                     "per_position": [_r(x) for x in m.get("per_position_acceptance") or []],
                     "counters": {key: counters.get(key) for key in RAW}},
        "predicted": curves, "suggested_k": int(more.group(1)) if more and k == 1 else None,
    }  # fmt: skip


def write_case(
    path: Path,
    header: dict,
    case: dict,
    order: list[str],
    written_by: str = "tests/real_engine/test_probe.py",
) -> dict:
    """Add (or replace) one case in the record at `path` (the tier's output, written whole each time); `header`
    holds engine, server and workload (a record with another header is started anew); cases in `order`."""
    record = {**header, "written_by": written_by, "provenance": {"seeded": False},
              "cases": []}  # fmt: skip
    if path.exists():
        old = json.loads(path.read_text())
        if all(old.get(k) == v for k, v in header.items()):
            record["cases"] = [c for c in old.get("cases", []) if c["case"] != case["case"]]
    record["cases"].append(case)
    record["cases"].sort(key=lambda c: order.index(c["case"]) if c["case"] in order else len(order))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1) + "\n")
    return record


def _wrap(text: str) -> str:
    return textwrap.fill(text, 115, break_long_words=False, break_on_hyphens=False)


def _fmt(xs: list[float | None]) -> str:
    return " ".join("?" if x is None else f"{x:.3f}" for x in xs)


def _at(curve: dict, k: int) -> float | None:
    return curve["accept_length"].get(str(k))


def _trained_cell(case: dict) -> str:
    k = case["k"]
    cells = []
    for c in case["predicted"]:
        if not c["trained"] or _at(c, k) is None:
            continue
        notes = [f"{c['taps']} = served" if c["served"] else c["taps"]]
        if case["diagnosis"] == "weak-drafter" and c["per_position"] and c["per_position"][0] is not None:
            notes.append(f"first position accepted {c['per_position'][0]:.0%}")
        cell = f"{_at(c, k):.3f} ({'; '.join(notes)})"
        more = case.get("suggested_k")
        if more and _at(c, more) is not None:
            cell += f"; {_at(c, more):.3f} with K = {more}"
        cells.append(cell)
    return "; ".join(cells)


def _served_cell(case: dict) -> str:
    return "; ".join(
        f"{_at(c, case['k']):.3f} ({c['taps']})"
        for c in case["predicted"]
        if c["served"] and not c["trained"] and _at(c, case["k"]) is not None
    )


def _facts(case: dict) -> str:
    out = []
    for name in ("platform", "runner"):
        f = case.get(name)
        if f and f.get("value"):
            out.append(f"{name} {f['value']} ({f['source']})")
    return ", ".join(out)


def render(record: dict) -> str:
    """The README section: what was run, the table, per position, where the numbers come from."""
    w = record["workload"]
    lines = [
        BEGIN,
        _wrap(
            f"Measured here against {record['server']} ({w['prompts']} held-out prompts of {w['prompt_len']} "
            f"tokens, {w['new_tokens']} greedy tokens each; the engine's counters over the probe's window, 95% "
            "bootstrap intervals over requests):"
        ),
        "",
        "| case (K = draft tokens per verify) | measured (95% CI) | predicted, trained taps | predicted, served taps "
        "| diagnosis |",
        "|---|---|---|---|---|",
    ]
    for c in record["cases"]:
        m = c["measured"]
        ci = f" ({m['ci95'][0]:.2f}..{m['ci95'][1]:.2f})" if m["ci95"] else ""
        lines.append(
            f"| {c['description']}, K = {c['k']} | {m['accept_length']:.3f}{ci} | {_trained_cell(c)} | "
            f"{_served_cell(c)} | {c['diagnosis']} |"
        )
    lines.append("")
    both, worst = [], 0.0
    for c in record["cases"]:
        measured = c["measured"]["per_position"]
        for p in c["predicted"]:
            pp = p["per_position"]
            if not (p["served"] and measured and pp and len(pp) == len(measured)):
                continue
            if any(x is None for x in (*pp, *measured)):
                continue
            worst = max(worst, *(abs(a - b) for a, b in zip(pp, measured, strict=True)))
            both.append(f"{c['description']}, K = {c['k']}: {_fmt(measured)} measured, {_fmt(pp)} predicted")
            break
    if both:
        lines += [
            _wrap(
                f"Per position, where the record holds both sides ({len(both)} of {len(record['cases'])} cases; "
                f"largest difference {worst:.3f}): " + "; ".join(both) + "."
            ),
            "",
        ]
    facts = sorted({f for c in record["cases"] if (f := _facts(c))})
    if facts:
        lines += [_wrap(f"Platform and runner as the reports state them: {'; '.join(facts)}."), ""]
    prov = record.get("provenance") or {}
    if prov.get("seeded"):
        lines.append(
            _wrap(
                f"Seeded record: the numbers above are those this README stated at commit {prov['commit'][:7]} "
                f"({prov['source']}); the tier did not write this record. The next `make test-real-engine` writes "
                "`real-engine-results/vllm-probe.json`; copying it over the record and running "
                "`python tests/real_engine/probe_table.py` replaces the seed."
            )
        )
    else:
        lines.append(
            _wrap(
                f"Written by {record['written_by']} (`make test-real-engine`) from the probe's reports; the "
                "diagnosis, the counters and every prediction are the reports' own."
            )
        )
    lines += [END]
    return "\n".join(lines) + "\n"


def section(readme: str) -> str:
    """The README's generated section, markers included (empty when the markers are missing)."""
    start, end = readme.find(BEGIN), readme.find(END)
    if start < 0 or end < start:
        return ""
    return readme[start : end + len(END)] + "\n"


def main(argv: list[str]) -> int:
    record = json.loads((Path(argv[0]) if argv else RECORD).read_text())
    text = README.read_text()
    old = section(text)
    if not old:
        print(f"{README}: no {BEGIN!r} ... {END!r} section", file=sys.stderr)
        return 2
    README.write_text(text.replace(old, render(record)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
