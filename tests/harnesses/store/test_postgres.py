"""What the PostgreSQL backend does beyond the conformance suite: its schema record (a newer
version refused, an older one migrated), the same columns as SQLite, no password ever written,
one line for an unreachable server, and the one place a store is chosen by URL. Against the
real throwaway server of tests/conftest.py (`postgres_url`)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from urllib.parse import urlsplit

import pytest
from cli_run import free_port
from pg_server import PASSWORD, PASSWORD_ROLE

from harness_learning.harnesses.results import ProblemResult
from harness_learning.harnesses.rundir import RunDir, open_log_store
from harness_learning.harnesses.store import (
    Evaluation,
    LogStoreError,
    Outcome,
    SchemaVersionError,
    SQLiteLogStore,
    StoreUnreachable,
    new_proposal,
    pgurl,
)
from harness_learning.harnesses.store.postgres import PostgresLogStore
from harness_learning.harnesses.store.schema import MIGRATIONS, SCHEMA_VERSION, TABLES


def _sql(store: PostgresLogStore, statement: str) -> list[dict]:
    with store._tx() as cur:
        cur.execute(statement)
        return cur.fetchall() if cur.description else []


def test_a_newer_schema_is_refused_in_one_line_and_left_untouched(postgres_url, tmp_path):
    store = PostgresLogStore(tmp_path / "run", postgres_url)
    store.put_version("seed\n")
    _sql(store, "UPDATE hl_schema SET value='99' WHERE key='version'")
    store.close()
    with pytest.raises(SchemaVersionError) as refused:
        PostgresLogStore(tmp_path / "run", postgres_url)
    message = str(refused.value)
    assert "\n" not in message and "schema version 99" in message
    assert f"reads version {SCHEMA_VERSION}" in message and "postgres@127.0.0.1" in message
    with pytest.raises(SchemaVersionError):  # refused again: nothing was rewritten
        PostgresLogStore(tmp_path / "run", postgres_url)


V3_VERDICT = ("parsed_edit TEXT", "parsed BIGINT NOT NULL DEFAULT 0",
              "applied BIGINT NOT NULL DEFAULT 0", "valid BIGINT NOT NULL DEFAULT 0",
              "invalid_kind TEXT", "invalid_reason TEXT", "completed_fraction DOUBLE PRECISION",
              "selection_score DOUBLE PRECISION", "reward DOUBLE PRECISION",
              "reward_parts TEXT NOT NULL DEFAULT '{}'")
"""The verdict's columns of a version-3 proposals table, which version 4 made one `outcome`."""


def test_an_older_schema_is_migrated_and_keeps_its_rows(postgres_url, tmp_path):
    """A version-1 log (its proposals' verdict flat, a kind only in the reason text) is
    brought to this version: its rows kept, each judged proposal's verdict an `Outcome` with
    its kind read out of the reason, a draft none."""
    from harness_learning.harnesses.llm.completion import Completion

    store = PostgresLogStore(tmp_path / "run", postgres_url)
    store.put_version("seed\n")
    done = Completion("x", 3, 4, 0.1, "stop", False, "m")
    for index in (0, 1):
        store.put_proposal(new_proposal(1, index, "p", done, "whole_program"))
    _sql(store, "ALTER TABLE proposals DROP COLUMN outcome")
    for column in V3_VERDICT:  # back to version 3
        _sql(store, f"ALTER TABLE proposals ADD COLUMN {column}")
    _sql(store, "UPDATE proposals SET invalid_reason='unmatched_search: not in the source', "
                "parsed=1, reward=0.05, reward_parts='{\"parse_bonus\": 0.05}' WHERE id='r1-c0'")
    added = [s for s in MIGRATIONS[1] + MIGRATIONS[2] if isinstance(s, str)
             and s.startswith("ALTER TABLE")]
    for statement in added:  # back to version 1: drop what 2 and 3 added
        table, column = statement.split()[2], statement.split()[5]
        _sql(store, f"ALTER TABLE {table} DROP COLUMN {column}")
    _sql(store, "UPDATE hl_schema SET value='1' WHERE key='version'")
    store.close()
    again = PostgresLogStore(tmp_path / "run", postgres_url)
    assert _sql(again, "SELECT value FROM hl_schema") == [{"value": str(SCHEMA_VERSION)}]
    assert [v.source for v in again.iter_versions()] == ["seed\n"]
    judged = again.get_proposal("r1-c0")
    assert judged.outcome == Outcome(
        parsed=True, applied=False, invalid_kind="unmatched_search",  # read out once
        invalid_reason="unmatched_search: not in the source", reward=0.05,
        reward_parts={"parse_bonus": 0.05})
    assert again.get_proposal("r1-c1").outcome is None and judged.completion == "x"
    again.put_evaluations([Evaluation("run", "s", "selection", 1,
                                      ProblemResult("p", "a", 1.0, feedback="close"))])
    assert next(again.iter_evaluations()).result.feedback == "close"
    again.close()


