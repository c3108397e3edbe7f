"""The engines' own registries (engines/*/data/registry.json, generated from the wheels by
scripts/engine_registries.py): the data against facts the convention table recorded by hand, `check` decided on
every family x release read, and the scanner itself on small engine-shaped trees."""

from __future__ import annotations

import json

import pytest
from packaging.version import Version

from eaglewire.engines import registries
from eaglewire.engines.table import rows_for
from eaglewire.formats import read_drafter
from eaglewire.jobs.check import check
from eaglewire.jobs.coverage import generic_run
from eaglewire.rules.taps import EngineSpec, Rule
from eaglewire.taps import Wiring
from eaglewire.targets import FAMILIES, TargetInfo
from tools import registry_scan

from fixtures import llama_fields

ENGINES = ("sglang", "vllm")
READ = {e: registry_scan.releases_read(e) for e in ENGINES}  # tap rows read, and vLLM releases observed
FAMILY_ARCHS = sorted(
    (arch, family, sorted(fam.model_types)[0])
    for family, fam in FAMILIES.items()
    for arch in fam.architectures
)


def served(engine: str, version: str, arch: str, model_type: str = "") -> bool:
    answer = registries.lookup(engine, version, arch, model_type)
    assert answer is not None, f"{engine} {version} not read"
    return answer.serves


# ---- the data: generated from every release read -----------------------------------------------------------


@pytest.mark.parametrize("engine", ENGINES)
def test_every_release_read_is_in_the_data_with_its_sources(engine):
    assert registries.releases(engine) == READ[engine]
    for version, rel in registries.data(engine)["releases"].items():
        assert rel["version"] == version
        assert rel["registry"]["size"] > 50, f"{engine} {version}: registry not read"
        for arch, entry in rel["eagle3"].items():
            assert entry["file"].startswith(f"{engine}/") and ":" in entry["file"], (arch, entry)
            assert entry["eagle3"].startswith(f"{engine}/"), (arch, entry)


def test_vllm_has_no_eagle3_before_0_8_5_and_a_model_type_gate_until_0_22():
    """The gate ('Eagle3 is only supported for ... models'): config.py from 0.8.5, config/speculative.py later,
    renamed aux_hidden_states_supported at 0.17 (the table read it as gone there), gone at 0.22."""
    for version in READ["vllm"]:
        rel = registries.data("vllm")["releases"][version]
        if Version(version) < Version("0.8.5"):
            assert registries.targets("vllm", version) == ()
            continue
        assert "LlamaForCausalLM" in rel["eagle3"]
        gate = rel["gate"]
        if Version(version) < Version("0.22.0"):
            assert gate is not None and "llama" in gate["model_types"], version
            assert ("qwen" in gate["model_types"]) == (Version(version) >= Version("0.10.1")), version
            assert ("deepseek_v3" in gate["model_types"]) == (Version(version) >= Version("0.18.0")), version
        else:
            assert gate is None, version
    # the gate is what refuses Mistral until 0.22 (the class has the interface from 0.8.5)
    for version in ("0.10.0", "0.16.0", "0.17.0", "0.21.0"):
        answer = registries.lookup("vllm", version, "MistralForCausalLM", "mistral")
        assert not answer.serves and "gate" in answer.reason and "config" in answer.source
    assert served("vllm", "0.10.0", "LlamaForCausalLM", "llama")
    assert served("vllm", "0.22.0", "MistralForCausalLM", "mistral")


def test_a_class_the_model_registry_lacks_is_refused_by_the_registry_before_the_gate():
    """vLLM builds its model config (the registry lookup) before the speculative config and its gate (the 0.10.2
    CPU engine record: Kimi-K2 and MiniMax-M2 stop in ModelConfig). Where a release's model-code record saw its
    registry refuse the class, that refusal is named first; where the class ran there, the gate alone; where no
    record ran it, both are named as possible."""
    kimi = registries.lookup("vllm", "0.14.1", "KimiK25ForConditionalGeneration", "kimi_k25")
    assert not kimi.serves and kimi.reason.index("model registry") < kimi.reason.index("gate")
    assert "vllm-0.14.1-model-code.json" in kimi.source
    assert registries.registry_refused(
        "vllm", "0.14.1.post2", "KimiK25ForConditionalGeneration"
    )  # its base's
    ds = registries.lookup("vllm", "0.14.1", "DeepseekV3ForCausalLM", "deepseek_v3")
    assert registries.registry_refused("vllm", "0.14.1", "DeepseekV3ForCausalLM") is False
    assert not ds.serves and "gate" in ds.reason and "registry" not in ds.reason
    unknown = registries.lookup("vllm", "0.14.1", "NoSuchForCausalLM", "no_such")
    assert registries.registry_refused("vllm", "0.14.1", "NoSuchForCausalLM") is None
    assert "gate" in unknown.reason and "where its model registry does not list it at all" in unknown.reason


