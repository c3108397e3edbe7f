import os
from pathlib import Path

import pytest

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(scope="session")
def tiny_target(tmp_path_factory) -> Path:
    """A random-weight 6-layer Llama target with a real byte-level BPE tokenizer (trained on stdlib text)."""
    from models import make_tiny_target

    return make_tiny_target(tmp_path_factory.mktemp("tiny-llama"), "llama")


@pytest.fixture(scope="session")
def tiny_deepseek(tmp_path_factory) -> Path:
    from models import make_tiny_target

    return make_tiny_target(tmp_path_factory.mktemp("tiny-deepseek"), "deepseek_v3")


@pytest.fixture(scope="session")
def text_data(tmp_path_factory) -> Path:
    """A few thousand tokens of ordinary Python (stdlib files), as one text file."""
    from models import stdlib_text

    path = tmp_path_factory.mktemp("data") / "code.txt"
    path.write_text(stdlib_text(40_000))
    return path


@pytest.fixture(scope="session")
def weak_drafter(tmp_path_factory, text_data) -> Path:
    """A drafter trained for 6 steps on the zoo target (the engine tiers' weak-drafter case): it loads and runs like
    any other, and drafts badly."""
    import os
    import subprocess
    import sys

    from eaglewire import zoo

    out = tmp_path_factory.mktemp("weak") / "drafter"
    cmd = [sys.executable, "-m", "eaglewire.cli", "train", "--target", str(zoo.target_dir()), "--data",
           str(text_data), "--out", str(out), "--taps", "h2,h4,h5", "--steps", "6", "--batch-size", "4",
           "--max-len", "128", "--ttt-steps", "3", "--draft-vocab", "2048", "--warmup", "2", "--eval-every", "6",
           "--checkpoint-every", "1000", "--json"]  # fmt: skip
    src = Path(__file__).resolve().parents[1] / "src"
    subprocess.run(
        cmd, check=True, env={**os.environ, "PYTHONPATH": str(src)}, capture_output=True, timeout=600
    )
    return out
