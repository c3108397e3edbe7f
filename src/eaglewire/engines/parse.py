"""Parse a launch command the way the release's argparse does (its own parser, executed: rules/parsers.py): flags,
aliases, prefixes of flags, `--flag=value`, vLLM's dotted `--speculative-config.KEY VALUE` and shorthand flags,
leading `VAR=value` assignments and wrappers. Values stay strings; `lint` interprets them per engine version."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from eaglewire.engines.sglang.args import SG_FLAGS, SG_KEYS, SGLANG
from eaglewire.engines.versions import ENGINES
from eaglewire.engines.vllm.args import VL_FLAGS, VLLM
from eaglewire.errors import InputError
from eaglewire.rules.launch import FlagSpec, LaunchCommand, Option, as_float, as_int
from eaglewire.rules.parsers import (
    ABBREVIATION,
    AMBIGUOUS,
    EXACT,
    LIST,
    OPTIONAL,
    SWITCH,
    VALUE,
    Parser,
    Resolution,
    as_parsed,
    parser_for,
    unique_elsewhere,
)
from eaglewire.rules.scanned import switches

_ENV_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_NUMBER = re.compile(r"^-\d+(\.\d+)?$")
_PYTHON = re.compile(r"^python(\d+(\.\d+)?)?$")
_WRAPPERS = ("env", "nohup", "exec")


def _is_flag(token: str) -> bool:
    return token.startswith("-") and token != "-" and not _NUMBER.match(token)


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


def _resolve(
    engine: str, name: str, parser: Parser | None
) -> tuple[str, str | None, Resolution | None, str | None]:
    """(canonical flag, dotted key, how the release's parser reads it, its kind there): a long flag goes through
    the parser's prefix matching (vLLM's dotted key is split off first, as its FlexibleArgumentParser does)."""
    flag, key = _canonical(engine, name)
    if parser is None or not name.startswith("--"):  # a short flag (vLLM's -tp): no prefixes taken here
        return flag, key, None, parser.options.get(name) if parser else None
    base = as_parsed(engine, name.split(".", 1)[0] if engine == VLLM and key is not None else name)
    found = parser.resolve(base)
    if found.how == ABBREVIATION and flag != name and _canonical(engine, found.flag)[0] == flag:
        # a spelling the flag table lists (SGLang's documented `--tp`): a prefix, read as the table reads it, unsaid
        found = Resolution(EXACT, found.flag)
    elif found.how == ABBREVIATION:
        flag = _canonical(engine, found.flag)[0]
    elif found.how == AMBIGUOUS and (meant := unique_elsewhere(engine, base)):
        # argparse stops here; the rules read the command as meant where an earlier release knew the prefix as one
        # flag (the fix writes that flag in full)
        flag = _canonical(engine, meant[0])[0]
        return flag, key, found, parser.options.get(meant[0])
    return flag, key, found, parser.options.get(found.flag)


def _parse_options(
    engine: str, tokens: list[str], start: int, positional_model: bool, parser: Parser | None = None
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
        if engine == VLLM and not positional_model and name == "--model" and parser is not None:
            # the api_server entry point registers --model whenever `serve` is not on the command line (vllm
            # engine/arg_utils.py:451-452 @0.9.0, :968-969 @0.33.0); the recorded parsers are `vllm serve`'s
            flag, key, found, words = "--model", None, Resolution(EXACT, "--model"), VALUE
        else:
            flag, key, found, words = _resolve(engine, name, parser)
        spec = specs.get(flag)
        # a boolean argument of the release's parser (with none recorded: of the newest release scanned)
        if spec is None and (words == SWITCH or (words is None and flag in switches(engine))):
            spec = FlagSpec("switch")
        kind = "json" if key is not None else (spec.kind if spec else None)
        if eq:
            value, stop = inline_value, i + 1
        elif words == SWITCH or (words is None and kind == "switch"):  # the release's parser decides
            value, stop = None, i + 1
        elif words == LIST:  # every word up to the next flag
            stop = i + 1
            while stop < len(tokens) and not _is_flag(tokens[stop]):
                stop += 1
            value = " ".join(tokens[i + 1 : stop]) or None
        elif words == OPTIONAL and (i + 1 >= len(tokens) or _is_flag(tokens[i + 1])):
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
        how = found.how if found else None
        # an ambiguous prefix: every flag it could be; a prefix of one flag: that flag, as the parser names it
        candidates = () if found is None else (found.flag,) if how == ABBREVIATION else found.candidates
        options.append(Option(flag, name, value, i, stop, bool(eq), key, how, candidates))
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


def parse_launch(argv: list[str], engine: str | None = None, version: str | None = None) -> LaunchCommand:
    """Parse a launch command (the argv after `--`) as the release's own parser does (`version`; None: the newest
    recorded): prefixes resolved, each flag's words taken as it takes them. `engine` forces "sglang" or "vllm"
    when the program is a wrapper script. Raises `InputError` naming the flag on malformed input."""
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
    parser = parser_for(engine, version)
    options, model, model_option = _parse_options(engine, tokens, start, positional, parser)
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
        parser=parser,
    )


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
