"""Runs with the SGLang harness interpreter (never imported by eaglewire): one SGLang server per case, each on
127.0.0.1, bounded in time and stopped by process group whatever happens; writes what each engine did.

    python sglang_side.py SPEC.json OUT.json

SPEC: {"target": DIR, "workdir": DIR, "cases": [{"name", "drafter" (DIR, or null: no speculation), "steps", "topk",
"draft_tokens", "prompts" ([[token ids]]), "max_tokens", optionally "dtype" (default bfloat16), "timeout" (start, s),
"extra_args" ([str]), "must_serve" (true: a failed case is started once more, the first failure kept)}]}. Per case
OUT holds the stage it failed at ("load": the server exited before serving anything; "warm-up": SGLang's own warm-up
request, its first batch, failed; "first request": our /generate failed) with SGLang's message and the log's last
lines, or the requests' outputs and meta_info (completion_tokens, spec_verify_ct, ...); always what
the target captured, read from the running engine (sitecustomize.py in harness/: the ids
`set_eagle3_layers_to_capture` got, the `layers_to_capture` it set, and the layers the first forward's capture loop
took) and the seconds the start took.
Each case's result is also kept in the work folder: a run stopped midway and started again on the same folder
(EAGLEWIRE_SGLANG_CACHE) resumes after the last finished case. Standard library only: the scheduler processes
import SGLang, this process does not.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

try:  # the CPU decides the kernel build (install.sh) and so whether the harness replaces two kernels
    from .cpu import has_avx512
except ImportError:  # run as a script by the harness interpreter
    from cpu import has_avx512

HARNESS = Path(__file__).resolve().with_name("harness")
WARMUP_FAILED = "Initialization failed. warmup error"
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def call(url: str, body: dict | None = None, timeout: float = 5.0) -> tuple[int, str]:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method="GET" if data is None else "POST")
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with _OPENER.open(req, timeout=timeout) as resp:
            return resp.status, resp.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8", "replace") if e.fp else ""
    except (urllib.error.URLError, OSError) as e:
        return 0, repr(e)


def command(target: str, case: dict, port: int) -> list[str]:
    argv = [sys.executable, "-m", "sglang.launch_server", "--model-path", target, "--device", "cpu",
            "--dtype", case.get("dtype", "bfloat16"), "--attention-backend", "intel_amx", "--disable-cuda-graph",
            "--host", "127.0.0.1", "--port", str(port), "--mem-fraction-static", "0.1",
            "--max-total-tokens", str(case.get("max_total_tokens", 8192)), "--random-seed", "0",
            "--log-level", "info"]  # fmt: skip
    if case.get("drafter"):
        argv += ["--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", case["drafter"],
                 "--speculative-num-steps", str(case["steps"]), "--speculative-eagle-topk", str(case["topk"]),
                 "--speculative-num-draft-tokens", str(case["draft_tokens"])]  # fmt: skip
    return argv + list(case.get("extra_args", []))


def last_error(log: str) -> str | None:
    """SGLang's own message: the last exception line of the log (not the Traceback header)."""
    lines = [line.strip() for line in log.splitlines()]
    keys = ("Error", "Exception", "error:")
    found = [ln for ln in lines if any(k in ln for k in keys) and not ln.startswith("Traceback")]
    found = [ln for ln in found if WARMUP_FAILED not in ln] or found
    return found[-1][:600] if found else None


def stage_of(log: str) -> str:
    """Where a server that never became healthy failed: "warm-up" when SGLang's warm-up request failed (its own
    message) or the scheduler died running a batch (the warm-up request is the first batch: its crash kills the
    server before the warm-up thread reports), else "load" (config, model build, weights)."""
    serving = ("in event_loop_normal", "in run_batch")
    return "warm-up" if WARMUP_FAILED in log or any(f in log for f in serving) else "load"


