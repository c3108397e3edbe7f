"""SGLang's CUDA-graph capture call before 0.5.11, executed and decided per platform.

From 0.4.5 to 0.5.10.post1 `CudaGraphRunner.__init__` calls `set_eagle3_layers_to_capture()` with no ids before it
captures, and the model runner makes its own request after the graphs (sglang PR #22836 fixed it in 0.5.11). The
model-code records run every case again as a CUDA launch makes both calls (`platform: cuda`), which covers CUDA
there; the table says what the eager steps then capture (the configured taps, or the union with the default's where
per-layer flags are never cleared) and that graph-replayed steps keep the default. The CPU's graph runner makes no
such call: a CPU launch feeds the configured taps, where `check` used to say the drafter failed.

Real records, the real table, `check` on the zoo drafter, and the probe's reading of the release files on a
package laid out as SGLang's; no mocks.
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import pytest
import sparse_checkpoints as sparse
from packaging.version import Version

from eaglewire import zoo
from eaglewire.engines.observed import records
from eaglewire.engines.table import parse_spec, rows_for
from eaglewire.jobs.check import check
from eaglewire.jobs.coverage import SGLANG_GRAPHS_AS_EAGER, coverage
from eaglewire.rules.taps import after_default_flags, resolve
from eaglewire.taps import Wiring

QWEN3_MOE = {"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "num_hidden_layers": 8,
             "hidden_size": 64, "vocab_size": 300}  # fmt: skip
NESTED = "eagle_config"
KEY = "eagle_aux_hidden_state_layer_ids"
CODE = [r for r in records("model-code") if r["engine"].startswith("sglang==")]
BEFORE = [r for r in CODE if Version(r["engine"].split("==")[1]) < SGLANG_GRAPHS_AS_EAGER]


def _row(release: str, family: str):
    (m,) = [m for m in rows_for(parse_spec(f"sglang=={release}"), family) if m.row.role == "serve"]
    return m.row


def _drafter(tmp_path: Path, ids: list[int]) -> Path:
    out = tmp_path / "drafter"
    src = zoo.drafter_dir("custom-taps")
    out.mkdir()
    for f in src.iterdir():
        (out / f.name).write_bytes(f.read_bytes())
    cfg = json.loads((out / "config.json").read_text())
    cfg[NESTED][KEY] = ids
    (out / "config.json").write_text(json.dumps(cfg))
    return out


def test_the_cuda_graph_row_holds_on_cuda_only():
    row = _row("0.5.10", "llama")
    assert row.ignores_ids and row.ignores_on == "cuda"
    assert row.on("cuda") is row and row.on(None) is row
    cpu = row.on("cpu")
    assert cpu.ignores_ids is None and cpu.key == row.key
    assert _row("0.5.11", "llama").ignores_ids is None


def test_check_decides_the_cuda_graph_mixture_per_platform(tmp_path):
    """ids [0, 3, 5] on the zoo target (L=8): +1 gives h1,h4,h6, the default is h2,h4,h5."""
    drafter, trained = _drafter(tmp_path, [0, 3, 5]), Wiring.parse("h1,h4,h6")
    target = zoo.target_dir()
    (cpu,) = check(drafter, target, ["sglang==0.5.10"], trained, platform="cpu").verdicts
    assert cpu.status == "ok" and str(cpu.served.taps) == "h1,h4,h6", cpu
    (cuda,) = check(drafter, target, ["sglang==0.5.10"], trained, platform="cuda").verdicts
    assert cuda.status == "fails" and "CUDA-graph" in cuda.served.failure and "h2,4,5" in cuda.served.failure
    # no value feeds them on every step; the one that does where the graphs are off (--disable-cuda-graph) is named
    assert cuda.fix.value is None and "eagle_aux_hidden_state_layer_ids = [0, 3, 5] does" in cuda.fix.reason
    (plain,) = check(drafter, target, ["sglang==0.5.10"], trained).verdicts
    assert plain.status == "fails"  # CUDA, as documented; the CPU's answer is named beside it
    assert any("CUDA assumed" in a and "on CPU" in a and "--platform" in a for a in plain.assumptions)
    assert [(a.status, a.engine) for a in plain.alternatives] == [("ok", "sglang==0.5.10 on cpu")]
    (fixed,) = check(drafter, target, ["sglang==0.5.11"], trained).verdicts
    assert fixed.status == "ok" and not fixed.alternatives


def test_the_union_of_flags_the_default_call_left():
    row = _row("0.5.10", "qwen3_moe")
    assert row.graph_union and row.ignores_ids
    n = 32

    def union(ids):
        cfg = {"architectures": ["LlamaForCausalLMEagle3"]}
        if ids is not None:
            cfg[NESTED] = {KEY: ids}
        return after_default_flags(row, cfg, n)

    assert list(union([0, 3, 5]).taps.indices) == [1, 2, 4, 6, 16, 29]
    assert list(union([3, 3, 5]).taps.indices) == [2, 4, 6, 16, 29]
    assert list(union([]).taps.indices) == [2, 16, 29]  # an empty list flags nothing more
    assert list(union(None).taps.indices) == [2, 16, 29]
    assert (
        union([1, 31]).taps is None and "IndexError" in union([1, 31]).failure
    )  # layers[32]: the request raises
    # what the eager steps of a CPU launch capture is the configured list alone
    assert list(resolve(row.on("cpu"), {NESTED: {KEY: [0, 3, 5]}}, n).taps.indices) == [1, 4, 6]


def _cases(rec: dict, arch: str, platform: str | None) -> dict:
    col = {c: i for i, c in enumerate(rec["columns"])}
    return {
        (json.dumps(c[col["ids"]]), c[col["config_key"]]): c[col["forward_taps"]] or c[col["error"]]
        for c in rec["cases"]
        if c[col["arch"]] == arch and c[col["platform"]] == platform
    }


def test_every_release_before_the_fix_ran_its_cases_as_a_cuda_launch():
    """Each record names the calls it found in the release's own files and covers CUDA with the families whose
    cases ran there, the same families it covers on the CPU."""
    assert len(BEFORE) >= 45, [r["file"] for r in BEFORE]
    for rec in BEFORE:
        assert any("cuda_graph_runner.py:" in at for at in rec["cuda_graph_calls"]), rec["file"]
        covers = {c["platform"]: set(c["families"]) for c in rec["covers"]}
        assert covers["cuda"] == covers["cpu"], rec["file"]
        on_cuda = {f["family"] for f in rec["families"] if f.get("platform") == "cuda"}
        refused = {f["family"] for f in rec["families"] if f.get("refused")}
        assert covers["cuda"] <= on_cuda | refused, rec["file"]
    for rec in (r for r in CODE if r not in BEFORE):
        assert "cuda_graph_calls" not in rec and not any(f.get("platform") == "cuda" for f in rec["families"])


def test_flag_models_capture_the_union_on_cuda_and_the_list_on_the_cpu():
    """The table's union claim (read in qwen2_moe.py, once inferred), executed: Qwen3-MoE from 0.5.4.post2 (its
    per-layer flags) and Qwen3-Next from 0.5.9; Llama keeps its list on both."""
    seen = set()
    for rec in BEFORE:
        release = Version(rec["engine"].split("==")[1])
        for arch, flags_from in (("Qwen3MoeForCausalLM", "0.5.4.post2"), ("Qwen3NextForCausalLM", "0.5.9"),
                                 ("LlamaForCausalLM", None)):  # fmt: skip
            cpu, cuda = _cases(rec, arch, None), _cases(rec, arch, "cuda")
            key = (json.dumps([1, 2, 3, 4]), f"{NESTED}.{KEY}")
            if key not in cpu or release < Version("0.4.9"):  # before 0.4.9 no ids are read at all
                continue
            if not isinstance(cpu[key], list):  # refused (not listed, or no capture yet): the same on CUDA
                assert cuda[key] == cpu[key], (rec["file"], arch)
                continue
            assert cpu[key] == [2, 3, 4, 5], (rec["file"], arch, cpu[key])
            union = flags_from is not None and release >= Version(flags_from)
            assert cuda[key] == ([2, 3, 4, 5, 16, 29] if union else [2, 3, 4, 5]), (
                rec["file"],
                arch,
                cuda[key],
            )
            seen.add((arch, union))
    assert seen == {("Qwen3MoeForCausalLM", True), ("Qwen3MoeForCausalLM", False),
                    ("Qwen3NextForCausalLM", True), ("LlamaForCausalLM", False)}  # fmt: skip


def test_no_sglang_cell_is_left_read_where_a_record_ran_the_cuda_launch():
    cells = [c for c in coverage().cells if c.engine == "sglang" and c.platform == "cuda"]
    before = {r["engine"].split("==")[1] for r in BEFORE}
    read = [c for c in cells if c.release in before and c.level == "read"]
    assert not read, read[:5]


SGLANG_FILES = {
    "model_runner.py": """
