"""The standalone test's machinery agrees with the decoder it predicts."""

import torch
from test_decode import pair

from eaglewire.capture import CapturedSample
from eaglewire.jobs.decode import DecodeConfig, DecodeStats, SpeculativeDecoder
from eaglewire.jobs.evaluate import TreeSetting, evaluate, simulate_tree
from eaglewire.targets import LoadedTarget, forward_taps, read_target


def _as_loaded(model, path):
    model.save_pretrained(path)
    return LoadedTarget(model, None, read_target(path), path)


def _captured(tgt: LoadedTarget, ids: torch.Tensor, prompt_len: int) -> CapturedSample:
    hidden, logits = forward_taps(tgt, ids[None])
    mask = torch.zeros(ids.numel(), dtype=torch.bool)
    mask[prompt_len:] = True
    return CapturedSample(ids, mask, {i: h[0] for i, h in enumerate(hidden)}, logits[0])


def test_simulated_tree_equals_the_decoders_tree(tmp_path):
    """SGLang's tree drafted at every row at once (evaluate) = the tree the decoder drafts at that row."""
    target, drafter, wiring = pair(2, 12, 3, 10)
    prompt = torch.tensor([3, 1, 4, 1, 5, 9, 2])
    P = prompt.numel()
    for steps, topk, dt in [(3, 2, 6), (4, 3, 10), (2, 4, 5)]:
        dec = SpeculativeDecoder(target, drafter, wiring)
        seen = {}
        orig = dec._draft_tree

        def spy(*a, orig=orig, seen=seen, **k):
            out = orig(*a, **k)
            seen.setdefault("tree", out)
            return out

        dec._draft_tree = spy
        out = dec.generate(prompt, DecodeConfig(steps=steps, topk=topk, draft_tokens=dt, max_new_tokens=12))
        tokens, parents, _ = seen["tree"]
        seq = torch.cat([prompt, out[:1]])  # prompt + root
        tgt = _as_loaded(target, tmp_path / f"t{steps}{topk}")
        s = _captured(tgt, seq, P)
        T = seq.numel()
        aux = s.aux(wiring)[: T - 1][None]
        from eaglewire.jobs.tree import TreeBuilder

        # rebuild with the evaluate path and compare the tree at the root's row (P - 1)
        captured = {}
        orig_select = TreeBuilder.select

        def grab(self, d, captured=captured, orig_select=orig_select):
            t = orig_select(self, d)
            captured["t"] = t
            return t

        TreeBuilder.select = grab
        try:
            simulate_tree(
                drafter,
                aux,
                seq[1:T],
                torch.zeros(T - 1, dtype=torch.long),
                torch.ones(T - 2, dtype=torch.bool),
                TreeSetting(steps, topk, dt),
            )
        finally:
            TreeBuilder.select = orig_select
        t = captured["t"]
        assert t.tokens[P - 1].tolist() == tokens
        assert [int(p) - 1 for p in t.parents[P - 1]] == parents


def test_chain_tree_k1_equals_leading_correct_steps(tmp_path):
    """A K=1 tree's accept length is 1 + the leading correct steps of the own-fed chain, row by row, so the
    tree walked as an engine walks it gives the chain's walk exactly."""
    target, drafter, wiring = pair(4, 12, 3, 12)
    tgt = _as_loaded(target, tmp_path / "t")
    out = SpeculativeDecoder(target, drafter, wiring).generate(
        torch.tensor([1, 2, 3]), DecodeConfig(steps=1, max_new_tokens=40)
    )
    seq = torch.cat([torch.tensor([1, 2, 3]), out])
    s = _captured(tgt, seq, 3)
    steps = 4
    ev = evaluate(drafter, [s], wiring, steps, "chain", trees=(TreeSetting(steps, 1, steps + 1),))
    T = seq.numel()
    acc, ok = simulate_tree(
        drafter,
        s.aux(wiring)[: T - 1][None],
        seq[1:T],
        s.logits[1:T].argmax(-1),
        s.loss_mask[2:T],
        TreeSetting(steps, 1, steps + 1),
    )
    from eaglewire.metrics import walk_lengths, walk_span

    tree_walk = walk_lengths(acc.tolist(), walk_span(s.loss_mask), steps)  # SGLang's chain, walked
    assert (tree_walk.drafts, tree_walk.accepted_per_pos) == (
        ev.walks[-1].drafts,
        ev.walks[-1].accepted_per_pos,
    )
    assert ev.tree[str(TreeSetting(steps, 1, steps + 1))] == ev.tau[-1]
    # the same rows, walked by hand: 1 + the number of leading steps whose own-fed draft is the greedy token
    un = drafter.unroll(s.aux(wiring)[: T - 1][None], seq[1:T][None], steps, feed="own")
    g = s.logits[1:T].argmax(-1)
    for r in torch.nonzero(ok).flatten().tolist():
        lead = 0
        while lead < steps and int(drafter.to_target(un.logits[lead][0, r].argmax())) == int(g[r + lead]):
            lead += 1
        assert int(acc[r]) == 1 + lead


