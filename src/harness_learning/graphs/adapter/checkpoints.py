"""Where the adapter's LangGraph checkpoints are kept: beside the run's log.

A run logged in SQLite checkpoints into checkpoints.sqlite in its run directory; a run logged
in PostgreSQL checkpoints into the same database and the run's own schema (LangGraph's
`AsyncPostgresSaver`), so a run directory holding only config.json and store.json can be
resumed on another machine. There, an adapter process also holds a per-run advisory lock for
as long as it runs: a second process on the same run is refused with one line instead of
interleaving its rounds with the first's. The server frees the lock when the holder's
connection ends, so a killed process never leaves its run locked. Either saver reads
checkpoints with `checkpoint_serde.CheckpointSerializer`: data of the adapter's own types only,
never a callable a crafted checkpoint names.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from harness_learning.graphs.adapter.checkpoint_serde import CheckpointSerializer
from harness_learning.harnesses.rundir import RunDir
from harness_learning.harnesses.store import LogStore, RunLocked
from harness_learning.harnesses.store.pgurl import connect_params, is_postgres, unreachable
from harness_learning.harnesses.store.postgres import PostgresLogStore, psycopg_module

LOCK_CLASS = 0x484C  # "HL": the advisory locks' first key, apart from other applications'


def has_checkpoints(run: RunDir, store_url: str) -> bool:
    """Whether the run may have checkpoints (False only where none can exist: an SQLite run
    without its file), asked without opening anything."""
    return is_postgres(store_url or run.store_url()) or run.checkpoints.exists()


@asynccontextmanager
async def open_checkpointer(run: RunDir, store: LogStore, *, exclusive: bool = False
                            ) -> AsyncIterator[Any]:
    """The run's checkpoint saver, beside its log. `exclusive`: this process drives the run
    (adapt, resume, approve, rollback); in PostgreSQL a second such process is refused
    (`RunLocked`). SQLite runs are not locked: their file is on one machine."""
    if isinstance(store, PostgresLogStore):
        async with _postgres_saver(store, exclusive) as saver:
            yield saver
        return
    import aiosqlite
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    async with aiosqlite.connect(str(run.checkpoints)) as conn:  # as from_conn_string does
        yield AsyncSqliteSaver(conn, serde=CheckpointSerializer(str(run.checkpoints)))


def conninfo(store: PostgresLogStore) -> str:
    """The store's connection string with its schema as the search path, and only the
    credentials the user gave (`pgurl.connect_params`): the checkpoint tables go in the run's
    schema. The store was opened first, so its URL was given."""
    from psycopg.conninfo import make_conninfo

    return make_conninfo(store.url, options=f"-c search_path={store.schema}",
                         application_name="harness-learning-checkpoints",
                         **connect_params(store.url))


@asynccontextmanager
async def _postgres_saver(store: PostgresLogStore, exclusive: bool) -> AsyncIterator[Any]:
    psycopg = psycopg_module()
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from psycopg.rows import dict_row

    try:  # the settings LangGraph's from_conn_string uses
        conn = await psycopg.AsyncConnection.connect(
            conninfo(store), autocommit=True, prepare_threshold=0, row_factory=dict_row)
    except psycopg.Error as exc:
        raise unreachable(store.url, exc) from exc
    async with conn:
        if exclusive:
            row = await (await conn.execute("SELECT pg_try_advisory_lock(%s, hashtext(%s)) AS ok",
                                            (LOCK_CLASS, store.schema))).fetchone()
            if not row["ok"]:
                raise RunLocked(f"another adapter process is running {store.run_dir} (its log "
                                f"{store.where} is locked); one process drives a run at a time")
        saver = AsyncPostgresSaver(conn, serde=CheckpointSerializer(
            f"the checkpoints in {store.where}"))
        await saver.setup()
        yield saver
