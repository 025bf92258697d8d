"""`adapt --config FILE.toml`: a run's settings from a file whose keys are `AdaptConfig`'s
fields, under the flags typed on the command line; a bad key or value is one line before
anything is written. A real short adaptation on the simulated endpoint (tests/support/sim_adapt.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_run import cli, error_line

from harness_learning.cli.main import main


def settings(sim_url: str, run_dir: Path) -> str:
    """sim_adapt's 2-round best_valid run, written as a settings file."""
    model = f"openai/sim@{sim_url}"
    return (f'task = "rg:basic_arithmetic"\nrun_dir = "{run_dir}"\nsolver = "{model}"\n'
            f'proposer = "{model}"\nrounds = 2\ncandidates = 2\npolicy = "best_valid"\n'
            "feedback = 2\nselection = 3\nconcurrency = 3\nmerge = false\n"
            "task_options = { n_dev = 6, n_test = 2 }\n\n[budget]\nsolver_calls = 900\n")


def test_a_settings_file_drives_adapt_and_typed_flags_override_it(sim_url, tmp_path,
                                                                   capsys) -> None:
    run_dir = tmp_path / "run"
    path = tmp_path / "run.toml"
    path.write_text(settings(sim_url, run_dir))
    result = cli("adapt", "--config", path, "--rounds", "1", "--dev", "5", "--max-tokens",
                 "90000", "--json")
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    stored = json.loads((run_dir / "config.json").read_text())
    assert stored["rounds"] == 1  # the typed flag, over the file's 2
    assert stored["candidates"] == 2 and stored["selection"] == 3  # the file's
    assert stored["concurrency"] == 3  # the file's, not the flag's untyped default (8)
    assert stored["task_options"]["n_dev"] == 5 and stored["task_options"]["n_test"] == 2
    assert stored["budget"] == {"solver_calls": 900, "tokens": 90000, "cost_usd": None}
    assert json.loads(result.stdout.strip().splitlines()[-1])["rounds"] == 1

    # resume --config: the file names the run; a setting it holds otherwise is refused, by
    # name (its 2 rounds would extend the run: no refusal)
    with pytest.raises(SystemExit) as clash:
        main(["resume", "--config", str(path)])
    assert clash.value.code == 2
    refused = capsys.readouterr().err.strip().splitlines()[-1]
    assert "has other settings: task_options: {'n_dev': 6" in refused
    assert "rounds" not in refused.split(" · hint")[0]
    assert json.loads((run_dir / "config.json").read_text())["rounds"] == 1  # nothing written
    path.write_text(settings(sim_url, run_dir).replace("rounds = 2", "rounds = 1")
                    .replace("n_dev = 6", "n_dev = 5"))
    again = cli("resume", "--config", path, "--json")
    assert again.returncode == 0, again.stderr[-2000:]
    assert json.loads(again.stdout.strip().splitlines()[-1])["rounds"] == 1


@pytest.mark.parametrize(("line", "says"), [
    ("rounsd = 2", "unknown key 'rounsd' · hint: did you mean 'rounds'?"),
    ('rounds = "2"', "key 'rounds' must be an integer, not a string ('2')"),
    ("[budget]\nsolver_call = 9", "unknown key 'budget.solver_call' · hint: did you mean "
                                  "'budget.solver_calls'?"),
    ('policy = "greedy"', "key 'policy' must be one of 'strict', 'best_valid'"),
    ("dev = 40", "unknown key 'dev' · hint: the flag --dev is the key 'n_dev' of 'task_options'"),
])
def test_a_bad_key_or_value_is_one_line_naming_it_and_the_file(line, says, tmp_path,
                                                                capsys) -> None:
    run_dir = tmp_path / "run"
    path = tmp_path / "bad.toml"
    path.write_text(f'task = "rg:basic_arithmetic"\nrun_dir = "{run_dir}"\n{line}\n')
    with pytest.raises(SystemExit) as exited:
        main(["adapt", "--config", str(path)])
    lines = capsys.readouterr().err.strip().splitlines()
    assert exited.value.code == 2 and len(lines) == 1, lines
    assert lines[0].startswith(f"harness-learn: error: {path}: ") and says in lines[0], lines[0]
    assert not run_dir.exists()


