"""Export a whole run as JSON Lines and import it into a fresh store."""

from __future__ import annotations

import json

import pytest

from harness_learning.harnesses.contract import ToolCall
from harness_learning.harnesses.results import ProblemResult
from harness_learning.harnesses.store import (
    Evaluation,
    Outcome,
    Proposal,
    SQLiteLogStore,
    export_run,
    import_run,
)

VERDICT = Outcome(parsed=True, applied=True, valid=True, diff="-a\n+b", evaluated=True,
                  completed_fraction=1.0, selection_score=0.5, reward=0.2,
                  reward_parts={"task_score": 0.2})


def _fill(store):
    run = store.init_run({"task": "t"}, run_id="run-1")
    seed = store.put_version("a\n", note="seed")
    store.put_version("b\n", parent=seed, round_=1)
    store.put_evaluations([Evaluation(run.run_id, seed, "feedback", 1, ProblemResult(
        "p1", "x", 0.5, calls=[ToolCall("llm", {})]))])
    store.put_proposal(Proposal("r1-c0", 1, "g", [{"role": "user", "content": "ü"}], "done",
                                candidate_sha=seed, outcome=VERDICT))
    store.put_decision(round_=1, current_sha=seed, chosen_sha=seed, policy="strict", reason="r", scores={})
    store.append_event("run_started", {"k": 1})


def _dump(store):
    strip = lambda rows: [{k: v for k, v in vars(r).items() if k not in ("created_at", "ts", "seq")} for r in rows]  # noqa: E731
    return (store.get_run().config, strip(store.iter_versions()), strip(store.iter_evaluations()),
            strip(store.iter_proposals()), strip(store.iter_decisions()), strip(store.iter_events()))


def test_export_import_round_trip(tmp_path):
    with SQLiteLogStore(tmp_path / "a") as a, SQLiteLogStore(tmp_path / "b") as b:
        _fill(a)
        lines = export_run(a, tmp_path / "run.jsonl")
        assert import_run(b, tmp_path / "run.jsonl") == lines - 1
        assert _dump(a) == _dump(b)
        assert b.get_run().run_id == "run-1"


def test_a_bad_line_is_named_and_nothing_is_written(tmp_path):
    with SQLiteLogStore(tmp_path / "a") as a:
        _fill(a)
        export_run(a, tmp_path / "run.jsonl")
    lines = (tmp_path / "run.jsonl").read_text(encoding="utf-8").splitlines()
    bad = json.loads(lines[4])
    bad["data"]["surprise"] = 1
    lines[4] = json.dumps(bad)
    (tmp_path / "bad.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    with SQLiteLogStore(tmp_path / "b") as b:
        with pytest.raises(ValueError, match=r"bad\.jsonl:5: .*surprise"):
            import_run(b, tmp_path / "bad.jsonl")
        assert b.get_run() is None and list(b.iter_versions()) == []


def test_a_logged_lone_surrogate_exports_as_a_replacement(tmp_path):
    import sqlite3

    with SQLiteLogStore(tmp_path / "a") as a:
        _fill(a)
    with sqlite3.connect(tmp_path / "a" / "log.sqlite") as db:  # as a log written elsewhere
        db.execute("UPDATE proposals SET prompt = ?", ('[{"role": "user", "content": "x\\ud800"}]',))
    with SQLiteLogStore(tmp_path / "a") as a:
        export_run(a, tmp_path / "run.jsonl")
    assert '"content": "x\ufffd"' in (tmp_path / "run.jsonl").read_text(encoding="utf-8")


def test_an_export_of_log_schema_3_imports_its_verdicts_as_outcomes(tmp_path):
    """Version 3 exported a proposal's verdict as ten fields of its own: they are read into
    its outcome, as the schema migration reads a stored log."""
    with SQLiteLogStore(tmp_path / "a") as a:
        _fill(a)
        export_run(a, tmp_path / "run.jsonl")
    lines = [json.loads(line) for line in
             (tmp_path / "run.jsonl").read_text(encoding="utf-8").splitlines()]
    lines[0]["schema_version"] = 3
    (proposal,) = [line["data"] for line in lines if line.get("kind") == "proposal"]
    outcome = proposal.pop("outcome")
    proposal.update(parsed_edit=outcome["edit"], **{k: outcome[k] for k in (
        "parsed", "applied", "valid", "invalid_kind", "invalid_reason", "completed_fraction",
        "selection_score", "reward", "reward_parts")})
    (tmp_path / "v3.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines),
                                       encoding="utf-8")
    with SQLiteLogStore(tmp_path / "b") as b:
        import_run(b, tmp_path / "v3.jsonl")
        back = b.get_proposal("r1-c0").outcome
    assert back == Outcome(**{**VERDICT.to_dict(), "diff": ""})  # v3 kept the diff elsewhere