@pytest.mark.parametrize("version", ["0.17.0", "0.20.0", "0.21.0"])
def test_the_gate_refuses_on_either_runner(drafter, version):
    """The gate is the engine's config check, before any runner: a launch on Model Runner V2
    (VLLM_USE_V2_MODEL_RUNNER=1) is refused as V1's is, and check says so instead of finding no MRV2 row."""
    target = TargetInfo(
        "MistralForCausalLM", "MistralForCausalLM", "mistral", "mistral", 32, 4096, 32768, source="t"
    )
    for runner in ("v1", "mrv2"):
        (v,) = check(drafter, target, [f"vllm=={version}"], Wiring.of([2, 16, 29]), runner=runner).verdicts
        assert (
            v.status == "fails"
            and "gate" in v.served.failure
            and v.row_key.endswith("-mrv2" if runner == "mrv2" else "<0.22.0")
        ), (version, runner, v.row_key)


def test_qwen2_vl_is_not_eagle3_in_either_engine_and_glm45_moe_not_in_vllm():
    for engine in ENGINES:
        for version in READ[engine]:
            assert not served(engine, version, "Qwen2VLForConditionalGeneration", "qwen2_vl")
    for version in READ["vllm"]:
        assert not served("vllm", version, "Glm4MoeForCausalLM", "glm4_moe")
    assert served("sglang", "0.5.5", "Glm4MoeForCausalLM") and not served(
        "sglang", "0.5.4", "Glm4MoeForCausalLM"
    )


def test_draft_models_the_registries_list_are_not_targets():
    """The registries list draft architectures beside targets (vLLM's P-EAGLE `Peagle*` heads in its speculative
    models, SGLang's Gemma-4 `*AssistantForCausalLM` MTP drafters, DFlash draft models): none is a target a drafter
    is served beside, so no record runs one as such."""
    drafts = ("PeagleQwen3ForCausalLM", "PeagleLlamaForCausalLM", "Gemma4AssistantForCausalLM",
              "Gemma4UnifiedAssistantForCausalLM", "DFlashDraftModel", "Eagle3LlamaForCausalLM")  # fmt: skip
    for engine in ENGINES:
        for version in READ[engine]:
            assert not set(drafts) & set(registries.targets(engine, version)), (engine, version)
    assert "Gemma4ForConditionalGeneration" in registries.targets("sglang", "0.5.23")
    assert "Qwen3ForCausalLM" in registries.targets("vllm", "0.33.0")


def test_the_mtp_rows_follow_each_release_list():
    """The flag rows for MTP/NextN targets are built from the wheels' own lists (data/registry.json): grouped into
    version ranges, every release read answers with exactly its own list."""
    from packaging.specifiers import SpecifierSet

    from eaglewire.engines.sglang.flags import MTP_TARGETS
    from eaglewire.engines.vllm.methods import MTP_TYPES

    for version in READ["sglang"]:
        rows = [archs for spec, archs in MTP_TARGETS if Version(version) in SpecifierSet(spec)]
        found = set(registries.nextn_targets(version) or ())
        assert set(rows[0] if rows else ()) == found, version
    assert set(registries.mtp_model_types(max(READ["vllm"], key=Version))) == MTP_TYPES  # the newest list


def _table_says(engine: str, version: str, family: str) -> bool | None:
    """True: the table serves EAGLE-3 for the family here; False: an UNSUPPORTED row; None: no row read there."""
    rows = [
        m
        for m in rows_for(EngineSpec(engine, Version(version)), family)
        if m.exact and m.model_known and m.row.role == "serve" and version in m.row.checked
    ]
    if not rows:
        return None
    return any(m.row.rule is not Rule.UNSUPPORTED for m in rows)


