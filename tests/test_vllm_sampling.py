"""lint, vLLM's verify-side keys (engines/vllm/sampling.py): each release's names for the sampling methods, the
synthetic verify's rates and FLy's window as `SpeculativeConfig._verify_args` checks them at startup, and the two
lossy verifies, whose acceptance is not the drafter's. Lint said OK to every launch here that vLLM refuses."""

from __future__ import annotations

import json

import pytest

from eaglewire.engines.vllm.sampling import allowed, synthetic_refusal
from eaglewire.errors import InputError
from eaglewire.jobs.lint import lint
from eaglewire.rules.launch import PROBLEM, WARNING

SPEC = {"method": "eagle3", "model": "d", "num_speculative_tokens": 3}


def vllm(**keys) -> list[str]:
    return [
        "vllm",
        "serve",
        "meta-llama/Llama-3.1-8B-Instruct",
        "--speculative-config",
        json.dumps({**SPEC, **keys}),
    ]


def rules(report) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for c in report.changes:
        found.setdefault(c.rule, set()).add(c.severity)
    return found


# (release, key, value, refused): each boundary of the Literals, read release by release (0.18.0-0.34.0)
BOUNDARIES = [
    ("0.18.0", "rejection_sample_method", "strict", False),
    ("0.18.0", "rejection_sample_method", "synthetic", True),
    ("0.19.0", "rejection_sample_method", "synthetic", False),
    ("0.20.0", "rejection_sample_method", "strict", False),
    ("0.20.0", "rejection_sample_method", "standard", True),
    ("0.21.0", "rejection_sample_method", "standard", False),
    ("0.21.0", "rejection_sample_method", "strict", True),
    ("0.21.0", "rejection_sample_method", "probabilistic", True),
    ("0.24.0", "rejection_sample_method", "block", True),
    ("0.25.0", "rejection_sample_method", "block", False),
    ("0.32.0", "rejection_sample_method", "fly", True),
    ("0.33.0", "rejection_sample_method", "fly", False),
    ("0.34.0", "rejection_sample_method", "Standard", True),  # a Literal: case matters
    ("0.21.0", "draft_sample_method", "gumbel", False),
    ("0.21.0", "draft_sample_method", "probabilistic", True),
    ("0.22.0", "draft_sample_method", "probabilistic", False),
    ("0.22.0", "draft_sample_method", "gumbel", True),
]


@pytest.mark.parametrize(("version", "key", "value", "refused"), BOUNDARIES)
def test_each_release_refuses_another_releases_name(version, key, value, refused):
    keys = {key: value}
    if value == "synthetic":
        keys["synthetic_acceptance_length"] = 2.0
    report = lint(vllm(**keys), engine_version=version)
    assert ("vllm.sample_method_value" in rules(report)) is refused, [c.message for c in report.changes]
    if refused:
        assert not report.starts and report.exit_code == 1
        again = lint(report.fixed_argv, engine_version=version)
        assert "vllm.sample_method_value" not in rules(again), again.fixed_argv
        kept = json.loads(report.fixed_argv[-1]).get(key)
        assert kept is None or kept in allowed(key, version)


def test_a_key_before_its_release_is_unknown_not_a_bad_value():
    report = lint(vllm(draft_sample_method="greedy"), engine_version="0.20.0")
    assert "vllm.unknown_keys" in rules(report) and "vllm.sample_method_value" not in rules(report)


def test_probabilistic_verify_becomes_standard_with_the_drafts_logits():
    """0.21.0 split 0.20.0's 'probabilistic' verify into 'standard' and a draft_sample_method that keeps the draft's
    logits ('gumbel' at 0.21.0, 'probabilistic' from 0.22.0)."""
    for version, draft in (("0.21.0", "gumbel"), ("0.30.0", "probabilistic")):
        report = lint(vllm(rejection_sample_method="probabilistic"), engine_version=version)
        spec = json.loads(report.fixed_argv[-1])
        assert (spec["rejection_sample_method"], spec["draft_sample_method"]) == ("standard", draft)
        assert not lint(report.fixed_argv, engine_version=version).has_problem


# vLLM's own messages (_resolve_synthetic_acceptance_rates, the same code 0.20.0-0.34.0), k = 3
SYNTHETIC = [
    (None, None, "requires exactly one of"),
    ([0.9, 0.5, 0.2], 2.0, "requires exactly one of"),
    ([0.9, 0.5], None, "must have length 3"),
    ([1.2, 0.5, 0.1], None, "entries must be in [0, 1]"),
    ([0.5, 0.7, 0.1], None, "must be non-increasing"),
    (None, 4.5, "must be in [1, 4]"),
    (None, 0.5, "must be in [1, 4]"),
    ([0.9, 0.9, 0.0], None, None),
    (None, 4.0, None),
    (None, 1, None),
]


@pytest.mark.parametrize(("rates", "length", "said"), SYNTHETIC)
def test_the_synthetic_verify_checks_its_rates_as_vllm_does(rates, length, said):
    got = synthetic_refusal(3, rates, length)
    assert (got is None) if said is None else (said in got)
    keys = {"rejection_sample_method": "synthetic", "synthetic_acceptance_rates": rates,
            "synthetic_acceptance_length": length}  # fmt: skip
    report = lint(vllm(**{k: v for k, v in keys.items() if v is not None}), engine_version="0.34.0")
    assert ("vllm.synthetic_rates" in rules(report)) is (said is not None)
    assert rules(report)["vllm.lossy_verify"] == {WARNING}  # a synthetic verify never measures the drafter


