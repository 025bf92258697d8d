"""Offline GRPO: train the Proposer on logged groups of candidate edits.

Each logged completion carries its group-relative advantage. The importance ratio is taken
against the log-probs of the policy that wrote the log: the logged ones when the log has them
(and they match our tokenisation), else recomputed from the base model before the first update,
which is that policy when the log came from the base model (`training/ratio.py` checks the
alignment and counts why a row had to be recomputed). With `beta > 0` the KL reference is the
base model too, so its log-probs are computed once at the start and no second model is kept.
"""

from __future__ import annotations

import json
import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness_learning.harnesses.offline import set_offline_switches

set_offline_switches()

import torch  # noqa: E402

from harness_learning.training.config import GRPOOfflineConfig  # noqa: E402
from harness_learning.training.data import FilterReport, grpo_dataset  # noqa: E402
from harness_learning.training.loading import (  # noqa: E402
    load_model,
    load_tokenizer,
    save_checkpoint,
    with_lora,
)
from harness_learning.training.loss import grpo_loss  # noqa: E402
from harness_learning.training.metrics import MetricsLog  # noqa: E402
from harness_learning.training.ratio import (  # noqa: E402
    RECOMPUTE_ASKED,
    OldLogprobReport,
    RatioStats,
    align_logged,
    ratio_stats,
    sampled_ids,
)

if TYPE_CHECKING:
    from datasets import Dataset
    from transformers import PreTrainedTokenizerBase

    from harness_learning.training.loading import CausalLM


@dataclass
class Encoded:
    ids: list[int]
    n_prompt: int
    advantage: float
    reward: float
    text_ids: list[int] = field(default_factory=list)
    """Our tokenisation of the whole completion text (before the end-of-turn and the cut)."""
    eos: bool = False
    old: torch.Tensor | None = None
    """logp_old per completion token; NaN where the log has no value (the current policy's
    is used there, ratio 1)."""
    logged: bool = False
    ref: torch.Tensor | None = None

    @property
    def n_completion(self) -> int:
        return len(self.ids) - self.n_prompt


@dataclass
class TrainResult:
    out: Path
    metrics: Path
    png: Path
    checkpoint: Path | None
    summary: dict[str, float]
    report: FilterReport | None = None
    ratio: dict[str, RatioStats] = field(default_factory=dict)
    """Importance-ratio statistics over the tokens whose logp_old was logged: at step 1 (the
    gap between the logging policy and the model before any update) and over all steps."""


def encode(tokenizer: PreTrainedTokenizerBase, row: dict[str, Any], max_length: int) -> Encoded:
    """Prompt through the chat template, then the completion's tokens (plus end-of-turn when
    the model stopped by itself); the prompt is cut on the left to fit. The completion's tokens
    are the ones the endpoint logged when they map onto ours (`ratio.sampled_ids`), else the
    text re-tokenised."""
    text = tokenizer.apply_chat_template(row["prompt"], add_generation_prompt=True,
                                         tokenize=False)
    prompt = tokenizer(text, add_special_tokens=False)["input_ids"]
    text_ids = (sampled_ids(tokenizer, row.get("old_tokens") or [], row["completion"])
                or tokenizer(row["completion"], add_special_tokens=False)["input_ids"])
    eos = row.get("finish_reason", "stop") in ("stop", "eos", "")
    completion = (text_ids + [tokenizer.eos_token_id] if eos else text_ids)[: max_length - 1]
    prompt = prompt[-(max_length - len(completion)):]
    return Encoded(prompt + completion, len(prompt), float(row["advantage"]),
                   float(row["reward"]), text_ids=list(text_ids), eos=eos)


def completion_logprobs(model: CausalLM, e: Encoded, device: str) -> torch.Tensor:
    """Log-prob of each completion token of one sequence, shape (n_completion,). Logits are
    computed for the completion positions only (`logits_to_keep`): with long prompts and a 49k
    or 150k vocabulary, full logits would dominate time and memory."""
    ids = torch.tensor([e.ids], device=device)
    logits = model(input_ids=ids, logits_to_keep=e.n_completion + 1).logits
    logp = torch.log_softmax(logits[0, :-1].float(), dim=-1)
    return logp.gather(-1, ids[0, e.n_prompt:].unsqueeze(-1)).squeeze(-1)


