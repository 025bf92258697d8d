"""Online GRPO with TRL's GRPOTrainer.

Prompts are the Proposer prompts of logged groups (task description + harness + report). The
reward function applies each sampled completion to its prompt's harness (harnesses.edits),
checks it, evaluates it in sandbox workers through the evaluator (async, `concurrency` at once)
and rewards it per the paper (evals.rewards). Every group is written back to an execution log
in the adapter's format, so online runs feed offline training too.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness_learning.harnesses.offline import set_offline_switches

set_offline_switches()

from harness_learning.evals.judge import NOTHING_SHOWN, Outcome, judge_candidate  # noqa: E402
from harness_learning.evals.memorisation import Exposure  # noqa: E402
from harness_learning.harnesses.contract import LINE_LIMIT  # noqa: E402
from harness_learning.training.config import GRPOOnlineConfig  # noqa: E402
from harness_learning.training.data import LogError, as_messages  # noqa: E402
from harness_learning.training.grpo_offline import TrainResult  # noqa: E402
from harness_learning.training.metrics import MetricsLog, metrics_callback  # noqa: E402

if TYPE_CHECKING:
    from trl import GRPOConfig

    from harness_learning.evals.problem import Problem
    from harness_learning.evals.result import EvalResult
    from harness_learning.evals.task import Task
    from harness_learning.harnesses.store import LogStore, ProposalGroup
    from harness_learning.harnesses.toolbox import Toolbox
    from harness_learning.training.data import Prompt


@dataclass
class PromptSet:
    """Distinct logged prompts with the harness each one shows, and the first run's task.

    Each row also names the task its run was on (`task`, with `options` as JSON): logs of
    several task types train one Proposer, each completion judged on its own prompt's task."""

    rows: list[dict[str, Any]]
    task: str
    task_options: dict[str, Any] = field(default_factory=dict)

    def tasks(self) -> dict[str, dict[str, Any]]:
        """Each distinct (task, options) key of the rows, with its options."""
        return {row["task_key"]: json.loads(row["task_key"])[1] for row in self.rows}


def _parent_source(store: LogStore, group: ProposalGroup) -> str | None:
    """The harness a group's prompt showed: the parent of any candidate it produced."""
    for p in group.proposals:
        sha = getattr(p, "parent_sha", None)
        if sha is None and p.candidate_sha:
            version = store.get_version(p.candidate_sha)
            sha = version.parent_sha if version is not None else None
        parent = store.get_version(sha) if sha else None
        if parent is not None:
            return parent.source
    return None


def _run_config(store: LogStore) -> dict[str, Any]:
    """The run's config: its run record, else the adapter's `run_started` event."""
    run = store.get_run()
    if run is not None and run.config:
        return dict(run.config)
    for event in store.iter_events(kinds=["run_started"]):
        config = event.payload.get("config") or {}
        return json.loads(config) if isinstance(config, str) else dict(config)
    return {}


def logged_prompts(run_dirs: Sequence[str | Path]) -> PromptSet:
    """One row per distinct logged prompt whose harness the log can give back."""
    from harness_learning.harnesses.rundir import RunDir

    rows, seen, task, options = [], set(), "", {}
    for run_dir in run_dirs:
        with RunDir(run_dir).open_store() as store:
            config = _run_config(store)
            task = task or str(config.get("task", ""))
            options = options or dict(config.get("task_options") or {})
            key = json.dumps([str(config.get("task", "")), config.get("task_options") or {}],
                             sort_keys=True)
            for group in store.iter_proposal_groups():
                source = _parent_source(store, group)
                if group.group_id in seen or source is None:
                    continue
                seen.add(group.group_id)
                rows.append({"prompt": as_messages(group.prompt), "source": source,
                             "edit_format": group.proposals[0].edit_format or "search_replace",
                             "line_limit": int(config.get("line_limit") or LINE_LIMIT),
                             "task_key": key})
    if not rows:
        raise LogError(f"no logged prompt with a recoverable harness in {list(map(str, run_dirs))}")
    return PromptSet(rows, task, options)


