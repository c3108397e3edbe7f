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
