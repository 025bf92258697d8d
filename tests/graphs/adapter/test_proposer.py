"""The Proposer prompt (deterministic, complete) and parallel sampling."""

from __future__ import annotations

import asyncio

import pytest

from harness_learning.evals.rewards import group_advantages, proposal_reward
from harness_learning.graphs.adapter.proposer import (
    ProposeError,
    build_proposer_messages,
    propose,
    report_budget,
)
from harness_learning.harnesses.edits import parse_and_apply
from harness_learning.harnesses.seeds import seed_source
from harness_learning.harnesses.store import (
    Outcome,
    SQLiteLogStore,
    new_proposal,
    prompt_group_id,
)

SOURCE = seed_source("reasoning_direct")


def messages(fmt: str = "search_replace", report: str = "p1 wrong", limit: int = 200):
    return build_proposer_messages("Solve arithmetic puzzles.", SOURCE, report, fmt, limit)


def test_same_inputs_give_the_identical_prompt_and_group():
    assert messages() == messages()
    assert prompt_group_id(messages()) == prompt_group_id(messages())
    assert prompt_group_id(messages(report="p2 wrong")) != prompt_group_id(messages())


def test_prompt_holds_task_source_report_rules_and_constraints():
    system, user = messages(limit=150)
    assert system["role"] == "system" and user["role"] == "user"
    text = user["content"]
    assert "Solve arithmetic puzzles." in text
    assert SOURCE.strip() in text and f"({len(SOURCE.splitlines())} lines)" in text
    assert "p1 wrong" in text
    assert "At most 150 lines" in text
    assert "typing_extensions.TypedDict" in text and "`answer`" in text and "build_graph(tools)" in text
    # The tools API comes from harnesses.contract.Tools.
    assert "tools.search(query: str, k: int = 5) -> list[Passage]" in text
    assert "tools.python(code: str, timeout: float = 10.0) -> ExecResult" in text
    assert "tools.llm(messages_or_prompt: str | list[dict[str, str]], **params: Any) -> str" in text
    assert "<<<<<<< SEARCH" in text and "```python" not in text.split("## How to answer")[1]


def test_whole_program_rules_show_a_program_that_parses():
    text = messages("whole_program")[1]["content"]
    rules = text.split("## How to answer")[1]
    assert "<<<<<<< SEARCH" not in rules
    example = rules.split("```python\n")[-1].split("```")[0]
    compile(example, "example.py", "exec")
    assert "def build_graph(tools)" in example


def test_no_format_example_is_an_edit_of_a_seed():
    """A small Proposer copies an example verbatim, so no example may be a real edit of a
    seed: each format's rules, taken as a completion, apply to none of them."""
    from harness_learning.harnesses.edits import format_instructions
    from harness_learning.harnesses.seeds import SEEDS, seed_source

    for fmt in ("search_replace", "function"):
        rules = format_instructions(fmt)
        for name in SEEDS:
            c = parse_and_apply(seed_source(name), rules, fmt, "stop")
            assert not c.applied and c.failure is not None, (fmt, name)


def test_the_focused_prompt_names_one_function_and_lists_the_blocks():
    from harness_learning.graphs.adapter.proposer import NODE_BLOCKS, build_focused_messages

    text = build_focused_messages("Sums.", SOURCE, "report text", "solve")[1]["content"]
    assert "Rewrite the function `solve`" in text and "report text" in text
    assert all(sig in text for sig, _ in NODE_BLOCKS) and "<<<<<<< SEARCH" not in text


def test_without_the_block_menu_no_prompt_names_a_block_and_the_program_keeps_its_code():
    from harness_learning.graphs.adapter.proposer import (
        NODE_BLOCKS,
        build_focused_messages,
        build_proposer_messages,
    )
    from harness_learning.harnesses.edits.operators import BLOCKS_MODULE

    source = '"""A seed: prose the focused prompt leaves out."""\n' + SOURCE
    focused = build_focused_messages("Sums.", source, "report", "solve", blocks=False)[1]["content"]
    whole = build_proposer_messages("Sums.", source, "report", "whole_program", 40,
                                    blocks=False)[1]["content"]
    for text in (focused, whole):
        assert BLOCKS_MODULE not in text and not any(sig in text for sig, _ in NODE_BLOCKS)
    assert "prose the focused prompt" not in focused and "prose the focused prompt" in whole
    assert SOURCE.strip() in focused  # the code itself is shown whole
    assert BLOCKS_MODULE in build_proposer_messages("Sums.", source, "r", "whole_program",
                                                    40)[1]["content"]


