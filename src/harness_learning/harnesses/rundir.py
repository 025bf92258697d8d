"""`RunDir`: the layout of a run directory, and the one way code opens a run.

A run directory holds everything a run needs to resume and everything it produced:

    config.json            the run's settings (`AdaptConfig`), written once by `adapt`
    log.sqlite             the execution log (the `LogStore`; its file name is the backend's)
    store.json             instead of log.sqlite, where a PostgreSQL log is (URL without a
                           password, and the run's schema); config.json's `store` names it too
    checkpoints.sqlite     the adapter's LangGraph checkpoints (a PostgreSQL run: in its schema)
    solver_cache.sqlite    the Solver's response cache (unless the Solver spec names another)
    scores.png             `eval`'s plot of selection and test score per round
    adopted.diff           `eval`'s diff of every adopted version
    inputs/                copies of the run's outside inputs: a data file, the start harness,
                           the .py files of a metric, task class or tools (graphs.adapter.inputs)

File names are spelled here alone; modules ask a `RunDir` for paths. The config is read and
written as JSON text here; its schema (`AdaptConfig`) lives with the adapter, a layer above.
See docs/ARCHITECTURE.md, "The run directory".
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from harness_learning.harnesses.store.base import LogStore, LogStoreError
from harness_learning.harnesses.store.pgurl import SQLITE, check_url, is_postgres, public_url
from harness_learning.harnesses.store.postgres import POINTER as STORE_POINTER
from harness_learning.harnesses.store.postgres import PostgresLogStore
from harness_learning.harnesses.store.sqlite import FILENAME as LOG_FILENAME
from harness_learning.harnesses.store.sqlite import SQLiteLogStore


class NotARunDirError(FileNotFoundError):
    """A path given as a run directory holds no run (no config.json)."""


class RunDir:
    """Paths of one run directory. Building a `RunDir` touches nothing on disk; `open` checks
    that a run is there, `create` makes the folder."""

    CONFIG = "config.json"
    LOG = LOG_FILENAME
    STORE = STORE_POINTER
    CHECKPOINTS = "checkpoints.sqlite"
    SOLVER_CACHE = "solver_cache.sqlite"
    PLOT = "scores.png"
    DIFFS = "adopted.diff"
    INPUTS = "inputs"

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"RunDir({str(self.path)!r})"

    def __fspath__(self) -> str:
        return str(self.path)

    @classmethod
    def open(cls, path: str | Path) -> RunDir:
        """An existing run: raises `NotARunDirError`, naming config.json, if there is none."""
        run = cls(path)
        if not run.config.is_file():
            raise NotARunDirError(f"{run.config} not found: {run.path} is not a run directory "
                                  "(start one with `harness-learn adapt`)")
        return run

    @classmethod
    def create(cls, path: str | Path) -> RunDir:
        run = cls(path)
        run.path.mkdir(parents=True, exist_ok=True)
        return run

    # -- the files ---------------------------------------------------------------------------
    @property
    def config(self) -> Path:
        return self.path / self.CONFIG

    @property
    def log(self) -> Path:
        return self.path / self.LOG

    @property
    def store_pointer(self) -> Path:
        return self.path / self.STORE

    @property
    def checkpoints(self) -> Path:
        return self.path / self.CHECKPOINTS

    @property
    def solver_cache(self) -> Path:
        return self.path / self.SOLVER_CACHE

    @property
    def inputs(self) -> Path:
        """Copies of the run's outside inputs (data file, start harness, user code)."""
        return self.path / self.INPUTS

    @property
    def plot(self) -> Path:
        return self.path / self.PLOT

    @property
    def diffs(self) -> Path:
        return self.path / self.DIFFS

    def is_run(self) -> bool:
        """A run was started here (its config is written)."""
        return self.config.is_file()

    def has_log(self) -> bool:
        """An execution log was made here: the SQLite file, or the record of a PostgreSQL one."""
        return self.log.is_file() or self.store_pointer.is_file()

    def store_url(self) -> str:
        """Where the run's log is: config.json's `store`, else store.json's URL, else ""
        (SQLite in the run directory). Never holds a password."""
        if self.config.is_file():
            try:  # a damaged config is `resume`'s to report; store.json still names the log
                url = self.read_config().get("store")
            except ValueError:
                url = None
            if url:
                return str(url)
        if self.store_pointer.is_file():
            try:
                return str(json.loads(self.store_pointer.read_text(encoding="utf-8"))["url"])
            except (ValueError, KeyError, TypeError, RecursionError) as exc:
                raise LogStoreError(f"{self.store_pointer}: unreadable store record: {exc}") from exc
        return ""

    # -- contents ----------------------------------------------------------------------------
    def read_config(self) -> dict[str, Any]:
        """The stored config as a dict; errors name the file (JSON errors alone do not)."""
        if not self.config.is_file():
            raise NotARunDirError(f"{self.config} not found: {self.path} is not a run directory "
                                  "(start one with `harness-learn adapt`)")
        try:
            data = json.loads(self.config.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:  # nested past the stack
            raise ValueError(f"{self.config}: unreadable run config: "
                             f"{str(exc)[:200] or type(exc).__name__}") from exc
        if not isinstance(data, dict):
            raise ValueError(f"{self.config}: unreadable run config: not a JSON object")
        return data

    def write_config(self, data: dict[str, Any]) -> None:
        """Write the config whole or not at all (a kill mid-write leaves no half file)."""
        self.path.mkdir(parents=True, exist_ok=True)
        tmp = self.config.with_name(self.CONFIG + ".tmp")
        tmp.write_text(json.dumps(data, indent=2, sort_keys=True), encoding="utf-8")
        os.replace(tmp, self.config)

    def open_store(self, store_url: str | None = None, *, read_only: bool = False) -> LogStore:
        """The run's execution log (created if absent, unless `read_only`); close it, or use
        it in `with`. `store_url` overrides the store the run names (see `open_log_store`)."""
        return open_log_store(self.path, store_url, read_only=read_only)


def open_log_store(run_dir: str | Path, store_url: str | None = None, *,
                   read_only: bool = False) -> LogStore:
    """The one place a store is chosen by URL. `store_url` (a command's `--store`) wins, else
    what the run directory names (`RunDir.store_url`); empty or `sqlite` is log.sqlite in the
    run directory, postgresql://... a PostgreSQL database. A run whose log is already in one
    backend is refused the other, rather than starting an empty log beside the real one.
    `read_only` is for looking: a SQLite log is never written (an older schema is migrated in
    memory, see `SQLiteLogStore`); a PostgreSQL log is a shared server's, opened as usual."""
    run = RunDir(run_dir)
    url = check_url(store_url or run.store_url())
    if is_postgres(url):
        if run.log.is_file():
            raise LogStoreError(f"{run.path} keeps its log in {run.log}, not in "
                                f"{public_url(url)}: drop --store, or use a new run directory")
        return PostgresLogStore(run.path, url)
    if run.store_pointer.is_file():
        raise LogStoreError(f"{run.path} keeps its log in PostgreSQL ({run.store_pointer}), not "
                            f"in {SQLITE}: drop --store, or use a new run directory")
    return SQLiteLogStore(run.path, read_only=read_only)
