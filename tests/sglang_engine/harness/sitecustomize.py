"""Loaded by every Python process of an SGLang server the tier starts (this folder is put on PYTHONPATH by
sglang_side.py; never imported by eaglewire). When EAGLEWIRE_SGLANG_TAPS_OUT names a file, it wraps SGLang's
Llama target as the module is imported and appends JSON lines to that file:

- {"event": "set", ...}: each call of `LlamaForCausalLM.set_eagle3_layers_to_capture` (the ids it got, the
  `layers_to_capture` it left on the model, the model's decoder layer count);
- {"event": "forward", ...}: the first forward of each process that returned aux hidden states: the layer indices
  whose input the capture loop took (`i in layers_to_capture` over the layers it ran) and how many states came
  back, i.e. what the running engine captured, read from the engine itself.

With EAGLEWIRE_SGLANG_NO_AVX512=1 (sglang_side.py sets it on a CPU without AVX-512, where the harness's kernels are
an AVX2 build), two of SGLang's CPU kernels are replaced, everything else (EAGLE's worker, tree build and verify,
decode attention, norms, rope, sampling) runs as shipped:
- the linear layers keep their plain weights and run as torch's own linear: SGLang's packed-weight GEMM has no path
  below AVX-512 (sgl-kernel gemm.cpp: "tinygemm_kernel_nn: scalar path not implemented");
- the extend attention (prefill, draft extend, target verify) runs in torch with the same arguments, the prefix
  from the KV cache and the new tokens causal or under the verify's qlen x qlen tree mask: the kernel's bf16 brgemm
  needs AMX ("BFloat16 Brgemm VNNI format is only supported ... when amx is supported").
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import json
import os
import sys

_OUT = os.environ.get("EAGLEWIRE_SGLANG_TAPS_OUT")
_MODULE = "sglang.srt.models.llama"
_AMX_UTILS = "sglang.srt.layers.amx_utils"
_AMX_ATTN = "sglang.srt.layers.attention.intel_amx_backend"


def _write(event: dict) -> None:
    with open(_OUT, "a") as f:
        f.write(json.dumps(event | {"pid": os.getpid()}) + "\n")


def _patch(module) -> None:
    cls, inner = module.LlamaForCausalLM, module.LlamaModel
    setter, forward = cls.set_eagle3_layers_to_capture, inner.forward
    seen: set[str] = set()

    def set_eagle3_layers_to_capture(self, layer_ids=None):
        out = setter(self, layer_ids)
        _write({"event": "set", "class": type(self).__name__, "layer_ids": None if layer_ids is None else
                [int(x) for x in layer_ids], "layers_to_capture": [int(x) for x in self.model.layers_to_capture],
                "num_layers": len(self.model.layers), "start_layer": int(self.model.start_layer),
                "end_layer": int(self.model.end_layer)})  # fmt: skip
        return out

    def wrapped_forward(self, *args, **kwargs):
        out = forward(self, *args, **kwargs)
        if isinstance(out, tuple) and len(out) == 2 and "forward" not in seen:
            seen.add("forward")
            ran = range(self.start_layer, self.end_layer)
            _write({"event": "forward", "class": type(self).__name__,
                    "captured_layers": [i for i in ran if i in self.layers_to_capture],
                    "aux_states": len(out[1]), "num_layers": len(self.layers)})  # fmt: skip
        return out

    cls.set_eagle3_layers_to_capture = set_eagle3_layers_to_capture
    inner.forward = wrapped_forward


def _unpacked(module) -> None:
    def keep_plain_weights(layer, weight_names, transpose_dims=None, qweight_packed_method=None) -> None:
        layer.use_intel_amx_backend = False

    module._amx_process_weight_after_loading = keep_plain_weights


def extend_attention_torch(q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, key_scale, value_scale,
                           req_to_token, req_pool_indices, seq_lens, extend_seq_lens, extend_start_loc,
                           max_len_extend, sm_scale, logit_cap, is_cross_attn, sliding_window_size, encoder_lens,
                           sinks, tree_mask=None, is_causal=True):  # fmt: skip
    """sgl_kernel.extend_attention_cpu's contract in torch (fp32 accumulation, output in o_extend's dtype)."""
    import torch

    assert (
        not is_cross_attn and sinks is None and (sliding_window_size is None or sliding_window_size <= 0)
    ), sliding_window_size
    assert key_scale == 1.0 and value_scale == 1.0
    off = 0
    hq, hk = q_extend.shape[1], k_buffer.shape[1]
    for i in range(seq_lens.numel()):
        total, new, start = int(seq_lens[i]), int(extend_seq_lens[i]), int(extend_start_loc[i])
        prefix = total - new
        idx = req_to_token[req_pool_indices[i], :total].long()
        if k_extend is not None:
            k = torch.cat([k_buffer[idx[:prefix]], k_extend[start : start + new]]).float()
            v = torch.cat([v_buffer[idx[:prefix]], v_extend[start : start + new]]).float()
        else:
            k, v = k_buffer[idx].float(), v_buffer[idx].float()
        mask = torch.ones(new, total, dtype=torch.bool)
        if tree_mask is not None:
            mask[:, prefix:] = tree_mask.flatten()[off : off + new * new].view(new, new).bool()
            off += new * new
        elif is_causal:
            mask[:, prefix:] = torch.ones(new, new, dtype=torch.bool).tril()
        q = q_extend[start : start + new].float()
        k, v = k.repeat_interleave(hq // hk, 1), v.repeat_interleave(hq // hk, 1)
        att = torch.einsum("ehd,lhd->hel", q, k) * sm_scale
        if logit_cap and logit_cap > 0:
            att = logit_cap * torch.tanh(att / logit_cap)
        att = att.masked_fill(~mask[None], float("-inf")).softmax(-1)
        o_extend[start : start + new] = torch.einsum("hel,lhd->ehd", att, v).to(o_extend.dtype)


def _torch_extend(module) -> None:
    cls = module.IntelAMXAttnBackend
    init = cls.__init__

    def __init__(self, *args, **kwargs):
        init(self, *args, **kwargs)
        self.extend_attention_fwd = extend_attention_torch

    cls.__init__ = __init__


PATCHES = {}
if _OUT:
    PATCHES[_MODULE] = _patch
if os.environ.get("EAGLEWIRE_SGLANG_NO_AVX512") == "1":
    PATCHES[_AMX_UTILS] = _unpacked
    PATCHES[_AMX_ATTN] = _torch_extend


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        patch = PATCHES.get(name)
        if patch is None:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            try:
                patch(module)
            except Exception as exc:  # the record says why; the engine runs as it would
                if _OUT:
                    _write({"event": "patch-failed", "module": name, "error": repr(exc)})

        spec.loader.exec_module = exec_module
        return spec


if PATCHES:
    sys.meta_path.insert(0, _Finder())
