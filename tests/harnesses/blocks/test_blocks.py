"""Each building block's mechanism, with a real Solver at temperature 0 in the real sandbox, one
problem each: what the block sends the Solver and the tools follows from what came back (the
fix prompt carries the traceback, the vote takes the majority, ...). Qwen2.5-Coder-1.5B for the
blocks whose mechanism needs a Solver that follows instructions; SmolLM2-135M where the trace
shows the mechanism whatever the Solver says (the answer prompt holds the passages, the final
answer is the extracted span)."""

from __future__ import annotations

import asyncio

import pytest
from renamed_qa import RENAMED_TWO_HOP

from harness_learning.harnesses.blocks import majority, normalise_short
from harness_learning.harnesses.blocks.qa import ANSWER_FROM_PASSAGES, Shown, bounded, within
from harness_learning.harnesses.blocks.reasoning import last_line
from harness_learning.harnesses.edits.operators import OPERATORS, apply_operator
from harness_learning.harnesses.llm import get_client
from harness_learning.harnesses.sandbox import Worker
from harness_learning.harnesses.seeds import seed_source
from harness_learning.harnesses.toolbox import Toolbox
from harness_learning.retrieval.passage import Passage

pytestmark = pytest.mark.slow

HEAD = '''from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict
from harness_learning.harnesses.blocks import *


class State(TypedDict, total=False):
    question: str
    answer: str


'''
DIRECT = HEAD + '''def build_direct(tools):
    def solve(state: State) -> dict:
        return {"answer": tools.llm(state["question"] + "\\nReply with the answer only.").strip()}

    graph = StateGraph(State)
    graph.add_node("solve", solve)
    graph.add_edge(START, "solve")
    graph.add_edge("solve", END)
    return graph


'''
SEARCHING = HEAD + '''def build_searching(tools):
    def solve(state: State) -> dict:
        found = " ".join(p.text for p in tools.search(state["question"], 2))
        reply = tools.llm(f"Facts: {found}\\nQuestion: {state['question']}\\nShort answer:")
        return {"answer": reply.strip().splitlines()[0] if reply.strip() else ""}

    graph = StateGraph(State)
    graph.add_node("solve", solve)
    graph.add_edge(START, "solve")
    graph.add_edge("solve", END)
    return graph


'''
PASSAGES = [("Mara Lind", "Mara Lind is a painter born in the town of Oskarby."),
            ("Oskarby", "Oskarby is a town in Sweden on the river Ljusnan."),
            ("Ljusnan", "The Ljusnan is a river in central Sweden."),
            ("Tomas Berg", "Tomas Berg is a chemist born in Uppsala."),
            ("Uppsala", "Uppsala is a city north of Stockholm.")]


class TinyBM25:
    """A real BM25 (rank-bm25) over a handful of passages."""

    def __init__(self) -> None:
        from rank_bm25 import BM25Okapi

        self.engine = BM25Okapi([f"{t} {x}".lower().split() for t, x in PASSAGES])

    def search(self, query: str, k: int = 5) -> list[Passage]:
        scores = self.engine.get_scores(query.lower().replace("?", " ").split())
        order = sorted(range(len(PASSAGES)), key=lambda i: -scores[i])[:k]
        return [Passage(*PASSAGES[i], float(scores[i]), str(i)) for i in order]


def run(source: str, question: str, retriever=None, solver: str = "local:qwen2.5-coder-1.5b",
        max_tokens: int = 160):
    """One problem in a real worker; its result (answer and the trace of every tool call)."""
    toolbox = Toolbox(solver=get_client(solver), retriever=retriever,
                      solver_params={"temperature": 0.0, "max_tokens": max_tokens})

    async def main():
        async with Worker(toolbox) as worker:
            await worker.load(source)
            return await worker.run("p", {"question": question})

    result = asyncio.run(main())
    assert result.error is None, result.error
    return result


def llm_calls(result) -> list:
    return [c for c in result.calls if c.tool == "llm"]


def text_of(call) -> str:
    """Everything a Solver call was sent, as one string."""
    messages = call.args["messages"]
    return messages if isinstance(messages, str) else "\n".join(m["content"] for m in messages)