class HarnessReward:
    """TRL reward function: apply, check, evaluate in the sandbox, reward; log each group.

    `task` and `problems` judge every completion, unless `by_key` maps a row's `task_key`
    (see `PromptSet`) to a (task, problems) pair of its own."""

    __name__ = "harness_reward"

    def __init__(self, config: GRPOOnlineConfig, task: Task, problems: list[Problem],
                 log_dir: Path, by_key: dict[str, tuple[Task, list[Problem]]] | None = None
                 ) -> None:
        self.config, self.task, self.problems = config, task, problems
        self.by_key = dict(by_key or {})
        self.log_dir = log_dir
        self.step = 0
        self._parent_scores: dict[tuple[str | None, str], float] = {}
        self._toolboxes: dict[str | None, Toolbox] = {}
        self._dev: dict[str | None, list[Problem]] = {}

    @cached_property
    def store(self) -> LogStore:
        from harness_learning.harnesses.rundir import RunDir

        store = RunDir(self.log_dir).open_store()
        store.init_run({"task": self.config.task, "source": "grpo-online",
                        "model": self.config.model})
        return store

    def unit(self, key: str | None) -> tuple[Task, list[Problem]]:
        """The (task, selection problems) a row of `key` is judged on."""
        return self.by_key.get(key, (self.task, self.problems)) if key else (self.task,
                                                                             self.problems)

    @property
    def toolbox(self) -> Toolbox:
        return self.toolbox_for(None)

    @toolbox.setter
    def toolbox(self, value: Toolbox) -> None:  # tests give a scripted Solver
        self._toolboxes[None] = value

    def toolbox_for(self, key: str | None) -> Toolbox:
        if key not in self._toolboxes:
            from harness_learning.harnesses.llm import get_client
            from harness_learning.harnesses.toolbox import Toolbox

            self._toolboxes[key] = Toolbox(solver=get_client(self.config.solver),
                                           retriever=self.unit(key)[0].retriever())
        return self._toolboxes[key]

    def dev_pool(self, key: str | None = None) -> list[Problem]:
        """The task's dev problems: a logged prompt's report showed some of them."""
        if key not in self._dev:
            self._dev[key] = list(self.unit(key)[0].dev())
        return self._dev[key]

    async def evaluate(self, source: str, problems: list[Problem], key: str | None = None
                       ) -> EvalResult:
        """`source` on `problems` in sandbox workers, within `eval_timeout_s`."""
        from harness_learning.evals.evaluator import evaluate

        limit = self.config.eval_timeout_s
        try:
            return await asyncio.wait_for(
                evaluate(source, problems, self.unit(key)[0], self.toolbox_for(key),
                         concurrency=self.config.concurrency), timeout=limit)
        except TimeoutError:
            raise TimeoutError(f"evaluation over {limit}s") from None

    async def judge(self, source: str, text: str, fmt: str, finish: str, *,
                    line_limit: int = LINE_LIMIT, exposure: Exposure = NOTHING_SHOWN,
                    key: str | None = None) -> Outcome:
        """The adapter's judge (evals/judge.py) on one sampled completion: both reward-hacking
        guards against what its prompt's report showed, the memorisation check included."""
        task, problems = self.unit(key)

        async def evaluate(src: str, chosen: list[Problem]) -> EvalResult:
            return await self.evaluate(src, chosen, key)

        return await judge_candidate(source, text, fmt, finish, track=task.track,
                                     line_limit=line_limit, selection=problems,
                                     evaluate=evaluate, exposure=exposure)

    def exposure(self, prompt: Prompt, key: str | None = None) -> Exposure:
        """What the prompt's report showed: the dev problems whose question it quotes (the
        feedback problems of the round that logged it) and whose gold it shows."""
        text = prompt if isinstance(prompt, str) else "\n".join(
            str(m.get("content", "")) for m in prompt)
        quoted = [p for p in self.dev_pool(key) if str(p.inputs.get("question", "")) in text]
        return Exposure.of(quoted, text, self.unit(key)[0])

    async def parent_score(self, source: str, key: str | None = None) -> float:
        if (key, source) not in self._parent_scores:
            self._parent_scores[key, source] = (
                await self.evaluate(source, self.unit(key)[1], key)).mean_score
        return self._parent_scores[key, source]

    async def __call__(self, prompts: list, completions: list, completion_ids: list,
                       source: list[str], edit_format: list[str],
                       line_limit: list[int] | None = None, task_key: list[str] | None = None,
                       **_: object) -> list[float]:
        limit = self.config.max_completion_length
        texts = [c[-1]["content"] if isinstance(c, list) else str(c) for c in completions]
        finish = ["length" if len(ids) >= limit else "stop" for ids in completion_ids]
        lines = line_limit or [LINE_LIMIT] * len(texts)
        keys = task_key or [None] * len(texts)
        sem = asyncio.Semaphore(self.config.concurrency)

        async def one(i: int) -> Outcome:
            async with sem:
                return await self.judge(source[i], texts[i], edit_format[i], finish[i],
                                        line_limit=lines[i], key=keys[i],
                                        exposure=self.exposure(prompts[i], keys[i]))

        judged = await asyncio.gather(*(one(i) for i in range(len(texts))))
        parents = [await self.parent_score(source[i], keys[i]) for i in range(len(texts))]
        self.step += 1
        self.log(prompts, texts, finish, source, edit_format, judged, parents)
        return [j.reward for j in judged]

    def log(self, prompts: list, texts: list[str], finish: list[str], source: list[str],
            fmts: list[str], judged: list[Outcome], parents: list[float]) -> None:
        """Write every completion as a proposal of the adapter's log format."""
        from harness_learning.harnesses.store import Proposal, prompt_group_id

        for i, j in enumerate(judged):
            parent_sha = self.store.put_version(source[i], None, 0)
            sha = (self.store.put_version(j.new_source, parent_sha, self.step)
                   if j.new_source else None)
            self.store.put_proposal(Proposal(
                id=uuid.uuid4().hex, round=self.step, group_id=prompt_group_id(prompts[i]),
                prompt=prompts[i], completion=texts[i], finish_reason=finish[i],
                model=self.config.model, edit_format=fmts[i], candidate_sha=sha, parent_sha=parent_sha,
                outcome=j, parent_score=parents[i]))


