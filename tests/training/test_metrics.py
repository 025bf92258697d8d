"""The metrics log and its PNG."""

import json
import math

from harness_learning.training.metrics import MetricsLog


def test_log_writes_lines_and_a_png(tmp_path):
    log = MetricsLog(tmp_path)
    log.log(1, reward_mean=0.2, reward_std=0.1, loss=0.5, kl=None, grad_norm=1.5)
    log.log(2, reward_mean=0.3, reward_std=0.05, loss=float("nan"), grad_norm=1.0)
    rows = [json.loads(line) for line in log.path.read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2]
    assert "kl" not in rows[0] and math.isnan(rows[1]["loss"])
    png = log.plot("t")
    assert png.read_bytes()[:4] == b"\x89PNG"
    assert log.summary()["reward_mean"] == 0.3


def test_callback_maps_trl_names(tmp_path):
    from types import SimpleNamespace

    from harness_learning.training.metrics import metrics_callback

    log = MetricsLog(tmp_path)
    cb = metrics_callback(log)
    state = SimpleNamespace(global_step=3)
    cb.on_log(None, state, None, logs={"reward": 0.4, "reward_std": 0.2, "loss": 0.1,
                                         "grad_norm": 2.0, "kl": 0.01})
    cb.on_log(None, state, None, logs={"train_runtime": 9.0})
    assert log.rows == [{"step": 3, "reward_mean": 0.4, "reward_std": 0.2, "loss": 0.1,
                         "kl": 0.01, "grad_norm": 2.0}]