def taps_events(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def stop(proc: subprocess.Popen, grace: float = 2.0) -> None:
    """SIGTERM to the server's process group, SIGKILL after `grace` s, then reap. The results are read by then,
    and SGLang answers a SIGTERM with 5 s of crash diagnostics (its scheduler exits first): not worth waiting for."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        pass
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=10)
    # the scheduler and detokenizer are the group's other members: the next server starts only once they are gone
    # (their memory and ports free), within a bound
    deadline = time.monotonic() + 15
    while _group_running(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.2)


def _group_running(pgid: int) -> bool:
    """Whether a process of group `pgid` still runs: a zombie (an orphan its reaper has not reaped yet) holds no
    memory or port, and signal 0 would count it."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 2 and fields[2] == str(pgid) and fields[0] != "Z":
            return True
    return False


def run_case(target: str, workdir: Path, case: dict, core: int | None = None) -> dict:
    """One server for one case. `core`: the CPU its threads are bound to (SGLANG_CPU_OMP_THREADS_BIND), when
    cases run side by side."""
    name = case["name"].replace("/", "_")
    log_path, taps_path = workdir / f"{name}.log", workdir / f"{name}-taps.jsonl"
    taps_path.unlink(missing_ok=True)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONHOME",)}
    env |= {"SGLANG_USE_CPU_ENGINE": "1", "SGL_TEST_FORCE_AMX": "1", "PYTHONPATH": str(HARNESS),
            "EAGLEWIRE_SGLANG_TAPS_OUT": str(taps_path), "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}  # fmt: skip
    if not has_avx512():
        env["EAGLEWIRE_SGLANG_NO_AVX512"] = "1"
    if core is not None:
        env["SGLANG_CPU_OMP_THREADS_BIND"] = str(core)
    result: dict = {"name": case["name"], "stage": None, "error": None,
                    "kernels": "AVX2: torch linear and extend attention (harness/sitecustomize.py)" if not has_avx512()
                    else "as shipped"}  # fmt: skip
    t0 = time.monotonic()
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(command(target, case, port), env=env, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    pgid_file = workdir / f"{name}.pgid"  # for the caller's cleanup, should this process be killed outright
    pgid_file.write_text(str(proc.pid))
    try:
        deadline = t0 + case.get("timeout", 300)
        while True:
            if proc.poll() is not None:
                text = log_path.read_text(errors="replace")
                result["stage"] = stage_of(text)
                result["error"] = last_error(text) or f"server exited with code {proc.returncode}"
                result["log_tail"] = text.splitlines()[-40:]
                break
            if call(url + "/health", timeout=2)[0] == 200:
                result["start_s"] = round(time.monotonic() - t0, 2)
                break
            if time.monotonic() > deadline:
                result["stage"], result["error"] = "load", f"not healthy after {case.get('timeout', 300)} s"
                result["log_tail"] = log_path.read_text(errors="replace").splitlines()[-40:]
                break
            time.sleep(0.5)
        if result["stage"] is None:
            t1 = time.monotonic()
            body = {"input_ids": case["prompts"], "sampling_params": {
                "temperature": 0.0, "max_new_tokens": case["max_tokens"], "ignore_eos": True}}  # fmt: skip
            status, text = call(url + "/generate", body, timeout=case.get("request_timeout", 1800))
            if status != 200:
                time.sleep(1)  # let the scheduler write its traceback
                log_text = log_path.read_text(errors="replace")
                result["stage"] = "first request"
                result["error"] = last_error(log_text) or f"HTTP {status}: {text[:400]}"
                result["log_tail"] = log_text.splitlines()[-40:]
                result["http"] = {"status": status, "body": text[:1000]}
            else:
                outs = json.loads(text)
                outs = outs if isinstance(outs, list) else [outs]
                result["generate_s"] = round(time.monotonic() - t1, 2)
                result["outputs"] = [{"output_ids": o.get("output_ids"), "meta_info": {
                    k: v for k, v in o["meta_info"].items() if k in (
                        "prompt_tokens", "completion_tokens", "spec_verify_ct", "spec_accept_length",
                        "spec_accept_rate", "spec_accept_token_num", "spec_draft_token_num",
                        "spec_num_correct_drafts", "spec_num_proposed_drafts", "spec_correct_drafts_histogram",
                        "finish_reason")}} for o in outs]  # fmt: skip
                status, text = call(url + "/get_server_info", timeout=10)
                if status == 200:
                    info = json.loads(text)
                    states = info.get("internal_states") or [{}]
                    result["server_info"] = {
                        "avg_spec_accept_length": states[0].get("avg_spec_accept_length"),
                        "speculative_num_steps": info.get("speculative_num_steps"),
                        "speculative_eagle_topk": info.get("speculative_eagle_topk"),
                        "speculative_num_draft_tokens": info.get("speculative_num_draft_tokens"),
                        "attention_backend": info.get("attention_backend"),
                        "dtype": info.get("dtype"),
                    }
    finally:  # the server and everything it started, whatever happened
        stop(proc)
        pgid_file.unlink(missing_ok=True)
    result["taps_events"] = taps_events(taps_path)
    result["wall_s"] = round(time.monotonic() - t0, 2)
    return result


def _on_term(signum, frame):
    raise SystemExit(128 + signum)  # run the finally blocks: the current server is stopped


def main() -> None:
    """Run the spec's cases; with "parallel": N, N servers side by side, each bound to its own core (for cases
    whose outcome is not a timing or a rounding: which taps a server captures, whether it starts)."""
    signal.signal(signal.SIGTERM, _on_term)
    spec = json.loads(Path(sys.argv[1]).read_text())
    workdir = Path(spec["workdir"])
    workdir.mkdir(parents=True, exist_ok=True)
    parallel = max(1, min(int(spec.get("parallel", 1)), os.cpu_count() or 1))
    cores: queue.Queue = queue.Queue()
    for c in range(parallel):
        cores.put(c if parallel > 1 else None)

    def one(case: dict) -> dict:
        done = workdir / f"{case['name'].replace('/', '_')}.result.json"  # a rerun in the same folder resumes
        if done.exists():
            return json.loads(done.read_text())
        core = cores.get()
        try:
            res = run_case(spec["target"], workdir, case, core)
            if res["stage"] is not None and case.get("must_serve"):
                # a case the engine serves (no drafter, or one the tier measures) that failed once is started again:
                # a start that loses a port or memory to the machine says nothing of SGLang's behaviour, and the
                # first failure stays in the result for the report
                first = {k: res.get(k) for k in ("stage", "error", "log_tail")}
                res = run_case(spec["target"], workdir, case, core)
                res["first_attempt"] = first
        finally:
            cores.put(core)
        done.write_text(json.dumps(res))
        print(json.dumps({k: v for k, v in res.items() if k != "outputs"}), flush=True)
        return res

    with concurrent.futures.ThreadPoolExecutor(parallel) as pool:
        results = list(pool.map(one, spec["cases"]))
    Path(sys.argv[2]).write_text(json.dumps(results))


if __name__ == "__main__":
    main()
