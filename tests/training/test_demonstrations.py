"""Demonstrations from a log written through the store's API: operator adoptions become the
inlined node function, Proposer function edits that beat their parent are kept as written, and
every other candidate is counted out with its reason; no selection or test problem leaks."""

from __future__ import annotations

import json

import pytest
from cli_run import cli, error_line
from typer.testing import CliRunner

from harness_learning.cli import app
from harness_learning.evals.registry import get_task
from harness_learning.graphs.adapter.proposer import build_focused_messages
from harness_learning.harnesses.edits.function_edit import apply_function
from harness_learning.harnesses.edits.operators import OPERATORS, apply_operator
from harness_learning.harnesses.results import ProblemResult
from harness_learning.harnesses.seeds import seed_source
from harness_learning.harnesses.store import (
    Evaluation,
    Outcome,
    Proposal,
    SQLiteLogStore,
    prompt_group_id,
)
from harness_learning.training.data import LogError
from harness_learning.training.demonstrations import demonstrations, prompt_format

SEED = seed_source("reasoning_direct")
TASK = {"task": "rg:basic_arithmetic", "task_options": {"n_dev": 8, "n_test": 2}}
EDIT = '''```python
def solve(state: State) -> dict:
    ask = {"role": "user", "content": PROMPT.format(question=state["question"])}
    reply = tools.llm([*EXAMPLE, ask])
    answer = reply.rsplit("Answer:", 1)[-1].strip().rstrip(".") if "Answer:" in reply else reply
    return {"answer": answer.strip()}
```'''


def leaking(question: str) -> str:
    return EDIT.replace("def solve(state: State) -> dict:\n",
                        f"def solve(state: State) -> dict:\n    # {question}\n")


def write_run(run_dir, usable: bool = True) -> list[str]:
    """One round: a focused prompt, Proposer edits and two operator candidates; returns the
    selection questions."""
    task = get_task(TASK["task"], **TASK["task_options"])
    dev, test = task.dev(), task.test()
    selection, feedback = dev[:4], dev[4:]
    store = SQLiteLogStore(run_dir)
    run_id = store.init_run(TASK).run_id
    seed = store.put_version(SEED, None, 0, "seed")
    report = "\n".join(f"- {p.question} -> wrong" for p in feedback)
    messages = build_focused_messages("Arithmetic.", SEED, report, "solve")
    store.put_evaluations([Evaluation(run_id, seed, purpose, 1, ProblemResult(p.id, score=0.0))
                           for purpose, ps in (("selection", selection), ("test", test))
                           for p in ps])

    def put(i, completion, origin="proposer", score=0.5, valid=True, source=None, fmt="function"):
        sha = store.put_version(source or apply_function(SEED, completion.strip("`\npython")),
                                seed, 1) if valid else None
        store.put_proposal(Proposal(
            id=f"r1-{i}", round=1, group_id=prompt_group_id(messages), prompt=messages,
            completion=completion, model="qwen" if origin == "proposer" else origin,
            edit_format=fmt, candidate_sha=sha, parent_sha=seed, parent_score=0.25, origin=origin,
            outcome=None if score is None else Outcome(  # no score: never judged
                parsed=True, applied=valid, valid=valid, selection_score=score, reward=score)))

    if usable:
        put(0, EDIT)                                        # kept: beats its parent
    put(1, EDIT.replace(".rstrip(\".\")", ".rstrip(\"!\")"), score=0.25)   # a tie
    put(2, "no edit", valid=False, score=None)              # invalid
    put(3, leaking(selection[0].question))                  # shows a selection problem
    put(4, EDIT, fmt="whole_program")                       # another format
    put(7, f"```python\n{SEED.replace('Think briefly', 'Think')}```")  # a whole program
    if not usable:
        store.close()
        return []
    wrapped = apply_operator(OPERATORS["interpreter"], SEED)
    put(5, wrapped, origin="operator:interpreter", score=1.0, source=wrapped)   # kept, inlined
    voted = apply_operator(OPERATORS["vote"], SEED)
    put(6, voted, origin="operator:vote", score=0.75, source=voted)            # no inliner
    store.close()
    return [p.question for p in [*selection, *test]]


