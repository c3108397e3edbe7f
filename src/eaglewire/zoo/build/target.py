"""Build the zoo target: tokenizer + Llama model trained on the stdlib, saved with a model card.

The card records the recipe, the held-out loss curve, the held-out loss of the saved (bf16) weights, and greedy
continuations of held-out prompts with a repetition measure, so anyone can see it writes ordinary Python.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

import torch

from eaglewire.metrics import repetition
from eaglewire.zoo import corpus
from eaglewire.zoo.build import lm

PROMPT_LINES = 24
SAMPLE_NEW_TOKENS = 96


def held_out_prompts(tokenizer, n: int = 8, lines: int = PROMPT_LINES) -> list[tuple[str, str]]:
    """(relpath, prompt) pairs from held-out files, in sorted order: `lines` lines of code ending inside the
    first top-level function or class body (past the module docstring and imports), so the model writes code."""
    _, held = corpus.split(corpus.collect())
    out = []
    for f in held:
        src = corpus.read_text(f).splitlines()
        starts = [i for i, line in enumerate(src) if line.startswith(("def ", "class ")) and i >= 8]
        if not starts:
            continue
        end = min(len(src), starts[0] + 6)
        body = "\n".join(src[max(0, end - lines) : end]) + "\n"
        if len(body.strip()) > 200:
            out.append((f.relpath, body))
        if len(out) == n:
            break
    return out


@torch.no_grad()
def greedy_samples(model, tokenizer, prompts: list[tuple[str, str]], new_tokens: int = SAMPLE_NEW_TOKENS):
    samples = []
    for rel, prompt in prompts:
        ids = tokenizer(prompt, return_tensors="pt")["input_ids"]
        out = model.generate(
            ids, max_new_tokens=new_tokens, do_sample=False, pad_token_id=tokenizer.eos_token_id
        )
        cont = out[0, ids.shape[1] :].tolist()
        samples.append(
            {
                "file": rel,
                "prompt": prompt,
                "continuation": tokenizer.decode(cont),
                "repetition_4gram": round(repetition(cont), 3),
            }
        )
    return samples


def build_target(
    out: Path, work: Path, recipe: lm.TargetRecipe | None = None, progress: Callable | None = None
) -> dict:
    """Train tokenizer and target from scratch (resuming from `work`), save to `out`, return the card facts."""
    from transformers import LlamaForCausalLM

    recipe = recipe or lm.TargetRecipe()
    torch.set_num_threads(recipe.threads)
    train_files, held_files = corpus.split(corpus.collect())
    tokenizer = lm.train_tokenizer(lm.corpus_texts(train_files), recipe.vocab_size)
    train_seqs = lm.chunk(lm.token_stream(tokenizer, lm.corpus_texts(train_files)), recipe.seq_len)
    eval_seqs = lm.chunk(lm.token_stream(tokenizer, lm.corpus_texts(held_files)), recipe.seq_len)[
        : recipe.eval_sequences
    ]
    model, log = lm.train_target(recipe, tokenizer, train_seqs, eval_seqs, work, progress)

    out.mkdir(parents=True, exist_ok=True)
    model.to(torch.bfloat16).save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    saved = LlamaForCausalLM.from_pretrained(out, dtype=torch.float32)
    loss = lm.held_out_loss(saved, eval_seqs)
    samples = greedy_samples(saved, tokenizer, held_out_prompts(tokenizer))
    facts = {
        "recipe": asdict(recipe),
        "corpus": {
            "train_files": len(train_files),
            "held_out_files": len(held_files),
            "train_tokens": int(train_seqs.numel()),
            "held_out_eval_tokens": int(eval_seqs.numel()),
            "bytes_per_token": round(sum(f.path.stat().st_size for f in train_files) / train_seqs.numel(), 3),
        },
        "parameters": sum(p.numel() for p in saved.parameters()),
        "held_out_loss": round(loss, 5),
        "held_out_perplexity": round(float(torch.exp(torch.tensor(loss))), 3),
        "eval_curve": log["eval"],
        "samples": samples,
    }
    (out / "zoo_card.json").write_text(json.dumps(facts, indent=1) + "\n")
    (out / "README.md").write_text(render_card(facts))
    return facts


def render_card(f: dict) -> str:
    r = f["recipe"]
    lines = [
        "# eaglewire zoo target",
        "",
        f"A Llama-architecture model ({f['parameters'] / 1e6:.1f}M parameters, {r['num_layers']} layers, hidden "
        f"{r['hidden_size']}, vocab {r['vocab_size']}) trained by `make zoo` on the Python standard library "
        f"({f['corpus']['train_files']} files, {f['corpus']['train_tokens']:,} tokens; tests and codec tables left "
        f"out). Weights are stored in bf16.",
        "",
        f"- held-out loss (saved weights, {f['corpus']['held_out_eval_tokens']:,} tokens of "
        f"{f['corpus']['held_out_files']} held-out files): **{f['held_out_loss']:.4f} nats/token** "
        f"(perplexity {f['held_out_perplexity']:.2f})",
        f"- training: {r['steps']} steps x {r['batch_size']} x {r['seq_len']} tokens, AdamW lr {r['lr']}, "
        f"cosine to {r['min_lr_ratio']}x, bf16 autocast={r['bf16_autocast']}, seed {r['seed']}, {r['threads']} threads",
        "- held-out loss during training: " + ", ".join(f"{s}: {v:.3f}" for s, v in f["eval_curve"]),
        "",
        "## Greedy continuations of held-out prompts",
        "",
        "`repetition` is the share of 4-grams in the continuation that repeat an earlier one (a loop scores near 1).",
        "",
    ]
    for s in f["samples"][:3]:
        tail = "\n".join(s["prompt"].rstrip("\n").splitlines()[-6:])
        lines += [
            f"### `{s['file']}` (repetition {s['repetition_4gram']})",
            "",
            "```python",
            "# ...prompt tail:",
            tail,
            "# --- model continues:",
            s["continuation"],
            "```",
            "",
        ]
    reps = [s["repetition_4gram"] for s in f["samples"]]
    loops = sum(r >= 0.5 for r in reps)
    lines.append(f"Repetition over all {len(reps)} prompts: " + ", ".join(f"{x:.2f}" for x in reps) + ".")
    lines += [
        "",
        f"The continuations are ordinary Python (names, calls, blocks, docstrings), not token soup; but like any "
        f"small model decoded greedily, {loops} of {len(reps)} fall into a line-level loop within "
        f"{SAMPLE_NEW_TOKENS} tokens (repetition >= 0.5). Loops make "
        "drafting easy and inflate acceptance, so `eaglewire bench` reports prompts whose greedy continuation "
        "loops separately from the rest.",
    ]
    return "\n".join(lines) + "\n"
