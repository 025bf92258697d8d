"""A user's agent as they wrote it: `build_graph` returns `create_react_agent(...)` (or the module
defines it as its compiled `graph`, as langgraph.json names one) over their own chat model class (here a hosted provider's stand-in that must never be asked), and the harness
runs as it is, in the sandbox, with every model call routed to the Solver (SmolLM2), the
question given as a user message and the agent's last message taken as the answer."""

from __future__ import annotations

import json

from cli_run import cli

from harness_learning.graphs.serving.embed import load_harness

AGENT = '''"""My weather agent, written as the LangGraph docs write one."""
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.prebuilt import create_react_agent


class ProviderChat(BaseChatModel):
    """My provider's chat model (in real life an API client with a key)."""

    model: str = "provider-large"

    @property
    def _llm_type(self):
        return "provider"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        raise RuntimeError("the provider was asked: the call did not go to the Solver")

    def bind_tools(self, tools, **kwargs):
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)


def get_weather(city: str) -> str:
    """Get weather for a given city."""
    return f"It's always sunny in {city}!"


def build_graph(tools):
    return create_react_agent(model=ProviderChat(), tools=[get_weather],
                              prompt="You are a helpful assistant")
'''

MODULE_GRAPH = """graph = create_react_agent(model=ProviderChat(), tools=[get_weather],
                           prompt="You are a helpful assistant")
"""


def test_a_react_agent_over_its_own_chat_model_runs_on_the_solver(local_model_url,
                                                                  tmp_path) -> None:
    path = tmp_path / "agent.py"
    path.write_text(AGENT)
    harness = load_harness(path, model="local")
    try:
        shape = harness.get_graph()
        out = harness.invoke({"question": "What is 2 + 2?"})
    finally:
        harness.harness_runner.close()
    assert [n for n in shape.nodes] == ["__start__", "ask", "agent", "reply", "__end__"]
    chats = [c for c in out["calls"] if c["tool"] == "chat"]
    assert chats and not [c for c in out["calls"] if c.get("error")], out["calls"]
    # The agent's tool was offered to the Solver as the user bound it.
    assert chats[0]["args"]["tools"][0]["function"]["name"] == "get_weather"
    assert isinstance(out["answer"], str)

    # As langgraph.json serves one: a module whose compiled `graph` is the agent.
    module = tmp_path / "module_agent.py"
    module.write_text(AGENT.split("def build_graph")[0] + MODULE_GRAPH)
    result = cli("run", "--task", "rg:basic_arithmetic", "--harness", module, "--model",
                 "local", "--n", "1", "--json")
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["completed_fraction"] == 1.0 and summary["invalid"] == 0, summary