@torch.no_grad()
def prepare_logprobs(model: CausalLM, items: list[Encoded],
                     rows: Dataset | Sequence[dict[str, Any]],
                     config: GRPOOfflineConfig, device: str,
                     tokenizer: PreTrainedTokenizerBase | None = None) -> OldLogprobReport:
    """Fill `old` (logged when they align with our tokens, else the base model's) and `ref`;
    returns how many rows used logged log-probs and why the others were recomputed."""
    model.eval()
    report = OldLogprobReport()
    for i, e in enumerate(items):
        aligned, why = align_logged(rows[i]["old_logprobs"], rows[i].get("old_tokens") or [],
                                    e.text_ids, e.eos, e.n_completion, tokenizer)
        if config.recompute_logprobs:
            aligned, why = None, RECOMPUTE_ASKED
        if aligned is not None:
            e.old, e.logged = torch.tensor(aligned, dtype=torch.float32), True
            report.logged += 1
        else:
            report.recomputed[why] += 1
        if e.old is None or config.beta:
            base = completion_logprobs(model, e, device).cpu()
            e.ref = base if config.beta else None
            e.old = base if e.old is None else e.old
    model.train()
    return report


def train_step(model: CausalLM, batch: list[Encoded], config: GRPOOfflineConfig, device: str,
               ratios: list[torch.Tensor] | None = None) -> dict[str, float]:
    """One optimizer step's forward/backward, one sequence at a time so memory stays that of one
    sequence; token-level normalisation over the whole batch. The ratios of tokens whose
    logp_old was logged are appended to `ratios`."""
    total = sum(e.n_completion for e in batch)
    sums = {"loss": 0.0, "kl": 0.0, "clip_fraction": 0.0, "ratio_mean": 0.0}
    for e in batch:
        logp = completion_logprobs(model, e, device).unsqueeze(0)
        ref = e.ref.to(device).unsqueeze(0) if e.ref is not None else None
        old = e.old.to(device).unsqueeze(0)
        missing = torch.isnan(old)
        old = torch.where(missing, logp.detach(), old)
        if e.logged and ratios is not None:
            ratios.append(torch.exp(logp.detach() - old)[~missing].cpu())
        loss, stats = grpo_loss(
            logp, old, torch.tensor([e.advantage], device=device),
            torch.ones_like(logp), config.epsilon, config.epsilon_high, ref, config.beta,
        )
        weight = e.n_completion / total
        (loss * weight).backward()
        for key in sums:
            sums[key] += getattr(stats, key) * weight
    return sums


def train_grpo_offline(run_dirs: Sequence[str | Path], config: GRPOOfflineConfig,
                       progress: bool = True) -> TrainResult:
    """Run offline GRPO on the groups in `run_dirs`; writes metrics, a PNG and a checkpoint."""
    from tqdm.auto import tqdm

    torch.manual_seed(config.seed)
    rng = random.Random(config.seed)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    out = Path(config.out)
    dataset, report = grpo_dataset(run_dirs, config)
    tokenizer = load_tokenizer(config.model)
    model = load_model(config.model, tokenizer, config.seed).to(device)
    if config.lora:
        model = with_lora(model, config.lora_r, config.lora_alpha, config.lora_dropout)
    items = [encode(tokenizer, row, config.max_length) for row in dataset]
    report.notes.append(prepare_logprobs(model, items, dataset, config, device, tokenizer).note())
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=config.learning_rate)
    log = MetricsLog(out)
    (out / "config.json").write_text(json.dumps({**config.model_dump(), "logs": list(map(
        str, run_dirs))}, indent=1))
    order: list[int] = []
    first: list[torch.Tensor] = []
    pooled: list[torch.Tensor] = []
    for step in tqdm(range(1, config.max_steps + 1), desc="grpo-offline", disable=not progress):
        if len(order) < config.batch_size:
            order += rng.sample(range(len(items)), len(items))
        batch = [items[order.pop()] for _ in range(min(config.batch_size, len(items)))]
        optimizer.zero_grad(set_to_none=True)
        ratios: list[torch.Tensor] = []
        sums = train_step(model, batch, config, device, ratios)
        first = first or ratios
        pooled += ratios
        grad_norm = torch.nn.utils.clip_grad_norm_(params, config.max_grad_norm)
        optimizer.step()
        rewards = [e.reward for e in batch]
        log.log(step, reward_mean=statistics.fmean(rewards), reward_std=statistics.pstdev(rewards),
                grad_norm=grad_norm, **sums)
    png = log.plot(f"offline GRPO: {config.model}")
    ckpt = save_checkpoint(model, tokenizer, out / "checkpoint") if config.save else None
    stats = {name: ratio_stats(r, config.epsilon, config.epsilon_high)
             for name, r in (("step 1", first), ("all steps", pooled))}
    return TrainResult(out, log.path, png, ckpt, log.summary(), report,
                       {k: v for k, v in stats.items() if v is not None})
