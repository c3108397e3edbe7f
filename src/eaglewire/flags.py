"""Launch flags: parse a SGLang or vLLM launch command, replay the engine's own adjustment rules, and advise.

Why this exists: both engines rewrite speculative-decoding flags at startup, with at most a log line. With
`--speculative-eagle-topk 1` SGLang sets num_draft_tokens := num_steps + 1, so the Kimi-K2.5 launch
`--speculative-num-steps 1 --speculative-eagle-topk 1 --speculative-num-draft-tokens 16` verified 2 tokens per
step while its authors believed 16, and speculation ran slower than none. `lint` replays those rules and returns
the effective settings, every silent change (flag, value given, value used, rule, source, severity) and a fixed
command that lints clean.

The rules are data: `RULES` holds one `FlagRule` per rule and engine version range, in the order the engine
applies them, each citing the file it was read from. The sources are the PyPI wheels, unzipped and read:
sglang 0.4.5-0.5.23 (every minor release, `SGLANG_CHECKED`) and vllm 0.8.5-0.33.0 (`VLLM_CHECKED`). A new engine
version is a new row (or a new upper bound), not a new if-branch. Rules marked "inferred" describe what the code
does without a startup check (e.g. `torch.topk` raising on the first decode); they were read, not run.
"""

from __future__ import annotations

import ast
import json
import re
import shlex
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from eaglewire.errors import EXIT_OK, EXIT_PROBLEM, InputError
from eaglewire.jsonio import read_json_object

SGLANG = "sglang"
VLLM = "vllm"
ENGINES = (SGLANG, VLLM)

PROBLEM = "problem"  # changes what the user asked for, or fails at startup: lint exit code 1
WARNING = "warning"  # a silent change worth knowing (e.g. max running requests 48)
INFO = "info"
SEVERITIES = (PROBLEM, WARNING, INFO)

# Versions whose source was read (wheel from PyPI, unzipped). Rules are encoded from the oldest to the newest.
SGLANG_CHECKED = (
    "0.4.5", "0.4.6", "0.4.7", "0.4.8", "0.4.9", "0.4.10",
    "0.5.1", "0.5.2", "0.5.3", "0.5.4", "0.5.5", "0.5.6", "0.5.7", "0.5.8", "0.5.9", "0.5.10", "0.5.11",
    "0.5.12", "0.5.13", "0.5.14", "0.5.15", "0.5.16", "0.5.17", "0.5.18", "0.5.19", "0.5.20", "0.5.21",
    "0.5.22", "0.5.23",
)  # fmt: skip
VLLM_CHECKED = (
    "0.8.5", "0.9.0", "0.10.0", "0.10.1.1", "0.10.2", "0.11.0", "0.14.0", "0.20.0", "0.21.0", "0.22.0",
    "0.23.0", "0.24.0", "0.27.0", "0.28.0", "0.29.0", "0.30.0", "0.33.0",
)  # fmt: skip
CHECKED = {SGLANG: SGLANG_CHECKED, VLLM: VLLM_CHECKED}
# The oldest version encoded: sglang 0.4.5 is the first with EAGLE3 (0.4.3 has only EAGLE); vllm 0.8.5 is the
# first with method "eagle3" (0.8.3 and 0.8.4 have none).
OLDEST = {SGLANG: "0.4.5", VLLM: "0.8.5"}
NEWEST = {SGLANG: SGLANG_CHECKED[-1], VLLM: VLLM_CHECKED[-1]}

# Source files, per era, as cited by the rules.
SG_HOOK = "sglang 0.5.23 srt/arg_groups/speculative_hook.py"
SG_SA = (
    "sglang 0.4.5-0.5.12 srt/server_args.py (speculative block of __post_init__; "
    "_handle_speculative_decoding from 0.5.4)"
)
VL_CFG = (
    "vllm 0.33.0 vllm/config/speculative.py SpeculativeConfig "
    "(0.8.5-0.10.2: vllm/config.py, vllm/config/__init__.py)"
)
VL_ARGS = "vllm 0.33.0 vllm/engine/arg_utils.py"


# --------------------------------------------------------------------------------------------------------------
# Public values


@dataclass(frozen=True)
class Option:
    """One flag occurrence in the command: its canonical name, how it was written, and where it sits in argv."""

    flag: str  # canonical spelling, e.g. "--speculative-draft-model-path" (vLLM: dashes, as vLLM normalizes)
    given_as: str  # as written, e.g. "--speculative-draft-model" or "--speculative_config"
    value: str | None  # None for a switch
    start: int  # index of the flag token in LaunchCommand.argv
    stop: int  # index after its last token
    inline: bool = False  # written as --flag=value
    key: str | None = None  # vLLM dotted form: --speculative-config.KEY VALUE


@dataclass(frozen=True)
class LaunchCommand:
    """A parsed launch command. Values stay strings as written; `lint` interprets them per engine version."""

    engine: str  # "sglang" | "vllm"
    argv: tuple[str, ...]
    env: dict[str, str]  # leading VAR=value assignments (SGLANG_ENABLE_SPEC_V2=1 python -m ...)
    entry: tuple[str, ...]  # the program part, e.g. ("python", "-m", "sglang.launch_server")
    model: str | None  # target model path or id
    options: tuple[Option, ...]
    speculative_config: dict | None = None  # vLLM: the dict vLLM's parser ends up with (JSON and dotted keys)
    model_option: bool = False  # the model came from a flag, not a positional argument

    def get(self, flag: str) -> str | None:
        """The value of the last occurrence of `flag` (argparse semantics), or None."""
        found = [o for o in self.options if o.flag == flag and o.key is None]
        return found[-1].value if found else None

    def has(self, flag: str) -> bool:
        return any(o.flag == flag for o in self.options)

    def flags(self) -> list[str]:
        return [o.flag for o in self.options]


@dataclass(frozen=True)
class Settings:
    """Speculative settings, as given or as the engine uses them. vLLM rows carry the SGLang equivalent too."""

    algorithm: str | None = None
    num_steps: int | None = None
    topk: int | None = None
    num_draft_tokens: int | None = None  # SGLang: verify width, the root (last verified token) included
    proposed_drafts_per_verify: int | None = (
        None  # num_draft_tokens - 1 (SGLang); num_speculative_tokens (vLLM)
    )
    max_accept_length: int | None = None  # tokens per verify step at best, bonus token included
    num_speculative_tokens: int | None = None  # vLLM
    method: str | None = None  # vLLM
    draft_model: str | None = None
    max_running_requests: int | None = None  # SGLang


@dataclass(frozen=True)
class Change:
    """What the engine does to one flag (or config key), and why we know."""

    flag: str  # e.g. "--speculative-num-draft-tokens" or "--speculative-config.num_speculative_tokens"
    given: Any  # the value in the command (None: not given)
    effective: Any  # the value the engine uses (None: it does not start, or nothing is used)
    rule: str
    severity: str
    citation: str
    message: str
    versions: str = ""  # the engine versions the rule row covers (PEP 440 specifier set)


@dataclass(frozen=True)
class Edit:
    """Set (or remove) one flag, or one key of vLLM's --speculative-config."""

    flag: str
    value: Any = None
    key: str | None = None
    remove: bool = False

    def render(self) -> str:
        name = f"{self.flag}.{self.key}" if self.key else self.flag
        if self.remove:
            return f"(remove {name})"
        value = self.value if isinstance(self.value, str) else json.dumps(self.value)
        return f"{name} {shlex.quote(value)}"


@dataclass(frozen=True)
class Fix:
    """A concrete fix for one problem, as flags. `mechanical` is False when it needs a value only you know."""

    rule: str
    edits: tuple[Edit, ...]
    description: str
    alternative: str | None = None
    mechanical: bool = True

    @property
    def flags(self) -> str:
        return " ".join(e.render() for e in self.edits)


@dataclass
class LintReport:
    """Everything `lint` found. The library never prints: `cli.py` renders this."""

    engine: str
    version: str
    version_defaulted: bool  # no version given: the newest encoded version was assumed
    argv: list[str]
    target_arch: str | None
    drafter_kind: str | None  # "eagle3" | "eagle" | None (unknown)
    given: Settings
    effective: Settings
    changes: list[Change]
    fixes: list[Fix]
    fixed_argv: list[str] | None
    starts: bool  # False: a rule says the server fails at startup
    notes: list[str] = field(default_factory=list)
    rules_applied: list[str] = field(default_factory=list)  # the rows that cover this engine version

    @property
    def has_problem(self) -> bool:
        return any(c.severity == PROBLEM for c in self.changes)

    @property
    def problems(self) -> list[Change]:
        return [c for c in self.changes if c.severity == PROBLEM]

    @property
    def warnings(self) -> list[Change]:
        return [c for c in self.changes if c.severity == WARNING]

    @property
    def exit_code(self) -> int:
        return EXIT_PROBLEM if self.has_problem else EXIT_OK

    @property
    def fixed_command(self) -> str | None:
        return shlex.join(self.fixed_argv) if self.fixed_argv is not None else None

    def to_dict(self) -> dict:
        out = asdict(self)
        for fix, data in zip(self.fixes, out["fixes"], strict=True):
            data["flags"] = fix.flags
        out["has_problem"] = self.has_problem
        out["fixed_command"] = self.fixed_command
        return out


@dataclass(frozen=True)
class FlagRule:
    """One engine rule, in one version range. `apply` reads and updates the lint state; `fix` proposes flags."""

    name: str
    engine: str
    versions: str  # PEP 440 specifier set, e.g. ">=0.4.6"; "" = every encoded version
    severity: str
    citation: str
    summary: str
    apply: Callable[[FlagRule, _State], None] = field(repr=False, compare=False)
    fix: Callable[[_State, Change], Fix | None] | None = field(default=None, repr=False, compare=False)
    fails_startup: bool = False

    def covers(self, version: Version) -> bool:
        return SpecifierSet(self.versions).contains(version, prereleases=True)

    @property
    def checked(self) -> tuple[str, ...]:
        """The versions whose source was read and that this row covers."""
        return tuple(v for v in CHECKED[self.engine] if self.covers(Version(v)))


# --------------------------------------------------------------------------------------------------------------
# Parsing


@dataclass(frozen=True)
class _FlagSpec:
    kind: str  # "str" | "int" | "float" | "switch" | "json"
    aliases: tuple[str, ...] = ()


_SG_FLAGS: dict[str, _FlagSpec] = {
    "--model-path": _FlagSpec("str", ("--model",)),
    "--speculative-algorithm": _FlagSpec("str"),
    "--speculative-draft-model-path": _FlagSpec("str", ("--speculative-draft-model",)),
    "--speculative-draft-model-revision": _FlagSpec("str"),
    "--speculative-num-steps": _FlagSpec("int"),
    "--speculative-eagle-topk": _FlagSpec("int"),
    "--speculative-num-draft-tokens": _FlagSpec("int"),
    "--speculative-token-map": _FlagSpec("str"),
    "--speculative-accept-threshold-single": _FlagSpec("float"),
    "--speculative-accept-threshold-acc": _FlagSpec("float"),
    "--speculative-use-rejection-sampling": _FlagSpec("switch"),
    "--speculative-adaptive": _FlagSpec("switch"),
    "--enable-beta-spec": _FlagSpec("switch"),
    "--max-running-requests": _FlagSpec("int"),
    "--attention-backend": _FlagSpec("str"),
    "--decode-attention-backend": _FlagSpec("str"),
    "--prefill-attention-backend": _FlagSpec("str"),
    "--page-size": _FlagSpec("int"),
    "--tp-size": _FlagSpec("int", ("--tp", "--tensor-parallel-size")),
    "--enable-mixed-chunk": _FlagSpec("switch"),
    "--disable-overlap-schedule": _FlagSpec("switch"),
    "--trust-remote-code": _FlagSpec("switch"),
    "--enable-dp-attention": _FlagSpec("switch"),
}

# vLLM flags that existed up to 0.8.0 (vllm 0.8.0 engine/arg_utils.py) and are gone by 0.8.5: argparse rejects
# them. Each maps to the --speculative-config key that replaced it, with the versions that key exists in.
_VL_LEGACY: dict[str, tuple[str, str]] = {
    "--speculative-model": ("model", "str"),
    "--num-speculative-tokens": ("num_speculative_tokens", "int"),
    "--speculative-draft-tensor-parallel-size": ("draft_tensor_parallel_size", "int"),
    "--speculative-model-quantization": ("quantization", "str"),
    "--speculative-max-model-len": ("max_model_len", "int"),
    "--speculative-disable-by-batch-size": ("disable_by_batch_size", "int"),
    "--ngram-prompt-lookup-max": ("prompt_lookup_max", "int"),
    "--ngram-prompt-lookup-min": ("prompt_lookup_min", "int"),
    "--speculative-disable-mqa-scorer": ("disable_mqa_scorer", "switch"),
    "--spec-decoding-acceptance-method": ("acceptance_method", "str"),
    "--typical-acceptance-sampler-posterior-threshold": ("posterior_threshold", "float"),
    "--typical-acceptance-sampler-posterior-alpha": ("posterior_alpha", "float"),
    "--disable-logprobs-during-spec-decoding": ("disable_logprobs", "switch"),
}
# vLLM >= 0.22: shorthand flags merged into --speculative-config (vllm 0.33.0 engine/arg_utils.py:2100-2121).
_VL_SHORT = {"--spec-method": "method", "--spec-model": "model", "--spec-tokens": "num_speculative_tokens"}

