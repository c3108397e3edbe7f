"""Fuzzing the loaders: any mutation of a drafter's config, tensors or bytes either loads or raises InputError.

Every other exception (KeyError, TypeError, a torch shape error deep in a forward) is a crash the user would
see as a traceback instead of one line naming the problem. The checkpoints are real files on disk in the three
formats; the code under test is the whole read path the CLI uses (read, inspect, check, build the module).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from safetensors.torch import load_file, save_file

from eaglewire.drafter import Eagle3Drafter
from eaglewire.errors import InputError
from eaglewire.formats import read_drafter
from eaglewire.formats.inspection import inspect_drafter
from eaglewire.jobs.check import check
from eaglewire.targets import read_target

from fixtures import eagle_drafter, modelopt_drafter, target_config
from peers import speculators_drafter

FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**40), 2**40)
    | st.floats(allow_nan=True)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("fuzz-src")
    speculators_drafter(root / "speculators", ids=[1, 5, 9])  # the library's own save_pretrained output
    return {
        "eagle": eagle_drafter(root / "eagle", ids=[1, 5, 9]),
        "speculators": root / "speculators",
        "modelopt": modelopt_drafter(root / "modelopt", ids=[1, 5, 9]),
        "target": target_config(root / "target"),
    }


def load_everything(path: Path, target: Path) -> None:
    """The CLI's read path: inspect, check against every engine, and build the torch module."""
    inspect_drafter(path, target)
    check(path, read_target(target), ["sglang==0.5.23", "vllm==0.33.0"])
    ckpt = read_drafter(path)
    Eagle3Drafter.from_checkpoint(ckpt)


def _paths(obj, prefix=()):
    """Every key path of a JSON object, nested ones included."""
    out = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.append((*prefix, k))
            out += _paths(v, (*prefix, k))
    return out


def mutate_config(path: Path, pick: int, value, delete: bool) -> None:
    """Replace (or delete) the `pick`-th key path of a JSON config, nested keys included."""
    cfg = json.loads(path.read_text())
    paths = _paths(cfg)
    where = paths[pick % len(paths)]
    parent = cfg
    for k in where[:-1]:
        parent = parent[k]
    if delete:
        del parent[where[-1]]
    else:
        parent[where[-1]] = value
    path.write_text(json.dumps(cfg))


def _copy(sources, fmt, tmp_path) -> Path:
    dst = tmp_path / f"case-{fmt}"
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(sources[fmt], dst)
    return dst


def _loads_or_input_error(path: Path, target: Path) -> None:
    try:
        load_everything(path, target)
    except InputError as e:
        assert "\n" not in str(e) and str(e), repr(e)


@FUZZ
@given(
    fmt=st.sampled_from(["eagle", "speculators", "modelopt"]),
    pick=st.integers(0, 10_000),
    value=json_values,
    delete=st.booleans(),
)
def test_config_mutations(sources, tmp_path, fmt, pick, value, delete):
    d = _copy(sources, fmt, tmp_path)
    mutate_config(d / "config.json", pick, value, delete)
    _loads_or_input_error(d, sources["target"])


@FUZZ
@given(
    fmt=st.sampled_from(["eagle", "speculators", "modelopt"]),
    pick=st.integers(0, 10_000),
    action=st.sampled_from(["drop", "reshape", "int", "nan", "scalar", "extra"]),
    dims=st.lists(st.integers(1, 300), min_size=1, max_size=3),
)
def test_tensor_mutations(sources, tmp_path, fmt, pick, action, dims):
    d = _copy(sources, fmt, tmp_path)
    file = next(d.glob("*.safetensors"))
    tensors = load_file(str(file))
    name = sorted(tensors)[pick % len(tensors)]
    if action == "drop":
        del tensors[name]
    elif action == "reshape":
        tensors[name] = torch.zeros(*dims, dtype=tensors[name].dtype)
    elif action == "int":
        tensors[name] = torch.arange(tensors[name].numel(), dtype=torch.int64).reshape(tensors[name].shape)
    elif action == "nan":
        tensors[name] = torch.full_like(tensors[name].float(), float("nan")).to(tensors[name].dtype)
    elif action == "scalar":
        tensors[name] = torch.tensor(3, dtype=tensors[name].dtype)
    else:
        tensors["model.layers.0.mystery.weight"] = torch.zeros(*dims)
    save_file(tensors, str(file))
    _loads_or_input_error(d, sources["target"])


