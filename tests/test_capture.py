"""Capture: every tap equals transformers' output_hidden_states (h_L pre-norm), shards resume, peers' samples read."""

import json

import pytest
import torch
from safetensors.torch import save_file

from eaglewire.capture import CaptureReader, capture
from eaglewire.data import load_samples
from eaglewire.dumps import open_dump
from eaglewire.errors import InputError
from eaglewire.taps import Wiring
from eaglewire.targets import forward_taps, load_target


@pytest.mark.parametrize("fixture", ["tiny_target", "tiny_deepseek"])
def test_capture_equals_output_hidden_states(request, tmp_path, fixture, text_data):
    tgt = load_target(request.getfixturevalue(fixture))
    L = tgt.info.num_layers
    samples = load_samples(text_data, tgt.tokenizer, max_len=64)[:5]
    res = capture(tgt, samples, tmp_path / "cap", samples_per_shard=2, dtype=torch.float32)
    assert res.shards_written == 3 and str(res.taps) == ",".join(f"h{i}" for i in range(L + 1))
    reader = CaptureReader(tmp_path / "cap")
    pre_norm = {}
    hook = tgt.layers[-1].register_forward_hook(
        lambda m, i, o: pre_norm.__setitem__("h", o[0] if isinstance(o, tuple) else o)
    )
    for i, s in enumerate(samples):
        with torch.no_grad():
            ref = tgt.model(input_ids=s.input_ids[None], output_hidden_states=True)
        got = reader[i]
        assert torch.equal(got.input_ids, s.input_ids)
        for k in range(L):
            assert torch.equal(got.hidden[k], ref.hidden_states[k][0]), f"h{k}"
        assert torch.equal(got.hidden[L], pre_norm["h"][0])  # pre-norm, not transformers' post-norm entry
        assert not torch.allclose(got.hidden[L], ref.hidden_states[L][0])
        # the stored head turns h_L back into the target's logits
        assert torch.allclose(reader.target_head()(got.hidden[L]), ref.logits[0], atol=1e-4)
    hook.remove()


def test_capture_selected_taps_resume_and_torn_shard(tmp_path, tiny_target, text_data):
    tgt = load_target(tiny_target)
    samples = load_samples(text_data, tgt.tokenizer, max_len=48)[:6]
    out = tmp_path / "cap"
    capture(tgt, samples, out, Wiring.parse("h0,h3"), samples_per_shard=2)
    first = (out / "shard-00001.safetensors").read_bytes()
    # a killed run: one shard gone, a torn temp file left behind, the manifest not marked complete
    (out / "shard-00001.safetensors").unlink()
    (out / ".shard-00001.safetensors.abc.tmp").write_bytes(b"half")
    manifest = json.loads((out / "manifest.json").read_text())
    (out / "manifest.json").write_text(json.dumps(manifest | {"complete": False}))
    with pytest.raises(InputError, match="incomplete"):
        CaptureReader(out)
    res = capture(tgt, samples, out, Wiring.parse("h0,h3"), samples_per_shard=2)
    assert (res.shards_written, res.shards_skipped) == (1, 2)
    assert (out / "shard-00001.safetensors").read_bytes() == first
    reader = CaptureReader(out)
    assert str(reader.taps) == "h0,h3,h6" and sorted(reader[3].hidden) == [0, 3, 6]
    with pytest.raises(InputError, match="different capture"):
        capture(tgt, samples[:5], out, Wiring.parse("h0,h3"), samples_per_shard=2)


def test_reads_speculators_offline_samples(tmp_path, tiny_target, text_data):
    """vLLM's extract_hidden_states files: hidden_states [T, n_slots, H], slots ascending ids, last slot h_L."""
    tgt = load_target(tiny_target)
    s = load_samples(text_data, tgt.tokenizer, max_len=40)[0]
    hidden, _ = forward_taps(tgt, s.input_ids[None])
    ids = [2, 3, 5, 6]  # speculators' [2, L//2, L-3] + [L] for L = 6
    hs = torch.stack([hidden[i][0] for i in ids], dim=1).to(torch.bfloat16)
    d = tmp_path / "prep" / "hidden_states"
    d.mkdir(parents=True)
    save_file({"hidden_states": hs, "token_ids": s.input_ids}, str(d / "hs_0.safetensors"))
    reader = open_dump(d, tgt, ids)
    got = reader[0]
    assert str(reader.taps) == "h2,h3,h5,h6"
    assert torch.equal(got.hidden[5], hidden[5][0].to(torch.bfloat16).float())
    assert got.aux(Wiring.parse("h2,h3,h5")).shape == (s.input_ids.numel(), 3 * 64)
    with pytest.raises(InputError, match="3 slots"):
        open_dump(d, tgt, [2, 3, 6])[0]


def test_chat_jsonl_loss_mask_on_assistant_turns(tmp_path, tiny_target):
    tgt = load_target(tiny_target)
    f = tmp_path / "chat.jsonl"
    rows = [
        {
            "messages": [
                {"role": "user", "content": "write a loop"},
                {"role": "assistant", "content": "for i in range(10):\n    print(i)"},
            ]
        },
        {"text": "import os\nprint(os.getcwd())\n" * 3},
    ]
    f.write_text("\n".join(json.dumps(r) for r in rows))
    chat, plain = load_samples(f, tgt.tokenizer, max_len=256, min_len=4)
    decoded = tgt.tokenizer.decode(chat.input_ids[chat.loss_mask])
    assert "for i in range(10)" in decoded and "write a loop" not in decoded
    assert bool(plain.loss_mask.all())
    (tmp_path / "bad.jsonl").write_text('{"text": 1}\n')
    with pytest.raises(InputError, match=r"bad\.jsonl:1"):
        load_samples(tmp_path / "bad.jsonl", tgt.tokenizer)


def test_non_finite_hidden_states_stop_at_their_source(tmp_path, tiny_target, text_data):
    """NaN/Inf taps train to NaN and score NaN logits as agreeing (argmax picks the NaN): every source refuses
    them in one line naming where (the file and sample, or the target and tap)."""
    from safetensors.torch import load_file

    from eaglewire.capture import OnlineSource

    tgt = load_target(tiny_target)
    samples = load_samples(text_data, tgt.tokenizer, max_len=40)[:3]
    cap = tmp_path / "cap"
    capture(tgt, samples, cap, Wiring.parse("h1,h3,h5"), samples_per_shard=4)
    shard = cap / "shard-00000.safetensors"
    t = load_file(str(shard))
    t["h3"][5, 0] = float("nan")
    save_file(t, str(shard))
    before = shard.read_bytes()
    with pytest.raises(InputError, match=r"shard-00000\.safetensors: sample 0: tap h3 holds NaN or Inf"):
        CaptureReader(cap)[0]
    assert shard.read_bytes() == before
    # the target's own forward overflowing (as fp16 does on some targets): refused live and at capture
    with torch.no_grad():
        tgt.model.model.layers[2].mlp.down_proj.weight.fill_(float("inf"))
    with pytest.raises(InputError, match=r"sample 0: tap h3 holds NaN or Inf .*--dtype"):
        OnlineSource(tgt, samples, Wiring.parse("h1,h3,h5"))[0]
    with pytest.raises(InputError, match=r"capture sample 0 of its shard: tap h3 holds NaN or Inf"):
        capture(tgt, samples, tmp_path / "cap2", Wiring.parse("h1,h3,h5"), samples_per_shard=4)
    assert not list((tmp_path / "cap2").glob("shard-*.safetensors"))
