"""`make zoo` / `eaglewire zoo build`: rebuild every bundled artifact from scratch, deterministically.

Stages (each resumable from the work folder, each writing into the package's zoo/ folder):
1. target: byte-level BPE tokenizer + the 8-layer Llama target (zoo/target), see target.py and lm.py;
2. deepseek: a tiny DeepSeek-V3 (MLA + MoE) target with the same tokenizer, briefly trained (zoo/deepseek-tiny);
3. assistant: a 2-layer Llama draft LM for the transformers assisted-generation baseline (zoo/assistant);
4. drafters: EAGLE-3 drafters on the target: `default` (the SGLang/vLLM default taps) and `custom-taps`
   (embedding + an early + a middle layer, the Kimi-K2.5 pattern), each with a card of held-out accuracy.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import torch

from eaglewire.zoo import corpus
from eaglewire.zoo.build import lm, target

DEEPSEEK = lm.TargetRecipe(
    hidden_size=128,
    num_layers=6,
    num_heads=4,
    num_kv_heads=4,
    intermediate_size=384,
    steps=400,
    batch_size=8,
    seq_len=256,
    lr=2e-3,
    warmup_steps=40,
    eval_every=100,
    checkpoint_every=100,
    eval_sequences=32,
)
ASSISTANT = lm.TargetRecipe(
    hidden_size=128,
    num_layers=2,
    num_heads=4,
    num_kv_heads=2,
    intermediate_size=384,
    steps=600,
    batch_size=8,
    seq_len=512,
    lr=2e-3,
    warmup_steps=50,
    eval_every=200,
    checkpoint_every=100,
    eval_sequences=32,
)


@dataclass
class DrafterRecipe:
    name: str
    taps: str
    steps: int = 700
    batch_size: int = 8
    ttt_steps: int = 4
    draft_vocab: int = 2048
    lr: float = 2e-3
    warmup: int = 60
    max_len: int = 512
    bf16: bool = True
    seed: int = 0
    val_windows: int = 48
    threads: int = 1  # part of the recipe: the numbers depend on it (both drafters can train side by side)
    phase2_steps: int = 800  # a second pass over the data, continuing from phase 1 (0 = none)
    phase2_lr: float = 1e-3


def drafter_recipes(num_layers: int) -> list[DrafterRecipe]:
    from eaglewire.taps import default_wiring

    middle = num_layers // 2  # out(L//2 - 1) = h_{L//2}
    return [
        DrafterRecipe("default", str(default_wiring(num_layers))),
        DrafterRecipe("custom-taps", f"h0,h1,h{middle}"),
    ]


def _deepseek_model(recipe: lm.TargetRecipe, tokenizer):
    from transformers import DeepseekV3Config, DeepseekV3ForCausalLM

    eos = tokenizer.convert_tokens_to_ids(lm.EOS)
    cfg = DeepseekV3Config(
        vocab_size=recipe.vocab_size,
        hidden_size=recipe.hidden_size,
        intermediate_size=recipe.intermediate_size,
        moe_intermediate_size=recipe.hidden_size,
        num_hidden_layers=recipe.num_layers,
        num_attention_heads=recipe.num_heads,
        num_key_value_heads=recipe.num_kv_heads,
        n_routed_experts=4,
        n_shared_experts=1,
        num_experts_per_tok=2,
        first_k_dense_replace=1,
        kv_lora_rank=32,
        q_lora_rank=64,
        qk_nope_head_dim=16,
        qk_rope_head_dim=16,
        v_head_dim=32,
        n_group=1,
        topk_group=1,
        max_position_embeddings=recipe.max_position_embeddings,
        bos_token_id=eos,
        eos_token_id=eos,
        pad_token_id=eos,
        tie_word_embeddings=False,
    )
    return DeepseekV3ForCausalLM(cfg)


def build_small_lm(kind: str, out: Path, work: Path, progress: Callable | None = None) -> dict:
    """The tiny DeepSeek-V3 target or the assistant LM, trained on the stdlib with the target's tokenizer."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(target_dir_of(out.parent)))
    recipe = DEEPSEEK if kind == "deepseek" else ASSISTANT
    train_files, held = corpus.split(corpus.collect())
    train_seqs = lm.chunk(lm.token_stream(tokenizer, lm.corpus_texts(train_files)), recipe.seq_len)
    eval_seqs = lm.chunk(lm.token_stream(tokenizer, lm.corpus_texts(held)), recipe.seq_len)[
        : recipe.eval_sequences
    ]
    build = _deepseek_model if kind == "deepseek" else None
    model, log = lm.train_target(
        recipe, tokenizer, train_seqs, eval_seqs, work, progress, build_model=build, name=kind
    )
    out.mkdir(parents=True, exist_ok=True)
    model.to(torch.bfloat16).save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    loss = lm.held_out_loss(model.float(), eval_seqs)
    card = {
        "kind": kind,
        "recipe": asdict(recipe),
        "parameters": sum(p.numel() for p in model.parameters()),
        "held_out_loss": round(loss, 5),
        "eval_curve": log["eval"],
    }
    (out / "zoo_card.json").write_text(json.dumps(card, indent=1) + "\n")
    what = (
        "tiny DeepSeek-V3 (MLA + MoE) target"
        if kind == "deepseek"
        else "assistant draft LM (assisted-generation baseline)"
    )
    (out / "README.md").write_text(
        f"# eaglewire zoo: {what}\n\n{card['parameters'] / 1e6:.2f}M parameters, {recipe.num_layers} layers, hidden "
        f"{recipe.hidden_size}; {recipe.steps} steps on the stdlib corpus with the zoo tokenizer; held-out loss "
        f"{loss:.3f} nats/token. Rebuilt by `make zoo`.\n"
    )
    return card