def test_a_settings_file_without_task_or_run_dir_names_what_is_missing(tmp_path) -> None:
    path = tmp_path / "partial.toml"
    path.write_text('task = "rg:basic_arithmetic"\n')
    result = cli("adapt", "--config", path)
    assert result.returncode == 2
    assert "Missing option '--run-dir' (or the key 'run_dir' of a --config file)" in error_line(result)


def test_studio_threads_start_from_the_settings_file_under_their_own(tmp_path,
                                                                    monkeypatch) -> None:
    from harness_learning.graphs.adapter.server_threads import CONFIG_ENV, settings_config

    path = tmp_path / "studio.toml"
    path.write_text('task = "rg:basic_arithmetic"\nrounds = 2\ncandidates = 2\n'
                    'seed_harness = "reasoning_direct"\ntask_options = { n_dev = 6, n_test = 2 }'
                    '\n[budget]\nsolver_calls = 100\n')
    monkeypatch.setenv(CONFIG_ENV, str(path))
    config = settings_config({"rounds": 3, "dev": 7, "max_tokens": 5000}, "thread-1")
    assert config.rounds == 3 and config.candidates == 2  # the thread's setting; the file's
    assert config.seed_harness == "reasoning_direct"
    assert config.task_options["n_dev"] == 7 and config.task_options["n_test"] == 2
    assert (config.budget.solver_calls, config.budget.tokens) == (100, 5000)
    assert config.run_dir.endswith("thread-1")


def test_studio_refuses_a_bad_settings_file_before_the_server_starts(tmp_path, capsys) -> None:
    path = tmp_path / "studio.toml"
    path.write_text("candiates = 2\n")
    with pytest.raises(SystemExit) as exited:
        main(["studio", "--settings", str(path)])
    lines = capsys.readouterr().err.strip().splitlines()
    assert exited.value.code == 2 and len(lines) == 1
    assert f"{path}: unknown key 'candiates' · hint: did you mean 'candidates'?" in lines[0]


def test_relative_paths_are_read_against_the_file_and_harness_is_seed_harness(
        tmp_path, monkeypatch) -> None:
    """A file's relative paths name files beside it, whatever the working directory (Studio
    serves from elsewhere); seed names, registered tasks, `module:attr` and `mcp:` stay as
    written; `harness` is the key `seed_harness`, and both at once is one line."""
    from harness_learning.graphs.adapter.config_file import ConfigFileError, read_config_file

    folder = tmp_path / "project"
    folder.mkdir()
    path = folder / "s.toml"
    path.write_text('task = "data/qa.jsonl"\nrun_dir = "runs/a"\nharness = "agent.py"\n'
                    'metric = "metrics.py:score"\ndescribe = "@notes.md"\n'
                    'tools = ["tools.py:lookup", "mypkg.tools:search", "mcp:python3 srv.py"]\n'
                    'task_options = { index_dir = "idx", n_dev = 4 }\n')
    monkeypatch.chdir(tmp_path)  # not the file's folder
    got = read_config_file(Path("project/s.toml"))
    assert got["task"] == str(folder / "data/qa.jsonl")
    assert got["run_dir"] == str(folder / "runs/a")
    assert got["seed_harness"] == str(folder / "agent.py") and "harness" not in got
    assert got["metric"] == f"{folder / 'metrics.py'}:score"
    assert got["describe"] == f"@{folder / 'notes.md'}"
    assert got["tools"] == [f"{folder / 'tools.py'}:lookup", "mypkg.tools:search",
                            "mcp:python3 srv.py"]
    assert got["task_options"] == {"index_dir": str(folder / "idx"), "n_dev": 4}
    path.write_text('task = "rg:basic_arithmetic"\nseed_harness = "reasoning_direct"\n'
                    'metric = "numeric:0.01"\nrun_dir = "/abs/run"\n')
    assert read_config_file(path) == {"task": "rg:basic_arithmetic", "run_dir": "/abs/run",
                                      "seed_harness": "reasoning_direct",
                                      "metric": "numeric:0.01"}
    path.write_text('harness = "a.py"\nseed_harness = "b.py"\n')
    with pytest.raises(ConfigFileError, match="keys 'harness' and 'seed_harness' both set"):
        read_config_file(path)
