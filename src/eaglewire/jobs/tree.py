"""SGLang's EAGLE draft tree (docs/sglang-tree.md sections 1-3), for many roots at once.

For (N = speculative_num_steps, K = speculative_eagle_topk, D = speculative_num_draft_tokens):
depth 1 holds the K best tokens of the draft-extend row; each of the N-1 draft forwards expands the K best
nodes of the previous depth (by cumulative probability) into K children each; the final tree is the root plus
the D-1 best nodes of the whole pool of K + (N-1)K^2 candidates, in ascending pool index. Draft attention for
K > 1 follows SGLang's slot layout (pitfall P1): slot j attends the prefix plus the entries slot j wrote before,
not its node's ancestors. `R` below is the number of independent roots (rows) drafted together.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class Tree:
    """Per root r: D-1 selected nodes (tree index j = 1..D-1; 0 is the root)."""

    tokens: torch.Tensor  # [R, D-1] target token ids of the nodes
    parents: torch.Tensor  # [R, D-1] tree index of each node's parent (0 = root)
    depths: torch.Tensor  # [R, D-1] depth of each node (1..N)
    scores: torch.Tensor  # [R, D-1] cumulative draft probability
    pool_index: torch.Tensor  # [R, D-1]


class TreeBuilder:
    """Accumulates the draft pool step by step, then selects the tree (vectorised over R roots)."""

    def __init__(self, probs0: torch.Tensor, k: int, to_target):
        """probs0: [R, Vd] draft softmax of the draft-extend row; to_target maps draft ids to target ids."""
        self.k = k
        self.to_target = to_target
        p, idx = torch.topk(probs0, k, dim=-1)
        self.scores = [p]  # pool blocks: depth 1 [R, K], then [R, K*K] per expansion
        self.tokens = [to_target(idx)]
        self.parent_pool = [torch.full_like(idx, -1)]  # pool index of each candidate's parent (-1 = root)
        self.front = (
            torch.arange(k, device=idx.device).expand_as(idx).clone()
        )  # pool indices of the nodes expanded next, [R, K]
        self.front_scores = p
        self.size = k

    def front_tokens(self) -> torch.Tensor:
        """Tokens of the nodes being expanded, [R, K] (target ids)."""
        flat_tokens = torch.cat(self.tokens, dim=1)
        return torch.gather(flat_tokens, 1, self.front)

    def expand(self, probs: torch.Tensor) -> torch.Tensor:
        """probs: [R, K slots, Vd] draft softmax of the expanded nodes. Returns, for the new front, the slot whose
        hidden state each new front node inherits ([R, K]; SGLang feeds the true parent's output hidden)."""
        k = self.k
        cp, ct = torch.topk(probs, k, dim=-1)  # [R, K, K]
        cand = self.front_scores[..., None] * cp  # cumulative probability
        base = self.size
        self.scores.append(cand.flatten(1))
        self.tokens.append(self.to_target(ct).flatten(1))
        self.parent_pool.append(self.front[..., None].expand(-1, -1, k).flatten(1))
        best, picked = torch.topk(cand.flatten(1), k, dim=-1)  # sorted, descending
        self.front = base + picked
        self.front_scores = best
        self.size += k * k
        return picked // k

    def select(self, num_draft_tokens: int) -> Tree:
        scores = torch.cat(self.scores, dim=1)
        tokens = torch.cat(self.tokens, dim=1)
        parent_pool = torch.cat(self.parent_pool, dim=1)
        n = num_draft_tokens - 1
        if n > scores.shape[1]:
            raise ValueError(f"num_draft_tokens - 1 = {n} exceeds the candidate pool ({scores.shape[1]})")
        sel = torch.sort(torch.topk(scores, n, dim=-1).indices, dim=-1).values  # [R, n] ascending pool index
        depth_of_pool = self._pool_depths(scores.shape[1], scores.device)
        pp = torch.gather(parent_pool, 1, sel)  # parent pool index per node
        # tree index of the parent: position of its pool index in `sel` (+1), or 0 for the root
        match = sel[:, None, :] == pp[:, :, None]  # [R, n, n]
        has = match.any(-1)
        parent_tree = torch.where(has, match.float().argmax(-1) + 1, torch.zeros_like(pp))
        return Tree(
            torch.gather(tokens, 1, sel), parent_tree, depth_of_pool[sel], torch.gather(scores, 1, sel), sel
        )

    def _pool_depths(self, size: int, device) -> torch.Tensor:
        k = self.k
        d = torch.empty(size, dtype=torch.long, device=device)
        d[:k] = 1
        for i in range((size - k) // (k * k)):
            d[k + i * k * k : k + (i + 1) * k * k] = i + 2
        return d


def greedy_accept(tree: Tree, greedy: torch.Tensor, max_depth: int) -> torch.Tensor:
    """Accept length per root (bonus included): 1 + the deepest m such that the greedy continuation
    greedy[:, 0..m-1] is a root-to-node path. greedy: [R, >= max_depth] target tokens after the root."""
    R, _n = tree.tokens.shape
    dev = tree.tokens.device
    accepted = torch.ones(R, dtype=torch.long, device=dev)
    cur = torch.zeros(R, dtype=torch.long, device=dev)  # tree index of the current node (0 = root)
    alive = torch.ones(R, dtype=torch.bool, device=dev)
    for level in range(max_depth):
        want = greedy[:, level]
        hit = (tree.parents == cur[:, None]) & (
            tree.tokens == want[:, None]
        )  # at most one (distinct siblings)
        found = hit.any(-1) & alive
        cur = torch.where(found, hit.float().argmax(-1) + 1, cur)
        accepted += found.long()
        alive = found
    return accepted