def test_the_interpreter_loop_sends_the_traceback_back_for_a_fix(qwen_url) -> None:
    source = HEAD + '''def build_graph(tools):
    def solve(state: State) -> dict:
        run = interpreter_loop(tools, state["question"], retries=1)
        return {"answer": run.answer or "none"}

    graph = StateGraph(State)
    graph.add_node("solve", solve)
    graph.add_edge(START, "solve")
    graph.add_edge("solve", END)
    return graph
'''
    result = run(source, "Use numpy to compute the determinant of the matrix [[2, 1], [7, 4]].")
    tools = [c.tool for c in result.calls]
    assert tools[:2] == ["llm", "python"]
    first_error = result.calls[1].result["error"]
    assert "numpy" in first_error  # the sandbox's interpreter has no numpy
    fix = llm_calls(result)[1]
    assert first_error.strip().splitlines()[-1] in text_of(fix)  # the traceback goes back
    ran = [c for c in result.calls if c.tool == "python" and not c.result["error"]]
    assert result.answer == (last_line(ran[-1].result["stdout"]) if ran else "none")


def test_the_vote_takes_the_majority_of_sampled_answers(qwen_url) -> None:
    source = DIRECT + "def build_graph(tools):\n    return with_vote(tools, build_direct, n=3)\n"
    result = run(source, "What is 17 * 23?")
    calls = llm_calls(result)
    assert [c.args["params"].get("seed") for c in calls] == [0, 1, 2]
    assert all(c.args["params"]["temperature"] == 0.7 for c in calls)
    assert result.answer == majority([c.result.strip() for c in calls])


def test_verify_checks_the_answer_and_retries_only_on_a_wrong_verdict(qwen_url) -> None:
    source = DIRECT + "def build_graph(tools):\n    return with_verify(tools, build_direct)\n"
    result = run(source, "What is 3 to the power of 7?")
    calls = llm_calls(result)
    solves, checks = calls[0::2], calls[1::2]
    assert len(solves) == len(checks) >= 1
    for solve, check in zip(solves, checks, strict=True):
        assert f"Proposed answer: {solve.result.strip()}" in text_of(check)
    verdicts = [c.result.rsplit("Verdict:", 1)[-1].strip().lower() for c in checks]
    assert all(v.startswith("wrong") for v in verdicts[:-1])  # a retry only after 'wrong'
    assert len(solves) == 3 or not verdicts[-1].startswith("wrong")
    assert result.answer == solves[-1].result.strip()


def test_the_plan_is_written_first_and_solved_with(qwen_url) -> None:
    source = DIRECT + "def build_graph(tools):\n    return with_plan(tools, build_direct)\n"
    result = run(source, "A shop sells pens at 3 euros. How much do 4 pens and a 5 euro book cost?")
    plan, solve = llm_calls(result)
    assert "numbered steps" in text_of(plan)
    assert f"Steps to follow:\n{plan.result.strip()}" in text_of(solve)


def test_few_shot_solves_after_the_declared_demonstrations(qwen_url) -> None:
    source = DIRECT + (
        'DEMONSTRATIONS = [("What is 6 * 7?", "42"), ("What is 9 * 9?", "81")]\n\n\n'
        "def build_graph(tools):\n"
        "    return with_demonstrations(tools, build_direct, DEMONSTRATIONS)\n")
    result = run(source, "What is 8 * 7?")
    (call,) = llm_calls(result)  # no extra Solver call: the examples ride in the one prompt
    sent = text_of(call)
    assert sent.index("Problem: What is 6 * 7?\nAnswer: 42") < sent.index("What is 8 * 7?")
    assert "Problem: What is 9 * 9?\nAnswer: 81" in sent
    assert result.answer == call.result.strip()


def test_query_rewriting_searches_with_the_solvers_query_and_the_original(qwen_url) -> None:
    source = SEARCHING + "def build_graph(tools):\n    return with_query_rewrite(tools, build_searching)\n"
    question = "In which country was the painter Mara Lind born?"
    result = run(source, question, TinyBM25())
    rewrite = llm_calls(result)[0]
    searches = [c.args["query"] for c in result.calls if c.tool == "search"]
    wanted = rewrite.result.split("Query:", 1)[-1].strip().splitlines()[0].strip().strip('"')
    assert "search query" in text_of(rewrite) and searches == [wanted or question, question]


