"""Tasks by name: `rg:<reasoning-gym dataset>`, `hotpotqa`, `musique`, `2wiki`.

    get_task("rg:leg_counting", n_dev=25, n_test=75, seed=0)
    get_task("musique", path="musique_ans_v1.0_dev.jsonl", index_dir="runs/index/musique")

QA options: `path` (the dataset file; default: the real sample in the data folder, see
`evals.settings`), `index_dir` (opened with `retrieval.open_index`, backend `index_backend`)
or `retriever` (any `Retriever`), `aliases` (2Wiki's `id_aliases.json`), `n_dev`, `n_test`,
`seed`.
Reasoning options: `n_dev`, `n_test`, `seed`, `partial_credit`, `config` (the dataset's own
settings, e.g. difficulty).
"""

from __future__ import annotations

from typing import Any

from harness_learning.evals.task import Task

QA_TASKS = ("hotpotqa", "musique", "2wiki")
RG_PREFIX = "rg:"


def known_task_names() -> list[str]:
    """Every name `get_task` accepts."""
    from harness_learning.evals.reasoning import known_tasks

    return [*QA_TASKS, *(RG_PREFIX + n for n in known_tasks())]


def get_task(name: str, **options: Any) -> Task:
    """The task called `name`, built with `options` (see the module docstring)."""
    if name.startswith(RG_PREFIX):
        from harness_learning.evals.reasoning import ReasoningTask, known_tasks

        task = name[len(RG_PREFIX) :]
        if task not in known_tasks():
            raise _unknown(name)
        _check(name, options, {"n_dev", "n_test", "seed", "partial_credit", "config"})
        return ReasoningTask(task, **options)
    if name in QA_TASKS:
        from harness_learning.evals.qa.task import QATask
        from harness_learning.evals.settings import SAMPLE_FILES, data_dir

        _check(name, options, {"path", "index_dir", "index_backend", "retriever", "aliases",
                               "n_dev", "n_test", "seed"})
        path = options.pop("path", None)
        if path is None:
            path = data_dir() / SAMPLE_FILES[name]
            if not path.is_file():
                raise FileNotFoundError(
                    f"task {name!r}: no `path` given and the bundled sample {path} is absent; "
                    f"pass path=<the dataset file> (or set HARNESS_LEARNING_DATA)"
                )
        if name != "2wiki" and options.get("aliases") is not None:
            raise ValueError(f"task {name!r}: 'aliases' applies to 2wiki only")
        if options.get("aliases") is None:
            options.pop("aliases", None)
        return QATask(name, path, **options)
    raise _unknown(name)


def _check(name: str, options: dict, allowed: set[str]) -> None:
    extra = sorted(set(options) - allowed)
    if extra:
        raise TypeError(
            f"task {name!r} got unknown option(s) {', '.join(extra)}; "
            f"allowed: {', '.join(sorted(allowed))}"
        )


def _unknown(name: str) -> ValueError:
    from harness_learning.evals.reasoning import known_tasks

    rg = ", ".join(RG_PREFIX + n for n in known_tasks())
    return ValueError(f"unknown task {name!r}; known: {', '.join(QA_TASKS)}, and rg:<name> for a "
                      f"reasoning-gym dataset: {rg}")
