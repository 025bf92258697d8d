"""Where the real dataset samples live: a setting, never a hard-coded path.

`HARNESS_LEARNING_DATA` names the folder; by default `../shared/data` next to the repository.
The project's code never needs it at run time (users pass their own dataset paths); tests,
benchmarks and examples read it.
"""

from __future__ import annotations

import os
from pathlib import Path

ENV_VAR = "HARNESS_LEARNING_DATA"
REPO_ROOT = Path(__file__).resolve().parent.parent


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
    "musique": "musique/musique_train_corpus.json",
    "2wiki": "2wikimultihopqa/2wikimultihopqa_corpus.json",
}
