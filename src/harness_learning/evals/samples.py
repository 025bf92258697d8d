"""Where the real dataset samples live: a setting, never a hard-coded path.

`HARNESS_LEARNING_DATA` names the folder; there is no default (an installed package has no
checkout to look beside): the tests, the benchmarks and the Makefile set it, and a command that
needs it without it says so in one line. The project's code never needs it at run time when
users pass their own dataset paths.
"""

from __future__ import annotations

import os
from pathlib import Path

ENV_VAR = "HARNESS_LEARNING_DATA"


class DataDirUnset(FileNotFoundError):
    """The data folder was needed and `HARNESS_LEARNING_DATA` is not set."""

    hint = ("point it at the folder of the QA samples (the tests, benchmarks and Makefile set "
            "it), or give a dataset file of your own")


def data_dir() -> Path:
    """The data folder `HARNESS_LEARNING_DATA` names (it may not exist); `DataDirUnset`
    when it is not set."""
    value = os.environ.get(ENV_VAR, "").strip()
    if not value:
        raise DataDirUnset(f"the data folder is not set: export {ENV_VAR}=<the folder holding "
                           "hotpotqa/, musique/, 2wikimultihopqa/>, or pass the dataset file "
                           "(--data)")
    return Path(value).expanduser()


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
