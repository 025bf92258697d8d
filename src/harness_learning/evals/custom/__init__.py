"""A task of your own: a data file (JSONL, JSON, CSV or a saved `datasets` directory), a metric
and a description, or any class implementing `evals.task.Task` named `module:Class`.

    from harness_learning.evals.custom import DataTask
    task = DataTask("examples/your_own_agent/tasks.jsonl", metric="numeric:0.01")
"""

from harness_learning.evals.custom.datafile import DataFileError, load_examples
from harness_learning.evals.custom.metrics import METRIC_NAMES, Metric, MetricError, parse_metric
from harness_learning.evals.custom.task import DataTask

__all__ = ["METRIC_NAMES", "DataFileError", "DataTask", "Metric", "MetricError", "load_examples",
           "parse_metric"]
