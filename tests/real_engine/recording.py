"""The tier's two records, built from an engine run and eaglewire's side of it: the id matrix (the observed record
under engines/vllm/data/observed/, replayed by tests/test_observed.py) and the accept-length record (under
tests/real_engine/records/, replayed by tests/test_accept_replay.py). Shared by the 0.32.0 tier's tests and by the
release-by-release generator (observe.py), so every release's record has one shape."""

from __future__ import annotations

from pathlib import Path

import torch

from eaglewire import __version__, zoo
from eaglewire.engines.observed import record_variant
from eaglewire.jobs.check import check

from .cases import engine_counters, states_fed, states_named, walk_counters
from .engine import encode_prompts, measured, sha256_json
from .variants import L, Variant

CONVENTION = "accept length includes the bonus token; vLLM 1 + accepted/drafts; eaglewire: the engine's walk"


def cpu_verdict(drafter: Path, engine: str, target: Path | None = None):
    """check's verdict for `engine` on the CPU, on the runner check takes there by default (the ledger's: V1 from 0.9.1,
    V0 before, where the CPU platform did not support V1; a release refusing the target family answers by its
    refusal row, whatever the runner)."""
    (verdict,) = check(drafter, target or zoo.target_dir(), [engine], platform="cpu").verdicts
    return verdict


def model_code_verdict(drafter: Path, engine: str, target: Path | None = None):
    """check's verdict for `engine` on the V1 runner, no platform: the taps the release's code gives where no
    platform failure comes first (a CPU build that cannot speculate ran the same code up to warm-up)."""
    (verdict,) = check(drafter, target or zoo.target_dir(), [engine], runner="v1").verdicts
    return verdict


def model_code_agrees(served, captured: list[int], states: int) -> bool:
    """The forward's taps and state count against the table: the served taps exactly, one state each; or, where
    the table says the drafter's fc gets the wrong number of states, that number."""
    if served.taps is not None and served.failure is None:
        return list(served.taps.indices) == captured and states == len(captured)
    return served.failure is not None and states_named(served.failure) == states


def model_code(drafter: Path, engine: str, res: dict, target: Path | None = None) -> dict | None:
    """Where the engine failed after the target's first forward ran (warm-up: the profile run captured, then the
    CPU build's sampler died), that forward is the release's own model code, executed: the taps it held and the
    number of states it returned, beside the taps the table serves at the release on the V1 runner with no
    platform failure (what the same code gives on a GPU), and whether they agree. None where no forward was seen
    or the case served (the engine's answer is the evidence there)."""
    fwd = res.get("forward")
    if res.get("stage") is None or not fwd or fwd.get("states_returned") is None:
        return None
    verdict = model_code_verdict(drafter, engine, target)
    served = verdict.served
    captured = [i for i in fwd["aux_hidden_state_layers"] if 0 <= i <= served.num_layers]
    n = fwd["states_returned"]
    agree = model_code_agrees(served, captured, n)
    return {"captured_taps": captured, "states_returned": n, "widths": fwd.get("widths"),
            "eaglewire": {"row": served.row.key if served.row else None, "status": verdict.status,
                          "served_taps": str(served.taps) if served.taps is not None else None,
                          "failure": served.failure},
            "agree": agree}  # fmt: skip


