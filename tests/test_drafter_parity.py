"""The drafter forward equals the speculators library's Eagle3 forward on the same weights (fp32)."""

import pytest
import torch

from eaglewire.drafter import Eagle3Drafter
from eaglewire.formats import read_drafter

from peers import speculators_drafter

CASES = [
    dict(layers=1, norm_before_residual=False),
    dict(layers=1, norm_before_residual=True),
    dict(layers=2, norm_before_residual=False),
    dict(layers=2, norm_before_residual=True),
    dict(layers=1, draft_vocab=120),
    dict(layers=2, draft_vocab=120, norm_before_residual=True),
    dict(layers=1, norm_before_fc=True),
    dict(layers=1, fc_norm=True, norm_output=True),
    dict(layers=2, model_type="qwen3"),
]


def _speculators_logits(model, aux, input_ids, steps):
    seen = []
    hook = model.lm_head.register_forward_hook(lambda m, i, o: seen.append(o.detach()))
    try:
        with torch.no_grad():
            model(
                hidden_states=aux,
                input_ids=input_ids,
                document_ids=torch.zeros_like(input_ids),
                ttt_steps=steps,
            )
    finally:
        hook.remove()
    return seen


@pytest.mark.parametrize("case", CASES, ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()))
def test_forward_matches_speculators(tmp_path, case):
    torch.manual_seed(1)
    ref = speculators_drafter(tmp_path / "d", **case).eval()
    ckpt = read_drafter(tmp_path / "d")
    ours = Eagle3Drafter.from_checkpoint(ckpt)
    T, steps = 24, 3
    aux = torch.randn(1, T, 3 * 64)
    input_ids = torch.randint(0, 300, (1, T))
    expected = _speculators_logits(ref, aux, input_ids, steps)
    with torch.no_grad():
        got = ours.unroll(aux, input_ids, steps, feed="teacher", positions=1 + torch.arange(T)[None])
    assert len(expected) == steps
    for k in range(steps):
        # speculators' teacher-forced step k feeds padding zeros at the last k rows, exactly as we do.
        diff = (got.logits[k] - expected[k]).abs().max().item()
        assert diff <= 1e-5, f"step {k}: max abs diff {diff}"


def test_step_equals_unroll_step0(tmp_path):
    """The cached one-step forward (decoder path) equals the unrolled step 0 (training/test path)."""
    speculators_drafter(tmp_path / "d", layers=2)
    model = Eagle3Drafter.from_checkpoint(read_drafter(tmp_path / "d"))
    T = 10
    aux = torch.randn(1, T, 3 * 64)
    ids = torch.randint(0, 300, (1, T))
    with torch.no_grad():
        un = model.unroll(aux, ids, 1)
        logits, _ = model.step(ids, model.project(aux), torch.arange(T)[None])
    assert (logits - un.logits[0]).abs().max().item() <= 1e-5