def test_synthetic_keys_need_the_synthetic_verify():
    report = lint(vllm(synthetic_acceptance_rates=[0.9, 0.5, 0.2]), engine_version="0.20.0")
    assert rules(report)["vllm.synthetic_keys_alone"] == {PROBLEM}
    assert "synthetic_acceptance_rates" not in json.loads(report.fixed_argv[-1])
    assert "vllm.synthetic_keys_alone" not in rules(
        lint(vllm(synthetic_acceptance_rates=[0.9]), engine_version="0.19.0")
    )


@pytest.mark.parametrize(("k", "window", "said"), [
    (1, None, "at least 2"), (3, 3, "smaller than"), (3, 0, "greater than or equal to 1"), (3, 2, None), (2, None, None),
])  # fmt: skip
def test_fly_needs_two_drafts_and_a_window_below_them(k, window, said):
    keys = {"rejection_sample_method": "fly", "num_speculative_tokens": k}
    if window is not None:
        keys["fly_window_size"] = window
    report = lint(vllm(**keys), engine_version="0.33.0")
    found = [c.message for c in report.changes if c.rule == "vllm.fly_settings"]
    assert (said in found[0]) if said else not found
    assert "lossy" in next(c.message for c in report.changes if c.rule == "vllm.lossy_verify")
    if said and k >= 2:
        assert not lint(report.fixed_argv, engine_version="0.33.0").has_problem


def test_a_lossless_verify_is_quiet():
    for keys, version in (({"rejection_sample_method": "block"}, "0.34.0"), ({}, "0.34.0"),
                          ({"rejection_sample_method": "strict"}, "0.20.0"),
                          ({"rejection_sample_method": "standard", "draft_sample_method": "gumbel"}, "0.21.0")):  # fmt: skip
        found = rules(lint(vllm(**keys), engine_version=version))
        assert not {"vllm.sample_method_value", "vllm.lossy_verify", "vllm.fly_settings"} & set(found), found


def test_every_scanned_release_has_its_default_among_its_names():
    """The scan of every release (data/arguments.json, patch releases too) has each key's default and declaration:
    the key exists exactly where a range names its values, and its default is one of them. Patch releases declare
    it on their minor's line (0.18.1, 0.20.1-0.20.2, 0.22.1, 0.25.1, 0.27.1): the Literal read there holds."""
    from packaging.version import Version

    from eaglewire.engines.vllm.args import VLLM
    from eaglewire.rules import engine_data

    releases = json.loads(engine_data(VLLM, "arguments.json").read_text())["releases"]
    seen = 0
    for release, data in releases.items():
        declared = {a["name"]: a for a in data["arguments"]}
        for key in ("rejection_sample_method", "draft_sample_method"):
            values = allowed(key, Version(release))
            assert (key in declared) is (values is not None), (release, key)
            if values is not None:
                assert declared[key]["default"].strip("'\"") in values, (release, key)
                seen += 1
    assert seen >= 40


def test_a_window_below_one_is_refused_whatever_the_method():
    """fly_window_size is a field with ge=1: vLLM 0.34.0's own argument code refuses 0 beside 'standard' and 'block'
    too (found by running it: lint had gated the check on 'fly')."""
    for method in ("standard", "block", "fly"):
        report = lint(vllm(rejection_sample_method=method, fly_window_size=0), engine_version="0.34.0")
        (change,) = [c for c in report.changes if c.rule == "vllm.fly_settings"]
        assert change.flag.endswith("fly_window_size") and "greater than or equal to 1" in change.message
        assert not report.starts


def test_bad_values_are_a_problem_or_a_one_line_error_never_a_traceback():
    """A value no release names (a list, an object) is refused like any other name; a number the config takes in
    pydantic's lax mode ("2") is that number; one it cannot take is a one-line error naming the key."""
    for keys in ({"rejection_sample_method": ["x"]}, {"draft_sample_method": {"a": 1}}):
        report = lint(vllm(**keys), engine_version="0.34.0")
        assert "vllm.sample_method_value" in rules(report) and report.fixed_argv is not None
    lax = lint(
        vllm(rejection_sample_method="synthetic", synthetic_acceptance_length="2"), engine_version="0.34.0"
    )
    assert "vllm.synthetic_rates" not in rules(lax)
    window = lint(vllm(rejection_sample_method="fly", fly_window_size="3"), engine_version="0.34.0")
    assert "vllm.fly_settings" in rules(window)
    for keys, key in (({"rejection_sample_method": "synthetic", "synthetic_acceptance_rates": "abc"},
                       "synthetic_acceptance_rates"),
                      ({"rejection_sample_method": "synthetic", "synthetic_acceptance_rates": [0.9, "x", 0.1]},
                       "synthetic_acceptance_rates"),
                      ({"rejection_sample_method": "fly", "fly_window_size": "abc"}, "fly_window_size")):  # fmt: skip
        with pytest.raises(InputError, match=f"--speculative-config.{key}"):
            lint(vllm(**keys), engine_version="0.34.0")