def test_the_extra_hop_searches_for_the_missing_fact(qwen_url) -> None:
    source = SEARCHING + "def build_graph(tools):\n    return with_extra_hop(tools, build_searching)\n"
    question = "On which river lies the birthplace of Mara Lind?"
    result = run(source, question, TinyBM25())
    follow = llm_calls(result)[0]
    searches = [c.args["query"] for c in result.calls if c.tool == "search"]
    assert "still missing" in text_of(follow) and searches[0] == question
    query = follow.result.split("Query:", 1)[-1].strip().splitlines()
    assert len(searches) == (2 if query and query[0].strip() else 1)
    if len(searches) == 2:
        assert searches[1] == query[0].strip().strip('"')


def test_draft_and_check_searches_again_with_the_draft(qwen_url) -> None:
    source = SEARCHING + "def build_graph(tools):\n    return with_check(tools, build_searching)\n"
    question = "Where was the chemist Tomas Berg born?"
    result = run(source, question, TinyBM25())
    draft_call, check = llm_calls(result)
    draft = draft_call.result.strip().splitlines()[0]
    searches = [c.args["query"] for c in result.calls if c.tool == "search"]
    assert searches == [question, f"{question} {draft}"]
    assert f"Draft answer: {draft}" in text_of(check)


SMOL = "local:smollm2-135m"


def test_the_answer_reads_the_passages_of_every_hop_not_the_notes(local_model_url) -> None:
    source = apply_operator(OPERATORS["passages"], seed_source("multihop_two_hop"))
    question = "On which river lies the birthplace of Mara Lind?"
    result = run(source, question, TinyBM25(), SMOL, max_tokens=16)
    searches = [c for c in result.calls if c.tool == "search"]
    hop1, _hop2, from_notes, answer = llm_calls(result)  # the harness's 3, then the block's
    assert len(searches) == 2  # both hops still search; the summaries wrote the second query
    sent = text_of(answer)
    assert "Answer the question from the passages" in sent
    for call in searches:
        for p in call.result:
            assert f"[{p['title']}] {p['text']}" in sent  # every hop's passages, whole here
    shown = [Shown(p["title"], p["text"]) for c in searches for p in c.result]
    # Exactly the question and the passages: the notes steer the query, never the answer.
    assert sent == ANSWER_FROM_PASSAGES.format(question=question, passages=bounded(shown))
    assert hop1.result.partition("Query:")[2].strip() in ("", searches[1].args["query"])
    read, notes = (first_after_answer(c.result) for c in (answer, from_notes))
    assert result.answer == (read or notes)  # the notes' answer only when none was read


def first_after_answer(reply: str) -> str:
    """The first non-empty line after the last 'Answer:' of a reply."""
    lines = [x.strip() for x in reply.rsplit("Answer:", 1)[-1].splitlines() if x.strip()]
    return lines[0].strip('"') if lines else ""


def test_passages_then_short_answer_on_a_harness_named_unlike_the_seed(local_model_url) -> None:
    """Both QA operators stacked on a two-hop harness whose builder, state, nodes and helpers
    share no name with the seed: the passages of both its hops reach the answer prompt, and
    the short answer cuts that prompt's answer, not the harness's own."""
    source = apply_operator(OPERATORS["short_answer"],
                            apply_operator(OPERATORS["passages"], RENAMED_TWO_HOP))
    question = "Where was the chemist Tomas Berg born?"
    result = run(source, question, TinyBM25(), SMOL, max_tokens=16)
    searches = [c for c in result.calls if c.tool == "search"]
    _scout, _follow, conclude, read, short = llm_calls(result)
    assert len(searches) == 2 and all(c.args["k"] == 3 for c in searches)
    shown = [Shown(p["title"], p["text"]) for c in searches for p in c.result]
    assert text_of(read) == ANSWER_FROM_PASSAGES.format(question=question,
                                                        passages=bounded(shown))
    notes = conclude.result.strip().splitlines()
    long = first_after_answer(read.result) or (notes[0].strip() if notes else "")
    assert f"Answer: {long}\n" in text_of(short) and "shortest span" in text_of(short)
    span = normalise_short(short.result)
    assert result.answer == (span if span and within(span, long) else normalise_short(long))
    assert result.answer == result.answer.rstrip(".,;:!?\"' ")
    assert not result.answer.lower().startswith(("the ", "a ", "an "))
