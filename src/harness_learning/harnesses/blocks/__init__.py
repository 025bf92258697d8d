"""Building blocks: general harness strategies, importable inside the sandbox.

Each block is pure code over `tools` and names no task. Two ways to use one:

- inside a node, as a function: `interpreter_loop(tools, question)`, `majority(answers)`,
  `verdict(tools, question, answer)`, `plan_steps(tools, question)`,
  `rewrite_query(tools, question)`, `extra_hop(tools, question, passages, k)`,
  `draft_and_check(tools, question, draft)`, `answer_from_passages(tools, question, passages)`,
  `short_answer(tools, question, answer)`;
- around a whole harness, as a graph combinator (what operator candidates write):
  `with_interpreter`, `with_vote`, `with_verify`, `with_plan`, `with_demonstrations`
  (reasoning; it also takes the demonstrations) and
  `with_query_rewrite`, `with_extra_hop`, `with_check`, `with_answer_from_passages`,
  `with_short_answer` (QA), each `(tools, build_graph)`.

`docs/BLOCKS.md` lists them with their measured effect per task.
"""

from harness_learning.harnesses.blocks.compose import (
    Sampled,
    with_answer_from_passages,
    with_check,
    with_demonstrations,
    with_extra_hop,
    with_interpreter,
    with_plan,
    with_query_rewrite,
    with_short_answer,
    with_verify,
    with_vote,
)
from harness_learning.harnesses.blocks.qa import (
    answer_from_passages,
    draft_and_check,
    extra_hop,
    normalise_short,
    rewrite_query,
    short_answer,
)
from harness_learning.harnesses.blocks.reasoning import (
    extract_code,
    interpreter_loop,
    majority,
    plan_steps,
    verdict,
    with_examples,
)

__all__ = [
    "Sampled",
    "answer_from_passages",
    "draft_and_check",
    "extra_hop",
    "extract_code",
    "interpreter_loop",
    "majority",
    "normalise_short",
    "plan_steps",
    "rewrite_query",
    "short_answer",
    "verdict",
    "with_answer_from_passages",
    "with_check",
    "with_demonstrations",
    "with_examples",
    "with_extra_hop",
    "with_interpreter",
    "with_plan",
    "with_query_rewrite",
    "with_short_answer",
    "with_verify",
    "with_vote",
]
