"""Fixtures made by the peer libraries themselves (the ground truth for formats and forward parity)."""

from __future__ import annotations

from pathlib import Path

import torch


def speculators_drafter(
    out: Path,
    *,
    hidden: int = 64,
    vocab: int = 300,
    draft_vocab: int = 300,
    layers: int = 1,
    ids: list[int] | None = (1, 3, 5),
    norm_before_residual: bool = False,
    norm_before_fc: bool = False,
    fc_norm: bool = False,
    norm_output: bool = False,
    model_type: str = "llama",
    seed: int = 0,
):
    """A random-weight drafter written by speculators' own `save_pretrained` (returns the model too)."""
    from speculators.config import SpeculatorsConfig, VerifierConfig
    from speculators.models.eagle3 import Eagle3DraftModel, Eagle3SpeculatorConfig
    from speculators.proposals.greedy import GreedyTokenProposalConfig
    from transformers import LlamaConfig, Qwen3Config

    cls = LlamaConfig if model_type == "llama" else Qwen3Config
    tl = cls(
        vocab_size=vocab,
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
        rms_norm_eps=1e-6,
    )
    tl._attn_implementation = "eager"
    cfg = Eagle3SpeculatorConfig(
        transformer_layer_config=tl,
        draft_vocab_size=draft_vocab,
        norm_before_residual=norm_before_residual,
        norm_before_fc=norm_before_fc,
        fc_norm=fc_norm,
        norm_output=norm_output,
        eagle_aux_hidden_state_layer_ids=list(ids) if ids is not None else None,
        speculators_config=SpeculatorsConfig(
            algorithm="eagle3",
            proposal_methods=[GreedyTokenProposalConfig(speculative_tokens=3)],
            default_proposal_method="greedy",
            verifier=VerifierConfig(name_or_path=None, architectures=["LlamaForCausalLM"]),
        ),
    )
    torch.manual_seed(seed)
    model = Eagle3DraftModel(cfg)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "verifier" in name:
                continue
            if p.dim() >= 2:
                p.copy_(torch.randn(p.shape, generator=g) * 0.1)
            else:
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=g))
        if draft_vocab < vocab:
            chosen = torch.sort(torch.randperm(vocab, generator=g)[:draft_vocab]).values
            model.d2t.copy_(chosen - torch.arange(draft_vocab))
            model.t2d.zero_()
            model.t2d[chosen] = True
    model.save_pretrained(out)
    return model


# ---- training-pipeline dumps ----------------------------------------------------------------------------------


def _rows_jsonl(path: Path, samples) -> Path:
    import json

    path.write_text(
        "".join(
            json.dumps({"input_ids": s.input_ids.tolist(), "loss_mask": s.loss_mask.long().tolist()}) + "\n"
            for s in samples
        )
    )
    return path