def target_dir_of(zoo: Path) -> Path:
    return zoo / "target"


def build_drafter(r: DrafterRecipe, zoo: Path, work: Path, progress: Callable | None = None) -> dict:
    """Train one bundled drafter on the target (online capture), validated on held-out stdlib windows."""
    from eaglewire import zoo as zoo_pkg
    from eaglewire.capture import OnlineSource
    from eaglewire.jobs.train import TrainConfig, train_drafter
    from eaglewire.taps import Wiring
    from eaglewire.targets import load_target

    tgt = load_target(target_dir_of(zoo))
    wiring = Wiring.parse(r.taps)
    train = OnlineSource(tgt, zoo_pkg.train_samples(tgt.tokenizer, r.max_len), wiring)
    val = OnlineSource(tgt, zoo_pkg.held_out_samples(tgt.tokenizer, r.max_len, limit=r.val_windows), wiring)
    cfg = TrainConfig(
        taps=r.taps,
        draft_vocab_size=r.draft_vocab,
        ttt_steps=r.ttt_steps,
        steps=r.steps,
        batch_size=r.batch_size,
        lr=r.lr,
        warmup_steps=r.warmup,
        bf16=r.bf16,
        eval_every=200,
        checkpoint_every=50,
        seed=r.seed,
        threads=r.threads,
    )
    out = work / r.name
    res = train_drafter(
        tgt,
        train,
        out,
        cfg,
        val_source=val,
        data_note="stdlib corpus (zoo train split)",
        progress=progress,
        save_dtype=torch.bfloat16,
    )
    if r.phase2_steps:
        cfg2 = replace(
            cfg, steps=r.phase2_steps, lr=r.phase2_lr, warmup_steps=20, seed=r.seed + 1, init_from=str(out)
        )
        out = work / f"{r.name}-phase2"
        res = train_drafter(
            tgt,
            train,
            out,
            cfg2,
            val_source=val,
            data_note="stdlib corpus (zoo train split), phase 2",
            progress=progress,
            save_dtype=torch.bfloat16,
        )
    dest = zoo / "drafters" / r.name
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    for f in ("config.json", "model.safetensors", "train_history.json"):
        shutil.copy2(out / f, dest / f)
    val_m = res.val
    card = {
        "name": r.name,
        "taps": str(wiring.served()),
        "recipe": asdict(r),
        "steps": cfg.steps + r.phase2_steps,
        "held_out": {
            "acc": val_m.acc,
            "cond_acc": val_m.cond_acc,
            "loss": val_m.loss,
            "tokens": val_m.tokens,
        },
        "train_tokens_per_second": round(res.tokens_per_second, 1),
    }
    (dest / "zoo_card.json").write_text(json.dumps(card, indent=1) + "\n")
    return card


def chain_test(zoo: Path, name: str, prompts: int = 16, steps: int = 5) -> dict:
    """The standalone chain test of a bundled drafter on the target's greedy continuations of held-out prompts."""
    from eaglewire import zoo as zoo_pkg
    from eaglewire.drafter import Eagle3Drafter
    from eaglewire.formats import read_drafter
    from eaglewire.jobs.evaluate import DEFAULT_TREES, chain_data, evaluate
    from eaglewire.taps import Wiring
    from eaglewire.targets import load_target

    tgt = load_target(target_dir_of(zoo))
    ckpt = read_drafter(zoo / "drafters" / name)
    wiring = Wiring.parse(ckpt.provenance.taps)
    data = chain_data(
        tgt, zoo_pkg.held_out_samples(tgt.tokenizer, 512, limit=prompts), list(wiring.indices), 64, 96
    )
    ev = evaluate(Eagle3Drafter.from_checkpoint(ckpt), data, wiring, steps, "chain", trees=DEFAULT_TREES)
    return {"prompts": prompts, "prompt_tokens": 64, "new_tokens": 96, **ev.to_dict()}