def test_the_tables_have_the_sqlite_columns(postgres_url, tmp_path):
    store = PostgresLogStore(tmp_path / "pg", postgres_url)
    conn = sqlite3.connect(SQLiteLogStore(tmp_path / "lite").path)
    for table in TABLES:
        lite = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
        pg = [r["column_name"] for r in _sql(store, (
            "SELECT column_name FROM information_schema.columns WHERE table_schema="
            f"'{store.schema}' AND table_name='{table}' ORDER BY ordinal_position"))]
        assert [c for c in pg if c != "_pos"] == lite, table
    store.close()


def test_text_postgres_cannot_hold_is_stored_not_refused(postgres_url, tmp_path):
    store = PostgresLogStore(tmp_path / "run", postgres_url)
    store.put_evaluations([Evaluation("run", "s", "selection", 1,
                                      ProblemResult("p", "nul\x00here", 1.0))])
    assert next(store.iter_evaluations()).result.answer == "nul\ufffdhere"
    store.close()


def test_a_connection_lost_between_calls_is_made_again_and_loses_nothing(postgres_url,
                                                                       tmp_path):
    store = PostgresLogStore(tmp_path / "run", postgres_url)
    seed = store.put_version("seed\n")
    (pid,) = _sql(store, "SELECT pg_backend_pid() AS pid")
    with PostgresLogStore(tmp_path / "other", postgres_url) as admin:  # as a server restart
        assert _sql(admin, f"SELECT pg_terminate_backend({pid['pid']}) AS ok") == [{"ok": True}]
    child = store.put_version("child\n", parent=seed)
    assert [v.sha for v in store.iter_versions()] == [seed, child]
    assert _sql(store, "SELECT pg_backend_pid() AS pid") != [pid]
    store.close()


def _password_url(postgres_url: str, with_password: bool) -> str:
    netloc = urlsplit(postgres_url).netloc.split("@", 1)[1]
    secret = f":{PASSWORD}" if with_password else ""
    return f"postgresql://{PASSWORD_ROLE}{secret}@{netloc}/postgres"


def test_a_password_is_used_never_written_and_only_the_urls_is_sent(postgres_url, tmp_path,
                                                                     monkeypatch):
    """Only a given URL is connected to, and only with the credential it carries or names:
    PGPASSWORD and the password file libpq would read (PGPASSFILE, ~/.pgpass) both hold the
    right password here, and neither is sent."""
    pgpass = tmp_path / "pgpass"
    pgpass.write_text(f"127.0.0.1:*:*:{PASSWORD_ROLE}:{PASSWORD}\n")
    pgpass.chmod(0o600)
    monkeypatch.setenv("PGPASSWORD", PASSWORD)
    monkeypatch.setenv("PGPASSFILE", str(pgpass))
    run, safe = tmp_path / "run", _password_url(postgres_url, False)
    with open_log_store(run, pgurl.give(_password_url(postgres_url, True))) as store:
        store.init_run({"k": 1})
    written = "".join(p.read_text() for p in run.iterdir())
    assert PASSWORD not in written
    assert json.loads((run / RunDir.STORE).read_text())["url"] == safe

    pgurl._PASSWORDS.pop(safe)  # as a later process: nothing remembered, nothing given
    pgurl._GIVEN.discard(safe)
    with pytest.raises(pgurl.StoreNotGiven) as refused:  # store.json alone names it
        open_log_store(run)
    assert str(refused.value).startswith(f"{run / RunDir.STORE} names the PostgreSQL log "
                                         f"store {safe}, which was not given")
    with pytest.raises(StoreUnreachable, match="no password supplied"):
        open_log_store(run, pgurl.give(safe))  # given without a password: none is sent
    with open_log_store(run, pgurl.give(f"{safe}?passfile={pgpass}")) as store:  # asked for
        assert store.get_run().config == {"k": 1}
    with open_log_store(run, pgurl.give(_password_url(postgres_url, True))) as store:
        assert store.get_run().config == {"k": 1}


