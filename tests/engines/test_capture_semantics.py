"""What an engine's captured layer index means, tested on tiny transformers models (no engine needed).

The engines' forward loops (read in tests/engines/capture.py) capture the residual stream at two kinds of place:
SGLang at the input of decoder layer i (before its input norm), vLLM's llama-style models after layer k-1
(`idx + 1`, index 0 = the embeddings) and its DeepSeek-style models before layer k plus once after the last layer.
Both are the tap h_k = transformers' output_hidden_states[k] for k < L; k = L is the last layer's output before
the final norm, which transformers' own tuple holds post-norm. These hooks reproduce the two capture places.
"""

from __future__ import annotations

import pytest
import torch

from eaglewire.targets import load_target


@pytest.mark.parametrize("fixture", ["tiny_target", "tiny_deepseek"])
def test_engine_capture_places_are_the_taps(request, fixture):
    tgt = load_target(request.getfixturevalue(fixture))
    L = tgt.info.num_layers
    before: dict[int, torch.Tensor] = {}  # SGLang: input of layer i (and vLLM DeepSeek: before layer k)
    after: dict[int, torch.Tensor] = {}  # vLLM llama: output of layer k-1 = index k
    hooks = []
    for i, layer in enumerate(tgt.layers):
        hooks.append(layer.register_forward_pre_hook(
            lambda m, args, kwargs, i=i: before.__setitem__(i, (args[0] if args else kwargs["hidden_states"])[0]),
            with_kwargs=True))  # fmt: skip
        hooks.append(
            layer.register_forward_hook(
                lambda m, inp, out, i=i: after.__setitem__(
                    i + 1, (out[0] if isinstance(out, tuple) else out)[0]
                )
            )
        )
    ids = torch.arange(3, 40)[None]
    with torch.no_grad():
        ref = tgt.model(input_ids=ids, output_hidden_states=True).hidden_states
    for h in hooks:
        h.remove()
    for k in range(L):  # SGLang index k, vLLM DeepSeek index k (k >= 1; 0 crashes there): tap h_k
        assert torch.equal(before[k], ref[k][0]), f"input of layer {k} != h{k}"
    for k in range(1, L):  # vLLM llama index k: output of layer k-1 = h_k
        assert torch.equal(after[k], ref[k][0]), f"output of layer {k - 1} != h{k}"
    assert not torch.allclose(after[L], ref[L][0])  # index L: pre-norm, unlike transformers' post-norm entry
