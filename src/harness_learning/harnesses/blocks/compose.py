"""Blocks as graph combinators: each wraps a harness's own `build_graph` in a new graph.

`with_interpreter(tools, build)` returns a `StateGraph` whose nodes run a block and, where the
block needs it, the wrapped harness (compiled from `build`, invoked as a subgraph). The new
graph's state is the wrapped graph's plus the block's own keys, so any input field the harness
reads still reaches it. This is what the operator candidates write (`harnesses.edits.operators`):

    def build_graph(tools):
        return with_interpreter(tools, build_graph_before_interpreter)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, get_type_hints

from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from harness_learning.harnesses.blocks import qa, reasoning

Build = Callable[[Any], StateGraph]
SAMPLING = {"temperature": 0.7}


class Sampled:
    """`tools` with sampling parameters added to each Solver call (the call's own win): the
    samples of a vote or a retry differ although the harness asks the same thing."""

    def __init__(self, tools: Any, **params: Any):
        self._tools, self._params = tools, params

    def llm(self, messages_or_prompt: Any, **params: Any) -> str:
        return self._tools.llm(messages_or_prompt, **{**self._params, **params})

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tools, name)


class Searching:
    """`tools` whose `search` runs a retrieval block around the real one."""

    def __init__(self, tools: Any, search: Callable[[str, int], list[Any]]):
        self._tools, self.search = tools, search

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tools, name)


def state_of(graph: StateGraph, **extra: Any) -> type:
    """The wrapped graph's state schema with the block's keys added."""
    schema = graph.state_schema
    hints = get_type_hints(schema, include_extras=True)
    return TypedDict(f"{schema.__name__}Plus", {**hints, "answer": str, **extra}, total=False)


def harness_input(graph: StateGraph, state: dict) -> dict:
    """The part of the outer state the wrapped harness reads (its own keys)."""
    keys = get_type_hints(graph.state_schema)
    return {k: v for k, v in state.items() if k in keys}


def linear(schema: type, *nodes: tuple[str, Callable[[dict], dict]]) -> StateGraph:
    """A graph running `nodes` one after the other, from START to END."""
    graph = StateGraph(schema)
    for name, fn in nodes:
        graph.add_node(name, fn)
    names = [START, *(name for name, _ in nodes), END]
    for a, b in zip(names, names[1:], strict=False):
        graph.add_edge(a, b)
    return graph


def answer_of(compiled: Any, graph: StateGraph, state: dict) -> str:
    out = compiled.invoke(harness_input(graph, state))
    return str(out.get("answer") or "")


def with_interpreter(tools: Any, build: Build, *, retries: int = 2) -> StateGraph:
    """The Solver writes a program for the question and it runs; errors go back for a fix.
    Without a printed answer, the wrapped harness answers."""
    inner = build(tools)
    compiled = inner.compile()

    def write_and_run(state: dict) -> dict:
        run = reasoning.interpreter_loop(tools, state["question"], retries=retries)
        return {"answer": run.answer or "", "program_ran": run.answer is not None}

    def fallback(state: dict) -> dict:
        return {"answer": answer_of(compiled, inner, state)}

    graph = StateGraph(state_of(inner, program_ran=bool))
    graph.add_node("write_and_run", write_and_run)
    graph.add_node("fallback", fallback)
    graph.add_edge(START, "write_and_run")
    graph.add_conditional_edges("write_and_run", lambda s: END if s["program_ran"] else "fallback",
                                [END, "fallback"])
    graph.add_edge("fallback", END)
    return graph


def with_vote(tools: Any, build: Build, *, n: int = 5) -> StateGraph:
    """Self-consistency: the wrapped harness answers `n` times with sampling on, and the most
    common answer wins."""
    inner = build(tools)
    samples = [build(Sampled(tools, **SAMPLING, seed=i)).compile() for i in range(n)]

    def sample(state: dict) -> dict:
        return {"votes": [answer_of(g, inner, state) for g in samples]}

    def vote(state: dict) -> dict:
        return {"answer": reasoning.majority(state["votes"]) or ""}

    return linear(state_of(inner, votes=list), ("sample", sample), ("vote", vote))


def with_verify(tools: Any, build: Build, *, retries: int = 2) -> StateGraph:
    """Verify and retry: the Solver checks the wrapped harness's answer; a 'wrong' verdict
    asks it again (sampled), up to `retries` times. The last answer stands."""
    inner = build(tools)
    tries = [inner.compile()] + [build(Sampled(tools, **SAMPLING, seed=i)).compile()
                                 for i in range(retries)]

    def solve(state: dict) -> dict:
        done = state.get("tries", 0)
        return {"answer": answer_of(tries[done], inner, state), "tries": done + 1}

    def check(state: dict) -> dict:
        said = reasoning.verdict(tools, state["question"], state["answer"])
        return {"verdict": {True: "correct", False: "wrong", None: "none"}[said]}

    def again(state: dict) -> str:
        return "solve" if state["verdict"] == "wrong" and state["tries"] < len(tries) else END

    graph = StateGraph(state_of(inner, tries=int, verdict=str))
    graph.add_node("solve", solve)
    graph.add_node("check", check)
    graph.add_edge(START, "solve")
    graph.add_edge("solve", "check")
    graph.add_conditional_edges("check", again, ["solve", END])
    return graph


def with_plan(tools: Any, build: Build) -> StateGraph:
    """Decomposition: the Solver first writes the steps, and the wrapped harness solves the
    question with the steps appended."""
    inner = build(tools)
    compiled = inner.compile()

    def plan(state: dict) -> dict:
        return {"plan": reasoning.plan_steps(tools, state["question"])}

    def solve(state: dict) -> dict:
        asked = {**state, "question": reasoning.with_steps(state["question"], state["plan"])}
        return {"answer": answer_of(compiled, inner, asked)}

    return linear(state_of(inner, plan=str), ("plan", plan), ("solve_with_plan", solve))


def with_demonstrations(tools: Any, build: Build,
                        demonstrations: list[tuple[str, str]]) -> StateGraph:
    """Few-shot: the wrapped harness solves the question after solved examples (problems of
    the run's feedback side, with their answers)."""
    inner = build(tools)
    compiled = inner.compile()
    examples = [(str(q), str(a)) for q, a in demonstrations]

    def solve(state: dict) -> dict:
        asked = {**state, "question": reasoning.with_examples(state["question"], examples)}
        return {"answer": answer_of(compiled, inner, asked)}

    return linear(state_of(inner), ("solve_with_examples", solve))


def with_query_rewrite(tools: Any, build: Build) -> StateGraph:
    """Every search of the wrapped harness also runs a Solver-written keyword query; the two
    result lists are merged."""
    def search(query: str, k: int = 5) -> list[Any]:
        rewritten = qa.rewrite_query(tools, query)
        return qa.merge_passages(tools.search(rewritten, k), tools.search(query, k), k=k)

    return build(Searching(tools, search))


def with_extra_hop(tools: Any, build: Build) -> StateGraph:
    """Every search of the wrapped harness takes one more hop for the fact its passages miss."""
    def search(query: str, k: int = 5) -> list[Any]:
        return qa.extra_hop(tools, query, tools.search(query, k), k)

    return build(Searching(tools, search))


def with_check(tools: Any, build: Build) -> StateGraph:
    """Draft and check: the wrapped harness drafts an answer, a second search looks for
    evidence, and the Solver keeps the draft or answers from the new passages."""
    inner = build(tools)
    compiled = inner.compile()

    def draft(state: dict) -> dict:
        return {"draft": answer_of(compiled, inner, state)}

    def check(state: dict) -> dict:
        return {"answer": qa.draft_and_check(tools, state["question"], state["draft"])}

    return linear(state_of(inner, draft=str), ("draft", draft), ("check_draft", check))


class Recording:
    """`tools` that keep every passage its searches return, in order (one problem's worth)."""

    def __init__(self, tools: Any, seen: list[Any]):
        self._tools, self._seen = tools, seen

    def search(self, query: str, k: int = 5) -> list[Any]:
        found = list(self._tools.search(query, k))
        self._seen.extend(found)
        return found

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tools, name)


def with_answer_from_passages(tools: Any, build: Build, *,
                              tokens: int = qa.PASSAGE_TOKENS) -> StateGraph:
    """The wrapped harness runs its hops (its summaries write the next query), and the answer
    is then read from the passages every hop retrieved, at most `tokens` of them, in place of
    the harness's own answer from its notes (kept only when the Solver gives no answer).
    One Solver call more than the harness: its own answer call still runs, as no wrapper can
    tell which of its calls is the answer."""
    inner = build(tools)

    def hops(state: dict) -> dict:
        seen: list[Any] = []
        # Built per problem: the passages recorded are this problem's only.
        own = answer_of(build(Recording(tools, seen)).compile(), inner, state)
        return {"passages": [{"title": p.title, "text": p.text} for p in seen],
                "notes_answer": own}

    def answer(state: dict) -> dict:
        passages = [qa.Shown(p["title"], p["text"]) for p in state["passages"]]
        said = qa.answer_from_passages(tools, state["question"], passages, tokens=tokens)
        return {"answer": said or state["notes_answer"]}

    return linear(state_of(inner, passages=list, notes_answer=str), ("hops", hops),
                  ("answer_from_passages", answer))


def with_short_answer(tools: Any, build: Build) -> StateGraph:
    """Span extraction: the wrapped harness answers, the Solver cuts that answer to its
    shortest span or a yes/no, and the result is normalised by rule."""
    inner = build(tools)
    compiled = inner.compile()

    def draft(state: dict) -> dict:
        return {"long_answer": answer_of(compiled, inner, state)}

    def shorten(state: dict) -> dict:
        return {"answer": qa.short_answer(tools, state["question"], state["long_answer"])}

    return linear(state_of(inner, long_answer=str), ("long_answer", draft),
                  ("short_answer", shorten))
