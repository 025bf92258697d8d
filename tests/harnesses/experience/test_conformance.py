"""One conformance suite for every experience-library backend (`harnesses.experience.library`):
a directory (SQLite) and a PostgreSQL database (a fresh database per test on the session's
throwaway server, tests/conftest.py's `postgres_url`). Each must: round-trip a real run's
changes through `harness-learn experience add|list|show|prune|export|import`; merge outcomes by
key, negative ones kept; lose nothing when two processes merge at once; refuse a library from
a newer schema in one line, leaving it as it was; skip an unreadable entry and never overwrite
it. A location no backend can use is one line with a hint, its password never shown.

A new backend adds itself to `BACKENDS` (how to make a fresh library, and how to write a raw
row behind the library's back) and must pass every test here unchanged."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import sqlite3
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import pytest
from cli_run import free_port
from experience_records import entry, outcome
from scripted_sums import ScriptedModel, SumTask, solver_rule

from harness_learning.harnesses.experience import (
    SCHEMA_VERSION,
    Entry,
    Library,
    LibraryError,
    give_location,
)
from harness_learning.harnesses.experience.entry import operator_id
from harness_learning.harnesses.experience.library import FILE


@dataclass
class Backend:
    """A backend as the suite drives it."""

    new: Callable[[], str]
    """A fresh library's location (nothing made there yet)."""
    raw: Callable[[str, str, tuple], None]
    """(location, SQL with {meta}/{entries} and ? placeholders, params): a write behind the
    library's back, as damage or a newer version would make."""


def sqlite_backend(request: pytest.FixtureRequest) -> Backend:
    root = request.getfixturevalue("tmp_path")

    def raw(location: str, sql: str, params: tuple) -> None:
        with sqlite3.connect(Path(location) / FILE) as conn:
            conn.execute(sql.format(meta="meta", entries="entries"), params)

    return Backend(lambda: str(root / f"lib-{uuid.uuid4().hex[:8]}"), raw)


def postgres_backend(request: pytest.FixtureRequest) -> Backend:
    import psycopg

    admin = request.getfixturevalue("postgres_url")

    def new() -> str:
        name = f"hl_exp_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return give_location(f"{admin.rsplit('/', 1)[0]}/{name}")  # the test's own word

    def raw(location: str, sql: str, params: tuple) -> None:
        with psycopg.connect(location, autocommit=True) as conn:
            conn.execute(sql.format(meta="hl_experience.meta", entries="hl_experience.entries")
                         .replace("?", "%s"), params)

    return Backend(new, raw)


BACKENDS: dict[str, Callable[[pytest.FixtureRequest], Backend]] = {
    "sqlite": sqlite_backend,
    "postgres": postgres_backend,
}


@pytest.fixture(params=sorted(BACKENDS))
def backend(request) -> Backend:
    return BACKENDS[request.param](request)


def hl(capsys, *args) -> tuple[int, str, str]:
    """`harness-learn ARGS` in this process: (exit code, stdout with its lines joined, as
    the console wraps a long URL, stderr)."""
    from harness_learning.cli.main import main

    with pytest.raises(SystemExit) as done:
        main([str(a) for a in args])
    captured = capsys.readouterr()
    return done.value.code, " ".join(captured.out.split()), captured.err


CAREFULLY = ('<<<<<<< SEARCH\nPROMPT = """Solve the problem. Think briefly, then give the final '
             'answer on the last line\n=======\nPROMPT = """Solve the problem. Think CAREFULLY, '
             'then give the final answer on the last line\n>>>>>>> REPLACE\n')
