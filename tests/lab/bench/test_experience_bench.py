"""`bench experience`'s bookkeeping: the split is checked and written before any run, a
finished run is read back and not redone, and the table is made from kept results."""

from __future__ import annotations

import json

import pytest
import typer

from harness_learning_lab.bench import experience as bench
from harness_learning_lab.bench import experience_report as report
from harness_learning_lab.cli.bench_experience_cmd import bench_experience

TYPES = """
[[type]]
task = "rg:count_bits"
class = "headroom"
[[type]]
task = "rg:power_function"
class = "headroom"
[[type]]
task = "rg:products"
class = "headroom"
[[type]]
task = "rg:lcm"
class = "headroom"
[[type]]
task = "rg:gcd"
class = "modest"
[[type]]
task = "rg:number_sorting"
class = "control"
"""


def _settings(**over) -> dict:
    return {"train": ["rg:count_bits", "rg:power_function"], "held_out": ["rg:lcm"],
            "control": "rg:number_sorting", "min_types": 1, "seeds": [0], "continual": True,
            "solver": "nobody:no-model", "proposer": "nobody:no-model", "rounds": 1, **over}


@pytest.fixture
def types(tmp_path):
    path = tmp_path / "task_types.toml"
    path.write_text(TYPES)
    return path


def test_training_types_that_overlap_held_out_or_peers_tasks_are_refused(types) -> None:
    with pytest.raises(bench.PlanError, match="overlap the held-out and control types: rg:lcm"):
        bench.plan(_settings(train=["rg:count_bits", "rg:lcm"]), types, avoid=[])
    with pytest.raises(bench.PlanError, match="overlap the peers bench's tasks: rg:products"):
        bench.plan(_settings(train=["rg:products"]), types, avoid=["rg:products"])
    with pytest.raises(bench.PlanError, match="at least 4 training"):
        bench.plan(_settings(min_types=4), types, avoid=[])
    with pytest.raises(bench.PlanError, match="control a control type"):
        bench.plan(_settings(control="rg:products"), types, avoid=[])
    # the real settings: training disjoint from the peers bench's head-to-head tasks
    split = bench.plan(bench.load_settings())
    assert not set(split["train"]) & set(bench.peers_tasks())
    assert len(split["train"]) >= 4 and len(split["held_out"]) >= 4


def test_the_command_says_an_overlap_in_one_line_before_writing_anything(tmp_path, types) -> None:
    settings = tmp_path / "bench.toml"
    settings.write_text('train = ["rg:lcm"]\nheld_out = ["rg:lcm"]\ncontrol = "rg:number_sorting"\n'
                        "min_types = 1\nseeds = [0]\n")
    with pytest.raises(typer.BadParameter) as err:
        bench_experience(smoke=False, settings=settings, types=types, out=tmp_path / "out",
                         as_json=False)
    assert "overlap" in str(err.value) and "\n" not in str(err.value)
    assert not (tmp_path / "out").exists()


def _result(r: bench.Run, score: float) -> dict:
    problems = {f"p{i}": score for i in range(4)}
    return {"arm": r.arm, "task": r.task, "seed": r.seed, "held_out": score,
            "seed_held_out": 0.0, "final_problems": problems,
            "seed_problems": dict.fromkeys(problems, 0.0), "solver_calls": 10,
            "calls_to_final": 4, "candidates": 2, "wasted": 1, "structural": score > 0,
            "library_adopted": 1 if r.arm == "library" else 0, "library_as_operator": 0,
            "adopted_origins": []}


