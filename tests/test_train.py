"""Training: resume after a real kill reaches the same weights; 2-process torchrun equals one process."""

import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest
import torch
from safetensors.torch import load_file

from eaglewire.formats import read_drafter

ARGS = [
    "--taps",
    "h1,h3,h5",
    "--steps",
    "12",
    "--batch-size",
    "4",
    "--checkpoint-every",
    "2",
    "--eval-every",
    "6",
    "--ttt-steps",
    "3",
    "--draft-vocab",
    "200",
    "--max-len",
    "64",
    "--lr",
    "3e-3",
    "--warmup",
    "2",
]


def cli(*args):
    return [sys.executable, "-m", "eaglewire.cli", *map(str, args)]


def env():
    return dict(os.environ, OMP_NUM_THREADS="1")


def train_cmd(target, data, out):
    return cli("train", "--target", target, "--data", data, "--out", out, *ARGS, "--json")


def weights(d):
    return load_file(str(d / "model.safetensors"))


def test_resume_after_kill_matches_uninterrupted(tmp_path, tiny_target, text_data):
    full = tmp_path / "full"
    r = subprocess.run(
        train_cmd(tiny_target, text_data, full), capture_output=True, text=True, env=env(), timeout=600
    )
    assert r.returncode == 0, r.stderr[-3000:]
    killed = tmp_path / "killed"
    p = subprocess.Popen(
        train_cmd(tiny_target, text_data, killed),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env(),
    )
    state = killed / "checkpoint" / "state.json"
    deadline = time.time() + 300
    while time.time() < deadline and p.poll() is None:
        if state.exists() and json.loads(state.read_text())["step"] >= 4:
            break
        time.sleep(0.05)
    p.send_signal(signal.SIGKILL)
    p.wait()
    step_at_kill = json.loads(state.read_text())["step"]
    assert 0 < step_at_kill < 12 and not (killed / "model.safetensors").exists()
    r = subprocess.run(
        train_cmd(tiny_target, text_data, killed), capture_output=True, text=True, env=env(), timeout=600
    )
    assert r.returncode == 0, r.stderr[-3000:]
    info = json.loads(r.stdout)
    assert info["resumed_from"] == step_at_kill
    a, b = weights(full), weights(killed)
    assert set(a) == set(b)
    for k in a:
        assert torch.allclose(a[k].float(), b[k].float(), atol=1e-6, rtol=0), k
    ha = json.loads((full / "train_history.json").read_text())
    hb = json.loads((killed / "train_history.json").read_text())
    assert [h["loss"] for h in ha] == pytest.approx([h["loss"] for h in hb], abs=1e-6)
    # the result records its wiring and target
    ck = read_drafter(killed)
    assert ck.provenance.taps == "h1,h3,h5" and ck.provenance.target["num_layers"] == 6
    assert ck.provenance.training["held_out"]["acc"]


def test_torchrun_two_processes_equal_one(tmp_path, tiny_target, text_data):
    torchrun = shutil.which("torchrun", path=os.path.dirname(sys.executable)) or shutil.which("torchrun")
    assert torchrun, "torchrun not found"
    one = tmp_path / "one"
    r = subprocess.run(
        train_cmd(tiny_target, text_data, one), capture_output=True, text=True, env=env(), timeout=600
    )
    assert r.returncode == 0, r.stderr[-3000:]
    two = tmp_path / "two"
    cmd = [
        torchrun,
        "--nproc-per-node",
        "2",
        "--master-port",
        "29517",
        "-m",
        "eaglewire.cli",
        "train",
        "--target",
        str(tiny_target),
        "--data",
        str(text_data),
        "--out",
        str(two),
        *ARGS,
        "--json",
    ]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env(), timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    assert json.loads(r.stdout)["world_size"] == 2
    h1 = json.loads((one / "train_history.json").read_text())
    h2 = json.loads((two / "train_history.json").read_text())
    assert len(h1) == len(h2) == 12
    for a, b in zip(h1, h2, strict=True):
        assert a["loss"] == pytest.approx(b["loss"], rel=1e-4, abs=1e-5), (a, b)
        assert a["acc"] == pytest.approx(b["acc"], abs=1e-3)
    w1, w2 = weights(one), weights(two)
    for k in w1:
        assert torch.allclose(w1[k].float(), w2[k].float(), atol=1e-4), k


def test_training_log_equals_the_standalone_test(tmp_path, tiny_target, text_data):
    """The per-step acc training logs for a batch is the standalone test's teacher-forced acc on that batch:
    one code path (metrics.count_steps). A first phase overfits the batch (so the accuracies are not all 0); a
    second phase at lr 0 logs the batch with exactly the weights it saves."""
    from eaglewire.capture import OnlineSource
    from eaglewire.data import load_samples
    from eaglewire.jobs.evaluate import StandaloneOptions, standalone_test
    from eaglewire.jobs.train import TrainConfig, train_drafter
    from eaglewire.taps import Wiring
    from eaglewire.targets import load_target

    tgt = load_target(tiny_target)
    samples = load_samples(text_data, tgt.tokenizer, max_len=64, limit=6)
    taps = Wiring.parse("h1,h3,h5")
    source = OnlineSource(tgt, samples, taps)
    cfg = TrainConfig(
        taps=str(taps), draft_vocab_size=200, ttt_steps=3, steps=40, batch_size=len(samples), lr=1e-2,
        warmup_steps=1, eval_every=10**6, checkpoint_every=10**6,
    )  # fmt: skip
    train_drafter(tgt, source, tmp_path / "first", cfg, val_fraction=0.0)
    cfg = dataclasses.replace(cfg, steps=1, lr=0.0, init_from=str(tmp_path / "first"))
    res = train_drafter(tgt, source, tmp_path / "d", cfg, val_fraction=0.0)
    logged = res.history[0]["acc"]
    opts = StandaloneOptions(steps=3, samples=len(samples), prompt_len=16, new_tokens=8, trees=())
    rep = standalone_test(tmp_path / "d", tiny_target, opts, lambda tok, max_len, limit: samples)
    tested = rep.evaluations["teacher"].acc
    assert rep.evaluations["teacher"].rows == sum(int(s.loss_mask[2:].sum()) for s in samples)
    assert tested == pytest.approx(logged, abs=1e-4), (tested, logged)
    assert any(a > 0 for a in tested)  # a drafter that agrees somewhere, so equality is not 0 == 0
