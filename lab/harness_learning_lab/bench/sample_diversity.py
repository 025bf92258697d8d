"""`harness-learn bench sample-diversity`: how many different completions a Proposer writes
from one logged prompt, by temperature.

GRPO learns from the reward differences inside a group of samples of one prompt. A Proposer
that writes the same completion every time gives every group zero variance, so zero advantage
and no gradient, whatever the rewards: before an RL phase is sized, this says whether its
groups could differ at all. The prompts are the ones a run's Proposer was really sent (its log),
the model any spec the project serves (a trained student's GGUF, `local`, a remote endpoint).
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class DiversityRow:
    """The samples of one logged prompt at one temperature."""

    proposal: str
    """The logged proposal whose prompt was sent again (`r{round}-c{index}`)."""
    temperature: float
    samples: int
    distinct: int
    """Different completions among the samples (whitespace at the ends ignored)."""
    same_as_logged: int
    """Samples equal to the completion the run logged for that prompt."""
    completion_tokens: float
    """Mean completion tokens of the samples."""
    seconds: float
    """Mean wall seconds a sample."""


def logged_prompts(run_dir: Path, limit: int) -> list[Any]:
    """Up to `limit` Proposer proposals of the run at `run_dir`, one per distinct prompt, in
    log order (operator candidates have no prompt to send again)."""
    from harness_learning.harnesses.store import SQLiteLogStore

    seen: set[str] = set()
    chosen = []
    with SQLiteLogStore(run_dir, read_only=True) as store:
        for proposal in store.iter_proposals():
            if proposal.origin != "proposer" or not isinstance(proposal.prompt, list):
                continue
            if proposal.group_id in seen:
                continue
            seen.add(proposal.group_id)
            chosen.append(proposal)
            if len(chosen) >= limit:
                break
    return chosen


def _fingerprint(text: str) -> str:
    return hashlib.sha256(text.strip().encode()).hexdigest()


async def measure(client: Any, proposals: list[Any], temperatures: list[float], samples: int,
                  max_tokens: int, log: Callable[[str], None] = lambda _: None
                  ) -> list[DiversityRow]:
    """Sample each proposal's prompt `samples` times at each temperature (seeds 0..samples-1,
    so a rerun draws the same samples from a deterministic endpoint)."""
    rows = []
    for proposal in proposals:
        for temperature in temperatures:
            texts, tokens, seconds = [], 0, 0.0
            for seed in range(samples):
                completion = await client.acomplete(proposal.prompt, temperature=temperature,
                                                    max_tokens=max_tokens, seed=seed)
                texts.append(completion.text)
                tokens += completion.completion_tokens
                seconds += completion.latency_s
                log(f"{proposal.id} T={temperature} sample {seed + 1}/{samples}: "
                    f"{completion.completion_tokens} tokens, {completion.latency_s:.1f} s")
            logged = _fingerprint(proposal.completion)
            rows.append(DiversityRow(
                proposal.id, temperature, samples, len({_fingerprint(t) for t in texts}),
                sum(_fingerprint(t) == logged for t in texts), tokens / samples,
                seconds / samples))
    return rows


def run(run_dir: Path, model: str, temperatures: list[float], samples: int, prompts: int,
        max_tokens: int, log: Callable[[str], None] = lambda _: None) -> list[DiversityRow]:
    """Measure `model` on the first `prompts` distinct Proposer prompts of `run_dir`."""
    from harness_learning.harnesses.llm import ModelConfig, get_client

    proposals = logged_prompts(run_dir, prompts)
    if not proposals:
        raise ValueError(f"{run_dir} logs no Proposer prompt (operator candidates have none)")
    client = get_client(ModelConfig.parse(model))
    return asyncio.run(measure(client, proposals, temperatures, samples, max_tokens, log))


def table(rows: list[DiversityRow], model: str) -> str:
    lines = [f"# sample diversity of {model}", "",
             "| proposal | temperature | samples | distinct | same as logged | "
             "completion tokens | s/sample |", "|---|---|---|---|---|---|---|"]
    lines += [f"| {r.proposal} | {r.temperature:g} | {r.samples} | {r.distinct} | "
              f"{r.same_as_logged} | {r.completion_tokens:.0f} | {r.seconds:.1f} |" for r in rows]
    lines += ["", "distinct 1: a GRPO group of these samples has zero reward variance (no "
              "advantage, no gradient), whatever the rewards."]
    return "\n".join(lines)


def as_dicts(rows: list[DiversityRow]) -> list[dict[str, Any]]:
    return [asdict(r) for r in rows]
