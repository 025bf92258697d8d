"""A run whose execution log is in PostgreSQL, through the installed command line: `adapt
--store URL` (the URL carries a password) logs there, config.json names the store without the
password, `show` reads it only with `--store` (config.json alone is refused, and PGPASSWORD
is never sent: only the password the URL carries), and an unreachable database is one error
line with exit code 4, losing nothing logged. The adapter's checkpoints are in the same
database, and a second process driving the run is refused while one holds it."""

from __future__ import annotations

import asyncio
import json
import os
import re
from urllib.parse import urlsplit

import sim_adapt
from cli_run import cli, error_line, free_port
from pg_server import PASSWORD, PASSWORD_ROLE

from harness_learning.graphs.adapter.checkpoints import open_checkpointer
from harness_learning.harnesses.rundir import RunDir, open_log_store
from harness_learning.harnesses.store import RunLocked
from harness_learning.harnesses.store.pgurl import give


def test_show_reads_a_run_logged_in_postgres(sim_url, postgres_url, tmp_path):
    host = urlsplit(postgres_url).netloc.split("@", 1)[1]
    url = f"postgresql://{PASSWORD_ROLE}@{host}/postgres"
    run_dir = tmp_path / "run"
    env = {k: v for k, v in os.environ.items() if k != "PGPASSWORD"}
    env["PGPASSFILE"] = str(tmp_path / "no-pgpass")
    adapted = cli(*sim_adapt.adapt_args(sim_url, str(run_dir), "--store",
                                        url.replace("@", f":{PASSWORD}@", 1)), env=env)
    assert adapted.returncode == 0, adapted.stdout[-2000:] + adapted.stderr[-2000:]
    assert not RunDir(run_dir).log.exists()  # no SQLite log beside the PostgreSQL one
    assert not RunDir(run_dir).checkpoints.exists()  # the checkpoints are in PostgreSQL too
    assert json.loads(RunDir(run_dir).config.read_text())["store"] == url
    assert not any(PASSWORD in p.read_text(errors="replace") for p in run_dir.rglob("*.json"))

    with_env = {**env, "PGPASSWORD": PASSWORD}
    named = cli("show", run_dir, env=with_env)  # config.json alone: not connected to
    assert named.returncode == 2, named.stderr[-2000:]
    assert error_line(named).startswith(f"harness-learn: error: {RunDir(run_dir).config} names "
                                        f"the PostgreSQL log store {url}, which was not given")
    unsent = cli("show", run_dir, "--store", url, env=with_env)  # PGPASSWORD stays unsent
    assert unsent.returncode == 4 and "no password supplied" in error_line(unsent), \
        unsent.stderr[-2000:]
    secret_url = url.replace("@", f":{PASSWORD}@", 1)
    shown = cli("show", run_dir, "--store", secret_url, env=env)
    assert shown.returncode == 0, shown.stderr[-2000:]
    # which of round 1's two samples gets the good edit depends on which reaches the
    # simulated Proposer first (sim_adapt.ProposerRule): one of them is adopted
    assert f"· log {url}" in shown.stdout and re.search(r"r1-c[01] adopted", shown.stdout), \
        shown.stdout

    dead = f"postgresql://{PASSWORD_ROLE}@127.0.0.1:{free_port()}/postgres"
    failed = cli("show", run_dir, "--store", dead, env=env)
    line = error_line(failed)
    assert failed.returncode == 4, failed.stderr[-2000:]
    assert line.startswith(f"harness-learn: error: the log store {dead} failed: "), line
    assert "Traceback" not in failed.stderr
    again = cli("show", run_dir, "--store", secret_url, env=env)  # nothing was lost
    assert again.returncode == 0 and again.stdout == shown.stdout
    exported = cli("export", run_dir, "--out", tmp_path / "h.py", "--store", secret_url, env=env)
    assert exported.returncode == 0 and "def build_graph" in (tmp_path / "h.py").read_text(), \
        exported.stderr[-2000:]
    ran = cli("run", "--task", "rg:basic_arithmetic", "--harness", run_dir, "--n", "1", "--model",
              f"openai/sim@{sim_url}", "--store", secret_url, env=env)
    assert ran.returncode == 0, ran.stderr[-2000:]

    locked = asyncio.run(_resume_while_locked(run_dir, secret_url, env))
    assert locked.returncode == 2, locked.stderr[-2000:]
    assert "another adapter process is running" in error_line(locked), error_line(locked)


async def _resume_while_locked(run_dir, url, env):
    """`resume` run while this process drives the run; then the lock is free again."""
    store = open_log_store(run_dir, give(url))
    try:
        async with open_checkpointer(RunDir(run_dir), store, exclusive=True) as saver:
            assert [c async for c in saver.alist(None, limit=1)]  # adapt's checkpoints
            try:
                async with open_checkpointer(RunDir(run_dir), store, exclusive=True):
                    raise AssertionError("a second holder got the run's lock")
            except RunLocked:
                pass
            result = await asyncio.to_thread(cli, "resume", run_dir, "--store", url, env=env)
        async with open_checkpointer(RunDir(run_dir), store, exclusive=True):
            pass  # released with its connection
        return result
    finally:
        store.close()
