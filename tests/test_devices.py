"""Device plumbing without a GPU: every job that runs a model keeps its tensors on the device it was given.

`fake_cuda.FakeCuda` pretends a CUDA device exists and records every torch call CUDA would reject (device and
host tensors mixed, a CPU generator on device probabilities, ...). The jobs run end to end under it with
`device="cuda"`: capture, training (online, from a dump, resumed), the standalone test (chain, trees, teacher,
search; online and on a dump), the doctor on a dump, the reference decoder (chain and tree, greedy and sampling),
the decoding benchmark and advise's cost model. A dtype sweep runs the same paths in bf16. And every command that
runs a model takes --device and refuses a device that is not there.
"""

import pytest
import torch
from fake_cuda import FakeCuda

from eaglewire.cli.app import main
from eaglewire.data import file_samples


@pytest.fixture
def fake_cuda(monkeypatch):
    """A CUDA device as far as eaglewire can tell (torch.cuda answers as one GPU; kernels run on the CPU)."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **k: None)
    monkeypatch.setattr(torch.cuda, "set_device", lambda *a, **k: None)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda *a, **k: (2**40, 2**40))
    mode = FakeCuda()
    with mode:
        yield mode


def test_the_audit_catches_a_tensor_made_on_the_host(fake_cuda):
    emb = torch.nn.Embedding(10, 4).to("cuda")
    assert emb.weight.device == torch.device("cuda", 0) and emb.weight.is_cuda
    emb(torch.tensor([[1, 2]]).to("cuda"))  # fine: moved
    assert fake_cuda.violations == []
    emb(torch.tensor([[1, 2]]))  # made on the host: CUDA refuses this
    p = torch.softmax(torch.randn(5, device="cuda"), -1)
    torch.multinomial(p, 1, generator=torch.Generator())
    torch.cat([p, torch.zeros(5)])
    assert len(fake_cuda.violations) == 3, fake_cuda.violations
    assert "test_devices.py" in fake_cuda.violations[0] or "?" in fake_cuda.violations[0]
    assert p[torch.tensor([0, 1])].is_cuda  # device tensors take host indices, as on CUDA
    assert len(fake_cuda.violations) == 3


def _small_train(taps: str, steps: int = 2, **kw):
    from eaglewire.jobs.train import TrainConfig

    return TrainConfig(
        taps=taps, draft_vocab_size=200, ttt_steps=2, steps=steps, batch_size=2, lr=3e-3, warmup_steps=1,
        eval_every=steps, checkpoint_every=1, **kw,
    )  # fmt: skip


def test_every_job_runs_on_the_device(tiny_target, text_data, tmp_path, fake_cuda):
    from eaglewire.bench.advise import measure_costs
    from eaglewire.bench.decode import parse_setting, run_bench
    from eaglewire.capture import capture_job
    from eaglewire.jobs.decode import DecodeConfig, generate_text
    from eaglewire.jobs.doctor import DoctorOptions, doctor
    from eaglewire.jobs.evaluate import StandaloneOptions, TreeSetting, standalone_test
    from eaglewire.jobs.pair import load_pair
    from eaglewire.jobs.train import train_job

    loader = file_samples(text_data)
    few = lambda tok, max_len, limit: loader(tok, 48, None)[:4]  # noqa: E731
    cap = tmp_path / "cap"
    res = capture_job(tiny_target, few, cap, "all", 48, 2, device="cuda")
    assert res.samples == 4
    # the pretend GPU computes on the CPU: the taps must be the CPU's, bit for bit (a model built wrong on the
    # device, e.g. an uninitialised RoPE buffer, changes them)
    from eaglewire.capture import CaptureReader
    from eaglewire.targets import forward_taps, load_target

    with fake_cuda.paused():
        host = load_target(tiny_target)
        first = CaptureReader(cap)[0]
        want, _ = forward_taps(host, first.input_ids[None])
        assert all(torch.equal(first.hidden[t], want[t][0].to(torch.bfloat16).float()) for t in first.hidden)
    drafter = tmp_path / "drafter"
    r = train_job(tiny_target, drafter, _small_train("h1,h3,h5"), dump=cap, val_fraction=0.5, device="cuda")
    assert r.steps == 2 and r.val is not None
    online = train_job(tiny_target, tmp_path / "online", _small_train("h1,h3,h5", 1), data=few, device="cuda")
    assert online.steps == 1
    # resume on the device: a run stopped after one step continues from its checkpoint
    from eaglewire.dumps import open_dump
    from eaglewire.jobs.train import train_drafter
    from eaglewire.partial import load_partial_target

    partial = load_partial_target(tiny_target, "cuda")
    cfg = _small_train("h1,h3,h5", 3)
    train_drafter(
        partial,
        open_dump(cap, partial),
        tmp_path / "resumed",
        cfg,
        val_fraction=0.0,
        stop_after=1,
        device="cuda",
    )
    assert (
        train_job(
            tiny_target, tmp_path / "resumed", cfg, dump=cap, val_fraction=0.0, device="cuda"
        ).resumed_from
        == 1
    )

    trees = (TreeSetting(3, 1, 4), TreeSetting(3, 2, 5))
    opts = StandaloneOptions(
        steps=3, samples=2, prompt_len=8, new_tokens=8, trees=trees, search=True, device="cuda"
    )
    rep = standalone_test(drafter, tiny_target, opts, few)
    assert set(rep.evaluations) == {"chain", "teacher", "search-best"} and rep.search is not None
    opts = StandaloneOptions(steps=3, samples=4, dump=cap, search=True, device="cuda")
    assert standalone_test(drafter, tiny_target, opts).evaluations["teacher"].rows > 0
    assert doctor(drafter, tiny_target, DoctorOptions(samples=2, steps=2, dump=cap, device="cuda")).weights

    pair = load_pair(tiny_target, drafter, device="cuda")
    assert pair.target.device == torch.device("cuda", 0)
    for cfg in (
        DecodeConfig(steps=3, max_new_tokens=12),
        DecodeConfig(steps=3, topk=2, draft_tokens=5, max_new_tokens=12),
        DecodeConfig(steps=3, temperature=0.8, seed=1, max_new_tokens=12),
        DecodeConfig(steps=3, topk=2, draft_tokens=5, temperature=0.8, seed=1, max_new_tokens=12),
    ):
        assert len(generate_text(pair, "def main():", cfg).tokens) == 12
    prompts = [s.input_ids[:16] for s in few(pair.target.tokenizer, 48, None)[:1]]
    configs = [parse_setting("2"), parse_setting("3,2,5")]
    bench = run_bench(pair.target.model, pair.drafter, pair.wiring, prompts, 8, configs, warmup=0)
    assert all(m.runs for m in bench.methods)
    measure_costs(pair.target.model, pair.drafter, pair.wiring, context=16, max_n=4, ks=(1, 2), repeats=1)
    assert fake_cuda.violations == [], "\n".join(fake_cuda.violations[:20])


@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_dtype_sweep(tiny_target, text_data, tmp_path, dtype):
    """The same paths in each dtype: no dtype mix-ups between target, drafter, taps and head."""
    from eaglewire.capture import capture_job
    from eaglewire.jobs.decode import DecodeConfig, generate_text
    from eaglewire.jobs.evaluate import StandaloneOptions, standalone_test
    from eaglewire.jobs.pair import load_pair
    from eaglewire.jobs.train import train_job

    loader = file_samples(text_data)
    few = lambda tok, max_len, limit: loader(tok, 48, None)[:3]  # noqa: E731
    cap = tmp_path / "cap"
    capture_job(tiny_target, few, cap, "all", 48, 2, dtype=dtype)
    drafter = tmp_path / "drafter"
    train_job(
        tiny_target,
        drafter,
        _small_train("h1,h3,h5", 1, bf16=dtype == "bfloat16"),
        dump=cap,
        val_fraction=0.0,
    )
    ev = standalone_test(drafter, tiny_target, StandaloneOptions(steps=2, samples=3, dump=cap, dtype=dtype))
    assert 0.0 <= ev.evaluations["teacher"].acc[0] <= 1.0
    pair = load_pair(tiny_target, drafter, dtype=dtype)
    assert next(pair.drafter.parameters()).dtype == getattr(torch, dtype)
    assert len(generate_text(pair, "import os", DecodeConfig(steps=2, max_new_tokens=6)).tokens) == 6


COMMANDS = [
    ["capture", "--target", "T", "--data", "D", "--out", "O"],
    ["test", "DR", "--target", "T"],
    ["doctor", "DR", "--target", "T"],
    ["train", "--target", "T", "--out", "O", "--taps", "h1"],
    ["generate", "--target", "T", "--drafter", "DR", "--prompt", "p"],
    ["bench", "--target", "T", "--drafter", "DR"],
    ["advise", "DR", "--target", "T"],
]


@pytest.mark.parametrize("argv", COMMANDS, ids=[c[0] for c in COMMANDS])
def test_every_model_command_takes_device(argv, capsys):
    """--device is an option of every command that runs a model; a GPU that is not here is one line, exit 2,
    before anything is read (the gpu-check dry run drives each command with --device cpu end to end)."""
    if torch.cuda.is_available():
        pytest.skip("a GPU is here")
    assert main([*argv, "--device", "cuda:3"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--device cuda:3: torch" in err and "sees no CUDA device" in err
    assert main([*argv, "--device", "tpu"]) == 2
    assert "use cpu, cuda, cuda:N or auto" in capsys.readouterr().err
    assert main([*argv, "--dtype", "int8"]) == 2
    assert "--dtype 'int8'" in capsys.readouterr().err
