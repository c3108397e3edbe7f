"""Hub names resolve through a real Hugging Face cache layout on disk, offline (HF_HUB_OFFLINE=1)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from fixtures import eagle_drafter


def cache_repo(hub, repo_id: str, files: dict[str, str]) -> None:
    """models--org--name/{refs/main, snapshots/<sha>/...} as huggingface_hub writes it."""
    sha = "0123456789abcdef0123456789abcdef01234567"
    root = hub / f"models--{repo_id.replace('/', '--')}"
    (root / "refs").mkdir(parents=True)
    (root / "refs" / "main").write_text(sha)
    snap = root / "snapshots" / sha
    snap.mkdir(parents=True)
    for name, text in files.items():
        (snap / name).write_text(text)


def test_target_and_drafter_by_hub_name_offline(tmp_path):
    hub = tmp_path / "hf" / "hub"
    target = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "num_hidden_layers": 12,
              "hidden_size": 64, "vocab_size": 300}  # fmt: skip
    cache_repo(hub, "meta-llama/Llama-3.1-8B-Instruct", {"config.json": json.dumps(target)})
    d = eagle_drafter(tmp_path / "local-drafter", [1, 5, 8])
    cache_repo(hub, "someorg/some-eagle3", {"config.json": (d / "config.json").read_text()})
    env = dict(os.environ, HF_HOME=str(tmp_path / "hf"), HF_HUB_OFFLINE="1")
    run = lambda *a: subprocess.run([sys.executable, "-m", "eaglewire.cli", *a], capture_output=True, text=True,  # noqa: E731
                                    env=env, cwd=tmp_path, timeout=120)  # fmt: skip
    r = run("check", "someorg/some-eagle3", "--target", "meta-llama/Llama-3.1-8B-Instruct", "--engine",
            "sglang==0.5.23", "--trained-on", "h2,h6,h9", "--json")  # fmt: skip
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["target"]["num_layers"] == 12 and out["engines"][0]["served_taps"] == "h2,h6,h9"
    r = run("check", "someorg/not-cached", "--target", "meta-llama/Llama-3.1-8B-Instruct")
    assert r.returncode == 2 and "someorg/not-cached" in r.stderr and "cache" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