@FUZZ
@given(
    fmt=st.sampled_from(["eagle", "speculators", "modelopt"]),
    cut=st.floats(0.0, 1.0),
    flips=st.lists(st.tuples(st.integers(0, 2**31), st.integers(0, 255)), max_size=4),
)
def test_byte_corruption(sources, tmp_path, fmt, cut, flips):
    """Truncated or bit-flipped safetensors (header bytes included) never crash the reader."""
    d = _copy(sources, fmt, tmp_path)
    file = next(d.glob("*.safetensors"))
    data = bytearray(file.read_bytes())
    header = 8 + int.from_bytes(data[:8], "little")
    for pos, byte in flips:
        data[pos % header] = byte  # corrupt the length prefix or the JSON header
    if cut < 0.5:
        data = data[: int(len(data) * cut * 2)]
    file.write_bytes(bytes(data))
    _loads_or_input_error(d, sources["target"])


@pytest.mark.parametrize("shape", [[120.0], [-1], [True], ["120"]])
def test_a_header_shape_that_is_not_whole_numbers_is_an_input_error(sources, tmp_path, shape):
    """One flipped byte in the JSON header (`[120]` -> `[1.0]`) leaves a header that still parses: the lazy
    reader names the entry instead of handing torch a float dimension (found by test_byte_corruption)."""
    d = _copy(sources, "eagle", tmp_path)
    file = next(d.glob("*.safetensors"))
    data = file.read_bytes()
    size = int.from_bytes(data[:8], "little")
    header = json.loads(data[8 : 8 + size])
    name = next(k for k in header if k != "__metadata__")
    header[name]["shape"] = shape
    text = json.dumps(header).encode()  # data offsets count from the end of the header: they hold
    file.write_bytes(len(text).to_bytes(8, "little") + text + data[8 + size :])
    with pytest.raises(InputError, match=f"malformed safetensors entry '{name}'"):
        read_drafter(d, weights="lazy")


@FUZZ
@given(
    family=st.sampled_from(["llama", "deepseek_v3", "qwen3", "kimi_k25"]),
    pick=st.integers(0, 10_000),
    value=json_values,
    delete=st.booleans(),
)
def test_target_config_mutations(tmp_path, family, pick, value, delete):
    """A mutated target config.json reads, or is refused in one line; check() never crashes on what it read."""
    t = target_config(tmp_path / f"t-{family}", family=family)
    mutate_config(t / "config.json", pick, value, delete)
    try:
        info = read_target(t)
    except InputError as e:
        assert "\n" not in str(e)
        return
    try:
        check(eagle_drafter(tmp_path / "d", ids=[1, 5, 9]), info, ["sglang==0.5.23", "vllm==0.33.0"])
    except InputError as e:
        assert "\n" not in str(e)


def test_an_eagle3_head_whose_config_says_no_aux_states_is_checked(sources, tmp_path):
    """Found by the fuzzer (test_config_mutations, 2026-12-07): `eagle_config.use_aux_hidden_state: false` on a head
    that has its fc made `check` test a tensor's truth (RuntimeError). The fc is there: an EAGLE-3 head, checked."""
    d = _copy(sources, "eagle", tmp_path)
    config = json.loads((d / "config.json").read_text())
    config.setdefault("eagle_config", {})["use_aux_hidden_state"] = False
    (d / "config.json").write_text(json.dumps(config))
    report = check(d, read_target(sources["target"]), ["sglang==0.5.23", "vllm==0.33.0"])
    assert report.verdicts
