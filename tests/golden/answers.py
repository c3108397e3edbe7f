"""Golden answers of the `eaglewire` command line: what `check`, `lint` and `test` answer today, recorded in
answers.json, so that a restructure of the package (modules moved, nothing meant to change) is proved to change no
answer: tests/test_golden.py recomputes `answers()` with the installed code and compares.

Only the public entry point is used (`eaglewire.cli.app.main`, called in-process with an argv list, stdout
captured): module paths change in a restructure, the CLI does not. The launch commands are tests/test_flags.py's
SCENARIOS (imported: a scenario added there adds an answer, regenerate then); the published configs and the id
variants are copied from tests/test_published.py and tests/test_no_traceback.py as they stood. Paths in the output are
replaced by tokens (<zoo-target>, <tmp>, <pkg>, <repo>, ...); the answers carry no timings.

Covered: (a) `check --json` on the zoo drafters and the Kimi-K2.5 example under several engine specs; (b) `lint
--json` over the rule-table launch commands and the Kimi command; (c) `test --json` on both zoo drafters (small
options); (d) the published-pairings table (verdict, served taps, exit code, also under --strict); (e) a
deterministic slice of the no-traceback property (formats x id places x id variants x layer counts x families).

answers.json was recorded at commit ac0d0be of main. Regenerate only when a behaviour change is intended, and say
so in the commit:

    python tests/golden/answers.py --write
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import sys
import tempfile
from pathlib import Path

from eaglewire.cli.app import main

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent
ANSWERS = Path(__file__).with_name("answers.json")
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))
import sparse_checkpoints as sparse  # noqa: E402  (test helper: sparse safetensors of real shapes)

PROBLEM, WARNING, INFO = "problem", "warning", "info"

# (b) launch commands: tests/test_flags.py's rule-table scenarios (argv, lint keywords, rule, severity)
from test_flags import KIMI, SCENARIOS, SPECULATORS_DRAFTER, sizes  # noqa: E402

# --------------------------------------------------------------------------------------------------------------
# (d) published drafter configs on their targets: copied from tests/test_published.py (CASES and the pairings)

LLAMA31_8B = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "num_hidden_layers": 32,
              "hidden_size": 4096, "vocab_size": 128256, "max_position_embeddings": 131072, "rope_theta": 500000.0,
              "rope_scaling": {"rope_type": "llama3", "factor": 8.0}}  # fmt: skip
LLAMA33_70B = LLAMA31_8B | {"num_hidden_layers": 80, "hidden_size": 8192}
SCOUT = {"architectures": ["Llama4ForConditionalGeneration"], "model_type": "llama4",
         "text_config": {"model_type": "llama4_text", "num_hidden_layers": 48, "hidden_size": 5120,
                         "vocab_size": 202048}}  # fmt: skip
QWEN3_235B = {"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "num_hidden_layers": 94,
              "hidden_size": 4096, "vocab_size": 151936, "rope_theta": 1000000.0}  # fmt: skip
QWEN3_06B = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "num_hidden_layers": 28,
             "hidden_size": 1024, "vocab_size": 151936, "rope_theta": 1000000}  # fmt: skip
QWEN3_8B = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "num_hidden_layers": 36,
            "hidden_size": 4096, "vocab_size": 151936, "rope_theta": 1000000}  # fmt: skip
QWEN3_VL_8B = {"architectures": ["Qwen3VLForConditionalGeneration"], "model_type": "qwen3_vl",
               "text_config": {"model_type": "qwen3_vl_text", "num_hidden_layers": 36, "hidden_size": 4096,
                               "vocab_size": 151936}}  # fmt: skip
DEEPSEEK_V3 = {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "num_hidden_layers": 61,
               "hidden_size": 7168, "vocab_size": 129280}  # fmt: skip
KIMI_K25 = {"architectures": ["KimiK25ForConditionalGeneration"], "model_type": "kimi_k25",
            "text_config": {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "kimi_k2",
                            "num_hidden_layers": 61, "hidden_size": 7168, "vocab_size": 163840}}  # fmt: skip
KIMI_K2 = {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "kimi_k2", "num_hidden_layers": 61,
           "hidden_size": 7168, "vocab_size": 163840}  # fmt: skip
GPT_OSS = {"architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss", "num_hidden_layers": 36,
           "hidden_size": 2880, "vocab_size": 201088}  # fmt: skip
GPT_OSS_20B = GPT_OSS | {"num_hidden_layers": 24}
QWEN3_30B = {"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "num_hidden_layers": 48,
             "hidden_size": 2048, "vocab_size": 151936}  # fmt: skip


def eagle3(hidden, inter, heads, kv, vocab, draft=32000, **extra):
    return {"architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama", "hidden_size": hidden,
            "intermediate_size": inter, "num_hidden_layers": 1, "num_attention_heads": heads,
            "num_key_value_heads": kv, "vocab_size": vocab, "draft_vocab_size": draft, "tie_word_embeddings": False,
            **extra}  # fmt: skip


def nested(ids, **more) -> dict:
    return {"eagle_config": {"eagle_aux_hidden_state_layer_ids": ids, "use_aux_hidden_state": True, **more}}


MODELOPT = {"eagle_config": {"use_aux_hidden_state": True, "use_input_layernorm_in_first_layer": True,
                             "use_last_layernorm": True, "use_mtp_layernorm": False, "next_layer_regular": True}}  # fmt: skip


def speculators_conversion(version, ids, hidden, inter, heads, kv, vocab, draft_vocab):
    """A published speculators-format conversion (a Llama-style layer in `transformer_layer_config`)."""
    layer = {"hidden_size": hidden, "intermediate_size": inter, "num_attention_heads": heads,
             "num_key_value_heads": kv, "head_dim": 128, "vocab_size": vocab}  # fmt: skip
    cfg = {"architectures": ["Eagle3Speculator"], "speculators_model_type": "eagle3", "speculators_version": version,
           "draft_vocab_size": draft_vocab, "eagle_aux_hidden_state_layer_ids": ids, "norm_before_residual": False,
           "transformer_layer_config": {"model_type": "llama", "num_hidden_layers": 1, **layer},
           "speculators_config": {"algorithm": "eagle3", "proposal_methods": [{"proposal_type": "greedy",
                                  "speculative_tokens": 3}], "default_proposal_method": "greedy",
                                  "verifier": {"name_or_path": None, "architectures": []}}}  # fmt: skip
    return cfg | layer


SPECULATORS = {"embed": True, "prefix": "layers.0."}
# name: (target config, drafter config, target hidden size, sparse.drafter options)
CASES = {
    "specforge llama3-8B": (LLAMA31_8B, eagle3(4096, 14336, 32, 8, 128256, max_position_embeddings=2048), 4096, {}),
    "specforge llama3-70B": (LLAMA33_70B, eagle3(8192, 28672, 64, 8, 128256, head_dim=128, rope_theta=500000.0,
                             rope_scaling={"rope_type": "llama3", "factor": 8.0}), 8192, {}),
    "specforge llama4-scout": (SCOUT, eagle3(5120, 32768, 40, 8, 202048), 5120, {}),
    "specforge qwen3-8B": (QWEN3_8B, eagle3(4096, 12288, 32, 8, 151936, head_dim=128, rope_theta=1000000), 4096, {}),
    "specforge qwen3-30B-A3B": (QWEN3_30B, eagle3(2048, 12288, 32, 4, 151936, head_dim=128), 2048, {}),
    "specforge qwen3-235B": (QWEN3_235B, eagle3(4096, 24576, 64, 4, 151936, head_dim=128, rope_theta=1000000.0,
                             **nested([1, 46, 90])), 4096, {}),
    "specforge deepseek-v3": (DEEPSEEK_V3, eagle3(7168, 29568, 32, 8, 129280, **nested([1, 29, 57])), 7168, {}),
    "specforge gpt-oss-120b": (GPT_OSS, eagle3(2880, 11520, 32, 8, 201088, **nested([1, 17, 33])), 2880, {}),
    "specforge gpt-oss-20b": (GPT_OSS_20B, eagle3(2880, 11520, 32, 8, 201088, **nested([1, 11, 21])), 2880, {}),
    "specforge qwen3-vl-8b": (QWEN3_VL_8B, eagle3(4096, 12288, 32, 8, 151936, head_dim=128, **nested([3, 17, 32])),
                              4096, {}),
    "specforge kimi-k2.5": (KIMI_K25, eagle3(7168, 18432, 64, 64, 163840, head_dim=128, **nested([2, 30, 58])),
                            7168, {}),
    "specforge qwen3-30B eagle3.1": (QWEN3_30B, eagle3(2048, 12288, 32, 4, 151936, head_dim=128, fc_norm=True,
                                     norm_output=True), 2048, {}),
    "specforge qwen3-30B moe draft": (QWEN3_30B, eagle3(2048, 6144, 32, 4, 151936, head_dim=128, model_type="qwen3_moe",
                                      architectures=["Qwen3MoEForCausalLMEagle3"], **nested([1, 23, 44])), 2048, {}),
    "specforge kimi-k2 nextn": (KIMI_K2, {"architectures": ["DeepseekV3ForCausalLMNextN"], "model_type": "kimi_k2",
                                "hidden_size": 7168, "intermediate_size": 18432, "num_hidden_layers": 1,
                                "num_attention_heads": 64, "num_key_value_heads": 64, "vocab_size": 163840,
                                "tie_word_embeddings": False}, 7168, {}),
    "eagle traineagle3 template": (LLAMA31_8B, {"architectures": ["LlamaForCausalLM"], "model_type": "llama",
                                   "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 1,
                                   "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256,
                                   "draft_vocab_size": 32000, "max_position_embeddings": 2048,
                                   "tie_word_embeddings": False}, 4096, {}),
    "angelslim qwen3-0.6b": (QWEN3_06B, eagle3(1024, 3072, 16, 8, 151936, head_dim=128, tie_word_embeddings=True,
                             architectures=["Eagle3LlamaForCausalLM"], rope_theta=1000000, target_model_type="qwen3"),
                             1024, {}),
    "nvidia llama3.3-70B modelopt export": (LLAMA33_70B, eagle3(8192, 28672, 64, 8, 128256, head_dim=128, **MODELOPT),
                                            8192, {"prefix": "layers.0."}),
    "nvidia gpt-oss-120b eagle3-v3": (GPT_OSS, eagle3(2880, 11520, 32, 8, 201088, **nested([24, 30, 36],
                                      norm_before_fc=True)), 2880, {}),
    "speculators qwen3-235B conversion": (QWEN3_235B, speculators_conversion("0.9.0", [1, 46, 90], 4096, 24576, 64, 4,
                                          151936, 32000), 4096, SPECULATORS),
    "speculators maverick conversion": (SCOUT, speculators_conversion("0.2.0", [1, 23, 44], 5120, 32768, 40, 8,
                                        202048, 202048), 5120, SPECULATORS),
}  # fmt: skip
# (case, engine, further check options): the rows of test_published.PAIRINGS, and the CPU platform of one
PAIRINGS = [
    *[(c, e, ()) for c in ("specforge llama3-8B", "specforge llama3-70B", "specforge llama4-scout",
                           "specforge qwen3-8B", "specforge qwen3-30B-A3B", "specforge qwen3-vl-8b")
      for e in ("sglang==0.5.23", "vllm==0.33.0")],
    *[(c, e, r) for c in ("specforge qwen3-235B", "specforge deepseek-v3", "specforge gpt-oss-120b",
                          "specforge gpt-oss-20b")
      for e, r in (("sglang==0.5.23", ()), ("vllm==0.33.0", ("--runner", "mrv2")), ("vllm==0.33.0", ("--runner", "v1")))],
    *[(c, "sglang==0.5.23", ()) for c in ("specforge kimi-k2.5", "specforge qwen3-30B eagle3.1", "specforge kimi-k2 nextn",
                                          "eagle traineagle3 template", "angelslim qwen3-0.6b")],
    *[(c, "vllm==0.33.0", ()) for c in ("specforge qwen3-30B moe draft", "eagle traineagle3 template",
                                        "angelslim qwen3-0.6b", "nvidia llama3.3-70B modelopt export",
                                        "speculators qwen3-235B conversion", "speculators maverick conversion")],
    ("nvidia gpt-oss-120b eagle3-v3", "sglang==0.5.16", ()),
    ("nvidia gpt-oss-120b eagle3-v3", "sglang==0.5.23", ()),
    ("nvidia gpt-oss-120b eagle3-v3", "vllm==0.33.0", ("--runner", "mrv2")),
    ("nvidia gpt-oss-120b eagle3-v3", "vllm==0.33.0", ("--runner", "v1")),
    ("specforge deepseek-v3", "vllm==0.33.0", ("--platform", "cpu")),
]  # fmt: skip

# --------------------------------------------------------------------------------------------------------------
# (e) a deterministic slice of tests/test_no_traceback.py: drafter formats x id places x id variants x layer
# counts x target families, every case checked on the same engines, cycling through the check options

NT_FORMATS = ("eagle", "speculators", "modelopt")
NT_PLACES = ("nested", "top", "both")
NT_LAYERS = (7, 32, 61)
NT_ENGINES = ("sglang==0.5.23", "sglang==0.5.5", "vllm==0.33.0", "vllm==0.28.0", "trtllm")
NT_OPTIONS = ((), ("--platform", "cpu"), ("--runner", "v1"), ("--strict",))
# family: (architecture, model_type, wrapped in text_config), as tests/test_honest.target_config builds them
NT_FAMILIES = {
    "llama": ("LlamaForCausalLM", "llama", False),
    "qwen3": ("Qwen3ForCausalLM", "qwen3", False),
    "deepseek_v3": ("DeepseekV3ForCausalLM", "deepseek_v3", False),
    "gpt_oss": ("GptOssForCausalLM", "gpt_oss", False),
    "qwen3_vl": ("Qwen3VLForConditionalGeneration", "qwen3_vl", True),
    "kimi_k25": ("KimiK25ForConditionalGeneration", "kimi_k25", True),
}


def nt_ids(L: int) -> dict[str, object]:
    a, b = max(1, L // 2 - 1), max(2, L - 4)
    return {"none": None, "default": [1, L // 2 - 1, L - 4], "L": [2, a, L], "minus-one": [-1, a, b],
            "unsorted": [b, 2, a], "not-a-list": "2,3,4"}  # fmt: skip


def nt_target(family: str, layers: int) -> dict:
    arch, model_type, wrapped = NT_FAMILIES[family]
    text = {"model_type": model_type, "num_hidden_layers": layers, "hidden_size": 64, "vocab_size": 300}
    return (
        {"architectures": [arch], "model_type": model_type, "text_config": text}
        if wrapped
        else {"architectures": [arch], **text}
    )


def nt_drafter(fmt: str, ids, place: str) -> dict:
    """test_no_traceback.drafter_config: 64-wide, vocab 300, draft vocab 120, `ids` placed as asked."""
    layer = {"model_type": "llama", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 1,
             "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 300}  # fmt: skip
    if fmt == "speculators":
        cfg = {"architectures": ["Eagle3Speculator"], "speculators_model_type": "eagle3",
               "speculators_version": "0.9.0", "draft_vocab_size": 120, "transformer_layer_config": layer,
               "speculators_config": {"algorithm": "eagle3", "default_proposal_method": "greedy",
                                      "proposal_methods": [{"proposal_type": "greedy", "speculative_tokens": 3}],
                                      "verifier": {"name_or_path": None, "architectures": []}}}  # fmt: skip
    else:
        cfg = {"architectures": ["LlamaForCausalLMEagle3"], **layer, "draft_vocab_size": 120}
        if fmt == "modelopt":
            cfg["eagle_config"] = {"use_input_layernorm_in_first_layer": True, "use_last_layernorm": True}
    if ids is not None and place in ("nested", "both"):
        cfg.setdefault("eagle_config", {})["eagle_aux_hidden_state_layer_ids"] = ids
    if ids is not None and place in ("top", "both"):
        cfg["eagle_aux_hidden_state_layer_ids"] = ids
    return cfg


# --------------------------------------------------------------------------------------------------------------
# Running the CLI

KIMI_LAUNCH = (  # examples/kimi-k25/launch.txt
    "python -m sglang.launch_server --model-path {target} --trust-remote-code --tp 8 --speculative-algorithm EAGLE3 "
    "--speculative-draft-model-path {drafter} --speculative-num-steps 1 --speculative-eagle-topk 1 "
    "--speculative-num-draft-tokens 16"
)
CHECK_ENGINES = ("sglang==0.5.23", "sglang==0.5.12", "sglang==0.4.5", "vllm==0.33.0", "vllm==0.25.1", "vllm==0.10.2",
                 "trtllm", None)  # fmt: skip
TEST_OPTIONS = ("--samples", "4", "--new-tokens", "32")  # `eaglewire test`: about 10 s per drafter on 2 cores


def package_dir(rel: str) -> Path:
    """A folder shipped in the package (zoo, examples), wherever a restructure puts it."""
    root = Path(importlib.util.find_spec("eaglewire").origin).parent
    found = [root / rel] if (root / rel).is_dir() else sorted(p for p in root.glob(f"**/{rel}") if p.is_dir())
    assert found, f"{rel}: not found under {root}"
    return found[0]


def rounded(data):
    if isinstance(data, float):
        return round(data, 6)
    if isinstance(data, dict):
        return {k: rounded(v) for k, v in data.items()}
    if isinstance(data, list):
        return [rounded(v) for v in data]
    return data


class Cli:
    """`eaglewire ARGV` in-process: the exit code and the parsed JSON (or the error lines), paths as tokens."""

    def __init__(self, tokens: dict[Path, str]):
        pairs = {str(p): t for p, t in tokens.items()} | {str(p.resolve()): t for p, t in tokens.items()}
        self.tokens = sorted(pairs.items(), key=lambda kv: -len(kv[0]))

    def __call__(self, *argv) -> dict:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main([str(a) for a in argv])
        text, error = out.getvalue(), err.getvalue()
        for path, token in self.tokens:
            text, error = text.replace(path, token), error.replace(path, token)
        if text.strip():
            return {"exit": code, "json": rounded(json.loads(text))}
        lines = [line for line in error.splitlines() if line.startswith("eaglewire: error")]
        return {"exit": code, "error": lines or error.strip().splitlines()}


def verdicts(res: dict) -> dict:
    """The compact answer of `check --json`: exit code, verdict, and each engine's verdict and served taps."""
    if "json" not in res:
        return res
    j = res["json"]
    return {"exit": res["exit"], "status": j["status"],
            "engines": {e["engine"]: [e["status"], e["served_taps"]] for e in j["engines"]}}  # fmt: skip


