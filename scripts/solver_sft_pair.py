"""Does the pair beat the harness alone? `train solver-sft` (Co-Harness's idea), measured.

Per seed: adapt the reasoning seed on letter_counting (3-5 words, where SmolLM2 scores about
0.5) with the local models and a large dev pool, so the Solver has successful calls to learn;
fine-tune SmolLM2 on the final version's successful Solver calls (`train solver-sft`); export
it (`train export`); then test the final version on the same held-out problems with the
original Solver and with the fine-tuned one (`eval --solver`). Finished steps are reused.

    python scripts/solver_sft_pair.py --out runs/solver-pair [--seeds 3] [--dev 96] [--test 48]

Prints a markdown table and, last, a JSON line (per arm: mean, ci95, per seed).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

from harness_learning.evals.stats import ci95 as t_interval

CLI = [str(Path(sys.executable).parent / "harness-learn")]  # the venv's command
TASK_CONFIG = {"min_words": 3, "max_words": 5}


def sh(*args: str) -> str:
    """One CLI command; its output (stops the script with the command's output on failure)."""
    done = subprocess.run([*CLI, *args], capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"{' '.join(args)} failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return done.stdout


def adapted(run_dir: Path, seed: int, dev: int, test: int) -> None:
    from harness_learning.graphs.adapter.api import adapt

    if (run_dir / "done").exists():
        return
    adapt(task="rg:letter_counting", run_dir=run_dir, seed=seed, rounds=2, candidates=2,
          feedback=8, selection=dev, policy="best_valid",
          task_options={"config": TASK_CONFIG, "n_dev": dev, "n_test": test, "seed": 0})
    (run_dir / "done").write_text("")


def final_test(run_dir: Path, solver: str) -> float:
    summary = json.loads(sh("eval", str(run_dir), "--solver", solver, "--json")
                         .strip().splitlines()[-1])
    return summary["final_score"]


def ci95(values: list[float]) -> float:
    """Half-width of the 95% t-interval over seeds (0 for one seed, so the table stays a number)."""
    return t_interval(values) or 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("runs/solver-pair"))
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--dev", type=int, default=96, help="dev pool (selection problems)")
    parser.add_argument("--test", type=int, default=48, help="held-out problems")
    args = parser.parse_args()
    arms: dict[str, list[float]] = {"harness alone": [], "harness + fine-tuned Solver": []}
    learned = []
    for seed in range(args.seeds):
        run_dir, train = args.out / f"run{seed}", args.out / f"solver{seed}"
        gguf = args.out / f"solver{seed}.gguf"
        print(f"seed {seed}: adapt", file=sys.stderr, flush=True)
        adapted(run_dir, seed, args.dev, args.test)
        data = train / "data.json"  # what `train solver-sft` read and kept
        if not gguf.exists():
            print(f"seed {seed}: train solver-sft, export", file=sys.stderr, flush=True)
            out = sh("train", "solver-sft", "--logs", str(run_dir), "--out", str(train))
            data.write_text(out.split("data: ", 1)[1].splitlines()[0])
            sh("train", "export", str(train / "checkpoint"), "--out", str(gguf))
        learned.append(json.loads(data.read_text())["calls_kept"] if data.exists() else None)
        print(f"seed {seed}: eval with both Solvers", file=sys.stderr, flush=True)
        arms["harness alone"].append(final_test(run_dir, "local"))
        arms["harness + fine-tuned Solver"].append(final_test(run_dir, f"local:{gguf}"))
    print(f"| arm | held-out mean (95% CI over {args.seeds} seeds) | per seed |\n|---|---|---|")
    for arm, scores in arms.items():
        print(f"| {arm} | {statistics.mean(scores):.3f} ± {ci95(scores):.3f} | "
              f"{', '.join(f'{s:.3f}' for s in scores)} |")
    print(json.dumps({arm: {"mean": statistics.mean(s), "ci95": ci95(s), "per_seed": s}
                      for arm, s in arms.items()} | {"calls_learned": learned}))


if __name__ == "__main__":
    main()
