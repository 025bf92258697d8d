"""`bench task-types`: which reasoning-gym types the interpreter block helps, decided before
any learner is scored.

Each type's seed is measured against the seed with the interpreter block applied (`bench
blocks`' arms, the same held-out problems and Solver), and the type is classed by the gain's
paired bootstrap 95% interval:

- `headroom`: a gain of at least `HEADROOM` (0.25) whose interval lies above 0: a type where
  writing code pays, so a Proposer that learned to write it has something to show;
- `control`: an interval that includes 0 or lies below it: the block does not help, so a
  learner must lose nothing there;
- `modest`: a gain above 0 but under `HEADROOM`: neither.

The learning experiments draw their training, held-out and control types from the file this
writes (`experiments/task_types.toml`), so the split is fixed before anything is learned.
"""

from __future__ import annotations

from pathlib import Path

HEADROOM = 0.25
ARM = "interpreter"


def classify(gain: float, lo: float) -> str:
    """The type's class from its gain and the lower end of the gain's 95% interval."""
    if lo <= 0:
        return "control"
    return "headroom" if gain >= HEADROOM else "modest"


def entries(rows: list[dict]) -> list[dict]:
    """One entry per type from `bench blocks`' rows (its seed row and its interpreter row)."""
    seeds = {r["task"]: r for r in rows if r["arm"] == "seed"}
    out = []
    for row in (r for r in rows if r["arm"] == ARM):
        seed = seeds[row["task"]]
        lo, hi = row["ci95"]
        out.append({"task": row["task"], "n": row["n"], "seed": seed["mean"],
                    "interpreter": row["mean"], "gain": row["gain"], "ci95": [lo, hi],
                    "class": classify(row["gain"], lo),
                    "solver_calls_per_problem": [seed["llm_calls_per_problem"],
                                                 row["llm_calls_per_problem"]]})
    return sorted(out, key=lambda e: (-e["gain"], e["task"]))


def to_toml(items: list[dict], header: str) -> str:
    """The entries as the TOML file the experiments read: a header comment, then one
    `[[type]]` table per type, most gain first."""
    lines = [f"# {line}".rstrip() for line in header.splitlines()]
    for cls in ("headroom", "modest", "control"):
        names = [e["task"] for e in items if e["class"] == cls]
        lines.append(f"{cls} = [{', '.join(repr(n).replace(chr(39), chr(34)) for n in names)}]")
    for e in items:
        lines += ["", "[[type]]", f'task = "{e["task"]}"', f'class = "{e["class"]}"',
                  f"n = {e['n']}", f"seed = {e['seed']}", f"interpreter = {e['interpreter']}",
                  f"gain = {e['gain']}", f"ci95 = [{e['ci95'][0]}, {e['ci95'][1]}]",
                  "solver_calls_per_problem = [{}, {}]".format(*e["solver_calls_per_problem"])]
    return "\n".join(lines) + "\n"


def table(items: list[dict]) -> str:
    """The entries as a Markdown table."""
    lines = ["| type | seed | interpreter | gain (95% CI) | class |", "|---|---|---|---|---|"]
    lines += [f"| {e['task']} | {e['seed']:.3f} | {e['interpreter']:.3f} | {e['gain']:+.3f} "
              f"[{e['ci95'][0]:+.3f}, {e['ci95'][1]:+.3f}] | {e['class']} |" for e in items]
    return "\n".join(lines)


def write(items: list[dict], path: Path, header: str) -> None:
    """Write the file whole, through a temporary file, so a reader never sees half of it."""
    tmp = path.with_suffix(".toml.tmp")
    tmp.write_text(to_toml(items, header))
    tmp.replace(path)