def write_config(directory: Path, config: dict) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text(json.dumps(config))
    return directory


def with_drafter(argv: list[str], config: dict, root: Path) -> list[str]:
    """lint's `drafter_config` through the CLI: the config in a local folder named like the draft model it replaces."""
    argv = list(argv)
    if "--speculative-draft-model-path" in argv:
        i = argv.index("--speculative-draft-model-path") + 1
        argv[i] = str(write_config(root / Path(argv[i]).name, config))
    else:
        i = argv.index("--speculative-config") + 1
        spec = json.loads(argv[i])
        spec["model"] = str(write_config(root / Path(spec["model"]).name, config))
        argv[i] = json.dumps(spec)
    return argv


def lint_runs(tmp: Path, kimi: Path) -> dict[str, list]:
    """Every launch command to lint, as `lint` options + argv (no GPU given: unknown, not this machine's)."""
    runs = {}
    for name, (argv, kw, *_) in SCENARIOS.items():
        assert set(kw) <= {"engine_version", "target_arch", "drafter_config", "gpu"}, name
        opts = ["--gpu", kw.get("gpu", "unknown")]
        if "engine_version" in kw:
            opts += ["--engine", f"{'vllm' if name.startswith('vl-') else 'sglang'}=={kw['engine_version']}"]
        if "target_arch" in kw:
            opts += ["--target-arch", kw["target_arch"]]
        if "drafter_config" in kw:
            argv = with_drafter(argv, kw["drafter_config"], tmp / "lint" / name)
        runs[name] = [*opts, "--", *argv]
    served = write_config(tmp / "lint" / "speculator", SPECULATORS_DRAFTER)
    for version in ("0.27.0", "0.33.0"):
        runs[f"vl-served-speculators-{version}"] = ["--gpu", "unknown", "--engine", f"vllm=={version}", "--",
                                                    "vllm", "serve", str(served)]  # fmt: skip
    target = write_config(
        tmp / "lint" / "llama", {"architectures": ["LlamaForCausalLM"], "vocab_size": 128256}
    )
    small = write_config(tmp / "lint" / "qwen", {"architectures": ["Qwen3ForCausalLM"], "vocab_size": 151936})
    spec = {"method": "draft_model", "model": str(small), "num_speculative_tokens": 3}
    runs["vl-draft-model-vocab"] = ["--gpu", "unknown", "--", "vllm", "serve", str(target), "--speculative-config",
                                    json.dumps(spec)]  # fmt: skip
    runs["kimi"] = ["--gpu", "unknown", "--", *KIMI]
    runs["kimi-0.5.23"] = ["--gpu", "unknown", "--engine", "sglang==0.5.23", "--", *KIMI]
    example = KIMI_LAUNCH.format(target=kimi / "target", drafter=kimi / "drafter").split()
    for gpu in ("unknown", "h200", "b200"):
        runs[f"kimi-example-topk1-{gpu}"] = ["--gpu", gpu, "--", *example]
        runs[f"kimi-example-topk2-{gpu}"] = ["--gpu", gpu, "--", *example[:-6], *sizes(3, 2, 6)]
    return runs