def test_a_finished_run_is_read_back_and_only_the_unfinished_are_run(tmp_path, types) -> None:
    out = tmp_path / "out"
    split = bench.plan(_settings(held_out=["rg:lcm", "rg:gcd"]), types, avoid=[])
    order = bench.runs(out, split)
    assert [r.arm for r in order] == ["train", "train", *["proposer", "library", "operators"] * 3,
                                      "continual", "continual", "retention"]
    assert order[3].library_from == order[0].library and order[0].operators == "auto"
    assert [r.task for r in order[2::3][:3]] == ["rg:lcm", "rg:gcd", "rg:number_sorting"]
    # continual grows one library from the trained one; retention reruns on copies of it
    first, second, kept = order[-3:]
    assert first.library == second.library == kept.library_from
    assert first.library_from == order[0].library and not second.library_from
    assert kept.task == "rg:lcm" and kept.library != first.library
    ran: list[bench.Run] = []

    def runner(r, out_, settings, tests, log):
        ran.append(r)
        result = _result(r, 1.0 if r.arm == "library" else 0.5)
        path = bench.run_path(out_, r)
        path.mkdir(parents=True)
        (path / "result.json").write_text(json.dumps(result))
        return result

    finished = order[:4]
    for r in finished:
        runner(r, out, {}, None, print)
    ran.clear()
    results = bench.run_all(out, _settings(), split, runner, log=lambda m: None)
    assert ran == order[4:]
    assert len(results) == len(order)
    assert bench.run_all(out, _settings(), split, runner) == results and ran == order[4:]
    table = report.rows(results, split)
    lib = next(r for r in table if r["arm"] == "library" and r["task"] == "rg:lcm")
    assert lib["gain_vs_proposer"][:1] == [0.5] and lib["library_as_operator"] == 0.0
    assert report.summary(table)["targets"]["library >= proposer + 0.30"] is True


def test_another_split_in_the_same_out_is_refused(tmp_path, types) -> None:
    out = tmp_path / "out"
    bench.write_split(out, bench.plan(_settings(), types, avoid=[]))
    other = bench.plan(_settings(train=["rg:count_bits"]), types, avoid=[])
    with pytest.raises(bench.PlanError, match="fixes another split"):
        bench.write_split(out, other)


def test_a_look_at_the_finished_runs_prints_their_table_and_runs_nothing(tmp_path, types,
                                                                          capsys) -> None:
    """`--finished`: the table of the runs a bench (maybe still running elsewhere) has finished;
    no run, no server, no file written; an OUT with no bench in it is one line."""
    settings = tmp_path / "bench.toml"
    settings.write_text('train = ["rg:count_bits", "rg:power_function"]\nheld_out = ["rg:lcm"]\n'
                        'control = "rg:number_sorting"\nmin_types = 1\nseeds = [0]\n')
    out = tmp_path / "out"
    look = dict(smoke=False, settings=settings, types=types, out=out, as_json=False,
                finished=True)
    with pytest.raises(typer.BadParameter, match="no bench here yet") as err:
        bench_experience(**look)
    assert "\n" not in str(err.value) and not out.exists()
    split = bench.plan(bench.load_settings(settings), types)
    bench.write_split(out, split)
    order = bench.runs(out, split)
    for r in order[:4]:  # train, train, then rg:lcm's proposer and library arms
        path = bench.run_path(out, r)
        path.mkdir(parents=True)
        (path / "result.json").write_text(json.dumps(_result(r, 1.0 if r.arm == "library"
                                                              else 0.5)))
    before = sorted((p, p.stat().st_mtime_ns) for p in out.rglob("*"))
    bench_experience(**look)
    shown = capsys.readouterr().out
    assert f"4 of {len(order)} runs finished in {out}" in shown
    assert "| rg:lcm | library | 4 | 0.000 | 1.000 | +0.500 [+0.500, +0.500] |" in shown
    assert "| rg:lcm | operators |" not in shown  # not run yet
    assert sorted((p, p.stat().st_mtime_ns) for p in out.rglob("*")) == before


def test_the_plot_has_a_score_panel_and_a_solver_calls_panel(tmp_path, types) -> None:
    from PIL import Image

    split = bench.plan(_settings(), types, avoid=[])
    results = [_result(r, 1.0 if r.arm == "library" else 0.5) for r in bench.runs(tmp_path, split)]
    table = report.rows(results, split)
    md, js, png = report.write(tmp_path, table, report.summary(table), "title\nsubtitle")
    assert "| rg:lcm | library |" in md.read_text() and json.loads(js.read_text())["rows"]
    with Image.open(png) as image:  # two panels, 7 inches at 120 dpi
        assert image.format == "PNG" and image.size[1] == 840
