"""A training run's metrics: one JSON line per step (metrics.jsonl) and a PNG of the curves.

The same log serves our offline loop and TRL's trainers (through `MetricsCallback`), with TRL's
key names mapped onto ours so every run plots the same curves.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments

CURVES = ("reward_mean", "reward_std", "loss", "kl", "grad_norm")
TRL_KEYS = {"reward": "reward_mean", "reward_std": "reward_std", "loss": "loss", "kl": "kl",
            "grad_norm": "grad_norm", "learning_rate": "learning_rate",
            "entropy": "entropy", "mean_token_accuracy": "token_accuracy"}


class MetricsLog:
    """Append-only metrics of one run under `out`."""

    def __init__(self, out: Path, keep_through: int = 0) -> None:
        """`keep_through`: a run resumed from that step keeps the rows logged up to it (the
        rows after it, from the killed attempt, are logged again by the resumed one)."""
        self.out = Path(out)
        self.out.mkdir(parents=True, exist_ok=True)
        self.path = self.out / "metrics.jsonl"
        self.rows: list[dict[str, float]] = []
        if keep_through > 0 and self.path.is_file():
            self.rows = [row for row in map(json.loads, self.path.read_text().splitlines())
                         if row.get("step", 0) <= keep_through]
        self.path.write_text("".join(json.dumps(row) + "\n" for row in self.rows))

    def log(self, step: int, **values: float | None) -> dict[str, float]:
        row = {"step": step}
        row.update({k: float(v) for k, v in values.items() if v is not None})
        self.rows.append(row)
        with self.path.open("a") as f:
            f.write(json.dumps(row) + "\n")
        return row

    def plot(self, title: str = "") -> Path:
        """Write metrics.png: one panel per curve present in the log."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        names = [c for c in CURVES if any(c in r for r in self.rows)]
        fig, axes = plt.subplots(1, max(len(names), 1), figsize=(3.2 * max(len(names), 1), 2.8),
                                 squeeze=False)
        for ax, name in zip(axes[0], names, strict=False):
            pts = [(r["step"], r[name]) for r in self.rows
                   if name in r and math.isfinite(r[name])]
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", markersize=3)
            ax.set_title(name)
            ax.set_xlabel("step")
        if title:
            fig.suptitle(title)
        fig.tight_layout()
        png = self.out / "metrics.png"
        fig.savefig(png, dpi=100)
        plt.close(fig)
        return png

    def summary(self) -> dict[str, float]:
        """The last value of every metric."""
        last: dict[str, float] = {}
        for row in self.rows:
            last.update(row)
        return last


def metrics_callback(log: MetricsLog, progress: object = None) -> TrainerCallback:
    """A transformers TrainerCallback that copies TRL's logged metrics into `log`."""
    from transformers import TrainerCallback

    class MetricsCallback(TrainerCallback):
        def on_log(self, args: TrainingArguments, state: TrainerState, control: TrainerControl,
                   logs: dict[str, float] | None = None, **kw: object) -> None:
            if not logs or "train_runtime" in logs:
                return
            values = {ours: logs[theirs] for theirs, ours in TRL_KEYS.items() if theirs in logs}
            log.log(int(state.global_step), **values)

    return MetricsCallback()
