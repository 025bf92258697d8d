"""Each structure detector on small crafted sources (one that should fire, one that should not)
and on the shipped seeds, whose structure is known by reading them."""

from __future__ import annotations

import pytest

from harness_learning.harnesses.seeds import seed_source
from harness_learning_lab.experiments.structure import Structure, analyze, share

HEAD = '''
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict


class State(TypedDict, total=False):
    question: str
    passages: list
    notes: str
    draft: str
    answer: str
    code: str
    turns: int
'''

RAW_ANSWER = HEAD + '''
def show(ps):
    return "\\n".join(p.text for p in ps)


def build_graph(tools):
    def retrieve(state):
        return {"passages": tools.search(state["question"], 5)}

    def answer(state):
        reply = tools.llm(f"Passages:\\n{show(state['passages'])}\\nQ: {state['question']}")
        return {"answer": reply.strip()}

    g = StateGraph(State)
    g.add_node("retrieve", retrieve)
    g.add_node("answer", answer)
    g.add_edge(START, "retrieve")
    g.add_edge("retrieve", "answer")
    g.add_edge("answer", END)
    return g
'''

SUMMARY_ANSWER = RAW_ANSWER.replace(
    '''    def answer(state):
        reply = tools.llm(f"Passages:\\n{show(state['passages'])}\\nQ: {state['question']}")''',
    '''    def answer(state):
        notes = tools.llm("Summarise: " + show(state["passages"]))
        reply = tools.llm(f"Notes: {notes}\\nQ: {state['question']}")''')

MESSAGES_ANSWER = HEAD + '''
def build_graph(tools):
    def answer(state):
        messages = [{"role": "system", "content": "Answer briefly."}]
        for p in tools.search(state["question"], 3):
            messages.append({"role": "user", "content": p.text})
        return {"answer": tools.llm(messages)}

    g = StateGraph(State)
    g.add_node("answer", answer)
    g.add_edge(START, "answer")
    g.add_edge("answer", END)
    return g
'''

RESEARCH_IN_NODE = HEAD + '''
def build_graph(tools):
    def solve(state):
        passages = tools.search(state["question"], 5)
        draft = tools.llm("Q: " + state["question"] + " ".join(p.text for p in passages))
        if not any(draft.lower() in p.text.lower() for p in passages):
            passages = passages + tools.search(state["question"] + " " + draft, 5)
        return {"answer": draft}

    g = StateGraph(State)
    g.add_node("solve", solve)
    g.add_edge(START, "solve")
    g.add_edge("solve", END)
    return g
'''

RESEARCH_BY_ROUTE = HEAD + '''
def build_graph(tools):
    def retrieve(state):
        return {"passages": tools.search(state["question"], 5)}

    def draft(state):
        return {"draft": tools.llm("Q: " + state["question"])}

    def check(state):
        text = " ".join(p.text for p in state["passages"])
        if state["draft"] not in text:
            return "retrieve_more"
        return "finish"

    def retrieve_more(state):
        return {"passages": state["passages"] + tools.search(state["draft"], 5)}

    def finish(state):
        return {"answer": state["draft"]}

    g = StateGraph(State)
    g.add_node("retrieve", retrieve)
    g.add_node("draft", draft)
    g.add_node("retrieve_more", retrieve_more)
    g.add_node("finish", finish)
    g.add_edge(START, "retrieve")
    g.add_edge("retrieve", "draft")
    g.add_conditional_edges("draft", check)
    g.add_edge("retrieve_more", "finish")
    g.add_edge("finish", END)
    return g
'''

# Checks a constant against the passages: not a draft-answer check.
CONSTANT_CHECK = RESEARCH_IN_NODE.replace(
    "if not any(draft.lower() in p.text.lower() for p in passages):",
    'if not any("Paris" in p.text for p in passages):')

WHILE_CODE_LOOP = HEAD + '''
def build_graph(tools):
    def solve(state):
        out = ""
        for _ in range(3):
            code = tools.llm("Write Python for: " + state["question"] + out)
            out = tools.python(code, timeout=5).stdout
        return {"answer": out}

    g = StateGraph(State)
    g.add_node("solve", solve)
    g.add_edge(START, "solve")
    g.add_edge("solve", END)
    return g
'''

FIXED_CODE_LOOP = WHILE_CODE_LOOP.replace(
    'code = tools.llm("Write Python for: " + state["question"] + out)',
    'code = "print(1 + 1)"')

ONE_SHOT_CODE = HEAD + '''
def build_graph(tools):
    def solve(state):
        code = tools.llm("Write Python for: " + state["question"])
        return {"answer": tools.python(code, timeout=5).stdout}

    g = StateGraph(State)
    g.add_node("solve", solve)
    g.add_edge(START, "solve")
    g.add_edge("solve", END)
    return g
'''

LOOPED_SEARCH = HEAD + '''
def build_graph(tools):
    def solve(state):
        notes, query = "", state["question"]
        for _ in range(3):
            notes += tools.llm("Summarise: " + " ".join(p.text for p in tools.search(query, 3)))
            query = tools.llm("Next query given " + notes)
        return {"answer": tools.llm("Answer from notes: " + notes)}

    g = StateGraph(State)
    g.add_node("solve", solve)
    g.add_edge(START, "solve")
    g.add_edge("solve", END)
    return g
'''


def test_raw_passage_answering_needs_passages_in_the_answering_call():
    assert analyze(RAW_ANSWER).raw_passages
    assert analyze(MESSAGES_ANSWER).raw_passages
    assert not analyze(SUMMARY_ANSWER).raw_passages


def test_search_hops_count_call_sites_and_loops():
    assert analyze(RAW_ANSWER).search_hops == 1
    assert analyze(RESEARCH_IN_NODE).search_hops == 2
    assert analyze(LOOPED_SEARCH).search_hops == 2  # one site, in a loop
    assert not analyze(LOOPED_SEARCH).raw_passages  # answers from notes


def test_research_when_the_draft_is_absent():
    assert analyze(RESEARCH_IN_NODE).research_on_absent
    assert analyze(RESEARCH_BY_ROUTE).research_on_absent
    assert not analyze(CONSTANT_CHECK).research_on_absent
    assert not analyze(RAW_ANSWER).research_on_absent


def test_code_loop_needs_solver_written_code_in_a_loop():
    assert analyze(WHILE_CODE_LOOP).code_loop
    assert not analyze(FIXED_CODE_LOOP).code_loop
    assert not analyze(ONE_SHOT_CODE).code_loop


def test_seeds():
    direct = analyze(seed_source("reasoning_direct"))
    assert direct == Structure(False, 0, False, False)
    two_hop = analyze(seed_source("multihop_two_hop"))
    assert two_hop == Structure(False, 2, False, False)  # answers from its two summaries
    loop = analyze(seed_source("baseline_tool_loop"))  # graph cycle turn -> turn
    assert loop.code_loop and loop.search_hops == 0 and not loop.raw_passages


def test_unparsable_source_and_shares():
    assert analyze("def build_graph(tools):\n    return (") is None
    found = [analyze(RAW_ANSWER), analyze(RESEARCH_IN_NODE), analyze(SUMMARY_ANSWER)]
    shares = share(found, [1, 1, 1])
    assert shares["extra_hop"] == pytest.approx(1 / 3)
    assert shares["research_on_absent"] == pytest.approx(1 / 3)
    assert share([], [])["code_loop"] is None
