"""docs/sglang-engine.md from the SGLang tier's JSON records, eaglewire's predictions as the tier recorded them
(numbers and sentences computed, never typed; bf16, so the page does not depend on the CPU that renders it).

    python tests/sglang_engine/summary.py > docs/sglang-engine.md
    python tests/sglang_engine/summary.py --readme      # the README's section on the case in SGLang

The records: tests/sglang_engine/records/sglang-0.5.23-cpu-{accept,trees,probe}.json and the id matrix
src/eaglewire/engines/sglang/data/observed/sglang-0.5.23-cpu.json (copies of what `make test-sglang` writes to
sglang-results/). `make test` recomputes the walk the same way (tests/test_sglang_replay.py: within a bf16
bound of the recorded prediction) and checks that this page is the records rendered.
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RECORDS = ROOT / "tests" / "sglang_engine" / "records"
IDS = ROOT / "src" / "eaglewire" / "engines" / "sglang" / "data" / "observed" / "sglang-0.5.23-cpu.json"

# Where SGLang 0.5.23's CPU path differs from its CUDA path (paths under sglang/srt/ of the 0.5.23 wheel; the
# harness venv holds it): what the CPU observation speaks for, and what it cannot.
CPU_ONLY = [
    ("taps", "speaks for every platform",
     "the draft's `eagle_config` ids are read in `model_executor/model_runner_components/spec_aux_hidden_state.py`"
     " (:188-192) and turned into capture layers by the model class (`models/llama.py:929` "
     "`set_eagle3_layers_to_capture`, called from `attention_backend_setup.py:61`): code no device branch touches"),
    ("refusals and their stage", "speak for every platform where the same check runs at load",
     "config reading and the fc's shape are device-independent; a failure inside an attention kernel is not"),
    ("the flag rules", "speak for every platform except the CPU-only overrides",
     "on the CPU SGLang turns overlap scheduling off for EAGLE (`arg_groups/speculative_hook.py:66-77`, called at "
     ":1096) and captures no CUDA graph (`speculative/eagle_worker_v2.py:481`); the draft-token adjustment for "
     "top-k 1 (`arg_groups/speculative_hook.py:1255-1266`) is the same code on every device"),
    ("accept length", "speaks for the CPU kernels only",
     "attention runs through the `intel_amx` CPU kernels (CUDA: flashinfer/fa3/triton), the tree mask has a CPU "
     "mode (`speculative/eagle_utils.py:135`, QLEN_ONLY instead of FULL_MASK), and the tree build and verify ops are the CPU `sgl_kernel` ones: bf16 "
     "rounding differs, so near-tie tokens can differ on a GPU; the walk's agreement holds where the arithmetic "
     "is alike, not to the integer"),
]  # fmt: skip


def _fmt(xs: list[float | None]) -> str:
    return " / ".join("?" if x is None else f"{x:.3f}" for x in xs)


def _wrap(line: str) -> list[str]:
    return textwrap.wrap(line, 115, break_on_hyphens=False, break_long_words=False) or [""]


def _probe_section(probe: dict) -> list[str]:
    lines = [
        "## The case in its own engine: `eaglewire probe --launch` on live SGLang servers",
        "",
        f"Each row is one `eaglewire probe --launch -- python -m sglang.launch_server ...` run ({probe['server']}): "
        f"{probe['workload']['prompts']} requests of {probe['workload']['prompt_len']} prompt tokens and "
        f"{probe['workload']['new_tokens']} new tokens; the measured accept length is SGLang's own per-request "
        "counters over the probe's window (bonus token included), the platform is what the server says; the "
        "prediction is the walk under the taps eaglewire says SGLang feeds and under the trained taps.",
        "",
        "| case | K | diagnosis (exit) | measured (95% CI) | predicted, served taps | predicted, trained taps "
        "| SGLang said besides |",
        "|---|---|---|---|---|---|---|",
    ]  # fmt: skip
    said_by = [c.get("engine_said") or [] for c in probe["cases"]]
    common = [s for s in said_by[0] if all(s in other for other in said_by)] if said_by else []
    for c in probe["cases"]:
        k = c["k"]
        m = c["measured"]
        served = "; ".join(f"{p['accept_length'].get(str(k)):.3f} ({p['taps']})" for p in c["predicted"]
                           if p["served"] and p["accept_length"].get(str(k)) is not None)  # fmt: skip
        trained = "; ".join(f"{p['accept_length'].get(str(k)):.3f} ({p['taps']})" for p in c["predicted"]
                            if p["trained"] and p["accept_length"].get(str(k)) is not None)  # fmt: skip
        ci = "-".join(f"{x:.3f}" for x in m["ci95"]) if m["ci95"] else "n/a"
        said = "; ".join(f"`{s}`" for s in c.get("engine_said") or [] if s not in common) or "-"
        lines.append(
            f"| {c['description']} | {k} | {c['diagnosis']} ({c.get('exit_code')}) | {m['accept_length']:.3f} "
            f"({ci}) | {served or '-'} | {trained or '-'} | {said} |"
        )
    diag = {c["case"]: c["diagnosis"] for c in probe["cases"]}
    told = [("Every server said, of its speculative settings: " + "; ".join(f"`{s}`" for s in common) + ".")
            if common else "No line SGLang logged about its speculative settings is common to every server."]  # fmt: skip
    if "custom-taps-no-ids-k3" in diag and "custom-taps-fixed-k3" in diag:
        told.append(
            f"The id-less drafter (the Kimi-K2.5 export) is diagnosed `{diag['custom-taps-no-ids-k3']}`; the copy "
            f"`check --fix-into` wrote for sglang==0.5.23 is diagnosed `{diag['custom-taps-fixed-k3']}`."
        )
    if "default-flag-fault" in diag:
        told.append(f"The case's flags are diagnosed `{diag['default-flag-fault']}`.")
    return [*lines, "", " ".join(told), ""]


def _accept_section(accept: dict, recomputed: dict | None) -> list[str]:
    rows = accept["rows"]
    worst = max(abs(r["error"]) for r in rows)
    lossless = sum(r["lossless_requests"] for r in rows)
    total = accept["prompts"] * len(rows)
    lines = [
        "## Accept length: measured by SGLang vs predicted by the walk (chains)",
        "",
        f"{accept['prompts']} held-out prompts of {accept['prompt_len']} tokens, {accept['new_tokens']} greedy tokens "
        f"each, {accept['dtype']} ({accept['attention_backend']} attention). Convention: {accept['convention']}. "
        f"Bound: {accept.get('tolerance', '2%')}.",
        "",
        "| case | K | SGLang taps | eaglewire taps | measured | predicted | error | 1 + correct/verify (measured / "
        "walk) | verifies (measured / walk) | per position measured | per position predicted | lossless requests |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]  # fmt: skip
    for r in rows:
        taps = ",".join(f"h{t}" for t in r["engine_taps"])
        lines.append(
            f"| {r['case']} | {r['k']} | {taps} | {r['eaglewire_served_taps']} | {r['measured_accept_length']:.3f} | "
            f"{r['predicted_accept_length']:.3f} | {r['error']:+.1%} | {r['measured_accept_length_drafts']:.3f} / "
            f"{r['walk_accept_length']:.3f} | {r['verify_ct']['measured']} / {r['verify_ct']['predicted']} | "
            f"{_fmt(r['measured_per_position'])} | {_fmt(r['predicted_per_position'])} | "
            f"{r['lossless_requests']} of {accept['prompts']} |"
        )
    fp32 = accept.get("float32")
    if fp32:
        lines[2] += (
            f" float32 (the `default` drafter, K = 3): SGLang {'served it' if fp32['stage'] is None else 'failed at ' + fp32['stage']}"
            + (f" (`{fp32['error']}`)" if fp32.get("error") else "") + "."
        )  # fmt: skip
    said = (
        f"Largest error of SGLang's reading: {worst:.1%}. {lossless} of {total} speculative requests produced exactly "
        "SGLang's own greedy output without speculation (bf16: a verify over K+1 tokens and a one-token decode "
        "round differently, so a near-tie can flip)."
    )
    if recomputed is not None:
        same = sum(
            1 for r in rows if recomputed.get(f"{r['case']}/K={r['k']}") == (r["predicted_accept_length"], r["verify_ct"]["predicted"])
        )  # fmt: skip
        said += (
            f" Recomputed from the committed inputs (tests/test_sglang_replay.py): {same} of {len(rows)} "
            "predictions identical to the recorded ones."
        )
    return [*lines, "", said, ""]


def _trees_section(trees: dict) -> list[str]:
    lines = [
        "## Trees (top-k > 1): measured by SGLang vs eaglewire's SGLang tree walk",
        "",
        "| case | tree (steps, top-k, draft tokens) | measured 1 + correct/verify | predicted | error | verifies "
        "| SGLang's completion/verify |",
        "|---|---|---|---|---|---|---|",
    ]  # fmt: skip
    for r in trees["rows"]:
        lines.append(
            f"| {r['case']} | {r['tree']} | {r['measured_accept_length_drafts']:.3f} | {r['predicted_accept_length']:.3f}"
            f" | {r['error']:+.1%} | {r['verify_ct']} | {r['measured_accept_length']:.3f} |"
        )
    return [*lines, ""]


def _ids_section(ids: dict) -> list[str]:
    vs = ids["variants"]
    served = [v for v in vs if v["engine"]["stage"] is None]
    as_said = [
        v
        for v in vs
        if (v["engine"]["stage"] is None and v["eaglewire"]["failure"] is None
            and ",".join(f"h{t}" for t in v["engine"]["captured_taps"]) == v["eaglewire"]["served_taps"])
        or (v["engine"]["stage"] is not None and (v["eaglewire"]["failure"] or v["eaglewire"]["status"] == "fails"))
    ]  # fmt: skip
    lines = [
        "## Which taps SGLang captures, over the id matrix",
        "",
        f"{ids['what']}; {ids['server']}. {len(served)} served, {len(vs) - len(served)} refused; "
        + (
            "every one as eaglewire's table says."
            if len(as_said) == len(vs)
            else f"{len(as_said)} of {len(vs)} as eaglewire's table says."
        )
        + " The taps are read from the running target (`set_eagle3_layers_to_capture`'s argument and the layers "
        "the first forward captured); `make test` replays the record against today's table (tests/test_observed.py)."
        f" Median server start: {ids['median_start_s']} s.",
        "",
        "| variant | top-level ids | eagle_config ids | SGLang: ids set / captured or failure | eaglewire: served "
        "/ failure |",
        "|---|---|---|---|---|",
    ]  # fmt: skip
    for v in vs:
        e, w = v["engine"], v["eaglewire"]
        given = e["set_eagle3_layers_to_capture"]
        got = (
            f"{e['stage']}: {(e['error'] or '')[:120]}"
            if e["stage"]
            else f"{'none (its default)' if given is None else given} / " + ",".join(f"h{t}" for t in e["captured_taps"])
        )  # fmt: skip
        if w["failure"]:
            said = f"fails: {w['failure'][:100]}..."
        elif w["status"] == "fails":  # a finding, not the taps: e.g. a format the engine cannot read
            said = f"fails: {', '.join(w.get('problems') or [])} (taps would be {w['served_taps']})"
        else:
            said = w["served_taps"] or w["status"]
        got, said = got.replace("|", "/"), said.replace("|", "/")
        lines.append(f"| {v['variant']} | {v['top_level_ids']} | {v['eagle_config_ids']} | {got} | {said} |")
    return [*lines, ""]


def _cpu_section() -> list[str]:
    lines = [
        "## What the CPU observation cannot speak for",
        "",
        "SGLang's CPU path differs from its CUDA path; from SGLang 0.5.23's own code, per kind of fact:",
        "",
    ]
    lines += [f"- **{what}** {verdict}: {why}." for what, verdict, why in CPU_ONLY]
    return [*lines, ""]


def render(accept: dict, trees: dict | None, probe: dict | None, ids: dict, recomputed: dict | None) -> str:
    """The page. `recomputed`: "case/K=k" -> (predicted reading, predicted verifies) from the walk run here."""
    run_s = {**accept.get("run_s", {}), **ids.get("run_s", {}), **(trees or {}).get("run_s", {})}
    intro = (
        "Written from the JSON records of the SGLang tier (`make test-sglang`, tests/sglang_engine; "
        "`python tests/sglang_engine/summary.py > docs/sglang-engine.md`) and eaglewire's side recomputed from the "
        f"committed inputs. The engine is `{accept['engine']}` on `{accept['platform']}` through the test harness "
        "../shared/sglang-cpu (SGLang's wheel, its CPU kernels built from source, two small patches: not a "
        "supported SGLang configuration), serving the zoo target with EAGLE-3 drafters. SGLang's CPU attention "
        "kernels have no fp32 path, so every run is bf16; the bounds say why they are what they are."
    )
    lines = ["# SGLang, the case's own engine: what it served against eaglewire's answers", ""]
    lines += [*_wrap(intro), ""]
    if probe:
        lines += _probe_section(probe)
    lines += _accept_section(accept, recomputed)
    if trees:
        lines += _trees_section(trees)
    lines += _ids_section(ids)
    lines += _cpu_section()
    if run_s:
        side = (
            f" (the id matrix {ids['servers_side_by_side']} servers side by side)"
            if ids.get("servers_side_by_side")
            else ""
        )
        lines += ["## Cost", "", f"Wall time of the engine runs, one server per case{side} (s): "
                  + ", ".join(f"{k.split('-')[0]} {v}" for k, v in run_s.items()) + ".", ""]  # fmt: skip
    out = [w for ln in lines for w in (_wrap(ln) if ln and ln[0] not in "|#-" else [ln])]
    return "\n".join(out).rstrip("\n") + "\n"


README_BEGIN = (
    "<!-- sglang-case: rendered from tests/sglang_engine/records/sglang-0.5.23-cpu-*.json by "
    "tests/sglang_engine/summary.py --readme; edit the records, not this -->"
)
README_END = "<!-- /sglang-case -->"


def readme_section(accept: dict, probe: dict, ids: dict) -> str:
    """The README's section on the case in SGLang: the probe runs, one line each, and the tier's headline."""
    lines = [README_BEGIN, *_probe_section(probe)[2:]]
    rows = accept["rows"]
    worst = max(abs(r["error"]) for r in rows)
    vs = ids["variants"]
    served = sum(1 for v in vs if v["engine"]["stage"] is None)
    lines += [
        f"Chains (K = {', '.join(str(k) for k in accept.get('ks', []))}, {len(rows) // max(1, len(accept.get('ks', [1])))}"
        f" drafters, {accept['prompts']} prompts x {accept['new_tokens']} tokens, {accept['dtype']}): SGLang's "
        f"accept length within {worst:.1%} of the walk; {len(vs)} id variants, {served} served with the taps `check` "
        f"names and {len(vs) - served} refused where it says they fail. Everything, with what the CPU observation "
        "cannot speak for: docs/sglang-engine.md.",
        README_END,
    ]  # fmt: skip
    return "\n".join(w for ln in lines for w in (_wrap(ln) if ln and ln[0] not in "|<" else [ln])) + "\n"


def load() -> tuple[dict, dict | None, dict | None, dict]:
    def opt(name: str) -> dict | None:
        p = RECORDS / name
        return json.loads(p.read_text()) if p.exists() else None

    return (opt("sglang-0.5.23-cpu-accept.json"), opt("sglang-0.5.23-cpu-trees.json"),
            opt("sglang-0.5.23-cpu-probe.json"), json.loads(IDS.read_text()))  # fmt: skip


def recompute(accept: dict) -> dict:
    """The walk of each row, recomputed here (what tests/test_sglang_replay.py runs)."""
    from real_engine.engine import decode_prompts

    from .cases import own_chain, pairs, walks

    ps = pairs(accept["dtype"])
    items = own_chain(ps["default"].target, decode_prompts(accept["prompt_token_ids"]))
    return readings(accept, {n: walks(ps[n], items) for n in ps})


def readings(accept: dict, walked: dict) -> dict:
    """ "case/K=k" -> (SGLang's reading predicted, verifies predicted) from the walks by drafter (K = 1..max)."""
    from .cases import sglang_reading

    out = {}
    for r in accept["rows"]:
        w = walked[r["case"]][r["k"] - 1]
        out[f"{r['case']}/K={r['k']}"] = (round(sglang_reading(w), 4), w.drafts)
    return out


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "tests"))
    from sglang_engine.summary import load as _load
    from sglang_engine.summary import readme_section as _readme
    from sglang_engine.summary import render as _render

    a, t, p, i = _load()
    if sys.argv[1:] == ["--readme"]:  # rewrite the README's section from the records
        readme = ROOT / "README.md"
        text = readme.read_text()
        head, rest = text.split(README_BEGIN)
        _, tail = rest.split(README_END + "\n")
        readme.write_text(head + _readme(a, p, i) + tail)
    else:
        sys.stdout.write(_render(a, t, p, i, None))  # the recorded predictions: the same page on any CPU
