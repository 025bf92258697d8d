"""Tasks by name: `rg:<reasoning-gym dataset>`, `hotpotqa`, `musique`, `2wiki`; a data file of
your own (`.jsonl`, `.json`, `.csv` or a saved `datasets` directory, see `evals.custom`);
`module:Class` (or `file.py:Class`) for any class implementing `Task`; and names that
installed packages register in the entry-point group `harness_learning.tasks`.

    get_task("rg:leg_counting", n_dev=25, n_test=75, seed=0)
    get_task("musique", path="musique_ans_v1.0_dev.jsonl", index_dir="runs/index/musique")

QA options: `path` (the dataset file; default: the real sample in the data folder, see
`evals.samples`), `index_dir` (opened with `retrieval.open_index`, backend `index_backend`)
or `retriever` (any `Retriever`), `aliases` (2Wiki's `id_aliases.json`), `n_dev`, `n_test`,
`seed`.
Data-file options: `metric` (see `evals.custom.metrics`), `describe`, `n_dev`, `n_test`, `seed`,
`track`. A `module:Class` or entry-point task gets the options as keyword arguments.
Reasoning options: `n_dev`, `n_test`, `seed`, `partial_credit`, `config` (the dataset's own
settings, e.g. difficulty), `split_secret` (seeds the splits secretly; an adaptation run
draws one, see `graphs.adapter.run.prepare`).
"""

from __future__ import annotations

from typing import Any

from harness_learning.evals.task import Task

QA_TASKS = ("hotpotqa", "musique", "2wiki")
RG_PREFIX = "rg:"
ENTRY_POINT_GROUP = "harness_learning.tasks"
DATA_OPTIONS = {"metric", "describe", "n_dev", "n_test", "seed", "track"}


def known_task_names() -> list[str]:
    """Every name `get_task` accepts."""
    from harness_learning.evals.reasoning_tasks import known_tasks

    return [*QA_TASKS, *sorted(_entry_points()), *(RG_PREFIX + n for n in known_tasks())]


def track_of(name: str, options: dict[str, Any] | None = None) -> str | None:
    """The track ("reasoning" or "qa") of the task called `name`, without loading it, where
    the name says it: the adapter fills its per-track defaults before anything else is built.
    None for a task of one's own (a data file without a `track` option says "reasoning"; a
    class or entry point says it only once built). Raises for a name `get_task` refuses."""
    if name.startswith(RG_PREFIX):
        from harness_learning.evals.reasoning_tasks import known_tasks

        if name[len(RG_PREFIX):] in known_tasks():
            return "reasoning"
        raise _unknown(name)
    if name in QA_TASKS:
        return "qa"
    return None


def get_task(name: str, **options: Any) -> Task:
    """The task called `name`, built with `options` (see the module docstring)."""
    if name.startswith(RG_PREFIX):
        from harness_learning.evals.reasoning_tasks import ReasoningTask, known_tasks

        task = name[len(RG_PREFIX) :]
        if task not in known_tasks():
            raise _unknown(name)
        _check(name, options, {"n_dev", "n_test", "seed", "partial_credit", "config",
                               "split_secret"})
        return ReasoningTask(task, **options)
    if name in QA_TASKS:
        from harness_learning.evals.qa.task import QATask
        from harness_learning.evals.samples import SAMPLE_FILES, data_dir

        _check(name, options, {"path", "index_dir", "index_backend", "retriever", "aliases",
                               "n_dev", "n_test", "seed", "score_by"})
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
    return _user_task(name, options)


def _user_task(name: str, options: dict[str, Any]) -> Task:
    """A registered entry point, a data file, or a `module:Class` reference."""
    from harness_learning.evals.custom.datafile import is_data_path
    from harness_learning.evals.custom.imports import is_reference, resolve

    registered = _entry_points()
    if name in registered:
        return _instance(registered[name].load(), name, options)
    if is_data_path(name):
        from harness_learning.evals.custom.task import DataTask

        _check(name, options, DATA_OPTIONS)
        return DataTask(name, **options)
    if is_reference(name):
        return _instance(resolve(name, "task"), name, options)
    raise _unknown(name)


def _instance(factory: object, name: str, options: dict[str, Any]) -> Task:
    task = factory(**options) if callable(factory) else factory
    if not isinstance(task, Task):
        missing = [a for a in ("name", "track", "description", "seed", "dev", "test", "score",
                               "retriever") if not hasattr(task, a)]
        raise TypeError(f"task {name!r} gave a {type(task).__name__}, which does not implement "
                        f"the Task protocol (missing: {', '.join(missing)})")
    return task


def _entry_points() -> dict[str, Any]:
    from importlib.metadata import entry_points

    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def _check(name: str, options: dict, allowed: set[str]) -> None:
    extra = sorted(set(options) - allowed)
    if extra:
        raise TypeError(
            f"task {name!r} got unknown option(s) {', '.join(extra)}; "
            f"allowed: {', '.join(sorted(allowed))}"
        )


def _unknown(name: str) -> ValueError:
    from harness_learning.evals.reasoning_tasks import known_tasks

    rg = ", ".join(RG_PREFIX + n for n in known_tasks())
    return ValueError(f"unknown task {name!r}; known: {', '.join(QA_TASKS)}, a data file "
                      "(.jsonl, .json, .csv or a saved `datasets` directory), module:Class, "
                      f"a name registered under {ENTRY_POINT_GROUP}, and rg:<name> for a "
                      f"reasoning-gym dataset: {rg}")