_VL_FLAGS: dict[str, _FlagSpec] = {
    "--model": _FlagSpec("str"),
    "--speculative-config": _FlagSpec("json", ("-sc",)),
    "--spec-method": _FlagSpec("str"),
    "--spec-model": _FlagSpec("str"),
    "--spec-tokens": _FlagSpec("int"),
    "--tensor-parallel-size": _FlagSpec("int", ("-tp",)),
    "--trust-remote-code": _FlagSpec("switch"),
    "--enforce-eager": _FlagSpec("switch"),
    **{flag: _FlagSpec(kind) for flag, (_key, kind) in _VL_LEGACY.items()},
}

_ENV_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_NUMBER = re.compile(r"^-\d+(\.\d+)?$")
_PYTHON = re.compile(r"^python(\d+(\.\d+)?)?$")
_WRAPPERS = ("env", "nohup", "exec")


def _is_flag(token: str) -> bool:
    return token.startswith("-") and token != "-" and not _NUMBER.match(token)


def _as_int(flag: str, value: Any) -> int:
    """argparse `type=int` semantics (and pydantic's lax int for JSON values); one-line error naming the flag."""
    if isinstance(value, bool) or value is None:
        raise InputError(f"{flag}: expected an integer, got {json.dumps(value)}")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    try:
        return int(str(value).strip())
    except ValueError:
        raise InputError(f"{flag}: expected an integer, got {str(value)!r}") from None


