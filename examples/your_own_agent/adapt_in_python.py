"""The same adaptation from Python, in ten lines (run from the repository root or anywhere:
paths are relative to this file)."""
import json
from pathlib import Path

from shop_tools import unit_price

import harness_learning as hl

here = Path(__file__).parent
rows = [json.loads(line) for line in (here / "tasks.jsonl").read_text().splitlines()]
result = hl.adapt(harness=str(here / "shop_harness.py"), trainset=rows, metric="numeric:0.01",
                  tools=[unit_price], rounds=1, candidates=1, feedback=2, selection=2,
                  task_options={"n_dev": 4, "n_test": 2}, run_dir="runs/shop-python")
print(result.best_round, result.best_score, result.lineage)
print(result.load().invoke({"question": "How much do 3 apples cost?", "fields": {"shop": "north"}}))
