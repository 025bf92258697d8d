"""Start harness for the shop task: the Solver names the product, the user's `unit_price` tool
(run outside the sandbox) gives its price in the question's shop, and the Solver writes the
total. The multiplication is left to a 135M model on purpose: there is something to improve."""

from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict


class State(TypedDict, total=False):
    question: str
    shop: str
    item: str
    price: str
    answer: str


def build_graph(tools):
    def find_item(state: State) -> dict:
        reply = tools.llm("Name the product in the question, in one word.\n"
                          "Question: How much do 2 pears cost, in euros?\nProduct: pear\n"
                          f"Question: {state['question']}\nProduct:", max_tokens=8)
        words = reply.strip().split()
        return {"item": words[0].strip(".,:;\"'").lower() if words else ""}

    def look_up(state: State) -> dict:
        found = tools.unit_price(item=state["item"], shop=state["shop"])
        return {"price": str(found.get("euros", found.get("error")))}

    def answer(state: State) -> dict:
        reply = tools.llm(f"One {state['item']} costs {state['price']} euros.\n"
                          f"{state['question']}\nAnswer with the total number only.",
                          max_tokens=16)
        return {"answer": reply.strip()}

    graph = StateGraph(State)
    graph.add_node("find_item", find_item)
    graph.add_node("look_up", look_up)
    graph.add_node("answer", answer)
    graph.add_edge(START, "find_item")
    graph.add_edge("find_item", "look_up")
    graph.add_edge("look_up", "answer")
    graph.add_edge("answer", END)
    return graph