TASK = dict(n_dev=4, test_offset=30, n_test=2)


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory) -> str:
    """A real one-round run (sandbox, evaluator, log; scripted models) whose edit is adopted."""
    from harness_learning.graphs.adapter.config import AdaptConfig
    from harness_learning.graphs.adapter.context import AdapterContext
    from harness_learning.graphs.adapter.run import prepare, run_adaptation

    proposer = ScriptedModel(lambda prompt, params: CAREFULLY)
    proposer.config = SimpleNamespace(returns_logprobs=False, model="scripted")
    config = prepare(AdaptConfig(
        task="scripted_sums:SumTask", task_options=TASK, rounds=1, candidates=1,
        run_dir=str(tmp_path_factory.mktemp("experience") / "run"), policy="strict",
        edit_format="search_replace", feedback=2, selection=2, concurrency=4, repair_turns=0)).config
    ctx = AdapterContext.from_config(config, task=SumTask(**TASK),
                                     solver=ScriptedModel(solver_rule), proposer=proposer)
    asyncio.run(run_adaptation(config, context=ctx))
    return config.run_dir


def test_the_commands_round_trip(backend, finished_run, tmp_path, capsys):
    lib, copy = backend.new(), backend.new()
    code, out, err = hl(capsys, "experience", "add", finished_run, "--to", lib)
    assert code == 0 and f"{finished_run}: 1 entries added to {lib}" in out, err
    with Library(lib) as held:
        (edit,) = held.entries()
    (won,) = edit.outcomes
    assert edit.kind == "edit" and won.verdict == "adopted" and won.selection_gain > 0
    code, out, _ = hl(capsys, "experience", "list", lib)
    assert code == 0 and f"{edit.short} edit 1 outcome(s), 1 gained" in out
    code, out, _ = hl(capsys, "experience", "show", lib, edit.short)
    assert code == 0 and "<<<<<<< SEARCH" in out and "Think CAREFULLY" in out
    assert out.count(" adopted, selection gain +") == 1
    code, out, _ = hl(capsys, "experience", "export", lib, "--to", tmp_path / "x.jsonl")
    assert code == 0 and "1 entries" in out
    code, out, _ = hl(capsys, "experience", "import", copy, tmp_path / "x.jsonl")
    assert code == 0 and f"1 entries merged into {copy}" in out
    with Library(copy) as imported:
        assert imported.entries() == [edit]
    code, out, _ = hl(capsys, "experience", "prune", copy, "--run", won.run[:8])
    assert code == 0 and "1 entries dropped, 0 trimmed" in out
    with Library(copy) as pruned, Library(lib) as kept:
        assert pruned.entries() == [] and kept.entries() == [edit]


def test_outcomes_merge_by_key_and_negative_ones_are_kept(backend):
    location = backend.new()
    with Library(location) as lib:
        lib.add([entry([outcome(), outcome(candidate=1, score=0.2, verdict="worse")])])
        lib.add([entry([outcome(task="rg:chain_sum"), outcome(score=0.9, held_out_gain=0.25)]),
                 entry([outcome(verdict="invalid", score=None)], "vote")])
        plan, vote = lib.entries()
        assert lib.get(operator_id("vote")[:10].upper()) == vote and lib.get("") is None
        lib.replace_entries([Entry(**{**vote.__dict__, "outcomes": ()})])
        assert lib.remove([plan.id, "0" * 64]) == 1
        assert [len(e.outcomes) for e in lib.entries()] == [0]
    assert [o.key for o in plan.outcomes] == [("r1", 1, 0, "rg:chain_sum"),
                                              ("r1", 1, 0, "rg:products"),
                                              ("r1", 1, 1, "rg:products")]
    by_key = {o.key: o for o in plan.outcomes}
    assert by_key[("r1", 1, 0, "rg:products")].gain == 0.25  # re-extracted: held-out wins
    assert by_key[("r1", 1, 1, "rg:products")].success is False


def _write_many(location: str, run: str) -> None:
    with Library(location) as lib:
        for i in range(25):
            lib.add([entry([outcome(run=run, round_=i)]), entry([outcome(run=run)], f"op{i % 3}")])


