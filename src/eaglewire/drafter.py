"""The EAGLE-3 drafter as a plain torch module, with names that match the checkpoint keys one to one.

    e = embed_tokens(token)                         g = fc(cat(aux taps))  (fc skipped when g is a fed-back state)
    layer 0:  x = attn(cat(input_layernorm(e), hidden_norm(g))) + g     (+ normed g if norm_before_residual)
              x = x + mlp(post_attention_layernorm(x))
    layer i:  a plain Llama decoder layer
    logits = lm_head(norm(x)) over the draft vocabulary; target id = draft id + d2t[draft id]
    fed back to the next step: x (pre-norm), or norm(x) with norm_output

Three ways to run it:
- `step`: one forward over new rows with an optional KV cache and explicit mask (the reference decoder);
- `unroll`: K steps over every position of a sequence at once, the step-k query attending to the causal
  step-0 prefix plus its own earlier steps at the same position (SpecForge/speculators' training-time-test mask).
  With `feed="teacher"` the step-k token is the true next token (training); with `feed="own"` it is the drafter's
  own argmax, exactly what a serving engine's chain draft computes at every position (the standalone test).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from eaglewire.errors import InputError
from eaglewire.formats.checkpoint import DrafterArch, DrafterCheckpoint
from eaglewire.formats.vocab import to_target

ACTIVATIONS = {
    "silu": F.silu,
    "relu": F.relu,
    "gelu": F.gelu,
    "gelu_pytorch_tanh": lambda x: F.gelu(x, approximate="tanh"),
}


class RMSNorm(nn.Module):
    """LlamaRMSNorm: normalise in fp32, scale in the input dtype."""

    def __init__(self, size: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        x = x.float()
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x.to(dtype)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class Rotary(nn.Module):
    """RoPE with transformers' own frequency initialisation (every rope_type transformers knows)."""

    def __init__(self, arch: DrafterArch):
        super().__init__()
        from transformers import LlamaConfig
        from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

        cfg = LlamaConfig(
            hidden_size=arch.hidden_size,
            num_attention_heads=arch.num_heads,
            head_dim=arch.head_dim,
            max_position_embeddings=arch.max_position_embeddings,
            rope_parameters=dict(arch.rope_parameters),
        )
        try:
            ref = LlamaRotaryEmbedding(cfg)
        except (KeyError, TypeError, ValueError, AttributeError) as e:  # e.g. a yarn config missing `factor`
            raise InputError(
                f"rope_parameters {arch.rope_parameters}: transformers cannot build it ({e})"
            ) from None
        self.register_buffer("inv_freq", ref.inv_freq.clone(), persistent=False)
        self.scaling = float(ref.attention_scaling)

    def forward(self, positions: torch.Tensor, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
        freqs = positions[..., None].float() * self.inv_freq
        emb = torch.cat((freqs, freqs), dim=-1)
        return (emb.cos() * self.scaling).to(dtype), (emb.sin() * self.scaling).to(dtype)


def apply_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x: [B, heads, T, hd]; cos/sin: [B, T, hd]."""
    return x * cos[:, None] + rotate_half(x) * sin[:, None]


@dataclass
class LayerCache:
    """Keys and values of one layer for the rows already run, [B, kv_heads, T, hd]."""

    k: torch.Tensor | None = None
    v: torch.Tensor | None = None

    def append(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        self.k = k if self.k is None else torch.cat([self.k, k], dim=2)
        self.v = v if self.v is None else torch.cat([self.v, v], dim=2)
        return self.k, self.v

    def crop(self, length: int) -> None:
        if self.k is not None:
            self.k, self.v = self.k[:, :, :length], self.v[:, :, :length]

    def keep(self, index: torch.Tensor) -> None:
        """Keep only the rows at `index` (in order): a tree's accepted path."""
        if self.k is not None:
            self.k, self.v = self.k[:, :, index], self.v[:, :, index]


@dataclass
class DraftCache:
    layers: list[LayerCache] = field(default_factory=list)

    @classmethod
    def empty(cls, n: int) -> DraftCache:
        return cls([LayerCache() for _ in range(n)])

    @property
    def length(self) -> int:
        k = self.layers[0].k
        return 0 if k is None else int(k.shape[2])

    def crop(self, length: int) -> None:
        for layer in self.layers:
            layer.crop(length)

    def keep(self, index: torch.Tensor) -> None:
        for layer in self.layers:
            layer.keep(index)


class Attention(nn.Module):
    def __init__(self, arch: DrafterArch, in_width: int):
        super().__init__()
        self.num_heads, self.num_kv_heads, self.head_dim = arch.num_heads, arch.num_kv_heads, arch.head_dim
        self.groups = arch.num_heads // arch.num_kv_heads
        self.scale = arch.head_dim**-0.5
        q, kv = arch.num_heads * arch.head_dim, arch.num_kv_heads * arch.head_dim
        self.q_proj = nn.Linear(in_width, q, bias=arch.attention_bias)
        self.k_proj = nn.Linear(in_width, kv, bias=arch.attention_bias)
        self.v_proj = nn.Linear(in_width, kv, bias=arch.attention_bias)
        self.o_proj = nn.Linear(q, arch.hidden_size, bias=False)
        self.q_norm = RMSNorm(arch.head_dim, arch.rms_norm_eps) if arch.layer_type == "qwen3" else None
        self.k_norm = RMSNorm(arch.head_dim, arch.rms_norm_eps) if arch.layer_type == "qwen3" else None

    def qkv(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor):
        b, t, _ = x.shape
        q = self.q_proj(x).view(b, t, self.num_heads, self.head_dim)
        k = self.k_proj(x).view(b, t, self.num_kv_heads, self.head_dim)
        v = self.v_proj(x).view(b, t, self.num_kv_heads, self.head_dim)
        if self.q_norm is not None:
            q, k = self.q_norm(q), self.k_norm(k)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        return apply_rotary(q, cos, sin), apply_rotary(k, cos, sin), v

    def out(self, o: torch.Tensor) -> torch.Tensor:
        b, _, t, _ = o.shape
        return self.o_proj(o.transpose(1, 2).reshape(b, t, self.num_heads * self.head_dim))

    def forward(self, x, cos, sin, cache: LayerCache | None = None, mask: torch.Tensor | None = None):
        """Causal over (cache + new rows) when `mask` is None; else `mask` [B or 1, 1, T, cache+T] (True = attend)."""
        q, k, v = self.qkv(x, cos, sin)
        if cache is not None:
            past = 0 if cache.k is None else cache.k.shape[2]
            k, v = cache.append(k, v)
        else:
            past = 0
        if mask is None and past > 0 and q.shape[2] > 1:
            t = q.shape[2]
            mask = torch.ones(t, past + t, dtype=torch.bool, device=x.device).tril(past)[None, None]
        o = F.scaled_dot_product_attention(
            q,
            k,
            v,
            attn_mask=mask,
            is_causal=mask is None and past == 0 and q.shape[2] > 1,
            scale=self.scale,
            enable_gqa=self.groups > 1,
        )
        return self.out(o)

    def forward_unrolled(self, x, cos, sin, keys: list, values: list, causal: torch.Tensor):
        """Training-time-test attention at step k = len(keys): causal over the step-0 keys, plus the same
        position of every later step (a diagonal), computed as dot products (SpecForge's SDPA path)."""
        q, k, v = self.qkv(x, cos, sin)
        keys.append(k)
        values.append(v)
        k0, v0 = self._expand(keys[0]), self._expand(values[0])
        scores = [torch.matmul(q, k0.transpose(-1, -2)) * self.scale + causal]
        for kj in keys[1:]:
            scores.append(((q * self._expand(kj)).sum(-1, keepdim=True)) * self.scale)
        probs = torch.softmax(torch.cat(scores, dim=-1).float(), dim=-1).to(q.dtype)
        t = k0.shape[2]
        o = torch.matmul(probs[..., :t], v0)
        for j, vj in enumerate(values[1:]):
            o = o + probs[..., t + j : t + j + 1] * self._expand(vj)
        return self.out(o)

    def _expand(self, kv: torch.Tensor) -> torch.Tensor:
        return kv if self.groups == 1 else kv.repeat_interleave(self.groups, dim=1)


class MLP(nn.Module):
    def __init__(self, arch: DrafterArch):
        super().__init__()
        h, i = arch.hidden_size, arch.intermediate_size
        self.gate_proj = nn.Linear(h, i, bias=arch.mlp_bias)
        self.up_proj = nn.Linear(h, i, bias=arch.mlp_bias)
        self.down_proj = nn.Linear(i, h, bias=arch.mlp_bias)
        self.act = ACTIVATIONS[arch.hidden_act]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(self.act(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, arch: DrafterArch, index: int):
        super().__init__()
        self.first = index == 0
        h = arch.hidden_size
        self.self_attn = Attention(arch, 2 * h if self.first else h)
        self.mlp = MLP(arch)
        self.input_layernorm = RMSNorm(h, arch.rms_norm_eps) if (not self.first or arch.embed_norm) else None
        self.post_attention_layernorm = RMSNorm(h, arch.rms_norm_eps)
        self.hidden_norm = RMSNorm(h, arch.rms_norm_eps) if self.first else None
        self.norm_before_residual = arch.norm_before_residual

    def attn_input(self, x: torch.Tensor, embeds: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        """(attention input, residual) of this layer."""
        if not self.first:
            return self.input_layernorm(x), x
        e = self.input_layernorm(embeds) if self.input_layernorm is not None else embeds
        g = self.hidden_norm(x)
        return torch.cat([e, g], dim=-1), (g if self.norm_before_residual else x)

    def finish(self, attn_out: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        x = residual + attn_out
        return x + self.mlp(self.post_attention_layernorm(x))

    def forward(self, x, embeds, cos, sin, cache=None, mask=None):
        a, residual = self.attn_input(x, embeds)
        return self.finish(self.self_attn(a, cos, sin, cache, mask), residual)


@dataclass
class Unrolled:
    """Per-step draft logits [B, T, draft_vocab] and fed-back hidden states of an unrolled forward."""

    logits: list[torch.Tensor]
    hidden: list[torch.Tensor]
    tokens: list[torch.Tensor]  # target-vocab token fed at each step


class Eagle3Drafter(nn.Module):
    def __init__(self, arch: DrafterArch):
        super().__init__()
        self.arch = arch
        h = arch.hidden_size
        self.embed_tokens = nn.Embedding(arch.vocab_size, h)
        self.fc = nn.Linear(arch.n_aux * arch.target_hidden_size, h, bias=arch.fc_bias)
        self.input_norm = (
            RMSNorm(arch.n_aux * arch.target_hidden_size, arch.rms_norm_eps) if arch.norm_before_fc else None
        )
        self.fc_norm = (
            nn.ModuleList(RMSNorm(arch.target_hidden_size, arch.rms_norm_eps) for _ in range(arch.n_aux))
            if arch.fc_norm
            else None
        )
        self.layers = nn.ModuleList(DecoderLayer(arch, i) for i in range(arch.num_layers))
        self.norm = RMSNorm(h, arch.rms_norm_eps)
        self.lm_head = nn.Linear(h, arch.draft_vocab_size, bias=False)
        self.rotary = Rotary(arch)
        self.register_buffer("d2t", torch.zeros(arch.draft_vocab_size, dtype=torch.long))

    # ---- construction -------------------------------------------------------------------------------------

    @classmethod
    def from_checkpoint(
        cls,
        ckpt: DrafterCheckpoint,
        embed_tokens: torch.Tensor | None = None,
        dtype: torch.dtype = torch.float32,
        lm_head: torch.Tensor | None = None,
    ) -> Eagle3Drafter:
        """Build and load a drafter; `embed_tokens`, where given, is the embedding it computes with: it fills in
        one the checkpoint does not carry (modelopt exports, EAGLE drafters that share the target's) or replaces
        the checkpoint's own (an engine release that feeds the draft the target's: rules.draft_weights).
        `lm_head`, where given, is the head it scores with in place of the checkpoint's own, if any."""
        if ckpt.arch is None:
            raise InputError(f"{ckpt.where()}: this drafter cannot run here ({'; '.join(ckpt.notes)})")
        with torch.device("meta"):  # no memory until loaded: a 163,840 x 7,168 embedding is 4.7 GB in fp32
            model = cls(ckpt.arch).to(dtype)
        model.rotary = Rotary(ckpt.arch)  # its frequencies are computed, not stored
        model.load_canonical(ckpt.tensors, embed_tokens, where=ckpt.where(), assign=True, lm_head=lm_head)
        return model.eval()

    def load_canonical(
        self,
        tensors: dict[str, torch.Tensor],
        embed_tokens: torch.Tensor | None = None,
        where: str = "drafter",
        assign: bool = False,
        lm_head: torch.Tensor | None = None,
    ) -> None:
        """Load canonical checkpoint tensors (module names equal checkpoint names); d2t defaults to identity.
        `embed_tokens` / `lm_head`, where given, are the embedding and head (in place of the checkpoint's own, if
        any). `assign`: the tensors become the parameters (no copy when dtypes agree)."""
        load = {}
        for key, ref in self.state_dict().items():
            t = tensors.get(key)
            if key == "embed_tokens.weight" and embed_tokens is not None:
                t = embed_tokens
            if key == "lm_head.weight" and lm_head is not None:
                t = lm_head
            if t is None and key == "embed_tokens.weight":
                raise InputError(
                    f"{where}: no embed_tokens.weight in the drafter; pass the target to use its embedding"
                )
            if t is None and key == "d2t":
                if assign:
                    load[key] = torch.zeros(ref.shape, dtype=ref.dtype)
                continue
            if t is None:
                raise InputError(f"{where}: missing tensor {key!r}")
            if tuple(t.shape) != tuple(ref.shape):
                raise InputError(
                    f"{where}: tensor {key!r} has shape {list(t.shape)}, expected {list(ref.shape)}"
                )
            load[key] = t.to(ref.dtype)
        self.load_state_dict(load, strict=False, assign=assign)

    def canonical_state(self) -> dict[str, torch.Tensor]:
        """Tensors under the canonical checkpoint names (for writing)."""
        return {k: v.detach() for k, v in self.state_dict().items() if not k.startswith("rotary.")}

    # ---- forward ------------------------------------------------------------------------------------------

    def project(self, aux: torch.Tensor) -> torch.Tensor:
        """cat(taps) [.., n_aux * target_hidden] -> drafter hidden [.., H]."""
        if self.input_norm is not None:
            aux = self.input_norm(aux)
        if self.fc_norm is not None:
            chunks = aux.chunk(len(self.fc_norm), dim=-1)
            aux = torch.cat([n(c) for n, c in zip(self.fc_norm, chunks, strict=True)], dim=-1)
        return self.fc(aux)

    def to_target(self, draft_ids: torch.Tensor) -> torch.Tensor:
        """Draft-vocabulary ids -> target ids (`formats.vocab.to_target`)."""
        return to_target(draft_ids, self.d2t)

    def target_ids(self) -> torch.Tensor:
        """The target id of every draft id, [draft_vocab_size] (slices the target's logits to the draft vocab)."""
        return self.to_target(torch.arange(self.arch.draft_vocab_size, device=self.d2t.device))

    def head(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(draft-vocab logits, the hidden state fed back to the next step)."""
        normed = self.norm(x)
        return self.lm_head(normed), (normed if self.arch.norm_output else x)

    def step(
        self,
        input_ids: torch.Tensor,
        hidden: torch.Tensor,
        positions: torch.Tensor,
        cache: DraftCache | None = None,
        mask: torch.Tensor | None = None,
    ):
        """One forward over new rows. `hidden` is fc's output (or a fed-back state), [B, T, H]."""
        embeds = self.embed_tokens(input_ids)
        cos, sin = self.rotary(positions, hidden.dtype)
        x = hidden
        for i, layer in enumerate(self.layers):
            x = layer(x, embeds, cos, sin, cache.layers[i] if cache is not None else None, mask)
        return self.head(x)

    def unroll(
        self,
        aux: torch.Tensor,
        input_ids: torch.Tensor,
        steps: int,
        feed: str = "teacher",
        positions: torch.Tensor | None = None,
        doc_mask: torch.Tensor | None = None,
    ) -> Unrolled:
        """K steps over all T positions at once.

        Row t of step 0 takes (taps of position t, token t+1) and predicts token t+2; row t of step k takes
        (step k-1's hidden at row t, token t+1+k) and predicts token t+2+k. `input_ids` are the tokens at t+1
        (the caller aligns them). `feed="teacher"` uses those true tokens shifted by k; `feed="own"` uses the
        drafter's own argmax of step k-1 (mapped to target ids). RoPE position of row t at step k is p_t + k.
        """
        b, t = input_ids.shape
        if positions is None:
            positions = torch.arange(t, device=input_ids.device).expand(b, t)
        state = self.unrolled_state(t, aux.dtype, aux.device, doc_mask)
        hidden = self.project(aux)
        logits_out, hidden_out, tokens = [], [], []
        ids = input_ids
        for k in range(steps):
            tokens.append(ids)
            logits, hidden = self.unrolled_step(ids, hidden, positions + k, state)
            logits_out.append(logits)
            hidden_out.append(hidden)
            if feed == "teacher":
                ids = torch.cat([input_ids[:, k + 1 :], input_ids.new_zeros(b, k + 1)], dim=1)
            else:
                ids = self.to_target(logits.argmax(-1))
        return Unrolled(logits_out, hidden_out, tokens)

    def unrolled_state(
        self, t: int, dtype: torch.dtype, device, doc_mask: torch.Tensor | None = None
    ) -> dict:
        """Attention state of an unrolled run: per-layer key/value lists and the step-0 causal mask."""
        causal = torch.full((t, t), float("-inf"), device=device).triu(1)
        if doc_mask is not None:
            causal = causal.masked_fill(~doc_mask, float("-inf"))
        return {"causal": causal.to(dtype), "cache": [([], []) for _ in self.layers]}

    def unrolled_step(self, ids: torch.Tensor, hidden: torch.Tensor, positions: torch.Tensor, state: dict):
        """One unrolled step for every row; the batch may grow after step 0 (tree slots share the step-0 keys).
        Returns (draft logits, fed-back hidden)."""
        embeds = self.embed_tokens(ids)
        cos, sin = self.rotary(positions, hidden.dtype)
        x = hidden
        for layer, (keys, values) in zip(self.layers, state["cache"], strict=True):
            a, residual = layer.attn_input(x, embeds)
            x = layer.finish(
                layer.self_attn.forward_unrolled(a, cos, sin, keys, values, state["causal"]), residual
            )
        return self.head(x)


def param_count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def init_weights(model: Eagle3Drafter, seed: int = 0, std: float = 0.02) -> Eagle3Drafter:
    """Fresh weights for training: normal(0, std) linear layers, unit norms (the HF Llama init)."""
    g = torch.Generator().manual_seed(seed)
    for name, p in model.named_parameters():
        if p.dim() >= 2:
            with torch.no_grad():
                p.copy_(torch.randn(p.shape, generator=g) * std)
        elif name.endswith("bias"):
            nn.init.zeros_(p)
        else:
            nn.init.ones_(p)
    return model


__all__ = ["DraftCache", "Eagle3Drafter", "Unrolled", "init_weights", "param_count"]