@pytest.mark.parametrize("engine", ENGINES)
def test_the_registry_agrees_with_every_row_the_table_read(engine):
    """Where the table read a family at a release and serves it, the engine's registry serves the architecture too.
    Where the table refuses and the registry serves (rows read for a wrapper, a text-only class beside it),
    `rows_for` gives the architecture no row of its own, so `check` does not report the table's refusal."""
    wrong, finer = [], []
    for version in READ[engine]:
        for arch, family, model_type in FAMILY_ARCHS:
            table = _table_says(engine, version, family)
            if table is None or served(engine, version, arch, model_type) == table:
                continue
            if table:
                wrong.append(f"{engine} {version} {arch}: table serves, the registry refuses")
                continue
            matches = rows_for(EngineSpec(engine, Version(version)), family, arch, model_type)
            if any(m.row.refused_at == "capture" for m in matches):
                continue  # the class takes the ids (the registry's interface) but captures none: model code, executed
            finer.append(f"{engine} {version} {arch}")
            assert not any(m.model_known for m in matches), f"{engine} {version} {arch}: the family's refusal"
            assert all(m.basis and "rows refuse it" in m.basis for m in matches)
    assert not wrong, f"{len(wrong)}: {wrong[:8]}"
    # the exceptions stay exceptions: few architectures (each may span many releases)
    assert len({f.split()[-1] for f in finer}) < 3, finer


# ---- check: decided on every family x release read ---------------------------------------------------------


