"""`bench peers --scale qwen`: the arms' configuration (ours with and without operators, the
peers with and without the block menu), the menu reaching GEPA's real reflection prompt and
OpenEvolve's real system message, the budget that lets each peer propose 3 times, the Solver a
setting of the scale (Qwen started for real), and the head-to-head figure printed under the
table from stored runs."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from harness_learning.cli import app
from harness_learning.harnesses.edits.operators import OPERATORS
from harness_learning.harnesses.llm.models import QWEN_CODER, local_model
from harness_learning_lab.bench import peers_report, peers_stats
from harness_learning_lab.bench.peers import Endpoints, base_config, load_settings, run_path
from harness_learning_lab.bench.peers_gepa import background, menu_text
from harness_learning_lab.bench.peers_systems import adapter_config, openevolve_config

pytest.importorskip("gepa")
pytest.importorskip("openevolve")

BLOCKS = [op.block for op in OPERATORS.values()  # the menu's: demonstrations are the operator's
          if op.transform is None and not op.demonstrations]
SMOKE_BUDGET = load_settings(scale="qwen", smoke=True)["budget"]
ARMS = {"best_valid+ops", "best_valid", "gepa", "gepa+menu", "openevolve", "openevolve+menu"}


def test_the_qwen_scale_has_qwen_as_solver_every_arm_and_default_difficulty():
    qwen, smoke, cpu = load_settings(scale="qwen"), load_settings(scale="qwen", smoke=True), \
        load_settings(scale="cpu")
    assert qwen["solver_model"] == smoke["solver_model"] == QWEN_CODER
    assert "solver_model" not in cpu  # the other scales keep SmolLM2
    assert set(qwen["systems"]) == ARMS and len(qwen["seeds"]) >= 2
    assert set(qwen["gain_tasks"]) == {"rg:products", "rg:chain_sum"}
    assert "rg:letter_counting" in qwen["tasks"] and qwen["task_configs"] == {}
    assert len(smoke["tasks"]) == len(smoke["seeds"]) == 1 and smoke["budget"] < qwen["budget"]
    assert {"best_valid+ops", "gepa+menu", "openevolve+menu"} <= set(smoke["systems"])


def test_ours_with_operators_differs_from_its_ablation_in_the_operators_only(tmp_path):
    settings = load_settings(scale="qwen")
    ends = Endpoints("http://127.0.0.1:1/v1", "qwen", "http://127.0.0.1:2/v1", "qwen")
    base = base_config(settings, ends, SimpleNamespace(base_url="http://127.0.0.1:3/v1"),
                       "rg:products", 0, {})
    ops, plain = (adapter_config(s, base, tmp_path).model_dump() for s in ("best_valid+ops",
                                                                     "best_valid"))
    assert (ops.pop("operators"), plain.pop("operators")) == ("auto", "none")
    assert ops == plain and ops["policy"] == "best_valid"
    assert ops["operators_per_round"] == settings["operators_per_round"]
    assert ops["edit_format"] == "function"


def test_the_budget_lets_each_peer_propose_three_times():
    """GEPA's third reflection starts while calls < budget even if both earlier children beat
    their parent (minibatch for parent and child, then the full dev set), at a call a problem;
    OpenEvolve runs max_proposals iterations, all paid for by the budget; our third round,
    an operator candidate beside the Proposer's, is adopted within the budget (a take-over
    after it does not count), in the smoke our one round."""
    s = load_settings(scale="qwen")
    assert s["max_proposals"] >= 3
    minibatch = 3
    assert s["n_dev"] + 2 * (2 * minibatch + s["n_dev"]) < s["budget"]
    assert min(s["max_proposals"], -(-(s["budget"] - s["n_dev"]) // s["n_dev"])) >= 3
    rounds = s["max_proposals"] // s["candidates"]
    one_round = s["feedback"] + (s["candidates"] + s["operators_per_round"]) * s["n_dev"]
    assert rounds >= 3 and s["n_dev"] + 3 * one_round <= s["budget"]  # ours+ops: 3 that count
    small = load_settings(scale="qwen", smoke=True)
    assert small["n_dev"] + small["feedback"] + 2 * small["n_dev"] <= small["budget"]


def test_the_menu_reaches_gepas_reflection_prompt_and_openevolves_system_message():
    from gepa.optimize_anything import _build_reflection_prompt_template
    from openevolve.prompt.sampler import PromptSampler

    menu = menu_text(200)
    assert all(block in menu for block in BLOCKS) and "harness_learning.harnesses.blocks" in menu
    with_menu = _build_reflection_prompt_template("objective", background(200, menu=True))
    without = _build_reflection_prompt_template("objective", background(200, menu=False))
    assert menu in with_menu and "build_graph(tools)" in without
    assert not any(block in without for block in BLOCKS) and "harnesses.blocks" not in without

    def system(menu: bool) -> str:
        config = openevolve_config(menu=menu)
        return PromptSampler(config.prompt).build_prompt(current_program="x = 1",
                                                         program_metrics={"combined_score": 0.5})["system"]

    assert system(True).endswith(menu) and system(True).startswith(system(False).rstrip())
    assert not any(block in system(False) for block in BLOCKS)


def run_of(system: str, task: str, seed: int, scores: dict[str, float], calls: int = 3) -> dict:
    final = sum(scores.values()) / len(scores)
    return {"system": system, "task": task, "seed": seed, "budget": SMOKE_BUDGET,
            "final_test": final,
            "final_problems": scores, "curve": [{"solver_calls": 0, "sha": "s", "test": final}],
            "solver_calls": 8, "proposer_calls": calls, "proposer_tokens": 10, "wall_s": 1.0}


def grid() -> list[dict]:
    """Ours gains 1.0 on p1 of products and 0.5 on chain_sum against the better peer;
    the worse peer and the control task (letters) must not count."""
    rows = []
    for seed in (0, 1):
        rows += [run_of("best_valid+ops", "rg:products", seed, {"p1": 1.0, "p2": 1.0}),
                 run_of("best_valid", "rg:products", seed, {"p1": 0.0, "p2": 1.0}),
                 run_of("gepa", "rg:products", seed, {"p1": 0.0, "p2": 1.0}, calls=4),
                 run_of("gepa+menu", "rg:products", seed, {"p1": 0.0, "p2": 0.0}),
                 run_of("best_valid+ops", "rg:chain_sum", seed, {"c1": 1.0, "c2": 1.0}),
                 run_of("best_valid", "rg:chain_sum", seed, {"c1": 1.0, "c2": 1.0}),
                 run_of("gepa", "rg:chain_sum", seed, {"c1": 0.0, "c2": 0.0}),
                 run_of("gepa+menu", "rg:chain_sum", seed, {"c1": 1.0, "c2": 0.0}),
                 run_of("best_valid+ops", "rg:letters", seed, {"l1": 0.0}),
                 run_of("best_valid", "rg:letters", seed, {"l1": 0.0}),
                 run_of("gepa", "rg:letters", seed, {"l1": 1.0}),
                 run_of("gepa+menu", "rg:letters", seed, {"l1": 1.0})]
    return rows


def test_the_figure_is_ours_minus_the_better_peer_over_the_gain_tasks_only():
    h2h = peers_stats.head_to_head(grid(), ["rg:products", "rg:chain_sum"])
    rows = {(r["task"], r["versus"]): r for r in h2h["rows"]}
    assert rows[("rg:products", "better peer")]["other"] == "gepa"
    assert rows[("rg:chain_sum", "better peer")]["other"] == "gepa+menu"
    assert rows[("rg:products", "better peer")]["gain"] == pytest.approx(0.5)
    assert rows[("rg:products", "better peer")]["n"] == 2  # 2 problems, each over 2 seeds
    assert rows[("rg:letters", "better peer")]["gain"] == -1.0
    assert not rows[("rg:letters", "better peer")]["in_figure"]
    assert rows[("rg:products", "ablation")]["gain"] == pytest.approx(0.5)
    figure = h2h["figure"]
    assert figure["gain"] == pytest.approx(0.5) and figure["tasks"] == ["rg:products",
                                                                         "rg:chain_sum"]
    lo, hi = figure["ci95"]
    assert 0.0 <= lo < 0.5 < hi <= 1.0
    assert peers_stats.head_to_head([r for r in grid() if r["system"] != "best_valid+ops"],
                                    ["rg:products"]) is None


def test_more_seeds_over_the_same_problems_do_not_narrow_the_interval():
    """The seeds share the held-out problems: a problem is one unit however many seeds scored
    it, so twenty seeds that agree give the interval of two."""
    def rows(seeds: int) -> list[dict]:
        return [run_of(system, "rg:products", seed, scores) for seed in range(seeds)
                for system, scores in (("best_valid+ops", {"p1": 1.0, "p2": 1.0, "p3": 0.0}),
                                       ("gepa", {"p1": 0.0, "p2": 1.0, "p3": 0.0}))]

    two, twenty = (peers_stats.head_to_head(rows(n), ["rg:products"])["figure"]
                   for n in (2, 20))
    assert two["gain"] == twenty["gain"] == pytest.approx(1 / 3, abs=1e-4)
    assert twenty["ci95"] == two["ci95"] and two["ci95"][0] == 0.0


def test_the_command_prints_the_fewest_proposals_and_the_figure_from_stored_runs(tmp_path):
    """A finished grid is read back without starting a model: the table's min/run column
    and the figure under it come from the stored results."""
    settings = load_settings(scale="qwen", smoke=True)
    tasks, systems = settings["tasks"], settings["systems"]
    for r in grid():
        if r["task"] in tasks and r["system"] in systems and r["seed"] in settings["seeds"]:
            path = run_path(tmp_path, r["task"], r["system"], r["seed"]) / "result.json"
            path.parent.mkdir(parents=True)
            path.write_text(json.dumps(r))
    for system in set(systems) - {"best_valid+ops", "best_valid", "gepa+menu"}:
        path = run_path(tmp_path, tasks[0], system, 0) / "result.json"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(run_of(system, tasks[0], 0, {"p1": 0.0, "p2": 0.0}, 5)))
    result = CliRunner().invoke(app, ["bench", "peers", "--scale", "qwen", "--smoke", "--out",
                                      str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    assert "Proposer calls (min/run)" in result.output and "(  3)" in result.output
    assert "figure: mean over rg:products of (best_valid+ops - better peer) = +1.000" in \
        result.output
    h2h = json.loads(result.output.strip().splitlines()[-1])["head_to_head"]
    assert h2h["figure"]["gain"] == 1.0
    products = [r for r in grid() if r["task"] == "rg:products"]
    assert peers_report.summarize(products)["gepa"]["proposer_calls_min"] == 4


def test_the_plot_of_a_grid_read_part_way_is_titled_by_the_runs_it_draws():
    """`--finished --plot` on a grid half done: the title counts the finished runs' tasks and
    seeds, not the settings' plan (it used to say 2 seeds with only seed 0 finished)."""
    settings = {"tasks": ["rg:products", "rg:chain_sum"], "seeds": [0, 1], "budget": 40,
                "solver_model": "qwen2.5-coder-1.5b"}
    seed0 = [r for r in grid() if r["seed"] == 0 and r["task"] == "rg:products"]
    title = peers_report.plot_title(seed0, settings)
    assert title.startswith(f"bench peers: 1 task(s) x 1 seed(s), {len(seed0)} runs, budget 40")
    assert peers_report.plot_title(grid(), settings).startswith(
        f"bench peers: 3 task(s) x 2 seed(s), {len(grid())} runs")


