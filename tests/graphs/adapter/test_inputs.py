"""A run keeps what it needs from outside (data, start harness, metric and tool files) in its
run directory, so it reopens from anywhere once the originals are gone; and bad input to
`adapt` is one clear line with exit code 2."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness_learning.cli.main import main
from harness_learning.graphs.adapter.config import AdaptConfig
from harness_learning.graphs.adapter.inputs import MissingInput, open_task, open_tools, start_source
from harness_learning.graphs.adapter.run import load_config, prepare

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "your_own_agent"


@pytest.fixture
def copied(tmp_path):
    """The example copied to a folder of its own (deleted by the tests that need it gone)."""
    src = tmp_path / "src"
    shutil.copytree(EXAMPLE, src)
    return src


def example_config(src: Path, run_dir: Path) -> AdaptConfig:
    return AdaptConfig(task=str(src / "tasks.jsonl"), run_dir=str(run_dir),
                       metric=f"{src / 'shop_metric.py'}:score",
                       tools=[f"{src / 'shop_tools.py'}:unit_price"],
                       seed_harness=str(src / "shop_harness.py"), describe=f"@{src / 'task.md'}")


def test_a_prepared_run_reopens_without_its_original_files(copied, tmp_path, monkeypatch):
    run_dir = tmp_path / "run"
    prepare(example_config(copied, run_dir))
    harness = (copied / "shop_harness.py").read_text()
    readme = (copied / "task.md").read_text()
    shutil.rmtree(copied)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    config = load_config(run_dir)
    task = open_task(config)
    assert len(task.dev()) + len(task.test()) == 20 and task.description == readme
    assert task.score(task.dev()[0], task.dev()[0].gold[0]) == 1.0  # the stored metric file
    tools = open_tools(config)
    assert tools.names == ["unit_price"]
    assert start_source(config, task) == harness
    assert json.loads((run_dir / "config.json").read_text())["describe"] == readme


def test_source_text_as_the_start_harness_is_stored(tmp_path):
    source = (EXAMPLE / "shop_harness.py").read_text()
    config = prepare(AdaptConfig(task=str(EXAMPLE / "tasks.jsonl"), run_dir=str(tmp_path / "r"),
                                 seed_harness=source,
                                 tools=[f"{EXAMPLE / 'shop_tools.py'}:unit_price"])).config
    assert config.seed_harness == "inputs/start_harness.py"
    assert start_source(load_config(tmp_path / "r"), None) == source


def test_live_objects_must_be_passed_again_to_reopen(tmp_path):
    config = AdaptConfig(task=str(EXAMPLE / "tasks.jsonl"), run_dir=str(tmp_path / "r"),
                         metric="live:mine", tools=["live:tool:mine"])
    with pytest.raises(MissingInput, match="metric 'live:mine' was a Python object"):
        open_task(config)
    with pytest.raises(MissingInput, match="tool 'live:tool:mine' was a Python object"):
        open_tools(config)


def cli_main(args: list[str], capsys) -> tuple[int, str]:
    """The entry point in process, with the CLI's own error handling: (exit code, output)."""
    capsys.readouterr()
    try:
        main(args)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    captured = capsys.readouterr()
    return code, " ".join((captured.out + captured.err).split())


def adapt_error(tmp_path, capsys, *extra: str) -> str:
    code, output = cli_main(["adapt", "--run-dir", str(tmp_path / "run"), *extra], capsys)
    assert code == 2, output
    assert "Traceback" not in output
    assert not (tmp_path / "run" / "config.json").exists()  # nothing was started
    return output


