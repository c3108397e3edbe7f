"""No traceback, ever: `check` over every serving row of the convention table, every target family it covers,
every drafter format and every kind of id list (none, [], -1, 0, L-1, L, four ids, unsorted, repeated; nested,
top-level, both, both disagreeing; malformed values), rendered for the terminal and as JSON, ends in a verdict or
one line of bad input: exit code 0, 1, 2 or 3 and nothing else. `lint` over the generated launch commands of the
engine oracle likewise. The library is called in-process (and the CLI through `main`, as the console script
does); two real subprocesses check the console script itself."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest
import sparse_checkpoints as sparse
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console
from test_honest import SERVE, families_for, target_config, version_in

from eaglewire.cli.app import main
from eaglewire.cli.render import strict
from eaglewire.cli.render_static import render_check
from eaglewire.errors import InputError
from eaglewire.jobs.check import check
from eaglewire.targets import FAMILIES

FORMATS = ("eagle", "speculators", "modelopt")
PLACES = ("nested", "top", "both", "both-disagree")
LAYERS = (4, 7, 32, 61, 94)
VERDICTS = {"ok", "mismatch", "fails", "unverified"}


def id_variants(L: int) -> dict[str, object]:
    """Every kind of id list a config carries, for an L-layer target (None: the key is absent)."""
    a, b = max(1, L // 2 - 1), max(2, L - 4)
    return {
        "none": None, "empty": [], "minus-one": [-1, a, b], "zero": [0, a, b], "L-1": [1, a, L - 1],
        "L": [2, a, L], "four": [2, a, b, L - 3], "unsorted": [b, 2, a], "repeated": [a, a, b],
        "default": [1, L // 2 - 1, L - 4], "one": [a],
        "not-a-list": "2,3,4", "floats": [1.5, 2.0, 3.0], "bools": [True, False, True],
    }  # fmt: skip


def drafter_config(fmt: str, ids, place: str, L: int) -> dict:
    """A drafter config.json of this format with `ids` placed as asked (64-wide, vocab 300, draft vocab 120)."""
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
    if ids is None:
        return cfg
    other = [v + 1 for v in ids] if isinstance(ids, list) and place == "both-disagree" else ids
    if place in ("nested", "both", "both-disagree"):
        cfg.setdefault("eagle_config", {})["eagle_aux_hidden_state_layer_ids"] = ids
    if place in ("top", "both", "both-disagree"):
        cfg["eagle_aux_hidden_state_layer_ids"] = other
    return cfg


def write_case(root, family: str, L: int, fmt: str, ids, place: str, weights: str | None = None):
    t = sparse.target(root / "t", target_config(family, L))
    cfg = drafter_config(fmt, ids, place, L)
    d = root / "d"
    if weights is None:
        d.mkdir(parents=True, exist_ok=True)
        (d / "config.json").write_text(json.dumps(cfg))
        return t, d
    first, even = torch.zeros(300, dtype=torch.bool), torch.zeros(300, dtype=torch.bool)
    first[:120], even[::2][:120] = True, True
    maps = {  # vocab maps: none (a full vocabulary), a default first-N map, offsets, absolute ids stored as offsets
        "full": (None, None), "first-n": (torch.zeros(120, dtype=torch.long), first),
        "offsets": (torch.arange(120) + 1, None), "absolute": (torch.arange(120) * 2, even),
    }[weights]  # fmt: skip
    if weights == "full":
        cfg["draft_vocab_size"] = 300
    prefix = "midlayer." if fmt == "eagle" else "layers.0."
    sparse.drafter(d, cfg | ({} if fmt != "speculators" else layer_fields(cfg)), target_hidden=64, d2t=maps[0],
                   t2d=maps[1], embed=fmt == "speculators", prefix=prefix)  # fmt: skip
    return t, d


def layer_fields(cfg: dict) -> dict:
    return dict(cfg["transformer_layer_config"])


def run_check(t, d, engines: list[str], runner: str | None = None, platform: str | None = None):
    """check, the terminal rendering and the JSON: a report, or InputError (exit 2). Anything else fails."""
    try:
        rep = check(d, t, engines, runner=runner, platform=platform)
    except InputError as e:
        assert str(e) and "\n" not in str(e)
        return None
    render_check(rep, Console(file=io.StringIO(), width=120))
    json.dumps(strict(rep.to_dict()), allow_nan=False)
    assert rep.verdict in ("ok", "problem", "unverified")
    assert all(v.status in VERDICTS for v in rep.verdicts)
    assert all(v.unknowns for v in rep.verdicts if v.status == "unverified"), [v.engine for v in rep.verdicts]
    return rep


def test_check_on_every_serving_row(tmp_path):
    """Every serving row x every target family it covers, cycling through formats, id lists and placements."""
    n = 0
    for row in SERVE:
        for family in families_for(row):
            variants = id_variants(LAYERS[n % len(LAYERS)])
            name = list(variants)[n % len(variants)]
            fmt, place = FORMATS[n % 3], PLACES[(n // 3) % len(PLACES)]
            t, d = write_case(tmp_path / str(n), family, LAYERS[n % len(LAYERS)], fmt, variants[name], place)
            run_check(t, d, [f"{row.framework}=={version_in(row)}"], runner=row.runner)
            n += 1
    assert n >= len(SERVE)


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    row=st.sampled_from(SERVE),
    L=st.sampled_from(LAYERS),
    fmt=st.sampled_from(FORMATS),
    place=st.sampled_from(PLACES),
    data=st.data(),
)
def test_check_cli_on_any_family_row_format_and_ids(tmp_path_factory, capsys, row, L, fmt, place, data):
    family = data.draw(st.sampled_from(sorted(FAMILIES)))  # also families the row does not cover
    ids = data.draw(st.sampled_from(list(id_variants(L).values())))
    t, d = write_case(tmp_path_factory.mktemp("cli"), family, L, fmt, ids, place)
    extra = data.draw(
        st.sampled_from([[], ["--platform", "cpu"], ["--runner", "v1"], ["--strict"], ["--json"]])
    )
    engine = f"{row.framework}=={version_in(row)}" if data.draw(st.booleans()) else row.framework
    code = main(["check", str(d), "--target", str(t), "--engine", engine, *extra])
    out = capsys.readouterr()
    assert code in (0, 1, 2, 3), code
    assert code != 2 or out.err.count("\n") == 1, out.err


@pytest.mark.parametrize("weights", ["full", "first-n", "offsets", "absolute"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_check_and_inspect_with_weights(tmp_path, capsys, fmt, weights):
    """Real (sparse) weights: fc width and the vocabulary maps are read too."""
    t, d = write_case(tmp_path, "llama", 32, fmt, [1, 15, 28], "both", weights=weights)
    run_check(t, d, ["sglang==0.5.23", "vllm==0.33.0", "vllm==0.28.0", "trtllm"])
    for argv in (["check", str(d), "--target", str(t)], ["inspect", str(d), "--target", str(t)]):
        assert main(argv) in (0, 1, 3)
    capsys.readouterr()


@pytest.fixture(scope="module")
def generated_models(tmp_path_factory):
    from engines.generate import write_models

    return write_models(tmp_path_factory.mktemp("models"))


@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data(), gpu=st.sampled_from(["h200", "b200", "unknown"]), json_out=st.booleans())
def test_lint_cli_on_generated_commands(generated_models, capsys, data, gpu, json_out):
    from engines.generate import fill, sglang_commands, vllm_commands

    argv = fill(data.draw(st.one_of(sglang_commands(), vllm_commands())), generated_models)
    code = main(["lint", "--gpu", gpu, *(["--json"] if json_out else []), "--", *argv])
    capsys.readouterr()
    assert code in (0, 1, 3), (code, argv)  # a command the engine parses is never bad input


def test_the_console_script_exits_with_a_verdict(tmp_path):
    """The real entry point: the VL target on an older SGLang (the reported KeyError: 'unverified') exits 3."""
    vl = {"architectures": ["Qwen2_5_VLForConditionalGeneration"], "model_type": "qwen2_5_vl",
          "text_config": {"model_type": "qwen2_5_vl_text", "num_hidden_layers": 28, "hidden_size": 64,
                          "vocab_size": 300}}  # fmt: skip
    t = sparse.target(tmp_path / "t", vl)
    d = tmp_path / "d"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(drafter_config("eagle", None, "nested", 28)))
    r = subprocess.run([sys.executable, "-m", "eaglewire.cli", "check", str(d), "--target", str(t), "--engine",
                        "sglang==0.5.5", "--trained-on", "h2,h14,h25"], capture_output=True, text=True, timeout=120)  # fmt: skip
    assert r.returncode == 3 and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert "UNVERIFIED" in r.stdout and "0.5.5" in r.stdout


@pytest.mark.parametrize(
    "command", ["check", "doctor", "lint", "test", "inspect", "convert", "bench", "advise"]
)
def test_every_help_names_the_exit_codes(capsys, command):
    assert main([command, "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "0 ok" in text and "1 a problem" in text and "2 bad input" in text and "3 unverified" in text


@pytest.mark.parametrize(
    "argv", [["doctor", "drafter-dir"], ["check", "--no-such-flag"], ["test", "--engine"], ["lint", "--gpu"]]
)
def test_usage_errors_end_in_one_line_and_exit_2(argv, capsys):
    """A missing argument or an unknown flag is click's usage message and exit code 2, never a traceback (newer
    typer releases raise their own vendored click's exceptions: both are caught)."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "Error:" in err, err
