"""`harness-learn index build|search` end to end on a real closed corpus."""

import json

import pytest
from typer.testing import CliRunner

from harness_learning.cli import app

pytestmark = pytest.mark.slow
runner = CliRunner()


def test_build_then_search_json(musique_file, tmp_path):
    out = tmp_path / "ix"
    res = runner.invoke(app, ["index", "build", "--corpus", "musique", "--input", str(musique_file),
                              "--out", str(out), "--backend", "bm25"])
    assert res.exit_code == 0, res.output
    assert "1,890 passages" in res.output and "MiB on disk" in res.output
    q = "Who was the first president of the American Psychological Association?"
    res = runner.invoke(app, ["index", "search", str(out), q, "-k", "3", "--json"])
    assert res.exit_code == 0, res.output
    hits = json.loads(res.output.strip().splitlines()[-1])
    assert len(hits) == 3 and {"title", "text", "score"} <= set(hits[0])
    assert hits[0]["score"] >= hits[1]["score"] >= hits[2]["score"] > 0


def test_bad_input_exits_with_a_named_error(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"title": "A", "text": "x"}\nnot json\n')
    res = runner.invoke(app, ["index", "build", "--corpus", "jsonl", "--input", str(bad),
                              "--out", str(tmp_path / "ix")])
    assert res.exit_code == 2
    assert "bad.jsonl:2: malformed JSON" in res.output
    bad.write_text('{"title": "A", "text": "x"}\n{"title": "B"}\n')  # a record without text
    res = runner.invoke(app, ["index", "build", "--corpus", "jsonl", "--input", str(bad),
                              "--out", str(tmp_path / "ix")])
    assert res.exit_code == 2 and not (tmp_path / "ix").exists()
    (line,) = [x for x in res.output.splitlines() if "error" in x]  # beside the progress bar
    assert line.startswith("error: ") and "bad.jsonl:2: record lacks 'text'; each passage" in line
    res = runner.invoke(app, ["index", "search", str(tmp_path / "nothing"), "q"])
    assert res.exit_code == 2 and "not an index directory" in res.output
