"""Where the real dataset samples live: a setting, never a hard-coded path.

`HARNESS_LEARNING_DATA` names the folder; by default `../shared/data` next to the repository.
The project's code never needs it at run time (users pass their own dataset paths); tests,
benchmarks and examples read it.
"""

from __future__ import annotations

import os
from pathlib import Path

ENV_VAR = "HARNESS_LEARNING_DATA"
REPO_ROOT = Path(__file__).resolve().parents[3]
"""The checkout (src/harness_learning/evals/ -> the repository root)."""


def data_dir() -> Path:
    """The data folder from the environment, else `<repo>/../shared/data` (may not exist)."""
    value = os.environ.get(ENV_VAR)
    return Path(value).expanduser() if value else REPO_ROOT.parent / "shared" / "data"


SAMPLE_FILES = {
    "hotpotqa": "hotpotqa/dev_hf_slice.jsonl",
    "musique": "musique/musique_train.json",
    "2wiki": "2wikimultihopqa/train_slice.json",
}
"""The real samples shipped in the data folder, per QA task (used when no path is given)."""

SAMPLE_CORPORA = {
    "hotpotqa": ("2wiki", "hotpotqa/dev_hf_slice.jsonl"),
    "musique": ("musique", "musique/musique_train_corpus.json"),
    "2wiki": ("2wiki", "2wikimultihopqa/train_slice.json"),
}
"""Per QA task, the (retrieval corpus kind, file) of a closed corpus its sample questions are
answerable from. HotpotQA and 2Wiki use their questions' own context paragraphs (the `2wiki`
kind reads both context layouts). `2wikimultihopqa/2wikimultihopqa_corpus.json` is the 2Wiki
*dev* corpus: it holds the evidence of only ~2% of the train-slice questions, so it is not used
for the sample."""
