"""Reading a user's examples: each format, each kind of bad line, and the split sizes."""

from __future__ import annotations

import json

import pytest

from harness_learning.evals.custom import DataFileError, DataTask, load_examples
from harness_learning.evals.registry import get_task

ROWS = [{"question": f"What is {i} + 1?", "answer": str(i + 1), "level": i % 2} for i in range(5)]


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_jsonl_json_and_csv_give_the_same_examples(tmp_path):
    a = load_examples(write_jsonl(tmp_path / "a.jsonl", ROWS))
    (tmp_path / "b.json").write_text(json.dumps(ROWS))
    b = load_examples(tmp_path / "b.json")
    (tmp_path / "c.csv").write_text("question,answer,level\n" + "".join(
        f"{r['question']},{r['answer']},{r['level']}\n" for r in ROWS))
    c = load_examples(tmp_path / "c.csv")
    assert [e["question"] for e in a] == [e["question"] for e in b] == [e["question"] for e in c]
    assert a[0]["id"] == "line1" and c[0]["id"] == "line2"  # ids default to the line number
    assert c[0]["level"] == "0" and a[0]["level"] == 0


def test_a_saved_datasets_directory_is_read(tmp_path):
    datasets = pytest.importorskip("datasets")
    datasets.Dataset.from_list(ROWS).save_to_disk(str(tmp_path / "ds"))
    task = get_task(str(tmp_path / "ds"), metric="exact", n_dev=3, n_test=2)
    assert len(task.dev()) == 3 and len(task.test()) == 2


@pytest.mark.parametrize(("text", "why"), [
    ('{"question": "a", "answer": "1"}\n{"question": "b", \n', "a.jsonl:2: not JSON"),
    ('{"question": "a", "answer": "1"}\n{"answer": "2"}\n', "a.jsonl:2: no `question` text"),
    ('{"question": "a"}\n', "a.jsonl:1: no gold `answer`"),
    ('{"question": "a", "answers": []}\n', "a.jsonl:1: `answers` must be a non-empty list"),
    ('[1, 2]\n', "a.jsonl:1: an example must be an object"),
    ('{"question": "a", "answer": "1", "id": 3}\n{"question": "b", "answer": "2", "id": 3}\n',
     "a.jsonl:2: id '3' repeats line 1"),
    ("", "a.jsonl: holds no examples"),
])
def test_a_bad_line_names_the_file_line_and_why(tmp_path, text, why):
    (tmp_path / "a.jsonl").write_text(text)
    with pytest.raises(DataFileError, match=why):
        load_examples(tmp_path / "a.jsonl")


def test_bad_csv_and_json_files(tmp_path):
    (tmp_path / "a.csv").write_text("question,answer\nq1,1\nq2,2,extra\n")
    with pytest.raises(DataFileError, match="a.csv:3: more cells than header columns"):
        load_examples(tmp_path / "a.csv")
    (tmp_path / "a.json").write_text('{"question": "q"}')
    with pytest.raises(DataFileError, match="a.json:1: a JSON data file must hold a list"):
        load_examples(tmp_path / "a.json")
    with pytest.raises(DataFileError, match="no such file"):
        load_examples(tmp_path / "missing.jsonl")


def test_splits_default_to_60_40_and_too_small_a_file_names_the_sizes(tmp_path):
    path = write_jsonl(tmp_path / "t.jsonl", ROWS)
    task = DataTask(path)
    assert (task.n_dev, task.n_test) == (3, 2)
    assert not {p.id for p in task.dev()} & {p.id for p in task.test()}
    with pytest.raises(ValueError, match="asked for 4 dev \\+ 3 test examples but the file has 5"):
        DataTask(path, n_dev=4, n_test=3)


def test_problems_hold_public_fields_and_keep_gold_private(tmp_path):
    path = write_jsonl(tmp_path / "t.jsonl", [{"question": "q", "answers": ["x", "y"],
                                               "id": "a", "hint": "h"}])
    problem = DataTask(path, n_dev=1, n_test=0).dev()[0]
    assert problem.inputs == {"question": "q", "hint": "h"}
    assert problem.gold == ["x", "y"] and problem.id == "a"


def test_the_description_comes_from_fields_and_metric_or_from_describe(tmp_path):
    path = write_jsonl(tmp_path / "t.jsonl", ROWS)
    derived = DataTask(path, metric="numeric:0.01").description
    assert "`level`" in derived and "relative tolerance of 0.01" in derived
    assert DataTask(path, describe="Sums, answer with digits.").description == \
        "Sums, answer with digits."