def _phases(r: dict) -> str:
    if not r.get("phase2_steps"):
        return f"; batch {r['batch_size']} x {r['max_len']} tokens, lr {r['lr']}"
    return (
        f"; batch {r['batch_size']} x {r['max_len']} tokens; {r['steps']} steps at lr {r['lr']}, then "
        f"{r['phase2_steps']} more at lr {r['phase2_lr']} from those weights"
    )


def write_drafter_card(dest: Path, card: dict, chain: dict | None = None) -> None:
    """The drafter's README: recipe, held-out per-step accuracy, and (when measured) chain acceptance."""
    h = card["held_out"]
    lines = [
        f"# eaglewire zoo drafter: {card['name']}",
        "",
        f"EAGLE-3 drafter (1 layer) for the zoo target, trained on taps **{card['taps']}** with eaglewire's TTT "
        f"trainer ({card['steps']} steps, TTT {card['recipe']['ttt_steps']}, draft vocab {card['recipe']['draft_vocab']}"
        + _phases(card["recipe"])
        + ").",
        "",
        f"Held-out (teacher-forced, {h['tokens']:,} tokens of held-out stdlib files; top-1 agreement with the target's greedy token):",
        "",
        "| step k | " + " | ".join(str(k) for k in range(len(h["acc"]))) + " |",
        "|---|" + "---|" * len(h["acc"]),
        "| acc_k | " + " | ".join(f"{a:.3f}" for a in h["acc"]) + " |",
        "| conditional | " + " | ".join(f"{a:.3f}" for a in h["cond_acc"]) + " |",
    ]
    if chain:
        lines += [
            "",
            "Standalone chain test on the target's greedy continuations of held-out prompts (own tokens fed back). "
            "The accept length is walked as an engine walks (K drafts after each verify; bonus token included: "
            "vLLM 1 + accepted/drafts); acc and alpha are per step over every position:",
            "",
            "| K (draft tokens) / step k+1 | "
            + " | ".join(str(i + 1) for i in range(len(chain["predicted_tau"])))
            + " |",
            "|---|" + "---|" * len(chain["predicted_tau"]),
            "| acc, every position | " + " | ".join(f"{a:.3f}" for a in chain["acc"]) + " |",
            "| alpha, every position | " + " | ".join(f"{a:.3f}" for a in chain["cond_acc"]) + " |",
            "| accept length, engine's walk | "
            + " | ".join(f"{a:.2f}" for a in chain["predicted_tau"])
            + " |",
            "",
        ]
        lines += [
            f"- SGLang tree {k}: accept length {v:.2f} (engine's walk)"
            for k, v in chain.get("tree_accept_length", {}).items()
        ]
        card["chain_test"] = chain
    (dest / "README.md").write_text("\n".join(lines) + "\n")
    (dest / "zoo_card.json").write_text(json.dumps(card, indent=1) + "\n")


STAGES = ("target", "deepseek", "assistant", "drafters")  # "cards": re-measure the drafter cards, no training


def build(
    zoo: Path,
    work: Path,
    stages: tuple[str, ...] = STAGES,
    progress: Callable[[str], Callable | None] | None = None,
    recipe: lm.TargetRecipe | None = None,
    drafters: tuple[str, ...] | None = None,
) -> dict:
    """Run the stages in order; returns the cards. `progress(stage)` gives a per-stage progress callback."""
    cards = {}
    cb = progress or (lambda stage: None)
    if "target" in stages:
        cards["target"] = target.build_target(target_dir_of(zoo), work / "target", recipe, cb("target"))
    if "deepseek" in stages:
        cards["deepseek"] = build_small_lm(
            "deepseek", zoo / "deepseek-tiny", work / "deepseek", cb("deepseek")
        )
    if "assistant" in stages:
        cards["assistant"] = build_small_lm(
            "assistant", zoo / "assistant", work / "assistant", cb("assistant")
        )
    if "drafters" in stages:
        from eaglewire.targets import read_target

        L = read_target(target_dir_of(zoo)).num_layers
        for r in drafter_recipes(L):
            if drafters and r.name not in drafters:
                continue
            cards[r.name] = build_drafter(r, zoo, work / "drafters", cb(r.name))
            write_drafter_card(zoo / "drafters" / r.name, cards[r.name], chain_test(zoo, r.name))
    if "cards" in stages:  # the committed weights, measured again (a new measurement, same drafters)
        for name in drafters or ("default", "custom-taps"):
            dest = zoo / "drafters" / name
            card = json.loads((dest / "zoo_card.json").read_text())
            card.pop("chain_test", None)
            write_drafter_card(dest, card, chain_test(zoo, name))
            cards[name] = card
    return cards
