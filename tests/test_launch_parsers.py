"""`lint` parses a launch command as the release's own launch parser does (recorded by executing it in every
release: tests/engines/options.py). Users write prefixes (`--speculative-algo EAGLE3` in SGLang's own early docs
and in user reports: sgl-project/sglang#25673, #3574), which argparse takes as the one flag they begin; a prefix of
several flags, or a flag the release does not define, stops the launch at argparse. Before, lint read
`--speculative-algo EAGLE3` as no algorithm at all and said speculation was off."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from packaging.version import Version

from eaglewire.engines.parse import parse_launch
from eaglewire.engines.sglang.args import SG_KEYS
from eaglewire.jobs.lint import lint
from eaglewire.rules import parsers, scanned
from eaglewire.rules.launch import INFO, PROBLEM

SGL = ["python", "-m", "sglang.launch_server", "--model-path", "org/target"]
DRAFT = ["--speculative-draft-model-path", "D"]
SIZES = ["--speculative-num-steps", "3", "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4"]  # fmt: skip
ENGINES = [e for e in ("sglang", "vllm") if parsers.recorded(e)]


def rules(report) -> dict[str, list]:
    out: dict[str, list] = {}
    for c in report.changes:
        out.setdefault(c.rule, []).append(c)
    return out


@pytest.mark.parametrize("engine", ENGINES)
def test_every_release_scanned_has_its_parser_recorded_and_every_scanned_flag_is_in_it(engine):
    """The executed parser and the source scan (rules/scanned.py, read with ast) agree on every flag the scan
    found, release by release: each checks the other."""
    assert set(scanned.releases(engine)) <= set(parsers.recorded(engine))
    for release in scanned.releases(engine):
        parser = parsers.parser_for(engine, release)
        assert parser.exact and parser.allow_abbrev, release
        flags = {f for a in scanned.arguments(engine, release).values() for f in a.get("flags", [])}
        # vLLM's `--speculative-config.KEY` is its base flag's dotted key (FlexibleArgumentParser), not an option
        missing = sorted(f for f in flags if f.startswith("--") and f.split(".")[0] not in parser.options)
        assert not missing, (release, missing)


def test_a_prefix_of_one_flag_is_that_flag():
    for version in ("0.4.5", "0.5.11", "0.5.23"):
        report = lint([*SGL, "--speculative-algo", "EAGLE3", *DRAFT, *SIZES], engine_version=version)
        assert report.effective.algorithm == "EAGLE3", version
        assert "sglang.no_algorithm" not in rules(report)
        said = rules(report)["sglang.flag_prefix"]
        assert [c.severity for c in said] == [INFO]
        assert "--speculative-algorithm" in said[0].message and "executed" in said[0].message
    # the sizes too: a prefix sets the steps (lint had read them as unset and reported SGLang's auto choice)
    report = lint([*SGL, "--speculative-algorithm", "EAGLE3", *DRAFT, "--speculative-num-step", "5",
                   "--speculative-eagle", "1", "--speculative-num-draft", "6"], engine_version="0.5.11")  # fmt: skip
    assert (report.given.num_steps, report.given.topk, report.given.num_draft_tokens) == (5, 1, 6)
    assert "sglang.auto_choice" not in rules(report)


def test_an_exact_flag_wins_over_the_flags_it_begins():
    """`--model` is an option string of its own (an alias of `--model-path`), though `--model-path`, `--model-impl`
    and more begin with it: the exact string wins. `--tp`, in no release an option string, is the one flag it
    begins (`--tp-size`)."""
    have = [r for r in parsers.recorded("sglang") if "--model" in parsers.parser_for("sglang", r).options]
    assert have
    cmd = parse_launch(["python", "-m", "sglang.launch_server", "--model", "org/target"], version=have[-1])
    assert cmd.model == "org/target" and cmd.options[0].resolution == parsers.EXACT
    for version in ("0.4.5", "0.5.23"):
        cmd = parse_launch([*SGL, "--tp", "8"], version=version)
        assert cmd.get("--tp-size") == "8", version
        assert parsers.parser_for("sglang", version).resolve("--tp").how == parsers.ABBREVIATION
        # the spelling SGLang's docs use, listed in eaglewire's flag table: read as the one flag, not said
        assert "sglang.flag_prefix" not in rules(lint([*SGL, *DRAFT, "--tp", "8"], engine_version=version))


def _ambiguous_prefix(engine: str) -> tuple[str, str, str] | None:
    """(prefix, a release where it is ambiguous, the flag it was unique to before) from the records."""
    names = ["--speculative-draft", "--speculative-num", "--speculative-draft-model"]
    for name in names:
        for release in reversed(parsers.recorded(engine)):
            found = parsers.parser_for(engine, release).resolve(name)
            if found.how == parsers.AMBIGUOUS:
                return name, release, next(
                    (parsers.parser_for(engine, r).resolve(name).flag for r in parsers.recorded(engine)
                     if parsers.parser_for(engine, r).resolve(name).how == parsers.ABBREVIATION), "")  # fmt: skip
    return None


def test_a_prefix_of_several_flags_stops_the_launch_and_the_fix_writes_the_flag_in_full():
    found = _ambiguous_prefix("sglang")
    assert found is not None
    name, release, meant = found
    argv = [*SGL, "--speculative-algorithm", "EAGLE3", name, "D", *SIZES]
    report = lint(argv, engine_version=release)
    problem = rules(report)["sglang.flag_ambiguous"][0]
    assert problem.severity == PROBLEM and report.failing["sglang.flag_ambiguous"] == "args"
    assert "ambiguous option" in problem.message and name in problem.message
    if meant:
        assert meant in problem.message
        fixed = lint(report.fixed_argv, engine_version=release)
        assert "sglang.flag_ambiguous" not in rules(fixed), fixed.fixed_argv
        assert meant in report.fixed_argv


def test_a_flag_the_release_does_not_define_stops_the_launch():
    report = lint([*SGL, "--speculative-algorithm", "EAGLE3", *DRAFT, *SIZES, "--bogus-flag", "1"],
                  engine_version="0.5.23")  # fmt: skip
    problem = rules(report)["sglang.flag_unknown"][0]
    assert problem.severity == PROBLEM and "unrecognized arguments" in problem.message
    assert "--bogus-flag" not in report.fixed_argv
    # a speculative flag a later release added keeps its own row, which says when it came (not reported twice)
    newest = max(scanned.releases("sglang"), key=Version)
    first_spec = {f for a in scanned.arguments("sglang", "0.4.5").values() for f in a["flags"]}
    later = sorted(f for a in scanned.arguments("sglang", newest).values() if a["kind"] == "speculative"
                   for f in a["flags"] if f not in first_spec)  # fmt: skip
    report = lint(
        [*SGL, "--speculative-algorithm", "EAGLE3", *DRAFT, *SIZES, later[0], "1"], engine_version="0.4.5"
    )
    assert "sglang.flag_not_in_release" in rules(report) and "sglang.flag_unknown" not in rules(report)


def test_argparse_stops_a_launch_whatever_its_speculative_settings():
    """A command lint reads no speculation in (no algorithm, no speculative config) still stops at argparse on a
    flag the release does not define (the engine oracle found lint saying it starts)."""
    report = lint(
        [*SGL, "--speculative-num-steps", "2", "--speculative-not-a-flag", "1"], engine_version="0.5.23"
    )
    assert report.failing.get("sglang.flag_unknown") == "args" and not report.starts_args
    if "vllm" in ENGINES:
        report = lint(["vllm", "serve", "org/target", "--not-a-flag", "1"], engine_version="0.33.0")
        assert report.failing.get("vllm.flag_unknown") == "args" and not report.starts_args


def test_words_are_taken_as_the_release_takes_them():
    """A list flag takes every word up to the next flag; a switch takes none (the next word is not its value)."""
    cmd = parse_launch([*SGL, "--cuda-graph-bs", "1", "2", "4", "--speculative-algorithm", "EAGLE3"],
                       version="0.5.19")  # fmt: skip
    assert cmd.get("--cuda-graph-bs") == "1 2 4" and cmd.get("--speculative-algorithm") == "EAGLE3"
    switch = next(f for f, k in parsers.parser_for("sglang", "0.5.23").options.items()
                  if k == parsers.SWITCH and f.startswith("--enable-"))  # fmt: skip
    cmd = parse_launch([*SGL, switch, "--speculative-algorithm", "EAGLE3"], version="0.5.23")
    assert cmd.get(switch) is None and cmd.get("--speculative-algorithm") == "EAGLE3"


def test_a_release_below_every_recorded_one_keeps_lints_own_reading():
    first = parsers.recorded("sglang")[0]
    below = f"{Version(first).major}.{Version(first).minor}.{max(Version(first).micro - 1, 0)}"
    if Version(below) >= Version(first):
        pytest.skip("no release below the first recorded")
    assert parsers.parser_for("sglang", below) is None
    assert parse_launch([*SGL, "--bogus-flag", "1"], version=below).options[-1].resolution is None


def test_every_flag_lint_reads_a_setting_from_is_a_flag_of_some_release():
    """Else lint would read a setting no launch can give (or a spelling argparse only takes as a prefix)."""
    for flag in SG_KEYS.values():
        assert any(flag in parsers.parser_for("sglang", r).options for r in parsers.recorded("sglang")), flag
    for flag in ("--speculative-algorithm", "--speculative-draft-model-path", "--speculative-num-steps"):
        assert all(flag in parsers.parser_for("sglang", r).options for r in parsers.recorded("sglang")), flag


def test_the_cli_reads_a_prefix_as_the_engine_does(tmp_path):
    """A new user's command from a report (sgl-project/sglang#25673: `--speculative-algo`, `--speculative-num-steps
    3`): the CLI reports the settings the engine uses, in JSON too."""
    argv = [*SGL, "--speculative-algo", "EAGLE3", *DRAFT, *SIZES]
    done = subprocess.run([sys.executable, "-m", "eaglewire.cli", "lint", "--engine", "sglang==0.5.11", "--gpu",
                           "h100", "--json", "--", *argv], capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["effective"]["algorithm"] == "EAGLE3"
    assert any(c["rule"] == "sglang.flag_prefix" for c in out["changes"])


VLLM = ["vllm", "serve", "org/target"]
SPEC = ["--speculative-config", json.dumps({"method": "eagle3", "model": "D", "num_speculative_tokens": 3})]


@pytest.mark.skipif("vllm" not in ENGINES, reason="no vLLM parser recorded")
def test_vllm_reads_a_prefix_as_its_parser_does():
    """`--tensor-parallel 2` (vllm-project/vllm#26328's launch) is `--tensor-parallel-size 2`: the draft's tensor
    parallel size follows it. vLLM's parser turns underscores into dashes first, then takes the prefix."""
    for spelled in ("--tensor-parallel", "--tensor_parallel", "--tensor-parallel-s"):
        report = lint([*VLLM, *SPEC, spelled, "2"], engine_version="0.11.0")
        assert report.effective.draft_tensor_parallel_size == 2, spelled
        assert "vllm.flag_prefix" in rules(report) and not report.has_problem, spelled
    dotted = parse_launch([*VLLM, "--speculative-conf.method", "eagle3"], version="0.33.0")
    assert dotted.speculative_config == {"method": "eagle3"}


@pytest.mark.skipif("vllm" not in ENGINES, reason="no vLLM parser recorded")
def test_vllm_stops_at_an_ambiguous_prefix_and_at_a_flag_it_does_not_define():
    newest = parsers.parser_for("vllm", None)
    assert (
        newest.resolve("--spec").how == parsers.AMBIGUOUS
    )  # --spec-method, --spec-model, --spec-tokens, ...
    # --spec-m: --spec-method or --spec-model, never one flag (both came in 0.22.0): no fix can guess it
    report = lint([*VLLM, *SPEC, "--spec-m", "eagle3"], engine_version=newest.release)
    assert report.failing.get("vllm.flag_ambiguous") == "args" and report.fixed_argv is None
    report = lint([*VLLM, *SPEC, "--bogus-flag", "1"], engine_version=newest.release)
    assert report.failing.get("vllm.flag_unknown") == "args" and "--bogus-flag" not in report.fixed_argv
    # a removed speculative flag keeps the row that knows its history (and says how to write it now)
    report = lint(
        [*VLLM, "--speculative-model", "D", "--num-speculative-tokens", "3"], engine_version=newest.release
    )
    assert "vllm.legacy_flags" in rules(report) and "vllm.flag_unknown" not in rules(report)


@pytest.mark.skipif("vllm" not in ENGINES, reason="no vLLM parser recorded")
def test_the_api_server_entry_point_has_its_own_model_flag():
    """vllm#19174 and #18906 launch `python -m vllm.entrypoints.openai.api_server --model M` at 0.9.0/0.9.0.1 and got
    past argument parsing; lint said argparse stops at `--model` (ambiguous with --model-impl, ...). The recorded
    parsers are `vllm serve`'s, which registers --model only from later releases; the api_server registers it
    whenever `serve` is not on the command line (engine/arg_utils.py:451-452 @0.9.0, :968-969 @0.33.0)."""
    spec = ["--speculative-config", '{"method": "eagle3", "model": "d", "num_speculative_tokens": 3}']
    api = [
        "python",
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        "meta-llama/Llama-3.3-70B-Instruct",
    ]
    for version in ("0.9.0", "0.9.0.1", "0.33.0"):
        report = lint([*api, *spec], engine_version=version)
        assert "vllm.flag_ambiguous" not in rules(report) and not report.failing, (version, report.failing)
        assert parse_launch([*api, *spec], version=version).model == "meta-llama/Llama-3.3-70B-Instruct"
    # `vllm serve` at 0.9.0 does not register it: the serve parser's reading stands
    served = lint(["vllm", "serve", "M", "--model", "M", *spec], engine_version="0.9.0")
    assert served.failing.get("vllm.flag_ambiguous") == "args"