def test_bad_input_to_adapt_is_one_clear_line(tmp_path, capsys):
    data = str(EXAMPLE / "tasks.jsonl")
    assert "error: unknown metric 'bleu'; known: exact, f1" in adapt_error(
        tmp_path, capsys, "--task", data, "--metric", "bleu")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "q", "answer": "1"}\n{"question": \n')
    assert f"error: {bad}:2: not JSON" in adapt_error(tmp_path, capsys, "--task", str(bad))
    (tmp_path / "broken_tools.py").write_text("import no_such_package_xyz\n")
    line = adapt_error(tmp_path, capsys, "--task", data, "--tools", f"{tmp_path}/broken_tools.py:t")
    assert "error: tool" in line and "ModuleNotFoundError" in line and "no_such_package_xyz" in line
    assert "error: tool 'shop_tools_missing:t': importing 'shop_tools_missing' failed" in \
        adapt_error(tmp_path, capsys, "--task", data, "--tools", "shop_tools_missing:t")
    assert "asked for 30 dev + 0 test examples but the file has 20" in adapt_error(
        tmp_path, capsys, "--task", data, "--dev", "30", "--test", "0")
    assert "error: harness 'nope.py' is neither a seed" in adapt_error(
        tmp_path, capsys, "--task", data, "--harness", "nope.py")


def test_resume_and_eval_of_no_run_directory_are_one_line(tmp_path, capsys):
    for command in ("resume", "eval"):
        code, output = cli_main([command, str(tmp_path)], capsys)
        assert code == 2 and "is not a run directory" in output
        assert "Traceback" not in output
    code, output = cli_main(["eval", str(tmp_path), "--solver", f"local:{tmp_path}/no.gguf"],
                            capsys)
    assert code == 2 and "no.gguf does not exist" in output and "Traceback" not in output


def test_studio_takes_the_same_settings(tmp_path):
    from harness_learning.graphs.adapter.server_threads import settings_config

    config = settings_config({
        "task": str(EXAMPLE / "tasks.jsonl"), "run_dir": str(tmp_path / "r"),
        "metric": f"{EXAMPLE / 'shop_metric.py'}:score", "harness": "reasoning_direct",
        "tools": [f"{EXAMPLE / 'shop_tools.py'}:unit_price"]})
    assert config.metric.endswith("shop_metric.py:score") and config.rounds == 5
    assert config.seed_harness == "reasoning_direct"
    assert open_tools(config).names == ["unit_price"]


def test_retrieval_choices_reach_the_task_options(tmp_path, capsys):
    from harness_learning.graphs.adapter.inputs import task_args

    config = AdaptConfig(task="2wiki", run_dir=str(tmp_path), index_backend="bm25",
                         aliases="id_aliases.json", task_options={"n_dev": 3})
    assert task_args(config) == ("2wiki", {"n_dev": 3, "index_backend": "bm25",
                                           "aliases": "id_aliases.json"})
    code, output = cli_main(["run", "--task", "hotpotqa", "--aliases", "a.json"], capsys)
    assert code == 2 and "error: task 'hotpotqa': 'aliases' applies to 2wiki only" in output


def test_a_reviewed_harness_in_process_reaches_the_user_tools(tmp_path):
    from harness_learning.evals.custom.imports import resolve
    from harness_learning.graphs.serving.embed import load_harness
    from harness_learning.harnesses.usertools import build_user_tools

    source = (EXAMPLE / "shop_harness.py").read_text().replace(
        'tools.unit_price(item=state["item"], shop=state["shop"])',
        'tools.call("unit_price", item="melon", shop=state["shop"])').replace(
        "reply = tools.llm(", "reply = 'x' or tools.llm(")  # no Solver needed: only the tool
    (tmp_path / "h.py").write_text(source)
    tool = resolve(f"{EXAMPLE / 'shop_tools.py'}:unit_price", "tool")
    graph = load_harness(tmp_path / "h.py", sandboxed=False, reviewed=True,
                         tools=build_user_tools([tool]))
    assert graph.invoke({"question": "q", "shop": "south"})["price"] == "2.2"


def test_a_module_graph_given_as_source_text_is_source_not_a_path():
    """A harness may be a module whose compiled `graph` is assigned at top level (as
    langgraph.json names one): given as text, it is taken as text, not looked up as a file."""
    from harness_learning.graphs.adapter.inputs import harness_text

    for text in ("from agent import make\n\ngraph = make()\n",
                 "from agent import make\ngraph: object = make()\n"):
        assert harness_text(text) == text
    with pytest.raises(FileNotFoundError, match="neither a seed"):
        harness_text("a line\nthat names no graph = at its start\n")