@pytest.fixture(scope="module")
def drafter(tmp_path_factory):
    path = tmp_path_factory.mktemp("drafter")
    config = {**llama_fields(4096, 128256), "architectures": ["LlamaForCausalLMEagle3"], "draft_vocab_size": 32000,
              "target_hidden_size": 4096, "eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 15, 28]}}  # fmt: skip
    (path / "config.json").write_text(json.dumps(config))
    return read_drafter(path, weights="lazy")


def _target(arch: str, family: str, model_type: str) -> TargetInfo:
    return TargetInfo(arch, arch, model_type, family, 32, 4096, 128256, source="test")


@pytest.mark.parametrize("engine", ENGINES)
def test_check_decides_every_family_at_every_release_read_or_names_the_missing_fact(engine, drafter):
    counts: dict[str, int] = {}
    for version in READ[engine]:
        for arch, family, model_type in FAMILY_ARCHS:
            rep = check(
                drafter, _target(arch, family, model_type), [f"{engine}=={version}"], Wiring.of([2, 16, 29])
            )
            for v in rep.verdicts:
                counts[v.status] = counts.get(v.status, 0) + 1
                assert v.status in ("ok", "mismatch", "fails", "unverified"), (arch, version, v.status)
                if v.status == "unverified":
                    assert v.unknowns, f"{engine} {version} {arch}: unverified naming nothing"
                refusal = registries.refusal(engine, version, arch, model_type)
                if refusal is not None:
                    assert v.status == "fails", (arch, version)
    assert counts.get("fails", 0) > 0 and counts.get("ok", 0) > 0, counts


def test_a_refusal_is_fails_naming_the_release_list(drafter):
    rep = check(
        drafter,
        _target("Glm4MoeForCausalLM", "glm4_moe", "glm4_moe"),
        ["vllm==0.33.0"],
        Wiring.of([2, 16, 29]),
    )
    assert {v.status for v in rep.verdicts} == {"fails"}
    msg = rep.verdicts[0].served.failure
    assert "vLLM 0.33.0 does not serve Glm4MoeForCausalLM" in msg and "LlamaForCausalLM" in msg
    assert "and" in msg and "more" in msg  # shortened
    assert msg.endswith("[vllm/model_executor/models/registry.py _VLLM_MODELS]")  # the wheel's source
    # before its EAGLE-3 interface: refused, and before the table's first row (0.8.5) too
    for arch, family, model_type, spec in (
        ("Qwen3ForCausalLM", "qwen3", "qwen3", "sglang==0.4.5"),  # no qwen3.py before 0.4.6
        ("LlamaForCausalLM", "llama", "llama", "vllm==0.8.4"),
    ):
        rep = check(drafter, _target(arch, family, model_type), [spec], Wiring.of([2, 16, 29]))
        assert {v.status for v in rep.verdicts} == {"fails"}, (spec, [v.unknowns for v in rep.verdicts])


def _unknown_served(engine: str, version: str, capture: str, ran: bool | None = None) -> str:
    """An architecture the table does not list that the release serves with `capture`; `ran`: one whose capture
    the release's model-code record ran (True) or did not (False)."""
    known = {a for fam in FAMILIES.values() for a in fam.architectures}
    rel = registries.data(engine)["releases"][version]
    return next(
        a
        for a in registries.targets(engine, version)
        if a not in known and rel["eagle3"][a]["capture"] == capture
        and (ran is None or (generic_run(engine, version, a, None) is not None) == ran)
    )  # fmt: skip


def test_an_architecture_the_table_does_not_list_is_decided_only_where_the_capture_is_known(drafter):
    arch = _unknown_served("vllm", "0.33.0", "mixin")
    rep = check(drafter, _target(arch, "generic", "x"), ["vllm==0.33.0"], Wiring.of([2, 16, 29]))
    # decided on both runners: V1 reads the nested ids (h1,h15,h28), MRV2 never does (its default h2,h16,h29);
    # the platform is not given, so the CUDA default (MRV2) is assumed and V1 is the alternative it names
    (v,) = rep.verdicts
    assert (v.engine, v.status) == ("vllm==0.33.0 mrv2", "ok")
    assert [(a.engine, a.status) for a in v.alternatives] == [("vllm==0.33.0 v1", "mismatch")]
    assert any("CUDA assumed" in a for a in v.assumptions)
    (cpu,) = check(drafter, _target(arch, "generic", "x"), ["vllm==0.33.0"], Wiring.of([2, 16, 29]),
                   platform="cpu").verdicts  # fmt: skip
    assert (cpu.engine, cpu.status) == ("vllm==0.33.0 v1", "mismatch")
    assert any(
        f.code == "engine-registry" and "EagleModelMixin" in f.message for f in rep.verdicts[0].findings
    )
    # SGLang: every model file has its own capture code: served, its taps not known unless its record ran it
    arch = _unknown_served("sglang", "0.5.23", "own", ran=False)
    rep = check(drafter, _target(arch, "generic", "x"), ["sglang==0.5.23"], Wiring.of([2, 16, 29]))
    assert {v.status for v in rep.verdicts} == {"unverified"}
    assert any("capture code of its own" in u and "--search" in u for u in rep.verdicts[0].unknowns)
    # an architecture neither registry has: fails on both
    rep = check(drafter, _target("NoSuchForCausalLM", "generic", "x"), ["sglang==0.5.23", "vllm==0.33.0"],
                Wiring.of([2, 16, 29]))  # fmt: skip
    assert {v.status for v in rep.verdicts} == {"fails"}
    # a release not read: the registry says nothing
    assert registries.lookup("vllm", "0.35.0", "LlamaForCausalLM") is None


# ---- the scanner on engine-shaped trees --------------------------------------------------------------------

SG_TREE = {
    "sglang/srt/models/llama.py": (
        "import torch\n"
        "class LlamaForCausalLM(torch.nn.Module):\n"
        "    def set_eagle3_layers_to_capture(self, ids=None):\n"
        "        self.model.layers_to_capture = ids\n"
        "EntryClass = LlamaForCausalLM\n"
    ),
    "sglang/srt/models/mistral.py": (
        "from sglang.srt.models.llama import LlamaForCausalLM\n"
        "from .llama import LlamaForCausalLM as Base\n"
        "class MistralForCausalLM(Base):\n    pass\n"
        "class PlainForCausalLM:\n    pass\n"
        "class RaisingForCausalLM(LlamaForCausalLM):\n"
        "    def set_eagle3_layers_to_capture(self, ids=None):\n"
        "        '''no'''\n        raise NotImplementedError\n"
        "EntryClass = [MistralForCausalLM, PlainForCausalLM, RaisingForCausalLM]\n"
    ),
    "sglang/srt/server_args.py": (
        "def f(a):\n    if arch in ['DeepseekV3ForCausalLM', 'XForCausalLM']:\n"
        "        a.speculative_draft_model_path = a.model_path\n"
    ),
}
VL_TREE = {
    "vllm/model_executor/models/registry.py": (
        "_TEXT = {\n 'LlamaForCausalLM': ('llama', 'LlamaForCausalLM'),\n 'PlainForCausalLM': ('llama', 'Plain'),\n"
        " 'DsForCausalLM': ('vllm.models.ds', 'DsForCausalLM'),\n}\n_VLLM_MODELS = {**_TEXT}\n"
    ),
    "vllm/model_executor/models/interfaces.py": (
        "from typing import Protocol\nclass EagleModelMixin:\n    pass\n"
        "class SupportsEagle3(Protocol):\n    supports_eagle3 = True\n"
        "    def set_aux_hidden_state_layers(self, layers):\n        pass\n"
        "    def get_eagle3_aux_hidden_state_layers(self):\n        pass\n"
    ),
    "vllm/model_executor/models/llama.py": (
        "from .interfaces import EagleModelMixin, SupportsEagle3\n"
        "class LlamaModel(EagleModelMixin):\n    def forward(self):\n"
        "        self._maybe_add_hidden_state(aux, self.start_layer, h, r)\n"
        "        for idx, layer in enumerate(self.layers):\n"
        "            self._maybe_add_hidden_state(aux, idx + 1, h, r)\n"
        "class LlamaForCausalLM(SupportsEagle3):\n    def __init__(self):\n        self.model = LlamaModel()\n"
        "class Plain:\n    pass\n"
    ),
    "vllm/models/ds/__init__.py": (
        "from vllm.platforms import current_platform\nif current_platform.is_cuda():\n"
        "    from .nvidia import DsForCausalLM\nelse:\n    from .cpu import DsForCausalLM\n"
    ),
    "vllm/models/ds/nvidia.py": (
        "from vllm.model_executor.models import interfaces\n"
        "class DsForCausalLM(interfaces.SupportsEagle3):\n"
        "    def set_aux_hidden_state_layers(self, layers):\n        self.model.aux = layers\n"
    ),
    "vllm/models/ds/cpu.py": "class DsForCausalLM:\n    pass\n",
    "vllm/v1/worker/gpu_model_runner.py": "if not supports_eagle3(self.get_model()):\n    raise RuntimeError\n",
    "vllm/config/speculative.py": (
        "MTPModelTypes = Literal['deepseek_mtp', 'mtp']\n"
        "class SpeculativeConfig:\n    def _verify_args(self):\n"
        "        eagle3_target_supported = ['llama', 'qwen']\n"
        "        if self.method == 'eagle3' and not any(m in self.target_model_config.hf_text_config.model_type "
        "for m in eagle3_target_supported):\n"
        "            raise ValueError('Eagle3 is only supported for Llama/Qwen models.')\n"
    ),
}


def test_the_sglang_scanner_follows_imports_and_bases():
    out = registry_scan.scan("sglang", "9.9", SG_TREE)
    assert set(out["eagle3"]) == {"LlamaForCausalLM", "MistralForCausalLM"}
    assert out["eagle3"]["MistralForCausalLM"]["eagle3"] == (
        "sglang/srt/models/llama.py:3 LlamaForCausalLM.set_eagle3_layers_to_capture"
    )
    assert out["eagle3_raises"] == {"RaisingForCausalLM": "sglang/srt/models/mistral.py:8"}
    assert out["registry"]["size"] == 4
    assert out["nextn"]["architectures"] == ["DeepseekV3ForCausalLM", "XForCausalLM"]


def test_the_vllm_scanner_reads_the_protocol_the_gate_and_the_cuda_branch():
    out = registry_scan.scan("vllm", "9.9", VL_TREE)
    assert set(out["eagle3"]) == {"LlamaForCausalLM", "DsForCausalLM"}
    assert out["eagle3"]["LlamaForCausalLM"]["capture"] == "mixin"
    assert out["eagle3"]["DsForCausalLM"]["capture"] == "own"
    # the decoder it builds decides: one that is no EagleModelMixin (or that cannot be told) is not claimed
    tree = dict(VL_TREE)
    tree["vllm/model_executor/models/llama.py"] += (
        "class Other:\n    pass\nclass Wrapped(LlamaForCausalLM):\n"
        "    def __init__(self):\n        self.model = Other()\n"
    )
    tree["vllm/model_executor/models/registry.py"] = tree["vllm/model_executor/models/registry.py"].replace(
        "}\n_VLLM", " 'WrappedForCausalLM': ('llama', 'Wrapped'),\n}\n_VLLM"
    )
    assert registry_scan.scan("vllm", "9.9", tree)["eagle3"]["WrappedForCausalLM"]["capture"] == "own"
    assert out["eagle3"]["DsForCausalLM"]["file"] == "vllm/models/ds/nvidia.py:2"
    # a package that tests for ROCm first (vLLM's deepseek_v4 from 0.25.0, whose amd/ class had no EAGLE-3 then):
    # the branch a CUDA server takes, not the first
    rocm_first = dict(VL_TREE)
    rocm_first["vllm/models/ds/__init__.py"] = (
        "from typing import TYPE_CHECKING\nfrom vllm.platforms import current_platform\n"
        "if current_platform.is_rocm():\n    from .cpu import DsForCausalLM\n"
        "elif TYPE_CHECKING or not current_platform.is_xpu():\n    from .nvidia import DsForCausalLM\n"
    )
    assert registry_scan.scan("vllm", "9.9", rocm_first)["eagle3"]["DsForCausalLM"]["file"] == (
        "vllm/models/ds/nvidia.py:2"
    )
    assert out["gate"]["model_types"] == ["llama", "qwen"]
    assert out["runner"]["check"] == "protocol"
    assert out["mtp"]["model_types"] == ["deepseek_mtp", "mtp"]
