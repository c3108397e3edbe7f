"""docs/coverage.md: which cells of the convention table were read at source and which are assumed, built from
the rows themselves (`make docs` rewrites it; a test keeps it in sync)."""

from __future__ import annotations

from eaglewire.engines.observed import observed_for
from eaglewire.engines.table import ROWS
from eaglewire.rules.taps import _is_version

HEAD = """# What eaglewire knows, and what it assumes

Built from the convention table (`src/eaglewire/engines/`) by `make docs`; do not edit by hand.

A verdict is `ok` only when its row was read at source for the engine version asked (between the oldest and newest
release read, bracketed by identical code) and the target family is in the engine's table. Versions outside a
row's read range, rows read only in repository snapshots (no release), and families not listed are applied as
**assumed**, and the verdict is `unverified`. Facts and sources: docs/conventions.md.

Evidence levels, strongest first: **observed** (a running engine served the zoo target over a matrix of id
variants and captured exactly the taps the row predicts, or failed where it says: tests/real_engine, the record in
`src/eaglewire/engines/<engine>/data/observed/`), **verified** (read at source in the releases listed), **assumed**.
"""


def markdown() -> str:
    lines = [HEAD]
    for framework in dict.fromkeys(r.framework for r in ROWS):
        lines += [
            f"## {framework}",
            "",
            "| row | versions | model files | rule | read at | status |",
            "|---|---|---|---|---|---|",
        ]
        for r in (r for r in ROWS if r.framework == framework):
            read = [v for v in r.checked if _is_version(v)]
            if r.verified_all:
                status = "verified (one snapshot covers the row)"
            elif read:
                bounded = "<" in r.versions or r.versions.startswith("==")
                status = f"verified {read[0]}..{read[-1]}" + ("" if bounded else "; newer assumed")
            else:
                status = "assumed (no release read)"
            seen = observed_for(r)
            if seen:
                o = seen[0]
                status = (
                    f"observed running ({o.framework} {o.version} {o.platform} build, {o.runner} runner: "
                    f"{o.variants} id variants, {o.failures} failing as predicted); {status}"
                )
            runner = f" ({r.runner})" if r.runner else ""
            rule = (r.unsupported and "no EAGLE-3") or r.rule.value
            lines.append(
                f"| {r.key}{runner} | `{r.versions or 'any'}` | {', '.join(r.models)} | {rule} | "
                f"{', '.join(r.checked[:3])}{' ...' if len(r.checked) > 3 else ''} | {status} |"
            )
        lines.append("")
    return "\n".join(lines)
