"""The reference EAGLE-3 speculative decoder: lossless, chain or SGLang tree, greedy or sampling, batch 1.

One round (`_round`) reads top to bottom: draft (a chain, or SGLang's tree), verify every drafted token in ONE
target forward (a tree mask and depth positions for trees), accept (greedy: the longest path that matches the
target's argmax; sampling: exact rejection sampling), keep only the accepted path in both KV caches, and feed the
drafter the target's taps of the accepted tokens. Bookkeeping (caches, masks, tap capture) lives below it.

Conventions (SGLang's): the root is the last committed token, not yet in the target's KV cache; the drafter's row
at position p takes (taps of token p, token p+1). Accept length = accepted drafts + the bonus token.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import torch

from eaglewire.drafter import DraftCache, Eagle3Drafter
from eaglewire.jobs.tree import Tree, TreeBuilder
from eaglewire.taps import Wiring
from eaglewire.targets import TargetRunner


@dataclass
class DecodeConfig:
    steps: int = 4  # SGLang speculative_num_steps (draft depth)
    topk: int = 1  # speculative_eagle_topk (1 = chain)
    draft_tokens: int | None = None  # speculative_num_draft_tokens incl. the root (chain: steps + 1)
    temperature: float = 0.0  # 0 = greedy
    top_p: float = 1.0
    top_k: int = 0
    max_new_tokens: int = 128
    eos_token_id: int | None = None
    seed: int | None = None
    # sampling: "sample" drafts from the drafter's distribution (Leviathan rejection); "greedy" drafts its argmax
    # and verifies target-only (accept d with the target's p(d)), as vLLM does by default (draft_sample_method)
    draft_sampling: str = "sample"

    @property
    def num_draft_tokens(self) -> int:
        return self.steps + 1 if self.topk == 1 else (self.draft_tokens or self.steps + 1)


@dataclass
class DecodeStats:
    new_tokens: int = 0
    verify_steps: int = 0
    target_forwards: int = 0
    draft_forwards: int = 0
    accept_lengths: list[int] = field(default_factory=list)  # per verify: accepted drafts + bonus
    seconds: float = 0.0
    prefill_seconds: float = 0.0

    @property
    def tau(self) -> float:
        """Mean accept length per verify step, bonus included (the prefill's token is not counted)."""
        return sum(self.accept_lengths) / len(self.accept_lengths) if self.accept_lengths else 0.0

    @property
    def tokens_per_second(self) -> float:
        return self.new_tokens / self.seconds if self.seconds > 0 else 0.0


# ---- sampling helpers -----------------------------------------------------------------------------------------


def warp(logits: torch.Tensor, cfg: DecodeConfig) -> torch.Tensor:
    """Target probabilities after temperature, top-k and top-p (the distribution a sampler must preserve)."""
    x = logits.float() / cfg.temperature
    if cfg.top_k > 0:
        kth = torch.topk(x, min(cfg.top_k, x.shape[-1]), dim=-1).values[..., -1:]
        x = x.masked_fill(x < kth, float("-inf"))
    probs = torch.softmax(x, -1)
    if cfg.top_p < 1.0:
        sp, si = torch.sort(probs, descending=True, dim=-1)
        drop = sp.cumsum(-1) - sp > cfg.top_p
        sp = sp.masked_fill(drop, 0.0)
        probs = torch.zeros_like(probs).scatter(-1, si, sp)
        probs = probs / probs.sum(-1, keepdim=True)
    return probs


def sample(probs: torch.Tensor, gen: torch.Generator | None) -> int:
    """One draw, on the CPU with the CPU generator: a seed gives the same tokens on every device."""
    return int(torch.multinomial(probs.float().cpu(), 1, generator=gen))


# ---- the decoder ------------------------------------------------------------------------------------------------


class SpeculativeDecoder:
    def __init__(self, target_model, drafter: Eagle3Drafter, wiring: Wiring):
        if len(wiring) != drafter.arch.n_aux:
            raise ValueError(
                f"wiring {wiring} has {len(wiring)} taps, the drafter's fc takes {drafter.arch.n_aux}"
            )
        self.target = TargetRunner(target_model, wiring.served().indices)
        self.drafter = drafter.eval()
        first = next(drafter.parameters())
        self.draft_dtype = first.dtype  # the target may run in another dtype (bf16)
        self.device = first.device  # token ids and positions are made here; the runner moves its own

    def generate(
        self, input_ids: torch.Tensor, cfg: DecodeConfig, stats: DecodeStats | None = None
    ) -> torch.Tensor:
        """All new tokens (1-D)."""
        chunks = list(self.stream(input_ids, cfg, stats))
        return torch.cat(chunks) if chunks else torch.empty(0, dtype=torch.long)

    @torch.no_grad()
    def stream(
        self, input_ids: torch.Tensor, cfg: DecodeConfig, stats: DecodeStats | None = None
    ) -> Iterator[torch.Tensor]:
        """Yields the tokens produced by the prefill, then by each verify step."""
        stats = stats if stats is not None else DecodeStats()
        gen = torch.Generator().manual_seed(cfg.seed) if cfg.seed is not None else None
        t0 = time.perf_counter()
        prompt = input_ids.reshape(1, -1)
        P = prompt.shape[1]
        self.target.reset()
        logits, taps = self.target.forward(prompt, torch.arange(P)[None])
        stats.target_forwards += 1
        root = self._pick(logits[-1], cfg, gen)
        produced = 1
        stats.prefill_seconds = time.perf_counter() - t0
        yield torch.tensor([root])
        if root == cfg.eos_token_id or cfg.max_new_tokens <= 1:
            stats.new_tokens, stats.seconds = produced, time.perf_counter() - t0
            return
        # draft-extend over the prompt: row p = (taps of token p, token p+1), the last row takes the root
        dcache = DraftCache.empty(len(self.drafter.layers))
        next_tokens = torch.cat([prompt[0, 1:].cpu(), torch.tensor([root])])[None].to(self.device)
        d_logits, d_hidden = self.drafter.step(
            next_tokens,
            self.drafter.project(taps[None].to(self.device, self.draft_dtype)),
            self._on([list(range(P))]),
            dcache,
        )
        stats.draft_forwards += 1
        state = (d_logits[0, -1], d_hidden[0, -1])  # what the drafter says after the root
        while produced < cfg.max_new_tokens:
            out, state = self._round(
                root, state, dcache, cfg, gen, stats, budget=cfg.max_new_tokens - produced
            )
            stats.verify_steps += 1
            stats.accept_lengths.append(len(out))
            if cfg.eos_token_id is not None and cfg.eos_token_id in out:
                out = out[: out.index(cfg.eos_token_id) + 1]
            produced += len(out)
            yield torch.tensor(out)
            root = out[-1]
            if root == cfg.eos_token_id:
                break
        stats.new_tokens = produced
        stats.seconds = time.perf_counter() - t0

    def _round(
        self, root: int, state, dcache: DraftCache, cfg: DecodeConfig, gen, stats: DecodeStats, budget: int
    ):
        """One speculative step. Returns (the tokens it commits: accepted drafts + bonus, the drafter's next state)."""
        S = self.target.length  # committed tokens in the target's cache; the root goes at position S
        depth = min(cfg.steps, budget - 1)
        if cfg.topk == 1:
            tokens, parents, q = self._draft_chain(state, dcache, S, depth, cfg, gen, stats)
        else:
            tokens, parents, q = self._draft_tree(state, dcache, S, depth, cfg, stats)
        n = len(tokens)
        depths = _depths(parents)
        ids = torch.tensor([[root, *tokens]])
        positions = S + torch.tensor([[0, *depths]])
        mask = None if cfg.topk == 1 else _tree_mask(parents)
        logits, taps = self.target.forward(ids, positions, mask)
        stats.target_forwards += 1
        path, bonus = self._accept(tokens, parents, q, logits, cfg, gen)
        keep = (
            torch.cat([torch.arange(S + 1), S + 1 + torch.tensor(path, dtype=torch.long)])
            if path
            else torch.arange(S + 1)
        )
        if n:
            self.target.keep(keep)
        committed = [tokens[j] for j in path] + [bonus]
        # the drafter forgets its drafts and reads the target's taps of the accepted tokens
        dcache.crop(S)
        rows = [0, *[j + 1 for j in path]]
        d_logits, d_hidden = self.drafter.step(
            self._on([committed]),
            self.drafter.project(taps[rows][None].to(self.device, self.draft_dtype)),
            self._on([list(range(S, S + len(rows)))]),  # row p: (taps of p, token p+1) at p
            dcache,
        )
        stats.draft_forwards += 1
        return committed, (d_logits[0, -1], d_hidden[0, -1])

    # ---- drafting ----------------------------------------------------------------------------------------------

    def _draft_chain(self, state, dcache: DraftCache, S: int, depth: int, cfg: DecodeConfig, gen, stats):
        """Chain: argmax (greedy) or a sample from the drafter's own distribution (sampling)."""
        logits, hidden = state
        tokens, q = [], []
        for i in range(depth):
            if cfg.temperature > 0 and cfg.draft_sampling == "sample":
                probs = self._draft_probs(logits, cfg)  # over target ids
                tok = sample(probs, gen)
                q.append(probs)
            else:
                tok = int(self.drafter.to_target(logits.argmax()))
            tokens.append(tok)
            if i + 1 < depth:
                lg, hd = self.drafter.step(self._on([[tok]]), hidden[None, None], self._on([[S + i]]), dcache)
                stats.draft_forwards += 1
                logits, hidden = lg[0, -1], hd[0, -1]
        return tokens, list(range(-1, len(tokens) - 1)), q

    def _draft_probs(self, logits: torch.Tensor, cfg: DecodeConfig) -> torch.Tensor:
        """The drafter's proposal distribution over TARGET ids (zero outside the draft vocabulary)."""
        p = warp(logits, cfg)
        full = torch.zeros(self.drafter.arch.vocab_size, device=p.device)
        full[self.drafter.to_target(torch.arange(p.numel(), device=p.device))] = p
        return full

    def _draft_tree(self, state, dcache: DraftCache, S: int, depth: int, cfg: DecodeConfig, stats):
        """SGLang's tree: K slots per step, each attending the prefix and its own earlier rows (slot layout)."""
        K, D = cfg.topk, cfg.num_draft_tokens
        logits, hidden = state
        to_target = self.drafter.to_target
        builder = TreeBuilder(torch.softmax(logits.float(), -1)[None], K, to_target)
        hid = hidden.expand(K, -1)
        prefix = dcache.length
        for i in range(depth - 1):
            tok = builder.front_tokens()[0]  # [K]
            mask = torch.ones(K, prefix + K * (i + 1), dtype=torch.bool, device=self.device)
            slot = torch.arange(K, device=self.device)
            for j in range(i + 1):
                mask[:, prefix + j * K : prefix + (j + 1) * K] = slot[:, None] == slot[None, :]
            lg, hd = self.drafter.step(
                tok[None], hid[None], self._on([[S + i] * K]), dcache, mask[None, None]
            )
            stats.draft_forwards += 1
            inherit = builder.expand(torch.softmax(lg[0].float(), -1)[None])[0]
            hid = hd[0][inherit]
        tree: Tree = builder.select(min(D, builder.size + 1)) if depth > 0 else None
        if tree is None:
            return [], [], []
        tokens = tree.tokens[0].tolist()
        parents = [int(p) - 1 for p in tree.parents[0]]  # -1 = root, else index into tokens
        return tokens, parents, []

    def _on(self, rows: list[list[int]]) -> torch.Tensor:
        """Token ids or positions as a [1, n] long tensor on the drafter's device."""
        return torch.tensor(rows, dtype=torch.long, device=self.device)

    # ---- verification ------------------------------------------------------------------------------------------

    def _pick(self, logits: torch.Tensor, cfg: DecodeConfig, gen) -> int:
        return int(logits.argmax()) if cfg.temperature <= 0 else sample(warp(logits, cfg), gen)

    def _accept(self, tokens, parents, q, logits, cfg: DecodeConfig, gen):
        """(accepted node indices along one root-to-node path, the bonus token). logits row 0 = root, j+1 = node j."""
        children: dict[int, list[int]] = {}
        for j, p in enumerate(parents):
            children.setdefault(p, []).append(j)
        path, cur = [], -1
        if cfg.temperature <= 0:
            while True:
                want = int(logits[cur + 1].argmax())
                nxt = next((c for c in children.get(cur, []) if tokens[c] == want), None)
                if nxt is None:
                    return path, want
                path.append(nxt)
                cur = nxt
        if cfg.topk == 1 and q:
            # Leviathan et al.: accept d with prob min(1, p(d)/q(d)); on rejection sample from max(p - q, 0)
            for j, d in enumerate(tokens):
                p = warp(logits[j], cfg)
                if torch.rand(1, generator=gen).item() < min(1.0, float(p[d] / q[j][d])):
                    path.append(j)
                    continue
                residual = (p - q[j]).clamp(min=0)
                return path, sample(residual / residual.sum(), gen)
            return path, sample(warp(logits[len(tokens)], cfg), gen)
        # tree (recursive rejection with deterministic candidates = SGLang's target-only verify): at each node
        # try its children in order, accepting child c with probability p'(c) where p' is the target's
        # distribution with the already rejected siblings removed; if all fail, sample from what remains.
        while True:
            p = warp(logits[cur + 1], cfg)
            chosen = None
            for c in children.get(cur, []):
                pc = float(p[tokens[c]])
                if pc > 0 and torch.rand(1, generator=gen).item() < pc / float(p.sum()):
                    chosen = c
                    break
                p = p.clone()
                p[tokens[c]] = 0.0
            if chosen is None:
                return path, sample(p / p.sum(), gen)
            path.append(chosen)
            cur = chosen


def _depths(parents: list[int]) -> list[int]:
    out = []
    for p in parents:
        out.append(1 if p < 0 else out[p] + 1)
    return out


def _tree_mask(parents: list[int]) -> torch.Tensor:
    """[n+1, n+1] bool: row i attends the root, its ancestors and itself (row 0 = root)."""
    n = len(parents)
    m = torch.zeros(n + 1, n + 1, dtype=torch.bool)
    m[:, 0] = True
    for j, p in enumerate(parents):
        m[j + 1] = m[p + 1] if p >= 0 else m[0]
        m[j + 1, j + 1] = True
    return m


@torch.no_grad()
def greedy_reference(
    model, input_ids: torch.Tensor, max_new_tokens: int, eos_token_id: int | None = None
) -> torch.Tensor:
    """The target's own greedy decoding (one token per forward, KV cache): what lossless greedy must equal."""
    runner = TargetRunner(model, ())
    runner.reset()
    ids = input_ids.reshape(1, -1)
    out = []
    for _ in range(max_new_tokens):
        n = ids.shape[1]
        logits, _ = runner.forward(ids, torch.arange(runner.length, runner.length + n)[None])
        tok = int(logits[-1].argmax())
        out.append(tok)
        if tok == eos_token_id:
            break
        ids = torch.tensor([[tok]])
    return torch.tensor(out, dtype=torch.long)


@dataclass
class Generation:
    text: str
    tokens: list[int]
    stats: DecodeStats
    wiring: Wiring

    def to_dict(self) -> dict:
        s = self.stats
        return {
            "text": self.text,
            "tau": round(s.tau, 3),
            "tokens_per_second": round(s.tokens_per_second, 1),
            "new_tokens": s.new_tokens,
            "verify_steps": s.verify_steps,
            "target_forwards": s.target_forwards,
            "draft_forwards": s.draft_forwards,
            "taps": str(self.wiring),
            "tau_convention": "accepted drafts + the bonus token per verify step (prefill token excluded)",
        }


def generate_text(
    pair, prompt: str, cfg: DecodeConfig, on_text: Callable[[str], None] | None = None
) -> Generation:
    """Speculative generation from a text prompt with a `jobs.pair.Pair`; `on_text` receives the new text as each
    verify step commits it (for streaming)."""
    from eaglewire.errors import InputError

    tok = pair.target.tokenizer
    if tok is None:
        raise InputError(f"{pair.target.path}: no tokenizer in the target folder")
    if cfg.topk > 1 and cfg.draft_tokens is None:
        raise InputError("--topk > 1 needs --draft-tokens (e.g. --steps 5 --topk 4 --draft-tokens 8)")
    if cfg.eos_token_id is None:
        cfg.eos_token_id = tok.eos_token_id
    ids = tok(prompt, return_tensors="pt", add_special_tokens=False)["input_ids"][0]
    if ids.numel() == 0:
        raise InputError("--prompt is empty after tokenization")
    stats = DecodeStats()
    dec = SpeculativeDecoder(pair.target.model, pair.drafter, pair.wiring)
    tokens: list[int] = []
    text = ""
    for chunk in dec.stream(ids, cfg, stats):
        tokens += chunk.tolist()
        if on_text is not None:
            new = tok.decode(tokens)
            on_text(new[len(text) :])
            text = new
    dec.target.close()
    return Generation(tok.decode(tokens), tokens, stats, pair.wiring)