def test_a_stored_url_is_connected_to_only_as_the_user_gave_it():
    given = pgurl.give("postgresql://u:pw@h9:5/db?passfile=/p")
    assert given == "postgresql://u@h9:5/db?passfile=/p"
    assert pgurl.given_url("postgresql://u@h9:5/db", "config.json") == given  # its options
    assert pgurl.connect_params(given) == {"password": "pw"}
    for other in ("postgresql://u@h9:5/db2", "postgresql://v@h9:5/db", "postgresql://u@h8:5/db"):
        with pytest.raises(pgurl.StoreNotGiven, match=f"^config.json names .*{other}"):
            pgurl.given_url(other, "config.json")
    assert pgurl.connect_params("postgresql://u@h7/db") == {"password": "",
                                                            "passfile": pgurl.NO_PASSFILE}
    assert pgurl.connect_params("postgresql://u@h7/db?passfile=/p") == {"password": ""}


def test_a_store_record_naming_no_plain_schema_is_refused(tmp_path):
    run = RunDir.create(tmp_path / "run")
    run.store_pointer.write_text(json.dumps({"url": "postgresql://u@h6/db",
                                             "schema": "x -c log_statement=all"}))
    with pytest.raises(LogStoreError, match="unreadable store record: schema 'x -c log_st"):
        PostgresLogStore(run.path)


def test_the_password_is_cut_from_either_place_in_a_url():
    assert pgurl.split_password("postgresql://u:p%40ss@h:5432/db?sslmode=require") == (
        "postgresql://u@h:5432/db?sslmode=require", "p@ss")
    assert pgurl.split_password("postgres://h/db?password=x&application_name=a") == (
        "postgres://h/db?application_name=a", "x")
    assert pgurl.split_password("postgresql://u@h/db") == ("postgresql://u@h/db", None)


def test_an_unreachable_server_is_one_line_naming_the_url(tmp_path):
    port = free_port()
    with pytest.raises(StoreUnreachable) as failed:
        open_log_store(tmp_path / "run",
                       pgurl.give(f"postgresql://someone:pa55@127.0.0.1:{port}/db"))
    message = str(failed.value)
    assert "\n" not in message and "pa55" not in message
    assert message.startswith(f"the log store postgresql://someone@127.0.0.1:{port}/db failed: ")
    assert not (tmp_path / "run" / RunDir.STORE).exists()  # no record of a log never made


def test_the_store_is_chosen_in_one_place_and_never_switched(postgres_url, tmp_path):
    lite = tmp_path / "lite"
    with open_log_store(lite) as store:
        assert isinstance(store, SQLiteLogStore)
    with pytest.raises(LogStoreError, match="keeps its log in"):
        open_log_store(lite, postgres_url)
    pg = tmp_path / "pg"
    RunDir(pg).write_config({"store": postgres_url})
    with open_log_store(pg) as store:
        assert isinstance(store, PostgresLogStore)
        store.init_run({})
    with RunDir(pg).open_store() as again:  # config.json names it, and it was given
        assert isinstance(again, PostgresLogStore) and again.get_run() is not None
    with pytest.raises(LogStoreError, match="keeps its log in PostgreSQL"):
        open_log_store(pg, "sqlite")
    with pytest.raises(ValueError, match="unknown log store"):
        open_log_store(tmp_path / "other", "mysql://h/db")


def test_without_psycopg_the_error_names_the_extra(tmp_path):
    code = ("import sys; sys.modules['psycopg'] = None\n"
            "from harness_learning.harnesses.rundir import open_log_store\n"
            "from harness_learning.harnesses.store.pgurl import give\n"
            f"open_log_store({str(tmp_path)!r}, give('postgresql://h/db'))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode != 0
    assert "pip install 'harness-learning[postgres]'" in done.stderr.splitlines()[-1]