class ModelRunner:
    def initialize(self):
        self.load_model()
        {first}
        {second}

    def load_model(self):
        pass
""",
    "cuda_graph_runner.py": """
class CudaGraphRunner:
    def __init__(self, model_runner):
        self.model_runner = model_runner
        if model_runner.spec_algorithm.is_eagle3():
            self.model_runner.model.set_eagle3_layers_to_capture()
        self.capture()
""",
}


@pytest.mark.parametrize(
    ("first", "second", "order"),
    [
        ("self.init_device_graphs()", "self.model.set_eagle3_layers_to_capture(ids)", ("graph", "request")),
        ("self.model.set_eagle3_layers_to_capture(ids)", "self.init_cuda_graphs()", ("request", "graph")),
    ],
)
def test_the_probe_reads_the_launch_order_from_the_release_files(tmp_path, monkeypatch, first, second, order):
    """capture_probe._sglang_graph_sequence on a package laid out as SGLang's (syntax trees, nothing imported
    from it but its package folders)."""
    folder = tmp_path / "sglang" / "srt" / "model_executor"
    folder.mkdir(parents=True)
    for pkg in (tmp_path / "sglang", tmp_path / "sglang" / "srt", folder):
        (pkg / "__init__.py").write_text("")
    (folder / "model_runner.py").write_text(
        SGLANG_FILES["model_runner.py"].format(first=first, second=second)
    )
    (folder / "cuda_graph_runner.py").write_text(SGLANG_FILES["cuda_graph_runner.py"])
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [m for m in sys.modules if m == "sglang" or m.startswith("sglang.")]:
        monkeypatch.delitem(sys.modules, name)
    probe = importlib.import_module("engines.capture_probe")
    probe._sglang_graph_sequence.cache_clear()
    try:
        found = probe._sglang_graph_sequence()
        assert found["order"] == order
        assert found["at"].startswith(
            "model_executor/cuda_graph_runner.py:6, model_executor/model_runner.py:"
        )
        (folder / "cuda_graph_runner.py").write_text("class CudaGraphRunner:\n    pass\n")  # 0.5.11: no call
        probe._sglang_graph_sequence.cache_clear()
        assert probe._sglang_graph_sequence() is None
    finally:
        probe._sglang_graph_sequence.cache_clear()


LAUNCH = ["python", "-m", "sglang.launch_server", "--model-path", str(zoo.target_dir()), "--speculative-algorithm",
          "EAGLE3", "--speculative-draft-model-path", "D", "--speculative-num-steps", "3",
          "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4"]  # fmt: skip
RULE = "sglang.cuda_graph_default_taps"


def _drafter_config(ids: list[int] | None) -> dict:
    cfg: dict = {"architectures": ["LlamaForCausalLMEagle3"]}
    if ids is not None:
        cfg[NESTED] = {KEY: ids}
    return cfg


def test_lint_names_the_graph_mixture_and_its_launch_fix():
    from eaglewire.jobs.lint import lint

    report = lint(LAUNCH, engine_version="0.5.10", drafter_config=_drafter_config([0, 3, 5]))
    (change,) = [c for c in report.changes if c.rule == RULE]
    assert change.severity == "problem" and "h2,4,5" in change.message and "h1,h4,h6" in change.message
    assert report.fixed_argv[-1] == "--disable-cuda-graph"
    again = lint(report.fixed_argv, engine_version="0.5.10", drafter_config=_drafter_config([0, 3, 5]))
    assert RULE not in {c.rule for c in again.changes}


@pytest.mark.parametrize(
    ("version", "extra", "ids"),
    [
        ("0.5.10", ["--disable-cuda-graph"], [0, 3, 5]),  # every step eager
        ("0.5.10", ["--device", "cpu"], [0, 3, 5]),  # the CPU's graph runner makes no call
        ("0.5.10", [], [1, 3, 4]),  # the default's taps h2,h4,h5: the graphs feed what the drafter wants
        ("0.5.10", [], None),  # no ids: the default everywhere
        ("0.5.11", [], [0, 3, 5]),  # fixed by PR #22836
        ("0.4.8", [], [0, 3, 5]),  # before 0.4.9 no ids are read at all: check says so, not this row
    ],
)
def test_lint_is_quiet_where_every_step_feeds_the_same_taps(version, extra, ids):
    from eaglewire.jobs.lint import lint

    report = lint([*LAUNCH, *extra], engine_version=version, drafter_config=_drafter_config(ids))
    assert RULE not in {c.rule for c in report.changes}


def test_test_engine_walks_the_taps_the_replayed_steps_feed(tmp_path):
    """`test --engine sglang==0.5.10` (CUDA) walks the default's taps, the ones every verify after the first prefill
    gets; on a CPU the drafter's own; a flag model whose prefill gets more states than the fc takes is refused."""
    from eaglewire.errors import InputError
    from eaglewire.formats import read_drafter
    from eaglewire.jobs.pair import feed_wiring
    from eaglewire.partial import load_partial_target

    ckpt = read_drafter(_drafter(tmp_path, [0, 3, 5]), weights="lazy")
    partial = load_partial_target(zoo.target_dir())
    wiring, basis = feed_wiring(ckpt, partial, engine="sglang==0.5.10", platform="cuda")
    assert str(wiring) == "h2,h4,h5" and "replayed" in basis and "prefill alone h1,h4,h6" in basis
    wiring, basis = feed_wiring(ckpt, partial, engine="sglang==0.5.10")
    assert str(wiring) == "h2,h4,h5" and "CUDA assumed" in basis
    wiring, _ = feed_wiring(ckpt, partial, engine="sglang==0.5.10", platform="cpu")
    assert str(wiring) == "h1,h4,h6"
    wiring, _ = feed_wiring(ckpt, partial, engine="sglang==0.5.11", platform="cuda")
    assert str(wiring) == "h1,h4,h6"
    # a Qwen3-MoE target (per-layer flags): its prefill would get the default's states and the drafter's, five
    # where the draft's fc takes three: refused, with the reason
    t = sparse.target(tmp_path / "qwen", QWEN3_MOE)
    cfg = {"architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama", "hidden_size": 64,
           "intermediate_size": 256, "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 2,
           "vocab_size": 300, "draft_vocab_size": 100, "tie_word_embeddings": False,
           NESTED: {KEY: [0, 3, 5]}}  # fmt: skip
    ckpt = read_drafter(sparse.drafter(tmp_path / "d", cfg, target_hidden=64), weights="lazy")
    with pytest.raises(
        InputError, match=r"prefill gets h1,h2,h4,h5,h6, 5 states where the draft's fc takes 3"
    ):
        feed_wiring(ckpt, load_partial_target(t), engine="sglang==0.5.10", platform="cuda")
    wiring, _ = feed_wiring(ckpt, load_partial_target(t), engine="sglang==0.5.10", platform="cpu")
    assert str(wiring) == "h1,h4,h6"


