"""An ordinary LangGraph ReAct agent as a harness: `create_react_agent` over the Solver
(`tools.chat_model()`) and the user's tools (`tools.langchain_tools()`), both crossing the
sandbox bridge. The outer graph maps the task's state (question, shop) to the agent's
messages and its last message back to `answer`."""

from langgraph.graph import END, START, StateGraph
from langgraph.prebuilt import create_react_agent
from typing_extensions import TypedDict

PROMPT = ("You answer questions about prices in a shop. Call unit_price to get the price of "
          "one unit, then reply with the total in euros as a number.")


class State(TypedDict, total=False):
    question: str
    shop: str
    answer: str


def build_graph(tools):
    agent = create_react_agent(tools.chat_model(max_tokens=96), tools.langchain_tools(),
                               prompt=PROMPT)

    def solve(state: State) -> dict:
        question = f"{state['question']} (shop: {state['shop']})"
        out = agent.invoke({"messages": [("user", question)]}, {"recursion_limit": 8})
        return {"answer": str(out["messages"][-1].content).strip()}

    graph = StateGraph(State)
    graph.add_node("agent", solve)
    graph.add_edge(START, "agent")
    graph.add_edge("agent", END)
    return graph