def test_two_merges_at_once_lose_nothing(backend):
    location = backend.new()
    Library(location).close()  # made: the writers race on merges, not on the schema
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_write_many, args=(location, run)) for run in ("a", "b")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0]
    with Library(location) as lib:
        held = {e.id: e for e in lib.entries()}
    assert len(held[operator_id("plan")].outcomes) == 50
    # each run measured op0..op2 under one key: one outcome per run each
    assert [len(held[operator_id(f"op{i}")].outcomes) for i in range(3)] == [2, 2, 2]


def test_a_newer_library_is_refused_in_one_line_and_left_as_it_was(backend):
    location = backend.new()
    with Library(location) as lib:
        lib.add([entry([outcome()])])
    backend.raw(location, "UPDATE {meta} SET value = ? WHERE key = 'schema'",
                (str(SCHEMA_VERSION + 1),))
    for _ in range(2):  # refused, and refused again: the first refusal changed nothing
        with pytest.raises(LibraryError) as err:
            Library(location)
        message = str(err.value)
        assert "\n" not in message and f"library schema {SCHEMA_VERSION + 1}" in message
        assert "newer harness-learning" in message and "upgrade" in message
    backend.raw(location, "UPDATE {meta} SET value = ? WHERE key = 'schema'",
                (str(SCHEMA_VERSION),))
    with Library(location) as lib:
        assert [len(e.outcomes) for e in lib.entries()] == [1]


def test_an_unreadable_entry_is_skipped_never_overwritten(backend):
    location = backend.new()
    with Library(location) as lib:
        lib.add([entry([outcome()]), entry([outcome()], name="vote")])
    newer = {**entry([outcome()], name="vote").to_dict(), "schema": SCHEMA_VERSION + 1}
    backend.raw(location, "UPDATE {entries} SET body = '{{broken' WHERE id = ?",
                (operator_id("plan"),))
    backend.raw(location, "UPDATE {entries} SET body = ? WHERE id = ?",
                (json.dumps(newer), operator_id("vote")))
    with Library(location) as lib:
        assert lib.entries() == [] and len(lib.skipped) == 2
        assert lib.add([entry([outcome(run="r2")])]) == 0
        assert all("\n" not in line for line in lib.skipped)
        assert lib.get(operator_id("plan")) is None
    backend.raw(location, "UPDATE {entries} SET updated_at = 0 WHERE body = '{{broken'", ())
    with Library(location) as lib:  # still there, still as it was
        assert len(lib.entries()) == 0 and len(lib.skipped) == 2


def test_a_library_that_is_not_there_is_not_made_when_asked_not_to(backend):
    location = backend.new()
    with pytest.raises(LibraryError, match="holds no experience library.*experience add"):
        Library(location, create=False)
    Library(location).close()
    Library(location, create=False).close()


def test_a_bad_location_is_one_line_with_a_hint(tmp_path, capsys):
    port = free_port()
    dead = f"postgresql://postgres:pw-secret@127.0.0.1:{port}/x"
    file = tmp_path / "file"
    file.write_text("")
    cases = {
        ("list", "mysql://me@host/db"): "not a mysql:// one: give a directory path or a "
                                        "PostgreSQL URL",
        ("list", "postgresql:/me@host/db"): "lost a slash?): give it as text",
        ("list", dead): f"the experience library postgresql://postgres@127.0.0.1:{port}/x "
                        "failed: ",
        ("add", str(tmp_path), "--to", dead): "check the URL",
        ("list", "postgresql://postgres@127.0.0.1:notaport/x"): "check the URL",
        ("list", str(file)): "is a file; an experience library is a directory",
    }
    for args, says in cases.items():
        code, _, err = hl(capsys, "experience", *args)
        assert code != 0 and err.count("\n") == 1 and says in err, (args, err)
        assert "Traceback" not in err and "pw-secret" not in err, (args, err)
    # a URL only a run directory named (not given in this process) is never connected to
    with pytest.raises(LibraryError, match="was not given in this process.*--experience URL"):
        Library("postgresql://nobody@127.0.0.1:1/never_given")