def test_successes_become_focused_demonstrations(tmp_path):
    held = write_run(tmp_path / "run")
    rows, summary = demonstrations([tmp_path / "run"])
    assert summary.kept == {"proposer": 1, "operator:interpreter": 1}
    assert summary.left_out == {
        "invalid": 1, "not above its parent on selection": 1, "no inliner for operator:vote": 1, "shows a selection or test problem": 1,
        "not a focused (function-format) prompt": 1,
        "completion is a whole program, not the node function": 1}
    assert (summary.distinct_completions, summary.distinct_parents) == (2, 1)
    operator = next(r for r in rows if r["source"] == "operator:interpreter")
    text = operator["completion"][0]["content"]
    assert "tools.python(" in text and "harness_learning.harnesses.blocks" not in text
    assert operator["provenance"]["prompt_from"] == "r1-0" and operator["judged"] == "log"
    assert {r["prompt_format"] for r in rows} == {prompt_format(operator["prompt"])}
    for row in rows:  # held-out problems never appear, and each beat its parent
        shown = json.dumps(row["prompt"]) + row["completion"][0]["content"]
        assert not any(q in shown for q in held)
        assert row["selection_score"] > row["parent_score"]


def test_the_prompt_format_hash_ignores_the_round_but_not_the_format():
    a = build_focused_messages("Arithmetic.", SEED, "- one wrong", "solve")
    b = build_focused_messages("Counting.", SEED + "\n# v2\n", "- two wrong", "other")
    assert prompt_format(a) == prompt_format(b)
    changed = [a[0], {"role": "user", "content": a[1]["content"].replace("## Tools", "## Kit")}]
    assert prompt_format(changed) != prompt_format(a)
    listed = build_focused_messages("Sort.\n## 1. Answer as a list\n## 2. Quote numbers", SEED,
                                    "- one wrong", "solve")
    assert prompt_format(listed) == prompt_format(a)  # a description's own "## " lines


def test_a_log_without_a_usable_demonstration_is_one_line_and_fails(tmp_path):
    write_run(tmp_path / "bad", usable=False)
    with pytest.raises(LogError, match="no usable demonstration.*1 invalid"):
        demonstrations([tmp_path / "bad"])
    bad = cli("train", "demonstrations", "--logs", tmp_path / "bad", "--out", tmp_path / "d.jsonl")
    assert bad.returncode != 0 and "no usable demonstration in 1 run(s)" in error_line(bad)
    assert "5 candidates read: 1 completion is a whole program" in error_line(bad)
    assert not (tmp_path / "d.jsonl").exists()
    write_run(tmp_path / "run")
    result = CliRunner().invoke(app, ["train", "demonstrations", "--logs", str(tmp_path / "run"),
                                      "--out", str(tmp_path / "d.jsonl")])
    assert result.exit_code == 0, result.output
    assert len((tmp_path / "d.jsonl").read_text().splitlines()) == 2
    assert "left out 1: invalid" in result.output
    summary = json.loads((tmp_path / "d.summary.json").read_text())
    assert summary["kept"] == {"proposer": 1, "operator:interpreter": 1}


def test_a_held_question_in_the_task_description_is_named_as_such():
    from harness_learning.training.demonstrations import _shows

    held = "Calculate 5 - 3 - 6."
    asked = build_focused_messages(f"Arithmetic.\nExample question:\n{held}", SEED, "- x", "solve")
    row = {"prompt": asked, "completion": [{"role": "assistant", "content": EDIT}]}
    assert _shows(row, [held]) == ("shows a selection or test problem (the task "
                                   "description's example question)")
    row["completion"] = [{"role": "assistant", "content": leaking(held)}]
    assert _shows(row, [held]) == "shows a selection or test problem"
    assert _shows(row, ["Calculate 2 - -1."]) is None


def test_ties_join_only_when_asked(tmp_path):
    write_run(tmp_path / "run")
    strict, _ = demonstrations([tmp_path / "run"])
    rows, summary = demonstrations([tmp_path / "run"], keep_ties=True)
    assert summary.kept == {"proposer": 2, "operator:interpreter": 1} and len(strict) == 2
    assert "not above its parent on selection" not in summary.left_out
    assert [r["selection_score"] for r in rows if r not in strict] == [0.25]  # level with 0.25