def answers() -> dict:
    """Every answer, keyed by category and case (see the module docstring)."""
    zoo, kimi = package_dir("zoo"), package_dir("examples/kimi-k25")
    drafters = {
        "zoo-default": (zoo / "drafters" / "default", zoo / "target"),
        "zoo-custom-taps": (zoo / "drafters" / "custom-taps", zoo / "target"),
        "kimi-example": (kimi / "drafter", kimi / "target"),
    }
    with tempfile.TemporaryDirectory(prefix="eaglewire-golden-") as name:
        tmp = Path(name)
        cli = Cli({zoo / "drafters" / "default": "<zoo-default>", zoo / "drafters" / "custom-taps": "<zoo-custom-taps>",
                   zoo / "target": "<zoo-target>", kimi: "<kimi-example>", zoo: "<zoo>", tmp: "<tmp>",
                   zoo.parent: "<pkg>", REPO: "<repo>"})  # fmt: skip
        out = {}
        # (a) check on the zoo drafters and the Kimi example
        for name, (d, t) in drafters.items():
            for engine in CHECK_ENGINES:
                out[f"check {name} {engine or 'default'}"] = cli("check", d, "--target", t, "--json",
                                                                 *(["--engine", engine] if engine else []))  # fmt: skip
            out[f"check {name} vllm==0.33.0 --platform cpu"] = cli("check", d, "--target", t, "--json", "--engine",
                                                                   "vllm==0.33.0", "--platform", "cpu")  # fmt: skip
        # (b) lint
        for name, args in lint_runs(tmp, kimi).items():
            out[f"lint {name}"] = cli("lint", "--json", *args)
        # (c) test on the zoo drafters
        for name in ("zoo-default", "zoo-custom-taps"):
            d, t = drafters[name]
            out[f"test {name}"] = cli("test", d, "--target", t, *TEST_OPTIONS, "--json")
        # (d) the published pairings
        built = {}
        for case, (tcfg, dcfg, hidden, opts) in CASES.items():
            root = tmp / "published" / case.replace(" ", "_")
            built[case] = (
                sparse.target(root / "t", tcfg),
                sparse.drafter(root / "d", dcfg, target_hidden=hidden, **opts),
            )
        for case, engine, extra in PAIRINGS:
            t, d = built[case]
            argv = ["check", d, "--target", t, "--engine", engine, *extra, "--json"]
            out[f"published {case} | {engine} | {' '.join(extra) or 'default'}"] = {
                **verdicts(cli(*argv)), "strict": verdicts(cli(*argv, "--strict"))}  # fmt: skip
        # (e) the no-traceback slice
        n = 0
        for fmt in NT_FORMATS:
            for place in NT_PLACES:
                for L in NT_LAYERS:
                    for variant, ids in nt_ids(L).items():
                        if ids is None and place != "nested":
                            continue  # no ids: the place does not matter
                        for family in NT_FAMILIES:
                            root = tmp / "nt" / str(n)
                            t = write_config(root / "t", nt_target(family, L))
                            d = write_config(root / "d", nt_drafter(fmt, ids, place))
                            extra = NT_OPTIONS[n % len(NT_OPTIONS)]
                            engines = [a for e in NT_ENGINES for a in ("--engine", e)]
                            key = " ".join(["nt", fmt, place, variant, f"L{L}", family, *extra])
                            out[key] = verdicts(cli("check", d, "--target", t, *engines, *extra, "--json"))
                            n += 1
    return out


def dumps(data: dict) -> str:
    return json.dumps(data, sort_keys=True, indent=1) + "\n"


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python tests/golden/answers.py --write   (regenerates answers.json)")
    ANSWERS.write_text(dumps(answers()))
    print(f"wrote {ANSWERS}")
