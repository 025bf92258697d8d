"""`PreparedRun` (graphs/adapter/prepared.py): a run's task and tools are opened once and handed
from `prepare` through the command to the adapter's context; a run that keeps copies of files
opens its copies, never the originals it was checked with."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from harness_learning.graphs.adapter.config import AdaptConfig
from harness_learning.graphs.adapter.prepared import PreparedRun
from harness_learning.graphs.adapter.run import load_config, prepare

COUNTING = textwrap.dedent('''
    from scripted_sums import SumTask

    OPENED = {"task": 0}


    class CountedSums(SumTask):
        def __init__(self, **options):
            OPENED["task"] += 1
            super().__init__(**options)


    def lookup(word: str) -> str:
        """Look a word up."""
        return word
''')


@pytest.fixture
def counting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A task of one's own and a tool, by module reference (nothing to copy), that count how
    often they are built."""
    (tmp_path / "counting_inputs.py").write_text(COUNTING, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "counting_inputs", raising=False)
    import counting_inputs

    return counting_inputs


def config(run_dir: Path, **fields: object) -> AdaptConfig:
    return AdaptConfig(task="counting_inputs:CountedSums", run_dir=str(run_dir), rounds=1,
                       tools=["counting_inputs:lookup"], **fields)


def test_the_task_and_tools_prepare_opened_are_the_ones_the_run_uses(counting, tmp_path):
    run = prepare(config(tmp_path / "run"))
    assert counting.OPENED["task"] == 1  # opened to learn its track and check its metric
    assert run.task is not None and run.tools is not None and run.tools_open
    opened = run.opened()
    assert opened.task is run.task and opened.tools is run.tools  # not opened again
    context = opened.context()
    assert context.task is run.task and context.user_tools is run.tools
    assert counting.OPENED["task"] == 1


def test_a_started_run_opens_once_and_hands_it_on(counting, tmp_path):
    prepare(config(tmp_path / "run"))
    before = counting.OPENED["task"]
    run = PreparedRun(load_config(tmp_path / "run"))
    assert run.task is None and not run.tools_open
    opened = run.opened()
    assert counting.OPENED["task"] == before + 1
    assert opened.context().task is opened.task
    assert opened.opened().task is opened.task and counting.OPENED["task"] == before + 1


def test_a_run_on_kept_copies_opens_the_copies(tmp_path):
    data = tmp_path / "mine.jsonl"
    data.write_text('{"question": "What is 2 + 2?", "answer": "4"}\n' * 4, encoding="utf-8")
    run = prepare(AdaptConfig(task=str(data), run_dir=str(tmp_path / "run"), rounds=1))
    assert run.task is None  # what was checked is the original, not what the run reads
    data.unlink()  # the run reads its own copy
    opened = run.opened()
    assert [p.question for p in opened.task.dev()][:1] == ["What is 2 + 2?"]
