"""Multi-hop QA: dataset loaders (HotpotQA, MuSiQue, 2Wiki), official metrics, QA tasks."""

from harness_learning.evals.qa.datasets import QARecord, load_records
from harness_learning.evals.qa.metrics import best_metrics, exact_match, f1_score, normalize_answer
from harness_learning.evals.qa.reader import RecordError
from harness_learning.evals.qa.task import QATask

__all__ = ["QARecord", "QATask", "RecordError", "best_metrics", "exact_match", "f1_score",
           "load_records", "normalize_answer"]
