"""Seed harness, multi-hop QA: search, summarise and write the next query, search again,
summarise, then answer from the two summaries."""

from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict


class State(TypedDict, total=False):
    question: str
    summary1: str
    query2: str
    summary2: str
    answer: str


def show(passages) -> str:
    return "\n\n".join(f"[{p.title}] {p.text}" for p in passages)


def build_graph(tools):
    def hop1(state: State) -> dict:
        passages = tools.search(state["question"], 5)
        reply = tools.llm(
            "Summarise what these passages say that helps answer the question, then write one "
            "search query for the missing fact on a last line starting with 'Query:'.\n\n"
            f"Question: {state['question']}\n\nPassages:\n{show(passages)}"
        )
        summary, _, query = reply.partition("Query:")
        return {"summary1": summary.strip(), "query2": query.strip() or state["question"]}

    def hop2(state: State) -> dict:
        passages = tools.search(state["query2"], 5)
        summary = tools.llm(
            "Summarise what these passages say that helps answer the question.\n\n"
            f"Question: {state['question']}\n\nPassages:\n{show(passages)}"
        )
        return {"summary2": summary.strip()}

    def answer(state: State) -> dict:
        reply = tools.llm(
            "Answer the question from the notes with a short phrase only (a name, date or "
            "number), on one line starting with 'Answer:'.\n\n"
            f"Question: {state['question']}\n\nNotes:\n{state['summary1']}\n{state['summary2']}"
        )
        text = reply.rsplit("Answer:", 1)[-1] if "Answer:" in reply else reply
        lines = text.strip().splitlines()
        return {"answer": lines[0].strip() if lines else ""}

    graph = StateGraph(State)
    graph.add_node("hop1", hop1)
    graph.add_node("hop2", hop2)
    graph.add_node("answer_from_notes", answer)
    graph.add_edge(START, "hop1")
    graph.add_edge("hop1", "hop2")
    graph.add_edge("hop2", "answer_from_notes")
    graph.add_edge("answer_from_notes", END)
    return graph