def test_unknown_format_is_refused():
    with pytest.raises(ValueError, match="unknown edit format"):
        messages("diff")


def test_propose_samples_in_parallel_with_distinct_seeds(scripted):
    model = scripted(lambda text, params: f"seed={params['seed']} t={params['temperature']}")
    out = asyncio.run(propose(model, messages(), 4, seed=10, temperature=0.7))
    assert [c.text for c in out] == [f"seed={s} t=0.7" for s in (10, 11, 12, 13)]
    assert len(model.calls) == 4


def test_a_failed_sample_is_reported_with_the_others(scripted):
    def rule(text, params):
        if params["seed"] == 1:
            raise ConnectionError("endpoint gone")
        return "ok"

    with pytest.raises(ProposeError) as e:
        asyncio.run(propose(scripted(rule), messages(), 3))
    assert [c is None for c in e.value.completions] == [False, True, False]
    assert isinstance(e.value.errors[0], ConnectionError)


@pytest.mark.slow
def test_real_local_model_proposals_flow_into_candidates_log_and_rewards(local_model_url, tmp_path):
    """Real samples -> candidates -> execution log -> rewards -> one GRPO group."""
    from harness_learning.harnesses.llm import get_client

    client = get_client("local")
    msgs = messages()
    out = asyncio.run(propose(client, msgs, 2, seed=3, temperature=0.8, max_tokens=16))
    assert len(out) == 2
    with SQLiteLogStore(tmp_path) as store:
        for index, completion in enumerate(out):
            assert isinstance(completion.text, str) and completion.finish_reason in {"stop", "length"}
            draft = new_proposal(1, index, msgs, completion, "search_replace")
            store.put_proposal(draft)
            c = parse_and_apply(SOURCE, draft.completion, "search_replace", draft.finish_reason)
            assert c.applied or c.failure is not None
            reward, parts = proposal_reward(track="reasoning", parsed=c.parsed, applied=c.applied,
                                            valid=c.applied, completed_fraction=0.0, score=0.0,
                                            source=c.new_source)
            store.settle_proposal(draft.id, None, Outcome(
                parsed=c.parsed, applied=c.applied, reward=reward, reward_parts=parts,
                invalid_reason=c.failure and c.failure.kind))
        (group,) = store.iter_proposal_groups()
    assert group.prompt == msgs and [p.completion for p in group.proposals] == [c.text for c in out]
    assert all(p.reward is not None and p.reward >= 0 for p in group.proposals)
    assert len(group_advantages([p.reward for p in group.proposals])) == 2


def test_report_budget_leaves_room_for_the_rest_of_the_prompt_and_the_answer():
    args = ("Solve arithmetic puzzles.", SOURCE, "search_replace", 200)
    budget = report_budget(*args, context_tokens=8192, max_tokens=1024)
    prompt = build_proposer_messages(*args[:2], "r" * budget, *args[2:])
    assert sum(len(m["content"]) for m in prompt) <= (8192 - 1024) * 3.0
    assert budget > 0 and report_budget(*args, context_tokens=2048, max_tokens=2048) == 0


def test_focused_prompts_take_node_functions_in_turn_and_refuse_a_compiled_graph():
    """Format `function` names one node function per candidate, in turn; a parent that is only
    a compiled `graph` (a run reopened from before `prepare` refused one) is the one line that
    says why, not a prompt asking for a `build_graph` the program lacks."""
    from types import SimpleNamespace

    from harness_learning.graphs.adapter.propose import proposer_messages
    from harness_learning.harnesses.edits.function_edit import FOCUS_UNFIT

    ctx = SimpleNamespace(config=SimpleNamespace(edit_format="function", block_menu=True), user_tools=None,
                          task=SimpleNamespace(description="Sums."))
    two_hop = seed_source("multihop_two_hop")
    asked = [proposer_messages(ctx, {"round": 1, "index": i, "report": "r"}, two_hop)[1]["content"]
             for i in range(3)]
    assert [text.split("Rewrite the function `")[1].split("`")[0] for text in asked] \
        == ["hop1", "hop2", "answer"]
    compiled = "from langgraph.prebuilt import create_react_agent\n\ngraph = create_react_agent(None, [])\n"
    with pytest.raises(ValueError) as refused:
        proposer_messages(ctx, {"round": 1, "index": 0, "report": "r"}, compiled)
    assert str(refused.value) == FOCUS_UNFIT
