"""Train the zoo's tokenizer and its Llama-architecture target on the stdlib corpus.

Deterministic: fixed seeds, sorted files, a fixed thread count and a step budget (never a time budget), so
`make zoo` rebuilds the same weights. Training checkpoints to a work folder so a killed build resumes.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from eaglewire.zoo import corpus

EOS = "<|endoftext|>"

# A plain-text chat template (no extra special tokens) with generation markers, so that capture can put the
# loss mask on assistant turns through transformers' own `return_assistant_tokens_mask`.
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{% if message['role'] == 'assistant' %}"
    "{{ '### assistant:\n' }}{% generation %}{{ message['content'] + '<|endoftext|>' }}{% endgeneration %}"
    "{{ '\n' }}"
    "{% else %}"
    "{{ '### ' + message['role'] + ':\n' + message['content'] + '\n' }}"
    "{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '### assistant:\n' }}{% endif %}"
)


@dataclass
class TargetRecipe:
    """Every hyper-parameter of the zoo target, visible in one place (recorded in its card)."""

    vocab_size: int = 4096
    hidden_size: int = 384
    num_layers: int = 8
    num_heads: int = 6
    num_kv_heads: int = 2
    intermediate_size: int = 1024
    max_position_embeddings: int = 2048
    seq_len: int = 512
    batch_size: int = 8
    steps: int = 3000
    lr: float = 1.5e-3
    warmup_steps: int = 100
    min_lr_ratio: float = 0.1
    weight_decay: float = 0.1
    grad_clip: float = 1.0
    eval_every: int = 250
    eval_sequences: int = 64
    checkpoint_every: int = 250
    seed: int = 0
    threads: int = 2
    bf16_autocast: bool = True


def train_tokenizer(texts: Iterable[str], vocab_size: int):
    """Byte-level BPE (GPT-2 style pre-tokenizer), wrapped as a transformers fast tokenizer."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[EOS],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=EOS, eos_token=EOS, pad_token=EOS)
    fast.chat_template = CHAT_TEMPLATE
    return fast


def token_stream(tokenizer, texts: Iterable[str]) -> torch.Tensor:
    """All texts as one id stream, each file followed by EOS."""
    eos = tokenizer.convert_tokens_to_ids(EOS)
    ids: list[int] = []
    for text in texts:
        ids.extend(tokenizer(text, add_special_tokens=False)["input_ids"])
        ids.append(eos)
    return torch.tensor(ids, dtype=torch.long)


def chunk(stream: torch.Tensor, seq_len: int) -> torch.Tensor:
    n = stream.numel() // seq_len
    return stream[: n * seq_len].view(n, seq_len)


def llama_config(r: TargetRecipe, tokenizer):
    from transformers import LlamaConfig

    eos = tokenizer.convert_tokens_to_ids(EOS)
    return LlamaConfig(
        vocab_size=r.vocab_size,
        hidden_size=r.hidden_size,
        intermediate_size=r.intermediate_size,
        num_hidden_layers=r.num_layers,
        num_attention_heads=r.num_heads,
        num_key_value_heads=r.num_kv_heads,
        max_position_embeddings=r.max_position_embeddings,
        rms_norm_eps=1e-5,
        tie_word_embeddings=False,
        bos_token_id=eos,
        eos_token_id=eos,
        pad_token_id=eos,
    )


def lr_at(step: int, r: TargetRecipe) -> float:
    if step < r.warmup_steps:
        return r.lr * (step + 1) / r.warmup_steps
    progress = (step - r.warmup_steps) / max(1, r.steps - r.warmup_steps)
    return r.lr * (r.min_lr_ratio + (1 - r.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * min(1.0, progress))))


@torch.no_grad()
def held_out_loss(model, sequences: torch.Tensor, batch_size: int = 8) -> float:
    """Mean next-token cross-entropy (nats) over the held-out sequences, in fp32."""
    model.eval()
    total, count = 0.0, 0
    for i in range(0, len(sequences), batch_size):
        batch = sequences[i : i + batch_size]
        out = model(input_ids=batch, labels=batch)
        n = batch.numel() - batch.shape[0]
        total += out.loss.item() * n
        count += n
    model.train()
    return total / count


def train_target(
    recipe: TargetRecipe,
    tokenizer,
    train_seqs: torch.Tensor,
    eval_seqs: torch.Tensor,
    work: Path,
    progress: Callable[[int, int, dict], None] | None = None,
    build_model: Callable | None = None,
    name: str = "target",
):
    """Train (or resume) a causal LM (default: the Llama target of `recipe`); returns (model, log).
    `log` holds the held-out loss curve. `build_model(recipe, tokenizer)` makes another architecture."""
    from transformers import LlamaForCausalLM

    torch.set_num_threads(recipe.threads)
    torch.manual_seed(recipe.seed)
    model = (
        build_model(recipe, tokenizer) if build_model else LlamaForCausalLM(llama_config(recipe, tokenizer))
    )
    model.train()
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": recipe.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=recipe.lr,
        betas=(0.9, 0.95),
    )
    work.mkdir(parents=True, exist_ok=True)
    ckpt = work / f"{name}-train.pt"
    log: dict = {"eval": [], "train": []}
    start = 0
    if ckpt.exists():
        state = torch.load(ckpt, weights_only=True)
        if state["recipe"] == asdict(recipe):
            model.load_state_dict(state["model"])
            opt.load_state_dict(state["opt"])
            start = state["step"]
            log = json.loads(state["log"])
    g = torch.Generator().manual_seed(recipe.seed)
    per_epoch = len(train_seqs) // recipe.batch_size
    orders: dict[int, torch.Tensor] = {}

    def batch_at(step: int) -> torch.Tensor:
        epoch, k = divmod(step, per_epoch)
        while len(orders) <= epoch:  # permutations drawn in epoch order, so a resume sees the same data
            orders[len(orders)] = torch.randperm(len(train_seqs), generator=g)
        idx = orders[epoch][k * recipe.batch_size : (k + 1) * recipe.batch_size]
        return train_seqs[idx]

    t0 = time.perf_counter()
    for step in range(start, recipe.steps):
        for group in opt.param_groups:
            group["lr"] = lr_at(step, recipe)
        batch = batch_at(step)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=recipe.bf16_autocast):
            loss = model(input_ids=batch, labels=batch).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), recipe.grad_clip)
        opt.step()
        done = step + 1
        if done % 10 == 0:
            log["train"].append([done, round(loss.item(), 4)])
        if done % recipe.eval_every == 0 or done == recipe.steps:
            log["eval"].append([done, round(held_out_loss(model, eval_seqs), 5)])
        if progress:
            tok_s = (done - start) * batch.numel() / (time.perf_counter() - t0)
            progress(done, recipe.steps, {"loss": loss.item(), "tok/s": tok_s})
        if done % recipe.checkpoint_every == 0 and done < recipe.steps:
            tmp = ckpt.with_suffix(".tmp")
            torch.save(
                {
                    "recipe": asdict(recipe),
                    "model": model.state_dict(),
                    "opt": opt.state_dict(),
                    "step": done,
                    "log": json.dumps(log),
                },
                tmp,
            )
            tmp.replace(ckpt)
    model.eval()
    return model, log


def corpus_texts(files: list[corpus.CorpusFile]) -> list[str]:
    return [corpus.read_text(f) for f in files]