@pytest.mark.slow
def test_the_scales_solver_model_is_the_one_started():
    """`endpoints` starts the scale's Solver (Qwen here, a server of its own), not SmolLM2."""
    import urllib.request

    from harness_learning_lab.bench.peers import endpoints

    with endpoints(proposer="p@http://127.0.0.1:9/v1", solver_model=QWEN_CODER) as ends:
        assert ends.solver_alias == local_model(QWEN_CODER).alias
        with urllib.request.urlopen(ends.solver_url + "/models", timeout=30) as resp:
            served = [m["id"] for m in json.loads(resp.read())["data"]]
    assert local_model(QWEN_CODER).alias in served


def test_a_scale_without_its_own_smoke_table_is_refused_in_one_line(tmp_path, capsys):
    from harness_learning.cli.main import main

    with pytest.raises(SystemExit) as exit_:
        main(["bench", "peers", "--scale", "cpu", "--smoke", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "no [cpu.smoke] table" in err and "· hint:" in err
    assert not (tmp_path / "o").exists()


def test_a_run_stored_at_another_budget_is_refused_not_read_back(tmp_path, capsys):
    """Two scales in one --out would otherwise report the other scale's runs as this one's."""
    from harness_learning.cli.main import main

    settings = load_settings(scale="qwen", smoke=True)
    for system in settings["systems"]:
        path = run_path(tmp_path, settings["tasks"][0], system, 0) / "result.json"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps({**run_of(system, settings["tasks"][0], 0, {"p1": 1.0}),
                                    "budget": settings["budget"] + 1}))
    with pytest.raises(SystemExit) as exit_:
        main(["bench", "peers", "--scale", "qwen", "--smoke", "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "was run with a budget of" in err
