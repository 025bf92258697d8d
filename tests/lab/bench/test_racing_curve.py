"""The racing trade-off curve: frontier by call saving, rule points, table, plot and CLI."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from harness_learning.cli import app
from harness_learning.graphs.adapter.racing import RaceRule
from harness_learning_lab.bench import racing_curve

RULES = {"full": RaceRule(z=1e9, keep=None),
         "halving": RaceRule(fractions=(0.25, 0.5, 1.0), keep=(0.5,))}


def test_the_frontier_falls_as_the_saving_grows_and_rules_are_placed_on_it():
    figures = racing_curve.curve(ratios=(1.25, 2.0, 2.5, 10.0), seeds=300, problems=32,
                                 rules=RULES)
    front = figures["frontier"]
    assert [f["min_ratio"] for f in front] == [1.25, 2.0, 2.5]  # no schedule saves 10x
    assert all(f["call_ratio"] >= f["min_ratio"] for f in front)
    worst = [f["worst_quality"] for f in front]
    assert worst == sorted(worst, reverse=True) and worst[0] > worst[-1]
    full, halving = figures["rules"]
    assert full["call_ratio"] == 1.0 and full["worst_quality"] == 1.0  # it *is* full evaluation
    assert halving["call_ratio"] > 1.9 and halving["keep"] == [0.5]
    assert racing_curve.crossing(figures, target=0.0) == max(f["call_ratio"] for f in front)
    assert racing_curve.crossing(figures, target=1.01) is None
    text = racing_curve.table(figures)
    assert "frontier >= 2x" in text and "rule halving" in text


def test_plot_writes_a_png(tmp_path):
    figures = racing_curve.curve(ratios=(1.5, 2.0), seeds=100, problems=16, rules=RULES)
    path = racing_curve.plot(figures, tmp_path / "sub" / "curve.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bench_racing_curve_prints_the_table_writes_the_plot_and_json(tmp_path):
    plot = tmp_path / "curve.png"
    result = CliRunner().invoke(app, ["bench", "racing", "--seeds", "60", "--problems", "16",
                                      "--curve", "--plot", str(plot), "--json"])
    assert result.exit_code == 0, result.output
    assert "racing's trade-off" in result.output and plot.exists()
    figures = json.loads(result.output.strip().splitlines()[-1])
    assert [r["rule"] for r in figures["curve"]["rules"]] == list(racing_curve.RULES)


def test_bench_racing_simulates_the_rule_it_is_given():
    never_drop = json.dumps({"z": 1e9, "keep": None})
    result = CliRunner().invoke(app, ["bench", "racing", "--seeds", "40", "--problems", "16",
                                      "--race", never_drop, "--json"])
    assert result.exit_code == 0, result.output
    figures = json.loads(result.output.strip().splitlines()[-1])
    assert figures["call_ratio"] == 1.0 and figures["choice_quality_ratio"] == 1.0
    assert figures["rule"]["keep"] is None
    bad = CliRunner().invoke(app, ["bench", "racing", "--race", '{"keep": [2]}'])
    assert bad.exit_code == 2 and "keep must be None or fractions" in bad.output
