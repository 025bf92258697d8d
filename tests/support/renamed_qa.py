"""A two-hop QA harness that shares no name with the QA seed (`seeds/multihop_two_hop.py`).

Its state class, state keys (bar the task's `question` and `answer`), node names, helper
functions, the builder's name for `tools` and the way it passes `k` all differ from the seed's,
so a test that applies an operator to it shows the operator reads the harness's syntax tree,
never the seed's text.
"""

RENAMED_TWO_HOP = '''"""Look something up, note it and ask again, then conclude from the notes."""
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

LOOKUPS = 3


class Notebook(TypedDict, total=False):
    question: str
    first_notes: str
    next_lookup: str
    second_notes: str
    answer: str


def listing(hits) -> str:
    return "\\n".join(h.title + ": " + h.text for h in hits)


def build_graph(kit):
    def scout(page: Notebook) -> dict:
        hits = kit.search(page["question"], k=LOOKUPS)
        said = kit.llm("Notes on these facts for the question, then 'Next:' and what to look "
                       "up next.\\n" + listing(hits) + "\\nQuestion: " + page["question"])
        notes, _, ahead = said.partition("Next:")
        return {"first_notes": notes.strip(), "next_lookup": ahead.strip() or page["question"]}

    def follow(page: Notebook) -> dict:
        hits = kit.search(page["next_lookup"], k=LOOKUPS)
        said = kit.llm("Notes on these facts for the question.\\n" + listing(hits)
                       + "\\nQuestion: " + page["question"])
        return {"second_notes": said.strip()}

    def conclude(page: Notebook) -> dict:
        said = kit.llm("From the notes, the answer in a few words.\\nNotes: "
                       + page["first_notes"] + " " + page["second_notes"]
                       + "\\nQuestion: " + page["question"] + "\\nAnswer:")
        rows = said.strip().splitlines()
        return {"answer": rows[0].strip() if rows else ""}

    flow = StateGraph(Notebook)
    flow.add_node("scout", scout)
    flow.add_node("follow", follow)
    flow.add_node("conclude", conclude)
    flow.add_edge(START, "scout")
    flow.add_edge("scout", "follow")
    flow.add_edge("follow", "conclude")
    flow.add_edge("conclude", END)
    return flow
'''
