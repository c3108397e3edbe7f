"""TensorRT-LLM (PyTorch backend): its tap rows (`taps.py`, read at a repository snapshot, no release) and checkpoint
structure (`structure.py`); `data/ledger.json` lists its releases on the index."""
