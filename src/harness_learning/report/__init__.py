"""What a finished (or stopped) run did, read back from its execution log: the lineage, each
round's candidates with their outcome, diff and per-problem results, the Proposer's inputs and the
spend. `harness-learn show` prints it, `harness-learn report` writes it as one HTML file."""

from harness_learning.report.model import (
    CandidateRecord,
    RoundRecord,
    RunRecord,
    load_run,
)

__all__ = ["CandidateRecord", "RoundRecord", "RunRecord", "load_run"]
