"""Every verdict says what it rests on (issue 21 item 7): check, lint and doctor carry an evidence level (one of
rules.row.LEVELS) and its basis, in text and in --json; the level is computed from the ledger and the committed
records, never typed."""

from __future__ import annotations

from packaging.version import Version

from eaglewire.jobs.lint import lint
from eaglewire.rules.ledger import ledger

LAUNCH = [
    "vllm",
    "serve",
    "m",
    "--speculative-config",
    '{"method": "eagle3", "model": "d", "num_speculative_tokens": 3}',
]


def test_lint_at_a_release_read_for_flags_says_so():
    release = ledger("vllm").read("flags")[-1]
    rep = lint(LAUNCH, engine="vllm", engine_version=release)
    assert rep.evidence == {"level": "read", "basis": f"read at source (vllm {release}: flag rules)"}
    assert rep.to_dict()["evidence"] == rep.evidence


def test_lint_between_read_releases_names_the_nearest_read_ones():
    read = [Version(v) for v in ledger("vllm").read("flags")]
    # from 0.10.0: before it this launch meets vllm.eagle3_on_v0, a rule the releases' model code showed running
    between = next(r for r in ledger("vllm").releases if max(read[0], Version("0.10.0")) < Version(r.version) < read[-1]
                   and Version(r.version) not in read)  # fmt: skip
    rep = lint(LAUNCH, engine="vllm", engine_version=between.version)
    below = max(v for v in read if v < Version(between.version))
    above = min(v for v in read if v > Version(between.version))
    assert rep.evidence["level"] == "read"
    assert f"vllm {below} and {above}: the releases read for flag rules" in rep.evidence["basis"]