def grpo_args(config: GRPOOnlineConfig, out: Path, progress: bool) -> GRPOConfig:
    from trl import GRPOConfig

    from harness_learning.training.sft import trl_common

    if config.batch_size % config.num_generations:
        raise ValueError(f"batch_size {config.batch_size} must be a multiple of num_generations "
                         f"{config.num_generations} (whole groups per step)")
    common = trl_common(config, out)
    micro = config.micro_batch_size or config.batch_size
    if config.batch_size % micro:
        raise ValueError(f"batch_size {config.batch_size} must be a multiple of "
                         f"micro_batch_size {micro}")
    if micro != config.batch_size:  # one generation batch per step, trained in micro-batches
        common |= {"per_device_train_batch_size": micro,
                   "gradient_accumulation_steps": config.batch_size // micro}
    return GRPOConfig(
        **common, num_generations=config.num_generations,
        max_completion_length=config.max_completion_length, temperature=config.temperature,
        beta=config.beta, loss_type=config.loss_type, use_vllm=config.use_vllm,
        vllm_mode="colocate", scale_rewards="group" if config.scale_by_std else "none",
        disable_tqdm=not progress, log_completions=False,
    )


def train_grpo_online(run_dirs: Sequence[str | Path], config: GRPOOnlineConfig,
                      progress: bool = True) -> TrainResult:
    """Online GRPO from the prompts of `run_dirs`; writes metrics, a PNG, a checkpoint and the
    execution log of every sampled group (OUT/log unless `log_dir`)."""
    from datasets import Dataset
    from trl import GRPOTrainer

    from harness_learning.evals.registry import get_task
    from harness_learning.evals.splits import sample_round
    from harness_learning.harnesses.llm.litellm_loop import cancel_tasks
    from harness_learning.training.loading import (
        load_model,
        load_tokenizer,
        lora_config,
        save_checkpoint,
    )
    from harness_learning.training.prefix_trainer import SharedPrefixGRPOTrainer

    trainer_class = SharedPrefixGRPOTrainer if config.shared_prefix else GRPOTrainer
    out = Path(config.out)
    prompts = logged_prompts(run_dirs)
    explicit = bool(config.task)  # --task judges every row on that task
    config.task = config.task or prompts.task
    if not config.task:
        raise LogError("the logs name no task: pass --task")
    task = get_task(config.task, **prompts.task_options)
    _, problems = sample_round(task.dev(), 0, config.seed, 0, config.num_problems)
    by_key = {}
    for key, options in ({} if explicit else prompts.tasks()).items():
        other = get_task(json.loads(key)[0], **options)
        by_key[key] = (other, sample_round(other.dev(), 0, config.seed, 0,
                                           config.num_problems)[1])
    reward = HarnessReward(config, task, problems, Path(config.log_dir or out / "log"), by_key)
    tokenizer = load_tokenizer(config.model)
    model = load_model(config.model, tokenizer, config.seed)
    log = MetricsLog(out)
    (out / "config.json").write_text(json.dumps({**config.model_dump(), "logs": list(map(
        str, run_dirs))}, indent=1))
    trainer = trainer_class(
        model=model, reward_funcs=[reward], args=grpo_args(config, out, progress),
        train_dataset=Dataset.from_list(prompts.rows), processing_class=tokenizer,
        peft_config=lora_config(config.lora_r, config.lora_alpha, config.lora_dropout)
        if config.lora else None,
        callbacks=[metrics_callback(log)],
    )
    try:
        trainer.train()
    finally:  # the reward ran on TRL's own loop: leave nothing pending there
        if (loop := getattr(trainer, "async_loop", None)) is not None:
            cancel_tasks(loop)
    png = log.plot(f"online GRPO: {config.model}")
    ckpt = (save_checkpoint(trainer.model, tokenizer, out / "checkpoint")
            if config.save else None)
    return TrainResult(out, log.path, png, ckpt, log.summary())
