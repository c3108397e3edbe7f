"""Every speculative argument of every release read is classified (engines/arguments.py), from the enumeration the
wheels gave (engines/*/data/arguments.json via scripts/speculative_args.py); the scanner finds a new argument, so a new
release fails here until its argument has a row."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from packaging.version import Version

from eaglewire.engines.arguments import ROWS, counts, enumerated, markdown, rows_for
from eaglewire.engines.sglang.args import SGLANG
from eaglewire.engines.vllm.args import VLLM
from eaglewire.jobs.lint import RULES, lint
from eaglewire.rules import scanned
from eaglewire.rules.arguments import INTERNAL, SILENT, VERDICTS
from tools.arg_scan import scan

ROOT = Path(__file__).resolve().parents[1]
ENGINES = (SGLANG, VLLM)


def test_the_enumeration_covers_the_releases_the_conventions_read():
    from eaglewire.engines.sglang import taps as sg
    from eaglewire.engines.vllm import taps as vl

    assert scanned.releases(SGLANG) == sg.ALL
    assert scanned.releases(VLLM) == vl.READ
    for engine in ENGINES:
        data = scanned.load(engine)
        assert data["engine"] == engine and "scripts/speculative_args.py" in data["source"]
        newest = scanned.releases(engine)[-1]
        assert len(scanned.arguments(engine, newest)) >= 40, newest


@pytest.mark.parametrize("engine", ENGINES)
def test_every_enumerated_argument_has_exactly_one_row(engine):
    missing, doubled = [], []
    for release in scanned.releases(engine):
        for name in enumerated(engine, release):
            rows = rows_for(engine, name, release)
            if not rows:
                missing.append(f"{name}@{release}")
            elif len(rows) > 1:
                doubled.append(f"{name}@{release}")
    assert not missing, f"arguments without a row in engines/arguments.py: {missing}"
    assert not doubled, f"arguments with overlapping rows: {doubled}"


def test_every_row_matches_an_enumerated_argument():
    found = {(e, n, r) for e in ENGINES for r in scanned.releases(e) for n in enumerated(e, r)}
    stale = [f"{row.engine} {row.name} {row.versions}" for row in ROWS
             if not any((row.engine, row.name, r) in found for r in scanned.releases(row.engine) if row.covers(r))]  # fmt: skip
    assert not stale


def test_silent_verdicts_name_rules_of_the_same_engine_and_releases():
    by_name: dict[tuple[str, str], list] = {}
    for r in RULES:
        by_name.setdefault((r.engine, r.name), []).append(r)
    for row in ROWS:
        assert row.verdicts and set(row.verdicts) <= set(VERDICTS), row.name
        assert row.source, row.name
        if set(row.verdicts) & set(SILENT):
            assert row.rules or row.no_rule, (
                f"{row.name}: adjusted/ignored needs a lint rule or a no_rule reason"
            )
        covered = [v for v in scanned.releases(row.engine) if row.covers(v)]
        for name in row.rules:
            rules = by_name.get((row.engine, name))
            assert rules, f"{row.name}: no lint rule {name}"
            assert any(rule.covers(Version(v)) for rule in rules for v in covered) or all(
                Version(v) < Version("0.8.5") for v in covered
            ), f"{row.name}: {name} covers none of {row.versions}"


def test_an_argument_no_code_reads_is_not_called_honoured_alone():
    """The scan counts where each SGLang argument is read; a row that says only "honoured" needs a reader."""
    for release in scanned.releases(SGLANG):
        for name, arg in scanned.arguments(SGLANG, release).items():
            (row,) = rows_for(SGLANG, name, release)
            if row.verdicts == ("honoured",):
                assert arg["reads"] > 0, f"{name}@{release} is read nowhere but classified honoured"
            if arg["reads"] == 0 and INTERNAL not in row.verdicts:
                assert "ignored" in row.verdicts, f"{name}@{release}: never read, so it is ignored"


def test_counts_every_release_fully_classified():
    table = counts()
    assert len(table) == len(scanned.releases(SGLANG)) + len(scanned.releases(VLLM))
    for c in table:
        assert c.classified == c.enumerated, c
        assert c.silent_with_rule <= c.silent <= c.enumerated and c.with_rule > 0, c
    pinned = {(c.engine, c.release): c for c in table}
    assert pinned[(SGLANG, "0.5.23")].enumerated >= 55 and pinned[(VLLM, "0.33.0")].enumerated >= 50


def test_the_doc_page_is_generated_from_the_table():
    assert (ROOT / "docs/speculative-arguments.md").read_text() == markdown()


# --------------------------------------------------------------------------------------------------------------
# The scanner on planted sources: what a new release would look like


def _write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))


def _planted_sglang(root: Path) -> None:
    _write(
        root,
        "sglang/srt/server_args.py",
        """
        class ServerArgs:
            model_path: str = None
            quantization: str = None
            max_running_requests: int = None
            speculative_algorithm: str = None
            speculative_draft_model_path: str = None
            speculative_brand_new_knob: int = 4

            def _handle_speculative_decoding(self):
                if self.max_running_requests is None:
                    self.max_running_requests = 48

            def add_cli_args(parser):
                parser.add_argument("--speculative-draft-model-path", "--speculative-draft-model", type=str)
                parser.add_argument("--speculative-brand-new-knob", type=int)
    """,
    )
    _write(
        root,
        "sglang/srt/managers/tp_worker.py",
        """
        def init(server_args, is_draft_worker):
            return ModelConfig.from_server_args(
                server_args,
                model_path=server_args.model_path if not is_draft_worker else server_args.speculative_draft_model_path,
                is_draft_model=is_draft_worker,
            )
    """,
    )
    _write(
        root,
        "sglang/srt/configs/model_config.py",
        """
        class ModelConfig:
            @staticmethod
            def from_server_args(server_args, model_path=None, is_draft_model=False):
                quantization = server_args.speculative_algorithm if is_draft_model else server_args.quantization
                return ModelConfig(model_path=model_path, quantization=quantization, dtype=server_args.dtype)
    """,
    )
    _write(
        root,
        "sglang/srt/speculative/worker.py",
        """
        def run(server_args):
            return server_args.speculative_draft_model_path
    """,
    )


def test_the_scanner_finds_a_new_sglang_argument_and_the_table_does_not_cover_it(tmp_path):
    _planted_sglang(tmp_path)
    found = scan(SGLANG, tmp_path)
    args = {a["name"]: a for a in found["arguments"]}
    assert set(args) == {"speculative_algorithm", "speculative_draft_model_path", "speculative_brand_new_knob",
                         "max_running_requests"}  # fmt: skip
    assert args["speculative_draft_model_path"]["flags"] == ["--speculative-draft-model-path",
                                                             "--speculative-draft-model"]  # fmt: skip
    assert args["max_running_requests"]["kind"] == "adjusted" and args["max_running_requests"]["written"]
    assert (
        args["speculative_brand_new_knob"]["reads"] == 0
    )  # nothing reads it: the table would have to say so
    assert args["speculative_draft_model_path"]["reads"] >= 1
    draft = {d["setting"]: d["source"] for d in found["draft_settings"]}
    assert draft["model"] == "server_args.speculative_draft_model_path"
    assert draft["quantization"] == "server_args.speculative_algorithm"  # the draft branch of the conditional
    assert not rows_for(
        SGLANG, "speculative_brand_new_knob", "0.5.23"
    )  # a new release would fail the coverage test


def test_the_scanner_reads_sglang_namespace_fields_and_declared_resolutions(tmp_path):
    _write(tmp_path, "sglang/srt/server_args.py", "class ServerArgs:\n    pass\n")
    _write(
        tmp_path,
        "sglang/srt/arg_groups/fields/spec.py",
        """
        class Spec(msgspec.Struct):
            _NS_PATH = "spec"
            uno_lora_path: A[Optional[str], "help"] = None
            speculative_draft_model_path: A[Optional[str], Arg(help="x", aliases=["--speculative-draft-model"])] = None
            speculative_boundary_reduction: A[str, Arg(no_cli=True)] = "rs"
            speculative_use_x: A[bool, "switch"] = False
    """,
    )
    _write(
        tmp_path,
        "sglang/srt/arg_groups/fields/schedule.py",
        """
        class Schedule(msgspec.Struct):
            _NS_PATH = "schedule"
            enable_mixed_chunk: A[bool, "help"] = False
    """,
    )
    _write(
        tmp_path,
        "sglang/srt/arg_groups/speculative_hook.py",
        """
        def _handle_eagle_family(server_args):
            declare_resolution(server_args, "x", enable_mixed_chunk=False)
    """,
    )
    args = {a["name"]: a for a in scan(SGLANG, tmp_path)["arguments"]}
    assert args["uno_lora_path"]["kind"] == "speculative" and args["uno_lora_path"]["namespace"] == "spec"
    assert args["speculative_draft_model_path"]["flags"] == ["--speculative-draft-model-path",
                                                             "--speculative-draft-model"]  # fmt: skip
    assert args["speculative_boundary_reduction"]["flags"] == []
    assert args["speculative_use_x"]["type"] == "bool"
    assert args["enable_mixed_chunk"]["kind"] == "adjusted"


def test_the_scanner_reads_vllm_keys_engine_filled_keys_and_the_draft_config(tmp_path):
    _write(
        tmp_path,
        "vllm/config/speculative.py",
        """
        class SpeculativeConfig:
            num_speculative_tokens: int = Field(default=None, gt=0)
            model: str | None = None
            quantization: str | None = None
            brand_new_key: bool = False
            enable_chunked_prefill: bool = None
            target_model_config: SkipValidation[ModelConfig] = None

            def __post_init__(self):
                if self.quantization is None:
                    self.quantization = self.target_model_config.quantization
                self.draft_model_config = ModelConfig(model=self.model, dtype=self.target_model_config.dtype,
                                                      quantization=self.quantization)
    """,
    )
    _write(
        tmp_path,
        "vllm/engine/arg_utils.py",
        """
        class EngineArgs:
            speculative_config: dict | None = None
            engram_config: dict | None = None

            def create_speculative_config(self, target_model_config):
                self.speculative_config.update({"target_model_config": target_model_config,
                                                "enable_chunked_prefill": True})
                return SpeculativeConfig(**self.speculative_config)

            def add_cli_args(parser):
                parser.add_argument("--speculative-config", "-sc", type=json.loads)
    """,
    )
    _write(
        tmp_path,
        "vllm/v1/proposer.py",
        "def f(spec_config):\n    return spec_config.num_speculative_tokens\n",
    )
    found = scan(VLLM, tmp_path)
    args = {a["name"]: a for a in found["arguments"]}
    assert (
        args["num_speculative_tokens"]["default"] == "None" and args["num_speculative_tokens"]["reads"] == 1
    )
    assert args["enable_chunked_prefill"]["kind"] == "set-by-engine"
    assert args["target_model_config"]["kind"] == "internal"
    assert args["quantization"]["written"] == ["vllm/config/speculative.py:12"]
    assert args["EngineArgs.speculative_config"]["flags"] == ["--speculative-config", "-sc"]
    assert "EngineArgs.engram_config" not in args  # 'ngram' inside another word is not speculative
    assert args["brand_new_key"]["kind"] == "key" and not rows_for(VLLM, "brand_new_key", "0.33.0")
    draft = {d["setting"]: d["source"] for d in found["draft_settings"]}
    assert draft == {"model": "self.model", "dtype": "self.target_model_config.dtype",
                     "quantization": "self.quantization"}  # fmt: skip


FIXTURE = (
    ROOT / "tests" / "data" / "arg_scan"
)  # a few committed lines shaped like ServerArgs / SpeculativeConfig


def test_the_scanner_writes_the_expected_entries_for_a_committed_source_fixture():
    """tools.arg_scan re-scans committed sources (tests/data/arg_scan: SGLang-like and vLLM-like files) and writes
    exactly the entries expected: kinds, flags, defaults, declared and written sites, reads, draft settings."""
    expected = json.loads((FIXTURE / "expected.json").read_text())
    assert {engine: scan(engine, FIXTURE / engine) for engine in (SGLANG, VLLM)} == expected


def test_the_committed_enumeration_has_the_entries_the_scanner_writes():
    """Every entry of the committed enumerations has exactly the fields the scanner writes (taken from its output
    on the fixture, not typed here): the files are the script's output, not edited by hand. (That the values are
    what a scan of each release gives needs the wheels: scripts/speculative_args.py.)"""
    fixture = {engine: scan(engine, FIXTURE / engine) for engine in (SGLANG, VLLM)}
    arg_fields = {frozenset(a) for f in fixture.values() for a in f["arguments"]}
    draft_fields = {frozenset(d) for f in fixture.values() for d in f["draft_settings"]}
    assert len(arg_fields) == len(draft_fields) == 1
    for engine in ENGINES:
        text = (ROOT / f"src/eaglewire/engines/{engine}/data/arguments.json").read_text()
        data = json.loads(text)
        for release, found in data["releases"].items():
            assert set(found) >= {"arguments", "draft_settings"}, release
            for a in found["arguments"]:
                assert frozenset(a) in arg_fields and ":" in a["declared"], (release, a)
                assert a["kind"] in {"speculative", "adjusted", "key", "set-by-engine", "internal", "flag"}
            for d in found["draft_settings"]:
                assert frozenset(d) in draft_fields, (release, d)


def test_lint_parses_a_switch_it_learned_from_the_scan():
    """--speculative-use-block-verification is a boolean of SGLang 0.5.23: the word after it is not its value."""
    argv = ["python", "-m", "sglang.launch_server", "--speculative-use-block-verification", "--model-path", "m",
            "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", "d"]  # fmt: skip
    report = lint(argv, engine_version="0.5.23")
    assert report.effective.draft_model == "d" and report.effective.algorithm == "EAGLE3"