def ids_record(engine: str, run: dict[str, dict], built: dict[str, Path], variants: list[Variant], hidden: int,
               prompt_tokens: int) -> tuple[dict, list]:  # fmt: skip
    """The id-matrix record of one run, and the variants where engine and table disagree (taps, stage, or the
    number of aux states reaching the fc)."""
    rows, wrong = [], []
    prov = run["__provenance__"]
    for v in variants:
        res = run[v.name]
        served = cpu_verdict(built[v.name], engine).served
        captured = [i for i in res.get("aux_hidden_state_layers") or [] if 0 <= i <= L]
        row = record_variant(v.name, v.fmt, v.top, v.nested, res, served, captured)
        rows.append(
            row | {"drafter_sha256": prov["inputs"]["drafters"][v.name], "engine_runner": res.get("runner")}
        )
        code = model_code(built[v.name], engine, res)
        if code is not None:
            rows[-1]["model_code"] = code
            if not code["agree"]:
                wrong.append((v.name, "model code captured", code["captured_taps"], code["states_returned"],
                              "eaglewire", code["eaglewire"]))  # fmt: skip
        if res["stage"] is None:
            if served.failure is not None or list(served.taps.indices) != captured:
                wrong.append(
                    (v.name, "engine served", captured, "eaglewire", str(served.taps), served.failure)
                )
        else:
            # the stage, and the count of states reaching the fc where either names one (as tests/test_observed.py
            # replays it: a failure that names no count, such as a load-time TypeError, agrees with one naming none)
            fed = states_fed(res.get("error"), hidden, prompt_tokens)
            if served.failure is None or served.stage != res["stage"] or states_named(served.failure) != fed:
                wrong.append(
                    (v.name, res["stage"], res.get("error"), "eaglewire", served.stage, served.failure)
                )
    record = {"engine": engine, "platform": prov["platform"]["device_type"], "runner": "/".join(prov["runner"]),
              "target_layers": L, "hidden_size": hidden, "prompt_tokens": prompt_tokens,
              "provenance": {"engine": {k: v for k, v in prov.items() if k != "inputs"},
                             "target_sha256": prov["inputs"]["target"],
                             "prompts_sha256": sorted(set(prov["inputs"]["prompts"].values()))},
              "variants": rows}  # fmt: skip
    return record, wrong


def _tokens_sha(res: dict) -> str | None:
    return sha256_json(res["tokens"]) if res.get("tokens") is not None else None


def accept_rows(run: dict[str, dict], predicted: dict[str, dict], ks) -> list[dict]:
    """Per drafter case and K the run holds: the engine's taps and raw counters beside eaglewire's served taps
    and counted walk, the engine's SpecDecoding log lines, the drafter's sha256."""
    rows = []
    plain = run["plain"]["tokens"]
    prov = run["__provenance__"]
    for name, pred in predicted.items():
        for k in ks:
            key = f"{name}/K={k}"
            if key not in run:
                continue
            res = run[key]
            m = measured(res)
            w = pred["walks"]["served"][k - 1]
            rows.append({
                "case": name, "k": k, "engine_taps": res["aux_hidden_state_layers"],
                "eaglewire_served_taps": str(pred["served"]), "trained_taps": str(pred["trained"]),
                "measured_accept_length": round(m["accept_length"], 4), "predicted_accept_length": round(w.tau, 4),
                "predicted_under_trained_taps": round(pred["walks"]["trained"][k - 1].tau, 4),
                "measured_per_position": [round(x, 4) for x in m["per_position"]],
                "predicted_per_position": [round(x, 4) for x in w.per_position],
                "drafts": {"measured": m["drafts"], "predicted": w.drafts}, "lossless": res["tokens"] == plain,
                "engine_counters": engine_counters(res["metrics"]), "predicted_counters": walk_counters(w),
                "engine_runner": res["runner"], "spec_decode_log": res["log"]["spec_decode"],
                "drafter_sha256": prov["inputs"]["drafters"][key], "tokens_sha256": _tokens_sha(res),
            })  # fmt: skip
    return rows


def accept_record(engine: str, run: dict[str, dict], rows: list[dict], ids: list[list[int]], ks, prompt_len: int,
                  new_tokens: int) -> dict:  # fmt: skip
    """The accept-length record: rows, the prompts in full, the inputs by sha256, what the engine reported of
    itself and which eaglewire predicted."""
    prov = run["__provenance__"]
    return {"engine": engine, "platform": prov["platform"]["device_type"], "runner": "/".join(prov["runner"]),
            "prompts": len(ids), "prompt_len": prompt_len, "new_tokens": new_tokens, "dtype": "float32",
            "convention": CONVENTION, "ks": list(ks),
            "provenance": {"engine": {k: v for k, v in prov.items() if k != "inputs"},
                           "eaglewire": {"version": __version__, "torch": torch.__version__},
                           "target_sha256": prov["inputs"]["target"],
                           "prompts_sha256": sha256_json(ids), "plain_tokens_sha256": _tokens_sha(run["plain"]),
                           "engine_log": "each row's spec_decode_log: vLLM's SpecDecoding metrics lines"},
            "prompt_token_ids": encode_prompts(ids), "rows": rows}  # fmt: skip