def speculators_dump(
    prep: Path, target_dir: Path, samples, ids: list[int], dtype=torch.bfloat16, fp8: bool = False
) -> list:
    """speculators 0.9 offline data for `samples`: the prepared dataset written by speculators' own
    `prepare-data` code (`load_and_preprocess_dataset`, its pass-through path for rows that carry input_ids and
    loss_mask; it shuffles with seed 0, so row i is not sample i), then one `hidden_states/hs_<i>.safetensors` per
    row exactly as vLLM's ExampleHiddenStatesConnector writes it (vLLM cannot run here): `save_file({"hidden_states":
    [T, n_slots, H] in the model dtype, slot j = the j-th smallest id, "token_ids": torch.tensor(prompt ids)})`
    (`_submit_async_write` / `_write_tensors`, vllm@015a95c8). The id L slot is the pre-norm last-layer output.
    `fp8`: the hs-connectors FP8 backend's file, quantised by its own `quantize_tensor_to_fp8`. Returns the rows
    as Samples (input_ids, loss_mask) in file order."""
    from safetensors.torch import save_file
    from speculators.data_generation.preprocessing import load_and_preprocess_dataset

    from eaglewire.data import Sample
    from eaglewire.targets import forward_taps, load_target

    prep.mkdir(parents=True, exist_ok=True)
    rows = _rows_jsonl(prep.parent / f"{prep.name}-rows.jsonl", samples)
    ds, _ = load_and_preprocess_dataset(
        str(target_dir), [str(rows)], seq_length=4096, build_dataset_num_proc=1, seed=0, skip_token_freq=True
    )
    ds.save_to_disk(str(prep))
    tgt = load_target(target_dir)
    out = prep / "hidden_states"
    out.mkdir()
    order = sorted(set(ids))
    rows_out = []
    for i, row in enumerate(ds):
        token_ids = torch.tensor(row["input_ids"].tolist())  # vLLM: torch.tensor(request.prompt_token_ids)
        hidden, _ = forward_taps(tgt, token_ids[None], order)
        hs = torch.stack([h[0] for h in hidden], dim=1).to(dtype).contiguous()
        tensors = {"hidden_states": hs, "token_ids": token_ids.clone()}
        if fp8:
            from hs_connectors.fp8_utils import SCALES_KEY, quantize_tensor_to_fp8

            q, scales = quantize_tensor_to_fp8(hs)
            tensors = {**tensors, "hidden_states": q, SCALES_KEY: scales}
        save_file(tensors, str(out / f"hs_{i}.safetensors"))
        rows_out.append(Sample(token_ids, row["loss_mask"].bool()))
    return rows_out


def speculators_run_yaml(
    path: Path, target_dir: Path, prep: Path, target_layer_ids: list[int] | None
) -> Path:
    """speculators' resolved training config, written by its own `dump_yaml` (run.yaml omits defaults)."""
    from speculators.train.config.artifacts import dump_yaml
    from speculators.train.config.schema import TrainConfig

    path.parent.mkdir(parents=True, exist_ok=True)
    flat = {"verifier_name_or_path": str(target_dir), "data_path": str(prep)}
    if target_layer_ids is not None:
        flat["target_layer_ids"] = list(target_layer_ids)
    path.write_text(dump_yaml(TrainConfig.from_flat(flat)))
    return path


def specforge_dump(out: Path, target_dir: Path, samples, aux_layers: list[int], dtype=torch.bfloat16) -> Path:
    """SpecForge offline data for `samples`, byte for byte as scripts/prepare_hidden_states.py writes it (the
    script needs SGLang on a GPU, so it cannot run here): per row idx, under `rows_<a>-<b>/` (groups of 5000),
    `torch.save({"input_ids": [T] int64, "loss_mask": [T] int64, "hidden_state": [1, T, H], "aux_hidden_state":
    [1, T, 3H]}, data_<idx>.ckpt)` (`_save_tensor`, SpecForge@0168a59). SGLang captures the output of layer v for
    an id v (`set_eagle3_layers_to_capture` adds 1: tap h_{v+1}) and concatenates in ascending order;
    `hidden_state` is the post-norm state the LM head reads (transformers' hidden_states[L])."""
    from eaglewire.targets import forward_taps, load_target

    tgt = load_target(target_dir)
    taps = [v + 1 for v in sorted(aux_layers)]
    group_size = 5000
    for idx, s in enumerate(samples):
        group_start = (idx // group_size) * group_size
        sub = out / f"rows_{group_start}-{group_start + group_size}"
        sub.mkdir(parents=True, exist_ok=True)
        hidden, _ = forward_taps(tgt, s.input_ids[None], taps)
        with torch.no_grad():
            post = tgt.model(input_ids=s.input_ids[None], output_hidden_states=True).hidden_states[-1][0]
        data_point = {"input_ids": s.input_ids.view(-1), "loss_mask": s.loss_mask.long().view(-1)}
        data_point["hidden_state"] = post.to(dtype).clone().unsqueeze(0).cpu()
        data_point["aux_hidden_state"] = (
            torch.cat([h[0] for h in hidden], -1).to(dtype).clone().unsqueeze(0).cpu()
        )
        torch.save(data_point, sub / f"data_{idx}.ckpt")
    return out
