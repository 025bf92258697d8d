"""The lab's commands on the product's command line: `harness-learn bench ...` and `harness-learn
experiment ...`. Importing this package registers them (the `harness_learning.commands` entry
point names it); each command loads the lab's code inside its body, so `harness-learn --help`
stays cheap."""

from harness_learning_lab.cli import (  # noqa: F401  (each module registers its commands)
    bench_blocks_cmd,
    bench_bm25_cmd,
    bench_cmd,
    bench_diversity_cmd,
    bench_experience_cmd,
    bench_judge_cmd,
    bench_qa_floor_cmd,
    bench_qa_relay_cmd,
    bench_sft_cmd,
    bench_task_types_cmd,
    experiment_cmd,
)