def test_doctor_walks_what_the_replayed_steps_feed(tmp_path):
    """doctor, SGLang 0.5.10 on CUDA: the verdict fails, and the standalone test walks the default's taps, which the
    replayed steps feed, so the report shows the acceptance a launch measures; on a CPU the drafter's own."""
    from eaglewire.jobs.doctor import DoctorOptions, doctor

    drafter, target = _drafter(tmp_path, [0, 3, 5]), zoo.target_dir()
    opts = dict(data=zoo.held_out_samples, samples=2, new_tokens=16, steps=2, search="never")
    rep = doctor(drafter, target, DoctorOptions(engine="sglang==0.5.10", platform="cuda", **opts))
    assert str(rep.served) == "h2,h4,h5" and "served" in rep.evals
    assert any("replayed steps: h2,h4,h5 (the prefill alone gets h1,h4,h6)" in n for n in rep.notes), (
        rep.notes
    )
    assert any(p.code == "engine-fails" for p in rep.problem_list)
    cpu = doctor(drafter, target, DoctorOptions(engine="sglang==0.5.10", platform="cpu", **opts))
    assert str(cpu.served) == "h1,h4,h6" and not any("replayed" in n for n in cpu.notes)


@pytest.mark.parametrize(
    ("ids", "fires"),
    [([1, 29, 57], False),  # SpecForge's default for L=61: the default's taps h2,h30,h58 there
     ([1, 15, 28], False),  # ... and for L=32
     ([2, 30, 58], True), ([0, 3, 5], True), ([1, 1, 5], True),  # the default of no target
     (None, False), ([], False)],
)  # fmt: skip
def test_lint_decides_from_the_ids_alone_where_the_target_is_not_local(ids, fires):
    """A hub id for the target: the largest id fixes the only L whose default the ids could be, so ids that are
    the default of no target are decided without it."""
    from eaglewire.jobs.lint import lint

    hub = [*LAUNCH[:4], "org/target", *LAUNCH[5:]]
    report = lint(hub, engine_version="0.5.10", drafter_config=_drafter_config(ids))
    assert (RULE in {c.rule for c in report.changes}) == fires
    if fires:
        assert report.fixed_argv[-1] == "--disable-cuda-graph"