def test_walk_replays_the_decoder_verify_by_verify(tmp_path):
    """The engine's walk over the decoder's own greedy output drafts where the decoder drafted and accepts what it
    accepted: the same number of verifies and the same accepted tokens (the decoder's last verify drafts fewer
    tokens when fewer are left, so the walk stops before it). The every-position formula does not."""
    target, drafter, wiring = pair(3, 6, 3, 6)
    tgt = _as_loaded(target, tmp_path / "t")
    prompt = torch.tensor([1, 2, 3, 4])
    P = prompt.numel()
    for steps in (1, 3, 5):
        stats = DecodeStats()
        out = SpeculativeDecoder(target, drafter, wiring).generate(
            prompt, DecodeConfig(steps=steps, max_new_tokens=200), stats
        )
        seq = torch.cat([prompt, out])
        ev = evaluate(drafter, [_captured(tgt, seq, P)], wiring, steps, "chain")
        head = stats.accept_lengths[:-1]
        s = _captured(tgt, seq, P)
        s.loss_mask[P + sum(head) + 1 :] = False  # the walk ends where the decoder's last verify starts
        w = evaluate(drafter, [s], wiring, steps, "chain").walks[-1]
        assert (w.drafts, w.accepted) == (len(head), sum(head) - len(head)), (steps, w, head)
        assert w.accepted_per_pos == [sum(1 for a in head if a > i + 1) for i in range(steps)]
        assert ev.tau[-1] > 1.0


def test_walk_counts_by_hand():
    """A hand-made draft table: row r drafts after token r+1; the walk jumps a+1 tokens after a accepts."""
    from eaglewire.metrics import walk

    greedy = list(range(100, 120))  # greedy[r] = target token at position r + 2
    k = 2
    draft = [list(greedy[:-1]), [x + 1 for x in greedy[1:]]]  # step 0 always right, step 1 always wrong
    draft[0][5] = -1  # ... except at row 5
    w = walk(draft, greedy, (3, 12), k)  # prefill commits token 3; the walk ends once token 12 is committed
    # rows 2 (accept 1, commit 2 -> last 5), 4 (accept 1 -> 7), 6 -> 9, 8 -> 11, 10 -> 13: 5 drafts, row 5 skipped
    assert (w.drafts, w.accepted_per_pos) == (5, [5, 0])
    assert w.tau == 2.0 and w.per_position == [1.0, 0.0]
    draft[0][
        4
    ] = -1  # row 4 now rejects: 2 -> 5, 4 -> 6 (bonus only), 5 -> rejects -> 7, 6 -> 9, 8 -> 11, 10 -> 13
    w = walk(draft, greedy, (3, 12), k)
    assert (w.drafts, w.accepted_per_pos) == (6, [4, 0])


def test_walk_span_of_a_mask_over_the_whole_sequence():
    """Training data often scores every token: the walk still starts after a one-token prompt (advise and the
    evaluation run on such dumps), and an empty or one-token mask has nothing to walk."""
    import torch

    from eaglewire.metrics import walk_span

    assert walk_span(torch.ones(10, dtype=torch.bool)) == (1, 9)
    assert walk_span(torch.tensor([0, 0, 1, 1, 1, 0], dtype=torch.bool)) == (2, 4)
    assert walk_span(torch.zeros(5, dtype=torch.bool)) is None
    assert walk_span(torch.tensor([1, 0, 0], dtype=torch.bool)) is None