def _as_float(flag: str, value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        raise InputError(f"{flag}: expected a number, got {value!r}") from None


def _split_entry(tokens: list[str], engine: str | None) -> tuple[dict[str, str], int, int, str | None, bool]:
    """Leading env assignments, where the program and the options start, the engine it names, positional model?"""
    env: dict[str, str] = {}
    i = 0
    while i < len(tokens):
        if tokens[i] in _WRAPPERS:
            i += 1
        elif _ENV_ASSIGN.match(tokens[i]):
            name, _, value = tokens[i].partition("=")
            env[name] = value
            i += 1
        else:
            break
    if i >= len(tokens):
        raise InputError("empty launch command: give it after `--`, e.g. python -m sglang.launch_server ...")
    program = i
    word = tokens[i]
    base = Path(word).name
    found: str | None = None
    positional = False
    if _PYTHON.match(base):
        i += 1
        if i + 1 < len(tokens) and tokens[i] == "-m":
            module = tokens[i + 1]
            i += 2
            if module == "sglang" or module.startswith("sglang."):
                found = SGLANG
            elif module == "vllm" or module.startswith("vllm."):
                found = VLLM
            else:
                raise InputError(f"not a SGLang or vLLM launch command: python -m {module}")
        elif i < len(tokens) and tokens[i].endswith(".py") and engine is not None:
            i += 1
        else:
            raise InputError(f"not a SGLang or vLLM launch command: {shlex.join(tokens[: i + 1])}")
        if i < len(tokens) and tokens[i] == "serve":
            i, positional = i + 1, True
    elif base in ("sglang", "vllm"):
        found = SGLANG if base == "sglang" else VLLM
        i += 1
        if i < len(tokens) and tokens[i] == "serve":
            i, positional = i + 1, True
        elif found == VLLM:
            raise InputError(
                f"not a vLLM server launch: vllm {tokens[i] if i < len(tokens) else ''} (use vllm serve)"
            )
    elif _is_flag(word):
        if engine is None:
            raise InputError(
                f"cannot tell the engine from {word!r}: start with the program (python -m sglang.launch_server, "
                "sglang serve, vllm serve) or pass the engine"
            )
    elif engine is None:
        raise InputError(
            f"not a SGLang or vLLM launch command: {word!r} (expected python -m sglang.launch_server, sglang serve, "
            "vllm serve or python -m vllm.entrypoints.openai.api_server; or pass the engine)"
        )
    else:  # a wrapper script with a forced engine: skip its name
        i += 1
    if engine is not None and found is not None and engine != found:
        raise InputError(
            f"engine {engine!r} given, but the command launches {found}: {shlex.join(tokens[:i])}"
        )
    return env, program, i, found, positional


def _canonical(engine: str, name: str) -> tuple[str, str | None]:
    """Canonical flag name and dotted key. vLLM turns underscores into dashes before the first dot."""
    key = None
    if engine == VLLM:
        if name.startswith("--") and "." in name:
            name, key = name.split(".", 1)
        if name.startswith("--"):
            name = "--" + name[2:].replace("_", "-")
    specs = _SG_FLAGS if engine == SGLANG else _VL_FLAGS
    for canonical, spec in specs.items():
        if name in spec.aliases:
            return canonical, key
    return name, key


def _parse_options(
    engine: str, tokens: list[str], start: int, positional_model: bool
) -> tuple[tuple[Option, ...], str | None, bool]:
    specs = _SG_FLAGS if engine == SGLANG else _VL_FLAGS
    options: list[Option] = []
    model: str | None = None
    model_option = False
    i = start
    if positional_model and i < len(tokens) and not _is_flag(tokens[i]):
        model, i = tokens[i], i + 1
    while i < len(tokens):
        token = tokens[i]
        if not _is_flag(token):
            if model is None and engine == VLLM and positional_model:
                model = token
            i += 1
            continue
        name, eq, inline_value = token.partition("=")
        flag, key = _canonical(engine, name)
        spec = specs.get(flag)
        kind = "json" if key is not None else (spec.kind if spec else None)
        if eq:
            value, stop = inline_value, i + 1
        elif kind == "switch":
            value, stop = None, i + 1
        elif kind is not None:
            if i + 1 >= len(tokens) or _is_flag(tokens[i + 1]):
                raise InputError(f"{name} needs a value")
            value, stop = tokens[i + 1], i + 2
        elif i + 1 < len(tokens) and not _is_flag(tokens[i + 1]):
            value, stop = tokens[i + 1], i + 2  # an unknown flag: assume it takes the next word
        else:
            value, stop = None, i + 1
        if spec is not None and kind == "int":
            _as_int(name, value)
        elif spec is not None and kind == "float":
            _as_float(name, value)
        options.append(Option(flag, name, value, i, stop, bool(eq), key))
        if flag in ("--model-path", "--model"):
            model, model_option = value, True
        i = stop
    return tuple(options), model, model_option


def _vllm_spec_config(options: Sequence[Option]) -> dict | None:
    """What vLLM's FlexibleArgumentParser hands to --speculative-config.

    Dotted keys (--speculative-config.KEY VALUE) are collected into one dict that is appended after every other
    argument, so argparse keeps it and drops any whole-JSON --speculative-config (vllm 0.33.0
    utils/argparse_utils.py:405-499; same code in 0.10.0-0.30.0).
    """
    whole: dict | None = None
    dotted: dict = {}
    for o in options:
        if o.flag != "--speculative-config":
            continue
        if o.key is None:
            try:
                value = json.loads(o.value or "")
            except json.JSONDecodeError as e:
                raise InputError(
                    f"{o.given_as}: not valid JSON ({e.msg} at column {e.colno}); give the JSON as one shell word, "
                    """e.g. '{"method": "eagle3", "model": "DRAFTER", "num_speculative_tokens": 3}'"""
                ) from None
            if not isinstance(value, dict):
                raise InputError(f"{o.given_as}: expected a JSON object, got {type(value).__name__}")
            whole = value
        else:
            try:
                value = json.loads(o.value or "")
            except json.JSONDecodeError:
                value = o.value
            node = dotted
            *parents, last = o.key.split(".")
            for part in parents:
                node = node.setdefault(part, {})
            node[last] = value
    return dotted if dotted else whole


def parse_launch(argv: list[str], engine: str | None = None) -> LaunchCommand:
    """Parse a launch command (the argv after `--`). `engine` forces "sglang" or "vllm" when the program is a
    wrapper script. Raises `InputError` naming the flag on malformed input."""
    if engine is not None and engine not in ENGINES:
        raise InputError(f"unknown engine {engine!r}: use sglang or vllm")
    tokens = [str(t) for t in argv]
    if len(tokens) == 1 and " " in tokens[0].strip():
        try:
            tokens = shlex.split(tokens[0])
        except ValueError as e:
            raise InputError(f"cannot split the launch command into words ({e})") from None
    env, program, start, found, positional = _split_entry(tokens, engine)
    engine = engine or found
    assert engine is not None
    options, model, model_option = _parse_options(engine, tokens, start, positional)
    spec_config = _vllm_spec_config(options) if engine == VLLM else None
    if engine == VLLM:
        for key in ("num_speculative_tokens", "draft_tensor_parallel_size"):
            if spec_config and spec_config.get(key) is not None:
                _as_int(f"--speculative-config.{key}", spec_config[key])
    return LaunchCommand(
        engine=engine,
        argv=tuple(tokens),
        env=env,
        entry=tuple(tokens[program:start]),
        model=model,
        options=options,
        speculative_config=spec_config,
        model_option=model_option,
    )


# --------------------------------------------------------------------------------------------------------------
# Context: version, target, drafter


def _resolve_version(engine: str, text: str | None) -> tuple[Version, bool, list[str]]:
    notes: list[str] = []
    if text is None:
        notes.append(f"engine version not given: assumed {engine} {NEWEST[engine]}, the newest encoded")
        return Version(NEWEST[engine]), True, notes
    try:
        version = Version(str(text).strip().lstrip("vV"))
    except InvalidVersion:
        raise InputError(f"engine version {text!r} is not a version number (e.g. 0.5.23)") from None
    if version < Version(OLDEST[engine]):
        raise InputError(
            f"engine version {text}: eaglewire encodes {engine} {OLDEST[engine]}-{NEWEST[engine]}; "
            f"{OLDEST[engine]} is the first with EAGLE-3"
        )
    if version > Version(NEWEST[engine]):
        notes.append(
            f"{engine} {version} is newer than the newest version read ({NEWEST[engine]}): its rules are assumed"
        )
    return version, False, notes


# Wrapper architectures whose text model is another architecture (what SGLang would NOT key on).
WRAPPER_TEXT_ARCH = {
    "KimiK25ForConditionalGeneration": "DeepseekV3ForCausalLM",  # Kimi-K2.5: text_config is DeepSeek-V3
}
_MODEL_TYPE_ARCH = {
    "deepseek_v3": "DeepseekV3ForCausalLM",
    "deepseek_v2": "DeepseekV2ForCausalLM",
    "kimi_k2": "DeepseekV3ForCausalLM",
    "llama": "LlamaForCausalLM",
    "qwen2": "Qwen2ForCausalLM",
    "qwen3": "Qwen3ForCausalLM",
    "qwen3_moe": "Qwen3MoeForCausalLM",
}


def _local_config(path: str | None) -> tuple[dict | None, str | None]:
    """config.json of a local model directory, or (None, None) when `path` is not one (e.g. a hub id)."""
    if not path:
        return None, None
    p = Path(path).expanduser()
    if p.is_dir() and (p / "config.json").is_file():
        return read_json_object(p / "config.json", "config"), str(p / "config.json")
    if p.is_file() and p.name.endswith(".json"):
        return read_json_object(p, "config"), str(p)
    return None, None


def _archs(config: dict) -> tuple[str | None, str | None]:
    archs = config.get("architectures") or [None]
    text = config.get("text_config")
    text_arch = None
    if isinstance(text, dict):
        text_arch = (text.get("architectures") or [None])[0] or _MODEL_TYPE_ARCH.get(
            text.get("model_type", "")
        )
    return archs[0], text_arch


def _drafter_kind(config: dict) -> str | None:
    """EAGLE-3 (`LlamaForCausalLMEagle3` + `eagle_config`, speculators `eagle3`), EAGLE-1, or None (unknown)."""
    archs = [str(a) for a in config.get("architectures") or []]
    spec_type = str(config.get("speculators_model_type") or "").lower()
    if spec_type == "eagle3" or any("eagle3" in a.lower() for a in archs) or "eagle_config" in config:
        return "eagle3"
    if spec_type == "eagle" or any(
        a.lower().startswith("eagle") or a.lower().endswith("eagle") for a in archs
    ):
        return "eagle"
    return None


# --------------------------------------------------------------------------------------------------------------
# Lint state


_SG_KEYS = {
    "algorithm": "--speculative-algorithm",
    "draft_model": "--speculative-draft-model-path",
    "num_steps": "--speculative-num-steps",
    "topk": "--speculative-eagle-topk",
    "num_draft_tokens": "--speculative-num-draft-tokens",
    "token_map": "--speculative-token-map",
    "max_running_requests": "--max-running-requests",
    "page_size": "--page-size",
    "attention_backend": "--attention-backend",
    "decode_attention_backend": "--decode-attention-backend",
    "prefill_attention_backend": "--prefill-attention-backend",
    "enable_mixed_chunk": "--enable-mixed-chunk",
    "disable_overlap_schedule": "--disable-overlap-schedule",
    "rejection_sampling": "--speculative-use-rejection-sampling",
    "adaptive": "--speculative-adaptive",
    "beta_spec": "--enable-beta-spec",
}
_TRIPLE = ("num_steps", "topk", "num_draft_tokens")


@dataclass
class _State:
    cmd: LaunchCommand
    version: Version
    target_arch: str | None
    text_arch: str | None
    drafter_kind: str | None
    drafter_source: str | None
    drafter: dict | None
    given: dict[str, Any]
    v: dict[str, Any]  # current (effective) values
    changes: list[Change] = field(default_factory=list)
    fix_for: dict[int, Callable[[_State, Change], Fix | None]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    fails: bool = False
    halted: bool = False
    force_topk1: list[str] = field(default_factory=list)  # why a fix must use topk 1
    auto: tuple[int, int, int] | None = None  # the auto choice for this target and version
    spec_intended: dict = field(default_factory=dict)  # vLLM: the config the user meant (legacy/short merged)

    def emit(self, rule: FlagRule, flag: str, given: Any, effective: Any, message: str) -> Change:
        change = Change(
            flag, given, effective, rule.name, rule.severity, rule.citation, message, rule.versions
        )
        self.changes.append(change)
        if rule.fails_startup:
            self.fails = True
        if rule.fix is not None and rule.severity == PROBLEM:
            self.fix_for[len(self.changes) - 1] = rule.fix
        return change

    def env_true(self, name: str, default: bool) -> bool:
        value = self.cmd.env.get(name)
        return default if value is None else value.strip().lower() in ("1", "true", "yes", "on")


def _sg_given(cmd: LaunchCommand) -> dict[str, Any]:
    given: dict[str, Any] = {}
    for key, flag in _SG_KEYS.items():
        spec = _SG_FLAGS[flag]
        if spec.kind == "switch":
            given[key] = cmd.has(flag)
        else:
            raw = cmd.get(flag)
            given[key] = _as_int(flag, raw) if (raw is not None and spec.kind == "int") else raw
    return given


# --------------------------------------------------------------------------------------------------------------
# SGLang: data tables


@dataclass(frozen=True)
class AutoChoice:
    """`auto_choose_speculative_params` in one version range: (num_steps, topk, num_draft_tokens) by TARGET arch."""

    versions: str
    small: frozenset[str]  # architectures that get (3, 1, 4)
    otherwise: tuple[int, int, int]
    citation: str
    large: frozenset[str] = frozenset(
        {"LlamaForCausalLM", "Grok1ForCausalLM", "Grok1VForCausalLM"}
    )  # (5, 4, 8)

    def choose(self, arch: str | None) -> tuple[int, int, int]:
        if arch in self.large:
            return (5, 4, 8)
        if arch in self.small:
            return (3, 1, 4)
        return self.otherwise


_DS = frozenset({"DeepseekV3ForCausalLM", "DeepseekV2ForCausalLM"})
_DS_GPT = _DS | {"GptOssForCausalLM"}
_E053 = _DS_GPT | {"DeepseekV32ForCausalLM", "BailingMoeForCausalLM", "BailingMoeV2ForCausalLM"}
_E057 = _E053 | {
    "Glm4MoeForCausalLM",
    "MistralLarge3ForCausalLM",
    "PixtralForConditionalGeneration",
    "MiMoV2FlashForCausalLM",
}
_E058 = _E057 | {"Glm4MoeLiteForCausalLM"}
_E059 = _E058 | {"GlmMoeDsaForCausalLM", "BailingMoeV2_5ForCausalLM"}
_E0511 = _E059 | {"MiMoV2ForCausalLM"}
AUTO_CHOICES: tuple[AutoChoice, ...] = (
    AutoChoice(">=0.4.5,<0.4.7", frozenset(), (5, 4, 8),
               "sglang 0.4.5/0.4.6 (and 0.4.6.post1/3/5) server_args.py auto_choose_speculative_params: every "
               "branch returns (5, 4, 8); reads architectures[0] from <model_path>/config.json"),
    AutoChoice(">=0.4.7,<0.5.1", _DS, (5, 4, 8),
               "sglang 0.4.7-0.4.10 (and 0.4.10.post2) server_args.py auto_choose_speculative_params"),
    AutoChoice(">=0.5.1,<0.5.3", _DS_GPT, (5, 4, 8),
               "sglang 0.5.1-0.5.2 server_args.py auto_choose_speculative_params"),
    AutoChoice(">=0.5.3,<0.5.7", _E053, (5, 4, 8),
               "sglang 0.5.3-0.5.6 server_args.py auto_choose_speculative_params"),
    AutoChoice(">=0.5.7,<0.5.8", _E057, (5, 4, 8), "sglang 0.5.7 server_args.py auto_choose_speculative_params"),
    AutoChoice(">=0.5.8,<0.5.9", _E058, (3, 1, 4), "sglang 0.5.8 server_args.py auto_choose_speculative_params"),
    AutoChoice(">=0.5.9,<0.5.11", _E059, (3, 1, 4),
               "sglang 0.5.9-0.5.10 (and 0.5.10.post1) server_args.py auto_choose_speculative_params"),
    AutoChoice(">=0.5.11", _E0511, (3, 1, 4),
               f"sglang 0.5.11-0.5.13 server_args.py auto_choose_speculative_params; {SG_HOOK}:1430-1461 "
               "_auto_choose_speculative_params (keys on hf_config.architectures[0], :1120)"),
)  # fmt: skip

# Targets whose own checkpoint carries the MTP draft layer: SGLang defaults the draft path to the target path
# (and logs "DeepSeek MTP does not require setting speculative_draft_model_path." when one is given).
_MTP053 = frozenset(
    {
        "DeepseekV32ForCausalLM",
        "DeepseekV3ForCausalLM",
        "Glm4MoeForCausalLM",
        "BailingMoeForCausalLM",
        "BailingMoeV2ForCausalLM",
    }
)
_MTP057 = _MTP053 | {"MistralLarge3ForCausalLM", "PixtralForConditionalGeneration"}
_MTP059 = _MTP057 | {"Glm4MoeLiteForCausalLM", "GlmMoeDsaForCausalLM", "BailingMoeV2_5ForCausalLM"}
MTP_TARGETS: tuple[tuple[str, frozenset[str]], ...] = (
    (">=0.4.7,<0.4.10", frozenset({"DeepseekV3ForCausalLM"})),
    (">=0.4.10,<0.5.3", frozenset({"DeepseekV3ForCausalLM", "Glm4MoeForCausalLM"})),
    (">=0.5.3,<0.5.7", _MTP053),
    (">=0.5.7,<0.5.8", _MTP057),
    (">=0.5.8,<0.5.9", _MTP057 | {"Glm4MoeLiteForCausalLM"}),
    (">=0.5.9,<0.5.11", _MTP059),
    (">=0.5.11,<0.5.12", _MTP059 | {"HYV3ForCausalLM"}),
    (">=0.5.12,<0.5.20", _MTP059 | {"HYV3ForCausalLM", "DeepseekV4ForCausalLM"}),
    (">=0.5.20", _MTP059 | {"HYV3ForCausalLM", "DeepseekV4ForCausalLM", "HYV4ForCausalLM",
                            "Qwen4ExpForConditionalGeneration"}),
)  # fmt: skip
_MTP_NO_WARNING = frozenset({"MistralLarge3ForCausalLM", "PixtralForConditionalGeneration"})
SGLANG_ALGORITHMS = ("EAGLE", "EAGLE3", "NEXTN")


def _auto_for(version: Version) -> AutoChoice:
    return next(a for a in AUTO_CHOICES if SpecifierSet(a.versions).contains(version, prereleases=True))


def _pool(num_steps: int, topk: int) -> int:
    """Candidate draft nodes before the rerank: topk + (num_steps - 1) * topk^2 (sglang eagle_utils.py:107-110)."""
    return topk + (num_steps - 1) * topk * topk


# --------------------------------------------------------------------------------------------------------------
# SGLang: fixes


def _plan_triple(
    n: int | None, k: int | None, d: int | None, auto: tuple[int, int, int], force_k1: bool
) -> tuple[tuple[int, int, int], tuple[int, int, int] | None]:
    """A consistent (num_steps, topk, num_draft_tokens) that keeps what the user set on purpose, and the other way.

    Keeps num_draft_tokens (the verify width) when given; with topk 1 that means num_steps = ndt - 1. For a tree
    it raises num_steps until the candidate pool holds ndt - 1 nodes. Without ndt, topk > 1 gets
    min(pool + 1, steps + topk - 1), which reproduces SGLang's own (5, 4, 8).
    """
    if n is None and k is None and d is None and not force_k1:
        return auto, None
    if force_k1 or k is None or k < 1:
        k = 1
    steps = n if n is not None and n >= 1 else None
    if k == 1:
        if d is not None and d >= 2:
            other = (steps, 1, steps + 1) if steps is not None and steps != d - 1 else None
            return (d - 1, 1, d), other
        steps = steps or (auto[0] if auto[1] == 1 else 3)
        return (steps, 1, steps + 1), None
    if d is not None and d >= 2:
        need = 1
        while _pool(need, k) < d - 1:
            need += 1
        if steps is None or _pool(steps, k) < d - 1:
            other = (steps, k, _pool(steps, k) + 1) if steps is not None else None
            return (max(need, steps or 1), k, d), other
        return (steps, k, d), None
    steps = steps or (auto[0] if auto[1] > 1 else 5)
    return (steps, k, min(_pool(steps, k) + 1, steps + k - 1)), None


def _triple_edits(triple: tuple[int, int, int]) -> tuple[Edit, ...]:
    return tuple(Edit(_SG_KEYS[key], str(value)) for key, value in zip(_TRIPLE, triple, strict=True))


def _fix_triple(st: _State, change: Change) -> Fix:
    g = st.given
    auto = st.auto or _auto_for(st.version).choose(st.target_arch)
    triple, other = _plan_triple(g["num_steps"], g["topk"], g["num_draft_tokens"], auto, bool(st.force_topk1))
    edits = _triple_edits(triple)
    flags = " ".join(e.render() for e in edits)
    n, k, d = triple
    shape = f"a {n}-step chain ({n} draft forwards per verify)" if k == 1 else f"a tree of depth {n}, top-{k}"
    if g["num_draft_tokens"] == d:
        description = f"{flags}: keeps the {d} verified tokens per step you asked for, as {shape}"
    else:
        description = f"{flags}: {shape}, {d - 1} drafts proposed per verify"
    if st.force_topk1:
        description += f" (topk 1 because {'; '.join(dict.fromkeys(st.force_topk1))})"
    alternative = None
    if other is not None:
        alt_flags = " ".join(e.render() for e in _triple_edits(other))
        alternative = f"or {alt_flags}: keeps num_steps {other[0]}"
        if other[1] == 1 and change.rule == "sglang.chain_rule":
            alternative += f"; this is what the server already does ({other[2]} verified tokens)"
    elif g["num_steps"] is None and (g["topk"] is not None or g["num_draft_tokens"] is not None):
        alternative = (
            "or drop --speculative-eagle-topk and --speculative-num-draft-tokens: SGLang then auto-chooses "
            f"{auto} for this target"
        )
    return Fix(change.rule, edits, description, alternative)


def _fix_algorithm(value: str) -> Callable[[_State, Change], Fix]:
    def fix(st: _State, change: Change) -> Fix:
        edit = Edit("--speculative-algorithm", value)
        return Fix(change.rule, (edit,), f"{edit.render()}: the algorithm that matches the drafter")

    return fix


def _fix_draft_path(st: _State, change: Change) -> Fix:
    edit = Edit("--speculative-draft-model-path", "<path of the EAGLE-3 drafter>")
    return Fix(change.rule, (edit,), "give the drafter with --speculative-draft-model-path", mechanical=False)


def _fix_no_algorithm(st: _State, change: Change) -> Fix:
    value = "EAGLE" if st.drafter_kind == "eagle" else "EAGLE3"
    edit = Edit("--speculative-algorithm", value)
    return Fix(change.rule, (edit,), f"{edit.render()}: turn speculation on")


# --------------------------------------------------------------------------------------------------------------
# SGLang: rules


def _sg_no_algorithm(rule: FlagRule, st: _State) -> None:
    if st.v["algorithm"] is None:
        spec_flags = sorted({o.flag for o in st.cmd.options if o.flag.startswith("--speculative-")})
        st.emit(
            rule,
            "--speculative-algorithm",
            None,
            None,
            f"{', '.join(spec_flags)} set but --speculative-algorithm is not: SGLang runs without speculation "
            "and ignores them",
        )
        st.halted = True


def _sg_algorithm_case(upper_case: bool) -> Callable[[FlagRule, _State], None]:
    def apply(rule: FlagRule, st: _State) -> None:
        algorithm = st.v["algorithm"]
        if algorithm == algorithm.upper():
            return
        if upper_case:
            msg = f"SGLang upper-cases the algorithm: {algorithm} is {algorithm.upper()}"
        else:
            msg = (
                f"--speculative-algorithm accepts only upper-case choices ({', '.join(SGLANG_ALGORITHMS)}) "
                f"in this version: {algorithm!r} is rejected by argparse at startup"
            )
        st.emit(rule, "--speculative-algorithm", algorithm, algorithm.upper() if upper_case else None, msg)
        st.v["algorithm"] = algorithm.upper()

    return apply


def _sg_nextn(rule: FlagRule, st: _State) -> None:
    if st.v["algorithm"] == "NEXTN":
        st.emit(
            rule,
            "--speculative-algorithm",
            "NEXTN",
            "EAGLE",
            "NEXTN is an alias of EAGLE (MTP / EAGLE-1/2 drafters); EAGLE-3 drafters need EAGLE3",
        )
        st.v["algorithm"] = "EAGLE"


def _sg_eagle_with_eagle3(rule: FlagRule, st: _State) -> None:
    if st.v["algorithm"] == "EAGLE" and st.drafter_kind == "eagle3":
        st.emit(
            rule,
            "--speculative-algorithm",
            st.given["algorithm"],
            "EAGLE",
            f"the drafter ({st.drafter_source}) is EAGLE-3, but EAGLE does not capture the target's aux hidden "
            "states: its fc is silently skipped (the input is already hidden_size wide) and the accept length "
            "falls to ~1.0, with no warning",
        )


def _sg_max_running(logged: str) -> Callable[[FlagRule, _State], None]:
    def apply(rule: FlagRule, st: _State) -> None:
        if st.v["max_running_requests"] is None:
            st.emit(
                rule,
                "--max-running-requests",
                None,
                48,
                f"max running requests is reset to 48 for speculative decoding ({logged}); throughput "
                "benchmarks above 48 concurrent requests queue: set --max-running-requests explicitly",
            )
            st.v["max_running_requests"] = 48

    return apply


def _sg_overlap_always_off(rule: FlagRule, st: _State) -> None:
    if not st.v["disable_overlap_schedule"]:
        st.emit(
            rule,
            "--disable-overlap-schedule",
            False,
            True,
            "the overlap scheduler is disabled for EAGLE speculative decoding in this version",
        )
        st.v["disable_overlap_schedule"] = True


def _sg_overlap_opt_in(algorithms: tuple[str, ...], switch: str) -> Callable[[FlagRule, _State], None]:
    def apply(rule: FlagRule, st: _State) -> None:
        if st.v["disable_overlap_schedule"]:
            return
        on = st.v["beta_spec"] if switch.startswith("--") else st.env_true(switch, False)
        if on and st.v["algorithm"] in algorithms:
            return
        how = (
            f"{switch} with {'/'.join(algorithms)}"
            if switch.startswith("--")
            else f"{switch}=1 with {'/'.join(algorithms)}"
        )
        st.emit(
            rule,
            "--disable-overlap-schedule",
            False,
            True,
            f"the overlap scheduler is disabled: spec v2 is opt-in in this version ({how})",
        )
        st.v["disable_overlap_schedule"] = True

    return apply


def _sg_spec_v2_topk(rule: FlagRule, st: _State) -> None:
    topk = st.given["topk"]
    if (
        st.env_true("SGLANG_ENABLE_SPEC_V2", False)
        and st.v["algorithm"] in ("EAGLE", "EAGLE3")
        and topk
        and topk > 1
    ):
        st.emit(
            rule,
            "--speculative-eagle-topk",
            topk,
            None,
            "SGLANG_ENABLE_SPEC_V2 supports only topk 1 in this version: ValueError at startup",
        )
        st.force_topk1.append("spec v2 supports only topk 1")


def _sg_overlap_v1_fallback(rule: FlagRule, st: _State) -> None:
    if st.v["disable_overlap_schedule"]:
        return
    topk = st.given["topk"]
    if topk is not None and topk > 1:
        why = "spec v2 supports only topk 1, so spec v1 runs without the overlap scheduler"
    elif not st.env_true("SGLANG_ENABLE_SPEC_V2", True):
        why = "SGLANG_ENABLE_SPEC_V2=False selects spec v1, without the overlap scheduler"
    else:
        return
    st.emit(rule, "--disable-overlap-schedule", False, True, why)
    st.v["disable_overlap_schedule"] = True


def _sg_overlap_env_off(rule: FlagRule, st: _State) -> None:
    if not st.v["disable_overlap_schedule"] and not st.env_true("SGLANG_ENABLE_SPEC_V2", True):
        st.emit(
            rule,
            "--disable-overlap-schedule",
            False,
            True,
            "SGLANG_ENABLE_SPEC_V2=False selects the non-overlap (synchronous) spec v2 path",
        )
        st.v["disable_overlap_schedule"] = True


def _sg_mixed_chunk(rule: FlagRule, st: _State) -> None:
    if st.v["enable_mixed_chunk"]:
        st.emit(
            rule,
            "--enable-mixed-chunk",
            True,
            False,
            "mixed chunked prefill is disabled for EAGLE speculative decoding in this version",
        )
        st.v["enable_mixed_chunk"] = False


def _sg_mtp_draft(archs: frozenset[str]) -> Callable[[FlagRule, _State], None]:
    def apply(rule: FlagRule, st: _State) -> None:
        arch = st.target_arch
        if arch not in archs:
            return
        draft = st.v["draft_model"]
        if draft is None:
            st.emit(
                rule,
                "--speculative-draft-model-path",
                None,
                st.cmd.model,
                f"{arch} target: SGLang takes the draft from the target checkpoint (its MTP layer)",
            )
            st.v["draft_model"] = st.cmd.model
        elif arch not in _MTP_NO_WARNING:
            st.emit(
                rule,
                "--speculative-draft-model-path",
                draft,
                draft,
                "SGLang logs 'DeepSeek MTP does not require setting speculative_draft_model_path.': harmless "
                "for a separate EAGLE-3 drafter, which is still used",
            )

    return apply


def _sg_draft_missing(known_target: bool) -> Callable[[FlagRule, _State], None]:
    def apply(rule: FlagRule, st: _State) -> None:
        eagle3 = st.v["algorithm"] == "EAGLE3"
        # EAGLE3 needs its own drafter even where SGLang defaults the path to an MTP target's own checkpoint.
        if (st.given["draft_model"] if eagle3 else st.v["draft_model"]) is not None:
            return
        if known_target != (eagle3 or st.target_arch is not None):
            return
        what = (
            "EAGLE3 needs an EAGLE-3 drafter (an MTP target's own checkpoint is not one)"
            if eagle3
            else f"{st.target_arch or 'this target'} has no built-in MTP draft"
        )
        st.emit(
            rule,
            "--speculative-draft-model-path",
            None,
            None,
            f"no --speculative-draft-model-path: {what}"
            + ("" if known_target else " (unless the target is an MTP model: pass its architecture)"),
        )

    return apply


def _sg_partial(skip_adaptive: bool) -> Callable[[FlagRule, _State], None]:
    def apply(rule: FlagRule, st: _State) -> None:
        if skip_adaptive and st.v["adaptive"]:
            return
        if st.v["num_steps"] is None and (st.v["topk"] is not None or st.v["num_draft_tokens"] is not None):
            given = [_SG_KEYS[k] for k in ("topk", "num_draft_tokens") if st.v[k] is not None]
            st.emit(
                rule,
                "--speculative-num-steps",
                None,
                None,
                f"{' and '.join(given)} set without --speculative-num-steps: SGLang asserts that all three are "
                "unset or num_steps is set (AssertionError at startup)",
            )

    return apply


def _sg_auto_local_config(rule: FlagRule, st: _State) -> None:
    if any(st.v[k] is not None for k in _TRIPLE):
        return
    model = st.cmd.model or ""
    if not Path(model).expanduser().exists() and re.match(r"^[\w.-]+/[\w.-]+$", model):
        st.emit(
            rule,
            "--model-path",
            model,
            None,
            "auto-choice reads <model_path>/config.json from local disk in this version: a hub id fails with "
            "'config.json is not found' (ValueError)",
        )


def _sg_auto_choice(epoch: AutoChoice) -> Callable[[FlagRule, _State], None]:
    def apply(rule: FlagRule, st: _State) -> None:
        if any(st.v[k] is not None for k in _TRIPLE) or st.v["adaptive"]:
            return
        arch = st.target_arch
        triple = epoch.choose(arch)
        if arch is None:
            why = "target architecture unknown: assumed not Llama/Grok/DeepSeek-class (pass the target architecture)"
        else:
            why = f"keyed on the target's architectures[0] = {arch}"
            text_arch = st.text_arch or WRAPPER_TEXT_ARCH.get(arch)
            if text_arch and text_arch != arch:
                other = epoch.choose(text_arch)
                why += f" (the wrapper, not its {text_arch} text model"
                why += f", which would get {other})" if other != triple else ")"
        for key, value in zip(_TRIPLE, triple, strict=True):
            st.emit(
                rule,
                _SG_KEYS[key],
                None,
                value,
                f"all three speculative sizes unset: SGLang auto-chooses (num_steps, topk, num_draft_tokens) = "
                f"{triple}, {why}; state them explicitly to control them",
            )
            st.v[key] = value

    return apply


def _sg_page_topk_to_1(user_set: bool) -> Callable[[FlagRule, _State], None]:
    def apply(rule: FlagRule, st: _State) -> None:
        topk, page = st.v["topk"], st.v["page_size"]
        if topk is None or page is None or not (page > 1 and topk > 1):
            return
        if user_set != (st.given["topk"] is not None):
            return
        st.emit(
            rule,
            "--speculative-eagle-topk",
            topk,
            1,
            f"with --page-size {page} SGLang sets topk := 1 in this version (the tree becomes a chain)",
        )
        st.v["topk"] = 1
        if user_set:
            st.force_topk1.append(f"--page-size {page} forces topk 1")

    return apply


def _sg_page_flashinfer_mtp(rule: FlagRule, st: _State) -> None:
    page = st.v["page_size"]
    archs = frozenset({"DeepseekV3ForCausalLM", "Glm4MoeForCausalLM"})
    if (
        st.target_arch in archs
        and page is not None
        and page != 1
        and st.v["attention_backend"] == "flashinfer"
    ):
        st.emit(
            rule,
            "--page-size",
            page,
            None,
            f"{st.target_arch} + flashinfer + page size {page}: ValueError 'Speculative decoding with "
            "page_size != 1 is not supported' in this version",
        )


def _sg_topk_unset(rule: FlagRule, st: _State) -> None:
    if st.v["num_steps"] is not None and st.v["topk"] is None and not st.v["adaptive"]:
        st.emit(
            rule,
            "--speculative-eagle-topk",
            None,
            None,
            "--speculative-num-steps set without --speculative-eagle-topk: topk stays None and the `topk > 1` "
            "checks raise TypeError at startup",
        )


def _sg_trtllm(rule: FlagRule, st: _State) -> None:
    keys = ("attention_backend", "decode_attention_backend", "prefill_attention_backend")
    topk = st.v["topk"]
    used = [_SG_KEYS[k] for k in keys if st.v[k] == "trtllm_mha"]
    if used and topk is not None and topk > 1:
        st.emit(
            rule,
            "--speculative-eagle-topk",
            topk,
            None,
            f"{used[0]} trtllm_mha supports only topk 1: ValueError 'trtllm_mha backend only supports topk = 1 "
            "for speculative decoding.' at startup",
        )
        st.force_topk1.append("trtllm_mha supports only topk 1")


def _sg_rejection_topk(rule: FlagRule, st: _State) -> None:
    topk = st.v["topk"]
    if st.v["rejection_sampling"] and topk is not None and topk != 1:
        st.emit(
            rule,
            "--speculative-eagle-topk",
            topk,
            None,
            "--speculative-use-rejection-sampling requires --speculative-eagle-topk=1 (ValueError at startup)",
        )
        st.force_topk1.append("rejection sampling requires topk 1")


def _sg_chain(user_set: bool) -> Callable[[FlagRule, _State], None]:
    def apply(rule: FlagRule, st: _State) -> None:
        steps, topk, ndt = st.v["num_steps"], st.v["topk"], st.v["num_draft_tokens"]
        if topk != 1 or steps is None or ndt == steps + 1:
            return
        if user_set != (ndt is not None and ndt == st.given["num_draft_tokens"]):
            return
        if user_set:
            msg = (
                f"with --speculative-eagle-topk 1 SGLang sets num_draft_tokens := num_steps + 1 = {steps + 1} "
                f"(logged once as 'speculative_num_draft_tokens is adjusted to speculative_num_steps + 1 when "
                f"speculative_eagle_topk == 1'): each step verifies {steps + 1} tokens ({steps} drafts), not "
                f"{ndt}"
            )
        else:
            msg = f"topk 1: num_draft_tokens := num_steps + 1 = {steps + 1}"
        st.emit(rule, "--speculative-num-draft-tokens", st.given["num_draft_tokens"], steps + 1, msg)
        st.v["num_draft_tokens"] = steps + 1

    return apply


def _sg_page_tree_backend(
    allowed: tuple[str, ...], backend_known: bool
) -> Callable[[FlagRule, _State], None]:
    def apply(rule: FlagRule, st: _State) -> None:
        topk, page, backend = st.v["topk"], st.v["page_size"], st.v["attention_backend"]
        if topk is None or page is None or not (topk > 1 and page > 1):
            return
        if backend_known != (backend is not None) or backend in allowed:
            return
        if backend_known:
            msg = f"topk {topk} with page size {page} needs --attention-backend in {allowed}: ValueError at startup"
        else:
            msg = (
                f"topk {topk} with page size {page} works only if the auto-selected attention backend is one of "
                f"{allowed}; otherwise ValueError at startup"
            )
        st.emit(rule, "--attention-backend", backend, None, msg)
        if backend_known:
            st.force_topk1.append(f"page size {page} with {backend} needs topk 1")

    return apply


def _sg_ndt_unset_tree(rule: FlagRule, st: _State) -> None:
    steps, topk, ndt = st.v["num_steps"], st.v["topk"], st.v["num_draft_tokens"]
    if steps is not None and topk is not None and topk >= 1 and ndt is None:
        why = "topk > 1" if topk > 1 else "topk 1 in a version without the num_steps + 1 rule"
        st.emit(
            rule,
            "--speculative-num-draft-tokens",
            None,
            None,
            f"{why} without --speculative-num-draft-tokens: nothing sets it and the draft tree cannot be built "
            "(inferred: fails on first use)",
        )


def _sg_nothing_proposed(rule: FlagRule, st: _State) -> None:
    steps, topk, ndt = st.v["num_steps"], st.v["topk"], st.v["num_draft_tokens"]
    if steps is not None and steps < 1:
        flag, value, why = "--speculative-num-steps", steps, "num_steps < 1 drafts nothing"
    elif topk is not None and topk < 1:
        flag, value, why = (
            "--speculative-eagle-topk",
            topk,
            "topk < 1 selects no draft token (torch.topk k < 1)",
        )
    elif ndt is not None and ndt < 2:
        flag, value, why = (
            "--speculative-num-draft-tokens",
            ndt,
            "num_draft_tokens - 1 < 1 drafts are verified",
        )
    else:
        return
    st.emit(rule, flag, value, value, f"{why}: speculation only costs time (no startup check; inferred)")


def _sg_tree_pool(rule: FlagRule, st: _State) -> None:
    steps, topk, ndt = st.v["num_steps"], st.v["topk"], st.v["num_draft_tokens"]
    if None in (steps, topk, ndt) or topk < 1 or steps < 1 or ndt < 2:
        return
    pool = _pool(steps, topk)
    if ndt - 1 > pool:
        st.emit(
            rule,
            "--speculative-num-draft-tokens",
            ndt,
            None,
            f"num_draft_tokens - 1 = {ndt - 1} > the {pool} candidates a depth-{steps}, top-{topk} tree holds "
            f"(topk + (num_steps-1)*topk^2): torch.topk(score_list, {ndt - 1}) raises on the first decode; "
            "there is no startup check (inferred)",
        )


def _sg_token_map(rule: FlagRule, st: _State) -> None:
    if st.v["algorithm"] == "EAGLE3" and st.v["token_map"] is not None:
        st.emit(
            rule,
            "--speculative-token-map",
            st.v["token_map"],
            None,
            "EAGLE3 drafters carry their own d2t vocabulary map: SGLang logs 'Speculative token map specified, "
            "but EAGLE3 models already have this. Ignoring the specified token map.'; remove the flag",
        )
        st.v["token_map"] = None


def _sg_adaptive(rule: FlagRule, st: _State) -> None:
    if st.v["adaptive"]:
        st.emit(
            rule,
            "--speculative-adaptive",
            True,
            True,
            "adaptive speculation changes num_steps at runtime (topk 1 only): the settings reported are the "
            "starting point, not what every step uses",
        )


# --------------------------------------------------------------------------------------------------------------
# vLLM: data tables

# SpeculativeConfig fields, by the versions they exist in (ast of the class body in every version read).
VLLM_CONFIG_KEYS: dict[str, str] = {
    "method": ">=0.8.5", "model": ">=0.8.5", "num_speculative_tokens": ">=0.8.5",
    "draft_tensor_parallel_size": ">=0.8.5", "quantization": ">=0.8.5", "max_model_len": ">=0.8.5",
    "revision": ">=0.8.5", "code_revision": ">=0.8.5", "prompt_lookup_max": ">=0.8.5",
    "prompt_lookup_min": ">=0.8.5",
    "acceptance_method": ">=0.8.5,<0.10.0", "disable_mqa_scorer": ">=0.8.5,<0.10.0",
    "posterior_alpha": ">=0.8.5,<0.10.0", "posterior_threshold": ">=0.8.5,<0.10.0",
    "disable_by_batch_size": ">=0.8.5,<0.20.0", "disable_log_stats": ">=0.8.5,<0.14.0",
    "disable_logprobs": ">=0.8.5,<0.14.0", "enable_chunked_prefill": ">=0.8.5,<0.14.0",
    "speculative_token_tree": ">=0.9.0,<0.21.0",
    "disable_padded_drafter_batch": ">=0.11.0", "enforce_eager": ">=0.11.0",
    "suffix_decoding_max_cached_requests": ">=0.14.0", "suffix_decoding_max_spec_factor": ">=0.14.0",
    "suffix_decoding_max_tree_depth": ">=0.14.0", "suffix_decoding_min_token_prob": ">=0.14.0",
    "draft_load_config": ">=0.20.0", "moe_backend": ">=0.20.0", "parallel_drafting": ">=0.20.0",
    "rejection_sample_method": ">=0.20.0", "synthetic_acceptance_length": ">=0.20.0",
    "synthetic_acceptance_rates": ">=0.20.0", "use_local_argmax_reduction": ">=0.20.0",
    "tensor_parallel_size": ">=0.20.0",  # exists only to raise "not a valid argument"
    "attention_backend": ">=0.21.0", "draft_sample_method": ">=0.21.0",
    "num_speculative_tokens_per_batch_size": ">=0.24.0",
    "kv_cache_dtype": ">=0.27.0", "use_heterogeneous_vocab": ">=0.27.0",
    "dspark_draft_topk": ">=0.28.0", "enable_adaptive_verification": ">=0.28.0",
    "index_share_for_mtp_iteration": ">=0.29.0", "disable_eagle_block_drop": ">=0.30.0",
    "disable_lookahead_block_hashes": ">=0.33.0", "draft_lm_head_quantization": ">=0.33.0",
    "fly_entropy_threshold": ">=0.33.0", "fly_entropy_top_k": ">=0.33.0", "fly_window_size": ">=0.33.0",
    "xpress_topc": ">=0.33.0",
}  # fmt: skip
_VL_INTERNAL = (
    "target_model_config",
    "target_parallel_config",
    "draft_model_config",
    "draft_parallel_config",
)
VLLM_DEFAULT_TOKENS = (
    3  # what a fix proposes when nothing says k: the speculators EAGLE-3 converter's default
)


def _vl_key_known(key: str, version: Version) -> bool:
    spec = VLLM_CONFIG_KEYS.get(key)
    return spec is not None and SpecifierSet(spec).contains(version, prereleases=True)


def _vl_speculators_tokens(config: dict | None) -> int | None:
    try:
        value = config["speculators_config"]["proposal_methods"][0]["speculative_tokens"]  # type: ignore[index]
    except (KeyError, IndexError, TypeError):
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


# --------------------------------------------------------------------------------------------------------------
# vLLM: fixes


def _vl_key_edit(key: str, value: Any = None, remove: bool = False) -> Edit:
    return Edit("--speculative-config", value, key=key, remove=remove)


def _vl_fix_method(st: _State, change: Change) -> Fix:
    edit = _vl_key_edit("method", "eagle3")
    return Fix(change.rule, (edit,), f"{edit.render()}: the drafter is EAGLE-3")


def _vl_fix_tokens(st: _State, change: Change) -> Fix:
    k = _vl_speculators_tokens(st.drafter)
    edit = _vl_key_edit("num_speculative_tokens", k or VLLM_DEFAULT_TOKENS)
    why = (
        f"the {k} its speculators config proposes"
        if k
        else f"{VLLM_DEFAULT_TOKENS} (the speculators EAGLE-3 converter's default; tune it)"
    )
    return Fix(change.rule, (edit,), f"{edit.render()}: {why}")


def _vl_fix_model(st: _State, change: Change) -> Fix:
    edit = _vl_key_edit("model", "<path of the EAGLE-3 drafter>")
    return Fix(change.rule, (edit,), "give the drafter as the config's model", mechanical=False)


def _vl_fix_draft_tp(st: _State, change: Change) -> Fix:
    edit = _vl_key_edit("draft_tensor_parallel_size", 1)
    return Fix(change.rule, (edit,), f"{edit.render()} (or the target's tensor parallel size)")


def _vl_fix_remove_keys(st: _State, change: Change) -> Fix:
    keys = change.given if isinstance(change.given, list) else [change.given]
    edits = tuple(_vl_key_edit(k, remove=True) for k in keys)
    return Fix(change.rule, edits, f"remove {', '.join(keys)} from --speculative-config")


def _vl_fix_tp_key(st: _State, change: Change) -> Fix:
    value = change.given
    edits = [_vl_key_edit("tensor_parallel_size", remove=True)]
    if "draft_tensor_parallel_size" not in st.spec_intended and value in (1, st.v["target_tp"]):
        edits.append(_vl_key_edit("draft_tensor_parallel_size", value))
    return Fix(change.rule, tuple(edits), "the key is draft_tensor_parallel_size")


def _vl_fix_dashes(st: _State, change: Change) -> Fix:
    key = str(change.given)
    new = key.replace("-", "_")
    edits = (_vl_key_edit(key, remove=True), _vl_key_edit(new, st.spec_intended.get(key)))
    return Fix(change.rule, edits, f"write the key as {new}")


def _vl_fix_into_config(st: _State, change: Change) -> Fix:
    flag = change.flag
    key = _VL_SHORT.get(flag) or _VL_LEGACY[flag][0]
    value = st.spec_intended.get(key)
    edits: tuple[Edit, ...] = (Edit(flag, remove=True),)
    if _vl_key_known(key, st.version):
        edits += (_vl_key_edit(key, value),)
        description = f"move {flag} into --speculative-config as {key!r}"
    else:
        edits += (_vl_key_edit(key, remove=True),)
        description = f"remove {flag}: vLLM {st.version} has no {key!r} key"
    return Fix(change.rule, edits, description)


def _vl_fix_short_conflict(st: _State, change: Change) -> Fix:
    return Fix(
        change.rule, (Edit(change.flag, remove=True),), f"remove {change.flag}: the JSON already sets it"
    )


# --------------------------------------------------------------------------------------------------------------
# vLLM: rules


def _vl_legacy(rule: FlagRule, st: _State) -> None:
    for o in st.cmd.options:
        if o.flag in _VL_LEGACY:
            key = _VL_LEGACY[o.flag][0]
            st.emit(
                rule,
                o.flag,
                o.value,
                None,
                f"{o.flag} was removed (last in vLLM 0.8.0): argparse rejects it at startup; the setting is "
                f"--speculative-config key {key!r}",
            )


def _vl_short_unknown(rule: FlagRule, st: _State) -> None:
    for o in st.cmd.options:
        if o.flag in _VL_SHORT:
            st.emit(
                rule,
                o.flag,
                o.value,
                None,
                f"{o.flag} does not exist before vLLM 0.22.0: argparse rejects it; use --speculative-config "
                f"key {_VL_SHORT[o.flag]!r}",
            )


def _vl_short_merge(rule: FlagRule, st: _State) -> None:
    for o in st.cmd.options:
        if o.flag not in _VL_SHORT:
            continue
        key = _VL_SHORT[o.flag]
        if key in (st.cmd.speculative_config or {}):
            continue  # the conflict rule reports it
        st.emit(
            rule,
            o.flag,
            o.value,
            st.v["spec"].get(key),
            f"{o.flag} is merged into --speculative-config as {key!r}",
        )


def _vl_short_conflict(rule: FlagRule, st: _State) -> None:
    for o in st.cmd.options:
        key = _VL_SHORT.get(o.flag)
        if key is not None and key in (st.cmd.speculative_config or {}):
            st.emit(
                rule,
                o.flag,
                o.value,
                None,
                f"{o.flag} and --speculative-config['{key}'] are mutually exclusive: ValueError at startup",
            )


def _vl_dotted_replaces(rule: FlagRule, st: _State) -> None:
    whole = [o for o in st.cmd.options if o.flag == "--speculative-config" and o.key is None]
    dotted = [o for o in st.cmd.options if o.flag == "--speculative-config" and o.key is not None]
    if whole and dotted:
        st.emit(
            rule,
            "--speculative-config",
            whole[-1].value,
            json.dumps(st.cmd.speculative_config),
            "dotted --speculative-config.KEY arguments are appended as a second --speculative-config after "
            "everything else, and argparse keeps the last one: the JSON given is dropped",
        )


def _vl_speculators_served(merged: bool) -> Callable[[FlagRule, _State], None]:
    def apply(rule: FlagRule, st: _State) -> None:
        config, _ = _local_config(st.cmd.model)
        if not config or config.get("speculators_config") is None:
            return
        k = _vl_speculators_tokens(config)
        method = config.get("speculators_model_type")
        user = dict(st.cmd.speculative_config or {})
        if merged:
            spec = {**user, "method": method, "num_speculative_tokens": user.get("num_speculative_tokens", k)}
            msg = (
                "the served model is a speculators checkpoint: vLLM takes method and num_speculative_tokens from "
                "its speculators_config, merges --speculative-config over them (method and model locked), and "
                "serves its verifier as the target"
            )
        else:
            spec = {"method": method, "num_speculative_tokens": k}
            msg = (
                "the served model is a speculators checkpoint: vLLM builds the speculative config from its "
                "speculators_config and serves its verifier as the target"
                + ("; your --speculative-config is replaced, not merged" if user else "")
            )
        spec["model"] = st.cmd.model
        st.emit(rule, "--speculative-config", user or None, spec, msg)
        st.v["spec"] = spec
        st.spec_intended = dict(spec)
        if st.drafter is None:
            st.drafter, st.drafter_source = config, st.cmd.model
            st.drafter_kind = _drafter_kind(config)

    return apply


def _vl_dashes(normalized: bool) -> Callable[[FlagRule, _State], None]:
    def apply(rule: FlagRule, st: _State) -> None:
        spec = st.v["spec"]
        for key in [k for k in spec if "-" in k]:
            new = key.replace("-", "_")
            msg = (
                f"vLLM rewrites the key {key!r} to {new!r}"
                if normalized
                else f"{key!r} is not a field (vLLM reads {new!r}; keys are not normalized before 0.27.0): startup "
                "fails with an unexpected-keyword error"
            )
            st.emit(rule, f"--speculative-config.{key}", key, new if normalized else None, msg)
            spec[new] = spec.pop(key)

    return apply


def _vl_tp_key(rule: FlagRule, st: _State) -> None:
    if "tensor_parallel_size" in st.v["spec"]:
        value = st.v["spec"]["tensor_parallel_size"]
        st.emit(
            rule,
            "--speculative-config.tensor_parallel_size",
            value,
            None,
            "'tensor_parallel_size' is not a valid argument in the speculative_config (ValueError from 0.20.0, "
            "an unexpected-keyword error before): the draft's is 'draft_tensor_parallel_size'",
        )


def _vl_unknown_keys(rule: FlagRule, st: _State) -> None:
    spec = st.v["spec"]
    unknown = [k for k in spec if k != "tensor_parallel_size" and not _vl_key_known(k, st.version)]
    unknown = [k for k in unknown if k not in _VL_INTERNAL]
    if unknown:
        st.emit(
            rule,
            "--speculative-config",
            unknown,
            None,
            f"unknown --speculative-config key(s) {', '.join(map(repr, unknown))} in vLLM {st.version}: "
            "SpeculativeConfig forbids extra fields, startup fails",
        )


def _vl_model_missing(rule: FlagRule, st: _State) -> None:
    spec = st.v["spec"]
    if spec.get("model") is None and spec.get("method") in (None, "eagle", "eagle3", "draft_model"):
        st.emit(
            rule,
            "--speculative-config.model",
            None,
            None,
            "no draft model: vLLM raises 'num_speculative_tokens was provided but without speculative model' "
            "(EAGLE heads are never taken from the target)",
        )


def _vl_method_detect(patterns: tuple[tuple[str, str], ...]) -> Callable[[FlagRule, _State], None]:
    def apply(rule: FlagRule, st: _State) -> None:
        spec = st.v["spec"]
        model = spec.get("model")
        if spec.get("method") is not None or model is None:
            return
        name = str(model).lower()
        method = next((m for pattern, m in patterns if pattern in name), "draft_model")
        found = " or ".join(repr(p) for p, m in patterns if m == method)
        how = f"the model name contains {found}" if method != "draft_model" else "no name pattern matched"
        st.emit(
            rule,
            "--speculative-config.method",
            None,
            method,
            f"method not given: detected as {method!r} ({how})",
        )
        spec["method"] = method

    return apply


def _vl_eagle3_as_draft_model(rule: FlagRule, st: _State) -> None:
    spec = st.v["spec"]
    if spec.get("method") == "draft_model" and st.drafter_kind == "eagle3":
        st.emit(
            rule,
            "--speculative-config.method",
            st.spec_intended.get("method"),
            "draft_model",
            f"the drafter ({st.drafter_source}) is EAGLE-3 but runs as an independent draft_model: its fc and "
            "aux hidden states are never wired (load fails or acceptance collapses)",
        )


def _vl_method_undetected(rule: FlagRule, st: _State) -> None:
    spec = st.v["spec"]
    if (
        spec.get("method") == "draft_model"
        and st.spec_intended.get("method") is None
        and st.drafter_kind is None
    ):
        st.emit(
            rule,
            "--speculative-config.method",
            None,
            "draft_model",
            "method not given and not detected: the model runs as an independent draft model; if it is an "
            'EAGLE-3 head, set "method": "eagle3"',
        )


def _vl_eagle_with_eagle3(rule: FlagRule, st: _State) -> None:
    if st.v["spec"].get("method") == "eagle" and st.drafter_kind == "eagle3":
        st.emit(
            rule,
            "--speculative-config.method",
            st.spec_intended.get("method"),
            "eagle",
            f"the drafter ({st.drafter_source}) is EAGLE-3 but method is 'eagle': no aux hidden states are "
            "captured and the architecture is mapped to an EAGLE-1 class (load fails or accept length ~1.0)",
        )


def _vl_tokens_from_n_predict(rule: FlagRule, st: _State) -> None:
    spec = st.v["spec"]
    n_predict = (st.drafter or {}).get("n_predict")
    if spec.get("num_speculative_tokens") is None and isinstance(n_predict, int) and n_predict > 0:
        st.emit(
            rule,
            "--speculative-config.num_speculative_tokens",
            None,
            n_predict,
            f"num_speculative_tokens not given: taken from the draft config's n_predict = {n_predict}",
        )
        spec["num_speculative_tokens"] = n_predict


def _vl_tokens_missing(rule: FlagRule, st: _State) -> None:
    spec = st.v["spec"]
    if spec.get("num_speculative_tokens") is not None:
        return
    k = _vl_speculators_tokens(st.drafter)
    extra = ""
    if k is not None:
        extra = (
            f"; the drafter's speculators_config proposes {k}, but vLLM reads it only when the checkpoint is "
            "served itself (vllm serve <speculator dir>), not as --speculative-config model"
        )
    st.emit(
        rule,
        "--speculative-config.num_speculative_tokens",
        None,
        None,
        "num_speculative_tokens not given and the draft config has no n_predict: ValueError "
        f"'num_speculative_tokens was not provided' at startup{extra}",
    )


def _vl_tokens_positive(rule: FlagRule, st: _State) -> None:
    value = st.v["spec"].get("num_speculative_tokens")
    if value is not None and _as_int("--speculative-config.num_speculative_tokens", value) <= 0:
        st.emit(
            rule,
            "--speculative-config.num_speculative_tokens",
            value,
            None,
            "num_speculative_tokens must be greater than zero (ValueError at startup)",
        )


def _vl_draft_tp(rule: FlagRule, st: _State) -> None:
    value = st.v["spec"].get("draft_tensor_parallel_size")
    target = st.v["target_tp"]
    if value is None:
        return
    if _as_int("--speculative-config.draft_tensor_parallel_size", value) not in (1, target):
        st.emit(
            rule,
            "--speculative-config.draft_tensor_parallel_size",
            value,
            None,
            f"draft_tensor_parallel_size can only be 1 or the target's tensor parallel size ({target}): "
            "ValueError at startup",
        )


def _vl_draft_tp_default(rule: FlagRule, st: _State) -> None:
    if st.v["spec"].get("draft_tensor_parallel_size") is None and st.v["spec"].get("model") is not None:
        target = st.v["target_tp"]
        st.emit(
            rule,
            "--speculative-config.draft_tensor_parallel_size",
            None,
            target,
            f"draft_tensor_parallel_size not given: the draft runs at the target's tensor parallel size {target}",
        )


def _vl_token_tree(rule: FlagRule, st: _State) -> None:
    tree = st.v["spec"].get("speculative_token_tree")
    if tree is None:
        return
    try:
        nodes = ast.literal_eval(str(tree))
        st.v["tree"] = (len(nodes), max(len(n) for n in nodes))
    except (ValueError, SyntaxError, TypeError):
        raise InputError(
            f"--speculative-config.speculative_token_tree: not a list of tuples: {tree!r}"
        ) from None
    st.emit(
        rule,
        "--speculative-config.speculative_token_tree",
        tree,
        tree,
        f"tree drafting: {st.v['tree'][0]} drafts per verify, depth {st.v['tree'][1]} (not a chain)",
    )


def _vl_chain(rule: FlagRule, st: _State) -> None:
    spec = st.v["spec"]
    k = spec.get("num_speculative_tokens")
    if spec.get("method") in ("eagle", "eagle3") and isinstance(k, int) and k > 0 and "tree" not in st.v:
        st.emit(
            rule,
            "--speculative-config.num_speculative_tokens",
            k,
            k,
            f"vLLM drafts EAGLE-3 as a chain: k={k} proposes {k} tokens per verify, at most {k + 1} accepted; "
            f"SGLang equivalent --speculative-num-steps {k} --speculative-eagle-topk 1 "
            f"--speculative-num-draft-tokens {k + 1}",
        )


# --------------------------------------------------------------------------------------------------------------
# The table


_Apply = Callable[[FlagRule, _State], None]
_MakeFix = Callable[[_State, Change], Fix | None]


def _r(
    name: str,
    engine: str,
    versions: str,
    severity: str,
    citation: str,
    summary: str,
    apply: _Apply,
    fix: _MakeFix | None = None,
    fails: bool = False,
) -> FlagRule:
    """One table row (positional, so the table reads as a table)."""
    return FlagRule(name, engine, versions, severity, citation, summary, apply, fix, fails)


_TRIPLE_FIX = _fix_triple

SGLANG_RULES: tuple[FlagRule, ...] = (
    _r("sglang.no_algorithm", SGLANG, "", PROBLEM,
       f"{SG_HOOK}:121-284 handle_speculative_decoding (every EAGLE step needs `speculative_algorithm is not "
       f"None`); {SG_SA}",
       "speculative flags without --speculative-algorithm are ignored", _sg_no_algorithm, _fix_no_algorithm),
    _r("sglang.algorithm_choices", SGLANG, ">=0.4.5,<0.5.12", PROBLEM,
       "sglang 0.4.5-0.5.11 server_args.py add_cli_args: --speculative-algorithm "
       "choices=[EAGLE, EAGLE3, NEXTN, ...]",
       "lower-case algorithm names are rejected", _sg_algorithm_case(False),
       lambda st, c: _fix_algorithm(str(c.given).upper())(st, c), fails=True),
    _r("sglang.algorithm_upper", SGLANG, ">=0.5.12", INFO,
       f"sglang 0.5.12 server_args.py _handle_speculative_decoding; {SG_HOOK}:136-143",
       "the algorithm is upper-cased", _sg_algorithm_case(True)),
    _r("sglang.nextn_alias", SGLANG, ">=0.4.5", INFO,
       f"{SG_HOOK}:109-115 _resolve_speculative_algorithm_alias; {SG_SA}",
       "NEXTN is EAGLE", _sg_nextn),
    _r("sglang.eagle_with_eagle3_drafter", SGLANG, ">=0.4.5", PROBLEM,
       "sglang 0.5.23 srt/model_executor/model_runner_components/spec_aux_hidden_state.py:140-196 (aux hidden "
       "states only for is_eagle3) and srt/models/llama_eagle3.py:238-247 (`if hidden_states.shape[-1] != "
       "embeds.shape[-1]: ... self.fc(...)`); same fc guard in 0.4.5/0.5.1/0.5.10; sgl-project/sglang#21272",
       "EAGLE with an EAGLE-3 drafter skips fc: accept length ~1.0", _sg_eagle_with_eagle3,
       _fix_algorithm("EAGLE3")),
    _r("sglang.max_running_requests", SGLANG, ">=0.4.5,<0.5.4", WARNING,
       f"{SG_SA}: `if self.max_running_requests is None: self.max_running_requests = 48`",
       "max running requests 48", _sg_max_running("no log line in this version")),
    _r("sglang.max_running_requests", SGLANG, ">=0.5.4", WARNING,
       f"{SG_HOOK}:1086-1095 _handle_eagle_family; sglang 0.5.4-0.5.12 server_args.py "
       "_handle_speculative_decoding",
       "max running requests 48", _sg_max_running("logged once as a warning")),
    _r("sglang.overlap_schedule", SGLANG, ">=0.4.5,<0.5.4", INFO,
       f"{SG_SA}: `self.disable_overlap_schedule = True` for EAGLE/EAGLE3",
       "overlap scheduler off", _sg_overlap_always_off),
    _r("sglang.overlap_schedule", SGLANG, ">=0.5.4,<0.5.5", INFO,
       "sglang 0.5.4 server_args.py _handle_speculative_decoding (enable_beta_spec)",
       "overlap scheduler off unless --enable-beta-spec with EAGLE",
       _sg_overlap_opt_in(("EAGLE",), "--enable-beta-spec")),
    _r("sglang.overlap_schedule", SGLANG, ">=0.5.5,<0.5.7", INFO,
       "sglang 0.5.5-0.5.6 server_args.py _handle_speculative_decoding; environ.py "
       "SGLANG_ENABLE_SPEC_V2 = EnvBool(False)",
       "overlap scheduler off unless SGLANG_ENABLE_SPEC_V2 with EAGLE",
       _sg_overlap_opt_in(("EAGLE",), "SGLANG_ENABLE_SPEC_V2")),
    _r("sglang.overlap_schedule", SGLANG, ">=0.5.7,<0.5.11", INFO,
       "sglang 0.5.7-0.5.10 server_args.py _handle_speculative_decoding; environ.py SGLANG_ENABLE_SPEC_V2 = "
       "EnvBool(False)",
       "overlap scheduler off unless SGLANG_ENABLE_SPEC_V2",
       _sg_overlap_opt_in(("EAGLE", "EAGLE3"), "SGLANG_ENABLE_SPEC_V2")),
    _r("sglang.spec_v2_topk", SGLANG, ">=0.5.7,<0.5.11", PROBLEM,
       "sglang 0.5.7-0.5.10 server_args.py: 'Spec v2 currently only supports topk = 1 for speculative "
       "decoding.'",
       "spec v2 needs topk 1", _sg_spec_v2_topk, _TRIPLE_FIX, fails=True),
    _r("sglang.overlap_schedule", SGLANG, ">=0.5.11,<0.5.13", INFO,
       "sglang 0.5.11-0.5.12 server_args.py _handle_speculative_decoding (spec_v1_reason); environ.py "
       "SGLANG_ENABLE_SPEC_V2 = EnvBool(True)",
       "topk > 1 falls back to spec v1 without overlap", _sg_overlap_v1_fallback),
    _r("sglang.overlap_schedule", SGLANG, ">=0.5.13,<0.5.14", INFO,
       "sglang 0.5.13 srt/arg_groups/speculative_hook.py _handle_eagle_family",
       "SGLANG_ENABLE_SPEC_V2=False: non-overlap spec v2", _sg_overlap_env_off),
    _r("sglang.mixed_chunk_disabled", SGLANG, ">=0.4.7,<0.5.19", INFO,
       f"{SG_SA}; sglang 0.5.13-0.5.18 speculative_hook.py _handle_eagle_family ('Mixed chunked prefill is "
       "disabled because of using eagle speculative decoding.'); from 0.5.19 only for algorithms without "
       "supports_mixed_chunk() (EAGLE/EAGLE3 keep it: speculative/spec_info.py)",
       "--enable-mixed-chunk is turned off", _sg_mixed_chunk),
    *(
        _r("sglang.mtp_draft_path", SGLANG, versions, INFO,
           f"{SG_HOOK}:1120-1157 _handle_eagle_family (model_arch list); {SG_SA} (list per version)",
           "MTP targets default the draft path to the target", _sg_mtp_draft(archs))
        for versions, archs in MTP_TARGETS
    ),
    _r("sglang.draft_model_missing", SGLANG, ">=0.4.5", PROBLEM,
       f"{SG_HOOK}:1120-1157 (only MTP targets get a default draft path); speculative/eagle_worker_v2.py loads "
       "speculative_draft_model_path (inferred: a None path cannot load)",
       "no drafter", _sg_draft_missing(True), _fix_draft_path, fails=True),
    _r("sglang.draft_model_missing_unknown_target", SGLANG, ">=0.4.5", WARNING,
       f"{SG_HOOK}:1120-1157", "no drafter, target unknown", _sg_draft_missing(False)),
    _r("sglang.partial_specification", SGLANG, ">=0.4.5,<0.5.19", PROBLEM,
       f"{SG_SA}: `if self.speculative_num_steps is None: assert (self.speculative_eagle_topk is None and "
       "self.speculative_num_draft_tokens is None)`; same in 0.5.13-0.5.18 speculative_hook.py",
       "topk/num_draft_tokens without num_steps: AssertionError", _sg_partial(False), _TRIPLE_FIX, fails=True),
    _r("sglang.partial_specification", SGLANG, ">=0.5.19", PROBLEM,
       f"{SG_HOOK}:1159-1163 (`if not cfg.speculative_adaptive and cfg.speculative_num_steps is None: "
       "assert ...`)",
       "topk/num_draft_tokens without num_steps: AssertionError", _sg_partial(True), _TRIPLE_FIX, fails=True),
    _r("sglang.auto_choice_needs_local_config", SGLANG, ">=0.4.5,<0.4.7", PROBLEM,
       "sglang 0.4.5/0.4.6 server_args.py auto_choose_speculative_params: `config_path = os.path.join("
       "self.model_path, 'config.json')`; `raise ValueError(f'{config_path} is not found.')`",
       "auto choice fails for hub ids", _sg_auto_local_config, _TRIPLE_FIX, fails=True),
    *(
        _r("sglang.auto_choice", SGLANG, epoch.versions, WARNING, epoch.citation,
           "all three unset: chosen by target architecture", _sg_auto_choice(epoch))
        for epoch in AUTO_CHOICES
    ),
    _r("sglang.page_size_topk_to_1", SGLANG, ">=0.4.5,<0.4.9", PROBLEM,
       "sglang 0.4.5-0.4.8 server_args.py: `if self.page_size > 1 and self.speculative_eagle_topk > 1: "
       "self.speculative_eagle_topk = 1`",
       "page size > 1 turns a tree into a chain", _sg_page_topk_to_1(True), _TRIPLE_FIX),
    _r("sglang.page_size_auto_topk_to_1", SGLANG, ">=0.4.5,<0.4.9", WARNING,
       "sglang 0.4.5-0.4.8 server_args.py (same rule, applied to the auto-chosen topk)",
       "page size > 1 turns the auto tree into a chain", _sg_page_topk_to_1(False)),
    _r("sglang.page_size_flashinfer_mtp", SGLANG, ">=0.5.1,<0.5.2", PROBLEM,
       "sglang 0.5.1 server_args.py: 'Speculative decoding with page_size != 1 is not supported. Please set "
       "page_size to 1.' (DeepSeek-V3/GLM-4-MoE with flashinfer)",
       "page size != 1 with flashinfer on MTP targets", _sg_page_flashinfer_mtp,
       lambda st, c: Fix(c.rule, (Edit("--page-size", "1"),), "--page-size 1"), fails=True),
    _r("sglang.topk_unset", SGLANG, ">=0.4.5", PROBLEM,
       f"{SG_HOOK}:1268-1283 (`cfg.speculative_eagle_topk > 1` with topk None raises TypeError); 0.5.2-0.5.12 "
       "server_args.py the same comparison (older: later, inferred)",
       "num_steps without topk", _sg_topk_unset, _TRIPLE_FIX, fails=True),
    _r("sglang.trtllm_mha_topk", SGLANG, ">=0.5.1", PROBLEM,
       f"{SG_HOOK}:1176-1180; sglang 0.5.1-0.5.12 server_args.py ('trtllm_mha backend only supports topk = 1')",
       "trtllm_mha needs topk 1", _sg_trtllm, _TRIPLE_FIX, fails=True),
    _r("sglang.rejection_sampling_topk", SGLANG, ">=0.5.14", PROBLEM,
       f"{SG_HOOK}:1218-1224 ('--speculative-use-rejection-sampling requires --speculative-eagle-topk=1.')",
       "rejection sampling needs topk 1", _sg_rejection_topk, _TRIPLE_FIX, fails=True),
    _r("sglang.chain_rule", SGLANG, ">=0.4.6", PROBLEM,
       f"{SG_HOOK}:1255-1266 _handle_eagle_family; {SG_SA} (from 0.4.6; absent in 0.4.5)",
       "topk 1 forces num_draft_tokens = num_steps + 1", _sg_chain(True), _TRIPLE_FIX),
    _r("sglang.chain_rule_fill", SGLANG, ">=0.4.6", INFO,
       f"{SG_HOOK}:1255-1266 _handle_eagle_family; {SG_SA}",
       "topk 1 sets num_draft_tokens = num_steps + 1", _sg_chain(False)),
    _r("sglang.page_size_tree_backend", SGLANG, ">=0.5.2,<0.5.6", PROBLEM,
       "sglang 0.5.2-0.5.5 server_args.py ('This combination is only supported for the 'flashinfer' backend.')",
       "topk > 1 with page size > 1 needs flashinfer", _sg_page_tree_backend(("flashinfer",), True), _TRIPLE_FIX,
       fails=True),
    _r("sglang.page_size_tree_backend", SGLANG, ">=0.5.6,<0.5.13", PROBLEM,
       "sglang 0.5.6-0.5.12 server_args.py (`attention_backend not in ['flashinfer', 'fa3']`)",
       "topk > 1 with page size > 1 needs flashinfer/fa3", _sg_page_tree_backend(("flashinfer", "fa3"), True),
       _TRIPLE_FIX, fails=True),
    _r("sglang.page_size_tree_backend", SGLANG, ">=0.5.13", PROBLEM,
       f"{SG_HOOK}:1268-1283 (_PAGE_TREE_SPEC_BACKENDS = ('flashinfer', 'fa3', 'triton'))",
       "topk > 1 with page size > 1 needs flashinfer/fa3/triton",
       _sg_page_tree_backend(("flashinfer", "fa3", "triton"), True), _TRIPLE_FIX, fails=True),
    _r("sglang.page_size_tree_backend_auto", SGLANG, ">=0.5.2", WARNING,
       f"{SG_HOOK}:1268-1283; sglang 0.5.2-0.5.12 server_args.py",
       "topk > 1 with page size > 1 depends on the auto-selected backend",
       _sg_page_tree_backend(("flashinfer", "fa3", "triton"), False)),
    _r("sglang.num_draft_tokens_unset", SGLANG, ">=0.4.5", PROBLEM,
       f"{SG_HOOK}:1159-1266 (num_draft_tokens is only set by the auto choice or the topk-1 rule; inferred)",
       "topk set, num_draft_tokens never set", _sg_ndt_unset_tree, _TRIPLE_FIX, fails=True),
    _r("sglang.nothing_proposed", SGLANG, ">=0.4.5", PROBLEM,
       "sglang 0.5.23 speculative/eagle_utils.py:110 torch.topk(score_list, num_draft_token - 1); no startup check "
       "in speculative_hook.py (inferred)",
       "sizes that propose no draft token", _sg_nothing_proposed, _TRIPLE_FIX),
    _r("sglang.tree_pool_too_small", SGLANG, ">=0.4.5", PROBLEM,
       "sglang 0.5.23 speculative/eagle_utils.py:100-110 organize_draft_results (pool topk + (num_steps-1)*topk^2, "
       "torch.topk(score_list, num_draft_token - 1)); 0.4.5-0.4.10 build_eagle_tree.py; no check in "
       "speculative_hook.py (inferred)",
       "more draft tokens than tree candidates", _sg_tree_pool, _TRIPLE_FIX, fails=True),
    _r("sglang.token_map_ignored", SGLANG, ">=0.4.5", WARNING,
       "sglang 0.5.23 speculative/eagle_worker_v2.py:323-333 init_token_map; 0.4.5-0.5.x "
       "speculative/eagle_worker.py",
       "EAGLE3 ignores --speculative-token-map", _sg_token_map),
    _r("sglang.adaptive", SGLANG, ">=0.5.11", WARNING,
       f"{SG_HOOK}:1374-1427 (_init_adaptive_speculative_params); sglang 0.5.11 server_args.py",
       "adaptive steps", _sg_adaptive),
)  # fmt: skip

VLLM_RULES: tuple[FlagRule, ...] = (
    _r("vllm.legacy_flags", VLLM, ">=0.8.5", PROBLEM,
       "vllm 0.8.0 engine/arg_utils.py:779-878 defines --speculative-model, --num-speculative-tokens, ...; "
       "0.8.5+ engine/arg_utils.py has only --speculative-config",
       "removed individual speculative flags", _vl_legacy, _vl_fix_into_config, fails=True),
    _r("vllm.short_flags_unknown", VLLM, ">=0.8.5,<0.22.0", PROBLEM,
       "vllm 0.21.0 engine/arg_utils.py has no --spec-method/--spec-model/--spec-tokens (0.22.0 adds them)",
       "--spec-* flags do not exist yet", _vl_short_unknown, _vl_fix_into_config, fails=True),
    _r("vllm.short_flags", VLLM, ">=0.22.0", INFO,
       f"{VL_ARGS}:1868-1873 (flags), 2100-2121 create_speculative_config",
       "--spec-* flags merge into the config", _vl_short_merge),
    _r("vllm.short_flags_conflict", VLLM, ">=0.22.0", PROBLEM,
       f"{VL_ARGS}:2117-2120 ('{{flag}} and --speculative-config[...] are mutually exclusive')",
       "a --spec-* flag and the same JSON key", _vl_short_conflict, _vl_fix_short_conflict, fails=True),
    _r("vllm.dotted_config_replaces_json", VLLM, ">=0.10.0", WARNING,
       "vllm 0.33.0 utils/argparse_utils.py:405-499 FlexibleArgumentParser.parse_args (dict args appended last); "
       "0.10.0-0.11.0 utils/__init__.py the same",
       "dotted keys drop the JSON", _vl_dotted_replaces),
    _r("vllm.speculators_served", VLLM, ">=0.10.1,<0.29.0", WARNING,
       "vllm 0.11.0-0.28.0 transformers_utils/config.py maybe_override_with_speculators (returns the speculators "
       "config; the user's is dropped); absent in 0.10.0",
       "a speculators checkpoint served directly", _vl_speculators_served(False)),
    _r("vllm.speculators_served", VLLM, ">=0.29.0", INFO,
       "vllm 0.33.0 transformers_utils/config.py:800-860 maybe_override_with_speculators (merges the user's config, "
       "locks method and model); 0.29.0 first with the merge",
       "a speculators checkpoint served directly", _vl_speculators_served(True)),
    _r("vllm.config_key_dashes", VLLM, ">=0.8.5,<0.27.0", PROBLEM,
       "vllm 0.24.0 engine/arg_utils.py create_speculative_config passes keys unchanged (0.27.0 adds "
       "k.replace('-', '_'))",
       "dashed keys are unknown", _vl_dashes(False), _vl_fix_dashes, fails=True),
    _r("vllm.config_key_dashes", VLLM, ">=0.27.0", INFO,
       f"{VL_ARGS}:2125-2128 (`k.replace('-', '_')`)", "dashed keys are normalized", _vl_dashes(True)),
    _r("vllm.tensor_parallel_size_key", VLLM, ">=0.8.5", PROBLEM,
       f"{VL_CFG}:430-433, 1939-1944 _verify_args (ValueError from 0.20.0; before, SpeculativeConfig has no such "
       "field: unexpected keyword)",
       "tensor_parallel_size in the speculative config", _vl_tp_key, _vl_fix_tp_key, fails=True),
    _r("vllm.unknown_keys", VLLM, ">=0.8.5", PROBLEM,
       "SpeculativeConfig fields per version (vllm 0.8.5-0.33.0 config class bodies); vllm 0.33.0 config/utils.py:"
       "70-71 ConfigDict(extra='forbid'); 0.8.5 SpeculativeConfig.from_dict = cls(**dict)",
       "unknown speculative config keys", _vl_unknown_keys, _vl_fix_remove_keys, fails=True),
    _r("vllm.model_missing", VLLM, ">=0.8.5", PROBLEM,
       f"{VL_CFG}:1252-1295 ('num_speculative_tokens was provided but without speculative model')",
       "no draft model", _vl_model_missing, _vl_fix_model, fails=True),
    _r("vllm.method_detect", VLLM, ">=0.8.5,<0.10.2", INFO,
       "vllm 0.8.5-0.10.1.1 config.py SpeculativeConfig.__post_init__: `elif 'eagle-' in ... or 'eagle3-' in ...: "
       "self.method = 'eagle'`",
       "method from the model name (eagle3- gives eagle)",
       _vl_method_detect((("eagle-", "eagle"), ("eagle3-", "eagle")))),
    _r("vllm.method_detect", VLLM, ">=0.10.2", INFO,
       f"{VL_CFG}:1429-1448 ('eagle-' -> eagle, 'eagle3' -> eagle3, else draft_model)",
       "method from the model name", _vl_method_detect((("eagle-", "eagle"), ("eagle3", "eagle3")))),
    _r("vllm.eagle3_drafter_as_draft_model", VLLM, ">=0.8.5", PROBLEM,
       f"{VL_CFG}:1429-1510 (draft_model keeps the checkpoint's own architecture; EAGLEConfig wrapping only for "
       "eagle/eagle3)",
       "an EAGLE-3 head run as a draft model", _vl_eagle3_as_draft_model, _vl_fix_method),
    _r("vllm.method_undetected", VLLM, ">=0.8.5", WARNING,
       f"{VL_CFG}:1429-1500", "method fell back to draft_model", _vl_method_undetected),
    _r("vllm.eagle_with_eagle3_drafter", VLLM, ">=0.8.5", PROBLEM,
       "vllm 0.33.0 transformers_utils/configs/eagle.py:43-66 (method 'eagle' maps architectures to Eagle<arch>); "
       "aux hidden states only for eagle3 (config/speculative.py use_eagle/compute_hash)",
       "method eagle with an EAGLE-3 drafter", _vl_eagle_with_eagle3, _vl_fix_method, fails=True),
    _r("vllm.num_speculative_tokens_from_draft", VLLM, ">=0.8.5", INFO,
       f"{VL_CFG}:1584-1604 (`if self.num_speculative_tokens is None: self.num_speculative_tokens = n_predict`)",
       "num_speculative_tokens from n_predict", _vl_tokens_from_n_predict),
    _r("vllm.num_speculative_tokens_missing", VLLM, ">=0.8.5", PROBLEM,
       f"{VL_CFG}:1614-1618, 1946-1951; speculators proposal_methods read only by transformers_utils/config.py "
       "maybe_override_with_speculators (served model)",
       "num_speculative_tokens missing", _vl_tokens_missing, _vl_fix_tokens, fails=True),
    _r("vllm.num_speculative_tokens_positive", VLLM, ">=0.8.5", PROBLEM,
       f"{VL_CFG}:413 (Field gt=0), 1967-1971; vllm 0.8.5 config.py:2550-2552",
       "num_speculative_tokens <= 0", _vl_tokens_positive, _vl_fix_tokens, fails=True),
    _r("vllm.draft_tensor_parallel_size", VLLM, ">=0.8.5", PROBLEM,
       f"{VL_CFG}:1849-1870 _verify_and_get_draft_tp; vllm 0.8.5 config.py:2489-2515",
       "draft TP must be 1 or the target TP", _vl_draft_tp, _vl_fix_draft_tp, fails=True),
    _r("vllm.draft_tensor_parallel_size_default", VLLM, ">=0.8.5", INFO,
       f"{VL_CFG}:1856-1861", "draft TP defaults to the target TP", _vl_draft_tp_default),
    _r("vllm.speculative_token_tree", VLLM, ">=0.9.0,<0.21.0", INFO,
       "vllm 0.14.0 config/speculative.py:441-451 (chain unless speculative_token_tree is given); removed in "
       "0.21.0",
       "tree drafting", _vl_token_tree),
    _r("vllm.chain", VLLM, ">=0.8.5", INFO,
       f"{VL_CFG} (one num_speculative_tokens, no topk); vllm-project/vllm#16035 (SGLang ndt - 1 = vLLM k)",
       "EAGLE-3 in vLLM is a chain", _vl_chain),
)  # fmt: skip

RULES: tuple[FlagRule, ...] = SGLANG_RULES + VLLM_RULES


def rules_for(engine: str, version: str | Version | None = None) -> list[FlagRule]:
    """The rows that apply to one engine version (newest encoded when None), in the engine's order."""
    v = Version(str(version)) if version is not None else Version(NEWEST[engine])
    return [r for r in RULES if r.engine == engine and r.covers(v)]


# --------------------------------------------------------------------------------------------------------------
# Lint


def _settings_sglang(values: dict[str, Any]) -> Settings:
    n, k, d = values["num_steps"], values["topk"], values["num_draft_tokens"]
    proposed = d - 1 if isinstance(d, int) else None
    max_accept = None
    if isinstance(n, int):
        max_accept = (min(n, proposed) if proposed is not None else n) + 1
    return Settings(
        values["algorithm"],
        n,
        k,
        d,
        proposed,
        max_accept,
        draft_model=values["draft_model"],
        max_running_requests=values["max_running_requests"],
    )


def _settings_vllm(spec: dict, tree: tuple[int, int] | None) -> Settings:
    k = spec.get("num_speculative_tokens")
    k = k if isinstance(k, int) and not isinstance(k, bool) else None
    method = spec.get("method")
    model = spec.get("model")
    if tree is not None:
        return Settings(method, tree[1], None, tree[0] + 1, tree[0], tree[1] + 1, k, method, model)
    if k is None:
        return Settings(method, num_speculative_tokens=None, method=method, draft_model=model)
    return Settings(method, k, 1, k + 1, k, k + 1, k, method, model)


@dataclass
class _Outcome:
    report: LintReport
    st: _State


def _load_drafter(
    drafter_config: dict | str | Path | None, draft_path: str | None
) -> tuple[dict | None, str | None]:
    if isinstance(drafter_config, dict):
        return drafter_config, "the given drafter config"
    if drafter_config is not None:
        p = Path(drafter_config).expanduser()
        file = p / "config.json" if p.is_dir() else p
        if not file.is_file():
            raise InputError(
                f"{drafter_config}: drafter config not found (a directory with config.json, or the file)"
            )
        return read_json_object(file, "drafter config"), str(file)
    return _local_config(draft_path)


def _vllm_inputs(cmd: LaunchCommand, version: Version) -> tuple[dict, dict]:
    """(what vLLM parses, what the user meant): --spec-* and removed legacy flags merged in where they apply."""
    spec = dict(cmd.speculative_config or {})
    for key in ("num_speculative_tokens", "draft_tensor_parallel_size"):
        if spec.get(key) is not None:  # pydantic's lax mode takes "3" and 3.0 for an int field
            spec[key] = _as_int(f"--speculative-config.{key}", spec[key])
    intended = dict(spec)
    for o in cmd.options:
        if o.flag in _VL_SHORT:
            key = _VL_SHORT[o.flag]
            if key in spec:
                continue  # conflict: vllm.short_flags_conflict
            value = _as_int(o.given_as, o.value) if o.flag == "--spec-tokens" else o.value
            intended[key] = value
            if version >= Version("0.22.0"):
                spec[key] = value
        elif o.flag in _VL_LEGACY:
            key, kind = _VL_LEGACY[o.flag]
            value: Any = o.value
            if kind == "switch":
                value = True
            elif kind == "int":
                value = _as_int(o.given_as, o.value)
            elif kind == "float":
                value = _as_float(o.given_as, o.value)
            intended.setdefault(key, value)
            if _vl_key_known(key, version):
                spec.setdefault(key, value)  # best effort: lint what the user meant, the flag itself fails
    return spec, intended


def _evaluate(
    cmd: LaunchCommand,
    version_text: str | None,
    target_arch: str | None,
    drafter_config: dict | str | Path | None,
) -> _Outcome:
    version, defaulted, notes = _resolve_version(cmd.engine, version_text)
    model_config, _ = _local_config(cmd.model)
    served_speculators = bool(model_config and model_config.get("speculators_config") is not None)
    text_arch = None
    if target_arch is None and model_config is not None and not served_speculators:
        target_arch, text_arch = _archs(model_config)
    if cmd.engine == SGLANG:
        given = _sg_given(cmd)
        algorithm = given["algorithm"]
        if algorithm is not None and algorithm.upper() not in SGLANG_ALGORITHMS:
            raise InputError(
                f"--speculative-algorithm {algorithm}: eaglewire lints {', '.join(SGLANG_ALGORITHMS)} launches"
            )
        if algorithm is None and not any(o.flag.startswith("--speculative-") for o in cmd.options):
            raise InputError("no speculative decoding in this command: --speculative-algorithm is not set")
        values: dict[str, Any] = dict(given)
        draft_path = given["draft_model"]
    else:
        spec, intended = _vllm_inputs(cmd, version)
        if not intended and not served_speculators:
            raise InputError("no speculative decoding in this command: --speculative-config is not set")
        tp = cmd.get("--tensor-parallel-size")
        values = {"spec": spec, "target_tp": _as_int("--tensor-parallel-size", tp) if tp is not None else 1}
        given = {"spec": intended}
        draft_path = spec.get("model")
    drafter, drafter_source = _load_drafter(drafter_config, draft_path)
    kind = _drafter_kind(drafter) if drafter is not None else None
    if kind is None and drafter is None and draft_path and "eagle3" in str(draft_path).lower():
        kind, drafter_source = "eagle3", f"{draft_path}, by its name"
    st = _State(
        cmd, version, target_arch, text_arch, kind, drafter_source, drafter, given, values, notes=notes
    )
    if cmd.engine == VLLM:
        st.spec_intended = dict(given["spec"])
    else:
        st.auto = _auto_for(version).choose(target_arch)
    applied: list[str] = []
    for rule in RULES:
        if rule.engine == cmd.engine and rule.covers(version):
            applied.append(rule.name)
            if not st.halted:
                rule.apply(rule, st)
    if cmd.engine == SGLANG:
        given_settings, effective = _settings_sglang(given), _settings_sglang(st.v)
    else:
        given_settings = _settings_vllm(given["spec"], None)
        effective = _settings_vllm(st.v["spec"], st.v.get("tree"))
        if any(o.key is not None for o in cmd.options) and version < Version("0.10.0"):
            st.notes.append("dotted --speculative-config.KEY arguments were checked in vLLM 0.10.0+ only")
    fixes = [fix for i, make in st.fix_for.items() if (fix := make(st, st.changes[i])) is not None]
    report = LintReport(
        engine=cmd.engine,
        version=str(version),
        version_defaulted=defaulted,
        argv=list(cmd.argv),
        target_arch=target_arch,
        drafter_kind=st.drafter_kind,
        given=given_settings,
        effective=effective,
        changes=list(st.changes),
        fixes=fixes,
        fixed_argv=None,
        starts=not st.fails,
        notes=st.notes,
        rules_applied=applied,
    )
    return _Outcome(report, st)


# --------------------------------------------------------------------------------------------------------------
# Applying fixes to argv


def _apply_edits(st: _State, edits: Sequence[Edit]) -> list[str]:
    """The command with `edits` applied: a flag is replaced in place (its last occurrence), removed, or appended.

    vLLM config keys: every --speculative-config (JSON or dotted), --spec-* and removed legacy flag is replaced by
    one --speculative-config holding what the user meant, with the key edits applied.
    """
    cmd = st.cmd
    slots: list[list[str]] = [[t] for t in cmd.argv]
    drop: set[int] = set()
    tail: list[str] = []
    spec_flags = {"--speculative-config", *_VL_SHORT, *_VL_LEGACY}
    key_edits = [e for e in edits if e.key is not None]
    flag_edits = [e for e in edits if e.key is None]
    rebuild = cmd.engine == VLLM and (bool(key_edits) or any(e.flag in spec_flags for e in flag_edits))
    for edit in flag_edits:
        if rebuild and edit.flag in spec_flags:
            continue
        found = [o for o in cmd.options if o.flag == edit.flag]
        for o in found if edit.remove else found[:-1]:
            drop.update(range(o.start, o.stop))
        if edit.remove:
            continue
        if found:
            last = found[-1]
            drop.update(range(last.start + 1, last.stop))
            slots[last.start] = (
                [f"{last.given_as}={edit.value}"] if last.inline else [last.given_as, str(edit.value)]
            )
        else:
            tail += [edit.flag, str(edit.value)]
    if rebuild:
        spec = dict(st.given["spec"])
        for edit in key_edits:
            if edit.remove:
                spec.pop(str(edit.key), None)
            else:
                spec[str(edit.key)] = edit.value
        bearing = [o for o in cmd.options if o.flag in spec_flags]
        for o in bearing:
            drop.update(range(o.start, o.stop))
        text = ["--speculative-config", json.dumps(spec)]
        if bearing:
            drop.discard(bearing[0].start)
            slots[bearing[0].start] = text
        else:
            tail += text
    return [token for i, slot in enumerate(slots) if i not in drop for token in slot] + tail


def _fixed_argv(
    outcome: _Outcome, version: str | None, target_arch: str | None, drafter_config: dict | str | Path | None
) -> list[str] | None:
    """Apply every fix and lint again, until no problem is left (4 rounds at most). None when a fix needs a value
    only the user knows (a drafter path)."""
    current = outcome
    for _ in range(4):
        report = current.report
        if len(report.fixes) < len(report.problems) or not all(f.mechanical for f in report.fixes):
            return None
        argv = _apply_edits(current.st, [e for f in report.fixes for e in f.edits])
        current = _evaluate(parse_launch(argv, current.st.cmd.engine), version, target_arch, drafter_config)
        if not current.report.has_problem:
            return argv
    return None


def lint(
    argv: list[str],
    *,
    engine: str | None = None,
    engine_version: str | None = None,
    target_arch: str | None = None,
    drafter_config: dict | str | Path | None = None,
) -> LintReport:
    """Replay the engine's rules on a launch command: effective settings, silent changes, fixes, fixed command.

    `engine_version` None assumes the newest version encoded (the report says so). `target_arch` None reads
    `architectures[0]` from the model's config.json when the model is a local directory. `drafter_config` (a dict,
    or a directory / config.json path) tells EAGLE-3 drafters apart; None reads the draft model's config.json when
    it is local. Raises `InputError` (one line, naming the flag) on malformed input.
    """
    outcome = _evaluate(parse_launch(argv, engine), engine_version, target_arch, drafter_config)
    report = outcome.report
    if report.has_problem:
        report.fixed_argv = _fixed_argv(outcome, engine_version, target_arch, drafter_config)
        if report.fixed_argv is None:
            report.notes.append("no fixed command: a fix needs a value only you know (see fixes)")
    return report
