"""Parse a launch command the way the engine's argparse would: flags, aliases, `--flag=value`, vLLM's dotted
`--speculative-config.KEY VALUE` and shorthand flags, leading `VAR=value` assignments and wrappers. Values stay
strings; `lint` interprets them per engine version."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eaglewire.errors import InputError
from eaglewire.flags.scanned import switches
from eaglewire.flags.values import LaunchCommand, Option
from eaglewire.flags.versions import ENGINES, SGLANG, VLLM


@dataclass(frozen=True)
class FlagSpec:
    kind: str  # "str" | "int" | "float" | "switch" | "json"
    aliases: tuple[str, ...] = ()


SG_FLAGS: dict[str, FlagSpec] = {
    "--model-path": FlagSpec("str", ("--model",)),
    "--speculative-algorithm": FlagSpec("str"),
    "--speculative-draft-model-path": FlagSpec("str", ("--speculative-draft-model",)),
    "--speculative-draft-model-revision": FlagSpec("str"),
    "--speculative-num-steps": FlagSpec("int"),
    "--speculative-eagle-topk": FlagSpec("int"),
    "--speculative-num-draft-tokens": FlagSpec("int"),
    "--speculative-token-map": FlagSpec("str"),
    "--speculative-accept-threshold-single": FlagSpec("float"),
    "--speculative-accept-threshold-acc": FlagSpec("float"),
    "--speculative-use-rejection-sampling": FlagSpec("switch"),
    "--speculative-adaptive": FlagSpec("switch"),
    "--enable-beta-spec": FlagSpec("switch"),
    "--max-running-requests": FlagSpec("int"),
    "--attention-backend": FlagSpec("str"),
    "--decode-attention-backend": FlagSpec("str"),
    "--prefill-attention-backend": FlagSpec("str"),
    "--page-size": FlagSpec("int"),
    "--tp-size": FlagSpec("int", ("--tp", "--tensor-parallel-size")),
    "--enable-mixed-chunk": FlagSpec("switch"),
    "--disable-overlap-schedule": FlagSpec("switch"),
    "--trust-remote-code": FlagSpec("switch"),
    "--enable-dp-attention": FlagSpec("switch"),
    "--dp-size": FlagSpec("int", ("--dp", "--data-parallel-size")),
    "--attn-dp-size": FlagSpec("int"),
    "--speculative-ngram-max-bfs-breadth": FlagSpec("int"),
    "--speculative-adaptive-config": FlagSpec("str"),
    "--quantization": FlagSpec("str"),
    "--speculative-draft-model-quantization": FlagSpec("str"),
    "--context-length": FlagSpec("int"),
    "--speculative-draft-window-size": FlagSpec("int"),
    "--speculative-draft-sink-size": FlagSpec("int"),
}

# vLLM flags that existed up to 0.8.0 (vllm 0.8.0 engine/arg_utils.py) and are gone by 0.8.5: argparse rejects
# them. Each maps to the --speculative-config key that replaced it, with the versions that key exists in.
VL_LEGACY: dict[str, tuple[str, str]] = {
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
VL_SHORT = {"--spec-method": "method", "--spec-model": "model", "--spec-tokens": "num_speculative_tokens"}

VL_FLAGS: dict[str, FlagSpec] = {
    "--model": FlagSpec("str"),
    "--speculative-config": FlagSpec("json", ("-sc",)),
    "--spec-method": FlagSpec("str"),
    "--spec-model": FlagSpec("str"),
    "--spec-tokens": FlagSpec("int"),
    "--tensor-parallel-size": FlagSpec("int", ("-tp",)),
    "--trust-remote-code": FlagSpec("switch"),
    "--enforce-eager": FlagSpec("switch"),
    "--quantization": FlagSpec("str", ("-q",)),
    "--revision": FlagSpec("str"),
    "--max-model-len": FlagSpec("str"),  # vLLM also takes 1k, 32K, -1 (parsed by the rule that reads it)
    **{flag: FlagSpec(kind) for flag, (_key, kind) in VL_LEGACY.items()},
}

_ENV_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_NUMBER = re.compile(r"^-\d+(\.\d+)?$")
_PYTHON = re.compile(r"^python(\d+(\.\d+)?)?$")
_WRAPPERS = ("env", "nohup", "exec")


def _is_flag(token: str) -> bool:
    return token.startswith("-") and token != "-" and not _NUMBER.match(token)


def as_int(flag: str, value: Any) -> int:
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


def as_float(flag: str, value: Any) -> float:
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
    specs = SG_FLAGS if engine == SGLANG else VL_FLAGS
    for canonical, spec in specs.items():
        if name in spec.aliases:
            return canonical, key
    return name, key


def _parse_options(
    engine: str, tokens: list[str], start: int, positional_model: bool
) -> tuple[tuple[Option, ...], str | None, bool]:
    specs = SG_FLAGS if engine == SGLANG else VL_FLAGS
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
        if spec is None and flag in switches(engine):
            spec = FlagSpec("switch")  # a boolean argument of the newest release read (scanned.py)
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
            as_int(name, value)
        elif spec is not None and kind == "float":
            as_float(name, value)
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
                as_int(f"--speculative-config.{key}", spec_config[key])
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


# SGLang settings: the key each rule reads, the flag it comes from.
SG_KEYS = {
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
    "tp_size": "--tp-size",
    "dp_size": "--dp-size",
    "attn_dp_size": "--attn-dp-size",
    "enable_dp_attention": "--enable-dp-attention",
    "ngram_bfs": "--speculative-ngram-max-bfs-breadth",
    "adaptive_config": "--speculative-adaptive-config",
    "quantization": "--quantization",
    "draft_quantization": "--speculative-draft-model-quantization",
    "context_length": "--context-length",
    "draft_window": "--speculative-draft-window-size",
    "draft_sink": "--speculative-draft-sink-size",
}
TRIPLE = ("num_steps", "topk", "num_draft_tokens")
# SGLang's builtin algorithms (sglang 0.5.23 srt/speculative/spec_info.py:32-47, spec_registry.py:183 NEXTN) by
# the handler family that resolves their settings (spec_info.py:235-266 handle_server_args).
SGLANG_FAMILIES = {
    "EAGLE": "eagle", "EAGLE3": "eagle", "NEXTN": "eagle", "STANDALONE": "eagle", "NGRAM": "ngram",
    "DFLASH": "other", "DSPARK": "other", "UNO": "other", "FROZEN_KV_MTP": "other",
}  # fmt: skip
SGLANG_ALGORITHMS = tuple(SGLANG_FAMILIES)


def sglang_given(cmd: LaunchCommand) -> dict[str, Any]:
    """The speculative settings as the command gives them (ints parsed, switches as booleans)."""
    given: dict[str, Any] = {}
    for key, flag in SG_KEYS.items():
        spec = SG_FLAGS[flag]
        if spec.kind == "switch":
            given[key] = cmd.has(flag)
        else:
            raw = cmd.get(flag)
            given[key] = as_int(flag, raw) if (raw is not None and spec.kind == "int") else raw
    return given
